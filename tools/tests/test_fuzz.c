/*
 * test_fuzz.c - the GeoTIFF reader path against damaged files: fractal.tif
 * mutated byte by byte at seeded positions (deterministic: case i always
 * makes the same file), each run through `terrafort slope` and
 * `terrafort fill`. Whatever the damage:
 *  - no crash, no hang: the process exits by itself, with 0 or a documented
 *    code (terrafort(1), EXIT STATUS), never by a signal or a sanitizer;
 *  - on failure, one line on stderr and nothing left in the output folder
 *    (no output, no temporary);
 *  - on success, the output exists, GDAL opens it, nothing else is left.
 * Most mutations land in the header and the IFD (the first bytes up to the
 * first strip), where the reader's decisions are; the rest anywhere.
 * FUZZ_CASES files (fewer under the sanitizers), within FUZZ_BUDGET_S.
 */
#include <gdal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc_check.h"
#include "raster_check.h"
#include "tr_test.h"

#ifndef FUZZ_CASES
#define FUZZ_CASES 160
#endif
/* 77 files in Release on a 2-core machine (alone; fewer beside another test: the
 * suite's 25 minutes: README); the order is fixed, so a faster machine only
 * adds files at the end */
#ifndef FUZZ_BUDGET_S
#define FUZZ_BUDGET_S 25.0
#endif

static const char *dir, *tf;
static char work[512], outdir[600], errfile[600], damaged[600];

static uint64_t next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

/* Removes every entry of outdir (it holds plain files only). */
static void empty_outdir(void) {
  DIR *d = opendir(outdir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", outdir, e->d_name);
    unlink(p);
  }
  closedir(d);
}

/* The first strip's offset: where the header, IFD and tag data end. */
static long header_end(const unsigned char *b, long n) {
  if (n < 8 || memcmp(b, "II*", 4) != 0) return n < 512 ? n : 512;
  uint32_t ifd;
  memcpy(&ifd, b + 4, 4);
  if (ifd + 2 > (uint64_t)n) return 512;
  uint16_t tags;
  memcpy(&tags, b + ifd, 2);
  long end = 512;
  for (uint16_t t = 0; t < tags && ifd + 2 + 12u * (t + 1u) <= (uint64_t)n; t++) {
    uint16_t tag;
    uint32_t v;
    memcpy(&tag, b + ifd + 2 + 12 * t, 2);
    memcpy(&v, b + ifd + 2 + 12 * t + 8, 4);
    if (tag == 273 || tag == 324) { /* StripOffsets / TileOffsets: the array, whose first is the lowest */
      uint32_t first = v;
      if (v + 4 <= (uint64_t)n) memcpy(&first, b + v, 4);
      if (first > 8 && first < (uint64_t)n) end = first;
    }
  }
  return end;
}

static int write_file(const char *path, const unsigned char *b, long n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  int ok = fwrite(b, 1, (size_t)n, f) == (size_t)n;
  return fclose(f) == 0 && ok ? 0 : -1;
}

static int test_damaged_geotiffs(void) {
  char src[1024];
  snprintf(src, sizeof src, "%s/fractal.tif", dir);
  long n;
  unsigned char *orig = rc_file_bytes(src, &n);
  ASSERT(orig && n > 1000);
  const long hdr = header_end(orig, n);
  unsigned char *b = malloc((size_t)n);
  ASSERT(b);
  int hist[2][256];
  memset(hist, 0, sizeof hist);
  const double t0 = pc_now();
  int cases = 0, fails = 0;
  for (int i = 0; i < FUZZ_CASES && !fails; i++) {
    if (pc_now() - t0 > FUZZ_BUDGET_S) {
      printf("time budget reached after %d cases\n", i);
      break;
    }
    uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
    memcpy(b, orig, (size_t)n);
    const int muts = 1 + (int)(next(&s) % 4);
    char what[256] = "";
    for (int m = 0; m < muts; m++) {
      const long pos = next(&s) % 10 < 7 ? (long)(next(&s) % (uint64_t)hdr) : (long)(next(&s) % (uint64_t)n);
      const unsigned char old = b[pos];
      switch (next(&s) % 4) {
        case 0: b[pos] = (unsigned char)next(&s); break;
        case 1: b[pos] ^= (unsigned char)(1u << (next(&s) % 8)); break;
        case 2: b[pos] = 0x00; break;
        default: b[pos] = 0xFF; break;
      }
      snprintf(what + strlen(what), sizeof what - strlen(what), " @%ld:%02x->%02x", pos, old, b[pos]);
    }
    ASSERT_EQ_INT(write_file(damaged, b, n), 0);
    cases++;
    for (int c = 0; c < 2 && !fails; c++) {
      const char *cmd = c ? "fill" : "slope";
      empty_outdir();
      char o[1024];
      snprintf(o, sizeof o, "%s/o.tif", outdir);
      char *argv[] = {(char *)tf, (char *)cmd, "-q", damaged, o, NULL};
#ifdef FUZZ_SANITIZED
      const long long limit = 0; /* the sanitizers reserve terabytes of address space */
#else
      const long long limit = 4LL << 30; /* a damaged size must fail as out of memory, not take the machine */
#endif
      pc_result r;
      pid_t pid = pc_spawn(argv, errfile, limit);
      ASSERT(pid > 0);
      ASSERT_EQ_INT(pc_wait(pid, 60, &r), 0);
      const char *err = rc_slurp(errfile);
      char prefix[64];
      snprintf(prefix, sizeof prefix, "terrafort %s: ", cmd);
      const int entries = pc_count(outdir, NULL, NULL, 0);
      const char *bad = NULL;
      if (r.timed_out) bad = "hung (killed after 60 s)";
      else if (r.signaled) bad = "killed by a signal";
      else if (r.code < 0 || r.code > 8) bad = "undocumented exit code";
      else if (strstr(err, "Sanitizer") || strstr(err, "runtime error")) bad = "sanitizer report";
      else if (r.code != 0 && (pc_lines(err) != 1 || strncmp(err, prefix, strlen(prefix)) != 0))
        bad = "not one error line";
      else if (r.code != 0 && entries != 0) bad = "files left after a failure";
      else if (r.code == 0 && (entries != 1 || access(o, F_OK) != 0)) bad = "no output (or more) after success";
      if (!bad && r.code == 0) {
        GDALDatasetH ds = GDALOpen(o, GA_ReadOnly);
        if (!ds) bad = "an output GDAL cannot open";
        else GDALClose(ds);
      }
      if (bad) {
        fprintf(stderr, "case %d (%s) %s: %s: exit %d signal %d after %.1f s, %d files left, stderr:\n%s\n", i, what,
                cmd, bad, r.code, r.sig, r.secs, entries, err);
        fails++;
      }
      if (r.exited) hist[c][r.code & 255]++;
    }
  }
  free(orig);
  free(b);
  for (int c = 0; c < 2; c++) {
    printf("%s over %d damaged files:", c ? "fill " : "slope", cases);
    for (int k = 0; k < 256; k++)
      if (hist[c][k]) printf(" exit %d x%d", k, hist[c][k]);
    printf("\n");
  }
  printf("%.1f s\n", pc_now() - t0);
  return fails ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  dir = argv[1];
  tf = argv[2];
  GDALAllRegister();
  CPLSetErrorHandler(CPLQuietErrorHandler);
#ifdef FUZZ_SANITIZED
  /* a damaged size asks for terabytes: malloc must say no (exit 7), not abort */
  char opts[2048];
  const char *old = getenv("ASAN_OPTIONS");
  snprintf(opts, sizeof opts, "%s%sallocator_may_return_null=1", old ? old : "", old && old[0] ? ":" : "");
  setenv("ASAN_OPTIONS", opts, 1);
#endif
  snprintf(work, sizeof work, "%s/../fuzz", dir);
  snprintf(outdir, sizeof outdir, "%s/out", work);
  snprintf(errfile, sizeof errfile, "%s/stderr", work);
  snprintf(damaged, sizeof damaged, "%s/damaged.tif", work);
  char c[2048];
  snprintf(c, sizeof c, "rm -rf '%s' && mkdir -p '%s'", work, outdir);
  if (system(c) != 0) return 1;
  static const tr_test_case cases[] = {TR_TEST(test_damaged_geotiffs)};
  return tr_test_main(argc - 3, argv + 3, cases, 1);
}
