/*
 * timeout_agg.c - timeout aggregation over a k-ary tree of ranks
 * (specs/timeout-aggregation.md, after Huawei's application of 2021-12-03).
 *
 * The tree. Ranks are relabelled rel = (rank - root) mod N; rel's children
 * are rel*k+1 .. rel*k+k, its parent (rel-1)/k. Every rank is a compute node
 * (it contributes its own vector); ranks with children are also interior
 * nodes ("sub-switches"), rel 0 is the root.
 *
 * Interior nodes. An interior node waits for its children. Its timer starts
 * at the first child's arrival and lasts the threshold of its depth d
 * (threshold_ms * (H - d) for a tree of height H unless overridden, so a node
 * always waits longer than the interior children below it); if no child
 * arrives at all it gives up entry_cap_ms after entry (default: its own
 * threshold, which is shorter than its parent's, so the parent still gets
 * the node's own contribution in time). It then folds what it
 * has - own vector first, then children by index, so floating point is
 * reproducible (deterministic mode; otherwise each arrival is folded as it
 * comes) - and sends one DATA message up carrying the contribution bitmap
 * (the ranks folded in; the late ones are the missing bits). For each child
 * that did not arrive it keeps a bypass entry {child, operation id}, frees
 * everything else and records t_released in the report.
 *
 * The root. If its bitmap holds every rank it sends RESULT to everybody and
 * the TAN never hears of the operation. Otherwise it sends PARTIAL to the
 * TAN. Only one of the two ever happens, so there is a single decider per
 * operation: the root when nothing is late, the TAN otherwise.
 *
 * Late data. When a late child's DATA finally arrives, its parent finds the
 * bypass entry, deletes it (single use; a second copy is dropped) and
 * forwards the message unchanged but typed LATE straight to the TAN; nobody
 * on the way aggregates it.
 *
 * Late data of a reduce (root_only). There only the root needs the result,
 * so an interior node other than the root does not stay for its late
 * children: at its release it tells each of them RELEASED and returns. A
 * late child that finds RELEASED from its parent when it comes to send sends
 * its data straight to the TAN, typed LATE (the source's "send straight to
 * the TAN with the flag set"); so the late data goes to the aggregation node
 * and no interior node waits for it. Should the child's DATA have left
 * before the notice arrived, the parent keeps the bypass entry in the
 * context and forwards that DATA to the TAN when it next meets it (its next
 * operation, or the drain of coll_ctx_destroy).
 *
 * Snapshots (snapshot, a reduce whose TAN is the root). The root returns
 * what it folded at its release, naming the missing ranks as late, and
 * never waits for their data: a late message reaches the root in a later
 * operation, or in coll_ctx_destroy's drain, and is dropped as stale. A
 * progress figure wants that: a fresh partial now rather than a complete
 * one once the slowest rank answers.
 *
 * The TAN (chosen by every rank with the same rule: a fixed rank, a hash of
 * the operation id, or the root) collects PARTIAL and LATE pieces, drops a
 * piece whose bitmap overlaps what it already has (it would count a rank
 * twice) and, once the union is every rank, folds the pieces in the preset
 * order of their lowest rank and sends RESULT to every rank. Its deadline
 * starts with the first piece: if ranks are still missing deadline_ms later
 * it sends ERROR naming them to every rank, so nobody hangs. A rank that
 * hears nothing at all (decider dead) gives up after a generous fallback.
 *
 * Operation ids. Every message carries the id of its operation (counted per
 * context). A message of an earlier operation is stale and dropped; one of a
 * later operation (a fast rank already in op k+1) is stashed in the context
 * until this rank gets there. So late data of op k never mixes into op k+1.
 *
 * Transport. One tag on the context's private ta_comm; receives use
 * MPI_Improbe + MPI_Imrecv, completed at once through the monitored wait
 * (no receive is left posted unless its sender stopped mid-message), sends are
 * MPI_Isend into buffers kept in the context until the request completes.
 * coll_ctx_destroy drains whatever is still in flight (see comm.c).
 */
#include "coll_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void coll_ta_opts_init(coll_ta_opts *o) {
  memset(o, 0, sizeof *o);
  o->arity = 2;
  o->root = 0;
  o->threshold_ms = 100;
  o->entry_cap_ms = 0;
  o->deadline_ms = 2000;
  o->tan_policy = COLL_TAN_FIXED;
  o->tan_rank = 0;
  o->deterministic = 1;
}

static int depth_of(int rel, int k) {
  int d = 0;
  while (rel > 0) { rel = (rel - 1) / k; d++; }
  return d;
}

int coll_ta_depth(const coll_ta_opts *o, int nranks, int rank) {
  if (nranks <= 0 || o->arity < 2) return -1;
  return depth_of(((rank - o->root) % nranks + nranks) % nranks, o->arity);
}

double coll_ta_threshold_ms(const coll_ta_opts *o, int nranks, int depth) {
  if (depth >= 0 && depth < COLL_TA_MAX_LEVELS && o->level_threshold_ms[depth] > 0)
    return o->level_threshold_ms[depth];
  int h = nranks > 0 ? depth_of(nranks - 1, o->arity < 2 ? 2 : o->arity) : 0;
  int levels = h - depth;
  return o->threshold_ms * (levels > 0 ? levels : 1);
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

static int tan_of(const coll_ta_opts *o, int n, uint64_t opid) {
  switch (o->tan_policy) {
  case COLL_TAN_HASHED: return (int)(mix64(opid + 0x9e3779b97f4a7c15ULL) % (uint64_t)n);
  case COLL_TAN_ROOT: return o->root;
  default: return o->tan_rank;
  }
}

static void report_begin(coll_ta_report *r, const char *alg, uint64_t opid, int n, int rank,
                         const coll_ta_opts *o, int tan, double t) {
  memset(r, 0, sizeof *r);
  r->algorithm = alg;
  r->op_id = opid;
  r->nranks = n;
  r->rank = rank;
  r->root = o->root;
  r->tan_rank = tan;
  r->arity = o->arity;
  r->depth = coll_ta_depth(o, n, rank);
  r->t_entry = t;
  r->t_sent = r->t_first_arrival = r->t_released = -1;
  r->release_ms = -1;
}

#ifdef TERRAFORT_HAVE_MPI

/* Appends the ranks set in bits, comma-separated, to buf. */
static void list_ranks(char *buf, size_t cap, const uint64_t *bits, int n) {
  size_t len = strlen(buf);
  int shown = 0;
  for (int r = 0; r < n && len + 16 < cap; r++) {
    if (!((bits[r / 64] >> (r % 64)) & 1u)) continue;
    len += (size_t)snprintf(buf + len, cap - len, "%s%d", shown ? ", " : "", r);
    shown++;
  }
}

enum { TAG_TA = 7 };
enum { MSG_DATA = 1, MSG_LATE, MSG_PARTIAL, MSG_RESULT, MSG_ERROR, MSG_RELEASED };

typedef struct {
  uint32_t type;
  int32_t origin;   /* DATA/LATE: the child whose subtree this is */
  uint64_t opid;
  uint64_t bytes;   /* payload bytes */
  uint32_t nw;      /* bitmap words */
  uint32_t pad;
} hdr;

static uint64_t *msg_bits(unsigned char *m) { return (uint64_t *)(m + sizeof(hdr)); }
static unsigned char *msg_payload(unsigned char *m) {
  return m + sizeof(hdr) + ((hdr *)m)->nw * sizeof(uint64_t);
}

/* Sends a message (copying bits and payload); the buffer lives in the
 * context until MPI is done with it. */
static int post(coll_ctx *c, int dest, uint32_t type, int origin, uint64_t opid,
                const uint64_t *bits, int nw, const void *payload, size_t bytes) {
  size_t len = sizeof(hdr) + (size_t)nw * 8 + bytes;
  if (len > (size_t)1 << 30) return coll_fail(c, COLL_EINVAL, "timeout aggregation message too large");
  if (c->nsends == c->capsends) {
    size_t cap = c->capsends ? 2 * c->capsends : 16;
    coll_pending_send *p = realloc(c->sends, cap * sizeof *p);
    if (!p) return coll_fail(c, COLL_ENOMEM, "no memory for a send");
    c->sends = p;
    c->capsends = cap;
  }
  unsigned char *m = malloc(len);
  if (!m) return coll_fail(c, COLL_ENOMEM, "no memory for a send");
  hdr h = {type, origin, opid, bytes, (uint32_t)nw, 0};
  memcpy(m, &h, sizeof h);
  if (nw) memcpy(msg_bits(m), bits, (size_t)nw * 8);
  if (bytes) memcpy(msg_payload(m), payload, bytes);
  coll_pending_send *s = &c->sends[c->nsends];
  if (MPI_Isend(m, (int)len, MPI_BYTE, dest, TAG_TA, c->ta_comm, &s->req) != MPI_SUCCESS) {
    free(m);
    return coll_fail(c, COLL_EMPI, "MPI_Isend to rank %d failed", dest);
  }
  s->buf = m;
  c->nsends++;
  return COLL_OK;
}

/* Forwards a received message as-is with a new type. Takes ownership. */
static int forward(coll_ctx *c, int dest, uint32_t type, unsigned char *m, size_t len) {
  if (c->nsends == c->capsends) {
    size_t cap = c->capsends ? 2 * c->capsends : 16;
    coll_pending_send *p = realloc(c->sends, cap * sizeof *p);
    if (!p) { free(m); return coll_fail(c, COLL_ENOMEM, "no memory for a send"); }
    c->sends = p;
    c->capsends = cap;
  }
  ((hdr *)m)->type = type;
  coll_pending_send *s = &c->sends[c->nsends];
  if (MPI_Isend(m, (int)len, MPI_BYTE, dest, TAG_TA, c->ta_comm, &s->req) != MPI_SUCCESS) {
    free(m);
    return coll_fail(c, COLL_EMPI, "MPI_Isend to rank %d failed", dest);
  }
  s->buf = m;
  c->nsends++;
  return COLL_OK;
}

/* One operation in progress on this rank. */
typedef struct {
  coll_ctx *c;
  const coll_opdesc *d;
  const coll_ta_opts *o;
  coll_ta_report *rep;
  const void *send;
  void *recv;
  size_t count, bytes;
  int n, nw, me, rel, k, tan;
  uint64_t opid;

  /* interior role */
  int nchild, child0;        /* children are rel child0 .. child0+nchild-1 */
  int collecting;
  int arrived;
  unsigned char **child_msg; /* deterministic mode: the children's messages */
  unsigned char *acc;        /* running aggregate (own first) */
  uint64_t *accbits;
  int have_acc;
  char *bypass;              /* per child: 1 while a bypass entry exists */
  double t_start, t_first, thr, cap;

  /* TAN role */
  unsigned char **pieces;
  int npieces;
  uint64_t *tanbits;
  double tan_deadline;       /* < 0: no piece yet */

  int released;              /* root_only: the parent released without this rank's data */

  int done, rc;
} ta_op;

static int real_of(const ta_op *t, int rel) { return (rel + t->o->root) % t->n; }
static int rel_of(const ta_op *t, int rank) { return (rank - t->o->root + t->n) % t->n; }

static int bits_full(const uint64_t *b, int n) {
  for (int r = 0; r < n; r++)
    if (!((b[r / 64] >> (r % 64)) & 1u)) return 0;
  return 1;
}
static int bits_overlap(const uint64_t *a, const uint64_t *b, int nw) {
  for (int i = 0; i < nw; i++)
    if (a[i] & b[i]) return 1;
  return 0;
}
static int bits_lowest(const uint64_t *b, int nw) {
  for (int i = 0; i < nw; i++)
    if (b[i]) {
      int j = 0;
      while (!((b[i] >> j) & 1u)) j++;
      return i * 64 + j;
    }
  return 1 << 30;
}
static int bits_empty(const uint64_t *b, int nw) {
  for (int i = 0; i < nw; i++)
    if (b[i]) return 0;
  return 1;
}

/* acc (op)= payload of m, bitmap united. The caller ensures disjointness. */
static void fold_in(ta_op *t, unsigned char *m) {
  uint64_t *b = msg_bits(m);
  if (!t->have_acc) {
    memcpy(t->acc, msg_payload(m), t->bytes);
    t->have_acc = 1;
  } else {
    coll_apply(t->d, t->acc, msg_payload(m), t->acc, t->count, 1);
  }
  for (int i = 0; i < t->nw; i++) t->accbits[i] |= b[i];
}

/* The report's late-rank list from a bitmap of ranks (late, or missing). */
static void report_ranks(coll_ta_report *r, const uint64_t *bits, int n) {
  r->nlate = 0;
  for (int x = 0; x < n; x++)
    if ((bits[x / 64] >> (x % 64)) & 1u) {
      if (r->nlate < COLL_REPORT_MAX_LATE) r->late_ranks[r->nlate] = x;
      r->nlate++;
    }
}

static void finish_ok(ta_op *t, const unsigned char *result, const uint64_t *late) {
  if (t->count) memcpy(t->recv, result, t->bytes);
  report_ranks(t->rep, late, t->n);
  t->done = 1;
  t->rc = COLL_OK;
}

static void finish_error(ta_op *t, const uint64_t *missing, int from) {
  char *e = t->c->errmsg;
  snprintf(e, sizeof t->c->errmsg,
           "timeout aggregation op %llu: no contribution from rank(s) ",
           (unsigned long long)t->opid);
  list_ranks(e, sizeof t->c->errmsg, missing, t->n);
  size_t len = strlen(e);
  snprintf(e + len, sizeof t->c->errmsg - len, " within the deadline (%.0f ms at TAN %d)",
           t->o->deadline_ms, from);
  report_ranks(t->rep, missing, t->n);
  t->done = 1;
  t->rc = COLL_ETIMEDOUT;
}

/* Decider: send RESULT (with the late bitmap) to every other rank, take it here. */
static int decide_result(ta_op *t, const unsigned char *result, const uint64_t *late) {
  for (int r = 0; r < t->n; r++) {
    if (r == t->me || (t->o->root_only && r != t->o->root)) continue;
    int rc = post(t->c, r, MSG_RESULT, t->me, t->opid, late, t->nw, result, t->bytes);
    if (rc) return rc;
  }
  finish_ok(t, result, late);
  return COLL_OK;
}

static int tan_try_finish(ta_op *t) {
  if (!bits_full(t->tanbits, t->n)) return COLL_OK;
  /* Preset order: pieces by their lowest rank. */
  for (int i = 1; i < t->npieces; i++)
    for (int j = i; j > 0 && bits_lowest(msg_bits(t->pieces[j]), t->nw) <
                                 bits_lowest(msg_bits(t->pieces[j - 1]), t->nw); j--) {
      unsigned char *x = t->pieces[j];
      t->pieces[j] = t->pieces[j - 1];
      t->pieces[j - 1] = x;
    }
  unsigned char *res = malloc(t->bytes ? t->bytes : 1);
  uint64_t *late = calloc((size_t)t->nw, 8);
  if (!res || !late) { free(res); free(late); return coll_fail(t->c, COLL_ENOMEM, "no memory"); }
  for (int i = 0; i < t->npieces; i++) {
    unsigned char *m = t->pieces[i];
    if (i == 0) memcpy(res, msg_payload(m), t->bytes);
    else coll_apply(t->d, res, msg_payload(m), res, t->count, 1);
    if (((hdr *)m)->type == MSG_LATE)
      for (int w = 0; w < t->nw; w++) late[w] |= msg_bits(m)[w];
  }
  int rc = decide_result(t, res, late);
  free(res);
  free(late);
  return rc;
}

static int handle(ta_op *t, int src, unsigned char *m, size_t len);
static int receive(ta_op *t, int source, int *rc);

/* Every message the parent has sent this rank so far (a RELEASED among them
 * sets t->released). */
static void take_released(ta_op *t, int parent, int *rc) {
  while (!*rc && receive(t, parent, rc)) {
  }
}

static int keep_bypass(coll_ctx *c, int child, int tan, uint64_t opid) {
  if (c->nbypass == c->capbypass) {
    size_t cap = c->capbypass ? 2 * c->capbypass : 8;
    struct coll_bypass *b = realloc(c->bypass, cap * sizeof *b);
    if (!b) return coll_fail(c, COLL_ENOMEM, "no memory for a bypass entry");
    c->bypass = b;
    c->capbypass = cap;
  }
  c->bypass[c->nbypass++] = (struct coll_bypass){.child = child, .tan = tan, .opid = opid};
  return COLL_OK;
}

int coll_ta_take_late(coll_ctx *c, int source, int tag, unsigned char *m, size_t len) {
  if (tag != TAG_TA || len < sizeof(hdr) || ((hdr *)m)->type != MSG_DATA) return 0;
  for (size_t i = 0; i < c->nbypass; i++)
    if (c->bypass[i].child == source && c->bypass[i].opid == ((hdr *)m)->opid) {
      const int tan = c->bypass[i].tan;
      c->bypass[i] = c->bypass[--c->nbypass]; /* single use */
      (void)forward(c, tan, MSG_LATE, m, len);
      return 1;
    }
  return 0;
}

/* The interior (or leaf) contribution: fold, send up or decide, release. */
static int finish_collect(ta_op *t) {
  coll_ctx *c = t->c;
  int rc = COLL_OK;
  if (t->child_msg) {
    /* Deterministic: children in index order after the own vector. */
    for (int i = 0; i < t->nchild; i++)
      if (t->child_msg[i]) fold_in(t, t->child_msg[i]);
  }
  for (int i = 0; i < t->nchild; i++)
    t->bypass[i] = t->child_msg ? t->child_msg[i] == NULL : t->bypass[i];
  int dup = c->opts.inject.duplicate_rank == t->me;
  if (t->rel == 0) {
    if (t->have_acc && bits_full(t->accbits, t->n)) {
      uint64_t *none = calloc((size_t)t->nw, 8);
      if (!none) return coll_fail(c, COLL_ENOMEM, "no memory");
      rc = decide_result(t, t->acc, none);
      free(none);
    } else if (t->have_acc && t->o->snapshot) {
      /* a snapshot: what arrived is the answer, the missing are named */
      uint64_t *missing = calloc((size_t)t->nw, 8);
      if (!missing) return coll_fail(c, COLL_ENOMEM, "no memory");
      for (int i = 0; i < t->nw; i++) missing[i] = ~t->accbits[i];
      if (t->n % 64) missing[t->nw - 1] &= ((uint64_t)1 << (t->n % 64)) - 1;
      finish_ok(t, t->acc, missing);
      free(missing);
    } else if (t->have_acc) {
      rc = post(c, t->tan, MSG_PARTIAL, t->me, t->opid, t->accbits, t->nw, t->acc, t->bytes);
    }
  } else if (t->have_acc) {
    int parent = real_of(t, (t->rel - 1) / t->k);
    if (t->o->root_only) take_released(t, parent, &rc);
    if (!rc && t->released) {
      /* the parent has gone on without it: straight to the TAN */
      rc = post(c, t->tan, MSG_LATE, t->me, t->opid, t->accbits, t->nw, t->acc, t->bytes);
      t->rep->late_direct++;
    }
    for (int i = 0; i <= dup && !rc && !t->released; i++)
      rc = post(c, parent, MSG_DATA, t->me, t->opid, t->accbits, t->nw, t->acc, t->bytes);
  }
  /* A reduce's interior node other than the root does not wait for its late
   * children: each is told, and its entry kept in the context should its
   * data come here anyway. */
  if (!rc && t->o->root_only && t->rel != 0)
    for (int i = 0; i < t->nchild && !rc; i++) {
      if (!t->bypass[i]) continue;
      const int child = real_of(t, t->child0 + i);
      rc = keep_bypass(c, child, t->tan, t->opid);
      if (!rc) rc = post(c, child, MSG_RELEASED, t->me, t->opid, t->accbits, t->nw, NULL, 0);
      t->bypass[i] = 0;
    }
  t->rep->t_sent = coll_now();
  /* Release: only the bypass entries survive. */
  if (t->child_msg) {
    for (int i = 0; i < t->nchild; i++) free(t->child_msg[i]);
    free(t->child_msg);
    t->child_msg = NULL;
  }
  free(t->acc);
  t->acc = NULL;
  t->collecting = 0;
  if (t->nchild > 0) {
    t->rep->t_released = coll_now();
    double from = t->t_first >= 0 ? t->t_first : t->t_start;
    t->rep->release_ms = (t->rep->t_released - from) * 1e3;
  }
  return rc;
}

/* Handles one message of this operation. Takes ownership of m. */
static int handle(ta_op *t, int src, unsigned char *m, size_t len) {
  coll_ctx *c = t->c;
  hdr *h = (hdr *)m;
  if (len < sizeof(hdr) || h->nw != (uint32_t)t->nw ||
      len != sizeof(hdr) + (size_t)h->nw * 8 + h->bytes ||
      ((h->type == MSG_DATA || h->type == MSG_LATE || h->type == MSG_PARTIAL ||
        h->type == MSG_RESULT) && h->bytes != t->bytes)) {
    free(m);
    return coll_fail(c, COLL_EINVAL, "malformed timeout-aggregation message from rank %d "
                     "(ranks disagree on count or datatype?)", src);
  }
  switch (h->type) {
  case MSG_DATA: {
    int ci = rel_of(t, src) - t->child0;
    if (ci < 0 || ci >= t->nchild) { free(m); t->rep->dropped_duplicates++; return COLL_OK; }
    if (t->collecting) {
      int seen = t->child_msg ? t->child_msg[ci] != NULL : t->bypass[ci] == 0;
      if (seen || bits_overlap(msg_bits(m), t->accbits, t->nw)) {
        free(m);
        t->rep->dropped_duplicates++;
        return COLL_OK;
      }
      if (t->t_first < 0) {
        t->t_first = coll_now();
        t->rep->t_first_arrival = t->t_first;
      }
      t->arrived++;
      if (t->child_msg) t->child_msg[ci] = m;
      else { fold_in(t, m); t->bypass[ci] = 0; free(m); }
      return COLL_OK;
    }
    if (t->bypass[ci]) {
      /* Late child: single-use bypass entry, flag and forward to the TAN. */
      t->bypass[ci] = 0;
      t->rep->late_forwarded++;
      return forward(c, t->tan, MSG_LATE, m, len);
    }
    free(m);
    t->rep->dropped_duplicates++;
    return COLL_OK;
  }
  case MSG_LATE:
  case MSG_PARTIAL: {
    if (t->me != t->tan) { free(m); t->rep->dropped_duplicates++; return COLL_OK; }
    t->rep->tan_msgs++;
    if (h->type == MSG_LATE) t->rep->late_msgs_at_tan++;
    if (bits_empty(msg_bits(m), t->nw) || bits_overlap(msg_bits(m), t->tanbits, t->nw)) {
      free(m);
      t->rep->dropped_duplicates++;
      return COLL_OK;
    }
    if (t->tan_deadline < 0) t->tan_deadline = coll_now() + t->o->deadline_ms * 1e-3;
    unsigned char **p = realloc(t->pieces, (size_t)(t->npieces + 1) * sizeof *p);
    if (!p) { free(m); return coll_fail(c, COLL_ENOMEM, "no memory"); }
    t->pieces = p;
    t->pieces[t->npieces++] = m;
    for (int i = 0; i < t->nw; i++) t->tanbits[i] |= msg_bits(m)[i];
    return tan_try_finish(t);
  }
  case MSG_RESULT:
    finish_ok(t, msg_payload(m), msg_bits(m));
    free(m);
    return COLL_OK;
  case MSG_RELEASED:
    if (t->rel != 0 && src == real_of(t, (t->rel - 1) / t->k)) t->released = 1;
    free(m);
    return COLL_OK;
  case MSG_ERROR:
    finish_error(t, msg_bits(m), src);
    free(m);
    return COLL_OK;
  default:
    free(m);
    return COLL_OK;
  }
}

/* Receives one waiting message from source (MPI_ANY_SOURCE: any) if any; 1
 * when one was handled. */
static int receive(ta_op *t, int source, int *rc) {
  coll_ctx *c = t->c;
  int flag = 0;
  MPI_Status st;
  MPI_Message msg;
  MPI_Improbe(source, TAG_TA, c->ta_comm, &flag, &msg, &st);
  if (!flag) return 0;
  int len = 0;
  MPI_Get_count(&st, MPI_BYTE, &len);
  unsigned char *m = malloc(len > 0 ? (size_t)len : 1);
  if (!m) { *rc = coll_fail(c, COLL_ENOMEM, "no memory"); return 1; }
  /* bounded: its sender may stop mid-message (m then stays with the request) */
  if ((*rc = coll_recv_probed(c, m, len, &msg)) != 0) return 1;
  if ((size_t)len < sizeof(hdr)) { free(m); return 1; }
  uint64_t id = ((hdr *)m)->opid;
  if (id < t->opid) {
    if (coll_ta_take_late(c, st.MPI_SOURCE, TAG_TA, m, (size_t)len)) {
      t->rep->late_forwarded++;
    } else {
      free(m);
      t->rep->dropped_stale++;
    }
  } else if (id > t->opid) {
    coll_msg *e = malloc(sizeof *e), **tail = &c->early;
    if (!e) { free(m); *rc = coll_fail(c, COLL_ENOMEM, "no memory"); return 1; }
    e->next = NULL;
    e->source = st.MPI_SOURCE;
    e->len = (size_t)len;
    e->buf = m;
    while (*tail) tail = &(*tail)->next;
    *tail = e;
  } else {
    *rc = handle(t, st.MPI_SOURCE, m, (size_t)len);
  }
  return 1;
}

static int run_tree(ta_op *t) {
  coll_ctx *c = t->c;
  const coll_ta_opts *o = t->o;
  int rc = COLL_OK;

  t->child0 = t->rel * t->k + 1;
  t->nchild = 0;
  for (int i = 0; i < t->k && t->child0 + i < t->n; i++) t->nchild++;
  t->rep->interior = t->nchild > 0;
  t->thr = coll_ta_threshold_ms(o, t->n, t->rep->depth);
  t->cap = o->entry_cap_ms > 0 ? o->entry_cap_ms : t->thr;
  t->acc = malloc(t->bytes ? t->bytes : 1);
  t->accbits = calloc((size_t)t->nw, 8);
  t->bypass = calloc((size_t)t->nchild + 1, 1);
  t->tanbits = calloc((size_t)t->nw, 8);
  if (o->deterministic && t->nchild) t->child_msg = calloc((size_t)t->nchild, sizeof *t->child_msg);
  if (!t->acc || !t->accbits || !t->bypass || !t->tanbits ||
      (o->deterministic && t->nchild && !t->child_msg))
    return coll_fail(c, COLL_ENOMEM, "no memory");
  t->tan_deadline = -1;
  t->t_first = -1;
  for (int i = 0; i < t->nchild; i++) t->bypass[i] = 1; /* fold-on-arrival mode: 1 = missing */

  coll_inject_delay(c);
  t->t_start = coll_now();
  if (c->opts.inject.drop_rank != t->me) {
    if (t->count) memcpy(t->acc, t->send, t->bytes);
    t->have_acc = 1;
    t->accbits[t->me / 64] |= (uint64_t)1 << (t->me % 64);
  }
  t->collecting = 1;

  /* Messages of this op that arrived while we were in an earlier one. */
  for (coll_msg **pp = &c->early; *pp && !rc;) {
    coll_msg *e = *pp;
    uint64_t id = e->len >= sizeof(hdr) ? ((hdr *)e->buf)->opid : 0;
    if (id > t->opid) { pp = &e->next; continue; }
    *pp = e->next;
    if (id == t->opid) rc = handle(t, e->source, e->buf, e->len);
    else { free(e->buf); t->rep->dropped_stale++; }
    free(e);
  }

  const double fallback = t->t_start + (2 * o->deadline_ms + 4 * coll_ta_threshold_ms(o, t->n, 0) +
                                        t->cap + 1000) * 1e-3;
  while (!rc && !t->done) {
    /* before any progress: once gone, none (coll_live_quiesce) */
    if ((rc = coll_ctx_gone(c)) != 0) break;
    int got = receive(t, MPI_ANY_SOURCE, &rc);
    if (rc) break;
    double now = coll_now();
    if (t->collecting) {
      int all = t->arrived == t->nchild;
      int expired = t->t_first >= 0 ? now >= t->t_first + t->thr * 1e-3
                                    : now >= t->t_start + t->cap * 1e-3;
      if (all || expired) {
        rc = finish_collect(t);
        continue;
      }
    }
    if (t->me == t->tan && t->tan_deadline >= 0 && now >= t->tan_deadline) {
      uint64_t *missing = calloc((size_t)t->nw, 8);
      if (!missing) { rc = coll_fail(c, COLL_ENOMEM, "no memory"); break; }
      for (int i = 0; i < t->nw; i++) missing[i] = ~t->tanbits[i];
      if (t->n % 64) missing[t->nw - 1] &= ((uint64_t)1 << (t->n % 64)) - 1;
      for (int r = 0; r < t->n && !rc; r++)
        if (r != t->me) rc = post(c, r, MSG_ERROR, t->me, t->opid, missing, t->nw, NULL, 0);
      finish_error(t, missing, t->me);
      free(missing);
      break;
    }
    if (o->root_only && t->me != o->root && !t->collecting) {
      /* a reduce: this rank's part is done once no late child can still
         need forwarding */
      int held = 0;
      for (int i = 0; i < t->nchild; i++) held |= t->bypass[i];
      if (!held) {
        t->done = 1;
        t->rc = COLL_OK;
        t->rep->nlate = 0;
        break;
      }
    }
    if (now >= fallback) {
      rc = coll_fail(c, COLL_ETIMEDOUT,
                     "timeout aggregation op %llu: no result or error from the root or TAN %d",
                     (unsigned long long)t->opid, t->tan);
      break;
    }
    coll_ctx_reap_sends(c);
    if (!got) coll_sleep_ms(0.1);
  }
  if (!rc) rc = t->rc;
  return rc;
}

static void op_free(ta_op *t) {
  if (t->child_msg) {
    for (int i = 0; i < t->nchild; i++) free(t->child_msg[i]);
    free(t->child_msg);
  }
  for (int i = 0; i < t->npieces; i++) free(t->pieces[i]);
  free(t->pieces);
  free(t->acc);
  free(t->accbits);
  free(t->bypass);
  free(t->tanbits);
}

#endif /* TERRAFORT_HAVE_MPI */

int coll_timeout_reduce(coll_ctx *c, const void *send, void *recv, size_t count, coll_dtype dt,
                        const coll_op *op, const coll_ta_opts *o_in, coll_ta_report *rep_out) {
  if (!c) return COLL_EINVAL;
  coll_opdesc d;
  int rc = coll_op_resolve(op, dt, &d);
  if (rc) return coll_fail(c, rc, "unsupported operation/datatype combination");
  if (!d.commutative)
    return coll_fail(c, COLL_EINVAL, "timeout aggregation needs a commutative operation");
  if (count > 0 && (!send || !recv)) return coll_fail(c, COLL_EINVAL, "NULL buffer");
  coll_ta_opts o;
  if (o_in) o = *o_in; else coll_ta_opts_init(&o);
  if (o.arity < 2 || o.root < 0 || o.root >= c->size || o.threshold_ms <= 0 ||
      o.deadline_ms <= 0 || (o.tan_policy == COLL_TAN_FIXED && (o.tan_rank < 0 || o.tan_rank >= c->size)) ||
      (o.snapshot && (!o.root_only || tan_of(&o, c->size, c->ta_next_op) != o.root)))
    return coll_fail(c, COLL_EINVAL, "invalid timeout aggregation options");
  coll_ta_report scratch_rep, *rep = rep_out ? rep_out : &scratch_rep;
  uint64_t opid = c->ta_next_op++;
  int tan = tan_of(&o, c->size, opid);
  double t0 = coll_now();
  if (c->size == 1) {
    report_begin(rep, "local", opid, 1, 0, &o, tan, t0);
    coll_inject_delay(c);
    if (count && send != recv) memcpy(recv, send, count * d.es);
    rep->t_sent = rep->t_done = coll_now();
    rep->waited_ms = (rep->t_done - t0) * 1e3;
    return COLL_OK;
  }
#ifdef TERRAFORT_HAVE_MPI
  report_begin(rep, "timeout-tree", opid, c->size, c->rank, &o, tan, t0);
  ta_op t;
  memset(&t, 0, sizeof t);
  t.c = c;
  t.d = &d;
  t.o = &o;
  t.rep = rep;
  t.send = send;
  t.recv = recv;
  t.count = count;
  t.bytes = count * d.es;
  t.n = c->size;
  t.nw = (c->size + 63) / 64;
  t.me = c->rank;
  t.rel = (c->rank - o.root + c->size) % c->size;
  t.k = o.arity;
  t.tan = tan;
  t.opid = opid;
  rc = run_tree(&t);
  op_free(&t);
  rep->t_done = coll_now();
  rep->waited_ms = (rep->t_done - t0) * 1e3;
  return rc;
#else
  return coll_fail(c, COLL_ENOTSUP, "built without MPI");
#endif
}
