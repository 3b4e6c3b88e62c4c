/*
 * memfail.h - memory failures inside the local runner's launches: Linux's
 * SIGBUS with si_code BUS_MCEERR_AR or BUS_MCEERR_AO (internal to
 * libterrain).
 *
 * When the machine finds a memory page it cannot correct (an uncorrectable
 * ECC error, or madvise(MADV_HWPOISON)), Linux takes the page away from the
 * process and sends SIGBUS: BUS_MCEERR_AR ("action required") to the thread
 * that touched it, at the instruction that did, or BUS_MCEERR_AO ("action
 * optional") when the page was found poisoned before anyone used it. Either
 * way si_addr is the page's address. By default the process dies.
 *
 * Here a launch (launch.h) runs a CPU kernel inside a guard, and so does a
 * graph round under --ft replay or dual (hydro/graph_ft.c: a round computes
 * on copies, so it can be computed again; under --ft off a round writes the
 * fragment's own state and a memory failure there kills the process as
 * before). The thread's
 * guard (thread-local) names the launch's buffers. The process-wide handler
 * recovers exactly one case: an AR whose address lies in one of the
 * faulting thread's guarded buffers; it jumps back to the guard's
 * sigsetjmp (the kernel is a pure function of its buffers: nothing is left
 * half done but the buffers themselves), and the launch point retires the
 * buffer and computes the tile again on fresh ones. An AO is never jumped
 * on (it may come while the thread is anywhere, in malloc for one): when it
 * names a buffer registered here (tr_memfail_register: every slot's buffers,
 * whichever thread uses them) the buffer is marked poisoned and its owner
 * retires it and recomputes its tile when the tile ends; an AO that names
 * no buffer of ours is ignored (the kernel has already unmapped the page:
 * whoever touches it next gets an AR). Every other SIGBUS - another
 * si_code, an AR outside the thread's guarded buffers, a thread in no guard
 * - goes to the disposition that was in place before: its handler is
 * called, or the default is restored and the signal raised again, so the
 * process dies by SIGBUS as it would have.
 *
 * Retired buffers are never freed and never used again: they stay on a
 * process-wide list to the end (a freed page with a poisoned frame behind
 * it would come back from malloc to the next caller).
 *
 * The handler does only async-signal-safe things: atomic loads and stores,
 * address compares against the thread-local guard and the registry's fixed
 * table, sigaction, raise and siglongjmp.
 *
 * Thread safety: every call may come from any thread at once; a guard
 * belongs to the thread that entered it.
 */
#ifndef TR_MEMFAIL_H
#define TR_MEMFAIL_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

/* A guarded buffer: [addr, addr + size). */
typedef struct {
  void *addr;
  size_t size;
} tr_memfail_range;

/* A launch guards 4 buffers; a graph round (hydro/graph_ft.c) up to its
 * state's arrays, its window copies and its tile (graph.h's limits). The
 * handler only scans the first n of this fixed array. */
#define TR_MEMFAIL_RANGES 32

/* A thread's guard around a kernel call: the buffers a memory failure may
 * be recovered in, and what the handler found (valid after the jump). */
typedef struct {
  sigjmp_buf jb;
  tr_memfail_range range[TR_MEMFAIL_RANGES];
  int n;
  void *volatile addr; /* the failure's si_addr */
  volatile int which;  /* the range it lies in */
  volatile int code;   /* its si_code */
} tr_memfail_guard;

/* Installs the SIGBUS handler (first open) and keeps it until the last
 * close, which puts the previous disposition back. 0, or -1 with errno. */
int tr_memfail_open(void);
void tr_memfail_close(void);

/* Arms g for this thread: call right after `if (sigsetjmp(g->jb, 1))`
 * returned 0. The handler jumps there (sigsetjmp returns 1) on an AR in
 * one of g's ranges. tr_memfail_leave disarms it (the jump disarms it too). */
void tr_memfail_enter(tr_memfail_guard *g);
void tr_memfail_leave(void);

/* The registry of buffers an AO may name: a handle (>= 0), or -1 when the
 * table is full (the buffer is then still guarded against ARs, but an AO
 * naming it is ignored). */
int tr_memfail_register(void *addr, size_t size);
void tr_memfail_unregister(int handle);

/* Whether an AO marked handle's buffer poisoned since it was registered. */
int tr_memfail_poisoned(int handle);

/* Puts [addr, addr + size) on the retired list for good (never freed). */
void tr_memfail_retire(void *addr, size_t size);

/* Bytes retired in this process so far. */
int64_t tr_memfail_retired_bytes(void);

/* Sends the calling thread the SIGBUS a memory failure at addr brings
 * (si_code BUS_MCEERR_AO when ao, else _AR; a whole page lost), as the
 * injector's sigbus fault does: rt_tgsigqueueinfo, which lets a process
 * give its own signals a kernel si_code. With a guard armed around addr it
 * does not return here. 0, or -1 with errno. */
int tr_memfail_send(const void *addr, int ao);

/* Whether addr lies in r (async-signal-safe). */
static inline int tr_memfail_in(const tr_memfail_range *r, const void *addr) {
  return r->addr && (uintptr_t)addr >= (uintptr_t)r->addr && (uintptr_t)addr - (uintptr_t)r->addr < r->size;
}

#endif
