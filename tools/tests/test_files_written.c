/*
 * test_files_written.c - every file a run writes is guarded like its main
 * output (issue 28): refused before any work when it is a file the run reads
 * (by any spelling: the same path, ./x/../, a hard link, a symbolic link, the
 * container of a subdataset, the archive behind a /vsizip/ path, a VRT's
 * source, a colour file) or another file of the same run, with exit 4, one
 * line, no output and every input byte-identical afterwards. An output that
 * is a symbolic link is written to its target and the link stays.
 *
 * The walk (test_walk_outputs_onto_inputs) takes every output option from
 * the program's own option tables, the ones `terrafort batch` reads
 * (options.h: each command's rows of role out, the common and engine groups
 * included; the test is linked with the commands' objects), never from a
 * list of its own, and test_output_options_agree checks those tables against
 * each command's --help.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_case.h"
#include "tools.h"
#include "tr_test.h"

static int sh(const char *fmt, const char *a, const char *b) {
  char c[4096];
  snprintf(c, sizeof c, fmt, a, b);
  char full[4800];
  snprintf(full, sizeof full, "cd '%s' && %s", outdir, c);
  return system(full);
}

/* expect (cli_case.h) without the progress line */
static int expect_q(const char *args, int code, const char *needle) {
  char c[4000];
  if (snprintf(c, sizeof c, "%s -q", args) >= (int)sizeof c) return 1;
  return expect(c, code, needle);
}

static int exists(const char *name) {
  struct stat st;
  return lstat(out(name), &st) == 0;
}

/* What the run left: no temporary, and none of the named outputs. */
static int nothing_left(const char *const *names, int n) {
  if (pc_count(outdir, ".terrafort-", NULL, 0) != 0) return 0;
  for (int i = 0; i < n; i++)
    if (exists(names[i])) {
      fprintf(stderr, "left behind: %s\n", names[i]);
      return 0;
    }
  return 1;
}

/* Side outputs onto the DEM (by its name and a hard link), onto the output,
 * onto a colour file; --aap-stats onto --dir-in (which used to truncate it to
 * 0 bytes before failing). */
static int test_side_outputs_onto_inputs(void) {
  reset(outdir);
  ASSERT_EQ_INT(sh("cp '%s' d.tif && ln d.tif h.tif && mkdir x && printf '0 0 0 255\\n100 255 255 255\\n' > ramp.txt && cp ramp.txt "
                   "ramp0.txt%s",
                   in("fractal.tif"), ""),
                0);
  struct {
    const char *args, *needle;
    const char *outs[2];
  } cases[] = {
      {"slope d.tif s.tif --stats-json d.tif", "--stats-json 'd.tif'", {"s.tif"}},
      {"aspect d.tif a.tif --stats-json h.tif", "--stats-json 'h.tif'", {"a.tif"}},
      {"slope d.tif s.tif --stats-json ./x/../h.tif", "--stats-json", {"s.tif"}},
      {"slope d.tif s.tif --ft dual --ft-report h.tif", "--ft-report 'h.tif'", {"s.tif"}},
      {"fill d.tif f.tif --stats-json d.tif", "--stats-json 'd.tif'", {"f.tif"}},
      {"fill d.tif f.tif --aap-stats h.tif", "--aap-stats 'h.tif'", {"f.tif"}},
      {"slope d.tif s.tif --stats-json s.tif", "'s.tif'", {"s.tif"}},
      {"color-relief d.tif ramp.txt ramp.txt", "ramp.txt", {"s.tif"}},
      {"color-relief d.tif ramp.txt r.tif --stats-json ramp.txt", "--stats-json 'ramp.txt'", {"r.tif"}},
      /* a side output's folder, checked before the output is written */
      {"slope d.tif s.tif --stats-json nowhere/s.json", "folder 'nowhere' does not exist", {"s.tif"}},
  };
  const char *keep[] = {"d.tif", "ramp.txt"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (expect_q(cases[i].args, 4, cases[i].needle)) return 1;
    ASSERT(nothing_left(cases[i].outs, cases[i].outs[1] ? 2 : 1));
    ASSERT(rc_same_file(in("fractal.tif"), out(keep[0])));
    ASSERT(rc_same_file(out("ramp0.txt"), out(keep[1])));
  }
  /* flowgraph: --aap-stats and --stats-json onto --dir-in */
  ASSERT_EQ_INT(sh("'%s' flowgraph -q d.tif --dir p.tif%s", tf, ""), 0);
  ASSERT_EQ_INT(sh("cp p.tif p0.tif%s%s", "", ""), 0);
  if (expect_q("flowgraph --dir-in p.tif --acc acc.tif --aap-stats p.tif", 4, "--aap-stats 'p.tif'")) return 1;
  if (expect_q("flowgraph --dir-in p.tif --acc acc.tif --stats-json ./p.tif", 4, "--stats-json './p.tif'")) return 1;
  const char *acc[] = {"acc.tif"};
  ASSERT(nothing_left(acc, 1));
  ASSERT(rc_same_file(out("p0.tif"), out("p.tif")));
  /* the network into a folder that does not exist: refused before any
   * stage, so --acc (the stage before it) is not left behind */
  if (expect_q("flowgraph --dir-in p.tif --acc acc.tif --network nowhere/net.gpkg", 4, "folder 'nowhere' does not exist"))
    return 1;
  ASSERT(nothing_left(acc, 1));
  /* the network onto a FIFO: refused before any stage, the FIFO stays */
  ASSERT_EQ_INT(sh("mkfifo net.gpkg%s%s", "", ""), 0);
  if (expect_q("flowgraph --dir-in p.tif --acc acc.tif --network net.gpkg", 4, "it is a FIFO")) return 1;
  struct stat st;
  ASSERT(lstat(out("net.gpkg"), &st) == 0 && S_ISFIFO(st.st_mode));
  ASSERT(nothing_left(acc, 1));
  return 0;
}

/* Under mpirun, as a user runs it: every rank refuses the side output before
 * any work (exit 4), the DEM untouched. Skipped without MPI or mpirun. */
static int test_side_outputs_under_mpirun(void) {
#ifdef TERRAFORT_HAVE_MPI
  if (rc_run("command -v mpirun >/dev/null", NULL) != 0) return 0;
  reset(outdir);
  ASSERT_EQ_INT(sh("cp '%s' d.tif && ln d.tif h.tif && gdalbuildvrt -q m.vrt d.tif%s", in("fractal.tif"), ""), 0);
  /* the last: a product onto the file GDAL reads behind a VRT DEM */
  static const char *const cases[][2] = {{"slope -q d.tif s.tif --stats-json h.tif", "--stats-json 'h.tif'"},
                                         {"fill -q d.tif f.tif --aap-stats ./d.tif", "--aap-stats './d.tif'"},
                                         {"flowgraph -q m.vrt --dir p.tif --acc d.tif", "--acc 'd.tif'"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char c[2048];
    snprintf(c, sizeof c, "cd '%s' && mpirun --allow-run-as-root --oversubscribe -n 2 '%s' %s", outdir, tf,
             cases[i][0]);
    const int rc = rc_run(c, errfile);
    const char *err = rc_slurp(errfile);
    if (rc != 4 || !strstr(err, cases[i][1])) {
      fprintf(stderr, "`%s`: exit %d (want 4), stderr:\n%s\n", cases[i][0], rc, err);
      return 1;
    }
    ASSERT(rc_same_file(in("fractal.tif"), out("d.tif")));
    ASSERT_EQ_INT(pc_count(outdir, ".terrafort-", NULL, 0), 0);
    ASSERT(!exists("s.tif") && !exists("f.tif") && !exists("p.tif"));
  }
#endif
  return 0;
}

/* The files GDAL reads for an input: a VRT's sources, a GeoPackage holding
 * the raster as a subdataset, a zip archive read through /vsizip/. */
static int test_files_behind_the_input(void) {
  reset(outdir);
  ASSERT_EQ_INT(sh("cp '%s' d.tif && gdalbuildvrt -q m.vrt d.tif%s", in("fractal.tif"), ""), 0);
  if (expect_q("slope m.vrt d.tif", 4, "the input 'm.vrt' reads it")) return 1;
  if (expect_q("slope m.vrt s.tif --stats-json d.tif", 4, "--stats-json 'd.tif'")) return 1;
  ASSERT(rc_same_file(in("fractal.tif"), out("d.tif")));
  /* a GeoPackage with the raster in table elev */
  ASSERT_EQ_INT(sh("gdal_translate -q -of GPKG -co RASTER_TABLE=elev '%s' dem.gpkg && cp dem.gpkg dem0.gpkg%s",
                   in("fractal.tif"), ""),
                0);
  if (expect_q("slope GPKG:dem.gpkg:elev dem.gpkg", 4, "the input 'GPKG:dem.gpkg:elev' reads it")) return 1;
  ASSERT(rc_same_file(out("dem0.gpkg"), out("dem.gpkg")));
  /* a zip archive */
  ASSERT_EQ_INT(sh("cp '%s' z.tif && python3 -c \"import zipfile; zipfile.ZipFile('a.zip', 'w').write('z.tif')\" && cp a.zip a0.zip%s",
                   in("fractal.tif"), ""),
                0);
  if (expect_q("slope /vsizip/a.zip/z.tif a.zip", 4, "reads it")) return 1;
  ASSERT(rc_same_file(out("a0.zip"), out("a.zip")));
  /* the same inputs to other outputs still work */
  if (expect_q("slope /vsizip/a.zip/z.tif s1.tif", 0, NULL)) return 1;
  if (expect_q("slope GPKG:dem.gpkg:elev s2.tif", 0, NULL)) return 1;
  if (expect_q("slope m.vrt s3.tif", 0, NULL)) return 1;
  ASSERT(rc_same_file(out("s1.tif"), out("s3.tif")));
  return 0;
}

/* An output named by a symbolic link: written to the target, the link stays;
 * the same bytes as a plain run. A link to a special file (/dev/stdout's
 * kind) is refused, and nothing replaces it. */
static int test_symlink_outputs(void) {
  reset(outdir);
  ASSERT_EQ_INT(sh("cp '%s' d.tif && mkdir sub && ln -s sub/target.tif link.tif && ln -s /dev/null null.tif%s",
                   in("fractal.tif"), ""),
                0);
  if (expect_q("slope d.tif plain.tif", 0, NULL)) return 1;
  /* a dangling link: its target is created */
  if (expect_q("slope d.tif link.tif", 0, NULL)) return 1;
  struct stat st;
  ASSERT(lstat(out("link.tif"), &st) == 0 && S_ISLNK(st.st_mode));
  ASSERT(lstat(out("sub/target.tif"), &st) == 0 && S_ISREG(st.st_mode));
  ASSERT(rc_same_file(out("plain.tif"), out("sub/target.tif")));
  /* and written again through the same link (it now exists) */
  if (expect_q("slope d.tif link.tif -p", 0, NULL)) return 1;
  ASSERT(lstat(out("link.tif"), &st) == 0 && S_ISLNK(st.st_mode));
  ASSERT(!rc_same_file(out("plain.tif"), out("sub/target.tif")));
  if (expect_q("slope d.tif null.tif", 4, "it is a device")) return 1;
  ASSERT(lstat(out("null.tif"), &st) == 0 && S_ISLNK(st.st_mode));
  if (expect_q("slope d.tif s.tif --stats-json null.tif", 4, "--stats-json 'null.tif': it is a device")) return 1;
  ASSERT_EQ_INT(pc_count(outdir, ".terrafort-", NULL, 0), 0);
  return 0;
}

/* The side files (flowgraph's --basin-stats CSV among them) on a full
 * disk: a 64 KB tmpfs filled to the last byte
 * (needs root; skipped otherwise), the output raster in a roomy folder.
 * Each run fails with exit 4 and one line naming the side file, and leaves
 * nothing: no 0-byte or cut side file, no temporary, and no output raster
 * either (the output and its side files appear together or not at all); a
 * side file that was there keeps its bytes. Then the same runs with room
 * write every file, complete. */
static int test_side_files_full_disk(void) {
  reset(outdir);
  ASSERT_EQ_INT(sh("cp '%s' d.tif && mkdir m%s", in("fractal.tif"), ""), 0);
  if (mount("tmpfs", out("m"), "tmpfs", 0, "size=64k") != 0) {
    printf("skip: cannot mount a tmpfs here\n");
    return 0;
  }
  int bad = sh("printf '{\"old\":1}\\n' > m/keep.json && cp m/keep.json keep0.json && "
               "dd if=/dev/zero of=m/filler bs=4k 2>/dev/null; test -s m/filler%s%s", "", "");
  static const struct {
    const char *args, *needle, *product;
  } cases[] = {
      {"slope d.tif s.tif --stats-json m/s.json", "statistics file 'm/s.json'", "s.tif"},
      {"slope d.tif s.tif --stats-json m/keep.json", "statistics file 'm/keep.json'", "s.tif"},
      {"slope d.tif s.tif --ft dual --ft-report m/r.json", "fault-tolerance report 'm/r.json'", "s.tif"},
      {"slope d.tif s.tif --ft replay --ft-report m/r.json", "fault-tolerance report 'm/r.json'", "s.tif"},
      {"fill d.tif f.tif --aap-stats m/a.json", "engine statistics 'm/a.json'", "f.tif"},
      {"fill d.tif f.tif --stats-json m/s.json", "statistics file 'm/s.json'", "f.tif"},
      {"flowgraph d.tif --acc a.tif --stats-json m/s.json", "statistics file 'm/s.json'", "a.tif"},
      {"flowgraph d.tif --acc a.tif --streams st.tif --stats-json m/s.json", "statistics file 'm/s.json'", "st.tif"},
      {"flowgraph d.tif --acc a.tif --aap-stats m/a.json", "engine statistics 'm/a.json'", "a.tif"},
      {"flowgraph d.tif --acc a.tif --streams st.tif --aap-stats m/a.json", "engine statistics 'm/a.json'", "a.tif"},
      {"flowgraph d.tif --basins w.tif --basin-stats m/b.csv", "basin statistics 'm/b.csv'", "w.tif"},
  };
  for (size_t i = 0; !bad && i < sizeof cases / sizeof cases[0]; i++) {
    bad = expect_q(cases[i].args, 4, cases[i].needle);
    if (!bad && !strstr(rc_slurp(errfile), "No space left")) {
      fprintf(stderr, "`%s`: the line does not say the disk is full: %s", cases[i].args, rc_slurp(errfile));
      bad = 1;
    }
    /* only the filler and the old file on the full disk */
    if (!bad && pc_count(out("m"), "", NULL, 0) != 2) {
      sh("ls -la m >&2%s%s", "", "");
      bad = 1;
    }
    if (!bad && (!rc_same_file(out("m/keep.json"), out("keep0.json")) || pc_count(outdir, ".terrafort-", NULL, 0)))
      bad = 1;
    if (!bad && cases[i].product && exists(cases[i].product)) {
      fprintf(stderr, "`%s` left %s\n", cases[i].args, cases[i].product);
      bad = 1;
    }
  }
  umount(out("m"));
  ASSERT(!bad);
  /* with room: every file, whole */
  if (expect_q("slope d.tif s.tif --stats-json m/s.json --ft dual --ft-report m/r.json", 0, NULL) ||
      expect_q("fill d.tif f.tif --aap-stats m/a.json", 0, NULL))
    return 1;
  ASSERT_EQ_INT(sh("grep -q '\"valid_count\"' m/s.json && grep -q '\"sub_blocks\"' m/r.json && grep -q state_store m/a.json%s%s",
                   "", ""),
                0);
  ASSERT(exists("s.tif") && exists("f.tif"));
  ASSERT_EQ_INT(pc_count(outdir, ".terrafort-", NULL, 0), 0);
  return 0;
}

/* "-" is standard output for every JSON report (--stats-json, --ft-report,
 * --aap-stats), as in GDAL's utilities: the report's bytes there, the same
 * as in a file, and no file named "-"; two reports to "-" are refused. Also
 * under mpirun, where rank 0 prints. */
static int test_reports_to_stdout(void) {
  reset(outdir);
  ASSERT_EQ_INT(sh("cp '%s' d.tif%s", in("fractal.tif"), ""), 0);
  char mpi[300] = "";
#ifdef TERRAFORT_HAVE_MPI
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0)
    snprintf(mpi, sizeof mpi, "mpirun --allow-run-as-root --oversubscribe -n 3 "); /* --ft dual needs 3 */
#endif
  static const char *const cases[][2] = {
      {"slope -q d.tif s.tif --stats-json", "\"valid_count\""},
      {"slope -q d.tif s.tif --ft dual --ft-report", "\"sub_blocks\""},
      {"fill -q d.tif f.tif --aap-stats", "state_store"},
      {"flowgraph -q d.tif --acc a.tif --streams st.tif --stats-json", "{\"products\":[{\"product\":\"acc\""}};
  for (int m = 0; m < (mpi[0] ? 2 : 1); m++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      char c[4096];
      snprintf(c, sizeof c, "cd '%s' && %s'%s' %s rep.json && %s'%s' %s - > out.txt", outdir, m ? mpi : "", tf,
               cases[i][0], m ? mpi : "", tf, cases[i][0]);
      ASSERT_EQ_INT(rc_run(c, errfile), 0);
      char *file = strdup(rc_slurp(out("rep.json")));
      const char *printed = rc_slurp(out("out.txt"));
      /* the same report, but for its timings */
      const int ok = file && strstr(printed, cases[i][1]) && strstr(file, cases[i][1]) &&
                     (strstr(file, "valid_count") == NULL ||
                      !strncmp(strstr(file, "valid_count"), strstr(printed, "valid_count"), 60));
      free(file);
      if (!ok || exists("-")) {
        fprintf(stderr, "`%s -`%s: printed %.200s\n", cases[i][0], m ? " under mpirun" : "", printed);
        return 1;
      }
    }
  if (expect_q("slope d.tif s.tif --stats-json - --ft dual --ft-report -", 4, "it is also --ft-report ('-')")) return 1;
  ASSERT(!exists("-"));
  return 0;
}

/* Writes `text` into file `name` of the output folder. */
static int put_file(const char *name, const char *text) {
  FILE *f = fopen(out(name), "w");
  if (!f) return 1;
  const int bad = fputs(text, f) == EOF;
  return fclose(f) != 0 || bad;
}

/* A report to "-" is all that standard output holds, even with a terminal
 * on stderr, where the progress line is drawn (script(1) gives the run
 * one): GDAL's own progress printer wrote on stdout, into the middle of a
 * --stats-json - or a batch's --summary -. Each report read back with
 * Python's json module as a stream of JSON values (nothing else between
 * them), the progress line on the terminal, no file named "-". And a
 * double that needs 17 significant digits comes back exact: --stats-json's
 * "min" is the output's least cell, as GDAL reads it (0.19465751945972443
 * for slope of fractal.tif; 16 digits would give another double). */
static int test_stdout_only_json(void) {
  if (rc_run("command -v script >/dev/null", NULL) != 0) {
    printf("skip: no script(1)\n");
    return 0;
  }
  reset(outdir);
  ASSERT_EQ_INT(sh("cp '%s' d.tif && printf 'slope -q d.tif j1.tif\\naspect -q d.tif j2.tif\\n' > jobs.txt%s",
                   in("fractal.tif"), ""),
                0);
  ASSERT_EQ_INT(put_file("stream.py", "import json, sys\n"
                                      "t = open(sys.argv[1], encoding='utf-8').read()\n"
                                      "d, i, n = json.JSONDecoder(), 0, 0\n"
                                      "while True:\n"
                                      "    while i < len(t) and t[i] in ' \\t\\r\\n': i += 1\n"
                                      "    if i == len(t): break\n"
                                      "    v, i = d.raw_decode(t, i)  # raises on anything that is not JSON\n"
                                      "    n += 1\n"
                                      "assert n >= 1, 'nothing on stdout'\n"),
                0);
  ASSERT_EQ_INT(put_file("min.py", "import json, sys\n"
                                   "import numpy as np\n"
                                   "from osgeo import gdal\n"
                                   "d = json.load(open(sys.argv[1]))\n"
                                   "ds = gdal.Open(sys.argv[2])  # kept: its band needs it\n"
                                   "b = ds.GetRasterBand(1)\n"
                                   "a, nd = b.ReadAsArray().ravel(), b.GetNoDataValue()\n"
                                   "m = float(a[a != nd].min())\n"
                                   "assert d['min'] == m, (d['min'], m)\n"
                                   "assert float('%.16g' % m) != m, m  # it needs all 17 digits\n"),
                0);
  static const char *const cases[] = {"slope d.tif s.tif --stats-json -", "slope d.tif s2.tif --ft dual --ft-report -",
                                      "fill d.tif f.tif --aap-stats -",
                                      "flowgraph d.tif --acc a.tif --streams st.tif --stats-json -",
                                      "batch --summary - jobs.txt"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char c[4096];
    snprintf(c, sizeof c, "cd '%s' && script -qec \"'%s' %s > out.txt\" /dev/null > tty.txt", outdir, tf, cases[i]);
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    const int shown = strstr(rc_slurp(out("tty.txt")), "0...10...20...30") != NULL;
    snprintf(c, sizeof c, "cd '%s' && /usr/bin/python3 stream.py out.txt", outdir);
    if (!shown || rc_run(c, errfile) != 0 || exists("-")) {
      fprintf(stderr, "`%s` with a terminal on stderr:%s stdout %.300s\n%s", cases[i],
              shown ? "" : " no progress line;", rc_slurp(out("out.txt")), rc_slurp(errfile));
      return 1;
    }
    if (i == 0) {
      snprintf(c, sizeof c, "cd '%s' && /usr/bin/python3 min.py out.txt s.tif", outdir);
      if (rc_run(c, errfile) != 0) {
        fprintf(stderr, "%s", rc_slurp(errfile));
        return 1;
      }
    }
  }
  return 0;
}

/* An output in a folder of about 2000 characters (under PATH_MAX, over the
 * 2048 bytes of GDAL's name buffers once the temporary's suffix is added):
 * refused before any work with a line that keeps its reason at the end
 * (it used to be written, then reported as a failure, the line cut); a name
 * that fits is written. */
static int test_long_names(void) {
  reset(outdir);
  char deep[2200];
  int n = snprintf(deep, sizeof deep, "%s", outdir);
  while (n < 2010) n += snprintf(deep + n, sizeof deep - (size_t)n, "/%0100d", 0);
  char c[4400];
  snprintf(c, sizeof c, "mkdir -p '%s'", deep);
  ASSERT_EQ_INT(system(c), 0);
  char args[4400];
  snprintf(args, sizeof args, "slope '%s' '%s/s.tif'", in("demo.tif"), deep);
  if (expect_q(args, 4, "GDAL handles at most")) return 1;
  ASSERT(strstr(rc_slurp(errfile), "s.tif': a name of") != NULL);
  snprintf(c, sizeof c, "test -z \"$(ls -A '%s')\"", deep);
  ASSERT_EQ_INT(system(c), 0);
  /* 1900 bytes fit */
  deep[1880] = 0;
  char *slash = strrchr(deep, '/');
  *slash = 0;
  snprintf(args, sizeof args, "slope '%s' '%s/s.tif'", in("demo.tif"), deep);
  if (expect_q(args, 0, NULL)) return 1;
  return 0;
}

/* ---- the walk: every output option onto every input ------------------------------------- */

/* The words of a blank-separated list after w[0..n): the new count. */
static int words_of(const char *list, char w[][32], int n, int max) {
  for (const char *p = list; p && *p && n < max;) {
    while (*p == ' ') p++;
    const size_t k = strcspn(p, " ");
    if (!k) break;
    snprintf(w[n++], 32, "%.*s", (int)k, p);
    p += k;
  }
  return n;
}

/* Every spelling of every file command c writes, as `terrafort batch` knows
 * them: the rows of its option table that write a file (every group, the
 * common and engine ones included), and "" for the positional OUT when the
 * last file name is one. */
static int outputs_of(const tf_command *c, char w[][32], int max) {
  int n = 0;
  for (int g = 0; g < TF_OPT_GROUPS && c->opts->groups[g].rows; g++)
    for (const tf_opt *r = c->opts->groups[g].rows; r->kind != TF_HEADING || r->names || r->doc; r++) {
      if (r->kind == TF_HEADING || (r->role != TF_ROLE_OUT && r->role != TF_ROLE_OUT_IF_DEM)) continue;
      n = words_of(r->names, w, n, max);
    }
  if (c->opts->last_positional && n < max) w[n++][0] = 0;
  return n;
}

static int word_char(char c) { return c == '_' || isalnum((unsigned char)c); }

/* A flag a --help text names (a word starting with '-' at the start of a
 * line or after a blank, ',', '[', '(' or '|', as completion reads them),
 * whether the help shows it taking a value named FILE or OUT (the positional
 * output's name), and the line it is on. */
typedef struct {
  char flag[40];
  int file, out;
  const char *line;
} help_flag;

static int help_flags(const char *help, help_flag *f, int max) {
  int n = 0;
  const char *line = help;
  for (const char *p = help; *p && n < max; p++) {
    if (*p == '\n') line = p + 1;
    if (*p != '-' || (p != help && !strchr("\n ,[(|", p[-1]))) continue;
    size_t k = 1;
    while (p[k] == '-' || word_char(p[k])) k++;
    if (k >= 2 && k < sizeof f->flag && isalpha((unsigned char)p[p[1] == '-' ? 2 : 1])) {
      snprintf(f[n].flag, sizeof f[n].flag, "%.*s", (int)k, p);
      f[n].out = !strncmp(p + k, " OUT", 4) && !word_char(p[k + 4]);
      f[n].file = f[n].out || (!strncmp(p + k, " FILE", 5) && !word_char(p[k + 5]));
      f[n].line = line;
      n++;
    }
    p += k - 1;
  }
  return n;
}

/* `terrafort CMD --help` (malloc'd; NULL when it fails). */
static char *help_of(const char *cmd) {
  char c[2048];
  if (snprintf(c, sizeof c, "'%s' %s --help > '%s.help'", tf, cmd, outdir) >= (int)sizeof c || rc_run(c, NULL) != 0)
    return NULL;
  snprintf(c, sizeof c, "%s.help", outdir);
  return strdup(rc_slurp(c));
}

static int says(const char *msg, const char *role, const char *word) {
  char needle[1200];
  if (snprintf(needle, sizeof needle, "cannot write %s '%s'", role, word) >= (int)sizeof needle) return 0;
  return strstr(msg, needle) != NULL;
}

/* Whether a refusal names output o (and the file as given, word): o itself,
 * a spelling the help shows on o's line taking FILE too (-ad8 is --acc), or
 * "output" for the positional and for a flag the help shows taking OUT. */
static int names_output(const char *msg, const char *o, const char *word, const help_flag *hf, int n) {
  if (!o[0]) return says(msg, "output", word);
  if (says(msg, o, word)) return 1;
  for (int i = 0; i < n; i++) {
    if (!hf[i].file || strcmp(hf[i].flag, o)) continue;
    if (hf[i].out && says(msg, "output", word)) return 1;
    for (int j = 0; j < n; j++)
      if (hf[j].line == hf[i].line && hf[j].file && says(msg, hf[j].flag, word)) return 1;
  }
  return 0;
}

/* The runs the walk makes of each command: its inputs' words ("%s": the
 * DEM's, in each form of dem_forms), before the output under test. The
 * table holds no inputs, so these are the test's; a command without a run
 * here gets the first one (DEM OUT), and fails the walk if that is not its
 * form. */
typedef struct {
  const char *cmd;        /* NULL: every command without a run of its own */
  const char *line;
  const char *alias_line; /* before an output spelled as the positional's alias (the help's OPT OUT) */
  const char *reads;      /* the other files it reads (outputs aim at each in turn) */
  const char *skip;       /* outputs this form of the run cannot have (they need a DEM) */
} walk_run;

/* flowgraph's outputs by kind, for the runs' lists of outputs they cannot have (each
 * word ends with a blank, so that lists join by juxtaposition) */
#define WALK_DINF "--ang -ang --slp -slp --sca -sca --twi -twi --spi "
#define WALK_D8_LINKS "--acc -ad8 --streams -src --order -ord --basins -w -gw --network -net --basin-stats "
#define WALK_DIRS "--dir -p --slope -sd8 "
#define WALK_SIDE "--stats-json --ft-report --aap-stats "
#define WALK_OUTLETS "--moved-outlets -om --outlet-table -id "
#define WALK_LENGTHS "--plen -plen --tlen -tlen --gord -gord --tree -tree --coord -coord "
#define WALK_DISTANCES "--hand -dd --d8-dist -dist "
static const walk_run walk_runs[] = {
    {.cmd = NULL, .line = "%s"},
    {.cmd = "color-relief", .line = "%s ramp.txt", .reads = "ramp.txt"},
    {.cmd = "fill", .line = "%s --burn l.gpkg --burn-depth 1", .alias_line = "-z %s --burn l.gpkg --burn-depth 1",
     .reads = "l.gpkg"},
    {.cmd = "breach", .line = "%s --burn l.gpkg --burn-depth 1", .reads = "l.gpkg"},
    {.cmd = "flowgraph",
     .line = "%s --basins b.tif --weights w.tif --filled-in f.tif --outlets o.gpkg --burn l.gpkg --burn-depth 1",
     .reads = "w.tif f.tif o.gpkg l.gpkg", .skip = WALK_DINF},
    /* (--moved-outlets needs --outlets, which both D8 runs give) */
    {.cmd = "flowgraph", .line = "--dir-in p.tif -wg w.tif -fel f.tif -w b.tif -o o.gpkg", .reads = "p.tif",
     .skip = WALK_DINF WALK_DIRS},
    /* TauDEM streamnet's inputs, the streams and the area given (w.tif,
     * f.tif: on the directions' grid); the products made from --threshold
     * and the given ones' names are refused with them (exit 2) */
    {.cmd = "flowgraph", .line = "--dir-in p.tif --streams-in w.tif --acc-in f.tif -fel f.tif -w b.tif",
     .reads = "p.tif w.tif f.tif",
     .skip = WALK_DINF WALK_DIRS WALK_OUTLETS WALK_DISTANCES "--acc -ad8 --streams -src"},
    /* D-infinity's products (--method dinf refuses D8's, --plen, --tlen and
     * --gord among them, and takes --hand and --d8-dist; the side files are
     * the first run's), each run with one product of its own */
    {.cmd = "flowgraph", .line = "%s --method dinf --ang a.tif",
     .skip = WALK_D8_LINKS WALK_DIRS WALK_SIDE WALK_OUTLETS WALK_LENGTHS "--ang -ang"},
    {.cmd = "flowgraph", .line = "%s --method dinf --slp s.tif",
     .skip = WALK_D8_LINKS WALK_DIRS WALK_SIDE WALK_OUTLETS WALK_LENGTHS "--slp -slp --sca -sca --twi -twi --spi"},
    /* TauDEM areadinf's form: existing angles (an.tif), --sca alone */
    {.cmd = "flowgraph", .line = "--ang-in an.tif", .reads = "an.tif",
     .skip = WALK_D8_LINKS WALK_DIRS WALK_SIDE WALK_OUTLETS WALK_LENGTHS WALK_DISTANCES "--ang -ang --slp -slp --twi -twi --spi"},
    /* TauDEM moveoutletstostreams' inputs: the outlets stop at the streams given (w.tif) */
    {.cmd = "flowgraph", .line = "--dir-in p.tif --streams-in w.tif -o o.gpkg", .reads = "p.tif w.tif o.gpkg",
     .skip = WALK_DINF WALK_DIRS WALK_SIDE WALK_LENGTHS WALK_DISTANCES "--acc -ad8 --streams -src --order -ord --network -net --basin-stats"},
    /* TauDEM dinfdistdown's form: the angles (an.tif), filled DEM and streams (w.tif) given, --hand alone */
    {.cmd = "flowgraph", .line = "%s --filled --ang-in an.tif --streams-in w.tif", .reads = "an.tif w.tif",
     .skip = WALK_DINF WALK_D8_LINKS WALK_DIRS WALK_SIDE WALK_OUTLETS WALK_LENGTHS "--d8-dist -dist"},
    /* TauDEM twi's form: an existing slope and sca (w.tif, f.tif: one grid), --twi alone */
    {.cmd = "flowgraph", .line = "--slp-in w.tif --sca-in f.tif", .reads = "w.tif f.tif",
     .skip = WALK_D8_LINKS WALK_DIRS WALK_SIDE WALK_OUTLETS WALK_LENGTHS WALK_DISTANCES "--ang -ang --slp -slp --sca -sca"},
    {.cmd = "interpolate", .line = "pts.shp", .reads = "pts.shp pts.shx pts.dbf"},
    {.cmd = "interpolate", .line = "p.xyz -clipsrc clip.gpkg", .reads = "p.xyz clip.gpkg"},
    {.cmd = "interpolate", .line = "--fill-voids %s"},
};

/* The DEM as given, and the file behind it the outputs aim at: itself, a
 * VRT's source, a GeoPackage's container, a zip archive. */
static const struct {
  const char *word, *file;
} dem_forms[] = {{"d.tif", "d.tif"}, {"m.vrt", "d.tif"}, {"GPKG:dem.gpkg:elev", "dem.gpkg"}, {"/vsizip/a.zip/z.tif", "a.zip"}};

/* Every file a run of the walk reads, kept byte for byte in orig/. */
static const char *const walk_inputs[] = {"d.tif",   "m.vrt",   "dem.gpkg", "a.zip", "ramp.txt", "w.tif",
                                          "f.tif",   "o.gpkg",  "p.tif",    "pts.shp", "pts.shx", "pts.dbf",
                                          "p.xyz",   "clip.gpkg", "l.gpkg", "an.tif"};
#define WALK_NINPUTS (sizeof walk_inputs / sizeof walk_inputs[0])

/* Is w a word of the blank-separated list? */
static int has_word(const char *list, const char *w) {
  const size_t n = strlen(w);
  for (const char *p = list; p && (p = strstr(p, w)); p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n])) return 1;
  return 0;
}

/* Whether run r is one of command cmd's (the first: of every command
 * without a run of its own). */
static int run_of(const walk_run *r, const char *cmd) {
  if (r->cmd) return !strcmp(r->cmd, cmd);
  for (size_t i = 0; i < sizeof walk_runs / sizeof walk_runs[0]; i++)
    if (walk_runs[i].cmd && !strcmp(walk_runs[i].cmd, cmd)) return 0;
  return 1;
}

/* The walk's inputs in outdir, each with a copy in orig/, a hard link
 * hl_NAME and a symbolic link sl_NAME; an empty folder x for ./x/../. */
static int walk_setup(void) {
  reset(outdir);
  char c[3000];
  snprintf(c, sizeof c,
           "cd '%s' && cp '%s' d.tif && cp d.tif w.tif && cp d.tif f.tif && cp d.tif z.tif && mkdir x orig && "
           "gdalbuildvrt -q m.vrt d.tif && gdal_translate -q -of GPKG -co RASTER_TABLE=elev d.tif dem.gpkg && "
           "python3 -c \"import zipfile; zipfile.ZipFile('a.zip', 'w').write('z.tif')\" && rm z.tif && "
           "printf '0 0 0 255\\n100 255 255 255\\n' > ramp.txt && "
           "printf 'x,y,z\\n500300,4499700,1\\n501000,4499200,2\\n501700,4498800,3\\n' > p.csv && "
           "ogr2ogr -q -f 'ESRI Shapefile' pts.shp p.csv -oo X_POSSIBLE_NAMES=x -oo Y_POSSIBLE_NAMES=y "
           "-oo Z_POSSIBLE_NAMES=z && ogr2ogr -q -f GPKG o.gpkg pts.shp && "
           "printf '500300 4499700 1\\n501000 4499200 2\\n501700 4498800 3\\n' > p.xyz && "
           "printf 'id,WKT\\n1,\"POLYGON((500000 4498500,502000 4498500,502000 4500000,500000 4500000,500000 4498500))\"\\n'"
           " > clip.csv && ogr2ogr -q -f GPKG clip.gpkg clip.csv && "
           "printf 'id,WKT\\n1,\"LINESTRING(500300 4499700,501700 4498800)\"\\n' > l.csv && "
           "ogr2ogr -q -f GPKG -a_srs EPSG:32612 l.gpkg l.csv && rm p.csv clip.csv l.csv && "
           "'%s' flowgraph -q d.tif --dir p.tif && '%s' flowgraph -q d.tif --ang an.tif",
           outdir, in("fractal.tif"), tf, tf);
  if (rc_run(c, NULL) != 0) return 1;
  int n = snprintf(c, sizeof c, "cd '%s' && for f in", outdir);
  for (size_t i = 0; i < WALK_NINPUTS && n < (int)sizeof c; i++) n += snprintf(c + n, sizeof c - (size_t)n, " %s", walk_inputs[i]);
  if (n >= (int)sizeof c - 80) return 1;
  snprintf(c + n, sizeof c - (size_t)n, "; do cp $f orig/ && ln $f hl_$f && ln -s $f sl_$f || exit 1; done");
  return rc_run(c, NULL) != 0;
}

/* The file `f` by spelling k: its name, ./x/../name, a hard link, a
 * symbolic link (an output that is a link is written to its target). */
static const char *spelled(const char *f, int k, char *buf, size_t n) {
  static const char *const forms[] = {"%s", "./x/../%s", "hl_%s", "sl_%s"};
  snprintf(buf, n, forms[k % 4], f);
  return buf;
}

/* One case: `terrafort CMD LINE [o.tif] O WORD` exits 4 with one line naming
 * O and WORD, leaves no file (no temporary either) and every input as it was. */
static int walk_case(const tf_command *c, const walk_run *r, const char *dem, const char *o, const char *file,
                     int spelling, const help_flag *hf, int nhf) {
  int alias = 0;
  for (int i = 0; i < nhf && o[0]; i++) alias |= hf[i].out && !strcmp(hf[i].flag, o);
  const char *line = alias && r->alias_line ? r->alias_line : r->line;
  char inputs[600], word[300], args[1500], cmd[4000];
  const char *pc = strstr(line, "%s");
  int len = pc ? snprintf(inputs, sizeof inputs, "%.*s%s%s", (int)(pc - line), line, dem, pc + 2)
               : snprintf(inputs, sizeof inputs, "%s", line);
  spelled(file, spelling, word, sizeof word);
  if (len < (int)sizeof inputs) {
    if (!o[0]) len = snprintf(args, sizeof args, "%s %s %s", c->name, inputs, word);
    else if (alias) len = snprintf(args, sizeof args, "%s %s %s %s", c->name, inputs, o, word);
    else
      len = snprintf(args, sizeof args, "%s %s%s %s %s", c->name, inputs, c->opts->last_positional ? " o.tif" : "", o,
                     word);
  }
  if (len >= (int)sizeof args || snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s -q", outdir, tf, args) >= (int)sizeof cmd)
    return 1;
  const int before = rc_count_entries(outdir);
  const int rc = rc_run(cmd, errfile);
  const char *msg = rc_slurp(errfile);
  int bad = rc != 4 || pc_lines(msg) != 1 || !names_output(msg, o, word, hf, nhf);
  if (rc_count_entries(outdir) != before || rc_count_entries(out("x")) != 0 ||
      pc_count(outdir, ".terrafort-", NULL, 0) != 0)
    bad = 2;
  char orig[300];
  for (size_t i = 0; i < WALK_NINPUTS && !bad; i++) {
    snprintf(orig, sizeof orig, "orig/%s", walk_inputs[i]);
    if (!rc_same_file(out(orig), out(walk_inputs[i]))) bad = 3;
  }
  if (bad)
    fprintf(stderr, "`terrafort %s`: exit %d (want 4), stderr:\n%s(want one line 'cannot write %s '%s'')%s\n", args, rc,
            msg, o[0] ? o : "output", word,
            bad == 2 ? "; it left a file" : bad == 3 ? "; an input changed" : "");
  return bad != 0;
}

/* Every command (the table's rows that batch runs), every output of it by
 * every spelling the table lists (and the positional OUT), aimed at the
 * files its runs read: each output at the DEM as given; and, in turn (the
 * i-th case takes output i + the command's index and target i, as many
 * cases as the longer of the two lists), at the file behind the DEM in its other forms (a VRT's
 * source, a GeoPackage's container, a zip archive) and at each other file
 * the run reads (the colour file, the points and their shapefile's .shx
 * and .dbf, the clip source, --weights, --filled-in, --outlets,
 * --dir-in). The file is spelled in turn as itself, ./x/../, a hard link
 * and a symbolic link. So every output option meets the DEM and one
 * other input, and every input a few output options and spellings, in
 * about 120 runs (each a process start: the whole product would be ~600;
 * under the sanitizers about 50, see below).
 * Each case is refused before any work: exit 4, one line naming the option
 * and the file, no file left, every input as it was. */
static int test_walk_outputs_onto_inputs(void) {
  ASSERT_EQ_INT(walk_setup(), 0);
  size_t ncmd;
  const tf_command *cmds = tf_commands(&ncmd);
  int cases = 0, k = 0, failed = 0, plain = 0;
  for (size_t ci = 0; ci < ncmd && failed < 5; ci++) {
    const tf_command *c = &cmds[ci];
    if (c->not_a_job) continue; /* batch itself */
    /* under the sanitizers, one of the commands of the first run (DEM OUT:
     * slope, aspect, ... share the local runner's check, run/run.c), and
     * every other command */
    if (TR_TEST_SANITIZED && run_of(&walk_runs[0], c->name) && plain++) continue;
    char outs[64][32];
    const int nouts = outputs_of(c, outs, 64);
    char *help = help_of(c->name);
    ASSERT(help != NULL);
    static help_flag hf[512];
    const int nhf = help_flags(help, hf, 512);
    for (size_t ri = 0; ri < sizeof walk_runs / sizeof walk_runs[0]; ri++) {
      const walk_run *r = &walk_runs[ri];
      if (!run_of(r, c->name)) continue;
      const int dem = strstr(r->line, "%s") != NULL;
      int use[64], nuse = 0, skipped = 0;
      for (int oi = 0; oi < nouts; oi++)
        if (!outs[oi][0] || !has_word(r->skip, outs[oi])) use[nuse++] = oi;
        else skipped++;
      char skip[48][32];
      ASSERT_EQ_INT(words_of(r->skip, skip, 0, 48), skipped); /* each one an output of the table */
      /* the other targets: the DEM's other forms, then the reads */
      char reads[32][32];
      const int nreads = words_of(r->reads, reads, 0, 32);
      const int nforms = dem ? (int)(sizeof dem_forms / sizeof dem_forms[0]) - 1 : 0, nextra = nforms + nreads;
      const int n = dem ? nuse + (nuse > nextra ? nuse : nextra) : (nuse > nextra ? nuse : nextra);
      for (int i = 0; i < n && failed < 5; i++) {
        const int j = dem ? i - nuse : i; /* j < 0: the DEM as given */
        /* under the sanitizers the DEM as given meets one output: the check
         * is the same code for each, and the other targets still meet one
         * output each */
        if (TR_TEST_SANITIZED && j < 0 && i > 0) continue;
        /* (the extra targets start at another output in each command) */
        const char *o = outs[use[(j < 0 ? i : j + (int)ci) % nuse]];
        const int t = j < 0 ? -1 : j % nextra;
        const char *dword = dem_forms[t >= 0 && t < nforms ? t + 1 : 0].word;
        const char *file = t < 0 ? dem_forms[0].file : t < nforms ? dem_forms[t + 1].file : reads[t - nforms];
        if (walk_case(c, r, dword, o, file, k++, hf, nhf)) {
          failed++;
          ASSERT_EQ_INT(walk_setup(), 0); /* the next cases on intact inputs */
        }
        cases++;
      }
    }
    free(help);
  }
  printf("walk: %d cases, %d failed\n", cases, failed);
  ASSERT_EQ_INT(failed, 0);
  ASSERT(cases > (TR_TEST_SANITIZED ? 40 : 100));
  return 0;
}

/* The table the walk reads against each command's --help. The help does
 * not mark outputs apart, so the rule is: a flag the help shows taking a
 * value named FILE or OUT (the positional output's name) is a file the
 * command reads or writes. Each of those must be an output in the table
 * (the command's option table, common and engine rows included), or an input a
 * run of the walk gives (so it is shown read there, refused as an output's
 * target); every output of the table must be one of those; and the help's
 * first usage line ends with OUT exactly when the table takes the last file
 * name for the output. A flag added to a parser and its help but not to
 * batch's strings fails here (the walk would not see it); one with another
 * value name (DIR, SIZE) is not taken for a file. */
static int test_output_options_agree(void) {
  reset(outdir);
  size_t ncmd;
  const tf_command *cmds = tf_commands(&ncmd);
  int bad = 0, checked = 0;
  for (size_t ci = 0; ci < ncmd; ci++) {
    const tf_command *c = &cmds[ci];
    if (c->not_a_job) continue;
    char *help = help_of(c->name);
    ASSERT(help != NULL);
    static help_flag hf[512];
    const int nhf = help_flags(help, hf, 512);
    char outs[64][32];
    const int nouts = outputs_of(c, outs, 64);
    for (int i = 0; i < nouts; i++) {
      int shown = !outs[i][0];
      for (int j = 0; j < nhf; j++) shown |= hf[j].file && !strcmp(hf[j].flag, outs[i]);
      if (!shown) {
        fprintf(stderr, "%s: the table names output %s, which --help does not show taking FILE\n", c->name, outs[i]);
        bad++;
      }
    }
    for (int j = 0; j < nhf; j++) {
      if (!hf[j].file) continue;
      int known = 0;
      for (int i = 0; i < nouts; i++) known |= !strcmp(outs[i], hf[j].flag);
      for (size_t ri = 0; ri < sizeof walk_runs / sizeof walk_runs[0]; ri++)
        known |= walk_runs[ri].cmd && !strcmp(walk_runs[ri].cmd, c->name) && has_word(walk_runs[ri].line, hf[j].flag);
      if (!known) {
        fprintf(stderr,
                "%s: --help shows %s taking a file, but the option table (options.h) has it for no output and no "
                "run of the walk reads it\n",
                c->name, hf[j].flag);
        bad++;
      }
      checked++;
    }
    const char *usage = strstr(help, "Usage:");
    const size_t ul = usage ? strcspn(usage, "\n") : 0;
    const int ends_out = ul >= 4 && !strncmp(usage + ul - 4, " OUT", 4);
    if (!usage || ends_out != (c->opts->last_positional != 0)) {
      fprintf(stderr, "%s: the usage line %s with OUT, the table says the last file name is %s the output\n", c->name,
              ends_out ? "ends" : "does not end", c->opts->last_positional ? "" : "not");
      bad++;
    }
    free(help);
  }
  ASSERT_EQ_INT(bad, 0);
  ASSERT(checked > 20);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  dir = argv[1];
  tf = argv[2];
  snprintf(outdir, sizeof outdir, "%s/../files_written", dir);
  snprintf(errfile, sizeof errfile, "%s/../files_written.stderr", dir);
  static const tr_test_case cases[] = {TR_TEST(test_side_outputs_onto_inputs), TR_TEST(test_side_outputs_under_mpirun),
                                       TR_TEST(test_files_behind_the_input),
                                       TR_TEST(test_symlink_outputs), TR_TEST(test_long_names),
                                       TR_TEST(test_side_files_full_disk), TR_TEST(test_reports_to_stdout), TR_TEST(test_stdout_only_json),
                                       TR_TEST(test_output_options_agree), TR_TEST(test_walk_outputs_onto_inputs)};
  return tr_test_main(argc - 2, argv + 2, cases, (int)(sizeof cases / sizeof cases[0]));
}
