/*
 * test_batch.c - `terrafort batch` (issue 12): 20 jobs over mpirun -n 3 with
 * one failing job and one slow one; every output byte-identical to the same
 * job run alone; the slow job holds nobody (the other ranks take the rest);
 * a second run skips the 19 completed jobs without touching them and reruns
 * only the failing one; the same bytes without mpirun; --dir with a
 * template; bad input (one line, its exit code, nothing left); a signal
 * (exit 8, no temporary left); a rank killed mid-batch (exit 10 naming it,
 * and none of its jobs writing afterwards); each job's outputs as the job
 * reported them - flowgraph's four products and a shapefile's side files -
 * resuming from them; no job may write the batch's own files.
 *
 * The summary is read with Python's json module (a real parser: the file
 * must be valid JSON), which prints the facts this test asserts.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc_check.h"
#include "raster_check.h"
#include "tr_test.h"

#define P 1024 /* a path */

static const char *dir, *tf, *src;

/* snprintf for paths and commands: a path too long for these buffers is not
 * this test's concern. */
__attribute__((format(printf, 3, 4))) static void fmt(char *buf, size_t n, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, n, f, ap);
  va_end(ap);
}
static char out[P], mpirun[256];

#define NJOBS 20
#define FAILING 7 /* a missing input */
#define SLOW 1    /* held 5 s by the injector before its first tile */

/* Job i with its outputs in folder o; hold: the slow job's injector. */
static void job_line(int i, const char *o, int hold, char *buf, size_t len) {
  static const char *const dems[] = {"fractal", "cone", "gauss", "plane", "mosaic_0", "mosaic_1", "mosaic_2"};
  const char *d = dems[i % 7];
  switch (i) {
    case SLOW:
      fmt(buf, len, "hillshade '%s/%s.tif' '%s/j%02d.tif' -z 2%s", dir, d, o, i,
               hold ? " --inject hold:rank=0,ms=5000" : "");
      return;
    case FAILING: fmt(buf, len, "slope '%s/no_such_dem.tif' '%s/j%02d.tif'", dir, o, i); return;
    case 3: fmt(buf, len, "fill \"%s/%s.tif\" '%s/j%02d.tif'   # a comment", dir, d, o, i); return;
    case 5:
      fmt(buf, len, "flowgraph '%s/%s.tif' --acc '%s/j%02d_acc.tif' -src '%s/j%02d_src.tif' --threshold 20", dir,
               d, o, i, o, i);
      return;
    case 9: fmt(buf, len, "color-relief '%s/%s.tif' '%s/ramp_basic.txt' '%s/j%02d.tif'", dir, d, src, o, i); return;
    case 11: fmt(buf, len, "terrafort tri -alg Wilson '%s/%s.tif' '%s/j%02d.tif'", dir, d, o, i); return;
    case 15: fmt(buf, len, "aspect %s/%s.tif %s/j\\%02d.tif", dir, d, o, i); return; /* a backslash: the next character */
    case 12: fmt(buf, len, "smooth --passes 3 '%s/%s.tif' '%s/j%02d.tif'", dir, d, o, i); return;
    case 13:
      fmt(buf, len, "slope '%s/%s.tif' '%s/j%02d.tif' -p --stats-json '%s/j%02d.json'", dir, d, o, i, o, i);
      return;
    default: {
      static const char *const cmds[] = {"slope", "aspect", "tpi", "roughness", "hillshade"};
      fmt(buf, len, "%s '%s/%s.tif' '%s/j%02d.tif'", cmds[i % 5], dir, d, o, i);
    }
  }
}

/* The raster files job i writes into folder o (the flowgraph job: two). */
static int job_outputs(int i, const char *o, char names[2][P]) {
  if (i == 5) {
    fmt(names[0], P, "%s/j%02d_acc.tif", o, i);
    fmt(names[1], P, "%s/j%02d_src.tif", o, i);
    return 2;
  }
  fmt(names[0], P, "%s/j%02d.tif", o, i);
  return 1;
}

static void reset(const char *d) {
  char c[4 * P];
  fmt(c, sizeof c, "rm -rf '%s' && mkdir -p '%s'", d, d);
  if (system(c) != 0) fprintf(stderr, "cannot reset %s\n", d);
}

static void write_jobs(const char *path, const char *o, int hold) {
  FILE *f = fopen(path, "w");
  fprintf(f, "# terrafort batch test: %d jobs\n\n", NJOBS);
  for (int i = 0; i < NJOBS; i++) {
    char l[4 * P];
    job_line(i, o, hold, l, sizeof l);
    fprintf(f, "%s\n", l);
  }
  fclose(f);
}

/* Empty folders NAME (the batch's outputs) and NAME_alone, and the jobs
 * file (with the slow job held) in the first. */
static void prepare(const char *name, char *o, char *alone, char *jobs) {
  fmt(o, P, "%s/%s", out, name);
  fmt(alone, P, "%s/%s_alone", out, name);
  reset(o);
  reset(alone);
  fmt(jobs, P, "%s/jobs.txt", o);
  write_jobs(jobs, o, 1);
}

/* An empty folder NAME for one case, with the paths of its jobs file, its
 * summary and an stderr file beside the folder; returns the jobs file open
 * for writing. */
static FILE *case_dir(const char *name, char *d, char *jobs, char *sum, char *err) {
  fmt(d, P, "%s/%s", out, name);
  reset(d);
  fmt(jobs, P, "%s/jobs.txt", d);
  fmt(sum, P, "%s.summary.json", jobs);
  fmt(err, P, "%s/%s.err", out, name);
  return fopen(jobs, "w");
}

/* What the summary says, through a JSON parser. */
typedef struct {
  int ok, total, done, failed, skipped, not_done, exit, lost;
  int nranks, rank_jobs[8], rank_failed[8];
  int state[64], rank[64], code[64], stats[64]; /* per job; state: 'd'one, 'f'ailed, 's'kipped, 'n'ot done */
  char error[64][200];
} summary;

static int read_summary(const char *path, summary *s) {
  memset(s, 0, sizeof *s);
  char facts[P], c[4 * P];
  fmt(facts, sizeof facts, "%s/facts.txt", out);
  fmt(c, sizeof c,
           "/usr/bin/python3 -c 'import json,sys\n"
           "d=json.load(open(sys.argv[1]))\n"
           "print(\"C\",d[\"total\"],d[\"done\"],d[\"failed\"],d[\"skipped\"],d[\"not_done\"],d[\"exit\"],d[\"lost_rank\"])\n"
           "for r in d[\"per_rank\"]: print(\"R\",r[\"rank\"],int(r[\"jobs\"]),int(r[\"failed\"]))\n"
           "for j in d[\"jobs\"]: print(\"J\",j[\"index\"],j[\"state\"],j.get(\"rank\",-1),j.get(\"exit\",-1),"
           "int(\"stats\" in j),j.get(\"error\",\"-\")[:150].replace(\" \",\"_\"))\n' '%s' > '%s'",
           path, facts);
  if (rc_run(c, NULL) != 0) {
    fprintf(stderr, "not valid JSON (or missing): %s\n", path);
    return 1;
  }
  FILE *f = fopen(facts, "r");
  char l[1024];
  while (f && fgets(l, sizeof l, f)) {
    int i, r, j, k;
    char st[32], err[200];
    if (l[0] == 'C')
      s->ok = sscanf(l, "C %d %d %d %d %d %d %d", &s->total, &s->done, &s->failed, &s->skipped, &s->not_done,
                     &s->exit, &s->lost) == 7;
    else if (l[0] == 'R' && sscanf(l, "R %d %d %d", &r, &j, &k) == 3 && r < 8) {
      s->rank_jobs[r] = j;
      s->rank_failed[r] = k;
      s->nranks = r + 1;
    } else if (l[0] == 'J' && sscanf(l, "J %d %31s %d %d %d %199s", &i, st, &r, &j, &k, err) == 6 && i < 64) {
      s->state[i] = st[0];
      s->rank[i] = r;
      s->code[i] = j;
      s->stats[i] = k;
      fmt(s->error[i], sizeof s->error[i], "%s", err);
    }
  }
  if (f) fclose(f);
  return s->ok ? 0 : 1;
}

static long long mtime_ns(const char *p) {
  struct stat st;
  if (stat(p, &st) != 0) return -1;
  return (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
}

/* Each job run alone into folder `alone`, then compared byte for byte with
 * the batch's outputs in `got`. */
static int same_as_alone(const char *got, const char *alone) {
  for (int i = 0; i < NJOBS; i++) {
    char l[4 * P], c[4 * P], a[2][P], g[2][P];
    if (i == FAILING) continue;
    job_line(i, alone, 0, l, sizeof l);
    /* the shell reads the line as the batch does; "terrafort" is the program here */
    fmt(c, sizeof c, "'%s' %s -q", tf, strncmp(l, "terrafort ", 10) ? l : l + 10);
    if (rc_run(c, NULL) != 0) {
      fprintf(stderr, "job %d alone failed: %s\n", i, c);
      return 1;
    }
    int n = job_outputs(i, alone, a);
    job_outputs(i, got, g);
    for (int k = 0; k < n; k++)
      if (!rc_same_file(a[k], g[k])) return 1;
  }
  return 0;
}

static int test_mpi_dynamic_resume(void) {
  if (!mpirun[0]) {
    printf("skip: no mpirun\n");
    return 0;
  }
  char o[P], jobs[P], sum[P], c[4 * P], alone[P];
  prepare("mpi", o, alone, jobs);
  fmt(sum, sizeof sum, "%s.summary.json", jobs);
  fmt(c, sizeof c, "%s -n 3 '%s' batch -q '%s' >/dev/null", mpirun, tf, jobs);
  int rc = rc_run(c, "/dev/null");
  ASSERT_EQ_INT(rc, 11); /* a job failed: terrafort(1), EXIT STATUS */
  summary s;
  ASSERT(read_summary(sum, &s) == 0);
  ASSERT_EQ_INT(s.total, NJOBS);
  ASSERT_EQ_INT(s.done, NJOBS - 1);
  ASSERT_EQ_INT(s.failed, 1);
  ASSERT_EQ_INT(s.exit, 11);
  ASSERT_EQ_INT(s.state[FAILING], 'f');
  ASSERT_EQ_INT(s.code[FAILING], 3);
  ASSERT(strstr(s.error[FAILING], "no_such_dem.tif") != NULL);
  ASSERT_EQ_INT(s.stats[13], 1); /* the job's own --stats-json, in its record */
  /* dynamic: the rank with the slow job ran fewer jobs than each other rank */
  ASSERT_EQ_INT(s.nranks, 3);
  int count[3] = {0, 0, 0}, total = 0;
  for (int i = 0; i < NJOBS; i++) {
    ASSERT(s.rank[i] >= 0 && s.rank[i] < 3);
    count[s.rank[i]]++;
  }
  const int slow = s.rank[SLOW];
  printf("jobs per rank: %d %d %d (slow job on rank %d)\n", count[0], count[1], count[2], slow);
  for (int r = 0; r < 3; r++) {
    ASSERT_EQ_INT(s.rank_jobs[r], count[r]); /* the reduced per-rank figures agree with the records */
    total += s.rank_jobs[r];
    if (r != slow) ASSERT(count[slow] < count[r]);
  }
  ASSERT_EQ_INT(total, NJOBS);
  ASSERT(same_as_alone(o, alone) == 0);

  /* the second run: the 19 complete jobs skipped and untouched, the failing one rerun */
  long long before[NJOBS][2];
  for (int i = 0; i < NJOBS; i++) {
    char n[2][P];
    int k = job_outputs(i, o, n);
    for (int m = 0; m < k; m++) before[i][m] = mtime_ns(n[m]);
  }
  rc = rc_run(c, "/dev/null");
  ASSERT_EQ_INT(rc, 11);
  ASSERT(read_summary(sum, &s) == 0);
  ASSERT_EQ_INT(s.skipped, NJOBS - 1);
  ASSERT_EQ_INT(s.failed, 1);
  ASSERT_EQ_INT(s.done, 0);
  ASSERT_EQ_INT(s.state[FAILING], 'f');
  for (int i = 0; i < NJOBS; i++) {
    char n[2][P];
    int k = job_outputs(i, o, n);
    if (i != FAILING) ASSERT_EQ_INT(s.state[i], 's');
    for (int m = 0; m < k && i != FAILING; m++) ASSERT(mtime_ns(n[m]) == before[i][m]);
  }
  return 0;
}

/* One process, two jobs at a time: the same bytes as each job alone. */
static int test_single_process(void) {
  char o[P], jobs[P], sum[P], c[4 * P], alone[P];
  prepare("single", o, alone, jobs);
  fmt(sum, sizeof sum, "%s/summary.json", out);
  fmt(c, sizeof c, "'%s' batch --jobs 2 --summary '%s' '%s'", tf, sum, jobs);
  ASSERT_EQ_INT(rc_run(c, "/dev/null"), 11);
  summary s;
  ASSERT(read_summary(sum, &s) == 0);
  ASSERT_EQ_INT(s.done, NJOBS - 1);
  ASSERT_EQ_INT(s.failed, 1);
  ASSERT_EQ_INT(s.rank_jobs[0], NJOBS);
  ASSERT(same_as_alone(o, alone) == 0);
  /* --force reruns every job */
  fmt(c, sizeof c, "'%s' batch -q --force --summary - '%s' > '%s'", tf, jobs, sum);
  ASSERT_EQ_INT(rc_run(c, "/dev/null"), 11);
  ASSERT(read_summary(sum, &s) == 0);
  ASSERT_EQ_INT(s.done, NJOBS - 1);
  ASSERT_EQ_INT(s.skipped, 0);
  return 0;
}

/* --dir with a template; its outputs are not taken for inputs next time. */
static int test_dir_template(void) {
  char d[P], c[4 * P], sum[P];
  fmt(d, sizeof d, "%s/dems", out);
  fmt(sum, sizeof sum, "%s/dir.json", out);
  reset(d);
  fmt(c, sizeof c, "cp '%s/fractal.tif' '%s/cone.tif' '%s/gauss.tif' '%s/' && cp '%s/cone.tif' '%s/.hidden.tif' && cd '%s' && "
           "'%s' batch -q --dir '%s' --glob '*.tif' --cmd 'slope {} {stem}_slope.tif -s 1' --summary '%s'",
           dir, dir, dir, d, dir, d, out, tf, d, sum);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  summary s;
  ASSERT(read_summary(sum, &s) == 0);
  ASSERT_EQ_INT(s.done, 3); /* not .hidden.tif */
  static const char *const dems[] = {"cone", "fractal", "gauss"};
  for (int i = 0; i < 3; i++) {
    char a[P], g[P];
    fmt(a, sizeof a, "%s/alone_%s.tif", out, dems[i]);
    fmt(g, sizeof g, "%s/%s_slope.tif", d, dems[i]);
    fmt(c, sizeof c, "'%s' slope '%s/%s.tif' '%s' -s 1 -q", tf, d, dems[i], a);
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    ASSERT(rc_same_file(a, g));
  }
  fmt(c, sizeof c, "'%s' batch -q --dir '%s' --glob '*.tif' --cmd 'slope {} {stem}_slope.tif -s 1' --summary '%s'",
           tf, d, sum);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(read_summary(sum, &s) == 0);
  ASSERT_EQ_INT(s.total, 3); /* not the *_slope.tif files */
  ASSERT_EQ_INT(s.skipped, 3);
  ASSERT_EQ_INT(rc_count_entries(d), 7);
  return 0;
}

/* Each: one line on stderr, its exit code, no summary and no output. */
static int bad(const char *name, const char *content, int want, const char *says, int mpi) {
  char d[P], jobs[P], sum[P], err[P], c[4 * P], n[P];
  fmt(n, sizeof n, "bad_%s", name);
  FILE *f = case_dir(n, d, jobs, sum, err);
  if (content) fputs(content, f);
  fclose(f);
  if (!content) remove(jobs);
  fmt(c, sizeof c, "cd '%s' && %s%s '%s' batch '%s'", d, mpi ? mpirun : "", mpi ? " -n 2" : "", tf, jobs);
  int rc = rc_run(c, err);
  const char *e = rc_slurp(err);
  const int lines = pc_lines(e);
  if (rc != want || !strstr(e, says) || (!mpi && lines != 1) || rc_count_entries(d) != (content ? 1 : 0)) {
    fprintf(stderr, "%s: exit %d (want %d), %d lines, %d files: %s", name, rc, want, lines, rc_count_entries(d), e);
    return 1;
  }
  return 0;
}

static int test_bad_input(void) {
  char two[4 * P];
  fmt(two, sizeof two, "slope '%s/fractal.tif' out.tif\naspect '%s/cone.tif' ./out.tif\n", dir, dir);
  int f = bad("missing", NULL, 3, "cannot open jobs file", 0);
  f |= bad("empty", "", 3, "holds no job", 0);
  f |= bad("comments", "# nothing\n\n   \n", 3, "holds no job", 0);
  f |= bad("unknown", "slope a.tif b.tif\nslop a.tif c.tif\n", 2, "line 2: unknown command 'slop'", 0);
  f |= bad("recursion", "batch other.txt\n", 2, "no recursion", 0);
  f |= bad("duplicate", two, 2, "lines 1 and 2 both write", 0);
  f |= bad("quote", "slope 'a.tif b.tif\n", 2, "unterminated quote", 0);
  f |= bad("depends", "fill a.tif f.tif\nslope f.tif s.tif\n", 2, "which line 1 writes", 0);
  /* TauDEM streamnet's form reads -src and -ad8 (tf_flowgraph_forms): the job
   * reads what aread8's and threshold's form (with a DEM) writes, not a
   * second writer of it */
  f |= bad("streamnet_reads",
           "flowgraph d.tif --dir p.tif -ad8 a.tif -nc -src s.tif\nflowgraph -p p.tif -src s.tif -ad8 a.tif -tree t.txt\n", 2,
           "line 2 reads 'p.tif', which line 1 writes", 0);
  /* areadinf's form reads -ang (another of tf_flowgraph_forms); with -fel it is
   * dinfflowdir's, which writes -ang */
  f |= bad("areadinf_reads", "flowgraph d.tif --ang a.tif\nflowgraph -ang a.tif -sca s.tif -nc\n", 2,
           "line 2 reads 'a.tif', which line 1 writes", 0);
  /* moveoutletstostreams' form reads -src (a fifth form) */
  f |= bad("moveoutlets_reads", "flowgraph d.tif --streams s.tif\nflowgraph -p p.tif -src s.tif -o o.shp -om m.shp\n", 2,
           "line 2 reads 's.tif', which line 1 writes", 0);
  /* dinfdistdown's form reads -ang and -src (a fourth form) */
  f |= bad("dinfdistdown_reads", "flowgraph d.tif --streams s.tif\nflowgraph -ang a.tif -fel f.tif -src s.tif -dd h.tif -m ave v\n",
           2, "line 2 reads 's.tif', which line 1 writes", 0);
  /* twi's form reads -slp and -sca (a third form) */
  f |= bad("twi_reads", "flowgraph d.tif --slp l.tif --sca s.tif\nflowgraph -slp l.tif -sca s.tif -twi t.tif\n", 2,
           "line 2 reads 'l.tif', which line 1 writes", 0);
  f |= bad("dinfflowdir_writes", "flowgraph -fel f.tif -ang a.tif -sca s.tif\nflowgraph -fel g.tif -ang a.tif -slp t.tif\n",
           2, "lines 1 and 2 both write", 0);
  if (mpirun[0]) f |= bad("duplicate_mpi", two, 2, "lines 1 and 2 both write", 1);
  /* the job ran, but the summary cannot be written: exit 4 */
  char d[P], jobs[P], sum[P], err[P], c[4 * P];
  FILE *j = case_dir("bad_summary", d, jobs, sum, err);
  fputs("slope --help\n", j);
  fclose(j);
  fmt(c, sizeof c, "'%s' batch -q --summary '%s/no/such/s.json' '%s'", tf, d, jobs);
  ASSERT_EQ_INT(rc_run(c, err), 4);
  ASSERT(strstr(rc_slurp(err), "cannot write the summary") != NULL);
  return f;
}

/* SIGTERM: the running jobs get it, the batch waits for them and exits 8;
 * no temporary left, the summary says not done. Alone, then under mpirun
 * with the signal to rank 0 (which stops the other ranks). */
static int signal_case(int mpi) {
  char d[P], jobs[P], sum[P], err[P], c[4 * P];
  FILE *f = case_dir(mpi ? "signal_mpi" : "signal", d, jobs, sum, err);
  for (int i = 0; i < 4; i++) fprintf(f, "slope '%s/fractal.tif' '%s/a%d.tif' --inject hold:rank=0,ms=3000\n", dir, d, i);
  fclose(f);
  fmt(c, sizeof c, "exec %s%s '%s' batch -q --jobs 2 '%s'", mpi ? mpirun : "", mpi ? " -n 2" : "", tf, jobs);
  char *argv[] = {"/bin/sh", "-c", c, NULL};
  pid_t p = pc_spawn(argv, err, 0);
  ASSERT(p > 0);
  const double t0 = pc_now();
  while (pc_count(d, ".terrafort-", NULL, 0) < (mpi ? 4 : 2) && pc_now() - t0 < 60) pc_sleep_ms(5);
  pid_t r0 = mpi ? pc_rank_pid(p, 0) : p;
  ASSERT(r0 > 0);
  ASSERT_EQ_INT(kill(r0, SIGTERM), 0);
  pc_result r;
  ASSERT_EQ_INT(pc_wait(p, 30.0, &r), 0);
  ASSERT(r.exited);
  ASSERT_EQ_INT(r.code, 8);
  summary s;
  ASSERT(read_summary(sum, &s) == 0);
  ASSERT_EQ_INT(s.exit, 8);
  ASSERT_EQ_INT(s.not_done, 4);
  ASSERT_EQ_INT(rc_count_entries(d), 2); /* jobs.txt and its summary: no output, no temporary */
  return 0;
}

static int test_signal(void) {
  if (signal_case(0)) return 1;
  if (mpirun[0] && signal_case(1)) return 1;
  return 0;
}

/* Progress on a terminal (jobs done out of those to run), none with -q; a
 * job that names no output (here `slope --help`) runs every time. */
static int test_progress_and_no_outputs(void) {
  if (rc_run("command -v script >/dev/null", NULL) != 0) {
    printf("skip: no script(1)\n");
    return 0;
  }
  char d[P], jobs[P], sum[P], err[P], c[4 * P];
  FILE *f = case_dir("progress", d, jobs, sum, err);
  for (int i = 0; i < 4; i++) fprintf(f, "slope '%s/cone.tif' '%s/a%d.tif'\n", dir, d, i);
  fprintf(f, "slope --help\n");
  fclose(f);
  fmt(c, sizeof c, "script -qec \"'%s' batch '%s'\" /dev/null > '%s'", tf, jobs, err);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(strstr(rc_slurp(err), "0...10...20...30...40...50...60...70...80...90...100 - done."));
  fmt(c, sizeof c, "script -qec \"'%s' batch -q '%s'\" /dev/null > '%s'", tf, jobs, err);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  ASSERT(!strstr(rc_slurp(err), "10..."));
  summary s;
  ASSERT(read_summary(sum, &s) == 0);
  ASSERT_EQ_INT(s.skipped, 4);
  ASSERT_EQ_INT(s.done, 1);
  ASSERT_EQ_INT(s.state[4], 'd');
  return 0;
}

/* A rank killed mid-batch: the survivors end within the rank timeout with
 * exit 10 naming it, its job not done in rank 0's summary. */
static int test_rank_lost(void) {
  if (!mpirun[0]) {
    printf("skip: no mpirun\n");
    return 0;
  }
  char d[P], jobs[P], sum[P], err[P];
  FILE *f = case_dir("lost", d, jobs, sum, err);
  for (int i = 0; i < 6; i++) fprintf(f, "slope '%s/fractal.tif' '%s/a%d.tif' --inject hold:rank=0,ms=4000\n", dir, d, i);
  fclose(f);
  /* the ranks' own TMPDIR: what their jobs' temporary files leave there */
  char tmpd[P];
  fmt(tmpd, sizeof tmpd, "%s/tmp", d);
  ASSERT_EQ_INT(mkdir(tmpd, 0700), 0);
  char c[4 * P];
  fmt(c, sizeof c, "export TMPDIR='%s'; exec %s --enable-recovery -n 3 '%s' batch -q --rank-timeout 2000 '%s'", tmpd,
      mpirun, tf, jobs);
  char *argv[] = {"/bin/sh", "-c", c, NULL};
  pid_t m = pc_spawn(argv, err, 0);
  ASSERT(m > 0);
  /* every rank has a job running (three temporaries) before rank 2 is killed */
  const double t0 = pc_now();
  while (pc_count(d, ".terrafort-", NULL, 0) < 3 && pc_now() - t0 < 60) pc_sleep_ms(5);
  pid_t victim = pc_rank_pid(m, 2);
  ASSERT(victim > 0);
  pid_t orphans[8];
  const int norphans = pc_children(victim, orphans, 8);
  ASSERT(norphans >= 1); /* its job, about to lose its parent */
  ASSERT_EQ_INT(kill(victim, SIGKILL), 0);
  pc_result r;
  ASSERT_EQ_INT(pc_wait(m, 60.0, &r), 0);
  printf("  rank 2 killed: mpirun ended %.2f s later\n", r.secs);
  ASSERT(!r.timed_out);
  ASSERT(r.secs < 2.0 + 2.0 + 4.0); /* the rank timeout, plus a loaded machine's slack */
  const char *e = rc_slurp(err);
  ASSERT(strstr(e, "rank 0: rank 2 stopped answering") != NULL);
  ASSERT(strstr(e, "rank 1: rank 2 stopped answering") != NULL || strstr(e, "rank 1: stopped by rank 0") != NULL);
  summary s;
  ASSERT(read_summary(sum, &s) == 0);
  ASSERT_EQ_INT(s.exit, 10);
  ASSERT_EQ_INT(s.lost, 2);
  for (int i = 0; i < 6; i++)
    if (s.rank[i] == 2) ASSERT_EQ_INT(s.state[i], 'n');
  /* the jobs given up write nothing later: the killed rank's own job (its
   * parent gone, it cancels itself) as the survivors' (stopped by them).
   * Once the killed rank's job has ended - past its 4 s hold it would have
   * written its file - none of them is there */
  for (int k = 0; k < norphans; k++) {
    const double t1 = pc_now();
    while (!pc_ended(orphans[k]) && pc_now() - t1 < 60) pc_sleep_ms(20);
    ASSERT(pc_ended(orphans[k]));
  }
  for (int i = 0; i < 6; i++) {
    char o[P];
    fmt(o, sizeof o, "%s/a%d.tif", d, i);
    if (s.state[i] == 'n' && access(o, F_OK) == 0) {
      fprintf(stderr, "job %d (rank %d) was given up but wrote %s\n", i, s.rank[i], o);
      return 1;
    }
  }
  char left[P] = "";
  if (pc_count(d, ".terrafort-", left, sizeof left) != 0) {
    fprintf(stderr, "a temporary left: %s\n", left);
    return 1;
  }
  /* nor in TMPDIR: the killed rank's jobs' messages and lists of outputs
   * (unlinked as made) */
  if (pc_count(tmpd, NULL, left, sizeof left) != 0) {
    fprintf(stderr, "a file left in TMPDIR: %s\n", left);
    return 1;
  }
  return 0;
}

/* What a job wrote is what it reported, all of it: flowgraph with four
 * products, its network as a shapefile (side files no option names); the
 * summary lists exactly the files that appeared. The done list then lets a
 * second run skip it, and a third rerun it once one side file is gone -
 * a file known only from the job's own report. */
static int outputs_case(const char *d, const char *sum, int *n) {
  char c[4 * P], facts[P];
  fmt(facts, sizeof facts, "%s.facts", sum);
  fmt(c, sizeof c,
      "/usr/bin/python3 -c 'import json,os,sys\n"
      "d=json.load(open(sys.argv[1]))\n"
      "j=d[\"jobs\"][0]\n"
      "got=sorted(j[\"outputs\"])\n"
      "keep={\"jobs.txt\"}\n"
      "want=sorted(os.path.join(sys.argv[2],f) for f in os.listdir(sys.argv[2]) if f not in keep)\n"
      "print(j[\"state\"][0], len(got), int(got==want))\n"
      "got==want or print(got, want, file=sys.stderr)' '%s' '%s' > '%s'",
      sum, d, facts);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  char state = 0;
  int same = 0;
  FILE *f = fopen(facts, "r");
  ASSERT(f && fscanf(f, " %c %d %d", &state, n, &same) == 3);
  fclose(f);
  return same ? state : -state;
}

static int test_reported_outputs(void) {
  char d[P], jobs[P], sum[P], err[P], c[4 * P], real[P];
  FILE *f = case_dir("outputs", d, jobs, sum, err);
  fprintf(f, "flowgraph '%s/cone.tif' --dir '%s/p.tif' --acc '%s/ad8.tif' --streams '%s/src.tif' --threshold 20 "
             "--network '%s/net.shp' -q\n", dir, d, d, d, d);
  fclose(f);
  ASSERT(realpath(d, real) != NULL);
  /* the summary and its done list outside the folder: the folder holds the job's files alone */
  fmt(sum, sizeof sum, "%s/outputs.json", out);
  fmt(c, sizeof c, "'%s' batch -q --summary '%s' '%s'", tf, sum, jobs);
  ASSERT_EQ_INT(rc_run(c, err), 0);
  int n = 0;
  ASSERT_EQ_INT(outputs_case(real, sum, &n), 'd');
  printf("  flowgraph reported %d files\n", n);
  ASSERT(n >= 3 + 3); /* three rasters, and .shp .shx .dbf at least */
  char done[P];
  fmt(done, sizeof done, "%s.done", sum);
  ASSERT(access(done, F_OK) == 0);
  ASSERT_EQ_INT(rc_run(c, err), 0);
  ASSERT_EQ_INT(outputs_case(real, sum, &n), 's');
  char dbf[P];
  fmt(dbf, sizeof dbf, "%s/net.dbf", d);
  ASSERT_EQ_INT(remove(dbf), 0);
  ASSERT_EQ_INT(rc_run(c, err), 0);
  ASSERT_EQ_INT(outputs_case(real, sum, &n), 'd');
  ASSERT(access(dbf, F_OK) == 0);
  return 0;
}

/* File names that are not UTF-8 (issue 30 item 6): a DEM named
 * dem_\xff\xfe.tif, outputs s_\xe9.tif and s_\xe8.tif (one name each under
 * U+FFFD, two under the rule), a flowgraph whose --stats-json names its
 * products' files, and a failing job's missing_\xe9.tif. The summary and
 * the flowgraph's report are valid UTF-8 and JSON, and name each file by
 * the rule (terrain.h: a byte that is not UTF-8 is \udcXX): Python reads
 * the names back, os.fsencode gives each file's bytes, and the files are
 * there. */
static int test_non_utf8_names(void) {
  char d[P], jobs[P], sum[P], err[P], c[4 * P], py[P];
  FILE *f = case_dir("latin1", d, jobs, sum, err);
  fprintf(f, "slope -q '%s/dem_\xff\xfe.tif' '%s/s_\xe9.tif'\n", d, d);
  fprintf(f, "slope -q '%s/dem_\xff\xfe.tif' '%s/s_\xe8.tif'\n", d, d);
  fprintf(f, "slope -q '%s/missing_\xe9.tif' '%s/x.tif'\n", d, d);
  fprintf(f, "flowgraph -q '%s/dem_\xff\xfe.tif' --acc '%s/acc_\xff.tif' --streams '%s/st_\xfe.tif' --threshold 20 "
             "--stats-json '%s/fg_\xe9.json'\n", d, d, d, d);
  fclose(f);
  fmt(c, sizeof c, "cp '%s/cone.tif' '%s/dem_\xff\xfe.tif'", dir, d);
  ASSERT_EQ_INT(rc_run(c, NULL), 0);
  fmt(c, sizeof c, "'%s' batch -q --summary '%s' '%s'", tf, sum, jobs);
  ASSERT_EQ_INT(rc_run(c, err), 11);
  summary s;
  ASSERT(read_summary(sum, &s) == 0);
  ASSERT_EQ_INT(s.done, 3);
  ASSERT_EQ_INT(s.failed, 1);
  ASSERT_EQ_INT(s.stats[3], 1); /* the flowgraph's report, in its record */
  fmt(py, sizeof py, "%s/names.py", d);
  f = fopen(py, "w");
  ASSERT(f != NULL);
  fputs("import json, os, sys\n"
        "summary, d = sys.argv[1], os.fsencode(sys.argv[2])\n"
        "r = os.path.realpath(d)  # the outputs as reported\n"
        "def load(path):\n"
        "    text = open(path, 'rb').read()\n"
        "    text.decode('utf-8')  # valid UTF-8, strictly\n"
        "    return json.loads(text)\n"
        "s = load(summary)\n"
        "b = os.fsencode\n"
        "j = s['jobs']\n"
        "assert b(j[0]['argv'][2]) == d + b'/dem_\\xff\\xfe.tif', j[0]['argv']\n"
        "assert [b(o) for o in j[0]['outputs']] == [r + b'/s_\\xe9.tif'], j[0]['outputs']\n"
        "assert [b(o) for o in j[1]['outputs']] == [r + b'/s_\\xe8.tif'], j[1]['outputs']\n"
        "assert b'/s_\\xe9.tif' in b(j[0]['command']) and b'/s_\\xe8.tif' in b(j[1]['command'])\n"
        "assert b'missing_\\xe9.tif' in b(j[2]['error']), j[2]['error']\n"
        "fg = r + b'/fg_\\xe9.json'\n"
        "names = {b(p['product']): b(p['file']) for p in load(fg)['products']}\n"
        "assert names == {b'acc': d + b'/acc_\\xff.tif', b'streams': d + b'/st_\\xfe.tif'}, names\n"
        "assert [b(p['file']) for p in j[3]['stats']['products']] == [names[b'acc'], names[b'streams']]\n"
        "outs = [b(o) for o in j[3]['outputs']]\n"
        "rp = os.path.realpath\n"
        "assert rp(names[b'acc']) in outs and rp(names[b'streams']) in outs and fg in outs, outs\n"
        "for o in outs + [b(j[0]['outputs'][0]), b(j[1]['outputs'][0])]: assert os.path.isfile(o), o\n"
        "print('names ok', file=sys.stderr)\n",
        f);
  fclose(f);
  fmt(c, sizeof c, "/usr/bin/python3 '%s' '%s' '%s'", py, sum, d);
  if (rc_run(c, err) != 0) {
    fprintf(stderr, "%s", rc_slurp(err));
    return 1;
  }
  ASSERT(strstr(rc_slurp(err), "names ok") != NULL);
  /* the escape, not U+FFFD, in the file itself */
  const char *text = rc_slurp(sum);
  ASSERT(strstr(text, "s_\\udce9.tif") != NULL && strstr(text, "s_\\udce8.tif") != NULL);
  ASSERT(strstr(text, "\xef\xbf\xbd") == NULL);
  return 0;
}

/* A job may not write the batch's own files: its jobs file (an output onto
 * it), its summary (flowgraph's --network; not there yet while the jobs run,
 * named another way) and its done list (a --stats-json): each such job
 * fails with a line naming the file, the jobs file
 * keeps its bytes, the summary is valid JSON and records every job; the other
 * jobs are done. The same under mpirun -n 3, where the jobs run on ranks 1
 * and 2 too. */
static int test_batch_own_files(void) {
  for (int mpi = 0; mpi < 2; mpi++) {
    if (mpi && !mpirun[0]) {
      printf("skip: no mpirun\n");
      break;
    }
    char d[P], jobs[P], sum[P], err[P], c[4 * P], copy[P];
    FILE *f = case_dir(mpi ? "own_files_mpi" : "own_files", d, jobs, sum, err);
    fprintf(f, "slope '%s/cone.tif' '%s'\n", dir, jobs);
    fprintf(f, "flowgraph '%s/cone.tif' --acc '%s/acc.tif' --streams '%s/s.tif' --threshold 20 --network "
               "'%s/./jobs.txt.summary.json'\n",
            dir, d, d, d);
    fprintf(f, "aspect '%s/cone.tif' '%s/a.tif' --stats-json '%s.done'\n", dir, d, sum);
    fprintf(f, "slope '%s/cone.tif' '%s/ok1.tif'\n", dir, d);
    fprintf(f, "tpi '%s/cone.tif' '%s/ok2.tif'\n", dir, d);
    fclose(f);
    fmt(copy, sizeof copy, "%s.orig", jobs);
    fmt(c, sizeof c, "cp '%s' '%s'", jobs, copy);
    ASSERT_EQ_INT(rc_run(c, NULL), 0);
    fmt(c, sizeof c, "%s%s '%s' batch -q '%s'", mpi ? mpirun : "", mpi ? " -n 3" : "", tf, jobs);
    ASSERT_EQ_INT(rc_run(c, err), 11); /* some jobs failed */
    ASSERT(rc_same_file(jobs, copy));
    summary s;
    ASSERT_EQ_INT(read_summary(sum, &s), 0);
    ASSERT_EQ_INT(s.total, 5);
    ASSERT_EQ_INT(s.failed, 3);
    ASSERT_EQ_INT(s.done, 2);
    /* each failed job's line, whole on the batch's stderr (the summary's
     * error field is cut here after 150 bytes, before a long path ends) */
    static const char *const says[] = {"line 1 failed", "it is the batch's jobs file", "line 2 failed",
                                       "it is the batch's summary", "line 3 failed", "it is the batch's done list"};
    const char *e = rc_slurp(err);
    for (int i = 0; i < 3; i++) {
      ASSERT_EQ_INT(s.state[i], 'f');
      const char *l = strstr(e, says[2 * i]), *nl = l ? strchr(l, '\n') : NULL, *w = l ? strstr(l, says[2 * i + 1]) : NULL;
      if (!l || !w || (nl && w > nl)) {
        fprintf(stderr, "job %d: no line with '%s' in:\n%s\n", i, says[2 * i + 1], e);
        return 1;
      }
    }
    ASSERT_EQ_INT(s.state[3], 'd');
    ASSERT_EQ_INT(s.state[4], 'd');
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s TESTDATA_DIR TERRAFORT SOURCE_TESTDATA [test]\n", argv[0]);
    return 2;
  }
  /* absolute: some cases run from another folder */
  static char adir[P], atf[P], asrc[P];
  if (!realpath(argv[1], adir) || !realpath(argv[2], atf) || !realpath(argv[3], asrc)) {
    fprintf(stderr, "cannot resolve the arguments\n");
    return 2;
  }
  dir = adir;
  tf = atf;
  src = asrc;
  fmt(out, sizeof out, "%s/../out_batch", dir);
  reset(out);
#ifdef TERRAFORT_HAVE_MPI
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0)
    fmt(mpirun, sizeof mpirun, "mpirun --allow-run-as-root --oversubscribe");
#endif
  static const tr_test_case cases[] = {TR_TEST(test_bad_input),   TR_TEST(test_dir_template), TR_TEST(test_single_process),
                                       TR_TEST(test_mpi_dynamic_resume), TR_TEST(test_signal), TR_TEST(test_rank_lost),
                                       TR_TEST(test_progress_and_no_outputs), TR_TEST(test_reported_outputs),
                                       TR_TEST(test_batch_own_files), TR_TEST(test_non_utf8_names)};
  return tr_test_main(argc - 3, argv + 3, cases, (int)(sizeof cases / sizeof cases[0]));
}
