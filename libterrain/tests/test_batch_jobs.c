/*
 * test_batch_jobs.c - tr_batch's job list (batch/jobs.c, grammar.c) reads a
 * job's words as the program's option tables say: for every spelling of
 * every option of every command (from `terrafort CMD --options`, the table
 * the command parses with), a job line using it gives, as the files the job
 * writes, that option's value exactly when the table's role says it is
 * written, and the line's last file name when the table says so; the other
 * options' values are skipped, never taken for file names. TauDEM's command
 * lines (the "#form" lines) read as the program takes them.
 * Usage: terrain_batch_jobs TERRAFORT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "tr_test.h"

static const char *tf;
static char tmpdir[4096], jobs_path[4200];
static tb_grammar *tables; /* the tables read so far, kept across the jobs files read here */

/* lines (one job each) as a jobs file, read as the batch reads it */
static int read_jobs(tb_jobs *js, const char *line, char *err, size_t len) {
  FILE *f = fopen(jobs_path, "w");
  if (!f) return -1;
  fprintf(f, "%s\n", line);
  fclose(f);
  memset(js, 0, sizeof *js);
  js->program = tf;
  js->grammars = tables;
  const int rc = tb_jobs_read(js, jobs_path, err, len);
  tables = js->grammars;
  js->grammars = NULL;
  return rc;
}

/* The output of a command line (its first line of at most len bytes per row into rows). */
static int run_lines(const char *cmd, char rows[][512], int max) {
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  int n = 0;
  char line[512];
  while (fgets(line, sizeof line, p))
    if (n < max) {
      line[strcspn(line, "\n")] = '\0';
      snprintf(rows[n++], 512, "%s", line);
    }
  pclose(p);
  return n;
}

/* The words after an option taking nvalues values, for a job line. */
static const char *values_for(const char *names, int nvalues, const char *choices) {
  static char v[64];
  if (choices[0] && strcmp(choices, "-")) {
    snprintf(v, sizeof v, "%.*s", (int)strcspn(choices, "|"), choices);
    return v;
  }
  if (!strcmp(names, "-co --co")) return "KEY=VALUE";
  if (!strcmp(names, "--percentiles")) return "50";
  return nvalues == 0 ? "" : nvalues == 1 ? "7" : nvalues == 2 ? "1 2" : "1 2 3 4"; /* -4: the box */
}

static int test_batch_reads_the_table(void) {
  static char cmds[64][512], rows[512][512];
  char sh[8300];
  snprintf(sh, sizeof sh,
           "'%.4000s' --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} /^$/ {on = 0}'", tf);
  const int ncmd = run_lines(sh, cmds, 64);
  ASSERT(ncmd >= 10);
  int checked = 0;
  for (int c = 0; c < ncmd; c++) {
    snprintf(sh, sizeof sh, "'%.4000s' %.100s --options", tf, cmds[c]);
    const int nrows = run_lines(sh, rows, 512);
    ASSERT(nrows > 5);
    int last = -1, job = -1;
    for (int r = 0; r < nrows; r++)
      if (!strncmp(rows[r], "#set\t", 5)) {
        const char *l = strstr(rows[r], "last_positional\t"), *b = strstr(rows[r], "job\t");
        ASSERT(l && b);
        last = atoi(l + 16);
        job = atoi(b + 4);
      }
    ASSERT(last == 0 || last == 1);
    if (!job) continue; /* batch itself */
    const char *files = !strcmp(cmds[c], "color-relief") ? "in.tif ramp.txt" : "in.tif";
    for (int r = 0; r < nrows; r++) {
      if (rows[r][0] == '#') continue;
      char row[512], *save;
      snprintf(row, sizeof row, "%.500s", rows[r]);
      char *names = strtok_r(row, "\t", &save), *kind = strtok_r(NULL, "\t", &save),
           *role = strtok_r(NULL, "\t", &save);
      char *nv = strtok_r(NULL, "\t", &save), *choices = strtok_r(NULL, "\t", &save);
      ASSERT(names && kind && role && nv && choices);
      if (!strcmp(names, "--options") || !strcmp(names, "-h --help")) continue; /* a job with them only prints */
      const int out = !strcmp(role, "out") || !strcmp(role, "out-if-dem");
      char spell[512];
      snprintf(spell, sizeof spell, "%.500s", names);
      for (char *s2, *w = strtok_r(spell, " ", &s2); w; w = strtok_r(NULL, " ", &s2)) {
        char line[1024];
        if (out)
          snprintf(line, sizeof line, "%.100s %s %.200s opt_out.tif%s", cmds[c], files, w, last ? " last.tif" : "");
        else
          snprintf(line, sizeof line, "%.100s %s %.200s %.100s%s", cmds[c], files, w,
                   values_for(names, atoi(nv), choices), last ? " last.tif" : "");
        tb_jobs js;
        char err[512] = "";
        ASSERT_EQ_INT(read_jobs(&js, line, err, sizeof err), 0);
        ASSERT_EQ_INT(js.n, 1);
        const tb_job *j = &js.v[0];
        int has_opt = 0, has_last = 0, others = 0;
        for (int k = 0; k < j->nout; k++) {
          if (strstr(j->out[k], "opt_out.tif"))
            has_opt = 1;
          else if (strstr(j->out[k], "last.tif"))
            has_last = 1;
          else
            others++;
        }
        const int ok = has_opt == out && has_last == last && !others;
        if (!ok)
          fprintf(stderr, "batch reads '%s' wrongly: %d outputs (option's %d, last %d, others %d)\n", line, j->nout,
                  has_opt, has_last, others);
        tb_jobs_free(&js);
        if (!ok) return 1;
        checked++;
      }
    }
  }
  printf("%d spellings read as batch jobs\n", checked);
  ASSERT(checked > 300);
  return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The blank-separated words of s in order, in place. */
static void sort_words(char *s) {
  char copy[512], *w[32];
  int n = 0;
  snprintf(copy, sizeof copy, "%s", s);
  for (char *save, *t = strtok_r(copy, " ", &save); t && n < 32; t = strtok_r(NULL, " ", &save)) w[n++] = t;
  qsort(w, (size_t)n, sizeof *w, by_name);
  s[0] = '\0';
  for (int k = 0; k < n; k++) snprintf(s + strlen(s), 512 - strlen(s), "%s%s", k ? " " : "", w[k]);
}

/* TauDEM's command lines: the files batch reads as a job's outputs are
 * those the program writes. */
static int test_taudem_forms(void) {
  static const struct {
    const char *line, *outputs;
  } cases[] = {
      {"flowgraph -p p.tif -src src.tif -ad8 ad8.tif -ord ord.tif -net net.shp", "ord.tif net.shp"},
      {"flowgraph -p p.tif -src src.tif -ad8 ad8.tif --order ord.tif", "ord.tif"},
      {"flowgraph -p p.tif -src src.tif -o o.shp -om om.shp", "om.shp"},
      {"flowgraph -ang ang.tif -sca sca.tif -nc", "sca.tif"},
      {"flowgraph -ang ang.tif -fel fel.tif -src src.tif -dd dd.tif -m ave v", "dd.tif"},
      {"flowgraph -slp slp.tif -sca sca.tif -twi twi.tif", "twi.tif"},
      {"flowgraph -fel fel.tif -p p.tif -sd8 sd8.tif", "p.tif sd8.tif"},
      {"flowgraph -fel fel.tif -ang ang.tif -slp slp.tif", "ang.tif slp.tif"},
      {"flowgraph -p p.tif -ad8 ad8.tif", "ad8.tif"},
      {"flowgraph dem.tif -p p.tif -ad8 ad8.tif -src src.tif -ord ord.tif", "p.tif ad8.tif src.tif ord.tif"},
      {"flowgraph -z dem.tif -ang ang.tif -sca sca.tif", "ang.tif sca.tif"},
      {"FILL -z dem.tif -fel fel.tif", "fel.tif"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    tb_jobs js;
    char err[512] = "";
    ASSERT_EQ_INT(read_jobs(&js, cases[k].line, err, sizeof err), 0);
    char got[512] = "", want[512];
    for (int m = 0; m < js.v[0].nout; m++) {
      const char *slash = strrchr(js.v[0].out[m], '/');
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", m ? " " : "", slash ? slash + 1 : js.v[0].out[m]);
    }
    tb_jobs_free(&js);
    snprintf(want, sizeof want, "%s", cases[k].outputs);
    sort_words(got);
    sort_words(want);
    if (strcmp(got, want)) {
      fprintf(stderr, "batch: '%s' writes '%s', read as '%s'\n", cases[k].line, want, got);
      return 1;
    }
  }
  return 0;
}

/* An unknown command, batch itself, and a program that is not there: a line naming the job. */
static int test_refused(void) {
  tb_jobs js;
  char err[512] = "";
  ASSERT_EQ_INT(read_jobs(&js, "slop a.tif b.tif", err, sizeof err), TR_EXIT_USAGE);
  ASSERT(strstr(err, "line 1") && strstr(err, "unknown command 'slop'") && strstr(err, "did you mean 'slope'"));
  tb_jobs_free(&js);
  ASSERT_EQ_INT(read_jobs(&js, "batch other.txt", err, sizeof err), TR_EXIT_USAGE);
  ASSERT(strstr(err, "cannot be a job"));
  tb_jobs_free(&js);
  const char *keep = tf;
  tf = "/nonexistent/terrafort";
  tb_grammar *cached = tables;
  tables = NULL;
  const int rc = read_jobs(&js, "aspect a.tif b.tif", err, sizeof err);
  tb_jobs_free(&js);
  tables = cached;
  tf = keep;
  ASSERT_EQ_INT(rc, TR_EXIT_USAGE);
  ASSERT(strstr(err, "/nonexistent/terrafort"));
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  tf = argv[1];
  snprintf(tmpdir, sizeof tmpdir, "%s/terrafort-batch-jobs-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmpdir)) return 1;
  snprintf(jobs_path, sizeof jobs_path, "%s/jobs.txt", tmpdir);
  static const tr_test_case cases[] = {TR_TEST(test_batch_reads_the_table), TR_TEST(test_taudem_forms),
                                       TR_TEST(test_refused)};
  const int rc = tr_test_main(argc - 1, argv + 1, cases, (int)(sizeof cases / sizeof cases[0]));
  tb_grammar_free(tables);
  unlink(jobs_path);
  rmdir(tmpdir);
  return rc;
}
