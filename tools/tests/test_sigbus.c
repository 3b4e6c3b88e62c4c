/*
 * test_sigbus.c - memory failures inside a local kernel's launch (issue 26
 * item 3, libterrain/local/memfail.h): a SIGBUS with si_code BUS_MCEERR_AR
 * or _AO naming a byte of a launch's buffers is a detected fault; the tile
 * is computed again on fresh buffers, the poisoned ones retired, and the
 * output is --ft off's without a fault, to the byte, with exact counts in
 * --ft-report (injected = memory_failures = memory_corrected, and the bytes
 * retired), for 1 and 2 threads, an iterative row, --ft off (a warning
 * instead of a report) and under mpirun -n 2. A SIGBUS that is not ours
 * (an address no launch guards, or a thread outside a launch) still kills
 * the process by SIGBUS. The injector's sigbus fault is the signal a
 * memory failure brings, sent by the kernel's thread to itself; its
 * hwpoison fault poisons a page for real (madvise(MADV_HWPOISON)): that
 * case skips (exit 77, naming the errno) where the kernel refuses, as on a
 * kernel without CONFIG_MEMORY_FAILURE (EINVAL) or without CAP_SYS_ADMIN
 * (EPERM). Run it alone: `cli_sigbus_hwpoison` in ctest, or
 * build/tools/cli_sigbus build/testdata build/tools/terrafort test_sigbus_hwpoison
 *
 * The graph programs (hydro/graph_ft.h): under --ft replay (and dual) a
 * round computes on copies, and a memory failure in them is recovered the
 * same way: `terrafort fill` and `terrafort flowgraph --dir --acc` (fill,
 * flowdir and d8_up, one report line each) with faults in PEval (round 0),
 * the first IncEval (round 1) and Assemble (-1), buf=in and out, code=ar
 * and ao, 1 and 2 threads and mpirun -n 2: --ft off's bytes and exact
 * counts on every line. buf=outside and after=1 still die by SIGBUS with
 * no output; under --ft off (no copy to compute again from) the fault is a
 * usage error.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_kit.h"
#include "proc_check.h"
#include "tr_test.h"

static char mpirun[256];

/* fractal.tif is 200 x 150: 35 tiles of 32 cells, 12 of 64; a slot's input
 * window is (tile + 2 halo)^2 floats */
enum { TILES32 = 35, IN32 = 34 * 34 * 4, IN64 = 66 * 66 * 4 };
/* smooth's halo is its most passes (8): its windows, in and work alike */
enum { SMOOTH32 = 48 * 48 * 4 };

/* terrafort CMD fractal.tif OUT FLAGS, stderr into err.txt: the exit code */
static int run(const char *prefix, const char *cmd, const char *out, const char *flags) {
  char c[4096];
  snprintf(c, sizeof c, "%s '%s' %s '%s/fractal.tif' '%s' %s -q 2>'%s'", prefix, ck_tf, cmd, ck_dir, ck_out(out), flags,
           ck_out("err.txt"));
  return rc_run(c, NULL);
}

/* The report's counts are these, and the output is off.tif's bytes. */
static int check(const char *what, const char *out, long long injected, long long found, long long retired) {
  const char *j = rc_slurp(ck_out("r.json"));
  if (!rc_same_file(ck_out("off.tif"), ck_out(out)) || ck_json_int(j, "injected") != injected ||
      ck_json_int(j, "memory_failures") != found || ck_json_int(j, "memory_corrected") != found ||
      (retired >= 0 && ck_json_int(j, "retired_bytes") != retired) || ck_json_int(j, "errors") != 0) {
    fprintf(stderr, "%s: want injected %lld, memory_failures = memory_corrected = %lld, retired_bytes %lld: %s\n", what,
            injected, found, retired, j);
    return 1;
  }
  return 0;
}

/* A failure in every tile's input window, and in one tile's output, with
 * 1 and 2 threads: each tile computed again, every window retired. */
static int test_sigbus_replay(void) {
  char flags[1024];
  ASSERT_EQ_INT(run("", "slope", "off.tif", "--tile-size 32"), 0);
  for (int threads = 1; threads <= 2; threads++) {
    snprintf(flags, sizeof flags, "--tile-size 32 --threads %d --ft replay --inject 'sigbus:tile=-1' --ft-report '%s'",
             threads, ck_out("r.json"));
    ASSERT_EQ_INT(run("", "slope", "rep.tif", flags), 0);
    ASSERT_EQ_INT(check("every window", "rep.tif", TILES32, TILES32, (long long)TILES32 * IN32), 0);
    /* the output (a reorder slot, retired whole: its size is the runner's, not checked) */
    snprintf(flags, sizeof flags,
             "--tile-size 32 --threads %d --ft replay --inject 'sigbus:tile=7,buf=out' --ft-report '%s'", threads,
             ck_out("r.json"));
    ASSERT_EQ_INT(run("", "slope", "rep.tif", flags), 0);
    ASSERT_EQ_INT(check("one output", "rep.tif", 1, 1, -1), 0);
    ASSERT(ck_json_int(rc_slurp(ck_out("r.json")), "retired_bytes") >= 32 * 32 * 4);
    /* action optional, naming a window in use: marked, and the tile done again at its end */
    snprintf(flags, sizeof flags,
             "--tile-size 32 --threads %d --ft replay --inject 'sigbus:tile=3,code=ao;sigbus:tile=9,code=ao' "
             "--ft-report '%s'",
             threads, ck_out("r.json"));
    ASSERT_EQ_INT(run("", "slope", "rep.tif", flags), 0);
    ASSERT_EQ_INT(check("action optional", "rep.tif", 2, 2, 2LL * IN32), 0);
    /* action optional, naming no buffer of ours: ignored */
    snprintf(flags, sizeof flags,
             "--tile-size 32 --threads %d --ft replay --inject 'sigbus:tile=-1,code=ao,buf=outside' --ft-report '%s'",
             threads, ck_out("r.json"));
    ASSERT_EQ_INT(run("", "slope", "rep.tif", flags), 0);
    ASSERT_EQ_INT(check("action optional, not ours", "rep.tif", TILES32, 0, 0), 0);
  }
  return 0;
}

/* The iterative row: a failure in a pass's input (the work window, launch
 * 2) and in the finish's output, both tracked; the checkpoint is taken
 * again from the window read afresh. */
static int test_sigbus_iterative(void) {
  char flags[1024];
  ASSERT_EQ_INT(run("", "smooth", "off.tif", "--tile-size 32 --passes 3"), 0);
  snprintf(
      flags, sizeof flags,
      "--tile-size 32 --passes 3 --threads 2 --ft replay --inject 'sigbus:tile=-1,launch=2;sigbus:tile=1,launch=0' "
      "--ft-report '%s'",
      ck_out("r.json"));
  ASSERT_EQ_INT(run("", "smooth", "rep.tif", flags), 0);
  /* tile 1's launch 0 comes first and its second computation gets no fault:
   * 35 faults, tile 1's in its input window, the other 34 in work windows */
  ASSERT_EQ_INT(check("smooth", "rep.tif", TILES32, TILES32, (long long)TILES32 * SMOOTH32), 0);
  snprintf(flags, sizeof flags,
           "--tile-size 32 --passes 3 --ft replay --inject 'sigbus:tile=4,launch=3,buf=out' --ft-report '%s'",
           ck_out("r.json"));
  ASSERT_EQ_INT(run("", "smooth", "rep.tif", flags), 0);
  ASSERT_EQ_INT(check("smooth's finish", "rep.tif", 1, 1, -1), 0);
  return 0;
}

/* --ft off recovers the same way (it costs a sigsetjmp per launch until a
 * signal comes) and, having no report, says so in one warning line. */
static int test_sigbus_ft_off(void) {
  ASSERT_EQ_INT(run("", "slope", "off.tif", "--tile-size 32"), 0);
  ASSERT_EQ_INT(run("", "slope", "rep.tif", "--tile-size 32 --threads 2 --inject 'sigbus:tile=-1'"), 0);
  ASSERT(rc_same_file(ck_out("off.tif"), ck_out("rep.tif")));
  const char *e = rc_slurp(ck_out("err.txt"));
  ASSERT_EQ_INT(pc_lines(e), 1);
  ASSERT(strstr(e,
                "warning: 35 memory failures (SIGBUS, BUS_MCEERR_AR/AO) in a kernel's buffers, the lowest in tile 0: "
                "35 corrected") != NULL);
  /* no failure, no warning */
  ASSERT_EQ_INT(run("", "slope", "rep.tif", "--tile-size 32 --inject 'sigbus:tile=-1,code=ao,buf=outside'"), 0);
  ASSERT_EQ_INT(pc_lines(rc_slurp(ck_out("err.txt"))), 0);
  return 0;
}

/* A command's wait status, run through `exec` so the shell's is the
 * program's. */
static int wait_status(const char *flags) {
  char c[4096];
  snprintf(c, sizeof c, "exec '%s' slope '%s/fractal.tif' '%s' --tile-size 32 %s -q 2>'%s'", ck_tf, ck_dir,
           ck_out("dead.tif"), flags, ck_out("err.txt"));
  return system(c);
}

/* Not ours: an AR naming memory no launch guards, or delivered outside a
 * launch, gets the disposition from before the run: the process dies by
 * SIGBUS, under --ft off and replay, and leaves no output. */
static int test_sigbus_not_ours(void) {
  static const char *flags[] = {"--inject 'sigbus:tile=5,buf=outside'",
                                "--ft replay --inject 'sigbus:tile=5,buf=outside'", "--inject 'sigbus:tile=5,after=1'",
                                "--ft replay --threads 2 --inject 'sigbus:tile=5,after=1'"};
  for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) {
    unlink(ck_out("dead.tif"));
    const int st = wait_status(flags[i]);
    if (st == -1 || !WIFSIGNALED(st) || WTERMSIG(st) != SIGBUS) {
      fprintf(stderr, "%s: wait status %#x, want death by SIGBUS\n", flags[i], st);
      return 1;
    }
    ASSERT(access(ck_out("dead.tif"), F_OK) != 0);
  }
  return 0;
}

/* Each rank's launch point recovers its own tiles; the report sums them. */
static int test_sigbus_mpi(void) {
  if (!mpirun[0]) {
    printf("skip: no mpirun\n");
    return 0;
  }
  char prefix[300], flags[1024];
  snprintf(prefix, sizeof prefix, "%s -n 2", mpirun);
  ASSERT_EQ_INT(run("", "slope", "off.tif", "--tile-size 32"), 0);
  snprintf(flags, sizeof flags, "--tile-size 32 --ft replay --inject 'sigbus:tile=-1' --ft-report '%s'",
           ck_out("r.json"));
  ASSERT_EQ_INT(run(prefix, "slope", "rep.tif", flags), 0);
  ASSERT_EQ_INT(check("mpirun -n 2", "rep.tif", TILES32, TILES32, (long long)TILES32 * IN32), 0);
  snprintf(flags, sizeof flags, "--tile-size 32 --inject 'sigbus:tile=-1,buf=out'");
  ASSERT_EQ_INT(run(prefix, "slope", "rep.tif", flags), 0);
  ASSERT(rc_same_file(ck_out("off.tif"), ck_out("rep.tif")));
  return 0;
}

/* ---- graph programs ---- */

/* fractal.tif in fragments of 64 cells: 12. Fragment 5 (inside) has a
 * first IncEval in fill, flowdir and d8_up: its neighbours' PEvals message
 * it, whatever the schedule (not every fragment does in flowdir) */
enum { FRAGS64 = 12 };

/* terrafort ARGS with fractal.tif as the DEM, stderr into err.txt: the exit code */
static int grun(const char *prefix, const char *cmd, const char *args) {
  char c[4096];
  snprintf(c, sizeof c, "%s '%s' %s '%s/fractal.tif' %s --tile-size 64 -q 2>'%s'", prefix, ck_tf, cmd, ck_dir, args,
           ck_out("err.txt"));
  return rc_run(c, NULL);
}

/* The outputs of a graph command: "fill" one, "flowgraph" directions and accumulation. */
static const char *gouts(const char *cmd, const char *tag, char *buf, size_t n) {
  char a[512], b[512];
  snprintf(a, sizeof a, "%s_a.tif", tag);
  snprintf(b, sizeof b, "%s_b.tif", tag);
  if (!strcmp(cmd, "fill"))
    snprintf(buf, n, "'%s'", ck_out(a));
  else
    snprintf(buf, n, "--dir '%s' --acc '%s'", ck_out(a), ck_out(b));
  return buf;
}

static int gsame(const char *cmd) {
  if (!rc_same_file(ck_out("goff_a.tif"), ck_out("grep_a.tif"))) return 0;
  return !strcmp(cmd, "fill") || rc_same_file(ck_out("goff_b.tif"), ck_out("grep_b.tif"));
}

/* Every line of r.json (one per program: fill 1, flowgraph 3) counts
 * `each` faults found and corrected (injected too, under replay), with
 * bytes retired and no tracker error; the lines are `lines`. */
static int gcheck(const char *what, int lines, long long each, int replay) {
  const char *j = rc_slurp(ck_out("r.json"));
  int n = 0;
  for (const char *p = j; p && *p; n++) {
    const char *e = strchr(p, '\n');
    const size_t len = e ? (size_t)(e - p) : strlen(p);
    char line[8192];
    if (len >= sizeof line) return fprintf(stderr, "%s: a report line of %zu bytes\n", what, len), 1;
    memcpy(line, p, len);
    line[len] = 0;
    if ((replay && ck_json_int(line, "injected") != each) || ck_json_int(line, "memory_failures") != each ||
        ck_json_int(line, "memory_corrected") != each || ck_json_int(line, "retired_bytes") <= 0 ||
        (replay && ck_json_int(line, "errors") != 0)) {
      fprintf(stderr, "%s: want %sinjected = memory_failures = memory_corrected = %lld, retired_bytes > 0: %s\n", what,
              replay ? "" : "(dual: no top-level) ", each, line);
      return 1;
    }
    p = e ? e + 1 : NULL;
  }
  if (n != lines) return fprintf(stderr, "%s: %d report lines, want %d: %s\n", what, n, lines, j), 1;
  return 0;
}

/* fill and flowgraph --dir --acc under --ft replay, 1 and 2 threads: a
 * fault in every fragment's PEval and one in a first IncEval's new state
 * (AR), then action-optional ones in PEval's new state and a first
 * IncEval's window copy, then every Assemble's tile and one's input copy. */
static int test_sigbus_graph(void) {
  static const char *cmds[] = {"fill", "flowgraph"};
  static const struct {
    const char *spec;
    long long each;
  } cases[] = {
      {"sigbus:tile=-1;sigbus:tile=5,launch=1,buf=out", FRAGS64 + 1},
      {"sigbus:tile=-1,buf=out,code=ao;sigbus:tile=5,launch=1,buf=in,code=ao", FRAGS64 + 1},
      /* the first entry that matches is a round's fault: tile 7's Assemble gets the AO */
      {"sigbus:tile=7,launch=-1,buf=in,code=ao;sigbus:tile=-1,launch=-1,buf=out", FRAGS64},
  };
  char outs[1200], flags[2048];
  for (size_t c = 0; c < 2; c++) {
    const int lines = c ? 3 : 1;
    ASSERT_EQ_INT(grun("", cmds[c], gouts(cmds[c], "goff", outs, sizeof outs)), 0);
    for (int threads = 1; threads <= 2; threads++)
      for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        unlink(ck_out("r.json"));
        snprintf(flags, sizeof flags, "%s --threads %d --ft replay --inject '%s' --ft-report '%s'",
                 gouts(cmds[c], "grep", outs, sizeof outs), threads, cases[k].spec, ck_out("r.json"));
        ASSERT_EQ_INT(grun("", cmds[c], flags), 0);
        ASSERT(gsame(cmds[c]));
        char what[600];
        snprintf(what, sizeof what, "%s --threads %d '%s'", cmds[c], threads, cases[k].spec);
        ASSERT_EQ_INT(gcheck(what, lines, cases[k].each, 1), 0);
      }
  }
  return 0;
}

/* --ft dual: each computation is guarded the same way; the first replica
 * of a round gets the fault (its report has no top-level injected). */
static int test_sigbus_graph_dual(void) {
  char outs[1200], flags[2048];
  ASSERT_EQ_INT(grun("", "fill", gouts("fill", "goff", outs, sizeof outs)), 0);
  snprintf(flags, sizeof flags,
           "%s --threads 2 --ft dual --inject 'sigbus:tile=-1;sigbus:tile=5,launch=1,buf=out,code=ao' --ft-report '%s'",
           gouts("fill", "grep", outs, sizeof outs), ck_out("r.json"));
  unlink(ck_out("r.json"));
  ASSERT_EQ_INT(grun("", "fill", flags), 0);
  ASSERT(gsame("fill"));
  ASSERT_EQ_INT(gcheck("fill --ft dual", 1, FRAGS64 + 1, 0), 0);
  return 0;
}

/* Each rank's rounds recover their own failures; the report sums them. */
static int test_sigbus_graph_mpi(void) {
  if (!mpirun[0]) {
    printf("skip: no mpirun\n");
    return 0;
  }
  char prefix[300], outs[1200], flags[2048];
  snprintf(prefix, sizeof prefix, "%s -n 2", mpirun);
  static const char *cmds[] = {"fill", "flowgraph"};
  for (size_t c = 0; c < 2; c++) {
    ASSERT_EQ_INT(grun("", cmds[c], gouts(cmds[c], "goff", outs, sizeof outs)), 0);
    unlink(ck_out("r.json"));
    snprintf(flags, sizeof flags,
             "%s --ft replay --inject 'sigbus:tile=-1;sigbus:tile=5,launch=1,buf=out,code=ao' --ft-report '%s'",
             gouts(cmds[c], "grep", outs, sizeof outs), ck_out("r.json"));
    ASSERT_EQ_INT(grun(prefix, cmds[c], flags), 0);
    ASSERT(gsame(cmds[c]));
    ASSERT_EQ_INT(gcheck(cmds[c], c ? 3 : 1, FRAGS64 + 1, 1), 0);
  }
  return 0;
}

/* Not ours: an AR naming memory no round owns, or sent between rounds
 * (after=1), kills the process by SIGBUS and leaves no output; under --ft
 * off there is no copy to compute a round again from: a usage error. */
static int test_sigbus_graph_not_ours(void) {
  static const char *flags[] = {"--ft replay --inject 'sigbus:tile=3,buf=outside'",
                                "--ft replay --threads 2 --inject 'sigbus:tile=3,launch=1,buf=outside'",
                                "--ft replay --inject 'sigbus:tile=3,launch=-1,after=1'",
                                "--ft dual --threads 2 --inject 'sigbus:tile=3,buf=outside'"};
  static const char *cmds[] = {"fill", "flowgraph"};
  char outs[1200], c[4096];
  for (size_t k = 0; k < 2; k++)
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) {
      unlink(ck_out("dead_a.tif"));
      unlink(ck_out("dead_b.tif"));
      snprintf(c, sizeof c, "exec '%s' %s '%s/fractal.tif' %s --tile-size 64 %s -q 2>'%s'", ck_tf, cmds[k], ck_dir,
               gouts(cmds[k], "dead", outs, sizeof outs), flags[i], ck_out("err.txt"));
      const int st = system(c);
      if (st == -1 || !WIFSIGNALED(st) || WTERMSIG(st) != SIGBUS) {
        fprintf(stderr, "%s %s: wait status %#x, want death by SIGBUS\n", cmds[k], flags[i], st);
        return 1;
      }
      ASSERT(access(ck_out("dead_a.tif"), F_OK) != 0);
      ASSERT(access(ck_out("dead_b.tif"), F_OK) != 0);
    }
  snprintf(c, sizeof c, "%s --inject 'sigbus:tile=3'", gouts("fill", "dead", outs, sizeof outs));
  ASSERT_EQ_INT(grun("", "fill", c), 2);
  ASSERT(strstr(rc_slurp(ck_out("err.txt")), "sigbus and hwpoison faults in fill's rounds need --ft replay or dual") !=
         NULL);
  ASSERT(access(ck_out("dead_a.tif"), F_OK) != 0);
  /* hwpoison poisons a launch's input window: a round has none before its program reads one */
  snprintf(c, sizeof c, "%s --ft replay --inject 'hwpoison:tile=3'", gouts("fill", "dead", outs, sizeof outs));
  ASSERT_EQ_INT(grun("", "fill", c), 2);
  ASSERT(strstr(rc_slurp(ck_out("err.txt")), "hwpoison is for local kernels' launches") != NULL);
  ASSERT(access(ck_out("dead_a.tif"), F_OK) != 0);
  return 0;
}

static int test_sigbus_bad_options(void) {
  ASSERT_EQ_INT(run("", "slope", "bad.tif", "--inject 'sigbus:tile=1,buf=nope'"), 2);
  ASSERT(strstr(rc_slurp(ck_out("err.txt")), "buf=nope is not in, out or outside") != NULL);
  ASSERT_EQ_INT(run("", "slope", "bad.tif", "--inject 'hwpoison:tile=1,code=ao'"), 2);
  ASSERT_EQ_INT(run("", "slope", "bad.tif", "--inject 'sigbus:launch=1'"), 2);
  ASSERT(strstr(rc_slurp(ck_out("err.txt")), "sigbus needs tile=T") != NULL);
  /* launch=-1 is a graph round's Assemble: a local kernel has none */
  ASSERT_EQ_INT(run("", "slope", "bad.tif", "--inject 'sigbus:tile=1,launch=-1'"), 2);
  ASSERT(strstr(rc_slurp(ck_out("err.txt")), "launch=-1") != NULL);
  return 0;
}

/* Whether this kernel poisons a page on request: 0, or the errno its
 * madvise(MADV_HWPOISON) gave. Asked in a child: a poisoned page brings
 * the child a SIGBUS (the kernel's early kill), which also says yes. */
static int hwpoison_errno(void) {
  const pid_t pid = fork();
  if (pid < 0) return errno;
  if (pid == 0) {
    const long ps = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, (size_t)ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) _exit(100);
    p[0] = 1;
    _exit(madvise(p, (size_t)ps, MADV_HWPOISON) == 0 ? 0 : errno < 100 ? errno : 99);
  }
  int st;
  if (waitpid(pid, &st, 0) != pid) return errno;
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS) return 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The real thing: a page of a kernel's input window poisoned by the kernel
 * (madvise(MADV_HWPOISON) at the launch point); the kernel's read of it
 * brings SIGBUS BUS_MCEERR_AR. Two interior tiles of 64 cells, so each
 * window holds whole pages: --ft off's bytes, exact counts. Costs the
 * machine two pages of RAM per run until it reboots. */
static int test_sigbus_hwpoison(void) {
  const int e = hwpoison_errno();
  if (e) {
    printf("skip: madvise(MADV_HWPOISON) refused with errno %d (%s%s): %s\n", e,
           e == EINVAL  ? "EINVAL, "
           : e == EPERM ? "EPERM, "
                        : "",
           e > 0 ? strerror(e) : "unknown",
           e == EINVAL  ? "this kernel has no CONFIG_MEMORY_FAILURE"
           : e == EPERM ? "needs root with CAP_SYS_ADMIN"
                        : "not a failure this test can make");
    return TR_TEST_SKIP;
  }
  char flags[1024];
  ASSERT_EQ_INT(run("", "slope", "off.tif", "--tile-size 64"), 0);
  snprintf(flags, sizeof flags,
           "--tile-size 64 --threads 2 --ft replay --inject 'hwpoison:tile=0;hwpoison:tile=5' --ft-report '%s'",
           ck_out("r.json"));
  ASSERT_EQ_INT(run("", "slope", "rep.tif", flags), 0);
  ASSERT_EQ_INT(check("hwpoison", "rep.tif", 2, 2, 2LL * IN64), 0);
  ASSERT_EQ_INT(run("", "slope", "rep.tif", "--tile-size 64 --inject 'hwpoison:tile=5'"), 0);
  ASSERT(rc_same_file(ck_out("off.tif"), ck_out("rep.tif")));
  ASSERT(strstr(rc_slurp(ck_out("err.txt")), "1 memory failure (SIGBUS") != NULL);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  ck_init(argv[1], argv[2], "sigbus");
  ck_mpirun(mpirun, sizeof mpirun);
  static const tr_test_case cases[] = {
      TR_TEST(test_sigbus_replay),         TR_TEST(test_sigbus_iterative),  TR_TEST(test_sigbus_ft_off),
      TR_TEST(test_sigbus_not_ours),       TR_TEST(test_sigbus_mpi),        TR_TEST(test_sigbus_bad_options),
      TR_TEST(test_sigbus_graph),          TR_TEST(test_sigbus_graph_dual), TR_TEST(test_sigbus_graph_mpi),
      TR_TEST(test_sigbus_graph_not_ours), TR_TEST(test_sigbus_hwpoison)};
  return tr_test_main(argc - 2, argv + 2, cases, (int)(sizeof cases / sizeof cases[0]));
}
