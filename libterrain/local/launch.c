/*
 * launch.c - the local runner's launch point (launch.h): a kernel row on a
 * tile, on the CPU or the GPU, under --ft replay tracked by libft.
 *
 * A tile is a short list of launches: one for an ordinary row (window ->
 * cells); for an iterative row (kernel.h) pass 1 (window -> work window),
 * passes 2..n in place on the work window, and finish (work -> cells). With
 * --ft off each launch is a call. With --ft replay each launch goes through
 * ft_track_launch with its inputs and outputs as regions (the slot's `in`,
 * `work` and `out` buffers, registered once per slot); the window read that
 * precedes it is an outside write to `in`, and for iterative rows the tile's
 * window is checkpointed after it. After each launch:
 *   - the injector may flip a bit of the launch's output and report it, as
 *     ECC would (TERRAFORT_INJECT flip-launch), or not (silent=1), and may
 *     rewrite the output from the host (touch: an outside write);
 *   - --ft-check re-executes a sampled share of the idempotent launches into
 *     a scratch buffer and compares the two results' checksums;
 *   - a detected fault goes to ft_track_error: past --ft-max-errors the run
 *     fails (TR_EFTLIMIT, exit 9); otherwise the launch runs again, or its
 *     relaunch set, or the tile's checkpoint is restored and run forward.
 * A GPU launch is replayed on the GPU, or on the CPU with --replay-on cpu
 * (the slot's `repairing` flag, seen by the captured launch, says which).
 * Sampling and fault positions are pure functions of (seed, tile, launch),
 * so a run's faults and counts do not depend on threads, ranks or timing.
 *
 * Memory failures (memfail.h), under --ft off and --ft replay alike: each
 * CPU kernel call runs inside a guard naming the slot's buffers and the
 * tile's output. A SIGBUS BUS_MCEERR_AR in one of them jumps back out of
 * the kernel; an _AO naming one marks it. Either way, once the tile's
 * launches are over (or abandoned), the buffer is retired (never freed,
 * never reused), a fresh one takes its place (the caller's output and the
 * window's read through tr_launch_io), its tracker regions follow, and the
 * whole tile is computed again; the report counts memory_failures (found)
 * and memory_corrected (tiles that then came out whole). Costs nothing
 * until a signal comes but a sigsetjmp per CPU launch. The injector's
 * sigbus and hwpoison faults make the same signal the same way: the
 * thread sends it to itself with rt_tgsigqueueinfo (Linux lets a process
 * give its own signals a kernel si_code), or the kernel sends it for a page
 * poisoned with madvise(MADV_HWPOISON).
 */
#include "launch.h"

#include <errno.h>
#include <signal.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "device.h"
#include "draw.h"
#include "edac.h"
#include "status.h"
#include "ft.h"
#include "memfail.h"
#include "nvml.h"
#include "report_json.h"
#include "side_file.h"

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>

#include "coll.h"
#include "dist.h"
#endif

struct tr_launcher {
  const tr_run_opts *run;
  const tr_kernel *k;
  const tr_kernel_iter *iter;
  const tr_launch_inject *inj;
  ft_tracker *trk;
  int gpu;                     /* launches of this row run on the GPU */
  int64_t halo;
  size_t in_bytes, work_bytes, out_bytes;
  int64_t injected, reported;  /* faults injected, and reported as ECC would */
  /* the row's output invariant (kernel.h): launches checked, faults it found
   * (a re-run gave other bytes), and out-of-range cells a re-run reproduced
   * (the row's own values: not faults) */
  int64_t inv_checked, inv_faults, inv_reproduced;
  int64_t gpu_faults;          /* launches the device failed with a hardware error (device.h) */
  int nvml;                    /* --ft replay on the GPU: its ECC counters are read around launches (nvml.h) */
  int64_t ecc_faults;          /* launches across which the uncorrected ECC count rose */
  tr_edac edac_start;          /* the machine's EDAC counters when the run started (edac.h) */
  int memfail;                 /* the SIGBUS handler is ours to put back at close */
  /* memory failures: found, tiles recomputed whole after them, bytes
   * retired, and the lowest tile hit (for the warning) */
  int64_t mf_found, mf_corrected, mf_retired, mf_first_tile;
};

enum { STAGE_KERNEL = 0, STAGE_PASS = 1, STAGE_FINISH = 2 };

/* A slot's buffers, in the order of its reg[] and of a guard's ranges. */
enum { BUF_IN = 0, BUF_WORK = 1, BUF_SCRATCH = 2, BUF_OUT = 3, NBUF = 4 };
static const char *const buf_name[NBUF] = {"input window", "work window", "scratch", "output"};

/* What a launch returns when it was abandoned to a memory failure, and
 * when the injector could not make its fault (s->why says why). */
enum { LAUNCH_MEMFAIL = -1000, LAUNCH_EINJECT = -1001, LAUNCH_ECC = -1002 /* NVML: a new uncorrected ECC error */ };

/* Recomputations of one tile after memory failures before giving up. */
#define MEMFAIL_TRIES 8

/* What a launch captures by value (ft.h: kept for replay). */
typedef struct {
  const tr_launcher *L;
  tr_launch_slot *slot;
  const void *params;
  tr_window w;                 /* the block; w.in is the launch's input window */
  void *out;                   /* cells (kernel, finish) or a whole window (pass) */
  int stage, first;
  int64_t tile;
  int i;                       /* the launch's number within the tile */
} launch_args;

/* Bytes of a block's cells. */
static size_t cell_bytes(const tr_kernel *k, const tr_window *w) {
  return (size_t)(w->rows * w->cols) * (size_t)GDALGetDataTypeSizeBytes(k->out_type) * (size_t)k->bands;
}

/* The test-only kernel a tile's GPU launch queues first: 1 a trap
 * (gpu-trap), -M one spinning M ms (gpu-hang), 0 none. */
static int trap_at(const tr_launch_inject *f, int64_t tile) {
  for (int i = 0; i < f->ntrap; i++)
    if (f->trap[i] == tile || f->trap[i] == -1) return 1;
  for (int i = 0; i < f->nhang; i++)
    if (f->hang[i] == tile || f->hang[i] == -1) return -f->hang_ms[i];
  return 0;
}

/* ------------------------------------------------------ fault injection */

static uint64_t draw(uint64_t seed, int64_t tile, int launch, uint64_t what) {
  return tr_mix64(seed ^ tr_mix64((uint64_t)tile * 0x100000001b3ull ^ tr_mix64((uint64_t)launch ^ (what << 40))));
}


/* 0: no fault in this launch; 1: a reported fault; 2: a silent one. *bit:
 * the bit of the cell to flip, -1 any. */
static int fault_at(const tr_launch_inject *f, int64_t tile, int launch, int *bit) {
  for (int i = 0; i < f->n; i++)
    if ((f->at[i].tile == tile || f->at[i].tile == -1) && f->at[i].launch == launch) {
      *bit = f->at[i].bit;
      return 1 + f->at[i].silent;
    }
  *bit = f->p_bit;
  if (f->p > 0 && tr_unit64(draw(f->seed, tile, launch, 1)) < f->p) return 1 + f->p_silent;
  return 0;
}

static int touch_at(const tr_launch_inject *f, int64_t tile, int launch) {
  for (int i = 0; i < f->ntouch; i++)
    if ((f->touch[i].tile == tile || f->touch[i].tile == -1) && f->touch[i].launch == launch) return 1;
  return 0;
}

/* 64-bit checksum of a launch's result, eight bytes at a time. */
static uint64_t checksum(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, b + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* ------------------------------------------------ memory failures */

/* The launch's input window: the bytes its kernel reads. */
static size_t input_bytes(const tr_window *w) {
  return (size_t)((w->rows + 2 * w->halo) * w->in_stride) * sizeof(float);
}

/* The injector's sigbus or hwpoison fault for this launch: its index, or
 * -1. Only a tile's first computation gets one, never a repair's re-run:
 * the fault is the tile's, as a bad page is, and comes once. */
static int sigbus_at(const tr_launch_inject *f, const launch_args *a) {
  if (a->slot->attempt || a->slot->repairing) return -1;
  for (int i = 0; i < f->nsigbus; i++)
    if ((f->sigbus[i].tile == a->tile || f->sigbus[i].tile == -1) && f->sigbus[i].launch == a->i) return i;
  return -1;
}

/* Makes injected fault j: the SIGBUS a memory failure brings, by the
 * thread to itself, or a page of the input window poisoned for real. With
 * the guard armed the signal never returns here for a byte of ours. */
static int inject_sigbus(const launch_args *a, int j) {
  const tr_launcher *L = a->L;
  tr_launch_slot *s = a->slot;
  const long ps = sysconf(_SC_PAGESIZE);
  s->injected++;
  if (L->inj->sigbus[j].hwpoison) {
    const uintptr_t lo = (uintptr_t)a->w.in, hi = lo + input_bytes(&a->w);
    const uintptr_t first = (lo + (uintptr_t)ps - 1) & ~((uintptr_t)ps - 1);
    if (first + (uintptr_t)ps > hi) {
      snprintf(s->why, sizeof s->why,
               "inject hwpoison: tile %lld's input window holds no whole page of %ld bytes (give a larger --tile-size)",
               (long long)a->tile, ps);
      return LAUNCH_EINJECT;
    }
    /* the middle whole page: the kernel reads it, and it holds nothing else */
    const uintptr_t page = first + (hi - first) / (uintptr_t)ps / 2 * (uintptr_t)ps;
    if (madvise((void *)page, (size_t)ps, MADV_HWPOISON) != 0) {
      const int e = errno;
      snprintf(s->why, sizeof s->why, "inject hwpoison: madvise(MADV_HWPOISON) failed: %s (%s)", strerror(e),
               e == EINVAL ? "EINVAL: a kernel without CONFIG_MEMORY_FAILURE"
               : e == EPERM ? "EPERM: needs CAP_SYS_ADMIN"
                            : "errno other than EINVAL or EPERM");
      return LAUNCH_EINJECT;
    }
    return 0;
  }
  /* a byte in the middle of the chosen buffer, or the launcher itself:
   * memory of ours that no launch guards */
  const int buf = L->inj->sigbus[j].buf;
  const void *addr = buf == TR_SIGBUS_OUTSIDE ? (const void *)L
                     : buf == TR_SIGBUS_OUT   ? (const unsigned char *)a->out + cell_bytes(L->k, &a->w) / 2
                                              : (const unsigned char *)a->w.in + input_bytes(&a->w) / 2;
  if (tr_memfail_send(addr, L->inj->sigbus[j].ao) != 0) {
    snprintf(s->why, sizeof s->why, "inject sigbus: rt_tgsigqueueinfo failed: %s", strerror(errno));
    return LAUNCH_EINJECT;
  }
  return 0;
}

/* A CPU kernel call of the launch. */
static int cpu_call(const launch_args *a) {
  const tr_launcher *L = a->L;
  switch (a->stage) {
    case STAGE_PASS: {
      const int64_t h = a->w.halo;
      return L->iter->pass(a->params, a->first, a->w.in, a->out, a->w.in_stride, a->w.rows + 2 * h,
                           a->w.cols + 2 * h);
    }
    case STAGE_FINISH: return L->iter->finish(a->params, &a->w, 0, a->w.rows, a->out);
    default: return L->k->cpu(a->params, &a->w, 0, a->w.rows, a->out);
  }
}

/* The CPU kernel call inside the slot's guard (memfail.h): a memory
 * failure in one of the slot's buffers or the tile's output comes back
 * here as LAUNCH_MEMFAIL, with the slot's mf_* saying where. */
static int guarded_call(const launch_args *a) {
  tr_launch_slot *s = a->slot;
  const tr_launcher *L = a->L;
  tr_memfail_guard g;
  g.range[BUF_IN] = (tr_memfail_range){s->in, L->in_bytes};
  g.range[BUF_WORK] = (tr_memfail_range){s->work, L->work_bytes};
  g.range[BUF_SCRATCH] = (tr_memfail_range){s->scratch, s->scratch_bytes};
  g.range[BUF_OUT] = (tr_memfail_range){s->out, L->out_bytes};
  g.n = NBUF;
  /* volatile: read again after sigsetjmp, never kept in a register across it */
  volatile int j = sigbus_at(L->inj, a);
  if (sigsetjmp(g.jb, 1)) {
    const volatile tr_memfail_guard *v = &g;
    s->mf_hit = 1;
    s->mf_which = v->which;
    return LAUNCH_MEMFAIL;
  }
  tr_memfail_enter(&g);
  int rc = j >= 0 && !L->inj->sigbus[j].after ? inject_sigbus(a, j) : 0;
  if (!rc) rc = cpu_call(a);
  tr_memfail_leave();
  /* after=1: the same signal outside any guard, as a failure between launches */
  if (!rc && j >= 0 && L->inj->sigbus[j].after) rc = inject_sigbus(a, j);
  return rc;
}

static int launch_fn(void *p) {
  const launch_args *a = p;
  const tr_launcher *L = a->L;
  /* after a device fault the context is gone: the CPU, whatever --replay-on says */
  if (a->stage == STAGE_KERNEL && a->slot->gpu && !tr_gpu_lost() && !(a->slot->repairing && L->run->replay_on_cpu)) {
    const int trap = !a->slot->repairing && trap_at(L->inj, a->tile);
    /* the device's uncorrected ECC count across the launch (NVML, --ft
     * replay): a rise is a detected fault; launches overlapping it on
     * other streams see it too, and each is replayed */
    const int64_t ecc0 = L->nvml ? tr_nvml_uncorrected() : -1;
    const int rc = tr_gpu_run(a->slot->gpu, L->k, a->params, &a->w, a->out, cell_bytes(L->k, &a->w), trap,
                              a->slot->why, sizeof a->slot->why);
    if (rc == 0 && ecc0 >= 0 && tr_nvml_uncorrected() > ecc0) {
      snprintf(a->slot->why, sizeof a->slot->why, "GPU: the device counted a new uncorrected ECC error (NVML)");
      return LAUNCH_ECC;
    }
    if (rc <= 0) return rc; /* 1: the row declined these params, the CPU's bytes are the same */
  }
  return guarded_call(a);
}

/* ------------------------------------------------------------ launcher */

int tr_launcher_open(tr_launcher **out, const tr_run_opts *run, const tr_inject *inj, const tr_kernel *k,
                     int64_t tile, tr_error *err) {
  *out = NULL;
  tr_launcher *L = calloc(1, sizeof *L);
  if (!L) return tr_fail(err, TR_ENOMEM, "out of memory");
  L->run = run;
  L->k = k;
  L->iter = tr_kernel_iter_of(k);
  L->inj = &inj->launch;
  L->halo = k->halo;
  const int64_t win = tile + 2 * L->halo;
  L->in_bytes = (size_t)(win * win) * sizeof(float);
  L->work_bytes = L->iter ? L->in_bytes : 0;
  L->out_bytes = (size_t)(tile * tile) * (size_t)GDALGetDataTypeSizeBytes(k->out_type) * (size_t)k->bands;
  char why[256] = "";
  int index = -1;
  const int ngpu = run->device == TR_DEVICE_CPU ? 0 : tr_gpu_pick(run, &index, why, sizeof why);
  int st = TR_OK;
  const int has_gpu = ngpu > 0 && tr_gpu_has(k);
  if (ngpu < 0) st = tr_fail(err, TR_EUSAGE, "--device: %s", why);
  else if (run->device == TR_DEVICE_GPU && !has_gpu)
    st = tr_fail(err, TR_EUSAGE, "--device gpu: %s",
                 !ngpu ? why : "this command has no GPU version (see terrafort(1), DEVICES)");
  L->gpu = has_gpu;
  /* --ft replay on the GPU: the device's ECC counters, where NVML reads them */
  char bus[64];
  if (!st && has_gpu && run->ft == TR_FT_REPLAY && tr_gpu_bus_id(bus, sizeof bus) == 0)
    L->nvml = tr_nvml_open(bus, NULL, 0);
  L->mf_first_tile = -1;
  tr_edac_read(&L->edac_start);
  for (int i = 0; !st && i < L->inj->nsigbus; i++)
    if (L->inj->sigbus[i].launch < 0)
      st = tr_fail(err, TR_EUSAGE, "inject: sigbus: launch=-1 is a graph round's Assemble; %s's launches count from 0",
                   k->name);
  if (!st) {
    if (tr_memfail_open()) st = tr_fail(err, TR_EINTERNAL, "installing the SIGBUS handler: %s", strerror(errno));
    else L->memfail = 1;
  }
  if (!st && run->ft == TR_FT_REPLAY) {
    ft_tracker_opts o;
    ft_tracker_opts_init(&o);
    if (run->ft_max_errors) o.max_errors = run->ft_max_errors < 0 ? 0 : run->ft_max_errors;
    if (ft_tracker_create(&o, &L->trk)) st = tr_fail(err, TR_ENOMEM, "out of memory");
  }
  if (st) {
    if (L->memfail) tr_memfail_close();
    free(L);
    return st;
  }
  *out = L;
  return TR_OK;
}

/* The warning a rank gives when it recovered memory failures: the memory
 * of this machine is failing, which its user wants to know (the output is
 * still right). */
static void memfail_warning(const tr_launcher *L) {
  if (!L->mf_found || !L->run->warning) return;
  char msg[512];
  snprintf(msg, sizeof msg,
           "%lld memory failure%s (SIGBUS, BUS_MCEERR_AR/AO) in a kernel's buffers, the lowest in tile %lld: %lld "
           "corrected by computing the tile again on fresh buffers, %lld bytes of memory retired; this machine's memory "
           "is failing",
           (long long)L->mf_found, L->mf_found == 1 ? "" : "s", (long long)L->mf_first_tile, (long long)L->mf_corrected,
           (long long)L->mf_retired);
  L->run->warning(msg, L->run->warning_user);
}

int tr_launcher_close(tr_launcher *L, int rank, int nranks, tr_error *err) {
  if (!L) return TR_OK;
  int st = TR_OK;
  memfail_warning(L);
  if (L->trk) {
    ft_track_report r;
    ft_track_report_get(L->trk, &r);
    int64_t injected = L->injected, reported = L->reported;
    int64_t inv[3] = {L->inv_checked, L->inv_faults, L->inv_reproduced}, gpu_faults = L->gpu_faults,
            ecc_faults = L->ecc_faults, nvml = L->nvml;
    int64_t mf[3] = {L->mf_found, L->mf_corrected, L->mf_retired};
#ifdef TERRAFORT_HAVE_MPI
    if (nranks > 1) {
      /* every counter summed over the ranks, the largest set by its max */
      int64_t *c[] = {&r.regions, &r.outside_writes, &r.launches, &r.idempotent, &r.errors, &r.reruns,
                      &r.relaunch_sets, &r.relaunch_launches, &r.searches_failed, &r.checkpoints,
                      &r.checkpoint_restores, &r.checkpoint_launches, &r.unrepaired, &r.limit_aborts,
                      &r.sampled, &r.sample_mismatches, &injected, &reported, &inv[0], &inv[1], &inv[2],
                      &gpu_faults, &mf[0], &mf[1], &mf[2], &ecc_faults, &nvml};
      enum { NC = sizeof c / sizeof c[0] };
      int64_t v[NC + 1], sum[NC + 1], mx = r.relaunch_max, mxall = 0;
      for (int i = 0; i < NC; i++) v[i] = *c[i];
      double rs = r.replay_s, rsall = 0;
      /* the command's context, its waits bounded by the liveness monitor */
      coll_opts co;
      coll_opts_init(&co);
      co.live = L->run->live;
      co.cancel = L->run->cancelled;
      co.cancel_user = L->run->progress_user;
      coll_ctx *cc = L->run->coll;
      const int own = cc == NULL;
      coll_op sumop = coll_op_builtin(COLL_SUM), maxop = coll_op_builtin(COLL_MAX);
      if ((own ? coll_ctx_create_world(&cc, &co) : coll_ctx_set_opts(cc, &co)) ||
          coll_reduce(cc, v, sum, NC, COLL_INT64, &sumop, 0) || coll_reduce(cc, &mx, &mxall, 1, COLL_INT64, &maxop, 0) ||
          coll_reduce(cc, &rs, &rsall, 1, COLL_DOUBLE, &sumop, 0)) {
        int lost = tr_dist_check(L->run, err);
        st = lost ? lost : tr_fail(err, TR_ECOLL, "fault-tolerance report: collecting the ranks' counters failed");
      }
      if (own) coll_ctx_destroy(cc);
      if (!st && rank == 0) {
        for (int i = 0; i < NC; i++) *c[i] = sum[i];
        r.relaunch_max = mxall;
        r.replay_s = rsall;
      }
    }
#else
    (void)nranks;
#endif
    if (!st && rank == 0 && L->run->ft_report) {
      tr_edac end;
      tr_edac_read(&end);
      /* whole under a temporary name, put in place with the output
       * (io/side_file.h), or a line of the run's (flowgraph) */
      tr_json *o = tr_json_object(), *invariant = tr_json_object(), *tracker = tr_json_object();
      tr_json_set(o, "mode", tr_json_str("replay"));
      tr_json_set(o, "kernel", tr_json_str(L->k->name));
      tr_json_set(o, "unit", tr_json_str("launch"));
      tr_json_set(o, "injected", tr_json_int(injected));
      tr_json_set(o, "reported", tr_json_int(reported));
      tr_json_set(invariant, "checked", tr_json_int(inv[0]));
      tr_json_set(invariant, "faults", tr_json_int(inv[1]));
      tr_json_set(invariant, "reproduced", tr_json_int(inv[2]));
      tr_json_set(o, "invariant", invariant);
      tr_json_set(o, "gpu_faults", tr_json_int(gpu_faults));
      tr_json_set(o, "ecc_faults", tr_json_int(ecc_faults));
      tr_json_set(o, "nvml_ranks", tr_json_int(nvml));
      tr_json_set(o, "memory_failures", tr_json_int(mf[0]));
      tr_json_set(o, "memory_corrected", tr_json_int(mf[1]));
      tr_json_set(o, "retired_bytes", tr_json_int(mf[2]));
      if (tracker) tr_json_ft_track(tracker, &r);
      tr_json_set(o, "tracker", tracker);
      tr_json_set(o, "edac", tr_edac_json(&L->edac_start, &end));
      st = tr_side_write_json(L->run->ft_report, L->run->ft_report_append, "fault-tolerance report", &o, 1, err);
      tr_json_free(o);
    }
    ft_tracker_destroy(L->trk);
  }
  if (L->memfail) tr_memfail_close();
  free(L);
  return st;
}

/* The slot's buffer b (not the output) and its size. */
static void **slot_buf(tr_launch_slot *s, int b) {
  return b == BUF_IN ? (void **)&s->in : b == BUF_WORK ? (void **)&s->work : &s->scratch;
}

static size_t slot_bytes(const tr_launcher *L, const tr_launch_slot *s, int b) {
  return b == BUF_IN ? L->in_bytes : b == BUF_WORK ? L->work_bytes : s->scratch_bytes;
}

/* A fresh buffer b for the slot: allocated, registered for memory-failure
 * reports (memfail.h) and, for the windows, as a tracker region. */
static int buf_open(tr_launcher *L, tr_launch_slot *s, int b) {
  const size_t n = slot_bytes(L, s, b);
  void *p = b == BUF_IN ? tr_host_alloc(n, L->gpu) : malloc(n);
  if (!p) return -1;
  *slot_buf(s, b) = p;
  s->reg[b] = tr_memfail_register(p, n);
  if (L->trk && b != BUF_SCRATCH && ft_region_add(L->trk, p, n, NULL)) return -1;
  return 0;
}

/* Buffer b leaves the slot: freed, or retired for good (poisoned). */
static void buf_close(tr_launcher *L, tr_launch_slot *s, int b, int poisoned) {
  void *p = *slot_buf(s, b);
  tr_memfail_unregister(s->reg[b]);
  s->reg[b] = -1;
  if (!p) return;
  /* dead regions: addresses reused later never match their entries */
  if (L->trk && b != BUF_SCRATCH) ft_region_remove(L->trk, p);
  if (poisoned) {
    tr_memfail_retire(p, slot_bytes(L, s, b));
    __atomic_add_fetch(&L->mf_retired, (int64_t)slot_bytes(L, s, b), __ATOMIC_RELAXED);
  } else if (b == BUF_IN) {
    tr_host_free(p, L->gpu);
  } else {
    free(p);
  }
  *slot_buf(s, b) = NULL;
}

tr_launch_slot *tr_launch_slot_open(tr_launcher *L) {
  tr_launch_slot *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->checkpoint = -1;
  for (int b = 0; b < NBUF; b++) s->reg[b] = -1;
  if (L->trk && (L->run->ft_check > 0 || L->k->check))
    s->scratch_bytes = L->out_bytes > L->work_bytes ? L->out_bytes : L->work_bytes;
  int ok = buf_open(L, s, BUF_IN) == 0;
  if (ok && L->iter) ok = buf_open(L, s, BUF_WORK) == 0;
  if (ok && s->scratch_bytes) ok = buf_open(L, s, BUF_SCRATCH) == 0;
  if (ok && L->gpu)
    ok = tr_gpu_open(&s->gpu, L->in_bytes, L->out_bytes,
                     L->run->ft_timeout_ms > 0 ? L->run->ft_timeout_ms : FT_TIMEOUT_RUN_MS, s->why, sizeof s->why) == 0;
  if (!ok) {
    tr_launch_slot_close(L, s);
    return NULL;
  }
  return s;
}

void tr_launch_slot_close(tr_launcher *L, tr_launch_slot *s) {
  if (!s) return;
  if (L->trk && s->checkpoint >= 0) ft_checkpoint_drop(L->trk, s->checkpoint);
  for (int b = 0; b < BUF_OUT; b++) buf_close(L, s, b, 0);
  __atomic_add_fetch(&L->injected, s->injected, __ATOMIC_RELAXED);
  tr_gpu_close(s->gpu);
  free(s);
}

/* Whether launch a's output breaks the row's invariant for a reason other
 * than the row itself: the cells the invariant refuses are checked by a
 * re-run into scratch, and only other bytes make a fault. */
static int invariant_fault(tr_launcher *L, tr_launch_slot *s, const launch_args *a, const ft_range *out, int64_t tile,
                           int *fault, tr_error *err) {
  *fault = 0;
  __atomic_add_fetch(&L->inv_checked, 1, __ATOMIC_RELAXED);
  if (L->k->check(a->params, &a->w, out->addr) == 0) return TR_OK;
  launch_args again = *a;
  again.out = s->scratch;
  if (launch_fn(&again)) return tr_fail(err, TR_EINTERNAL, "%s kernel failed on tile %lld", L->k->name, (long long)tile);
  *fault = memcmp(s->scratch, out->addr, out->size) != 0;
  __atomic_add_fetch(*fault ? &L->inv_faults : &L->inv_reproduced, 1, __ATOMIC_RELAXED);
  return TR_OK;
}

/* After tracked launch number `i` of the tile: injected faults, the
 * invariant, the sampled check, and the repair of what was found. */
static int after_launch(tr_launcher *L, tr_launch_slot *s, const launch_args *a, const ft_range *out, int idem,
                        int64_t seq, int64_t tile, int i, int device_fault, tr_error *err) {
  int bit;
  const int fault = fault_at(L->inj, tile, i, &bit);
  if (fault) {
    const uint64_t h = draw(L->inj->seed, tile, i, 2);
    unsigned char *b = (unsigned char *)out->addr;
    if (bit < 0) {
      b[(h >> 3) % out->size] ^= (unsigned char)(1u << (h & 7));
    } else {
      /* bit `bit` of one cell (little-endian: byte bit / 8 of the cell) */
      const size_t cs = a->stage == STAGE_PASS ? sizeof(float) : (size_t)GDALGetDataTypeSizeBytes(L->k->out_type);
      const size_t cell = (size_t)(h >> 3) % (out->size / cs), k = (size_t)bit % (8 * cs);
      b[cell * cs + k / 8] ^= (unsigned char)(1u << (k % 8));
    }
    __atomic_add_fetch(&L->injected, 1, __ATOMIC_RELAXED);
    if (fault == 1) __atomic_add_fetch(&L->reported, 1, __ATOMIC_RELAXED);
  }
  if (touch_at(L->inj, tile, i)) ft_region_write(L->trk, out->addr, out->size);
  int detected = fault == 1 || device_fault;
  /* the row's output invariant, on every launch that makes its cells */
  if (!detected && idem && L->k->check && a->stage != STAGE_PASS) {
    const int st = invariant_fault(L, s, a, out, tile, &detected, err);
    if (st) return st;
  }
  if (!detected && idem && L->run->ft_check > 0 && tr_unit64(draw(0x5eed, tile, i, 3)) < L->run->ft_check) {
    launch_args again = *a;
    again.out = s->scratch;
    const int rc = launch_fn(&again);
    if (rc) return tr_fail(err, TR_EINTERNAL, "%s kernel failed on tile %lld", L->k->name, (long long)tile);
    detected = checksum(s->scratch, out->size) != checksum(out->addr, out->size);
    ft_track_count_sample(L->trk, detected);
  }
  if (!detected) return TR_OK;
  s->repairing = 1;
  ft_repair how;
  const int rc = ft_track_error(L->trk, seq, &how);
  s->repairing = 0;
  if (rc == FT_ERR_LIMIT)
    return tr_fail(err, TR_EFTLIMIT, "fault tolerance: tile %lld: more faults detected than --ft-max-errors allows",
                   (long long)tile);
  if (rc)
    return tr_fail(err, TR_EFT, "fault tolerance: tile %lld: %s", (long long)tile,
                   s->why[0] ? s->why : ft_strerror(rc));
  return TR_OK;
}

/* The tile's launches (see the top of the file). */
static int launch_all(tr_launcher *L, tr_launch_slot *s, const void *params, const tr_window *w, int64_t tile,
                      tr_error *err) {
  const int passes = L->iter ? L->iter->passes(params) : 0;
  const int n = L->iter ? passes + 1 : 1;
  /* the ranges this tile uses (an edge tile uses part of each buffer) */
  const size_t win_bytes = (size_t)((w->rows + 2 * w->halo) * w->in_stride) * sizeof(float);
  const ft_range in = {s->in, win_bytes}, work = {s->work, win_bytes}, out = {s->out, cell_bytes(L->k, w)};
  if (L->trk) {
    /* the window read is a write outside any launch; an iterative tile
     * keeps it as its checkpoint (its passes are not idempotent) */
    ft_region_write(L->trk, in.addr, in.size);
    if (L->iter) {
      if (s->checkpoint >= 0) ft_checkpoint_drop(L->trk, s->checkpoint);
      const ft_range whole = {s->in, L->in_bytes};
      if (ft_checkpoint(L->trk, &whole, 1, &s->checkpoint)) return tr_fail(err, TR_ENOMEM, "out of memory");
    }
  }
  s->why[0] = 0;
  for (int i = 0; i < n; i++) {
    launch_args a = {L, s, params, *w, s->out, STAGE_KERNEL, 0, tile, i};
    const ft_range *ri = &in, *ro = &out;
    if (L->iter && i < passes) {
      a.stage = STAGE_PASS;
      a.first = i == 0;
      a.out = s->work;
      ro = &work;
      if (i > 0) {
        ri = &work;
        a.w.in = s->work;
      }
    } else if (L->iter) {
      a.stage = STAGE_FINISH;
      a.w.in = s->work;
      ri = &work;
    }
    int64_t seq = -1;
    int rc;
    if (L->trk) {
      const ft_launch l = {(uint64_t)tile << 8 | (uint64_t)i, ri, 1, ro, 1, launch_fn, &a, sizeof a};
      rc = ft_track_launch(L->trk, &l, &seq);
    } else {
      rc = launch_fn(&a);
    }
    /* a device fault is a detected fault under --ft replay: the launch runs
     * again (on the CPU: the context is gone) */
    const int device_fault = (rc == TR_GPU_FAULT || rc == LAUNCH_ECC) && L->trk && seq >= 0;
    if (device_fault) __atomic_add_fetch(rc == LAUNCH_ECC ? &L->ecc_faults : &L->gpu_faults, 1, __ATOMIC_RELAXED);
    if (rc == LAUNCH_MEMFAIL) return rc; /* tr_launch_tile computes the tile again */
    if (rc && !device_fault)
      return rc == LAUNCH_EINJECT ? tr_fail(err, TR_EUSAGE, "%s", s->why)
             : rc == TR_GPU_FAULT ? tr_fail(err, TR_EINTERNAL, "%s (--ft replay runs such launches again on the CPU)",
                                          s->why)
             : rc < 0 && s->why[0] ? tr_fail(err, TR_EINTERNAL, "%s", s->why)
                                   : tr_fail(err, TR_EINTERNAL, "%s kernel failed on tile %lld", L->k->name,
                                             (long long)tile);
    if (L->trk) {
      const int st = after_launch(L, s, &a, ro, ri != ro, seq, tile, i, device_fault, err);
      if (st) return st;
    }
  }
  return TR_OK;
}

/* Whether a memory failure hit the tile's launches: one jumped back
 * (s->mf_hit), or an AO marked one of its buffers (memfail.h). */
static int memfail_hit(const tr_launch_slot *s, int *poisoned) {
  int any = 0;
  for (int b = 0; b < NBUF; b++) {
    poisoned[b] = (s->mf_hit && s->mf_which == b) || tr_memfail_poisoned(s->reg[b]);
    any |= poisoned[b];
  }
  return any;
}

/* After a memory failure: every poisoned buffer retired and replaced by a
 * fresh one, *out too (the caller's), and the window read again when it
 * was in the lost memory. */
static int memfail_renew(tr_launcher *L, tr_launch_slot *s, const int *poisoned, int64_t tile, void **out,
                         const tr_launch_io *io, tr_error *err) {
  if (L->trk && s->checkpoint >= 0) {
    /* a copy of the old window, which is read again below or intact */
    ft_checkpoint_drop(L->trk, s->checkpoint);
    s->checkpoint = -1;
  }
  for (int b = 0; b < BUF_OUT; b++)
    if (poisoned[b]) {
      buf_close(L, s, b, 1);
      if (buf_open(L, s, b))
        return tr_fail(err, TR_ENOMEM, "out of memory for tile %lld's %s after a memory failure", (long long)tile,
                       buf_name[b]);
    }
  if (poisoned[BUF_OUT]) {
    size_t retired = 0;
    void *fresh = io ? io->renew_out(io->user, &retired) : NULL;
    if (!fresh)
      return tr_fail(err, TR_ENOMEM, "out of memory for tile %lld's output after a memory failure", (long long)tile);
    __atomic_add_fetch(&L->mf_retired, (int64_t)retired, __ATOMIC_RELAXED);
    *out = fresh;
  }
  if (poisoned[BUF_IN] && io && io->read) return io->read(io->user, s->in, err);
  return TR_OK;
}

int tr_launch_tile(tr_launcher *L, tr_launch_slot *s, const void *params, const tr_window *w0, int64_t tile, void *out,
                   const tr_launch_io *io, tr_error *err) {
  tr_window w = *w0;
  int st;
  for (s->attempt = 0;; s->attempt++) {
    s->out = out;
    w.in = s->in;
    s->mf_hit = 0;
    /* the output buffer is the tile's own: registered for its launches only */
    s->reg[BUF_OUT] = tr_memfail_register(out, L->out_bytes);
    if (L->trk && ft_region_add(L->trk, out, cell_bytes(L->k, &w), NULL)) {
      tr_memfail_unregister(s->reg[BUF_OUT]);
      s->reg[BUF_OUT] = -1;
      return tr_fail(err, TR_EINTERNAL, "fault tolerance: tile %lld: output buffer already tracked", (long long)tile);
    }
    st = launch_all(L, s, params, &w, tile, err);
    if (L->trk) ft_region_remove(L->trk, out);
    int poisoned[NBUF];
    const int hit = memfail_hit(s, poisoned);
    tr_memfail_unregister(s->reg[BUF_OUT]);
    s->reg[BUF_OUT] = -1;
    s->out = NULL;
    if (!hit) break;
    /* a memory failure: whatever the launches said, the tile is computed
     * again on fresh buffers */
    __atomic_add_fetch(&L->mf_found, 1, __ATOMIC_RELAXED);
    int64_t low = __atomic_load_n(&L->mf_first_tile, __ATOMIC_RELAXED); /* the lowest tile: the same for any threads */
    while ((low < 0 || tile < low) &&
           !__atomic_compare_exchange_n(&L->mf_first_tile, &low, tile, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    if (s->attempt + 1 >= MEMFAIL_TRIES) {
      int b = 0;
      while (!poisoned[b]) b++;
      return tr_fail(err, TR_EFT, "fault tolerance: tile %lld: %d memory failures in a row (SIGBUS, the last in its %s): "
                     "giving up", (long long)tile, MEMFAIL_TRIES, buf_name[b]);
    }
    err->msg[0] = 0;
    st = memfail_renew(L, s, poisoned, tile, &out, io, err);
    if (st) return st;
  }
  /* each failure this tile had is corrected once its bytes come out whole */
  if (!st && s->attempt > 0) __atomic_add_fetch(&L->mf_corrected, s->attempt, __ATOMIC_RELAXED);
  return st;
}
