/*
 * memfail.c - the SIGBUS handler for memory failures in launches, the
 * registry of buffers an asynchronous report (BUS_MCEERR_AO) may name, and
 * the list of retired buffers (memfail.h says what is recovered and why).
 *
 * State is process-wide by nature: a signal disposition is the process's,
 * and retired memory outlives every run. The handler reads the thread's
 * guard through an initial-exec thread-local pointer (no lazy allocation
 * in a signal handler, even in the shared library) and the registry
 * through atomic loads; an entry is published lo-then-hi and withdrawn
 * hi-then-lo, so a half-written entry never matches (hi <= lo).
 */
#include "memfail.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef BUS_MCEERR_AR
#define BUS_MCEERR_AR 4
#endif
#ifndef BUS_MCEERR_AO
#define BUS_MCEERR_AO 5
#endif

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int opened;                /* launchers open: the handler is installed while > 0 */
static struct sigaction previous; /* the disposition before it */

static __thread tr_memfail_guard *guard __attribute__((tls_model("initial-exec")));

/* The registry: enough for every slot's buffers of a 4-per-core thread cap
 * on a large node (4 buffers each); beyond it buffers go unregistered. */
enum { REGISTRY = 2048 };
static struct {
  _Atomic uintptr_t lo, hi;
  atomic_int poisoned;
  int used; /* under mu */
} reg[REGISTRY];

/* Retired buffers, reachable to the end (leak checkers see them as such). */
typedef struct retired {
  void *addr;
  size_t size;
  struct retired *next;
} retired;
static retired *retired_list;
static _Atomic int64_t retired_bytes;

/* Everything but our one case: the disposition that was there before. */
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
  /* default (or ignored, which a fault cannot be): die by SIGBUS. The
   * signal is blocked in here, so the raised one arrives on return; a real
   * fault would also come again at its instruction. */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGBUS, &dfl, NULL);
  raise(SIGBUS);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc) {
  const int saved = errno;
  const int code = si->si_code;
  if (code == BUS_MCEERR_AR) {
    tr_memfail_guard *g = guard;
    if (g)
      for (int i = 0; i < g->n; i++)
        if (tr_memfail_in(&g->range[i], si->si_addr)) {
          g->addr = si->si_addr;
          g->which = i;
          g->code = code;
          guard = NULL;
          errno = saved;
          siglongjmp(g->jb, 1);
        }
  } else if (code == BUS_MCEERR_AO) {
    const uintptr_t a = (uintptr_t)si->si_addr;
    for (int i = 0; i < REGISTRY; i++) {
      const uintptr_t hi = atomic_load(&reg[i].hi), lo = atomic_load(&reg[i].lo);
      if (hi > lo && a >= lo && a < hi) atomic_store(&reg[i].poisoned, 1);
    }
    /* ours or not, nothing to do now (memfail.h) */
    errno = saved;
    return;
  }
  errno = saved;
  pass_on(sig, si, uc);
}

int tr_memfail_open(void) {
  int rc = 0;
  pthread_mutex_lock(&mu);
  if (opened == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    rc = sigaction(SIGBUS, &sa, &previous);
  }
  if (rc == 0) opened++;
  pthread_mutex_unlock(&mu);
  return rc;
}

void tr_memfail_close(void) {
  pthread_mutex_lock(&mu);
  if (opened > 0 && --opened == 0) sigaction(SIGBUS, &previous, NULL);
  pthread_mutex_unlock(&mu);
}

void tr_memfail_enter(tr_memfail_guard *g) {
  atomic_signal_fence(memory_order_seq_cst);
  guard = g;
  atomic_signal_fence(memory_order_seq_cst);
}

void tr_memfail_leave(void) {
  atomic_signal_fence(memory_order_seq_cst);
  guard = NULL;
  atomic_signal_fence(memory_order_seq_cst);
}

int tr_memfail_register(void *addr, size_t size) {
  if (!addr || !size) return -1;
  int h = -1;
  pthread_mutex_lock(&mu);
  for (int i = 0; i < REGISTRY && h < 0; i++)
    if (!reg[i].used) h = i;
  if (h >= 0) {
    reg[h].used = 1;
    atomic_store(&reg[h].poisoned, 0);
    atomic_store(&reg[h].lo, (uintptr_t)addr);
    atomic_store(&reg[h].hi, (uintptr_t)addr + size);
  }
  pthread_mutex_unlock(&mu);
  return h;
}

void tr_memfail_unregister(int h) {
  if (h < 0 || h >= REGISTRY) return;
  pthread_mutex_lock(&mu);
  atomic_store(&reg[h].hi, 0);
  atomic_store(&reg[h].lo, 0);
  reg[h].used = 0;
  pthread_mutex_unlock(&mu);
}

int tr_memfail_poisoned(int h) { return h >= 0 && h < REGISTRY && atomic_load(&reg[h].poisoned); }

void tr_memfail_retire(void *addr, size_t size) {
  if (!addr) return;
  atomic_fetch_add(&retired_bytes, (int64_t)size);
  retired *r = malloc(sizeof *r);
  if (!r) return; /* still never freed: unlisted is all it costs */
  r->addr = addr;
  r->size = size;
  pthread_mutex_lock(&mu);
  r->next = retired_list;
  retired_list = r;
  pthread_mutex_unlock(&mu);
}

int64_t tr_memfail_retired_bytes(void) { return atomic_load(&retired_bytes); }

int tr_memfail_send(const void *addr, int ao) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = SIGBUS;
  si.si_code = ao ? BUS_MCEERR_AO : BUS_MCEERR_AR;
  si.si_addr = (void *)addr;
  si.si_addr_lsb = (short)__builtin_ctzl((unsigned long)sysconf(_SC_PAGESIZE)); /* as the kernel's: a whole page lost */
  return syscall(SYS_rt_tgsigqueueinfo, (long)getpid(), (long)syscall(SYS_gettid), SIGBUS, &si) == 0 ? 0 : -1;
}
