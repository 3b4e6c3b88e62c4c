/*
 * acc_perimeter_sums.h - the body of the perimeter accumulation programs
 * (acc_perimeter.c), included once per kind of sum (internal to that file):
 * doubles for "d8_up_perimeter", 128-bit integers in units of 2^-k for
 * "d8_up_wide". Before each inclusion acc_perimeter.c defines:
 *   VAL           the type of a sum;
 *   NS(name)      this kind's name for a function or type;
 *   W_OF(x, w)    a float weight (NaN: NoData, 0) as a VAL;
 *   MSG, MSG_PUT(m, v), MSG_GET(m), AGGR
 *                 the message a final perimeter value travels in, and its
 *                 f_aggr;
 *   OUT(x, v)     a VAL as the double Assemble scales by the unit.
 * and it undefines them at its end.
 */

typedef struct {
  int64_t nper, nhalo;
  VAL *L;            /* local count (0 below an in-tile cycle) */
  VAL *A;            /* what arrived: external inflows and linked cells' A */
  VAL *E;            /* external inflows alone (Assemble adds them) */
  uint32_t *link;    /* perimeter index, LINK_OUT or LINK_NONE */
  uint32_t *pend;    /* inputs still missing (+ NEVER below a cycle) */
  uint32_t *htarget; /* per halo cell: the perimeter cell it drains into, or LINK_NONE */
  uint8_t *flags;    /* F_* */
  uint8_t *epend;    /* external inflows still missing */
  uint8_t *hseen;    /* per halo cell: its value was applied */
} NS(pview);

static size_t NS(blob_bytes)(int64_t nper, int64_t nhalo) {
  return 2 * sizeof(int64_t) + (size_t)nper * (3 * sizeof(VAL) + 2 * sizeof(uint32_t) + 2) +
         (size_t)nhalo * (sizeof(uint32_t) + 1);
}

static NS(pview) NS(view_of)(unsigned char *b) {
  NS(pview) v;
  memcpy(&v.nper, b, sizeof v.nper);
  memcpy(&v.nhalo, b + sizeof(int64_t), sizeof v.nhalo);
  unsigned char *p = b + 2 * sizeof(int64_t);
  v.L = (VAL *)p, p += (size_t)v.nper * sizeof(VAL);
  v.A = (VAL *)p, p += (size_t)v.nper * sizeof(VAL);
  v.E = (VAL *)p, p += (size_t)v.nper * sizeof(VAL);
  v.link = (uint32_t *)p, p += (size_t)v.nper * sizeof(uint32_t);
  v.pend = (uint32_t *)p, p += (size_t)v.nper * sizeof(uint32_t);
  v.htarget = (uint32_t *)p, p += (size_t)v.nhalo * sizeof(uint32_t);
  v.flags = p, p += v.nper;
  v.epend = p, p += v.nper;
  v.hseen = p;
  return v;
}

/* ------------------------------------------------------------ the tile */

/* One round's arrays over the padded window (n cells). */
typedef struct {
  int64_t n, nq;
  int8_t *dir;
  VAL *v;    /* running sum, then the value of a cell that left the queue */
  uint8_t *con;
  uint8_t *rem; /* inflows (and blocks) not yet counted: > 0 at the end = unknown */
  int64_t *q;   /* Kahn's order: every cell that became known, in that order */
} NS(tile_flow);

static void NS(flow_free)(NS(tile_flow) *t) {
  free(t->dir);
  free(t->v);
  free(t->con);
  free(t->rem);
  free(t->q);
  memset(t, 0, sizeof *t);
}

/* Decodes fragment f's directions and accumulates inside the tile: each valid
 * cell counts 1 (or its weight; NoData weighs 0), its in-tile inflows and, with
 * pv (Assemble), its external
 * inflows - a perimeter cell with one still missing stays unknown (as every cell
 * below it). 0, or -1 when out of memory or after tr_graph_fail. */
static int NS(flow_tile)(pctx *x, const tr_aap_frag *f, const tr_d8_win *g, const NS(pview) *pv, NS(tile_flow) *t) {
  memset(t, 0, sizeof *t);
  const int64_t n = g->pw * (g->h + 2);
  t->n = n;
  t->dir = malloc((size_t)n);
  t->v = malloc((size_t)n * sizeof *t->v);
  t->con = malloc((size_t)n);
  t->rem = calloc((size_t)n, 1);
  t->q = malloc((size_t)(g->h * g->w) * sizeof *t->q);
  float *z = t->dir && t->v && t->con && t->rem && t->q ? tr_graph_window(x->env, f) : NULL;
  if (!z) {
    NS(flow_free)(t);
    return -1;
  }
  const int bad = tr_d8_decode(x->env, f, g, &x->lut, x->prm.encoding, x->prm.src, z, t->dir);
  tr_graph_window_done(x->env, f, z);
  /* the weights' window, read with the directions' (twice per tile) */
  const float *wz = !bad && x->prm.weighted ? tr_graph_window_in(x->env, 1, f) : NULL;
  if (bad || (x->prm.weighted && !wz)) {
    NS(flow_free)(t);
    return -1;
  }
  for (int64_t r = 1; r <= g->h; r++)
    for (int64_t c = 1; c <= g->w; c++) {
      const int64_t i = r * g->pw + c;
      if (t->dir[i] == TR_D8_NODATA) continue;
      int rem = 0, con = 0;
      for (int k = 0; k < 8; k++) {
        const int64_t nb = i + g->off[k];
        const int dn = t->dir[nb];
        if (dn == TR_D8_NODATA)
          con = 1;
        else if (dn == (k + 4) % 8 && tr_d8_in_tile(g, nb))
          rem++;
      }
      VAL v = wz ? W_OF(x, wz[i]) : W_OF(x, 1.0f);
      const int64_t p = pv && (r == 1 || r == g->h || c == 1 || c == g->w) ? tr_d8_per_of(g, i) : -1;
      if (p >= 0) {
        v += pv->E[p];
        con |= (pv->flags[p] & F_ECON) != 0;
        rem += pv->epend[p] > 0;
      }
      t->v[i] = v;
      t->con[i] = (uint8_t)con;
      t->rem[i] = (uint8_t)rem;
      if (!rem) t->q[t->nq++] = i;
    }
  if (wz) tr_graph_window_in_done(x->env, 1, f, (float *)wz);
  for (int64_t h = 0; h < t->nq; h++) {
    const int64_t i = t->q[h];
    const int di = t->dir[i];
    if (di < 0) continue;
    const int64_t d = i + g->off[di];
    if (t->dir[d] == TR_D8_NODATA || !tr_d8_in_tile(g, d)) continue;
    t->v[d] += t->v[i];
    t->con[d] |= t->con[i];
    if (--t->rem[d] == 0) t->q[t->nq++] = d;
  }
  return 0;
}

static int NS(known)(const NS(tile_flow) *t, int64_t i) { return t->rem[i] == 0; }
static int NS(flow_dir)(const void *t, int64_t i) { return ((const NS(tile_flow) *)t)->dir[i]; }
static int NS(flow_known)(const void *t, int64_t i) { return NS(known)(t, i); }

/* ------------------------------------------------------------ the links */

/* Finishes perimeter cell k (its counter reached 0) and every cell that
 * becomes final after it along the links; emits those that drain out. */
static int NS(finish)(pctx *x, const tr_d8_win *g, NS(pview) *v, uint32_t k, uint32_t *stack, tr_aap_round *rd) {
  int64_t top = 0, work = 0;
  stack[top++] = k;
  while (top > 0) {
    const uint32_t p = stack[--top];
    v->flags[p] |= F_FINAL;
    work++;
    const uint32_t to = v->link[p];
    if (to == LINK_OUT) {
      MSG m;
      memset(&m, 0, sizeof m);
      MSG_PUT(m, v->L[p] + v->A[p]);
      m.con = (uint8_t)((v->flags[p] & (F_LCON | F_ACON)) != 0);
      if (tr_aap_emit(rd, tr_d8_cell(g, x->env->cols, tr_d8_per_cell(g, p)), &m)) return -1;
    } else if (to != LINK_NONE) {
      v->A[to] += v->A[p];
      if (v->flags[p] & F_ACON) v->flags[to] |= F_ACON;
      if (--v->pend[to] == 0) stack[top++] = to;
    }
  }
  tr_aap_add_work(rd, work);
  return 0;
}

/* Cell d, which a tile cell drains into, as a link: a perimeter cell, out of
 * the tile, or none (NoData, or an inner cell below a cycle); nx holds the
 * links of the inner cells below it. One division for its row and column. */
static uint32_t NS(link_of)(const tr_d8_win *g, const NS(tile_flow) *t, const uint32_t *nx, int64_t d) {
  if (t->dir[d] == TR_D8_NODATA) return LINK_NONE;
  const int64_t r = d / g->pw, c = d % g->pw;
  if (r < 1 || r > g->h || c < 1 || c > g->w) return LINK_OUT;
  if (r == 1 || r == g->h || c == 1 || c == g->w) return (uint32_t)tr_d8_ring_index(g->h, g->w, r - 1, c - 1);
  return NS(known)(t, d) ? nx[d] : LINK_NONE;
}

static int NS(perim_peval)(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  pctx *x = user;
  const tr_d8_win g = tr_d8_win_of(f);
  NS(tile_flow) t;
  if (NS(flow_tile)(x, f, &g, NULL, &t)) return -1;
  const int64_t nper = tr_d8_ring_size(g.h, g.w), nhalo = tr_d8_ring_size(g.h + 2, g.w + 2);
  pstate *s = calloc(1, sizeof *s);
  *state = s;
  const size_t bytes = NS(blob_bytes)(nper, nhalo);
  if (s) s->blob = calloc(1, bytes);
  /* nx[i]: the first perimeter cell downstream of tile cell i, from the cells
   * below it (Kahn's order backwards), or LINK_NONE */
  uint32_t *nx = s && s->blob ? malloc((size_t)t.n * sizeof *nx) : NULL;
  uint32_t *stack = nx ? malloc((size_t)nper * sizeof *stack) : NULL;
  if (!stack || tr_graph_keep(x->env, f, &s->blob, bytes, NULL)) {
    free(nx);
    free(stack);
    NS(flow_free)(&t);
    return -1;
  }
  memcpy(s->blob, &nper, sizeof nper);
  memcpy(s->blob + sizeof(int64_t), &nhalo, sizeof nhalo);
  NS(pview) v = NS(view_of)(s->blob);
  for (int64_t h = t.nq - 1; h >= 0; h--) {
    const int64_t i = t.q[h];
    nx[i] = t.dir[i] < 0 ? LINK_NONE : NS(link_of)(&g, &t, nx, i + g.off[t.dir[i]]);
  }
  for (int64_t k = 0; k < nper; k++) {
    const int64_t i = tr_d8_per_cell(&g, k);
    v.link[k] = LINK_NONE;
    if (t.dir[i] == TR_D8_NODATA) continue; /* never final, never read */
    if (NS(known)(&t, i)) {
      v.L[k] = t.v[i];
      if (t.con[i]) v.flags[k] |= F_LCON;
    } else {
      v.pend[k] += NEVER;
    }
    if (t.dir[i] >= 0) v.link[k] = NS(known)(&t, i) ? nx[i] : NS(link_of)(&g, &t, nx, i + g.off[t.dir[i]]);
    /* the external inflows it waits for */
    for (int d = 0; d < 8; d++) {
      const int64_t nb = i + g.off[d];
      if (t.dir[nb] == (d + 4) % 8 && !tr_d8_in_tile(&g, nb)) v.epend[k]++;
    }
    v.pend[k] += v.epend[k];
  }
  for (int64_t k = 0; k < nper; k++)
    if (v.link[k] < LINK_OUT) v.pend[v.link[k]]++;
  for (int64_t j = 0; j < nhalo; j++) {
    int64_t r, c;
    tr_d8_ring_cell(g.h + 2, g.w + 2, j, &r, &c);
    const int64_t hi = r * g.pw + c;
    const int dh = t.dir[hi];
    v.htarget[j] = LINK_NONE;
    if (dh < 0) continue;
    const int64_t d = hi + g.off[dh];
    if (d >= 0 && d < t.n && tr_d8_in_tile(&g, d) && t.dir[d] != TR_D8_NODATA)
      v.htarget[j] = (uint32_t)tr_d8_per_of(&g, d);
  }
  int rc = 0;
  for (int64_t k = 0; k < nper && !rc; k++)
    if (t.dir[tr_d8_per_cell(&g, k)] != TR_D8_NODATA && v.pend[k] == 0 && !(v.flags[k] & F_FINAL))
      rc = NS(finish)(x, &g, &v, (uint32_t)k, stack, rd);
  tr_aap_add_work(rd, t.nq);
  free(nx);
  free(stack);
  NS(flow_free)(&t);
  return rc;
}

static int NS(perim_inceval)(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                         const void *values, tr_aap_round *rd) {
  pctx *x = user;
  pstate *s = state;
  const tr_d8_win g = tr_d8_win_of(f);
  NS(pview) v = NS(view_of)(s->blob);
  uint32_t *stack = malloc((size_t)v.nper * sizeof *stack);
  if (!stack) return -1;
  int rc = 0;
  for (int64_t m = 0; m < n && !rc; m++) {
    const int64_t i = tr_d8_index(&g, x->env->cols, cells[m]);
    const int64_t j = tr_d8_halo_of(&g, i);
    if (j < 0 || v.hseen[j] || v.htarget[j] == LINK_NONE) continue; /* a copy of a value already applied */
    MSG val;
    memcpy(&val, (const unsigned char *)values + (size_t)m * sizeof val, sizeof val);
    v.hseen[j] = 1;
    const uint32_t p = v.htarget[j];
    const VAL got = MSG_GET(val);
    v.E[p] += got;
    v.A[p] += got;
    if (val.con) v.flags[p] |= F_ECON | F_ACON;
    v.epend[p]--;
    if (--v.pend[p] == 0) rc = NS(finish)(x, &g, &v, p, stack, rd);
  }
  free(stack);
  return rc;
}

static int NS(perim_assemble)(void *user, const tr_aap_frag *f, void *state) {
  pctx *x = user;
  pstate *s = state;
  if (!s || !s->blob) return -1;
  const tr_d8_win g = tr_d8_win_of(f);
  const NS(pview) v = NS(view_of)(s->blob);
  NS(tile_flow) t;
  if (NS(flow_tile)(x, f, &g, &v, &t)) return -1;
  double *tile = malloc((size_t)(g.h * g.w) * sizeof *tile);
  const double nd = x->prm.product == TR_UP_ACC ? TR_ACC_NODATA : TR_BYTE_NODATA;
  int rc = tile ? 0 : -1;
  for (int64_t r = 0; r < g.h && !rc; r++)
    for (int64_t c = 0; c < g.w && !rc; c++) {
      const int64_t i = (r + 1) * g.pw + c + 1;
      double out = nd;
      if (t.dir[i] != TR_D8_NODATA) {
        if (!NS(known)(&t, i)) {
          /* the same cell of the cycle as "d8_up" names */
          rc = tr_d8_fail_cycle(x->env, f, &g, x->prm.src, tr_d8_cycle_cell(&g, t.n, i, &t, NS(flow_dir), NS(flow_known)));
          break;
        }
        const double val = OUT(x, t.v[i]) * x->prm.unit;
        out = x->prm.product == TR_UP_ACC ? (x->prm.edge_check && t.con[i] ? nd : val)
                                          : (double)(val >= x->prm.threshold);
      }
      tile[r * g.w + c] = out;
    }
  if (!rc) rc = x->env->put(x->env, f, tile);
  free(tile);
  NS(flow_free)(&t);
  return rc;
}

static int NS(perim_init)(tr_aap_program *p, tr_graph_env *env, const void *params) {
  pctx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  x->env = env;
  memcpy(&x->prm, params, sizeof x->prm);
  tr_d8_lut_init(&x->lut, x->prm.encoding);
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(MSG);
  p->user = x;
  p->peval = NS(perim_peval);
  p->inceval = NS(perim_inceval);
  p->assemble = NS(perim_assemble);
  p->destroy = perim_destroy;
  p->aggr = AGGR;
  p->assemble_parallel = 1; /* Assemble accumulates its tile again: on every thread */
  return 0;
}

#undef VAL
#undef NS
#undef W_OF
#undef MSG
#undef MSG_PUT
#undef MSG_GET
#undef AGGR
#undef OUT
