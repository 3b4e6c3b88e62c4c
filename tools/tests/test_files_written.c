/*
 * test_files_written.c - every file a run writes is guarded like its main
 * output (issue 28): refused before any work when it is a file the run reads
 * (by any spelling: the same path, ./x/../, a hard link, a symbolic link, the
 * container of a subdataset, the archive behind a /vsizip/ path, a VRT's
 * source, a colour file) or another file of the same run, with exit 4, one
 * line, no output and every input byte-identical afterwards. An output that
 * is a symbolic link is written to its target and the link stays.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_case.h"
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
  ASSERT_EQ_INT(sh("cp '%s' d.tif && ln d.tif h.tif%s", in("fractal.tif"), ""), 0);
  static const char *const cases[][2] = {{"slope -q d.tif s.tif --stats-json h.tif", "--stats-json 'h.tif'"},
                                         {"fill -q d.tif f.tif --aap-stats ./d.tif", "--aap-stats './d.tif'"}};
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
    ASSERT(!exists("s.tif") && !exists("f.tif"));
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

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  dir = argv[1];
  tf = argv[2];
  snprintf(outdir, sizeof outdir, "%s/../files_written", dir);
  snprintf(errfile, sizeof errfile, "%s/../files_written.stderr", dir);
  static const tr_test_case cases[] = {TR_TEST(test_side_outputs_onto_inputs), TR_TEST(test_side_outputs_under_mpirun),
                                       TR_TEST(test_files_behind_the_input),
                                       TR_TEST(test_symlink_outputs), TR_TEST(test_long_names),
                                       TR_TEST(test_side_files_full_disk), TR_TEST(test_reports_to_stdout)};
  return tr_test_main(argc - 2, argv + 2, cases, (int)(sizeof cases / sizeof cases[0]));
}
