/*
 * mem_limit.c - what a rank may use (see mem_limit.h).
 */
#include "mem_limit.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

/* The cgroup (v2, then v1) limit on this process's memory, or -1 when none is
 * set or readable. */
static int64_t cgroup_limit(void) {
  const char *files[] = {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    FILE *f = fopen(files[i], "r");
    if (!f) continue;
    char buf[64] = "";
    const int got = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    char *end;
    const long long v = got ? strtoll(buf, &end, 10) : 0;
    if (got && end != buf && v > 0) return (int64_t)v; /* "max" parses as nothing */
  }
  return -1;
}

int tr_node_ranks(void) {
  const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const long n = local ? strtol(local, NULL, 10) : 1;
  return n > 1 && n < 1000000 ? (int)n : 1;
}

int64_t tr_mem_available(void) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  int64_t total = pages > 0 && page > 0 ? (int64_t)pages * page : (int64_t)1 << 32;
  const int64_t cg = cgroup_limit();
  if (cg > 0 && cg < total) total = cg;
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (int64_t)rl.rlim_cur < total)
    total = (int64_t)rl.rlim_cur;
  total /= tr_node_ranks();
  const int64_t floor = (int64_t)64 << 20;
  return total > floor ? total : floor;
}

int64_t tr_mem_limit(int64_t mem_opt) { return mem_opt > 0 ? mem_opt : tr_mem_available() / 4 * 3; }

int64_t tr_mem_room(int64_t mem_opt, int64_t held) { return tr_mem_limit(mem_opt) - TR_PROCESS_BYTES - held; }

const char *tr_size_text(int64_t bytes, char buf[32]) {
  if (bytes >= ((int64_t)1 << 20))
    snprintf(buf, 32, "%.0f MiB", (double)bytes / (double)((int64_t)1 << 20));
  else if (bytes >= 1024)
    snprintf(buf, 32, "%lld KiB", (long long)(bytes / 1024));
  else
    snprintf(buf, 32, "%lld bytes", (long long)bytes);
  return buf;
}

void tr_mem_advise_huge(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  const uintptr_t huge = (uintptr_t)1 << 21, a = ((uintptr_t)p + huge - 1) & ~(huge - 1),
                  b = ((uintptr_t)p + bytes) & ~(huge - 1);
  if (p && b > a) (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}
