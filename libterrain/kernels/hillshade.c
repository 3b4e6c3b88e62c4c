/*
 * hillshade.c - gdaldem-compatible hillshade (GDAL 3.6): the standard,
 * -combined, -multidirectional and -igor shadings over Horn or
 * Zevenbergen-Thorne gradients, Byte 1..255 with nodata 0.
 *
 * The bytes are gdaldem's, so its arithmetic is followed step by step: the
 * window sums in Float32, the rest in double, and a / sqrt(b) the way its
 * ApproxADivByInvSqrtB gets it on x86-64: the SSE reciprocal square root
 * estimate of (float)b, refined by one Newton-Raphson step in double. The
 * estimate is the CPU's own (rsqrtps is not exact, and Intel's and AMD's
 * differ), so terrafort and gdaldem agree on the same machine; without SSE2
 * the exact a / sqrt(b) is used, within one grey level of gdaldem. Shades go
 * to Byte as GDAL converts Float32 (add 0.5, clamp to [0.5, 255], truncate),
 * so a NaN (-combined's acos of a value just above 1) becomes 0 there too.
 *
 * Which formula gdaldem uses depends on the input, and so here:
 * - Horn, standard shading, square cells (gt[1] == -gt[5]): its "same_res"
 *   form, with the window differences summed in another order and the cell
 *   size folded into the constants; every other case the general form;
 * - -s divides z (z / (8 s), or 2 s for ZT), not the cell size, as 3.6 does;
 * - Byte, Int16 and UInt16 inputs take gdaldem's integer path (Int32
 *   windows: the sums are exact, as they are in Float32 for 16-bit values).
 *   In the same_res form, columns 1 .. 4k of rows whose three lines hold no
 *   nodata go through an SSE loop that adds the final 1 in float, not in
 *   double. Which rows those are depends on the whole row, which a tile does
 *   not see, so that rounding is used for cells whose own 3x3 window is
 *   clean: a cell in a row with nodata elsewhere may differ by one grey level,
 *   about once in 1e5 such cells. An integer nodata that is not a whole
 *   number in the type's range is ignored, as gdaldem does.
 * - geographic DEMs without -s: per-row metric cell sizes (gradient.h) in
 *   the general form.
 *
 * Interior cells of tiles without nodata take the fast path: the standard
 * shading is estimated four cells at a time in Float32 with SSE2 (within
 * 3e-4 of gdaldem's shade), and only the cells whose estimate lies within
 * 1/256 of a rounding boundary are recomputed exactly, so the bytes are
 * those of the exact arithmetic. Every other cell goes through tr_window3
 * and the exact arithmetic, so a cell's byte never depends on the tile,
 * thread or rank that computed it.
 */
#include <math.h>
#include <string.h>

#include "gradient.h"
#include "hillshade_cell.h"

#if defined(__SSE2__)
/* Grey levels closer than this to a rounding boundary (k + 0.5) are
 * recomputed exactly; the float estimate is within 3e-4 of gdaldem's. */
#define HS_MARGIN (1.0f / 256)

/* A row's constants as Float32 vectors, for the estimate below. */
typedef struct {
  __m128 s254, fx, fy, k, inv_ew, inv_ns, caz254, saz254;
} hs_vec;

static inline hs_vec hs_vec_of(const hs_row *h) {
  hs_vec v;
  v.s254 = _mm_set1_ps((float)h->s254);
  v.fx = _mm_set1_ps((float)h->fx);
  v.fy = _mm_set1_ps((float)h->fy);
  v.k = _mm_set1_ps((float)(h->same_res ? h->k_same : h->sq_z));
  v.inv_ew = _mm_set1_ps((float)h->inv_ew);
  v.inv_ns = _mm_set1_ps((float)h->inv_ns);
  v.caz254 = _mm_set1_ps((float)h->caz254);
  v.saz254 = _mm_set1_ps((float)h->saz254);
  return v;
}

/* Standard shading of four cells from their float differences (same_res:
 * gdaldem's accX/accY; general: the Horn or ZT differences) into bytes,
 * estimated in float. Returns the mask of lanes whose byte is certain. */
static inline int std4(const hs_vec *c, int same_res, __m128 x, __m128 y, int ms, uint8_t *o) {
  const __m128 one = _mm_set1_ps(1.0f), half = _mm_set1_ps(0.5f), sign = _mm_set1_ps(-0.0f);
  __m128 num;
  if (same_res) {
    num = _mm_add_ps(c->s254, _mm_add_ps(_mm_mul_ps(x, c->fx), _mm_mul_ps(y, c->fy)));
  } else {
    x = _mm_mul_ps(x, c->inv_ew);
    y = _mm_mul_ps(y, c->inv_ns);
    num = _mm_sub_ps(c->s254, _mm_sub_ps(_mm_mul_ps(y, c->caz254), _mm_mul_ps(x, c->saz254)));
  }
  const __m128 den = _mm_add_ps(one, _mm_mul_ps(c->k, _mm_add_ps(_mm_mul_ps(x, x), _mm_mul_ps(y, y))));
  __m128 r = _mm_rsqrt_ps(den);
  r = _mm_mul_ps(r, _mm_sub_ps(_mm_set1_ps(1.5f), _mm_mul_ps(_mm_mul_ps(half, den), _mm_mul_ps(r, r))));
  const __m128 v = _mm_mul_ps(num, r);
  const __m128 f = ms ? _mm_max_ps(_mm_add_ps(v, one), one) : _mm_add_ps(one, _mm_max_ps(v, _mm_setzero_ps()));
  const __m128 t = _mm_add_ps(f, half);
  const __m128 dist = _mm_andnot_ps(sign, _mm_sub_ps(t, _mm_cvtepi32_ps(_mm_cvtps_epi32(t))));
  /* NaN and overflow fail the second test and go to the exact path */
  const __m128 sure = _mm_and_ps(_mm_cmpge_ps(dist, _mm_set1_ps(HS_MARGIN)),
                                 _mm_cmplt_ps(_mm_andnot_ps(sign, v), _mm_set1_ps(1e4f)));
  __m128i b = _mm_cvttps_epi32(_mm_min_ps(_mm_max_ps(t, half), _mm_set1_ps(255.0f)));
  b = _mm_packs_epi32(b, b);
  b = _mm_packus_epi16(b, b);
  const int32_t bytes = _mm_cvtsi128_si32(b);
  memcpy(o, &bytes, 4);
  return _mm_movemask_ps(sure);
}
#endif

/* Columns [a, b) of an interior row of a clean tile, standard shading. */
static void std_run(const tr_gradient_params *p, const hs_row *h, const float *up, const float *md,
                    const float *dn, int64_t a, int64_t b, int ms, uint8_t *o) {
  int64_t c = a;
#if defined(__SSE2__)
  const hs_vec k = hs_vec_of(h);
  const int same_res = h->same_res, horn = p->alg == TR_GRAD_HORN;
  for (; c + 4 <= b; c += 4) {
    const __m128 w0 = _mm_loadu_ps(up + c - 1), w1 = _mm_loadu_ps(up + c), w2 = _mm_loadu_ps(up + c + 1);
    const __m128 w3 = _mm_loadu_ps(md + c - 1), w5 = _mm_loadu_ps(md + c + 1);
    const __m128 w6 = _mm_loadu_ps(dn + c - 1), w7 = _mm_loadu_ps(dn + c), w8 = _mm_loadu_ps(dn + c + 1);
    __m128 dx, dy;
    if (same_res) {
      const __m128 s62 = _mm_sub_ps(w6, w2), t35 = _mm_sub_ps(w3, w5), o17 = _mm_sub_ps(w1, w7);
      dx = dy = _mm_sub_ps(w0, w8);
      dx = _mm_add_ps(dx, t35);
      dy = _mm_add_ps(dy, o17);
      dx = _mm_add_ps(dx, t35);
      dy = _mm_add_ps(dy, o17);
      dx = _mm_add_ps(dx, s62);
      dy = _mm_sub_ps(dy, s62);
    } else if (horn) {
      dx = _mm_sub_ps(_mm_add_ps(_mm_add_ps(_mm_add_ps(w0, w3), w3), w6),
                      _mm_add_ps(_mm_add_ps(_mm_add_ps(w2, w5), w5), w8));
      dy = _mm_sub_ps(_mm_add_ps(_mm_add_ps(_mm_add_ps(w6, w7), w7), w8),
                      _mm_add_ps(_mm_add_ps(_mm_add_ps(w0, w1), w1), w2));
    } else {
      dx = _mm_sub_ps(w3, w5);
      dy = _mm_sub_ps(w7, w1);
    }
    const int sure = std4(&k, same_res, dx, dy, ms, o + c);
    if (sure == 0xF) continue;
    for (int i = 0; i < 4; i++) {
      if (sure >> i & 1) continue;
      const int64_t j = c + i;
      const float w[9] = {up[j - 1], up[j], up[j + 1], md[j - 1], md[j], md[j + 1], dn[j - 1], dn[j], dn[j + 1]};
      o[j] = hs_byte(hs_value(p, h, w, ms));
    }
  }
#endif
  for (; c < b; c++) {
    const float w[9] = {up[c - 1], up[c], up[c + 1], md[c - 1], md[c], md[c + 1], dn[c - 1], dn[c], dn[c + 1]};
    o[c] = hs_byte(hs_value(p, h, w, ms));
  }
}

/* A cell off the fast path: raster edges and nodata, by gdaldem's rules. */
static uint8_t slow_cell(const tr_gradient_params *p, const hs_row *h, const tr_window *w, int64_t r, int64_t c) {
  float win[9];
  if (!tr_window3(w, &p->nd, p->compute_edges, r, c, win)) return 0;
  const int64_t gr = w->grow0 + r, gc = w->gcol0 + c;
  const int interior = gr >= 1 && gr < w->raster_rows - 1;
  const int ms = interior && gc >= 1 && gc < h->ms_end && raw_clean(w, &p->nd, r, c);
  return hs_byte(hs_value(p, h, win, ms));
}

static int hillshade_kernel(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *outv) {
  const tr_gradient_params *p = params;
  uint8_t *out = outv;
  const int clean = tr_window_clean(w, &p->nd);
  hs_row h;
  for (int64_t r = row0; r < row0 + nrows; r++) {
    const int64_t gr = w->grow0 + r;
    uint8_t *o = out + (r - row0) * w->cols;
    /* the constants change from row to row only with per-row cell sizes */
    if (r == row0 || p->geographic) hs_row_init(p, gr, w->raster_cols, &h);
    /* Columns [lo, hi) take the fast path: an interior row of a tile
     * without nodata, minus the raster's first and last column. */
    int64_t lo = 0, hi = 0;
    if (clean && gr != 0 && gr != w->raster_rows - 1) {
      lo = w->gcol0 == 0 ? 1 : 0;
      hi = w->gcol0 + w->cols == w->raster_cols ? w->cols - 1 : w->cols;
      const float *up = tr_row(w, r - 1), *md = tr_row(w, r), *dn = tr_row(w, r + 1);
      if (p->shade == TR_SHADE_STANDARD) {
        /* split where gdaldem's integer SSE loop ends */
        int64_t split = h.ms_end - w->gcol0;
        split = split < lo ? lo : split > hi ? hi : split;
        std_run(p, &h, up, md, dn, lo, split, 1, o);
        std_run(p, &h, up, md, dn, split, hi, 0, o);
      } else {
        for (int64_t c = lo; c < hi; c++) {
          const float win[9] = {up[c - 1], up[c], up[c + 1], md[c - 1], md[c],
                                md[c + 1], dn[c - 1], dn[c], dn[c + 1]};
          o[c] = hs_byte(hs_value(p, &h, win, 0));
        }
      }
    }
    for (int64_t c = 0; c < lo; c++) o[c] = slow_cell(p, &h, w, r, c);
    for (int64_t c = hi; c < w->cols; c++) o[c] = slow_cell(p, &h, w, r, c);
  }
  return 0;
}

/* The gradient family's set-up, plus what hillshade takes from the input
 * type: gdaldem's integer path and its rule for integer nodata values. */
static int hillshade_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  const int st = tr_gradient_prepare(in, opts, params, prod, err);
  if (st != TR_OK) return st;
  tr_gradient_params *p = params;
  p->int_source = in->type == GDT_Byte || in->type == GDT_Int16 || in->type == GDT_UInt16;
  if (p->int_source)
    p->nd = tr_nodata_gdaldem(in->type, in->has_nodata, in->nodata);
  return TR_OK;
}

void tr_hillshade_opts_init(tr_hillshade_opts *o) {
  tr_run_opts_init(&o->run);
  o->alg = TR_GRAD_HORN;
  o->mode = TR_SHADE_STANDARD;
  o->z = 1.0;
  o->scale = 0;
  o->azimuth = 315.0;
  o->altitude = 45.0;
  o->compute_edges = 0;
}

/* No output invariant: every byte is a possible shade (0: nodata). */
const tr_kernel tr_kernel_hillshade = {
    .name = "hillshade",
    .halo = 1,
    .params_size = sizeof(tr_gradient_params),
    .out_type = GDT_Byte,
    .bands = 1,
    .cpu = hillshade_kernel};

int tr_hillshade(const tr_hillshade_opts *opts, const char *src, const char *dst, tr_error *err) {
  if (opts->mode < TR_SHADE_STANDARD || opts->mode > TR_SHADE_IGOR)
    return tr_fail(err, TR_EUSAGE, "unknown hillshade mode %d", (int)opts->mode);
  if (!isfinite(opts->z) || !isfinite(opts->azimuth) || !isfinite(opts->altitude))
    return tr_fail(err, TR_EUSAGE, "z, azimuth and altitude must be finite numbers");
  tr_gradient_setup g;
  memset(&g, 0, sizeof g);
  tr_gradient_params *p = &g.p;
  p->alg = opts->alg;
  p->compute_edges = opts->compute_edges;
  p->dst_nodata = 0.0f;
  p->dst_has_nodata = 1;
  p->z = opts->z;
  p->azimuth = opts->azimuth;
  p->altitude = opts->altitude;
  p->shade = opts->mode;
  g.scale_opt = opts->scale;
  return tr_run_kernel(&opts->run, "hillshade", hillshade_prepare, &g, src, dst, err);
}
