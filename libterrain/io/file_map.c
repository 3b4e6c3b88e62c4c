/*
 * file_map.c - the read-only input mapping behind direct reads, its bounded
 * resident pages and its SIGBUS guard (file_map.h says why).
 *
 * The guard: a copy sets a thread-local jump buffer and the range it reads;
 * the handler jumps back when a SIGBUS on that thread falls in that range and
 * passes every other one to the disposition found when the first map opened.
 * The jump buffer does not save the signal mask (sigsetjmp's second argument
 * is 0: saving it costs a system call per copy, the cost a map is there to
 * save). The handler runs with SA_NODEFER, so SIGBUS is not blocked when it
 * jumps; when another handler called it (local/memfail.c's passes on to the
 * one it found), SIGBUS was blocked on the way in and the caught path
 * unblocks it.
 */
#include "file_map.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int opened;    /* maps open (under mu) */
static int installed; /* our handler was installed and not taken back (under mu) */
static struct sigaction previous;

typedef struct {
  sigjmp_buf jb;
  uintptr_t lo, hi;
} copy_guard;
static __thread copy_guard *guard __attribute__((tls_model("initial-exec")));

static void pass_on(int sig, siginfo_t *si, void *uc) {
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) {
      previous.sa_sigaction(sig, si, uc);
      return;
    }
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
    return;
  }
  /* default (a fault cannot be ignored): die by SIGBUS, as without us */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGBUS, &dfl, NULL);
  raise(SIGBUS);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc) {
  copy_guard *g = guard;
  const uintptr_t a = (uintptr_t)si->si_addr;
  if (g && a >= g->lo && a < g->hi) {
    guard = NULL;
    siglongjmp(g->jb, 1);
  }
  pass_on(sig, si, uc);
}

int tr_file_map_open(tr_file_map *m, int fd, size_t len, uint64_t lag) {
  memset(m, 0, sizeof *m);
  if (len == 0) return -1;
  pthread_mutex_lock(&mu);
  int rc = 0;
  if (!installed) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    rc = sigaction(SIGBUS, &sa, &previous);
    installed = rc == 0;
  }
  void *p = rc == 0 ? mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (p != MAP_FAILED) opened++;
  pthread_mutex_unlock(&mu);
  if (p == MAP_FAILED) return -1;
  m->base = p;
  m->len = len;
  m->lag = lag;
  return 0;
}

int tr_file_map_copy(tr_file_map *m, void *dst, uint64_t off, size_t n) {
  copy_guard g;
  g.lo = (uintptr_t)(m->base + off);
  g.hi = g.lo + n;
  if (sigsetjmp(g.jb, 0)) {
    sigset_t bus;
    sigemptyset(&bus);
    sigaddset(&bus, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &bus, NULL);
    return -1;
  }
  atomic_signal_fence(memory_order_seq_cst);
  guard = &g;
  atomic_signal_fence(memory_order_seq_cst);
  memcpy(dst, m->base + off, n);
  atomic_signal_fence(memory_order_seq_cst);
  guard = NULL;
  atomic_signal_fence(memory_order_seq_cst);
  return 0;
}

void tr_file_map_behind(tr_file_map *m, uint64_t off) {
  if (off < 2 * m->lag) return;
  const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  const uint64_t to = (off - m->lag) / page * page;
  uint64_t from = __atomic_load_n(&m->dropped, __ATOMIC_RELAXED);
  if (to < from + m->lag) return;
  /* another thread got there first: it drops them */
  if (!__atomic_compare_exchange_n(&m->dropped, &from, to, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
  /* advice only: a failure leaves the pages resident, the reads unchanged */
  (void)madvise((void *)(m->base + from), (size_t)(to - from), MADV_DONTNEED);
}

void tr_file_map_close(tr_file_map *m) {
  if (!m->base) return;
  munmap((void *)m->base, m->len);
  m->base = NULL;
  pthread_mutex_lock(&mu);
  if (--opened == 0) {
    /* take the handler back only if it is still ours; one installed over it
     * holds ours as the one it passes on to */
    struct sigaction cur;
    if (sigaction(SIGBUS, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigbus) {
      sigaction(SIGBUS, &previous, NULL);
      installed = 0;
    }
  }
  pthread_mutex_unlock(&mu);
}
