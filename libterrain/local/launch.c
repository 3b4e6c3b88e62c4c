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
 */
#include "launch.h"

#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "edac.h"
#include "status.h"
#include "ft.h"
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
  tr_edac edac_start;          /* the machine's EDAC counters when the run started (edac.h) */
};

enum { STAGE_KERNEL = 0, STAGE_PASS = 1, STAGE_FINISH = 2 };

/* What a launch captures by value (ft.h: kept for replay). */
typedef struct {
  const tr_launcher *L;
  tr_launch_slot *slot;
  const void *params;
  tr_window w;                 /* the block; w.in is the launch's input window */
  void *out;                   /* cells (kernel, finish) or a whole window (pass) */
  int stage, first;
  int64_t tile;
} launch_args;

/* Bytes of a block's cells. */
static size_t cell_bytes(const tr_kernel *k, const tr_window *w) {
  return (size_t)(w->rows * w->cols) * (size_t)GDALGetDataTypeSizeBytes(k->out_type) * (size_t)k->bands;
}

static int trap_at(const tr_launch_inject *f, int64_t tile) {
  for (int i = 0; i < f->ntrap; i++)
    if (f->trap[i] == tile || f->trap[i] == -1) return 1;
  return 0;
}

static int launch_fn(void *p) {
  const launch_args *a = p;
  const tr_launcher *L = a->L;
  switch (a->stage) {
    case STAGE_PASS: {
      const int64_t h = a->w.halo;
      return L->iter->pass(a->params, a->first, a->w.in, a->out, a->w.in_stride,
                           a->w.rows + 2 * h, a->w.cols + 2 * h);
    }
    case STAGE_FINISH: return L->iter->finish(a->params, &a->w, 0, a->w.rows, a->out);
    default:
      /* after a device fault the context is gone: the CPU, whatever --replay-on says */
      if (a->slot->gpu && !tr_gpu_lost() && !(a->slot->repairing && L->run->replay_on_cpu)) {
        const int trap = !a->slot->repairing && trap_at(L->inj, a->tile);
        const int rc = tr_gpu_run(a->slot->gpu, L->k, a->params, &a->w, a->out, cell_bytes(L->k, &a->w), trap,
                                  a->slot->why, sizeof a->slot->why);
        if (rc <= 0) return rc; /* 1: the row declined these params, the CPU's bytes are the same */
      }
      return L->k->cpu(a->params, &a->w, 0, a->w.rows, a->out);
  }
}

/* ------------------------------------------------------ fault injection */

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint64_t draw(uint64_t seed, int64_t tile, int launch, uint64_t what) {
  return mix(seed ^ mix((uint64_t)tile * 0x100000001b3ull ^ mix((uint64_t)launch ^ (what << 40))));
}

static double unit(uint64_t h) { return (double)(h >> 11) * (1.0 / 9007199254740992.0); }

/* 0: no fault in this launch; 1: a reported fault; 2: a silent one. *bit:
 * the bit of the cell to flip, -1 any. */
static int fault_at(const tr_launch_inject *f, int64_t tile, int launch, int *bit) {
  for (int i = 0; i < f->n; i++)
    if ((f->at[i].tile == tile || f->at[i].tile == -1) && f->at[i].launch == launch) {
      *bit = f->at[i].bit;
      return 1 + f->at[i].silent;
    }
  *bit = f->p_bit;
  if (f->p > 0 && unit(draw(f->seed, tile, launch, 1)) < f->p) return 1 + f->p_silent;
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
  tr_edac_read(&L->edac_start);
  if (!st && run->ft == TR_FT_REPLAY) {
    ft_tracker_opts o;
    ft_tracker_opts_init(&o);
    if (run->ft_max_errors) o.max_errors = run->ft_max_errors < 0 ? 0 : run->ft_max_errors;
    if (ft_tracker_create(&o, &L->trk)) st = tr_fail(err, TR_ENOMEM, "out of memory");
  }
  if (st) {
    free(L);
    return st;
  }
  *out = L;
  return TR_OK;
}

int tr_launcher_close(tr_launcher *L, int rank, int nranks, tr_error *err) {
  if (!L) return TR_OK;
  int st = TR_OK;
  if (L->trk) {
    ft_track_report r;
    ft_track_report_get(L->trk, &r);
    int64_t injected = L->injected, reported = L->reported;
    int64_t inv[3] = {L->inv_checked, L->inv_faults, L->inv_reproduced}, gpu_faults = L->gpu_faults;
#ifdef TERRAFORT_HAVE_MPI
    if (nranks > 1) {
      /* every counter summed over the ranks, the largest set by its max */
      int64_t *c[] = {&r.regions, &r.outside_writes, &r.launches, &r.idempotent, &r.errors, &r.reruns,
                      &r.relaunch_sets, &r.relaunch_launches, &r.searches_failed, &r.checkpoints,
                      &r.checkpoint_restores, &r.checkpoint_launches, &r.unrepaired, &r.limit_aborts,
                      &r.sampled, &r.sample_mismatches, &injected, &reported, &inv[0], &inv[1], &inv[2],
                      &gpu_faults};
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
      char buf[2048], edac[256];
      ft_track_report_format_json(&r, buf, sizeof buf);
      tr_edac end;
      tr_edac_read(&end);
      tr_edac_format_json(&L->edac_start, &end, edac, sizeof edac);
      /* whole under a temporary name, put in place with the output
       * (io/side_file.h), or a line of the run's (flowgraph) */
      char line[3072];
      snprintf(line, sizeof line,
               "{\"mode\":\"replay\",\"kernel\":\"%s\",\"unit\":\"launch\",\"injected\":%lld,\"reported\":%lld,"
               "\"invariant\":{\"checked\":%lld,\"faults\":%lld,\"reproduced\":%lld},\"gpu_faults\":%lld,\"tracker\":%s,%s}",
               L->k->name, (long long)injected, (long long)reported, (long long)inv[0], (long long)inv[1],
               (long long)inv[2], (long long)gpu_faults, buf, edac);
      st = tr_side_write_line(L->run->ft_report, L->run->ft_report_append, "fault-tolerance report", line, err);
    }
    ft_tracker_destroy(L->trk);
  }
  free(L);
  return st;
}

tr_launch_slot *tr_launch_slot_open(tr_launcher *L) {
  tr_launch_slot *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->checkpoint = -1;
  s->in = tr_host_alloc(L->in_bytes, L->gpu);
  int ok = s->in != NULL;
  if (ok && L->iter) ok = (s->work = malloc(L->work_bytes)) != NULL;
  if (ok && L->trk && (L->run->ft_check > 0 || L->k->check))
    ok = (s->scratch = malloc(L->out_bytes > L->work_bytes ? L->out_bytes : L->work_bytes)) != NULL;
  if (ok && L->gpu) ok = tr_gpu_open(&s->gpu, L->in_bytes, L->out_bytes, s->why, sizeof s->why) == 0;
  if (ok && L->trk)
    ok = !ft_region_add(L->trk, s->in, L->in_bytes, NULL) &&
         (!s->work || !ft_region_add(L->trk, s->work, L->work_bytes, NULL));
  if (!ok) {
    tr_launch_slot_close(L, s);
    return NULL;
  }
  return s;
}

void tr_launch_slot_close(tr_launcher *L, tr_launch_slot *s) {
  if (!s) return;
  if (L->trk) {
    /* dead regions: addresses reused later never match their entries */
    ft_region_remove(L->trk, s->in);
    if (s->work) ft_region_remove(L->trk, s->work);
    if (s->checkpoint >= 0) ft_checkpoint_drop(L->trk, s->checkpoint);
  }
  tr_gpu_close(s->gpu);
  tr_host_free(s->in, L->gpu);
  free(s->work);
  free(s->scratch);
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
  if (!detected && idem && L->run->ft_check > 0 && unit(draw(0x5eed, tile, i, 3)) < L->run->ft_check) {
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
    launch_args a = {L, s, params, *w, s->out, STAGE_KERNEL, 0, tile};
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
    const int device_fault = rc == TR_GPU_FAULT && L->trk && seq >= 0;
    if (device_fault) __atomic_add_fetch(&L->gpu_faults, 1, __ATOMIC_RELAXED);
    if (rc && !device_fault)
      return rc == TR_GPU_FAULT ? tr_fail(err, TR_EINTERNAL, "%s (--ft replay runs such launches again on the CPU)",
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

int tr_launch_tile(tr_launcher *L, tr_launch_slot *s, const void *params, const tr_window *w, int64_t tile, void *out,
                   tr_error *err) {
  s->out = out;
  /* the output buffer is the tile's own: registered for its launches only */
  if (L->trk && ft_region_add(L->trk, out, cell_bytes(L->k, w), NULL))
    return tr_fail(err, TR_EINTERNAL, "fault tolerance: tile %lld: output buffer already tracked", (long long)tile);
  const int st = launch_all(L, s, params, w, tile, err);
  if (L->trk) ft_region_remove(L->trk, out);
  s->out = NULL;
  return st;
}
