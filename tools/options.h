/*
 * options.h - each command's options, declared once (options.c).
 *
 * A command's options are rows of a table: their spellings, what they take
 * (nothing, a number in a range, a choice, a file read or written, a text)
 * and where the value goes, and their line of --help. From the table come
 * the parser (tf_cli_parse), the OPTIONS part of --help, "did you mean",
 * `terrafort CMD --options` (the table as text: bash completion and the
 * Python package's signatures are checked against it) and what `terrafort
 * batch` knows of a job's words (which take values, which name the files a
 * job writes). The man pages are checked against the help by a test
 * (tools/tests/help_man.sh) and the table against the parser and help by
 * cli_options.
 *
 * A command's table is a tf_opt_set: its own rows and the shared groups it
 * takes (the common options on tr_run_opts, the AAP engine's, stream
 * burning's), each at the offset of its struct inside the command's parse
 * struct.
 */
#ifndef TF_OPTIONS_H
#define TF_OPTIONS_H

#include <stddef.h>

typedef struct tf_cli tf_cli;
typedef struct tf_opt tf_opt;

/* What an option takes, and so how its value is checked and stored. */
typedef enum {
  TF_HEADING, /* not an option: .doc is a line of --help (a section's title) */
  TF_FLAG,    /* nothing; the int at .off gets .set (1 when .set is 0) */
  TF_INT,     /* a whole number in [.lo, .hi] into an int (TF_LONG: a long) */
  TF_LONG,
  TF_DOUBLE, /* a finite number in the range (.lo_open/.hi_open: ends excluded) into a double */
  TF_STR,    /* the word itself into a const char * */
  TF_CHOICE, /* one of .choices ("a|b|c"; .nocase: any case): its position into an int */
  TF_SIZE,   /* a size (512M, 4G; plain numbers are MiB) into an int64_t */
  TF_CUSTOM, /* .fn reads (tf_value) and stores its value(s) */
  TF_ACTION  /* takes nothing; .fn does what it asks */
} tf_opt_kind;

/* What the value is, for batch (and the Python and QGIS signatures). */
typedef enum {
  TF_ROLE_VALUE = 0, /* a number or a word */
  TF_ROLE_IN,        /* a file read */
  TF_ROLE_OUT,       /* a file written */
  TF_ROLE_OUT_IF_DEM /* written when a DEM is given, read otherwise (flowgraph's -p) */
} tf_opt_role;

/* Reads argv[*i]'s value(s) (tf_value) and stores them at base (the group's
 * struct): a TF_ARG_* code (cli.h). */
typedef int (*tf_opt_fn)(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i);

struct tf_opt {
  tf_opt_kind kind;
  const char *names; /* "-s -scale": its spellings, blank-separated */
  const char *arg;   /* the value's name in --help ("SCALE"); a TF_CHOICE without one shows its choices */
  size_t off;        /* of its field in the group's struct */
  tf_opt_role role;
  int nvalues;   /* words it takes when not 1 (TF_FLAG, TF_ACTION: 0); -4: four numbers, or one word */
  double lo, hi; /* TF_INT, TF_LONG, TF_DOUBLE range (both 0: any) */
  int lo_open, hi_open;
  int set;    /* TF_FLAG: the value stored (0: 1) */
  int nocase; /* TF_CHOICE: any case */
  const char *choices;
  tf_opt_fn fn;     /* TF_CUSTOM; with another kind, called after it stored (may check or add) */
  const char *left; /* --help's left column, when not "NAME ARG, NAME ARG" of every spelling */
  const char *doc;  /* --help's text ('\n': a line more, aligned); NULL: not in --help */
};

/* The rows of one group and where its struct lies in the command's. */
typedef struct {
  const tf_opt *rows; /* ending with a row of kind 0 and no names and no doc */
  size_t base;
} tf_opt_group;

#define TF_OPT_GROUPS 6
typedef struct {
  const char *cmd;
  const char *head;                   /* --help before the options: usage lines and what it does */
  const char *tail;                   /* --help after them (before the common options) */
  int column;                         /* where --help's texts start (0: 25) */
  tf_opt_group groups[TF_OPT_GROUPS]; /* the command's first, the common options' last */
  int dashdash;                       /* a single-dash spelling answers to two dashes too (gdaldem hillshade's --az) */
  int last_positional;                /* batch: the last of two or more file names is the output */
} tf_opt_set;

/* The end of a table. */
#define TF_OPT_END \
  { .kind = TF_HEADING, .names = NULL, .doc = NULL }

/* The shared groups (cli.c): the common options on tr_run_opts (tf_cli's
 * own -q, --progress, -co, -h included), the AAP engine's on tr_graph_opts,
 * stream burning's on tr_burn_opts. */
extern const tf_opt tf_common_opts[], tf_graph_opts_rows[], tf_burn_opts_rows[];

/* Rows' functions shared by a set without the common options (batch's,
 * cli.c): -h, --options, -q (tf_cli.quiet), --rank-timeout (.lo, .hi). */
int tf_opt_help(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i);
int tf_opt_options(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i);
int tf_opt_quiet(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i);
int tf_opt_rank_timeout(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i);

/* The row that argument `name` ("--name" of "--name=value" cut off by the
 * caller) spells in set; *base gets its group's offset. NULL: none. */
const tf_opt *tf_opt_find(const tf_opt_set *set, const char *name, size_t *base);
/* Does row spell name? */
int tf_opt_spells(const tf_opt *row, const char *name);
/* Takes argv[*i], an option of row, into opts + base: a TF_ARG_* code. */
int tf_opt_take(tf_cli *cli, const tf_opt *row, void *opts, size_t base, int argc, char **argv, int *i);
/* --help: head, the rows, tail, then the common options' rows (when the
 * set has them). */
void tf_opt_print_help(const tf_opt_set *set);
/* `terrafort CMD --options`: a line per option, tab-separated: its spellings
 * (blank-separated), kind, role, number of values, choices ('|'), range,
 * the value in the field (the command's defaults), or "-", and its group
 * (own, engine, burn, common). */
void tf_opt_print_table(const tf_opt_set *set, const void *defaults);
/* The spelling of set nearest to opt (at most two edits, or the leading
 * part of exactly one spelling) into buf; NULL when none is near. */
const char *tf_opt_suggest(const tf_opt_set *set, const char *opt, char *buf, size_t len);

#endif
