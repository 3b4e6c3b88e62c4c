/*
 * test_graph_ft.c - --ft dual and --ft replay for the graph programs (fill
 * and every flowgraph product) as a user runs them: with bit flips injected
 * into the rounds' new state, into their messages, into Assemble's tiles and
 * into a replica's private input, the outputs are --ft off's bytes and the
 * report's counts close (dual: injected = detected + tolerated, every
 * detected fault corrected; replay: every reported fault re-run, every silent
 * sign flip found by the program's invariant); exact faults in PEval give
 * exact counts (one per tile) for any thread count and under mpirun -n 3;
 * out of core (--mem, the state spilled) the same; --ft-max-errors ends the
 * run with exit 9 and no output; options that mean nothing for rounds are
 * refused.
 */
#include <gdal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_kit.h"
#include "tr_test.h"

static char mpirun[256];

/* demo.tif is 1600 x 1200: tiles of 256 make 7 x 5 fragments */
#define DEMO_TILES_256 35
#define DEMO_TILES_512 12

/* `[prefix] terrafort ARGS -q` in the output folder; its exit code. */
static int tf(const char *prefix, const char *args) {
  char c[4096];
  snprintf(c, sizeof c, "cd '%s' && %s '%s' %s -q", ck_outdir, prefix, ck_tf, args);
  return rc_run(c, NULL);
}

/* The report's lines: each program's line through check(); the number of
 * lines, or -1 when a check failed. */
typedef int (*line_check)(const char *line, void *user);

static int each_line(const char *path, line_check check, void *user) {
  const char *text = rc_slurp(path);
  if (!text) return -1;
  char *copy = strdup(text), *save = NULL;
  int n = 0, bad = 0;
  for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    n++;
    if (check(l, user)) {
      fprintf(stderr, "report line: %s\n", l);
      bad = 1;
    }
  }
  free(copy);
  return bad ? -1 : n;
}

/* Dual: every injected fault found or harmless, every found one corrected. */
typedef struct {
  long long injected, min_each;
} dual_sum;

static int dual_closes(const char *l, void *user) {
  dual_sum *s = user;
  const long long inj = ck_json_int(l, "injected"), det = ck_json_int(l, "detected"),
                  cor = ck_json_int(l, "corrected"), tol = ck_json_int(l, "tolerated"), fat = ck_json_int(l, "fatal");
  s->injected += inj;
  return !strstr(l, "\"mode\":\"dual\"") || (!strstr(l, "\"unit\":\"round\"") && !strstr(l, "\"unit\":\"tile\"")) ||
         inj < s->min_each ||
         inj != det + tol || det != cor || fat != 0;
}

/* Replay with reported faults: each one re-run. */
static int replay_closes(const char *l, void *user) {
  long long *sum = user;
  const long long inj = ck_json_int(l, "injected");
  *sum += inj;
  return !strstr(l, "\"mode\":\"replay\"") || inj <= 0 || ck_json_int(l, "reported") != inj ||
         ck_json_int(l, "errors") != inj || ck_json_int(l, "reruns") != inj || ck_json_int(l, "unrepaired") != 0;
}

static int same(const char *a, const char *b) {
  if (rc_same_file(ck_out(a), ck_out(b))) return 1;
  fprintf(stderr, "%s and %s differ\n", a, b);
  return 0;
}

static const char *demo(void) {
  static char p[1024];
  snprintf(p, sizeof p, "%s/demo.tif", ck_dir);
  return p;
}

/* fill under dual: random flips in half the computations, exact flips in
 * each quarter of every PEval, in messages, in Assemble's tiles and in
 * private inputs: --ft off's bytes, and the counts close */
static int test_fill_dual(void) {
  char a[2048];
  snprintf(a, sizeof a, "fill --tile-size 256 '%s' off.tif", demo());
  ASSERT_EQ_INT(tf("", a), 0);
  static const struct {
    const char *inject;
    long long exact; /* injected, when it is exact (-1: random) */
  } cases[] = {{"flip:p=0.5,seed=3", -1},
               {"flip:sub=0", DEMO_TILES_256},
               {"flip:sub=3,slot=1", DEMO_TILES_256},
               {"flip:sub=1,at=msgs", DEMO_TILES_256},
               {"flip:sub=2,round=-1", DEMO_TILES_256},
               {"flip:sub=2,round=-1,block=4", 1},
               {"flip-input:p=0.5,seed=5", -1}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    /* under the sanitizers (which check the copies' memory, not the counts)
     * every other case */
    if (TR_TEST_SANITIZED && i % 2) continue;
    snprintf(a, sizeof a, "fill --tile-size 256 --threads 2 --ft dual --inject '%s' --ft-report d.json '%s' dual.tif",
             cases[i].inject, demo());
    ASSERT_EQ_INT(tf("", a), 0);
    ASSERT(same("off.tif", "dual.tif"));
    dual_sum s = {0, 1};
    ASSERT_EQ_INT(each_line(ck_out("d.json"), dual_closes, &s), 1);
    if (cases[i].exact >= 0 && s.injected != cases[i].exact) {
      fprintf(stderr, "%s: %lld injected, want %lld\n", cases[i].inject, s.injected, cases[i].exact);
      return 1;
    }
    /* flips in the output are always found; only an input flip may be harmless */
    const char *j = rc_slurp(ck_out("d.json"));
    if (!strstr(cases[i].inject, "input")) ASSERT_EQ_INT(ck_json_int(j, "tolerated"), 0);
    ASSERT(ck_json_int(j, "blocks") >= DEMO_TILES_256 * 2); /* PEval and Assemble of each tile at least */
  }
  return 0;
}

/* fill under replay: ECC-reported flips re-run (exactly one per tile in
 * PEval); silent sign flips in the state, the messages or the tile found by
 * fill's invariant; silent flips of any bit found by --ft-check 1; the
 * error limit */
static int test_fill_replay(void) {
  char a[2048];
  snprintf(a, sizeof a, "fill '%s' off.tif", demo());
  ASSERT_EQ_INT(tf("", a), 0);
  snprintf(a, sizeof a, "fill --ft replay --inject 'flip-launch:tile=-1,launch=0' --ft-report r.json '%s' rep.tif",
           demo());
  ASSERT_EQ_INT(tf("", a), 0);
  ASSERT(same("off.tif", "rep.tif"));
  long long sum = 0;
  ASSERT_EQ_INT(each_line(ck_out("r.json"), replay_closes, &sum), 1);
  ASSERT_EQ_INT(sum, DEMO_TILES_512);
  snprintf(a, sizeof a,
           "fill --ft replay --ft-max-errors 100000 --inject 'flip-launch:p=0.4,seed=4' --ft-report r.json '%s' rep.tif",
           demo());
  ASSERT_EQ_INT(tf("", a), 0);
  ASSERT(same("off.tif", "rep.tif"));
  sum = 0;
  ASSERT_EQ_INT(each_line(ck_out("r.json"), replay_closes, &sum), 1);
  /* silent sign flips: the invariant finds each (none reported) */
  snprintf(a, sizeof a,
           "fill --ft replay --ft-max-errors 100000 --inject 'flip-launch:p=0.4,seed=4,silent=1,bit=31' "
           "--ft-report r.json '%s' rep.tif",
           demo());
  ASSERT_EQ_INT(tf("", a), 0);
  ASSERT(same("off.tif", "rep.tif"));
  const char *j = rc_slurp(ck_out("r.json"));
  const long long inj = ck_json_int(j, "injected");
  ASSERT(inj > 0);
  ASSERT_EQ_INT(ck_json_int(j, "reported"), 0);
  ASSERT_EQ_INT(ck_json_int(j, "faults"), inj);
  ASSERT_EQ_INT(ck_json_int(j, "reproduced"), 0);
  ASSERT_EQ_INT(ck_json_int(j, "reruns"), inj);
  /* silent flips of any bit: sampled re-execution of every round finds each */
  snprintf(a, sizeof a,
           "fill --ft replay --ft-check 1 --ft-max-errors 100000 --inject 'flip-launch:p=0.4,seed=6,silent=1' "
           "--ft-report r.json '%s' rep.tif",
           demo());
  ASSERT_EQ_INT(tf("", a), 0);
  ASSERT(same("off.tif", "rep.tif"));
  j = rc_slurp(ck_out("r.json"));
  const long long inj2 = ck_json_int(j, "injected");
  ASSERT(inj2 > 0);
  ASSERT_EQ_INT(ck_json_int(j, "faults") + ck_json_int(j, "sample_mismatches"), inj2);
  ASSERT_EQ_INT(ck_json_int(j, "reruns"), inj2);
  /* more faults than --ft-max-errors: exit 9, nothing left */
  snprintf(a, sizeof a, "fill --ft replay --ft-max-errors 3 --inject 'flip-launch:tile=-1' '%s' lim.tif", demo());
  ASSERT_EQ_INT(tf("", a), 9);
  ASSERT(access(ck_out("lim.tif"), F_OK) != 0);
  return 0;
}

/* every flowgraph product under dual and replay, faults in every program's
 * rounds: --ft off's bytes, one closing report line per program run */
static int test_flowgraph_products(void) {
  static const char *prod[] = {"dir", "acc", "streams", "order", "basins", "slope", "hand", "d8-dist", "plen", "gord"};
  enum { NPROD = sizeof prod / sizeof *prod };
  char a[2048], outs[1024];
  for (int m = 0; m < 3; m++) {
    if (TR_TEST_SANITIZED && m == 2) break; /* replay's copies are dual's, run by test_ranks_and_threads */
    const char *ft = m == 0 ? "" : m == 1 ? "--ft dual --inject 'flip:p=0.3,seed=7' --ft-report f.json"
                                          : "--ft replay --ft-max-errors 100000 --inject 'flip-launch:p=0.3,seed=7' "
                                            "--ft-report f.json";
    outs[0] = 0;
    for (int k = 0; k < NPROD; k++) {
      char one[128];
      snprintf(one, sizeof one, " --%s %s%d.tif", prod[k], prod[k], m);
      strcat(outs, one);
    }
    snprintf(a, sizeof a, "flowgraph --tile-size 256 --threads 2 '%s' %s %s", demo(), outs, ft);
    ASSERT_EQ_INT(tf("", a), 0);
    if (!m) continue;
    for (int k = 0; k < NPROD; k++) {
      char x[64], y[64];
      snprintf(x, sizeof x, "%s0.tif", prod[k]);
      snprintf(y, sizeof y, "%s%d.tif", prod[k], m);
      ASSERT(same(x, y));
    }
    long long sum = 0;
    dual_sum s = {0, 1};
    const int lines = m == 1 ? each_line(ck_out("f.json"), dual_closes, &s)
                             : each_line(ck_out("f.json"), replay_closes, &sum);
    /* fill, flowdir, the sd8 kernel (--slope), d8_up for each of acc,
     * streams and order, d8_basins, d8_len (plen, gord), dinf (HAND's
     * angles), d8_up (their streams), dist_down (hand, d8-dist) */
    ASSERT(lines >= 12);
    ASSERT(strstr(rc_slurp(ck_out("f.json")), "\"kernel\":\"d8\"") != NULL);
    const char *j = rc_slurp(ck_out("f.json"));
    static const char *progs[] = {"fill", "flowdir", "d8_up", "d8_basins", "d8_len", "dinf", "dist_down"};
    for (int p = 0; p < 7; p++) {
      char want[64];
      snprintf(want, sizeof want, "\"program\":\"%s\"", progs[p]);
      ASSERT(strstr(j, want) != NULL);
    }
  }
  return 0;
}

/* exact PEval faults give exact counts whatever the threads or ranks; the
 * same bytes under mpirun -n 3 for fill and flowgraph, both modes */
static int test_ranks_and_threads(void) {
  char a[2048];
  snprintf(a, sizeof a, "fill --tile-size 256 '%s' off.tif", demo());
  ASSERT_EQ_INT(tf("", a), 0);
  snprintf(a, sizeof a, "flowgraph --tile-size 256 '%s' --acc acc_off.tif --basins bas_off.tif", demo());
  ASSERT_EQ_INT(tf("", a), 0);
  char pre[400];
  for (int w = 0; w < 3; w++) {
    if (w == 2 && !mpirun[0]) {
      printf("skip: no mpirun\n");
      break;
    }
    snprintf(pre, sizeof pre, "%s", w == 2 ? mpirun : "");
    if (w == 2) strcat(pre, " -n 3 timeout 300");
    if (TR_TEST_SANITIZED && w == 1) continue; /* 2 threads: test_fill_dual's */
    const int threads = w == 0 ? 1 : 2;
    snprintf(a, sizeof a,
             "fill --tile-size 256 --threads %d --ft dual --inject 'flip:sub=1' --ft-report d.json '%s' dual.tif",
             threads, demo());
    ASSERT_EQ_INT(tf(pre, a), 0);
    ASSERT(same("off.tif", "dual.tif"));
    dual_sum s = {0, 1};
    ASSERT_EQ_INT(each_line(ck_out("d.json"), dual_closes, &s), 1);
    ASSERT_EQ_INT(s.injected, DEMO_TILES_256);
    snprintf(a, sizeof a,
             "fill --tile-size 256 --threads %d --ft replay --ft-max-errors 1000 --inject 'flip-launch:tile=-1,launch=0' "
             "--ft-report "
             "r.json '%s' rep.tif",
             threads, demo());
    ASSERT_EQ_INT(tf(pre, a), 0);
    ASSERT(same("off.tif", "rep.tif"));
    long long sum = 0;
    ASSERT_EQ_INT(each_line(ck_out("r.json"), replay_closes, &sum), 1);
    ASSERT_EQ_INT(sum, DEMO_TILES_256);
    /* flowgraph under mpirun: the Release tree (ASan makes it 40 s) */
    if (w == 1 || (TR_TEST_SANITIZED && w == 2)) continue;
    for (int m = 0; m < 2; m++) {
      snprintf(a, sizeof a,
               "flowgraph --tile-size 256 --threads %d '%s' --acc acc.tif --basins bas.tif --ft %s --ft-max-errors "
               "100000 --inject '%s' --ft-report f.json",
               threads, demo(), m ? "replay" : "dual", m ? "flip-launch:p=0.3,seed=2" : "flip:p=0.3,seed=2");
      ASSERT_EQ_INT(tf(pre, a), 0);
      ASSERT(same("acc_off.tif", "acc.tif"));
      ASSERT(same("bas_off.tif", "bas.tif"));
      long long rs = 0;
      dual_sum ds = {0, 0};
      ASSERT(m ? each_line(ck_out("f.json"), replay_closes, &rs) >= 3 : each_line(ck_out("f.json"), dual_closes, &ds) >= 3);
      ASSERT(m ? rs > 0 : ds.injected > 0);
    }
  }
  return 0;
}

/* out of core: fill --epsilon with --mem below its state spills between
 * rounds, under dual and replay with faults: the same bytes, and only agreed
 * state was spilled (it is what was read back) */
static int test_out_of_core(void) {
  char a[2048];
  snprintf(a, sizeof a, "fill --epsilon --tile-size 128 '%s' eoff.tif", demo());
  ASSERT_EQ_INT(tf("", a), 0);
  for (int m = 0; m < 2; m++) {
    snprintf(a, sizeof a,
             "fill --epsilon --tile-size 128 --threads 2 --mem 100M --tmp . --aap-stats s.json --ft %s "
             "--ft-max-errors 100000 --inject '%s' --ft-report r.json '%s' e.tif",
             m ? "replay" : "dual", m ? "flip-launch:p=0.3,seed=2" : "flip:p=0.3,seed=2", demo());
    ASSERT_EQ_INT(tf("", a), 0);
    ASSERT(same("eoff.tif", "e.tif"));
    const char *st = rc_slurp(ck_out("s.json"));
    ASSERT(ck_json_int(st, "spills") > 0);
    ASSERT(ck_json_int(st, "restores") > 0);
    long long sum = 0;
    dual_sum s = {0, 1};
    ASSERT_EQ_INT(m ? each_line(ck_out("r.json"), replay_closes, &sum) : each_line(ck_out("r.json"), dual_closes, &s),
                  1);
  }
  return 0;
}

/* every program's invariant (no --ft-check): a silent flip of a high bit
 * in every tile Assemble puts (bit 62 of a Float64 cell's exponent, bit 14
 * of an Int16 direction code) is found and the tile made again */
static int inv_closes(const char *l, void *user) {
  long long *sum = user;
  const long long inj = ck_json_int(l, "injected");
  *sum += inj;
  return inj != DEMO_TILES_512 || ck_json_int(l, "reported") != 0 || ck_json_int(l, "faults") != inj ||
         ck_json_int(l, "reproduced") != 0 || ck_json_int(l, "reruns") != inj;
}

static int test_invariants(void) {
  char a[2048];
  snprintf(a, sizeof a, "flowgraph '%s' --dir d0.tif --acc a0.tif --streams s0.tif --basins b0.tif", demo());
  ASSERT_EQ_INT(tf("", a), 0);
  snprintf(a, sizeof a,
           "flowgraph '%s' --dir d1.tif --acc a1.tif --streams s1.tif --basins b1.tif --ft replay --ft-max-errors 1000 "
           "--inject 'flip-launch:tile=-1,launch=-1,silent=1,bit=62' --ft-report f.json",
           demo());
  ASSERT_EQ_INT(tf("", a), 0);
  ASSERT(same("d0.tif", "d1.tif") && same("a0.tif", "a1.tif") && same("s0.tif", "s1.tif") && same("b0.tif", "b1.tif"));
  long long sum = 0;
  const int lines = each_line(ck_out("f.json"), inv_closes, &sum);
  ASSERT(lines >= 5); /* fill, flowdir, d8_up per product, d8_basins */
  const char *j = rc_slurp(ck_out("f.json"));
  ASSERT(strstr(j, "\"program\":\"flowdir\"") && strstr(j, "\"program\":\"d8_basins\""));
  return 0;
}

/* the machine's EDAC counters in every --ft report: read from each memory
 * controller's folder and summed (a fake sysfs tree with two controllers,
 * a folder that is not one and a controller without counters); null where
 * the machine has none */
static int test_edac_counters(void) {
  char root[600], c[8192], a[2048];
  snprintf(root, sizeof root, "%s/edac", ck_outdir);
  snprintf(c, sizeof c,
           "rm -rf '%s' && mkdir -p '%s/mc0' '%s/mc1' '%s/mc2' '%s/power' && echo 3 > '%s/mc0/ce_count' && "
           "echo 1 > '%s/mc0/ue_count' && echo 4 > '%s/mc1/ce_count' && echo 0 > '%s/mc1/ue_count' && "
           "echo 9 > '%s/power/ce_count'",
           root, root, root, root, root, root, root, root, root, root);
  ASSERT_EQ_INT(system(c), 0);
  static const char *runs[] = {"fill --ft dual", "fill --ft replay", "slope --ft dual", "slope --ft replay"};
  const int real = access("/sys/devices/system/edac/mc", F_OK) == 0;
  for (int k = 0; k < 4; k++) {
    char pre[1400];
    snprintf(pre, sizeof pre, "TERRAFORT_EDAC_ROOT='%s'", root);
    snprintf(a, sizeof a, "%s '%s' e.tif --ft-report e.json", runs[k], demo());
    ASSERT_EQ_INT(tf(pre, a), 0);
    const char *j = rc_slurp(ck_out("e.json"));
    if (!strstr(j, "\"edac\":{\"controllers\":2,\"ce_start\":7,\"ce_end\":7,\"ue_start\":1,\"ue_end\":1}")) {
      fprintf(stderr, "%s: %s\n", runs[k], j);
      return 1;
    }
    ASSERT_EQ_INT(tf("", a), 0);
    j = rc_slurp(ck_out("e.json"));
    ASSERT(real ? strstr(j, "\"edac\":{\"controllers\":") != NULL : strstr(j, "\"edac\":null") != NULL);
  }
  return 0;
}

/* options that mean nothing for rounds: one clear line, exit 2, no output */
static int test_bad_options(void) {
  static const char *bad[] = {"--ft dual --ft-tolerance 0.5", "--ft dual --ft-error-rate 0.1",
                              "--ft dual --ft-profile source", "--ft dual --ft-mode basic"};
  char a[2048];
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(a, sizeof a, "fill %s '%s' bad.tif", bad[i], demo());
    ASSERT_EQ_INT(tf("", a), 2);
    ASSERT(access(ck_out("bad.tif"), F_OK) != 0);
  }
  return 0;
}

/* Every wait of dual's rounds is bounded: a helper thread that holds its
 * computation back (stall:worker=0) past --ft-timeout plus four times the
 * round's own time ends the run with exit 5, naming the round, and leaves no
 * output, in seconds rather than the stall's minute; a stall shorter than
 * that only delays the run, whose bytes are --ft off's. */
static int test_helper_late(void) {
  char a[2048], err[600], c[4096];
  snprintf(a, sizeof a, "fill --tile-size 256 '%s' off.tif", demo());
  ASSERT_EQ_INT(tf("", a), 0);
  unlink(ck_out("late.tif"));
  snprintf(err, sizeof err, "%s/late.stderr", ck_outdir);
  snprintf(c, sizeof c,
           "cd '%s' && timeout 120 '%s' fill --tile-size 256 --ft dual --ft-timeout 1000 "
           "--inject 'stall:worker=0,ms=60000' '%s' late.tif",
           ck_outdir, ck_tf, demo());
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ASSERT_EQ_INT(rc_run(c, err), 5);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  ASSERT((double)(t1.tv_sec - t0.tv_sec) < 30);
  ASSERT(strstr(rc_slurp(err), "did not come back within 1000 ms") != NULL);
  ASSERT(strstr(rc_slurp(err), "round") != NULL);
  ASSERT(access(ck_out("late.tif"), F_OK) != 0);
  snprintf(a, sizeof a,
           "fill --tile-size 256 --ft dual --ft-timeout 5000 --inject 'stall:worker=0,ms=300,count=2' '%s' slow.tif",
           demo());
  ASSERT_EQ_INT(tf("", a), 0);
  ASSERT(same("off.tif", "slow.tif"));
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  ck_init(argv[1], argv[2], "graph_ft");
  GDALAllRegister();
  ck_mpirun(mpirun, sizeof mpirun);
  static const tr_test_case cases[] = {TR_TEST(test_fill_dual),         TR_TEST(test_fill_replay),
                                       TR_TEST(test_flowgraph_products), TR_TEST(test_ranks_and_threads),
                                       TR_TEST(test_out_of_core),        TR_TEST(test_bad_options),
                                       TR_TEST(test_invariants),         TR_TEST(test_edac_counters),
                                       TR_TEST(test_helper_late)};
  return tr_test_main(argc - 2, argv + 2, cases, (int)(sizeof cases / sizeof cases[0]));
}
