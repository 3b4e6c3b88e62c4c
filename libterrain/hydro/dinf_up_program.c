/*
 * dinf_up_program.c - the upstream dataflow over D-infinity angles as a
 * graph program: the row "dinf_up" of the program table (TauDEM areadinf's
 * specific catchment area, and twi = ln(sca / slope) from it).
 *
 * A cell with a valid angle has
 *   sca(c) = dx(c) + sum over k = 1..8 (E, NE, N ... SE) of p_k sca(n_k)
 * where n_k is neighbour k and p_k > 0 the share of n_k's flow that reaches
 * c (hydro/dinf.h, tr_dinf_prop_at, with n_k's row's cell size). The sum is
 * TauDEM's: a Float32 accumulator, each step (float)(acc + p_k * sca(n_k))
 * in double, the donors in that fixed k order, then + dx. Because a cell
 * is computed once, when every donor is final, and always sums them in that
 * order, its bytes do not depend on the order cells become final in: not on
 * the tiling, the thread or rank count, the schedule or --mem. Cross-tile
 * flow adds nothing of its own: a donor in the halo is used exactly as an
 * inside one, with its final value as received. contaminated(c) = c has a
 * neighbour off the grid or without an angle, or (edge check) a
 * contributing donor is contaminated (TauDEM's contcheck); with the check
 * such cells are nodata.
 *
 * State of a fragment over its padded window: sca alone (NaN while unknown;
 * its sign bit the contamination, the values being > 0), 4 bytes a cell.
 * Every round reads the angles' window again (NaN for nodata and off the
 * grid) and finds the flow bytes (the neighbours a cell's flow reaches) of
 * the cells it asks about: keeping them (9 bytes a cell in all) made sca the
 * largest stage of a D-infinity run, 2.7 times the DEM at 8000^2, where the
 * reads cost about a tenth of the stage. PEval: Kahn's order inside the tile
 * (each cell's donors counted once) from the cells whose donors are all final; a perimeter cell that becomes final and gives flow
 * to a halo cell is emitted once with its value (absolute and final, so a
 * duplicate changes nothing; f_aggr keeps the first). IncEval: a halo
 * donor's first value is set, which may make the tile cells it drains into
 * ready. Values only go from unknown to final: monotone, and every schedule
 * gives the same result.
 *
 * A cell still unknown at Assemble receives flow from a cycle of angles
 * (a D-infinity split can close one on a flat); TauDEM leaves such cells
 * without a value (its queue never reaches them), and so does this: nodata.
 * twi (product TR_DINF_UP_TWI, input 1 the slope): ln(sca / slope) as
 * TauDEM's twi computes it (Float32 division, then the logarithm), nodata
 * where either is nodata or not positive. TR_DINF_UP_TWI_GIVEN is TauDEM
 * twi's own form, the sca given as input 0: PEval takes the window as the
 * final sca and no angle (NaN), so no cell is ever ready, nothing is sent,
 * and Assemble computes the same ln(sca / slope) cell by cell. SPI
 * (TR_DINF_UP_SPI and _GIVEN): sca x slope in double, stored as Float32
 * (SAGA's Stream Power Index, area x tan(slope): the D-infinity slope is
 * that tangent), nodata where either is nodata, sca not positive or the
 * slope negative; 0 on flats.
 *
 * The window, a round's queue and row sizes, the state's arrays, f_aggr and
 * Assemble's put are dag_round.h's, the skeleton of the programs that compute
 * a cell once from final inputs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dag_round.h"
#include "dinf.h"
#include "flowdir.h"
#include "graph.h"

typedef struct {
  float v;
  int32_t con;
} du_msg;

typedef struct {
  tr_graph_env *env;
  tr_dinf_up_params prm;
} du_ctx;

typedef struct {
  int64_t n;
  float *sca; /* NaN while unknown; its sign bit: contaminated (computed products) */
} du_state;

/* the state's arrays, each a value per padded cell */
static const tr_dag_array du_arrays[] = {TR_DAG_ARRAY(du_state, sca)};
#define DU_NARRAYS ((int)(sizeof du_arrays / sizeof du_arrays[0]))

static void du_destroy(void *user, void *state) {
  (void)user;
  if (!state) return;
  tr_dag_arrays_free(state, du_arrays, DU_NARRAYS);
  free(state);
}

static int round_begin(const du_ctx *x, const tr_aap_frag *f, tr_dag_round *w) {
  return tr_dag_round_begin(w, f, &x->prm.geom, x->env->rows, TR_DAG_AREF);
}

/* What a round reads besides the state: the angles' window (the input's,
 * read again in every round rather than kept: 4 bytes a cell less between
 * rounds) and the flow bytes found from it (FL_* below), FL_UNKNOWN until a
 * cell's is first asked for. */
typedef struct {
  tr_dag_round w;
  const float *ang; /* padded window; NaN: no angle */
  uint8_t *fl;
} du_round;

#define FL_UNKNOWN 0xffu

/* The round's window and flow bytes; 0 or -1 (out of memory, a failed read). */
static int du_round_begin(const du_ctx *x, const tr_aap_frag *f, du_round *d) {
  memset(d, 0, sizeof *d);
  const int64_t n = (f->rows + 2) * (f->cols + 2);
  if (round_begin(x, f, &d->w)) return -1;
  d->fl = malloc((size_t)n);
  d->ang = d->fl ? tr_graph_window(x->env, f) : NULL;
  if (!d->ang) {
    free(d->fl);
    tr_dag_round_end(&d->w);
    return -1;
  }
  memset(d->fl, FL_UNKNOWN, (size_t)n);
  return 0;
}

static void du_round_end(const du_ctx *x, const tr_aap_frag *f, du_round *d) {
  tr_graph_window_done(x->env, f, (float *)d->ang);
  free(d->fl);
  tr_dag_round_end(&d->w);
}

/* A contaminated cell's value carries a set sign bit (values are > 0). */
static inline float sca_value(float v) { return fabsf(v); }
static inline int sca_con(float v) { return signbit(v) != 0; }
static inline float sca_with(float v, int con) { return con ? -v : v; }

/* The share of padded cell n (padded row r) flow that reaches its
 * neighbour in direction k from n (> 0), or <= 0 for none. Rows travel
 * with the cells: a division per share was most of a round's time. */
static inline double share(const du_round *d, int64_t n, int64_t r, int k) {
  const float a = d->ang[n];
  if (isnan(a)) return -1.0;
  return tr_dinf_prop_at(a, k, d->w.aref + 10 * r);
}

#define BACK(k) TR_DAG_BACK(k)

/* A padded cell's flow byte: which neighbours its flow reaches (share > 0),
 * found once a round when first asked for, so that the many "is n a donor
 * of d?" questions of a round cost a bit test instead of a share each (they
 * were most of the program's time). A D-infinity angle splits its flow
 * between two neighbours k1 and the next one counter-clockwise (8 -> 1):
 * bits 0-2 are k1 - 1, FL_HAS1 says the flow reaches k1, FL_HAS2 that it
 * also reaches the next one. FL_ODD marks receivers of another form (not
 * met: the reference angles increase), whose shares are then computed
 * every time. */
#define FL_K1 0x07u
#define FL_HAS1 0x08u
#define FL_HAS2 0x10u
#define FL_ODD 0x40u

/* The receiver bits of padded cell n (padded row r). */
static uint8_t receivers_of(const du_round *d, int64_t n, int64_t r) {
  const float a = d->ang[n];
  if (isnan(a)) return 0;
  unsigned m = 0;
  const double *aref = d->w.aref + 10 * r;
  if (a >= 0.0f && (double)a <= aref[9]) {
    /* aref[j] <= a < aref[j + 1] (j = 9 at 2 pi): tr_dinf_prop_at gives
     * nothing outside (aref[k - 1], aref[k + 1]) (for k = 1 also after its
     * turn by 2 pi), so only neighbours j - 1 .. j + 1 (mod 8) can receive */
    int j = 0;
    for (int k = 1; k <= 9; k++) j += (double)a >= aref[k];
    for (int e = -1; e <= 1; e++) {
      const int k = (j + e + 7) % 8 + 1;
      if (share(d, n, r, k) > 0.0) m |= 1u << (k - 1);
    }
  } else
    for (int k = 1; k <= 8; k++)
      if (share(d, n, r, k) > 0.0) m |= 1u << (k - 1);
  if (!m) return 0;
  for (int k = 1; k <= 8; k++) {
    const unsigned one = 1u << (k - 1), two = one | 1u << (k % 8);
    if (m == one) return (uint8_t)(FL_HAS1 | (unsigned)(k - 1));
    if (m == two) return (uint8_t)(FL_HAS1 | FL_HAS2 | (unsigned)(k - 1));
  }
  return FL_ODD;
}

/* Padded cell n's flow byte, found on the round's first question. */
static inline unsigned flow_byte(du_round *d, int64_t n, int64_t r) {
  if (d->fl[n] == FL_UNKNOWN) d->fl[n] = receivers_of(d, n, r);
  return d->fl[n];
}

/* Does padded cell n (padded row r) give flow to its neighbour k? The same
 * as share(d, n, r, k) > 0. */
static inline int gives(du_round *d, int64_t n, int64_t r, int k) {
  const unsigned b = flow_byte(d, n, r);
  if (b & FL_ODD) return share(d, n, r, k) > 0.0;
  if (!(b & FL_HAS1)) return 0;
  const int k1 = (int)(b & FL_K1) + 1;
  return k == k1 || ((b & FL_HAS2) && k == k1 % 8 + 1);
}

/* Are all the donors of tile cell c (padded row r) final? */
static int ready(const du_state *s, du_round *d, int64_t c, int64_t r) {
  for (int k = 1; k <= 8; k++) {
    const int64_t n = c + d->w.g.off[k];
    if (isnan(s->sca[n]) && gives(d, n, r + tr_dinf_nrow[k], BACK(k))) return 0;
  }
  return 1;
}

/* Finishes cell i (padded row r) from its donors (all final), TauDEM's sum. */
static void finish(const du_ctx *x, du_state *s, du_round *d, int64_t i, int64_t r) {
  float acc = 0.0f;
  int con = 0;
  for (int k = 1; k <= 8; k++) {
    const int64_t n = i + d->w.g.off[k];
    if (isnan(d->ang[n])) {
      con = 1;
      continue;
    }
    if (!gives(d, n, r + tr_dinf_nrow[k], BACK(k))) continue;
    const double p = share(d, n, r + tr_dinf_nrow[k], BACK(k));
    if (x->prm.edge_check && sca_con(s->sca[n])) con = 1;
    else acc = (float)((double)acc + p * (double)sca_value(s->sca[n]));
  }
  s->sca[i] = sca_with((float)((double)acc + d->w.dx[r]), con);
}

/* Queues the tile cells that padded cell i (row r, column c) makes ready,
 * its final value just set; 1 when it gives flow to a halo cell. */
static int give(const du_state *s, du_round *d, int64_t i, int64_t r, int64_t c, int64_t *nq) {
  int out = 0;
  for (int k = 1; k <= 8; k++) {
    if (!gives(d, i, r, k)) continue;
    const int64_t t = i + d->w.g.off[k], rt = r + tr_dinf_nrow[k], ct = c + tr_dinf_ncol[k];
    if (rt < 1 || rt > d->w.g.h || ct < 1 || ct > d->w.g.w) out = 1;
    else if (!isnan(d->ang[t]) && isnan(s->sca[t]) && ready(s, d, t, rt))
      d->w.q[(*nq)++] = t; /* once: it became ready with this, its last donor */
  }
  return out;
}

/* The directions padded cell n's (padded row r) flow reaches, in
 * increasing order as gives() finds them, into ks: how many. */
static inline int receivers(du_round *d, int64_t n, int64_t r, int ks[8]) {
  const unsigned b = flow_byte(d, n, r);
  int m = 0;
  if (b & FL_ODD) {
    for (int k = 1; k <= 8; k++)
      if (share(d, n, r, k) > 0.0) ks[m++] = k;
    return m;
  }
  if (!(b & FL_HAS1)) return 0;
  const int k1 = (int)(b & FL_K1) + 1;
  if (!(b & FL_HAS2)) {
    ks[0] = k1;
    return 1;
  }
  const int k2 = k1 % 8 + 1;
  ks[0] = k1 < k2 ? k1 : k2;
  ks[1] = k1 < k2 ? k2 : k1;
  return 2;
}

/* give() with the count of donors not yet final of every tile cell
 * (PEval's, cnt): a receiver is queued when its count falls to 0, which is
 * when ready() would first hold; the same cells in the same order, without
 * ready()'s eight questions per receiver. */
static int give_counted(const du_state *s, du_round *d, int64_t i, int64_t r, int64_t c, uint8_t *cnt, int64_t *nq) {
  int out = 0, ks[8];
  const int m = receivers(d, i, r, ks);
  for (int j = 0; j < m; j++) {
    const int k = ks[j];
    const int64_t t = i + d->w.g.off[k], rt = r + tr_dinf_nrow[k], ct = c + tr_dinf_ncol[k];
    if (rt < 1 || rt > d->w.g.h || ct < 1 || ct > d->w.g.w) out = 1;
    else if (--cnt[t] == 0 && !isnan(d->ang[t]) && isnan(s->sca[t]))
      d->w.q[(*nq)++] = t;
  }
  return out;
}

/* Runs the queue: finishes cells, queues those they make ready, emits
 * final perimeter cells that give flow to a halo cell. cnt: PEval's counts
 * of donors not yet final (give_counted), or NULL (IncEval: ready()). */
static int drain(const du_ctx *x, du_state *s, du_round *d, int64_t nq, uint8_t *cnt, tr_aap_round *rd) {
  int64_t *q = d->w.q, work = 0;
  while (nq > 0) {
    const int64_t i = q[--nq], r = i / d->w.g.pw, c = i - r * d->w.g.pw;
    finish(x, s, d, i, r);
    work++;
    if (cnt ? give_counted(s, d, i, r, c, cnt, &nq) : give(s, d, i, r, c, &nq)) {
      du_msg m = {sca_value(s->sca[i]), sca_con(s->sca[i])};
      if (tr_aap_emit(rd, tr_dag_cell(&d->w.g, x->env->cols, i), &m)) return -1;
    }
  }
  tr_aap_add_work(rd, work);
  return 0;
}

static int du_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  du_ctx *x = user;
  const int64_t n = (f->rows + 2) * (f->cols + 2);
  du_state *s = calloc(1, sizeof *s);
  *state = s;
  if (!s) return -1;
  s->n = n;
  if (tr_dag_arrays_alloc(x->env, f, s, du_arrays, DU_NARRAYS, n)) return -1;
  if (tr_dinf_up_given(x->prm.product)) { /* the sca given: final, nothing flows */
    float *z = tr_graph_window(x->env, f);
    if (!z) return -1;
    memcpy(s->sca, z, (size_t)n * sizeof *z);
    tr_graph_window_done(x->env, f, z);
    return 0;
  }
  for (int64_t i = 0; i < n; i++) s->sca[i] = NAN;
  du_round d;
  if (du_round_begin(x, f, &d)) return -1;
  /* every tile cell's donors (halo ones too: none is final yet) */
  uint8_t *cnt = calloc((size_t)n, 1);
  if (!cnt) {
    du_round_end(x, f, &d);
    return -1;
  }
  for (int64_t r = 0, i = 0; r <= f->rows + 1; r++)
    for (int64_t c = 0; c <= f->cols + 1; c++, i++) {
      int ks[8];
      const int m = receivers(&d, i, r, ks);
      for (int j = 0; j < m; j++) {
        const int64_t rt = r + tr_dinf_nrow[ks[j]], ct = c + tr_dinf_ncol[ks[j]];
        if (rt >= 1 && rt <= f->rows && ct >= 1 && ct <= f->cols) cnt[i + d.w.g.off[ks[j]]]++;
      }
    }
  int64_t nq = 0;
  for (int64_t r = 1; r <= f->rows; r++)
    for (int64_t c = 1; c <= f->cols; c++) {
      const int64_t i = r * d.w.g.pw + c;
      if (!isnan(d.ang[i]) && !cnt[i]) d.w.q[nq++] = i;
    }
  const int rc = drain(x, s, &d, nq, cnt, rd);
  free(cnt);
  du_round_end(x, f, &d);
  return rc;
}

static int du_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                      const void *values, tr_aap_round *rd) {
  du_ctx *x = user;
  du_state *s = state;
  if (tr_dinf_up_given(x->prm.product)) return 0; /* nothing is ever sent */
  du_round d;
  if (du_round_begin(x, f, &d)) return -1;
  int64_t nq = 0;
  for (int64_t m = 0; m < n; m++) {
    du_msg v;
    memcpy(&v, (const unsigned char *)values + (size_t)m * sizeof v, sizeof v);
    const int64_t i = tr_dag_index(&d.w.g, x->env->cols, cells[m]);
    if (!isnan(s->sca[i]) || isnan(d.ang[i])) continue; /* a copy of a value already applied */
    s->sca[i] = sca_with(v.v, v.con != 0);
    const int64_t r = i / d.w.g.pw;
    give(s, &d, i, r, i - r * d.w.g.pw, &nq); /* a halo cell: what it gives out of the tile is not ours */
  }
  const int rc = drain(x, s, &d, nq, NULL, rd);
  du_round_end(x, f, &d);
  return rc;
}

/* What Assemble reads: the state, and for twi the slope's window. */
typedef struct {
  const du_ctx *x;
  const du_state *s;
  const float *slp;
  int spi; /* SPI rather than twi */
} du_out;

static int du_cell(void *u, int64_t i, void *out) {
  const du_out *o = u;
  /* a given sca is the input's own value, sign and all */
  const int given = tr_dinf_up_given(o->x->prm.product);
  const float raw = o->s->sca[i], v = given ? raw : sca_value(raw);
  float y = (float)TR_DINF_UP_NODATA;
  if (!isnan(v) && !(o->x->prm.edge_check && !given && sca_con(raw))) y = v;
  if (o->slp && o->spi) {
    const float sl = o->slp[i];
    y = !isnan(v) && !isnan(sl) && sl >= 0.0f && v > 0.0f ? (float)((double)v * (double)sl) : (float)TR_DINF_UP_NODATA;
  } else if (o->slp) {
    const float sl = o->slp[i];
    y = !isnan(v) && !isnan(sl) && sl > 0.0f && v > 0.0f ? logf(v / sl) : (float)TR_DINF_UP_NODATA;
  }
  memcpy(out, &y, sizeof y);
  return 0;
}

static int du_assemble(void *user, const tr_aap_frag *f, void *state) {
  du_ctx *x = user;
  if (!state) return -1;
  du_out o = {x, state, NULL,
               x->prm.product == TR_DINF_UP_SPI || x->prm.product == TR_DINF_UP_SPI_GIVEN};
  if (x->prm.product != TR_DINF_UP_SCA && !(o.slp = tr_graph_window_in(x->env, 1, f))) return -1;
  const int rc = tr_dag_put(x->env, f, sizeof(float), &o, du_cell);
  if (o.slp) tr_graph_window_in_done(x->env, 1, f, (float *)o.slp);
  return rc;
}

static int du_init(tr_aap_program *p, tr_graph_env *env, const void *params) {
  du_ctx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  x->env = env;
  memcpy(&x->prm, params, sizeof x->prm);
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(du_msg);
  p->user = x;
  p->peval = du_peval;
  p->inceval = du_inceval;
  p->assemble = du_assemble;
  p->destroy = du_destroy;
  p->aggr = tr_dag_keep_first; /* copies of one final value */
  return 0;
}

/* --ft replay's invariant of Assemble's tile: sca >= dx > 0 or nodata
 * (twi: any value; SPI: >= 0 or nodata). */
static int64_t du_check_tile(void *user, const tr_aap_frag *f, const void *state, const void *cells) {
  (void)state;
  const du_ctx *x = user;
  const float *v = cells;
  int64_t bad = 0;
  if (x->prm.product == TR_DINF_UP_SPI || x->prm.product == TR_DINF_UP_SPI_GIVEN) {
    for (int64_t i = 0; i < f->rows * f->cols; i++) bad += !(v[i] >= 0.0f || v[i] == (float)TR_DINF_UP_NODATA);
    return bad;
  }
  if (x->prm.product != TR_DINF_UP_SCA) return 0;
  for (int64_t i = 0; i < f->rows * f->cols; i++) bad += !(v[i] > 0.0f || v[i] == (float)TR_DINF_UP_NODATA);
  return bad;
}

/* state: 4 bytes a padded cell (sca, its sign the contamination); a round
 * holds the flow bytes and PEval the donor counts, a byte a cell each */
static const tr_graph_body body_dinf_up = {.name = "dinf_up",
                                           .init = du_init,
                                           .release = tr_graph_release_user,
                                           .state = {.cell_bytes = 4, .round_bytes = 2},
                                           .msg_bytes = sizeof(du_msg),
                                           .state_bytes = sizeof(du_state),
                                           .check_tile = du_check_tile};

const tr_graph_program tr_program_dinf_up = {
    .name = "dinf_up",
    .cell_type = GDT_Float32,
    .params_size = sizeof(tr_dinf_up_params),
    .bodies = {&body_dinf_up},
};
