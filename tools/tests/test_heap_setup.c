/*
 * test_heap_setup.c - fill's and flowgraph's heap set-up (process.c,
 * tf_process_heap_setup) and the user's way out of it (terrafort(1),
 * ENVIRONMENT: a glibc.malloc tunable in GLIBC_TUNABLES, or any MALLOC_*
 * variable, leaves glibc's defaults alone).
 *
 * Each case runs in a child with its environment, calls the set-up, then
 * allocates 8 MiB: with the set-up (blocks below 32 MiB come from the heap)
 * glibc's count of mapped blocks (mallinfo2's hblks) does not move; with glibc's
 * default threshold (128 KiB, raised only by freeing mapped blocks, which the
 * child has not done) the block is mapped on its own, hblks one more. Skipped in the
 * sanitizers' tree, whose allocator is not glibc's.
 *
 * The same choice governs what a spilling graph run is given to tune the heap
 * with (tf_process_heap_spill, the tr_run_opts.heap_spill of every command):
 * tr_heap_spill_apply, or nothing where the user set a tunable.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process.h"
#include "tr_test.h"

/* In a child with `var` set (NULL: none): 1 when what the program does
 * applies (the set-up took effect; spill: a spilling run gets
 * tr_heap_spill_apply), 0 when it does not, -1 when the child failed. */
static int applies(const char *var, const char *value, int spill) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    unsetenv("GLIBC_TUNABLES");
    extern char **environ;
    for (int again = 1; again;) { /* every MALLOC_* the test's own environment has */
      again = 0;
      for (char **e = environ; *e; e++)
        if (!strncmp(*e, "MALLOC_", 7)) {
          char name[256];
          const size_t n = strcspn(*e, "=");
          snprintf(name, sizeof name, "%.*s", (int)n, *e);
          unsetenv(name);
          again = 1;
          break;
        }
    }
    alarm(20); /* the parent's wait is bounded by the child's end */
    if (var) setenv(var, value, 1);
    if (spill) {
      const tr_heap_fn f = tf_process_heap_spill();
      _exit(f == tr_heap_spill_apply ? 1 : f == NULL ? 0 : 2);
    }
    tf_process_heap_setup();
    const size_t before = mallinfo2().hblks; /* blocks the test's process had mapped already */
    void *p = malloc(8u << 20);
    if (!p) _exit(3);
    memset(p, 1, 4096);
    const size_t mapped = mallinfo2().hblks - before;
    _exit(mapped == 0 ? 1 : mapped == 1 ? 0 : 2);
  }
  int st;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
  const int code = WEXITSTATUS(st);
  return code <= 1 ? code : -1;
}

static int opt_out(int spill) {
  ASSERT_EQ_INT(applies(NULL, NULL, spill), 1);
  /* a tunable of another namespace is not the user's malloc choice */
  ASSERT_EQ_INT(applies("GLIBC_TUNABLES", "glibc.rtld.nns=2", spill), 1);
  ASSERT_EQ_INT(applies("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1000000", spill), 0);
  ASSERT_EQ_INT(applies("GLIBC_TUNABLES", "glibc.rtld.nns=2:glibc.malloc.arena_max=1", spill), 0);
  ASSERT_EQ_INT(applies("MALLOC_ARENA_MAX", "2", spill), 0);
  ASSERT_EQ_INT(applies("MALLOC_MMAP_THRESHOLD_", "131072", spill), 0);
  return 0;
}

static int test_setup_and_opt_out(void) {
  if (TR_TEST_SANITIZED) {
    printf("skip: the sanitizers' allocator is not glibc's (mallinfo2 and mallopt do not reach it)\n");
    return TR_TEST_SKIP;
  }
  return opt_out(0);
}

static int test_spill_tuning_and_opt_out(void) { return opt_out(1); }

TR_MAIN(TR_TEST(test_setup_and_opt_out), TR_TEST(test_spill_tuning_and_opt_out))
