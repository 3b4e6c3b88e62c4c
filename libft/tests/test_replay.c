/*
 * test_replay.c - the idempotence tracker and replay (ft.h, tracker
 * section; specs/idempotent-replay.md, "what an implementation must show"):
 * the source's worked example, outside writes, freed-and-reused addresses,
 * re-running an idempotent launch, relaunch sets for in-place chains (fault
 * found at once and after consumers read it), the checkpoint fallback,
 * the error limit, a short history, and tracking from every OpenMP thread.
 * Every repaired buffer is compared with a fault-free run done by plain code
 * here, and pgvmap is compared before and after each repair.
 */
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "ft.h"
#include "tr_test.h"

/* ---- small launch functions over float arrays -------------------------- */
enum { OP_ADD = 0, OP_SCALE = 1, OP_SMOOTH = 2, OP_ACC = 3 };

typedef struct {
  int op;
  const float *a, *b;  /* inputs */
  float *out;
  int n;
  float k;
  int *calls;          /* counts runs (may be NULL) */
} vec_args;

/* OP_ADD out = a + b; OP_SCALE out = k a; OP_SMOOTH out smoothed in place
 * (Gauss-Seidel: each cell the mean of its already-updated left neighbour,
 * itself and its right neighbour); OP_ACC out += a. */
static int vec_fn(void *p) {
  vec_args *v = p;
  if (v->calls) __atomic_add_fetch(v->calls, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < v->n; i++) {
    switch (v->op) {
      case OP_ADD: v->out[i] = v->a[i] + v->b[i]; break;
      case OP_SCALE: v->out[i] = v->k * v->a[i]; break;
      case OP_ACC: v->out[i] += v->a[i]; break;
      default: {
        const float l = i > 0 ? v->out[i - 1] : v->out[i], r = i + 1 < v->n ? v->out[i + 1] : v->out[i];
        v->out[i] = (l + v->out[i] + r) / 3.0f;
      }
    }
  }
  return 0;
}

static int launch(ft_tracker *t, uint64_t af, vec_args a, const void *const *in, int nin, void *out, int64_t *seq) {
  ft_range ri[4], ro = {out, (size_t)a.n * sizeof(float)};
  for (int i = 0; i < nin; i++) ri[i] = (ft_range){in[i], (size_t)a.n * sizeof(float)};
  ft_launch l = {af, ri, nin, &ro, 1, vec_fn, &a, sizeof a};
  return ft_track_launch(t, &l, seq);
}

static void flip(float *x, int i, int bit) {
  uint32_t u;
  memcpy(&u, &x[i], 4);
  u ^= 1u << bit;
  memcpy(&x[i], &u, 4);
}

static void fill(float *x, int n, float s) {
  for (int i = 0; i < n; i++) x[i] = s + 0.25f * (float)((i * 7919) % 97);
}

/* (1) the source's worked example */
static int test_worked_example(void) {
  enum { N = 8 };
  float a[N], b[N], c[N], d[N], e[N];
  fill(a, N, 1), fill(b, N, 2), fill(c, N, 0), fill(d, N, 3), fill(e, N, 4);
  ft_tracker *t;
  ASSERT_EQ_INT(ft_tracker_create(NULL, &t), 0);
  float *r[5] = {a, b, c, d, e};
  for (int i = 0; i < 5; i++) ASSERT_EQ_INT(ft_region_add(t, r[i], sizeof a, NULL), 0);
  /* a at v2, b at v4, c at v2: writes before the AFs (host writes) */
  for (int i = 0; i < 2; i++) ASSERT_EQ_INT(ft_region_write(t, a, sizeof a), 0);
  for (int i = 0; i < 4; i++) ASSERT_EQ_INT(ft_region_write(t, b, sizeof b), 0);
  for (int i = 0; i < 2; i++) ASSERT_EQ_INT(ft_region_write(t, c, sizeof c), 0);
  int64_t sb, sc;
  const void *inb[2] = {a, b}, *inc[2] = {d, e};
  ASSERT_EQ_INT(launch(t, 'b', (vec_args){OP_ADD, a, b, c, N, 0, NULL}, inb, 2, c, &sb), 0); /* c = a + b */
  ASSERT_EQ_INT(launch(t, 'c', (vec_args){OP_ADD, d, e, d, N, 0, NULL}, inc, 2, d, &sc), 0); /* d = d + e */
  const int64_t want[5] = {2, 4, 3, 1, 0};
  for (int i = 0; i < 5; i++) ASSERT_EQ_INT(ft_region_version(t, r[i]), want[i]);
  ft_launch_info ib, ic;
  ASSERT_EQ_INT(ft_track_info(t, sb, &ib), 0);
  ASSERT_EQ_INT(ft_track_info(t, sc, &ic), 0);
  ASSERT_EQ_INT(ib.af, 'b');
  ASSERT_EQ_INT(ib.nin, 2);
  ASSERT_EQ_INT(ib.in[0].region, ft_region_id(t, a));
  ASSERT_EQ_INT(ib.in[0].version, 2);
  ASSERT_EQ_INT(ib.in[1].version, 4);
  ASSERT_EQ_INT(ib.out[0].region, ft_region_id(t, c));
  ASSERT_EQ_INT(ib.out[0].version, 3);
  ASSERT_EQ_INT(ib.idempotent, 1);
  /* AF c's sub-table: in {d:0, e:0}, out {d:1} */
  ASSERT_EQ_INT(ic.nin, 2);
  ASSERT_EQ_INT(ic.in[0].region, ft_region_id(t, d));
  ASSERT_EQ_INT(ic.in[0].version, 0);
  ASSERT_EQ_INT(ic.in[1].region, ft_region_id(t, e));
  ASSERT_EQ_INT(ic.in[1].version, 0);
  ASSERT_EQ_INT(ic.nout, 1);
  ASSERT_EQ_INT(ic.out[0].region, ft_region_id(t, d));
  ASSERT_EQ_INT(ic.out[0].version, 1);
  ASSERT_EQ_INT(ic.idempotent, 0);
  ft_track_report rep;
  ft_track_report_get(t, &rep);
  ASSERT_EQ_INT(rep.launches, 2);
  ASSERT_EQ_INT(rep.idempotent, 1);
  /* AF c's relaunch set cannot be formed: d:0 was written by the host */
  int64_t set[8];
  int n = -1;
  ASSERT_EQ_INT(ft_track_relaunch_set(t, sc, set, 8, &n), FT_ERR_NOREPLAY);
  /* AF b repairs by running again */
  float cref[N];
  memcpy(cref, c, sizeof c);
  flip(c, 3, 30);
  ft_repair how;
  ASSERT_EQ_INT(ft_track_error(t, sb, &how), 0);
  ASSERT_EQ_INT(how.how, FT_REPAIR_RERUN);
  ASSERT_EQ_INT(how.launches, 1);
  ASSERT(memcmp(c, cref, sizeof c) == 0);
  for (int i = 0; i < 5; i++) ASSERT_EQ_INT(ft_region_version(t, r[i]), want[i]); /* no bump */
  ft_tracker_destroy(t);
  return 0;
}

/* (2) an outside write to a region at v5 makes it v6 and every older entry invalid */
static int test_outside_write_invalidates(void) {
  enum { N = 16 };
  float x[N], y[N];
  fill(x, N, 1), fill(y, N, 0);
  ft_tracker *t;
  ASSERT_EQ_INT(ft_tracker_create(NULL, &t), 0);
  ASSERT_EQ_INT(ft_region_add(t, x, sizeof x, NULL), 0);
  ASSERT_EQ_INT(ft_region_add(t, y, sizeof y, NULL), 0);
  const void *in[1] = {x};
  int64_t s[5];
  for (int i = 0; i < 5; i++) /* y = 2x, five times: y at v5 */
    ASSERT_EQ_INT(launch(t, 1, (vec_args){OP_SCALE, x, NULL, y, N, 2, NULL}, in, 1, y, &s[i]), 0);
  ASSERT_EQ_INT(ft_region_version(t, y), 5);
  ft_launch_info li;
  for (int i = 0; i < 5; i++) {
    ASSERT_EQ_INT(ft_track_info(t, s[i], &li), 0);
    ASSERT_EQ_INT(li.out[0].valid, 1);
  }
  /* a sub-range (a "halo strip") resolves to the region */
  ASSERT_EQ_INT(ft_region_write(t, y + 4, 4 * sizeof(float)), 0);
  ASSERT_EQ_INT(ft_region_version(t, y), 6);
  ASSERT_EQ_INT(ft_region_version(t, y + 9), 6);
  for (int i = 0; i < 5; i++) {
    ASSERT_EQ_INT(ft_track_info(t, s[i], &li), 0);
    ASSERT_EQ_INT(li.out[0].version, i + 1);
    ASSERT_EQ_INT(li.out[0].valid, 0);
    ASSERT_EQ_INT(li.in[0].valid, 1); /* x was not written */
  }
  /* a launch after the write reads y:6, valid */
  int64_t s6;
  const void *iny[1] = {y};
  float z[N];
  ASSERT_EQ_INT(ft_region_add(t, z, sizeof z, NULL), 0);
  ASSERT_EQ_INT(launch(t, 2, (vec_args){OP_SCALE, y, NULL, z, N, 1, NULL}, iny, 1, z, &s6), 0);
  ASSERT_EQ_INT(ft_track_info(t, s6, &li), 0);
  ASSERT_EQ_INT(li.in[0].version, 6);
  ASSERT_EQ_INT(li.in[0].valid, 1);
  /* ranges outside every region are refused, nothing runs */
  float loose[N];
  int calls = 0;
  const void *inl[1] = {loose};
  ASSERT_EQ_INT(launch(t, 3, (vec_args){OP_SCALE, loose, NULL, z, N, 1, &calls}, inl, 1, z, NULL), FT_ERR_INVAL);
  ASSERT_EQ_INT(calls, 0);
  ASSERT_EQ_INT(ft_region_add(t, y + 2, sizeof(float), NULL), FT_ERR_INVAL); /* overlaps y */
  ft_tracker_destroy(t);
  return 0;
}

/* (gap) a region freed and registered again at the same address is a new
 * generation: version 0, a new id, and the old entries never match it */
static int test_freed_and_reused(void) {
  enum { N = 32 };
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  fill(x, N, 1);
  ft_tracker *t;
  ASSERT_EQ_INT(ft_tracker_create(NULL, &t), 0);
  uint64_t idx, idy1, idy2;
  ASSERT_EQ_INT(ft_region_add(t, x, N * sizeof *x, &idx), 0);
  ASSERT_EQ_INT(ft_region_add(t, y, N * sizeof *y, &idy1), 0);
  const void *in[1] = {y};
  int64_t s1, s2, s3;
  /* y = 2x then y += x in place (needs its producer s1) */
  const void *inx[1] = {x};
  ASSERT_EQ_INT(launch(t, 1, (vec_args){OP_SCALE, x, NULL, y, N, 2, NULL}, inx, 1, y, &s1), 0);
  const void *inxy[2] = {x, y};
  ASSERT_EQ_INT(launch(t, 2, (vec_args){OP_ACC, x, NULL, y, N, 0, NULL}, inxy, 2, y, &s2), 0);
  int64_t set[8];
  int n;
  ASSERT_EQ_INT(ft_track_relaunch_set(t, s2, set, 8, &n), 0);
  ASSERT_EQ_INT(n, 2);
  ASSERT_EQ_INT(ft_region_remove(t, y), 0);
  ASSERT_EQ_INT(ft_region_version(t, y), -1);
  ASSERT_EQ_INT(ft_region_add(t, y, N * sizeof *y, &idy2), 0); /* same address */
  ASSERT(idy2 != idy1);
  ASSERT_EQ_INT(ft_region_id(t, y), idy2);
  ASSERT_EQ_INT(ft_region_version(t, y), 0);
  ft_launch_info li;
  ASSERT_EQ_INT(ft_track_info(t, s2, &li), 0);
  ASSERT_EQ_INT(li.out[0].region, idy1);
  ASSERT_EQ_INT(li.out[0].valid, 0);
  /* the old launch can no longer be repaired by a relaunch set */
  ASSERT_EQ_INT(ft_track_relaunch_set(t, s2, set, 8, &n), FT_ERR_NOREPLAY);
  /* a new launch on the new generation: version 1, never the old entries' */
  ASSERT_EQ_INT(launch(t, 3, (vec_args){OP_SCALE, x, NULL, y, N, 3, NULL}, inx, 1, y, &s3), 0);
  ASSERT_EQ_INT(ft_track_info(t, s3, &li), 0);
  ASSERT_EQ_INT(li.out[0].region, idy2);
  ASSERT_EQ_INT(li.out[0].version, 1);
  ASSERT_EQ_INT(li.out[0].valid, 1);
  (void)in;
  ft_tracker_destroy(t);
  free(x);
  free(y);
  return 0;
}

/* An in-place chain: p1 w = 2 inbuf (out of place), p2..pK smooth w in place. */
typedef struct {
  float in[64], w[64];
  int64_t seq[8];
} chain;

static int run_chain(ft_tracker *t, chain *c, int passes, int fault_after, int *calls) {
  const int N = 64;
  const void *in[1] = {c->in}, *inw[1] = {c->w};
  if (launch(t, 100, (vec_args){OP_SCALE, c->in, NULL, c->w, N, 2, calls}, in, 1, c->w, &c->seq[0])) return 1;
  if (fault_after == 0) flip(c->w, 5, 29);
  for (int p = 1; p < passes; p++) {
    if (launch(t, 100 + (uint64_t)p, (vec_args){OP_SMOOTH, NULL, NULL, c->w, N, 0, calls}, inw, 1, c->w, &c->seq[p]))
      return 1;
    if (fault_after == p) flip(c->w, 17, 28);
  }
  return 0;
}

static void reference(chain *ref, int passes) {
  ft_tracker *t;
  ft_tracker_create(NULL, &t);
  ft_region_add(t, ref->in, sizeof ref->in, NULL);
  ft_region_add(t, ref->w, sizeof ref->w, NULL);
  run_chain(t, ref, passes, -1, NULL);
  ft_tracker_destroy(t);
}

static int versions(ft_tracker *t, chain *c, int64_t v[2]) {
  v[0] = ft_region_version(t, c->in);
  v[1] = ft_region_version(t, c->w);
  return 0;
}

/* (4) a fault in an in-place pass, found at once: the relaunch set is the
 * chain up to it, in order */
static int test_relaunch_inplace_chain(void) {
  chain ref, c;
  fill(ref.in, 64, 3);
  memcpy(c.in, ref.in, sizeof c.in);
  reference(&ref, 4);
  ft_tracker *t;
  ASSERT_EQ_INT(ft_tracker_create(NULL, &t), 0);
  ASSERT_EQ_INT(ft_region_add(t, c.in, sizeof c.in, NULL), 0);
  ASSERT_EQ_INT(ft_region_add(t, c.w, sizeof c.w, NULL), 0);
  int calls = 0;
  ASSERT_EQ_INT(run_chain(t, &c, 3, 2, &calls), 0); /* passes 0..2, fault in pass 2 */
  ASSERT_EQ_INT(calls, 3);
  int64_t set[8], v0[2], v1[2];
  int n;
  ASSERT_EQ_INT(ft_track_relaunch_set(t, c.seq[2], set, 8, &n), 0);
  ASSERT_EQ_INT(n, 3);
  for (int i = 0; i < 3; i++) ASSERT_EQ_INT(set[i], c.seq[i]);
  versions(t, &c, v0);
  ft_repair how;
  ASSERT_EQ_INT(ft_track_error(t, c.seq[2], &how), 0);
  ASSERT_EQ_INT(how.how, FT_REPAIR_RELAUNCH);
  ASSERT_EQ_INT(how.launches, 3);
  ASSERT_EQ_INT(calls, 6);
  versions(t, &c, v1);
  ASSERT_EQ_INT(v0[0], v1[0]);
  ASSERT_EQ_INT(v0[1], v1[1]);
  /* the fourth pass continues from repaired data: same bytes as the reference */
  const void *inw[1] = {c.w};
  ASSERT_EQ_INT(launch(t, 103, (vec_args){OP_SMOOTH, NULL, NULL, c.w, 64, 0, NULL}, inw, 1, c.w, &c.seq[3]), 0);
  ASSERT(memcmp(c.w, ref.w, sizeof c.w) == 0);
  ft_track_report r;
  ft_track_report_get(t, &r);
  ASSERT_EQ_INT(r.errors, 1);
  ASSERT_EQ_INT(r.relaunch_sets, 1);
  ASSERT_EQ_INT(r.relaunch_launches, 3);
  ASSERT_EQ_INT(r.relaunch_max, 3);
  ASSERT_EQ_INT(r.launches, 4);
  ASSERT_EQ_INT(r.idempotent, 1);
  ft_tracker_destroy(t);
  return 0;
}

/* (gap) the fault is found after later passes read the corrupt data: the
 * set takes the consumers too (backward) */
static int test_relaunch_late_detection(void) {
  chain ref, c;
  fill(ref.in, 64, 5);
  memcpy(c.in, ref.in, sizeof c.in);
  reference(&ref, 5);
  ft_tracker *t;
  ASSERT_EQ_INT(ft_tracker_create(NULL, &t), 0);
  ASSERT_EQ_INT(ft_region_add(t, c.in, sizeof c.in, NULL), 0);
  ASSERT_EQ_INT(ft_region_add(t, c.w, sizeof c.w, NULL), 0);
  ASSERT_EQ_INT(run_chain(t, &c, 5, 1, NULL), 0);
  ASSERT(memcmp(c.w, ref.w, sizeof c.w) != 0);
  int64_t set[8];
  int n;
  ASSERT_EQ_INT(ft_track_relaunch_set(t, c.seq[1], set, 8, &n), 0);
  ASSERT_EQ_INT(n, 5);
  ft_repair how;
  ASSERT_EQ_INT(ft_track_error(t, c.seq[1], &how), 0);
  ASSERT_EQ_INT(how.how, FT_REPAIR_RELAUNCH);
  ASSERT(memcmp(c.w, ref.w, sizeof c.w) == 0);
  ft_tracker_destroy(t);
  return 0;
}

/* (gap) an out-of-place overwrite after the repaired launch: the set also
 * re-runs the later writer, so the region ends at its latest contents */
static int test_relaunch_next_writer(void) {
  enum { N = 16 };
  float y[N], w[N], x[N], z[N];
  fill(y, N, 1), fill(w, N, 7);
  ft_tracker *t;
  ASSERT_EQ_INT(ft_tracker_create(NULL, &t), 0);
  float *r[4] = {y, w, x, z};
  for (int i = 0; i < 4; i++) ASSERT_EQ_INT(ft_region_add(t, r[i], sizeof y, NULL), 0);
  int64_t sd, sa, sc, sb;
  const void *iy[1] = {y}, *izx[2] = {z, x}, *iw[1] = {w};
  ASSERT_EQ_INT(launch(t, 'D', (vec_args){OP_SCALE, y, NULL, z, N, 1, NULL}, iy, 1, z, &sd), 0);     /* z = y */
  ASSERT_EQ_INT(launch(t, 'A', (vec_args){OP_SCALE, y, NULL, x, N, 2, NULL}, iy, 1, x, &sa), 0);     /* x = 2y */
  ASSERT_EQ_INT(launch(t, 'C', (vec_args){OP_ACC, x, NULL, z, N, 0, NULL}, izx, 2, z, &sc), 0);      /* z += x */
  ASSERT_EQ_INT(launch(t, 'B', (vec_args){OP_SCALE, w, NULL, x, N, 3, NULL}, iw, 1, x, &sb), 0);     /* x = 3w */
  float xr[N], zr[N];
  memcpy(xr, x, sizeof x);
  memcpy(zr, z, sizeof z);
  flip(z, 2, 27);
  int64_t set[8];
  int n;
  ASSERT_EQ_INT(ft_track_relaunch_set(t, sc, set, 8, &n), 0);
  ASSERT_EQ_INT(n, 4);
  ASSERT_EQ_INT(set[0], sd);
  ASSERT_EQ_INT(set[1], sa);
  ASSERT_EQ_INT(set[2], sc);
  ASSERT_EQ_INT(set[3], sb);
  ASSERT_EQ_INT(ft_track_error(t, sc, NULL), 0);
  ASSERT(memcmp(z, zr, sizeof z) == 0);
  ASSERT(memcmp(x, xr, sizeof x) == 0); /* 3w, not 2y */
  ft_tracker_destroy(t);
  return 0;
}

/* (4) the relaunch set holds an invalid entry: the checkpoint taken after
 * the input was read is restored and run forward; without one, NOREPLAY */
static int test_checkpoint_fallback(void) {
  chain ref, c;
  fill(ref.in, 64, 2);
  memcpy(c.in, ref.in, sizeof c.in);
  reference(&ref, 4);
  for (int with_cp = 1; with_cp >= 0; with_cp--) {
    ft_tracker *t;
    ASSERT_EQ_INT(ft_tracker_create(NULL, &t), 0);
    ASSERT_EQ_INT(ft_region_add(t, c.in, sizeof c.in, NULL), 0);
    ASSERT_EQ_INT(ft_region_add(t, c.w, sizeof c.w, NULL), 0);
    int64_t cp = -1;
    ft_range cr = {c.in, sizeof c.in};
    if (with_cp) ASSERT_EQ_INT(ft_checkpoint(t, &cr, 1, &cp), 0);
    const void *in[1] = {c.in}, *inw[1] = {c.w};
    int64_t s[4];
    ASSERT_EQ_INT(launch(t, 1, (vec_args){OP_SCALE, c.in, NULL, c.w, 64, 2, NULL}, in, 1, c.w, &s[0]), 0);
    ASSERT_EQ_INT(launch(t, 2, (vec_args){OP_SMOOTH, NULL, NULL, c.w, 64, 0, NULL}, inw, 1, c.w, &s[1]), 0);
    flip(c.w, 9, 30); /* pass 2's output corrupt ... */
    /* ... and a host write of the same bytes follows before it is found */
    ASSERT_EQ_INT(ft_region_write(t, c.w, sizeof c.w), 0);
    ASSERT_EQ_INT(launch(t, 3, (vec_args){OP_SMOOTH, NULL, NULL, c.w, 64, 0, NULL}, inw, 1, c.w, &s[2]), 0);
    ASSERT_EQ_INT(launch(t, 4, (vec_args){OP_SMOOTH, NULL, NULL, c.w, 64, 0, NULL}, inw, 1, c.w, &s[3]), 0);
    ft_launch_info li;
    ASSERT_EQ_INT(ft_track_info(t, s[1], &li), 0);
    ASSERT_EQ_INT(li.out[0].valid, 0);
    int64_t set[8], v0 = ft_region_version(t, c.w);
    int n;
    ASSERT_EQ_INT(ft_track_relaunch_set(t, s[1], set, 8, &n), FT_ERR_NOREPLAY);
    ft_repair how;
    const int rc = ft_track_error(t, s[1], &how);
    ft_track_report r;
    ft_track_report_get(t, &r);
    ASSERT_EQ_INT(r.searches_failed, 1);
    if (with_cp) {
      ASSERT_EQ_INT(rc, 0);
      ASSERT_EQ_INT(how.how, FT_REPAIR_CHECKPOINT);
      ASSERT_EQ_INT(how.launches, 4);
      ASSERT(memcmp(c.w, ref.w, sizeof c.w) == 0);
      ASSERT_EQ_INT(r.checkpoint_restores, 1);
      ASSERT_EQ_INT(r.checkpoint_launches, 4);
      ASSERT_EQ_INT(ft_region_version(t, c.w), v0);
      ft_checkpoint_drop(t, cp);
    } else {
      ASSERT_EQ_INT(rc, FT_ERR_NOREPLAY);
      ASSERT_EQ_INT(r.unrepaired, 1);
    }
    ft_tracker_destroy(t);
  }
  return 0;
}

/* (5) the error limit: past max_errors, FT_ERR_LIMIT and nothing runs */
static int test_error_limit(void) {
  enum { N = 8 };
  float x[N], y[N];
  fill(x, N, 1);
  ft_tracker_opts o;
  ft_tracker_opts_init(&o);
  o.max_errors = 2;
  ft_tracker *t;
  ASSERT_EQ_INT(ft_tracker_create(&o, &t), 0);
  ASSERT_EQ_INT(ft_region_add(t, x, sizeof x, NULL), 0);
  ASSERT_EQ_INT(ft_region_add(t, y, sizeof y, NULL), 0);
  int calls = 0;
  int64_t s;
  const void *in[1] = {x};
  ASSERT_EQ_INT(launch(t, 1, (vec_args){OP_SCALE, x, NULL, y, N, 2, &calls}, in, 1, y, &s), 0);
  ASSERT_EQ_INT(ft_track_error(t, s, NULL), 0);
  ASSERT_EQ_INT(ft_track_error(t, s, NULL), 0);
  ASSERT_EQ_INT(calls, 3);
  ASSERT_EQ_INT(ft_track_error(t, s, NULL), FT_ERR_LIMIT);
  ASSERT_EQ_INT(ft_track_error(t, s, NULL), FT_ERR_LIMIT);
  ASSERT_EQ_INT(calls, 3);
  ft_track_report r;
  ft_track_report_get(t, &r);
  ASSERT_EQ_INT(r.errors, 4);
  ASSERT_EQ_INT(r.reruns, 2);
  ASSERT_EQ_INT(r.limit_aborts, 2);
  ft_tracker_destroy(t);
  return 0;
}

/* a producer older than the history is forgotten: the search fails rather
 * than guess, and a checkpoint still repairs */
static int test_short_history(void) {
  chain ref, c;
  fill(ref.in, 64, 9);
  memcpy(c.in, ref.in, sizeof c.in);
  reference(&ref, 6);
  ft_tracker_opts o;
  ft_tracker_opts_init(&o);
  o.history = 3;
  ft_tracker *t;
  ASSERT_EQ_INT(ft_tracker_create(&o, &t), 0);
  ASSERT_EQ_INT(ft_region_add(t, c.in, sizeof c.in, NULL), 0);
  ASSERT_EQ_INT(ft_region_add(t, c.w, sizeof c.w, NULL), 0);
  ASSERT_EQ_INT(run_chain(t, &c, 6, 5, NULL), 0);
  int64_t set[8];
  int n;
  ASSERT_EQ_INT(ft_track_relaunch_set(t, c.seq[5], set, 8, &n), FT_ERR_NOREPLAY);
  ASSERT_EQ_INT(ft_track_error(t, c.seq[5], NULL), FT_ERR_NOREPLAY);
  ft_launch_info li;
  ASSERT_EQ_INT(ft_track_info(t, c.seq[0], &li), FT_ERR_INVAL);
  ft_tracker_destroy(t);
  return 0;
}

/* tracking from every OpenMP thread at once: each thread runs in-place
 * chains on buffers of its own, injects faults and repairs them; counts
 * are exact and every buffer ends as the sequential reference */
static int test_concurrent_threads(void) {
  const int threads = 8, rounds = 50;
  ft_tracker_opts o;
  ft_tracker_opts_init(&o);
  o.max_errors = threads * rounds;
  ft_tracker *t;
  ASSERT_EQ_INT(ft_tracker_create(&o, &t), 0);
  chain ref;
  fill(ref.in, 64, 4);
  reference(&ref, 4);
  int bad = 0;
#pragma omp parallel num_threads(threads) reduction(+ : bad)
  {
    chain *c = malloc(sizeof *c);
    const int me = omp_get_thread_num();
    for (int k = 0; k < rounds; k++) {
      memcpy(c->in, ref.in, sizeof c->in);
      if (ft_region_add(t, c->in, sizeof c->in, NULL) || ft_region_add(t, c->w, sizeof c->w, NULL)) bad++;
      const int fault = (me + k) % 4; /* a fault in pass 0..3 */
      if (run_chain(t, c, 4, fault, NULL)) bad++;
      if (ft_track_error(t, c->seq[fault], NULL)) bad++;
      /* a fault before the last pass was found late: consumers re-ran too */
      if (memcmp(c->w, ref.w, sizeof c->w)) bad++;
      ft_region_remove(t, c->in);
      ft_region_remove(t, c->w);
    }
    free(c);
  }
  ASSERT_EQ_INT(bad, 0);
  ft_track_report r;
  ft_track_report_get(t, &r);
  ASSERT_EQ_INT(r.launches, threads * rounds * 4);
  ASSERT_EQ_INT(r.idempotent, threads * rounds);
  ASSERT_EQ_INT(r.regions, threads * rounds * 2);
  ASSERT_EQ_INT(r.errors, threads * rounds);
  ASSERT_EQ_INT(r.reruns + r.relaunch_sets, threads * rounds);
  ASSERT_EQ_INT(r.relaunch_launches, (int64_t)threads * rounds * 4 - r.reruns);
  ft_tracker_destroy(t);
  return 0;
}

static int test_limit_strerror(void) {
  ASSERT(strcmp(ft_strerror(FT_ERR_LIMIT), "unknown error") != 0);
  return 0;
}

TR_MAIN(TR_TEST(test_worked_example), TR_TEST(test_outside_write_invalidates), TR_TEST(test_freed_and_reused),
        TR_TEST(test_relaunch_inplace_chain), TR_TEST(test_relaunch_late_detection),
        TR_TEST(test_relaunch_next_writer), TR_TEST(test_checkpoint_fallback), TR_TEST(test_error_limit),
        TR_TEST(test_short_history), TR_TEST(test_concurrent_threads), TR_TEST(test_limit_strerror))
