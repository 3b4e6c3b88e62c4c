/*
 * graph_ft.c - fault tolerance of graph rounds (graph_ft.h): each round of a
 * fragment computed on copies, compared (dual) or tracked and replayed
 * (replay), and only an accepted computation adopted.
 *
 * A computation ("replica" below) owns everything it writes: a copy of the
 * fragment's state (the struct of body->state_bytes and each array registered
 * inside it), a capture of its emits, Assemble's tile, private copies of
 * every window it asks for (kept to the round's end; replay too, so that a
 * memory failure in one is the round's to recover, graph_ft.h) and, under
 * dual, of the snapshot. The thread running it finds it through a thread-local pointer, which the environment's
 * calls consult (tr_graph_ft_keep/window/put). Adopting a computation's state
 * copies its struct over the fragment's (the state store's registrations
 * point into that struct, so they stay valid) and frees the old arrays.
 */
#include "graph_ft.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "draw.h"
#include "memfail.h"
#include "report_json.h"
#include "status.h"

#define MAX_REG 16
#define MAX_EXTRA 3 /* computations after the first two before a round fails */
#define MAX_WIN 4   /* windows one computation holds (each kept to its end) */
#define POOL_MAX 64
#define MEMFAIL_TRIES 8 /* computations of one round after memory failures before giving up */

/* a round's guard names its state's arrays, its window copies and its tile */
_Static_assert(MAX_REG + MAX_WIN + 1 <= TR_MEMFAIL_RANGES, "a round's buffers exceed a memory-failure guard");

/* What a computation returns when it gave up after MEMFAIL_TRIES memory
 * failures, and when the injector could not make its sigbus fault: the
 * round has no such buffer, or the signal could not be sent. */
enum { RC_MEMFAIL = -3, RC_EINJECT = -4, RC_ESEND = -5 };

enum { K_PEVAL = 0, K_INCEVAL = 1, K_ASSEMBLE = 2 };

/* An array registered inside the state struct: its pointer's offset, its
 * bytes, or elem bytes times the size_t at count_off (>= 0). */
typedef struct {
  size_t off, bytes;
  long count_off;
} reg_t;

/* The engine's state of a fragment: the accepted state and its arrays. */
typedef struct {
  int64_t id;
  void *st;
  int nreg;
  reg_t reg[MAX_REG];
  int64_t round; /* the next round's index (0: PEval) */
} box_t;

typedef struct replica {
  tr_graph_ft *ft;
  const tr_aap_frag *f;
  box_t *b;
  int kind, slot;
  int64_t round;
  /* inputs: the snapshot (private copies under dual) */
  int64_t n;
  const int64_t *cells;
  const void *vals;
  int64_t *own_cells;
  void *own_vals;
  int private_inputs;
  float *win[MAX_WIN];
  int flip_input; /* a fault to put into the first private input made */
  /* outputs */
  void *st;
  int nkeep;
  void **keep_pp[MAX_REG];
  size_t keep_bytes[MAX_REG];
  const size_t *keep_count[MAX_REG];
  int nreg;
  reg_t reg[MAX_REG];
  tr_aap_round *cap;
  void *tile;
  int put;
  int rc;
  int injected; /* a fault was put into this computation */
  double secs;
  /* memory failures (memfail.h): the guard while the computation runs (its
   * ranges are the buffers above it owns, each registered for AO reports
   * under the same index), whether the injector's sigbus fault was made
   * (once per round: never in a recomputation or a replay), and what was
   * found; rc RC_MEMFAIL / RC_EINJECT say why it failed */
  tr_memfail_guard mg;
  int guarded; /* mg is armed: the hooks add their buffers to it */
  int mf_reg[TR_MEMFAIL_RANGES];
  volatile int mf_hit; /* an AR in mg's range mg.which jumped back */
  int sigbus_done;
  /* the helper pool */
  int done;
  int orphan; /* given up on while a helper had it: the helper frees it */
  struct replica *next;
} replica;

struct tr_graph_ft {
  tr_graph_ft_opts o;
  tr_aap_program in; /* the program's own callbacks */
  const tr_graph_body *body;
  tr_graph_env *env;
  tr_state_store *ss;
  size_t state_bytes, tile_bytes_max;
  pthread_mutex_t mu; /* counts, and the windows' copies */
  tr_graph_ft_counts c;
  ft_tracker *trk;
  /* arrays of states no longer needed, kept for the next copies (a round's
   * copy is the size of the last one's: no fresh pages, no allocator) */
  pthread_mutex_t pmu;
  struct {
    size_t n;
    void *p;
  } pool[POOL_MAX];
  int npool, pool_cap;
  /* dual's helpers */
  pthread_t *th;
  struct helper_arg {
    struct tr_graph_ft *ft;
    int index;
    int64_t handed; /* computations handed back (the injected stall counts them) */
  } *harg;
  int nth;
  int orphans; /* computations given up on (await): the helpers are not joined */
  pthread_mutex_t qmu;
  pthread_cond_t qcv, dcv;
  replica *qhead, *qtail;
  int stop;
  int memfail; /* the SIGBUS handler is ours to put back at close */
};

static __thread replica *cur;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------ draws */

static uint64_t draw(uint64_t seed, int64_t frag, int64_t round, int slot, uint64_t what) {
  return tr_mix64(seed ^ tr_mix64((uint64_t)frag * 0x100000001b3ull ^ tr_mix64((uint64_t)round ^ ((uint64_t)slot << 32) ^ (what << 48))));
}


/* ------------------------------------------------------------ states */

static size_t reg_size(const void *st, const reg_t *r) {
  if (r->count_off < 0) return r->bytes;
  size_t n;
  memcpy(&n, (const char *)st + r->count_off, sizeof n);
  return r->bytes * n;
}

static void **reg_ptr(void *st, const reg_t *r) { return (void **)((char *)st + r->off); }

static void *pool_get(tr_graph_ft *ft, size_t n) {
  pthread_mutex_lock(&ft->pmu);
  for (int i = 0; i < ft->npool; i++)
    if (ft->pool[i].n == n) {
      void *p = ft->pool[i].p;
      ft->pool[i] = ft->pool[--ft->npool];
      pthread_mutex_unlock(&ft->pmu);
      return p;
    }
  pthread_mutex_unlock(&ft->pmu);
  return malloc(n ? n : 1);
}

static void pool_put(tr_graph_ft *ft, void *p, size_t n) {
  pthread_mutex_lock(&ft->pmu);
  if (ft->npool < ft->pool_cap) {
    ft->pool[ft->npool].n = n;
    ft->pool[ft->npool].p = p;
    ft->npool++;
    p = NULL;
  }
  pthread_mutex_unlock(&ft->pmu);
  free(p);
}

/* Frees a state whose registered arrays are regs: the arrays to the pool,
 * then the program's destroy for the rest (its struct). */
static void release_state(tr_graph_ft *ft, void *st, const reg_t *regs, int nreg) {
  if (!st) return;
  for (int i = 0; i < nreg; i++) {
    void **pp = reg_ptr(st, &regs[i]);
    if (*pp) pool_put(ft, *pp, reg_size(st, &regs[i]));
    *pp = NULL;
  }
  if (ft->in.destroy) ft->in.destroy(ft->in.user, st);
  else free(st);
}

/* A deep copy of the fragment's state, or NULL. */
static void *clone_state(tr_graph_ft *ft, const box_t *b) {
  void *c = malloc(ft->state_bytes);
  if (!c) return NULL;
  memcpy(c, b->st, ft->state_bytes);
  int i = 0, ok = 1;
  for (; i < b->nreg && ok; i++) {
    void **src = reg_ptr(b->st, &b->reg[i]), **dst = reg_ptr(c, &b->reg[i]);
    if (!*src) continue;
    const size_t n = reg_size(b->st, &b->reg[i]);
    void *a = pool_get(ft, n);
    if (!a) {
      ok = 0;
      *dst = NULL;
      break;
    }
    memcpy(a, *src, n);
    *dst = a;
  }
  if (ok) return c;
  /* the arrays not copied still point at the fragment's own */
  for (int j = i; j < b->nreg; j++) *reg_ptr(c, &b->reg[j]) = NULL;
  if (ft->in.destroy) ft->in.destroy(ft->in.user, c);
  else free(c);
  return NULL;
}

static void destroy_state(tr_graph_ft *ft, void *st) {
  if (!st) return;
  if (ft->in.destroy) ft->in.destroy(ft->in.user, st);
  else free(st);
}

/* The fragment's state becomes r's: r's struct is copied over the
 * fragment's, whose old arrays are freed. */
static int adopt_state(tr_graph_ft *ft, box_t *b, replica *r) {
  if (r->kind == K_PEVAL) {
    b->st = r->st;
    b->nreg = r->nreg;
    memcpy(b->reg, r->reg, sizeof r->reg);
    r->st = NULL;
    if (ft->ss)
      for (int i = 0; i < b->nreg; i++) {
        const reg_t *g = &b->reg[i];
        if (tr_state_store_keep(ft->ss, b->id, reg_ptr(b->st, g), g->bytes,
                                g->count_off >= 0 ? (const size_t *)((char *)b->st + g->count_off) : NULL))
          return -1;
      }
    return 0;
  }
  void *old = malloc(ft->state_bytes);
  if (!old) return -1;
  memcpy(old, b->st, ft->state_bytes);
  memcpy(b->st, r->st, ft->state_bytes);
  free(r->st); /* its arrays are the fragment's now */
  r->st = NULL;
  release_state(ft, old, b->reg, b->nreg);
  return 0;
}

/* ------------------------------------------------------------ outputs as bytes */

typedef struct {
  unsigned char *p;
  size_t n;
} seg_t;

#define MAX_SEG (2 * MAX_REG + 4)

/* The bytes a computation made, in a fixed order: its arrays (state), then
 * its emits' cells and values, then its tile. which: 1 the arrays and the
 * tile, 2 the emits, 4 (with 2) their values only (the injector's faults go
 * into data, not into the cells' addresses). */
enum { SEG_STATE = 1, SEG_MSGS = 2, SEG_VALUES = 4 };
static int segments(const replica *r, seg_t *s, int which) {
  int n = 0;
  if ((which & 1) && r->kind != K_ASSEMBLE) /* Assemble's output is its tile alone */
    for (int i = 0; i < r->nreg; i++) {
      void **pp = reg_ptr(r->st, &r->reg[i]);
      if (*pp) s[n++] = (seg_t){*pp, reg_size(r->st, &r->reg[i])};
    }
  if (which & 2) {
    const int64_t *cells;
    void *vals;
    int64_t work;
    const int64_t m = r->kind == K_ASSEMBLE ? 0 : tr_aap_capture_get(r->cap, &cells, &vals, &work);
    if (m > 0) {
      if (!(which & SEG_VALUES)) s[n++] = (seg_t){(unsigned char *)cells, (size_t)m * sizeof(int64_t)};
      s[n++] = (seg_t){vals, (size_t)m * r->ft->in.value_size};
    }
  }
  if ((which & 1) && r->put) s[n++] = (seg_t){r->tile, r->ft->o.cell_bytes * (size_t)(r->f->rows * r->f->cols)};
  return n;
}

static size_t total(const seg_t *s, int n) {
  size_t t = 0;
  for (int i = 0; i < n; i++) t += s[i].n;
  return t;
}

/* Flips one bit of the bytes in s: in quarter q (-1: anywhere), at h; an
 * even bit for computation (slot) 0, an odd one for 1, so that two replicas
 * never get the same flip (that common-mode fault is the one dual cannot
 * see; no injector should make it by chance). 0 when there is no byte. */
static int flip_bits(seg_t *s, int n, int q, int slot, uint64_t h) {
  const size_t t = total(s, n);
  if (!t) return 0;
  size_t lo = 0, hi = t;
  if (q >= 0) {
    lo = t * (size_t)q / 4;
    hi = t * (size_t)(q + 1) / 4;
    if (hi <= lo) return 0;
  }
  size_t pos = lo + (size_t)((h >> 3) % (hi - lo));
  for (int i = 0; i < n; i++) {
    if (pos < s[i].n) {
      s[i].p[pos] ^= (unsigned char)(1u << ((h & 3) * 2 + (unsigned)(slot & 1)));
      return 1;
    }
    pos -= s[i].n;
  }
  return 0;
}

/* Flips bit `bit` (0 lowest, of a little-endian word of ws bytes: a cell of
 * Assemble's tile, else 4) of the word at h among the bytes in s (each
 * segment's words counted from its start). */
static int flip_word_bit(seg_t *s, int n, int bit, size_t ws, uint64_t h) {
  size_t words = 0;
  for (int i = 0; i < n; i++) words += s[i].n / ws;
  if (!words) return 0;
  size_t w = (size_t)((h >> 3) % words);
  const size_t b = (size_t)bit % (8 * ws);
  for (int i = 0; i < n; i++) {
    if (w < s[i].n / ws) {
      s[i].p[ws * w + b / 8] ^= (unsigned char)(1u << (b % 8));
      return 1;
    }
    w -= s[i].n / ws;
  }
  return 0;
}

/* Which quarters of their bytes two computations disagree in (bits 0-3);
 * 0: the same bytes, the same size of each array and the same struct
 * outside its pointers. */
static int compare(const replica *a, const replica *b) {
  if (a->rc != b->rc) return 0xf;
  if (a->rc) return 0; /* the same failure: the program's own */
  const tr_graph_ft *ft = a->ft;
  if (a->nreg != b->nreg || memcmp(a->reg, b->reg, sizeof(reg_t) * (size_t)a->nreg) || a->put != b->put) return 0xf;
  /* the struct outside its registered pointers */
  unsigned char *sa = a->st, *sb = b->st;
  if (sa && sb) {
    size_t at = 0;
    for (;;) {
      size_t next = ft->state_bytes;
      for (int i = 0; i < a->nreg; i++)
        if (a->reg[i].off >= at && a->reg[i].off < next) next = a->reg[i].off;
      if (next > at && memcmp(sa + at, sb + at, next - at)) return 0xf;
      if (next >= ft->state_bytes) break;
      at = next + sizeof(void *);
    }
  } else if (!sa != !sb) {
    return 0xf;
  }
  seg_t x[MAX_SEG], y[MAX_SEG];
  const int nx = segments(a, x, SEG_STATE | SEG_MSGS), ny = segments(b, y, SEG_STATE | SEG_MSGS);
  if (nx != ny) return 0xf;
  for (int i = 0; i < nx; i++)
    if (x[i].n != y[i].n) return 0xf;
  const size_t t = total(x, nx);
  int mask = 0;
  size_t pos = 0;
  for (int i = 0; i < nx; i++) {
    size_t o = 0;
    while (o < x[i].n) {
      const int q = t ? (int)((pos + o) * 4 / t) : 0;
      const size_t qend = t * (size_t)(q + 1) / 4;
      size_t len = qend - (pos + o);
      if (len > x[i].n - o) len = x[i].n - o;
      if (!len) len = x[i].n - o;
      if (!(mask >> q & 1) && memcmp(x[i].p + o, y[i].p + o, len)) mask |= 1 << q;
      o += len;
    }
    pos += x[i].n;
  }
  return mask;
}

/* ------------------------------------------------------------ one computation */

static void replica_free(replica *r) {
  if (!r) return;
  /* a copy's arrays (after a run that registered them all) to the pool */
  if (r->kind != K_PEVAL || !r->rc) release_state(r->ft, r->st, r->reg, r->nreg);
  else destroy_state(r->ft, r->st);
  for (int i = 0; i < MAX_WIN; i++) free(r->win[i]);
  free(r->own_cells);
  free(r->own_vals);
  free(r->tile);
  tr_aap_capture_close(r->cap);
  free(r);
}

static replica *replica_new(tr_graph_ft *ft, box_t *b, const tr_aap_frag *f, int kind, int slot, int64_t n,
                            const int64_t *cells, const void *vals, tr_aap_round *rd, int private_inputs) {
  replica *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  /* Assemble is round -1 to the injector: once per fragment, whatever the schedule */
  *r = (replica){.ft = ft, .f = f, .b = b, .kind = kind, .slot = slot, .round = kind == K_ASSEMBLE ? -1 : b->round,
                 .n = n, .cells = cells,
                 .vals = vals, .private_inputs = private_inputs};
  int ok = 1;
  if (kind != K_ASSEMBLE) ok = (r->cap = tr_aap_capture_open(rd)) != NULL;
  if (ok && private_inputs && n > 0) {
    r->own_cells = malloc((size_t)n * sizeof(int64_t));
    r->own_vals = malloc((size_t)n * ft->in.value_size);
    ok = r->own_cells && r->own_vals;
    if (ok) {
      memcpy(r->own_cells, cells, (size_t)n * sizeof(int64_t));
      memcpy(r->own_vals, vals, (size_t)n * ft->in.value_size);
      r->cells = r->own_cells;
      r->vals = r->own_vals;
    }
  }
  if (!ok) {
    replica_free(r);
    return NULL;
  }
  return r;
}

/* ------------------------------------------------------------ memory failures */

/* Adds [p, p + n) to the computation's guard (once), registered for AO
 * reports under the same index. The range is published before the count:
 * a signal in between sees the old count. */
static void guard_add(replica *r, void *p, size_t n) {
  tr_memfail_guard *g = &r->mg;
  if (!r->guarded || !p || !n || g->n == TR_MEMFAIL_RANGES) return;
  for (int i = 0; i < g->n; i++)
    if (g->range[i].addr == p) return;
  r->mf_reg[g->n] = tr_memfail_register(p, n);
  g->range[g->n] = (tr_memfail_range){p, n};
  atomic_signal_fence(memory_order_seq_cst);
  g->n++;
  atomic_signal_fence(memory_order_seq_cst);
}

/* The computation's state arrays (its copy's, or those PEval registered). */
static void guard_state(replica *r) {
  if (!r->st) return;
  for (int i = 0; i < r->nreg; i++) guard_add(r, *reg_ptr(r->st, &r->reg[i]), reg_size(r->st, &r->reg[i]));
}

/* The injector's sigbus fault for this computation: its index, or -1. The
 * first computation of a fragment's round (slot 0) gets it, once: never
 * its recomputation, a replay, a re-execution or dual's other replicas. */
__attribute__((noinline)) static int sigbus_of(const tr_graph_ft *ft, const replica *r) {
  const tr_launch_inject *li = ft->o.inject ? &ft->o.inject->launch : NULL;
  if (!li || r->slot || r->sigbus_done) return -1;
  for (int i = 0; i < li->nsigbus; i++)
    if (!li->sigbus[i].hwpoison && (li->sigbus[i].tile == r->f->id || li->sigbus[i].tile == -1) &&
        li->sigbus[i].launch == r->round)
      return i;
  return -1;
}

/* Makes injected fault j: the SIGBUS a memory failure brings (memfail.h),
 * naming the middle byte of buf=in the computation's first window copy,
 * else its copy of the state; out its new state, or Assemble's tile;
 * outside the context (no round's buffer). Inside the guard an AR does
 * not come back here. 0, RC_EINJECT (the round has no such buffer) or
 * RC_ESEND. */
static int sigbus_make(replica *r, int j) {
  tr_graph_ft *ft = r->ft;
  const int buf = ft->o.inject->launch.sigbus[j].buf;
  unsigned char *p = NULL;
  size_t n = 0;
  if (buf == TR_SIGBUS_OUTSIDE) {
    p = (unsigned char *)ft;
    n = sizeof *ft;
  }
  for (int i = 0; buf == TR_SIGBUS_IN && !p && i < MAX_WIN; i++)
    if (r->win[i]) {
      p = (unsigned char *)r->win[i];
      n = (size_t)((r->f->rows + 2) * (r->f->cols + 2)) * sizeof(float);
    }
  if (!p && buf == TR_SIGBUS_OUT && r->kind == K_ASSEMBLE && r->put) {
    p = r->tile;
    n = ft->o.cell_bytes * (size_t)(r->f->rows * r->f->cols);
  }
  /* IncEval's and Assemble's copy of the state is their input; PEval's
   * and IncEval's the new state they leave */
  const int state = buf == TR_SIGBUS_IN ? r->kind != K_PEVAL : buf == TR_SIGBUS_OUT && r->kind != K_ASSEMBLE;
  for (int i = 0; state && !p && r->st && i < r->nreg; i++) {
    p = *reg_ptr(r->st, &r->reg[i]);
    n = reg_size(r->st, &r->reg[i]);
    if (!n) p = NULL;
  }
  r->sigbus_done = 1;
  if (!p) return RC_EINJECT;
  pthread_mutex_lock(&ft->mu);
  ft->c.injected++;
  pthread_mutex_unlock(&ft->mu);
  return tr_memfail_send(p + n / 2, ft->o.inject->launch.sigbus[j].ao) ? RC_ESEND : 0;
}

/* After a memory failure: each poisoned buffer leaves the computation for
 * the retired list (never freed, never pooled, never used again); the
 * next computation makes fresh ones. A range the program no longer holds
 * (it freed or moved the array) has nothing left to retire. */
static void retire(replica *r, const int *poisoned) {
  tr_graph_ft *ft = r->ft;
  for (int i = 0; i < r->mg.n; i++) {
    if (!poisoned[i]) continue;
    void *p = r->mg.range[i].addr;
    int held = 0;
    for (int k = 0; k < MAX_WIN && !held; k++)
      if (r->win[k] == p) r->win[k] = NULL, held = 1;
    if (!held && r->tile == p) r->tile = NULL, held = 1;
    for (int k = 0; !held && r->st && k < r->nreg; k++)
      if (*reg_ptr(r->st, &r->reg[k]) == p) *reg_ptr(r->st, &r->reg[k]) = NULL, held = 1;
    if (!held) continue;
    tr_memfail_retire(p, r->mg.range[i].size);
    pthread_mutex_lock(&ft->mu);
    ft->c.mf_retired += (int64_t)r->mg.range[i].size;
    pthread_mutex_unlock(&ft->mu);
  }
}

/* ------------------------------------------------------------ one computation */

/* One computation of r inside a memory-failure guard (memfail.h) naming the
 * buffers it owns as they come: its copy of the state, its window copies,
 * its tile, and (once the program's call returned) PEval's new arrays. An
 * AR in one jumps back here with r->mf_hit set; the injector's sigbus fault
 * comes right after the program's call returned (the program then holds
 * nothing of its own that a jump would lose). */
static void compute(replica *r) {
  tr_graph_ft *ft = r->ft;
  /* volatile: read again after sigsetjmp, never kept in a register across it */
  volatile int j = sigbus_of(ft, r);
  replica *const saved = cur;
  r->mg.n = 0;
  r->mf_hit = 0;
  if (sigsetjmp(r->mg.jb, 1)) {
    cur = saved;
    r->guarded = 0;
    r->mf_hit = 1;
    r->rc = 0;
    return;
  }
  r->guarded = 1;
  tr_memfail_enter(&r->mg);
  cur = r;
  int rc = 0;
  if (r->kind == K_PEVAL) {
    rc = ft->in.peval(ft->in.user, r->f, &r->st, r->cap);
  } else {
    r->nreg = r->b->nreg;
    memcpy(r->reg, r->b->reg, sizeof r->reg);
    r->st = clone_state(ft, r->b);
    guard_state(r);
    if (!r->st) rc = -1;
    else if (r->flip_input && r->b->nreg) {
      /* a fault in this computation's private copy of the state */
      seg_t s[MAX_SEG];
      const int n = segments(r, s, SEG_STATE);
      r->injected |= flip_bits(s, n, -1, r->slot, draw(ft->o.inject->ft.seed, r->f->id, r->round, r->slot, 7));
      r->flip_input = 0;
    }
    if (!rc)
      rc = r->kind == K_INCEVAL ? ft->in.inceval(ft->in.user, r->f, r->st, r->n, r->cells, r->vals, r->cap)
                                : ft->in.assemble ? ft->in.assemble(ft->in.user, r->f, r->st) : 0;
  }
  cur = saved;
  if (!rc && r->cap) {
    const int64_t m = tr_aap_capture_get(r->cap, NULL, NULL, NULL);
    if (m < 0) rc = (int)m;
  }
  /* PEval's registrations, as offsets into its struct */
  if (!rc && r->kind == K_PEVAL) {
    for (int i = 0; i < r->nkeep && !rc; i++) {
      const char *pp = (const char *)r->keep_pp[i], *s = r->st;
      const char *cnt = (const char *)r->keep_count[i];
      if (!s || pp < s || pp + sizeof(void *) > s + ft->state_bytes ||
          (cnt && (cnt < s || cnt + sizeof(size_t) > s + ft->state_bytes)))
        rc = -2; /* state kept outside its struct: graph.h's rule broken */
      else
        r->reg[r->nreg++] = (reg_t){(size_t)(pp - s), r->keep_bytes[i], cnt ? (long)(cnt - s) : -1};
    }
    if (!rc) guard_state(r);
  }
  if (!rc && j >= 0 && !ft->o.inject->launch.sigbus[j].after) rc = sigbus_make(r, j);
  tr_memfail_leave();
  r->guarded = 0;
  /* after=1: the same signal outside the guard, as a failure between rounds */
  if (!rc && j >= 0 && ft->o.inject->launch.sigbus[j].after) rc = sigbus_make(r, j);
  r->rc = rc;
}

/* Runs r's computation on the calling thread (its outputs reset first),
 * again on fresh buffers after a memory failure in one of its own, up to
 * MEMFAIL_TRIES times (then rc RC_MEMFAIL). */
static void replica_run(replica *r) {
  tr_graph_ft *ft = r->ft;
  const double t0 = now_s();
  for (int attempt = 0;; attempt++) {
    if (r->kind != K_PEVAL || !r->rc) release_state(ft, r->st, r->reg, r->nreg);
    else destroy_state(ft, r->st);
    r->st = NULL;
    r->nkeep = r->nreg = 0;
    r->put = 0;
    if (r->cap) tr_aap_capture_reset(r->cap);
    compute(r);
    int poisoned[TR_MEMFAIL_RANGES], any = 0;
    for (int i = 0; i < r->mg.n; i++) {
      poisoned[i] = (r->mf_hit && r->mg.which == i) || tr_memfail_poisoned(r->mf_reg[i]);
      any |= poisoned[i];
      tr_memfail_unregister(r->mf_reg[i]);
    }
    if (any) retire(r, poisoned);
    for (int i = 0; i < MAX_WIN; i++) {
      free(r->win[i]);
      r->win[i] = NULL;
    }
    pthread_mutex_lock(&ft->mu);
    if (any) ft->c.mf_found++;
    else ft->c.mf_corrected += attempt; /* each failure is corrected once a computation comes out whole */
    pthread_mutex_unlock(&ft->mu);
    if (!any) break;
    if (attempt + 1 >= MEMFAIL_TRIES) {
      r->rc = RC_MEMFAIL;
      break;
    }
  }
  r->secs = now_s() - t0;
}

/* The injector's fault in a computation's output (dual: `flip`). */
static void inject_output(tr_graph_ft *ft, replica *r) {
  const ft_inject *fi = ft->o.inject ? &ft->o.inject->ft : NULL;
  if (!fi || r->rc) return;
  int q = -2, at = 0;
  for (int i = 0; i < fi->n_exact && q == -2; i++) {
    const ft_fault_at *e = &fi->exact[i];
    if (e->kind != FT_FAULT_FLIP) continue;
    if ((e->block == -1 || e->block == r->f->id) && (e->slot == -1 || e->slot == r->slot) &&
        e->round == r->round) {
      q = e->sub;
      at = e->at;
    }
  }
  const uint64_t h = draw(fi->seed, r->f->id, r->round, r->slot, 1);
  if (q == -2 && fi->flip_p > 0 && r->slot < 2 && tr_unit64(h) < fi->flip_p) {
    q = -1;
    at = (h >> 40 & 1) ? 2 : 0;
  }
  if (q == -2) return;
  seg_t s[MAX_SEG];
  int n = segments(r, s, at == 2 ? SEG_MSGS | SEG_VALUES : SEG_STATE);
  if (!total(s, n)) n = segments(r, s, SEG_STATE | SEG_MSGS | SEG_VALUES);
  if (flip_bits(s, n, q, r->slot, draw(fi->seed, r->f->id, r->round, r->slot, 2))) r->injected = 1;

}

/* ------------------------------------------------------------ helpers (dual) */

/* The injected stall (libft's stall:worker=W,ms=M[,after=A][,count=C]):
 * helper W holds its computation number n back M ms before handing it. */
static int stall_ms(const tr_graph_ft *ft, int helper, int64_t n) {
  const ft_inject *fi = ft->o.inject ? &ft->o.inject->ft : NULL;
  if (!fi || !fi->stall || fi->stall_worker != helper || fi->stall_ms <= 0 || n < fi->stall_after) return 0;
  if (fi->stall_count > 0 && n >= (int64_t)fi->stall_after + fi->stall_count) return 0;
  return fi->stall_ms;
}

static void *helper_main(void *arg) {
  struct helper_arg *h = arg;
  tr_graph_ft *ft = h->ft;
  pthread_mutex_lock(&ft->qmu);
  for (;;) {
    while (!ft->qhead && !ft->stop) pthread_cond_wait(&ft->qcv, &ft->qmu);
    if (!ft->qhead) break;
    replica *r = ft->qhead;
    ft->qhead = r->next;
    if (!ft->qhead) ft->qtail = NULL;
    pthread_mutex_unlock(&ft->qmu);
    replica_run(r);
    inject_output(ft, r);
    const int ms = stall_ms(ft, h->index, h->handed++);
    if (ms > 0) {
      struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
      while (nanosleep(&ts, &ts) != 0) {
      }
    }
    pthread_mutex_lock(&ft->qmu);
    if (r->orphan) {
      pthread_mutex_unlock(&ft->qmu);
      replica_free(r);
      pthread_mutex_lock(&ft->qmu);
      continue;
    }
    r->done = 1;
    pthread_cond_broadcast(&ft->dcv);
  }
  pthread_mutex_unlock(&ft->qmu);
  return NULL;
}

static void submit(tr_graph_ft *ft, replica *r) {
  pthread_mutex_lock(&ft->qmu);
  r->next = NULL;
  r->done = 0;
  if (ft->qtail) ft->qtail->next = r;
  else ft->qhead = r;
  ft->qtail = r;
  pthread_cond_signal(&ft->qcv);
  pthread_mutex_unlock(&ft->qmu);
}

/* Waits for a helper's computation r at most ms: 0 when it is back, -1
 * when not (r is then the helper's to free, never the caller's). */
static int await(tr_graph_ft *ft, replica *r, double ms) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  const double at = (double)dl.tv_sec + (double)dl.tv_nsec * 1e-9 + ms * 1e-3;
  dl.tv_sec = (time_t)at;
  dl.tv_nsec = (long)((at - (double)dl.tv_sec) * 1e9);
  pthread_mutex_lock(&ft->qmu);
  int rc = 0;
  while (!r->done && rc == 0) rc = pthread_cond_timedwait(&ft->dcv, &ft->qmu, &dl);
  const int back = r->done;
  if (!back) {
    r->orphan = 1;
    ft->orphans++;
  }
  pthread_mutex_unlock(&ft->qmu);
  return back ? 0 : -1;
}

/* How long a helper's computation may take: --ft-timeout plus four times
 * what the same round took on the engine's thread (own_s; a queue of other
 * fragments' computations ahead of it is in that margin). */
static double await_ms(const tr_graph_ft *ft, double own_s) {
  return (ft->o.timeout_ms > 0 ? ft->o.timeout_ms : FT_TIMEOUT_RUN_MS) + 4e3 * own_s;
}

/* ------------------------------------------------------------ hooks */

int tr_graph_ft_keep(void *pp, size_t bytes, const size_t *count) {
  replica *r = cur;
  if (!r) return 0;
  if (r->nkeep == MAX_REG) return -1;
  r->keep_pp[r->nkeep] = pp;
  r->keep_bytes[r->nkeep] = bytes;
  r->keep_count[r->nkeep] = count;
  r->nkeep++;
  return 1;
}

float *tr_graph_ft_window(tr_graph_env *env, int k, const tr_aap_frag *f) {
  replica *r = cur;
  /* replay too: a copy is the round's own, which a memory failure can take */
  if (!r) return NULL;
  int slot = 0;
  while (slot < MAX_WIN && r->win[slot]) slot++;
  const size_t n = (size_t)((f->rows + 2) * (f->cols + 2));
  float *copy = slot < MAX_WIN ? malloc(n * sizeof(float)) : NULL;
  if (!copy) return NULL;
  tr_graph_ft *ft = r->ft;
  const tr_tile t = tr_graph_frag_tile(f);
  /* the store's window is one buffer per tile with one borrower at a time
   * (tile_store.h): dual's replicas of a round take and give it back under
   * one lock, so the other replica's copy never sees it given back. Replay
   * runs one computation of a fragment at a time (a re-execution after the
   * first), so its copies go without the lock: under it, the workers' copies
   * of different tiles' windows went one at a time (fill at 8000², 2 threads:
   * replay's wall time 1.26x --ft off's, its CPU time 1.10x) */
  const int lock = ft->o.mode == TR_FT_DUAL;
  if (lock) pthread_mutex_lock(&ft->mu);
  float *z = tr_tile_store_get(env->inputs[k], &t);
  if (z) {
    memcpy(copy, z, n * sizeof(float));
    tr_tile_store_put(env->inputs[k], &t, z);
  }
  if (lock) pthread_mutex_unlock(&ft->mu);
  if (!z) {
    free(copy);
    return NULL;
  }
  if (r->flip_input) {
    /* a fault in this computation's private copy of its input */
    const uint64_t h = draw(ft->o.inject->ft.seed, f->id, r->round, r->slot, 3);
    unsigned char *b = (unsigned char *)copy;
    b[(h >> 3) % (n * sizeof(float))] ^= (unsigned char)(1u << ((h & 3) * 2 + (unsigned)(r->slot & 1)));
    r->flip_input = 0;
    r->injected = 1;
  }
  r->win[slot] = copy;
  guard_add(r, copy, n * sizeof(float));
  return copy;
}

int tr_graph_ft_window_done(float *z) {
  replica *r = cur;
  if (!r) return 0;
  /* kept to the round's end: the injector's buf=in names it there */
  for (int i = 0; i < MAX_WIN; i++)
    if (r->win[i] == z) return 1;
  return 0;
}

int tr_graph_ft_put(const void *cells) {
  replica *r = cur;
  if (!r) return 0;
  const size_t n = r->ft->o.cell_bytes * (size_t)(r->f->rows * r->f->cols);
  if (!r->tile) r->tile = malloc(n ? n : 1);
  if (!r->tile) return -1;
  memcpy(r->tile, cells, n);
  r->put = 1;
  guard_add(r, r->tile, n);
  return 1;
}

/* ------------------------------------------------------------ dual */

static void count_faults(tr_graph_ft *ft, replica **rs, int n, const replica *acc) {
  ft_report *c = &ft->c.dual;
  for (int i = 0; i < n; i++) {
    if (!rs[i]->injected) continue;
    c->injected++;
    if (acc && (rs[i] == acc || compare(rs[i], acc) == 0)) {
      c->tolerated++;
    } else {
      c->detected++;
      if (acc) c->corrected++;
      else c->fatal++;
    }
  }
}

static int fail_line(tr_graph_ft *ft, const tr_aap_frag *f, int64_t round, int kind, int status, const char *why) {
  const char *what = kind == K_PEVAL ? "PEval" : kind == K_INCEVAL ? "IncEval" : "Assemble";
  return tr_graph_fail(ft->env, f, status, "fault tolerance (--ft %s): %s's %s of tile %lld (round %lld): %s",
                       ft->o.mode == TR_FT_DUAL ? "dual" : "replay", ft->body->name, what, (long long)f->id,
                       (long long)round, why);
}

/* The line of a computation that failed for the runner's reasons, or its
 * own rc (the program's failure). */
static int rc_line(tr_graph_ft *ft, const tr_aap_frag *f, int64_t round, int kind, int rc) {
  char why[160];
  switch (rc) {
    case -2: return fail_line(ft, f, round, kind, TR_EINTERNAL, "the program keeps state outside its struct");
    case RC_MEMFAIL:
      snprintf(why, sizeof why, "%d memory failures in a row (SIGBUS, BUS_MCEERR_AR/AO in its buffers): giving up",
               MEMFAIL_TRIES);
      return fail_line(ft, f, round, kind, TR_EFT, why);
    case RC_EINJECT:
      return fail_line(ft, f, round, kind, TR_EUSAGE,
                       "inject sigbus: the round has no such buffer (buf=in: a PEval that reads no window; buf=out: "
                       "a round that keeps no array)");
    case RC_ESEND: return fail_line(ft, f, round, kind, TR_EINTERNAL, "inject sigbus: rt_tgsigqueueinfo failed");
    default: return rc;
  }
}

/* The accepted computation's messages to the engine, its tile to the sink. */
static int deliver(tr_graph_ft *ft, box_t *b, replica *acc, tr_aap_round *rd) {
  if (acc->kind == K_ASSEMBLE) return acc->put ? ft->env->put(ft->env, acc->f, acc->tile) : 0;
  if (adopt_state(ft, b, acc)) return -1;
  return tr_aap_capture_commit(acc->cap, rd) ? -1 : 0;
}

/* A helper did not hand its computation back in time: a hung or stalled
 * thread; the run fails (exit 5) rather than wait for it. */
static int helper_late(tr_graph_ft *ft, const tr_aap_frag *f, int64_t round, int kind) {
  char why[160];
  snprintf(why, sizeof why, "a helper thread's computation did not come back within %d ms and four times the round's own time (--ft-timeout)",
           ft->o.timeout_ms > 0 ? ft->o.timeout_ms : FT_TIMEOUT_RUN_MS);
  return fail_line(ft, f, round, kind, TR_EFT, why);
}

static int dual_round(tr_graph_ft *ft, box_t *b, const tr_aap_frag *f, int kind, int64_t n, const int64_t *cells,
                      const void *vals, tr_aap_round *rd) {
  replica *rs[2 + MAX_EXTRA] = {0};
  int nr = 0, rc = 0;
  const ft_inject *fi = ft->o.inject ? &ft->o.inject->ft : NULL;
  for (int s = 0; s < 2; s++) {
    rs[s] = replica_new(ft, b, f, kind, s, n, cells, vals, rd, 1);
    if (!rs[s]) rc = -1;
    else if (fi && fi->flip_input_p > 0 &&
             tr_unit64(draw(fi->seed, f->id, rs[s]->round, s, 4)) < fi->flip_input_p)
      rs[s]->flip_input = 1; /* injected once the copy it goes into is made */
  }
  nr = 2;
  if (rc) goto out;
  submit(ft, rs[1]);
  replica_run(rs[0]);
  inject_output(ft, rs[0]);
  if (await(ft, rs[1], await_ms(ft, rs[0]->secs))) {
    rs[1] = NULL; /* the helper's now */
    rc = helper_late(ft, f, b->round, kind);
    goto out;
  }
  for (int i = 0; i < 2; i++)
    if (rs[i]->rc <= RC_MEMFAIL && rs[i]->rc >= RC_ESEND) {
      rc = rc_line(ft, f, b->round, kind, rs[i]->rc);
      goto out;
    }
  const double t0 = now_s();
  int mask = compare(rs[0], rs[1]);
  const double t1 = now_s();
  replica *acc = NULL;
  pthread_mutex_lock(&ft->mu);
  ft->c.dual.blocks++;
  ft->c.dual.sub_blocks += 4;
  ft->c.dual.compute_s += rs[0]->secs + rs[1]->secs;
  ft->c.dual.detect_s += t1 - t0;
  if (mask) ft->c.dual.mismatches++;
  pthread_mutex_unlock(&ft->mu);
  if (!mask) acc = rs[0];
  /* a third worker, then more, until two computations agree */
  for (int e = 0; !acc && e < MAX_EXTRA; e++) {
    replica *x = replica_new(ft, b, f, kind, 2 + e, n, cells, vals, rd, 1);
    if (!x) {
      rc = -1;
      goto out;
    }
    rs[nr++] = x;
    submit(ft, x);
    if (await(ft, x, await_ms(ft, rs[0]->secs))) {
      rs[--nr] = NULL;
      rc = helper_late(ft, f, b->round, kind);
      goto out;
    }
    const double v0 = now_s();
    for (int i = 0; i < nr - 1 && !acc; i++)
      if (compare(rs[i], x) == 0) acc = rs[i]->injected && !x->injected ? x : rs[i];
    pthread_mutex_lock(&ft->mu);
    ft->c.dual.recomputes++;
    ft->c.dual.votes++;
    ft->c.dual.recompute_s += x->secs;
    ft->c.dual.detect_s += now_s() - v0;
    pthread_mutex_unlock(&ft->mu);
  }
  pthread_mutex_lock(&ft->mu);
  count_faults(ft, rs, nr, acc);
  if (!acc) {
    ft->c.dual.failed_sub_blocks += __builtin_popcount((unsigned)mask);
    pthread_mutex_unlock(&ft->mu);
    rc = fail_line(ft, f, b->round, kind, TR_EFT, "no two of its computations agreed");
    goto out;
  }
  pthread_mutex_unlock(&ft->mu);
  if (acc->rc) {
    rc = rc_line(ft, f, b->round, kind, acc->rc); /* the program's own failure, agreed */
    goto out;
  }
  rc = deliver(ft, b, acc, rd);
out:
  for (int i = 0; i < nr; i++) replica_free(rs[i]);
  return rc;
}

/* ------------------------------------------------------------ replay */

static int replay_fn(void *args) {
  replica *r;
  memcpy(&r, args, sizeof r);
  replica_run(r);
  return r->rc;
}

/* 0: no fault in this round; 1: a reported one; 2: a silent one. */
static int launch_fault(const tr_launch_inject *li, int64_t frag, int64_t round, int *bit) {
  for (int i = 0; i < li->n; i++)
    if ((li->at[i].tile == frag || li->at[i].tile == -1) && li->at[i].launch == round) {
      *bit = li->at[i].bit;
      return 1 + li->at[i].silent;
    }
  *bit = li->p_bit;
  if (li->p > 0 && tr_unit64(draw(li->seed, frag, round, 0, 5)) < li->p) return 1 + li->p_silent;
  return 0;
}

static int replay_round(tr_graph_ft *ft, box_t *b, const tr_aap_frag *f, int kind, int64_t n, const int64_t *cells,
                        const void *vals, tr_aap_round *rd) {
  replica *r = replica_new(ft, b, f, kind, 0, n, cells, vals, rd, 0), *again = NULL;
  if (!r) return -1;
  int rc = 0;
  const int64_t round = r->round;
  /* regions: the fragment's state in (its box stands for it), the snapshot
   * in, the computation out; in != out, so the round is idempotent */
  const size_t vbytes = (size_t)n * ft->in.value_size;
  int snap_region = n > 0 && !ft_region_add(ft->trk, vals, vbytes, NULL);
  if (ft_region_add(ft->trk, r, sizeof *r, NULL)) {
    if (snap_region) ft_region_remove(ft->trk, vals);
    replica_free(r);
    return -1;
  }
  ft_range in[2] = {{b, sizeof *b}, {vals, vbytes}}, out = {r, sizeof *r};
  const ft_launch l = {(uint64_t)f->id << 16 | (uint64_t)((round + 1) & 0xffff), in, snap_region ? 2 : 1, &out, 1,
                       replay_fn, &r, sizeof r};
  int64_t seq = -1;
  rc = ft_track_launch(ft->trk, &l, &seq);
  if (rc) {
    rc = r->rc ? rc_line(ft, f, round, kind, r->rc) : -1;
    goto out;
  }
  int bit = -1, detected = 0;
  const int fault = ft->o.inject ? launch_fault(&ft->o.inject->launch, f->id, round, &bit) : 0;
  if (fault) {
    seg_t s[MAX_SEG];
    const int ns = segments(r, s, SEG_STATE | SEG_MSGS | SEG_VALUES);
    const uint64_t h = draw(ft->o.inject->launch.seed, f->id, round, 0, 6);
    const size_t ws = kind == K_ASSEMBLE && ft->o.cell_bytes ? ft->o.cell_bytes : 4;
    if (bit >= 0 ? flip_word_bit(s, ns, bit, ws, h) : flip_bits(s, ns, -1, (int)(h >> 62), h)) {
      pthread_mutex_lock(&ft->mu);
      ft->c.injected++;
      if (fault == 1) ft->c.reported++;
      pthread_mutex_unlock(&ft->mu);
      detected = fault == 1;
    }
  }
  /* the body's invariant, then the sampled re-execution: a computation
   * again whose bytes differ makes a fault */
  int inv = 0;
  const int has_check = kind == K_ASSEMBLE ? ft->body->check_tile != NULL : ft->body->check != NULL;
  if (!detected && has_check && kind != K_ASSEMBLE && r->st) {
    const int64_t *ec;
    void *ev;
    const int64_t m = tr_aap_capture_get(r->cap, &ec, &ev, NULL);
    inv = ft->body->check(ft->in.user, f, r->st, m > 0 ? m : 0, ec, ev) != 0;
  } else if (!detected && has_check && kind == K_ASSEMBLE && r->put) {
    /* Assemble reads the fragment's state (its copy's bytes are the same) */
    inv = ft->body->check_tile(ft->in.user, f, b->st, r->tile) != 0;
  }
  const int sample = !detected && !inv && ft->o.check > 0 && tr_unit64(draw(0x5eed, f->id, round, 0, 3)) < ft->o.check;
  if (inv || sample) {
    again = replica_new(ft, b, f, kind, 1, n, cells, vals, rd, 0);
    if (!again) {
      rc = -1;
      goto out;
    }
    replica_run(again);
    const int differ = compare(r, again) != 0;
    pthread_mutex_lock(&ft->mu);
    if (inv) {
      ft->c.inv_checked++;
      if (differ) ft->c.inv_faults++;
      else ft->c.inv_reproduced++;
    }
    pthread_mutex_unlock(&ft->mu);
    if (sample) ft_track_count_sample(ft->trk, differ);
    detected = differ;
  } else if (has_check) {
    pthread_mutex_lock(&ft->mu);
    ft->c.inv_checked++;
    pthread_mutex_unlock(&ft->mu);
  }
  if (detected) {
    ft_repair how;
    const int er = ft_track_error(ft->trk, seq, &how);
    if (er == FT_ERR_LIMIT) {
      rc = fail_line(ft, f, round, kind, TR_EFTLIMIT, "more faults detected than --ft-max-errors allows");
      goto out;
    }
    if (!er && (r->rc <= RC_MEMFAIL && r->rc >= RC_ESEND)) {
      rc = rc_line(ft, f, round, kind, r->rc);
      goto out;
    }
    if (er || r->rc) {
      rc = fail_line(ft, f, round, kind, TR_EFT, er ? ft_strerror(er) : "its computation again failed");
      goto out;
    }
  }
  rc = deliver(ft, b, r, rd);
  /* the fragment's state has a new version: older entries cannot make it */
  if (!rc && kind != K_ASSEMBLE) ft_region_write(ft->trk, b, sizeof *b);
out:
  ft_region_remove(ft->trk, r);
  if (snap_region) ft_region_remove(ft->trk, vals);
  replica_free(r);
  replica_free(again);
  return rc;
}

/* ------------------------------------------------------------ the program */

static int round_of(tr_graph_ft *ft, box_t *b, const tr_aap_frag *f, int kind, int64_t n, const int64_t *cells,
                    const void *vals, tr_aap_round *rd) {
  const int rc = ft->o.mode == TR_FT_DUAL ? dual_round(ft, b, f, kind, n, cells, vals, rd)
                                          : replay_round(ft, b, f, kind, n, cells, vals, rd);
  if (!rc && kind != K_ASSEMBLE) b->round++;
  return rc;
}

static int gft_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  tr_graph_ft *ft = user;
  box_t *b = calloc(1, sizeof *b);
  if (!b) return -1;
  b->id = f->id;
  *state = b;
  if (ft->trk && ft_region_add(ft->trk, b, sizeof *b, NULL)) return -1;
  return round_of(ft, b, f, K_PEVAL, 0, NULL, NULL, rd);
}

static int gft_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                       const void *values, tr_aap_round *rd) {
  box_t *b = state;
  if (!b->st) return -1;
  return round_of(user, b, f, K_INCEVAL, n, cells, values, rd);
}

static int gft_assemble(void *user, const tr_aap_frag *f, void *state) {
  box_t *b = state;
  if (!b->st) return -1;
  return round_of(user, b, f, K_ASSEMBLE, 0, NULL, NULL, NULL);
}

static void gft_destroy(void *user, void *state) {
  tr_graph_ft *ft = user;
  box_t *b = state;
  if (!b) return;
  if (ft->trk) ft_region_remove(ft->trk, b);
  destroy_state(ft, b->st);
  free(b);
}

static int gft_aggr(void *user, void *acc, const void *value) {
  tr_graph_ft *ft = user;
  return ft->in.aggr(ft->in.user, acc, value);
}

int tr_graph_ft_open(tr_graph_ft **out, tr_aap_program *p, const tr_graph_body *body, tr_graph_env *env,
                     tr_state_store *ss, const tr_graph_ft_opts *o) {
  *out = NULL;
  if (!body->state_bytes) return -1;
  tr_graph_ft *ft = calloc(1, sizeof *ft);
  if (!ft) return -1;
  ft->o = *o;
  ft->in = *p;
  ft->body = body;
  ft->env = env;
  ft->ss = ss;
  ft->state_bytes = body->state_bytes;
  tr_edac_read(&ft->c.edac_start);
  pthread_mutex_init(&ft->mu, NULL);
  pthread_mutex_init(&ft->pmu, NULL);
  ft->pool_cap = 4 * (o->workers > 0 ? o->workers : 1) + 4;
  if (ft->pool_cap > POOL_MAX) ft->pool_cap = POOL_MAX;
  pthread_mutex_init(&ft->qmu, NULL);
  pthread_cond_init(&ft->qcv, NULL);
  pthread_cond_init(&ft->dcv, NULL);
  /* memory failures in a round's buffers (memfail.h): the handler from here to close */
  int ok = tr_memfail_open() == 0;
  ft->memfail = ok;
  if (ok && o->mode == TR_FT_REPLAY) {
    ft_tracker_opts to;
    ft_tracker_opts_init(&to);
    if (o->max_errors) to.max_errors = o->max_errors < 0 ? 0 : o->max_errors;
    ok = ft_tracker_create(&to, &ft->trk) == 0;
  } else if (ok) {
    ft->nth = o->workers > 0 ? o->workers : 1;
    ft->th = calloc((size_t)ft->nth, sizeof *ft->th);
    ft->harg = calloc((size_t)ft->nth, sizeof *ft->harg);
    ok = ft->th && ft->harg;
    for (int i = 0; ok && i < ft->nth; i++)
      ft->harg[i] = (struct helper_arg){ft, i, 0};
    for (int i = 0; ok && i < ft->nth; i++)
      if (pthread_create(&ft->th[i], NULL, helper_main, &ft->harg[i])) {
        ft->nth = i;
        ok = 0;
      }
  }
  if (!ok) {
    tr_graph_ft_close(ft, NULL);
    return -1;
  }
  p->user = ft;
  p->peval = gft_peval;
  p->inceval = gft_inceval;
  p->assemble = gft_assemble;
  p->destroy = gft_destroy;
  p->aggr = gft_aggr;
  *out = ft;
  return 0;
}

/* Contexts whose helpers were not joined (tr_graph_ft_close): kept, so what
 * a late helper still touches is never freed under it. */
static tr_graph_ft *abandoned[8];
static int nabandoned;

void tr_graph_ft_close(tr_graph_ft *ft, tr_graph_ft_counts *counts) {
  if (!ft) return;
  if (ft->th) {
    pthread_mutex_lock(&ft->qmu);
    ft->stop = 1;
    pthread_cond_broadcast(&ft->qcv);
    const int orphans = ft->orphans;
    pthread_mutex_unlock(&ft->qmu);
    if (orphans) {
      /* a helper still holds a computation it was given up on for: it is
       * not waited for, and what it uses (ft) stays, reachable from here */
      for (int i = 0; i < ft->nth; i++) pthread_detach(ft->th[i]);
      if (counts) *counts = ft->c;
      pthread_mutex_lock(&ft->qmu);
      if (nabandoned < 8) abandoned[nabandoned++] = ft;
      pthread_mutex_unlock(&ft->qmu);
      return;
    }
    for (int i = 0; i < ft->nth; i++) pthread_join(ft->th[i], NULL);
    free(ft->th);
    free(ft->harg);
  }
  if (ft->trk) {
    ft_track_report_get(ft->trk, &ft->c.trk);
    ft_tracker_destroy(ft->trk);
  }
  tr_edac_read(&ft->c.edac_end);
  if (counts) *counts = ft->c;
  if (ft->memfail) tr_memfail_close();
  for (int i = 0; i < ft->npool; i++) free(ft->pool[i].p);
  pthread_mutex_destroy(&ft->pmu);
  pthread_mutex_destroy(&ft->mu);
  pthread_mutex_destroy(&ft->qmu);
  pthread_cond_destroy(&ft->qcv);
  pthread_cond_destroy(&ft->dcv);
  free(ft);
}

tr_json *tr_graph_ft_json(tr_ft_mode mode, const char *program, const tr_graph_ft_counts *c) {
  tr_json *o = tr_json_object(), *inner = tr_json_object();
  tr_json_set(o, "mode", tr_json_str(mode == TR_FT_DUAL ? "dual" : "replay"));
  tr_json_set(o, "program", tr_json_str(program));
  tr_json_set(o, "unit", tr_json_str("round"));
  if (mode == TR_FT_DUAL) {
    if (inner) tr_json_ft_report(inner, &c->dual);
    tr_json_set(o, "report", inner);
  } else {
    tr_json *inv = tr_json_object();
    tr_json_set(o, "injected", tr_json_int(c->injected));
    tr_json_set(o, "reported", tr_json_int(c->reported));
    tr_json_set(inv, "checked", tr_json_int(c->inv_checked));
    tr_json_set(inv, "faults", tr_json_int(c->inv_faults));
    tr_json_set(inv, "reproduced", tr_json_int(c->inv_reproduced));
    tr_json_set(o, "invariant", inv);
    if (inner) tr_json_ft_track(inner, &c->trk);
    tr_json_set(o, "tracker", inner);
  }
  /* the local launches' keys (launch.c): SIGBUS memory failures found in
   * rounds' buffers, rounds then computed whole, bytes retired */
  tr_json_set(o, "memory_failures", tr_json_int(c->mf_found));
  tr_json_set(o, "memory_corrected", tr_json_int(c->mf_corrected));
  tr_json_set(o, "retired_bytes", tr_json_int(c->mf_retired));
  tr_json_set(o, "edac", tr_edac_json(&c->edac_start, &c->edac_end));
  return o;
}
