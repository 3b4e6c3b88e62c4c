/*
 * halving.c - pipelined recursive-halving allreduce and reduce
 * (specs/halving-allreduce.md, after IBM CN101206588).
 *
 * Distribution (reduce-scatter by recursive halving). Ranks that survive the
 * non-power-of-two fold (below) are numbered 0..p2-1 ("virtual ranks"). In
 * step k = 0..log2(p2)-1 virtual rank v pairs with v ^ 2^k; both own the same
 * element range [lo, hi), split it at the element boundary
 * mid = lo + (hi - lo) / 2, and the lower one keeps [lo, mid) while the upper
 * keeps [mid, hi). Each sends the half it gives up. The half travels in S
 * segments (coll_nsegments: opts.segments, or more when a segment would
 * exceed opts.max_segment_bytes) and at most one segment per direction is in
 * flight: after segment j arrives, segment j+1 is posted (MPI_Isend /
 * MPI_Irecv) and only then is segment j reduced into the kept half, so the
 * reduction of j overlaps the transfer of j+1. The first step reads the
 * caller's send buffer and writes the receive buffer directly (three-operand
 * kernels), so the send buffer is never copied nor written. After log2(p2)
 * steps each virtual rank owns 1/p2 of the fully reduced vector; the ranges
 * of every step are remembered for the collection phase.
 *
 * Collection. Allreduce: the steps are replayed backwards, each pair
 * swapping the halves they own (recursive doubling), after which everybody
 * has the whole vector. Reduce: a binomial gather replayed backwards too
 * (round m = p2/2 .. 1: virtual ranks with bit m set and < 2m send all they
 * own to v - m). The spec's wording (v mod 2^(k+1) == 2^k sends, low bit
 * first) assumes halving with a descending mask; with the ascending mask the
 * spec also prescribes, going from the high bit down is what keeps every
 * message one contiguous range. The traffic is the same.
 *
 * Non-power-of-two N (fold). p2 = largest power of two <= N, rem = N - p2.
 * Among ranks 0..2rem-1 each odd rank sends its whole vector to the even rank
 * below, which reduces it (even = left operand) and continues as virtual rank
 * r/2; ranks >= 2rem become r - rem. Allreduce sends the result back to the
 * folded ranks at the end.
 *
 * Operand order. A virtual rank always stands for a contiguous block of
 * natural ranks, and in every exchange the lower block is the left operand,
 * so non-commutative user ops get r0 op r1 op ... op rN-1. A reduce to a root
 * other than 0 relabels ranks (rank - root mod N) for commutative ops so the
 * root is virtual 0; non-commutative ops are computed on natural ranks to
 * rank 0, which forwards the result to the root.
 *
 * Small vectors. Below opts.small_bytes the halving's log2(p2) latencies per
 * phase cost more than the bandwidth it saves: allreduce then uses recursive
 * doubling on whole vectors and reduce a binomial tree (same fold, same
 * operand order). The default cut-off comes from scripts/bench/allreduce.
 *
 * All traffic is on the context's private communicator; a collective's
 * messages between one pair use distinct tags per phase and step, and MPI's
 * non-overtaking order matches segment j with segment j.
 */
#include "coll_internal.h"
#include "coll_live.h"

#include <stdlib.h>
#include <string.h>

static int check_args(coll_ctx *c, const void *send, size_t count, const coll_op *op,
                      coll_dtype dt, coll_opdesc *d) {
  if (!c) return COLL_EINVAL;
  int rc = coll_op_resolve(op, dt, d);
  if (rc) return coll_fail(c, rc, "unsupported operation/datatype combination");
  if (count > 0 && !send) return coll_fail(c, COLL_EINVAL, "NULL send buffer");
  if (count > ((size_t)1 << 62) / d->es) return coll_fail(c, COLL_EINVAL, "count too large");
  return COLL_OK;
}

#ifdef TERRAFORT_HAVE_MPI

enum {
  TAG_FOLD = 1,
  TAG_UNFOLD = 2,
  TAG_ROOTFWD = 3,
  TAG_RS = 16,      /* + step */
  TAG_AG = 64,      /* + step */
  TAG_GATHER = 112, /* + step */
  TAG_SMALL = 160   /* + step */
};

#define CHUNK ((size_t)1 << 30)

/* Completes n requests: MPI_Waitall without a liveness monitor, otherwise
 * polled, ending with COLL_ELOST / COLL_ECANCELED (coll_ctx_gone) when a
 * rank is lost or the caller cancels (the requests then stay live). */
int coll_waitn(coll_ctx *c, int n, void *reqs) {
  MPI_Request *q = reqs;
  if (!c->opts.live && !c->opts.cancel)
    return MPI_Waitall(n, q, MPI_STATUSES_IGNORE) == MPI_SUCCESS ? COLL_OK : coll_fail(c, COLL_EMPI, "MPI_Waitall failed");
  for (int spins = 0;; spins++) {
    /* asked before any progress: once quiesced, none (coll_live_quiesce;
     * finding a loss quiesces first, so the cheap flag is enough here) */
    if (coll_live_quiescent(c->opts.live)) return coll_ctx_gone(c);
    int done = 0;
    if (MPI_Testall(n, q, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return coll_fail(c, COLL_EMPI, "MPI_Testall failed");
    if (done) return COLL_OK;
    int rc = coll_ctx_gone(c);
    if (rc) return rc;
    if (spins > 256) coll_sleep_ms(0.05);
  }
}

int coll_recv_probed(coll_ctx *c, void *buf, int len, void *msg) {
  MPI_Request q;
  if (MPI_Imrecv(buf, len, MPI_BYTE, (MPI_Message *)msg, &q) != MPI_SUCCESS)
    return coll_fail(c, COLL_EMPI, "MPI_Imrecv failed");
  return coll_waitn(c, 1, &q);
}

/* Transfers in chunks below INT_MAX bytes, each completed through coll_waitn. */
static int xsend(coll_ctx *c, const void *buf, size_t bytes, int dest, int tag) {
  const char *p = buf;
  do {
    size_t n = bytes < CHUNK ? bytes : CHUNK;
    MPI_Request q;
    if (MPI_Isend(p, (int)n, MPI_BYTE, dest, tag, c->comm, &q) != MPI_SUCCESS)
      return coll_fail(c, COLL_EMPI, "MPI_Send to rank %d failed", dest);
    int rc = coll_waitn(c, 1, &q);
    if (rc) return rc;
    p += n;
    bytes -= n;
  } while (bytes > 0);
  return COLL_OK;
}

static int xrecv(coll_ctx *c, void *buf, size_t bytes, int src, int tag) {
  char *p = buf;
  do {
    size_t n = bytes < CHUNK ? bytes : CHUNK;
    MPI_Request q;
    if (MPI_Irecv(p, (int)n, MPI_BYTE, src, tag, c->comm, &q) != MPI_SUCCESS)
      return coll_fail(c, COLL_EMPI, "MPI_Recv from rank %d failed", src);
    int rc = coll_waitn(c, 1, &q);
    if (rc) return rc;
    p += n;
    bytes -= n;
  } while (bytes > 0);
  return COLL_OK;
}

static int xsendrecv(coll_ctx *c, const void *sb, size_t sbytes, void *rb, size_t rbytes,
                     int peer, int tag) {
  const char *s = sb;
  char *r = rb;
  while (sbytes > 0 || rbytes > 0) {
    MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    size_t ns = sbytes < CHUNK ? sbytes : CHUNK, nr = rbytes < CHUNK ? rbytes : CHUNK;
    if (nr > 0 && MPI_Irecv(r, (int)nr, MPI_BYTE, peer, tag, c->comm, &q[0]) != MPI_SUCCESS)
      return coll_fail(c, COLL_EMPI, "MPI_Irecv from rank %d failed", peer);
    if (ns > 0 && MPI_Isend(s, (int)ns, MPI_BYTE, peer, tag, c->comm, &q[1]) != MPI_SUCCESS)
      return coll_fail(c, COLL_EMPI, "MPI_Isend to rank %d failed", peer);
    int rc = coll_waitn(c, 2, q);
    if (rc) return rc;
    s += ns;
    r += nr;
    sbytes -= ns;
    rbytes -= nr;
  }
  return COLL_OK;
}

/* Rank layout of one collective: fold parameters and relabelling base. */
typedef struct {
  int n, p2, rem, base, me, vrank, steps;
} layout;

static void layout_init(layout *L, int n, int rank, int base) {
  L->n = n;
  L->p2 = 1;
  L->steps = 0;
  while (L->p2 * 2 <= n) { L->p2 *= 2; L->steps++; }
  L->rem = n - L->p2;
  L->base = base;
  L->me = (rank - base + n) % n;
  if (L->me < 2 * L->rem) L->vrank = (L->me & 1) ? -1 : L->me / 2;
  else L->vrank = L->me - L->rem;
}

/* Real rank of virtual rank v. */
static int real_of(const layout *L, int v) {
  int r = v < L->rem ? 2 * v : v + L->rem;
  return (r + L->base) % L->n;
}

static int real_rel(const layout *L, int rel) { return (rel + L->base) % L->n; }

/* One halving step: send nsend elements at sendp, receive nkeep elements into
 * tmp, and out = mine (op) received in the kept range, segment by segment. */
static int rs_step(coll_ctx *c, const coll_opdesc *d, int step, int partner, int lower,
                   const char *sendp, size_t nsend, const char *mine, char *out, size_t nkeep,
                   char *tmp) {
  const size_t es = d->es;
  const size_t ss = coll_nsegments(c, nsend, es), sr = coll_nsegments(c, nkeep, es);
  const size_t nseg = ss > sr ? ss : sr;
  const int tag = TAG_RS + step;
  const int tracing = c->trace != NULL;
  MPI_Request rq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}, sq = MPI_REQUEST_NULL;

#define SB(j) ((j) * nsend / ss)
#define RB(j) ((j) * nkeep / sr)
  for (size_t j = 0; j <= nseg; j++) {
    /* Post segment j (the first iteration) or j+1 happens below; here j is
     * the segment to post at the top of iteration 0 only. */
    if (j == 0) {
      if (sr > 0) {
        size_t n = RB(1) - RB(0);
        if (MPI_Irecv(tmp, (int)(n * es), MPI_BYTE, partner, tag, c->comm, &rq[0]) != MPI_SUCCESS)
          return coll_fail(c, COLL_EMPI, "MPI_Irecv failed");
        coll_trace_add(c, COLL_EV_POST_RECV, step, 0, -1, n * es);
      }
      if (ss > 0) {
        size_t n = SB(1) - SB(0);
        if (MPI_Isend(sendp, (int)(n * es), MPI_BYTE, partner, tag, c->comm, &sq) != MPI_SUCCESS)
          return coll_fail(c, COLL_EMPI, "MPI_Isend failed");
        coll_trace_add(c, COLL_EV_POST_SEND, step, 0, -1, n * es);
      }
    }
    if (j == nseg) break;
    if (j < sr) {
      int rc = coll_waitn(c, 1, &rq[j & 1]);
      if (rc) return rc;
      coll_trace_add(c, COLL_EV_RECV_DONE, step, (int)j, -1, 0);
    }
    if (j < ss) {
      int rc = coll_waitn(c, 1, &sq);
      if (rc) return rc;
      coll_trace_add(c, COLL_EV_SEND_DONE, step, (int)j, -1, 0);
    }
    if (j + 1 < sr) {
      size_t a = RB(j + 1), n = RB(j + 2) - a;
      if (MPI_Irecv(tmp + a * es, (int)(n * es), MPI_BYTE, partner, tag, c->comm,
                    &rq[(j + 1) & 1]) != MPI_SUCCESS)
        return coll_fail(c, COLL_EMPI, "MPI_Irecv failed");
      coll_trace_add(c, COLL_EV_POST_RECV, step, (int)j + 1, -1, n * es);
    }
    if (j + 1 < ss) {
      size_t a = SB(j + 1), n = SB(j + 2) - a;
      if (MPI_Isend(sendp + a * es, (int)(n * es), MPI_BYTE, partner, tag, c->comm, &sq) !=
          MPI_SUCCESS)
        return coll_fail(c, COLL_EMPI, "MPI_Isend failed");
      coll_trace_add(c, COLL_EV_POST_SEND, step, (int)j + 1, -1, n * es);
    }
    if (j < sr) {
      size_t a = RB(j), n = RB(j + 1) - a;
      if (tracing) {
        int pending = -1;
        if (j + 1 < sr) {
          int flag = 0;
          MPI_Request_get_status(rq[(j + 1) & 1], &flag, MPI_STATUS_IGNORE);
          pending = !flag;
        }
        coll_trace_add(c, COLL_EV_REDUCE_BEGIN, step, (int)j, pending, n * es);
      }
      coll_apply(d, mine + a * es, tmp + a * es, out + a * es, n, lower);
      coll_trace_add(c, COLL_EV_REDUCE_END, step, (int)j, -1, n * es);
      c->counters.elems_reduced += n;
    }
  }
#undef SB
#undef RB
  if (step < COLL_MAX_STEPS) {
    c->counters.step_sent[step] += nsend * es;
    c->counters.step_recv[step] += nkeep * es;
  }
  return COLL_OK;
}

/* Reduce-scatter over the virtual ranks. On return acc[rlo[last]..] holds
 * this rank's reduced block; rlo/rhi hold the shared range of every step. */
static int reduce_scatter(coll_ctx *c, const coll_opdesc *d, const layout *L, const char *src,
                          char *acc, size_t count, char *tmp, size_t *rlo, size_t *rhi) {
  const size_t es = d->es;
  size_t lo = 0, hi = count;
  for (int k = 0; k < L->steps; k++) {
    int m = 1 << k;
    int lower = (L->vrank & m) == 0;
    int partner = real_of(L, L->vrank ^ m);
    size_t mid = lo + (hi - lo) / 2;
    size_t klo = lower ? lo : mid, khi = lower ? mid : hi;
    size_t slo = lower ? mid : lo, shi = lower ? hi : mid;
    const char *base = k == 0 ? src : acc;
    rlo[k] = lo;
    rhi[k] = hi;
    int rc = rs_step(c, d, k, partner, lower, base + slo * es, shi - slo, base + klo * es,
                     acc + klo * es, khi - klo, tmp);
    if (rc) return rc;
    lo = klo;
    hi = khi;
  }
  return COLL_OK;
}

static int allgather_doubling(coll_ctx *c, const layout *L, char *acc, size_t es,
                              const size_t *rlo, const size_t *rhi) {
  for (int k = L->steps - 1; k >= 0; k--) {
    int m = 1 << k;
    int lower = (L->vrank & m) == 0;
    size_t lo = rlo[k], hi = rhi[k], mid = lo + (hi - lo) / 2;
    size_t mlo = lower ? lo : mid, mhi = lower ? mid : hi;
    size_t tlo = lower ? mid : lo, thi = lower ? hi : mid;
    int rc = xsendrecv(c, acc + mlo * es, (mhi - mlo) * es, acc + tlo * es, (thi - tlo) * es,
                       real_of(L, L->vrank ^ m), TAG_AG + k);
    if (rc) return rc;
    c->counters.collect_sent += (mhi - mlo) * es;
    c->counters.collect_recv += (thi - tlo) * es;
  }
  return COLL_OK;
}

static int gather_binomial(coll_ctx *c, const layout *L, char *acc, size_t es,
                           const size_t *rlo, const size_t *rhi) {
  for (int k = L->steps - 1; k >= 0; k--) {
    int m = 1 << k;
    if (L->vrank >= 2 * m) continue;
    size_t lo = rlo[k], hi = rhi[k], mid = lo + (hi - lo) / 2;
    if (L->vrank & m) {
      /* Upper partner: owns [mid, hi) of this step's range; hand it over. */
      int rc = xsend(c, acc + mid * es, (hi - mid) * es, real_of(L, L->vrank - m), TAG_GATHER + k);
      c->counters.collect_sent += (hi - mid) * es;
      return rc;
    }
    int rc = xrecv(c, acc + mid * es, (hi - mid) * es, real_of(L, L->vrank + m), TAG_GATHER + k);
    if (rc) return rc;
    c->counters.collect_recv += (hi - mid) * es;
  }
  return COLL_OK;
}

/* Whole-vector recursive doubling (allreduce) or binomial tree (reduce to
 * virtual 0) for small vectors. acc already holds this rank's data. */
static int small_path(coll_ctx *c, const coll_opdesc *d, const layout *L, char *acc,
                      size_t count, char *tmp, int all) {
  const size_t bytes = count * d->es;
  for (int k = 0; k < L->steps; k++) {
    int m = 1 << k;
    int lower = (L->vrank & m) == 0;
    int rc;
    if (all) {
      rc = xsendrecv(c, acc, bytes, tmp, bytes, real_of(L, L->vrank ^ m), TAG_SMALL + k);
      c->counters.small_sent += bytes;
    } else if (!lower) {
      rc = xsend(c, acc, bytes, real_of(L, L->vrank - m), TAG_SMALL + k);
      c->counters.small_sent += bytes;
      return rc;
    } else {
      rc = xrecv(c, tmp, bytes, real_of(L, L->vrank + m), TAG_SMALL + k);
    }
    if (rc) return rc;
    c->counters.small_recv += bytes;
    coll_apply(d, acc, tmp, acc, count, lower);
    c->counters.elems_reduced += count;
  }
  return COLL_OK;
}

/* The common body of allreduce (all = 1) and reduce (all = 0, result at
 * relabelled rank 0 in acc). */
static int run(coll_ctx *c, const coll_opdesc *d, const layout *L, const char *send, char *acc,
               size_t count, int all) {
  const size_t es = d->es, bytes = count * es;
  char *tmp = coll_scratch(c, 0, bytes);
  if (!tmp) return coll_fail(c, COLL_ENOMEM, "no memory for %zu bytes of scratch", bytes);
  const char *src = send;
  int rc = COLL_OK;

  if (L->me < 2 * L->rem) {
    if (L->me & 1) {
      rc = xsend(c, send, bytes, real_rel(L, L->me - 1), TAG_FOLD);
      c->counters.fold_sent += bytes;
    } else {
      rc = xrecv(c, tmp, bytes, real_rel(L, L->me + 1), TAG_FOLD);
      c->counters.fold_recv += bytes;
      if (!rc) {
        coll_apply(d, send, tmp, acc, count, 1);
        c->counters.elems_reduced += count;
        src = acc;
      }
    }
    if (rc) return rc;
  }

  if (L->vrank >= 0) {
    if (bytes < c->opts.small_bytes) {
      if (src != acc) memcpy(acc, src, bytes);
      rc = small_path(c, d, L, acc, count, tmp, all);
    } else {
      size_t rlo[COLL_MAX_STEPS], rhi[COLL_MAX_STEPS];
      c->counters.halving_calls++;
      if (L->steps == 0 && src != acc) memcpy(acc, src, bytes);
      rc = reduce_scatter(c, d, L, src, acc, count, tmp, rlo, rhi);
      if (!rc) rc = all ? allgather_doubling(c, L, acc, es, rlo, rhi)
                        : gather_binomial(c, L, acc, es, rlo, rhi);
    }
    if (rc) return rc;
  }

  if (all && L->me < 2 * L->rem) {
    if (L->me & 1) {
      rc = xrecv(c, acc, bytes, real_rel(L, L->me - 1), TAG_UNFOLD);
      c->counters.fold_recv += bytes;
    } else {
      rc = xsend(c, acc, bytes, real_rel(L, L->me + 1), TAG_UNFOLD);
      c->counters.fold_sent += bytes;
    }
  }
  return rc;
}

#endif /* TERRAFORT_HAVE_MPI */

int coll_allreduce(coll_ctx *c, const void *send, void *recv, size_t count, coll_dtype dt,
                   const coll_op *op) {
  coll_opdesc d;
  int rc = check_args(c, send, count, op, dt, &d);
  if (rc) return rc;
  if (count > 0 && !recv) return coll_fail(c, COLL_EINVAL, "NULL receive buffer");
  c->counters.calls++;
  coll_inject_delay(c);
  if (c->size == 1 || count == 0) {
    if (count > 0 && send != recv) memcpy(recv, send, count * d.es);
    return COLL_OK;
  }
#ifdef TERRAFORT_HAVE_MPI
  layout L;
  layout_init(&L, c->size, c->rank, 0);
  return run(c, &d, &L, send, recv, count, 1);
#else
  return coll_fail(c, COLL_ENOTSUP, "built without MPI");
#endif
}

int coll_reduce(coll_ctx *c, const void *send, void *recv, size_t count, coll_dtype dt,
                const coll_op *op, int root) {
  coll_opdesc d;
  int rc = check_args(c, send, count, op, dt, &d);
  if (rc) return rc;
  if (root < 0 || root >= c->size) return coll_fail(c, COLL_EINVAL, "root %d out of range", root);
  if (c->rank == root && count > 0 && !recv)
    return coll_fail(c, COLL_EINVAL, "NULL receive buffer at the root");
  c->counters.calls++;
  coll_inject_delay(c);
  if (c->size == 1 || count == 0) {
    if (count > 0 && send != recv) memcpy(recv, send, count * d.es);
    return COLL_OK;
  }
#ifdef TERRAFORT_HAVE_MPI
  const size_t bytes = count * d.es;
  layout L;
  layout_init(&L, c->size, c->rank, d.commutative ? root : 0);
  char *acc = c->rank == root ? recv : coll_scratch(c, 1, bytes);
  if (!acc) return coll_fail(c, COLL_ENOMEM, "no memory for %zu bytes of scratch", bytes);
  rc = run(c, &d, &L, send, acc, count, 0);
  if (rc) return rc;
  if (L.base != root) {
    /* Non-commutative op to a root other than 0: rank 0 forwards. */
    if (c->rank == 0) {
      rc = xsend(c, acc, bytes, root, TAG_ROOTFWD);
      c->counters.collect_sent += bytes;
    } else if (c->rank == root) {
      rc = xrecv(c, recv, bytes, 0, TAG_ROOTFWD);
      c->counters.collect_recv += bytes;
    }
  }
  return rc;
#else
  return coll_fail(c, COLL_ENOTSUP, "built without MPI");
#endif
}
