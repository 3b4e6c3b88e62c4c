/*
 * dag_round.c - a round's buffers and a state's arrays for the programs
 * that compute each cell once from final inputs (dag_round.h says which and
 * why).
 */
#include "dag_round.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int tr_dag_round_begin(tr_dag_round *w, const tr_aap_frag *f, const tr_d8_geom *geom, int64_t grid_rows,
                       unsigned want) {
  memset(w, 0, sizeof *w);
  w->g = tr_dag_win_of(f);
  const int64_t nr = f->rows + 2;
  w->q = malloc((size_t)(f->rows * f->cols) * sizeof *w->q);
  w->dx = malloc((size_t)nr * sizeof *w->dx);
  w->dy = malloc((size_t)nr * sizeof *w->dy);
  if (want & TR_DAG_AREF) w->aref = malloc((size_t)nr * 10 * sizeof *w->aref);
  if (want & TR_DAG_STEPS) w->len = malloc((size_t)nr * 9 * sizeof *w->len);
  if (!w->q || !w->dx || !w->dy || ((want & TR_DAG_AREF) && !w->aref) || ((want & TR_DAG_STEPS) && !w->len)) {
    tr_dag_round_end(w);
    return -1;
  }
  for (int64_t r = 0; r < nr; r++) {
    tr_dinf_row_dxdy(geom, grid_rows, f->row0 + r - 1, &w->dx[r], &w->dy[r]);
    if (w->aref) tr_dinf_aref(w->dx[r], w->dy[r], w->aref + 10 * r);
    if (w->len) {
      w->len[9 * r] = 0.0f;
      for (int k = 1; k <= 8; k++) {
        const double dc = tr_dinf_ncol[k] * w->dx[r], dr = tr_dinf_nrow[k] * w->dy[r];
        w->len[9 * r + k] = (float)sqrt(dc * dc + dr * dr);
      }
    }
  }
  return 0;
}

void tr_dag_round_end(tr_dag_round *w) {
  free(w->q);
  free(w->dx);
  free(w->dy);
  free(w->aref);
  free(w->len);
  memset(w, 0, sizeof *w);
}

/* The pointer of array a in state s. */
static void **slot(void *s, const tr_dag_array *a) { return (void **)((unsigned char *)s + a->offset); }

int tr_dag_arrays_alloc(tr_graph_env *env, const tr_aap_frag *f, void *s, const tr_dag_array *a, int na, int64_t n) {
  for (int j = 0; j < na; j++) {
    void **pp = slot(s, &a[j]);
    *pp = calloc((size_t)n, a[j].elem);
    if (!*pp) return -1;
  }
  for (int j = 0; j < na; j++)
    if (tr_graph_keep(env, f, slot(s, &a[j]), (size_t)n * a[j].elem, NULL)) return -1;
  return 0;
}

void tr_dag_arrays_free(void *s, const tr_dag_array *a, int na) {
  for (int j = 0; j < na; j++) {
    void **pp = slot(s, &a[j]);
    free(*pp);
    *pp = NULL;
  }
}

int tr_dag_keep_first(void *user, void *acc, const void *value) {
  (void)user;
  (void)acc;
  (void)value;
  return 0;
}

int tr_dag_put(tr_graph_env *env, const tr_aap_frag *f, size_t elem, void *u,
               int (*cell)(void *u, int64_t i, void *out)) {
  const int64_t h = f->rows, wd = f->cols, pw = wd + 2;
  unsigned char *tile = malloc((size_t)(h * wd) * elem);
  if (!tile) return -1;
  for (int64_t r = 1; r <= h; r++)
    for (int64_t c = 1; c <= wd; c++)
      if (cell(u, r * pw + c, tile + (size_t)((r - 1) * wd + (c - 1)) * elem)) {
        free(tile);
        return -1;
      }
  const int rc = env->put(env, f, tile);
  free(tile);
  return rc;
}
