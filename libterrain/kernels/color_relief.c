/*
 * color_relief.c - gdaldem-compatible color-relief: each DEM cell through a
 * colour table to an RGB or RGBA Byte cell.
 *
 * Two rows of the kernel table share one CPU function: "color-relief" (3
 * bands) and "color-relief-rgba" (4 bands, -alpha); the table fixes a row's
 * band count, the params carry it to the shared function. Halo 0.
 *
 * The colour text file (format in terrafort-color-relief(1)) is read by the
 * prepare function, on every rank, with the input open: "nv" needs the
 * band's nodata and "N%" its minimum and maximum. The parsed table lives in
 * a fixed array inside the params (plain data, copied to ranks), so a file
 * holds at most TR_COLOR_RELIEF_MAX_ENTRIES entries. Numbers must be
 * numbers: gdaldem reads "abc" as 0, here it is an error naming the line.
 *
 * Everything else is what GDAL 3.6.2's gdaldem does, checked against it:
 * - percentages: the band's STATISTICS_MINIMUM/MAXIMUM when both are stored,
 *   else exact statistics (no sampling; found before the file is parsed,
 *   each rank over its share of the rows: tr_run_kernel_ranged); gdaldem stores those as "%.14g"
 *   metadata, so its later percentages read them back rounded: so do we.
 *   Both stay 0 when no cell is valid. Nothing is written beside the DEM
 *   (gdaldem leaves a .aux.xml there).
 * - the entries are stably sorted (NaN first), an entry is added next to the
 *   nodata entry on each side (the neighbour's colour, |nodata| x
 *   DBL_EPSILON away) so nodata hardly blends into the ramp, and runs of
 *   equal elevations are spread by a few ulp so a repeated elevation makes a
 *   sharp step.
 * - a cell's Float32 value, widened to double, is looked up by gdaldem's
 *   binary search; components between two entries are interpolated and
 *   rounded as (int)(0.45 + c0 + t (c1 - c0)), clamped to 0..255.
 * - -exact_color_entry in 3.6 colours only cells equal to the lowest entry
 *   (and NaN cells when that entry is a NaN nodata); every other cell is
 *   0,0,0(,0). Later GDAL fixed this; a drop-in for 3.6 keeps it.
 * - nodata cells get the colour of their value like any cell: the "nv"
 *   entry's when there is one. The output declares no nodata. Non-finite
 *   cells of a DEM that declares nodata are nodata cells (gdaldem colours
 *   them as values; see cr_prepare).
 *
 * Speed: gdaldem searches the table for every cell. Here the value range is
 * cut into CR_BINS bins and a bin whose every possible Float32 value gets
 * one colour stores it (exactly: see cr_build_lut), so most cells cost a
 * multiply and a table read; the rest are searched as gdaldem does. The
 * params (about 280 KB with the bins) are built once per rank.
 */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_vsi.h>

#include "executor.h"
#include "kernel.h"

#define CR_MAX_FILE TR_COLOR_RELIEF_MAX_ENTRIES
/* Each file entry may gain one neighbour next to the nodata entry. */
#define CR_MAX (2 * CR_MAX_FILE)

/* Most cells skip the search: a value range is cut into CR_BINS equal
 * bins, and a bin whose cells all get one colour holds it (cr_build_lut). */
#define CR_BINS 65536

typedef struct {
  int32_t n;                        /* entries in use */
  int32_t mode;                     /* tr_color_mode */
  int32_t bands;                    /* 3 or 4 */
  int32_t nan_first;                /* entry 0 is NaN (the "nv" of a NaN nodata) */
  int32_t lut_on;                   /* the fields below are filled */
  double nan_as;                    /* what a NaN cell is coloured as (see cr_prepare) */
  double lo, hi;                    /* the first and last numeric entries */
  uint8_t below[4], above[4];       /* the colour of every value under lo, over hi */
  double bin_lo, bin_hi, bin_scale; /* the binned range: no bin when bin_lo > bin_hi */
  double val[CR_MAX];
  int32_t rgba[CR_MAX][4]; /* as the file gives them: may lie outside 0..255 */
  uint8_t bin_rgba[CR_BINS][4];
  uint8_t bin_const[CR_BINS / 8]; /* bit k: every cell of bin k is bin_rgba[k] */
} cr_params;

/* ------------------------------------------------------------- lookup */

/* A component between two entries, as gdaldem rounds it. The cast of an
 * out-of-range double is x86's INT_MIN in gdaldem, which its clamp makes 0. */
static inline uint8_t cr_blend(int32_t c0, int32_t c1, double t) {
  const double x = (0.45 + c0) + t * (double)(c1 - c0);
  if (!(x > -2147483649.0 && x < 2147483648.0)) return 0;
  const int k = (int)x;
  return (uint8_t)(k < 0 ? 0 : k > 255 ? 255 : k);
}

static inline void cr_put(const cr_params *p, int nb, int64_t e, uint8_t *o) {
  for (int k = 0; k < nb; k++) o[k] = (uint8_t)p->rgba[e][k];
}

/* gdaldem's binary search: the index of the first entry not below v (n when
 * none), over the entries after a leading NaN one. -1: v is NaN and entry
 * 0 is NaN. */
static inline int64_t cr_index(const cr_params *p, double v) {
  const double *val = p->val;
  const int64_t n = p->n;
  int64_t lower = 0;
  if (p->nan_first) {
    if (isnan(v)) return -1;
    lower = 1;
  }
  int64_t upper = n - 1;
  if (upper < lower) return n; /* a lone NaN entry: gdaldem's unsigned search ends past it */
  while (upper - lower > 1) {
    const int64_t mid = (lower + upper) / 2;
    const int ge = val[mid] >= v;
    upper = ge ? mid : upper;
    lower = ge ? lower : mid;
  }
  return v <= val[lower] ? lower : v <= val[upper] ? upper : upper + 1;
}

/* The rest of gdaldem's GDALColorReliefGetRGBA, for v at index i; nb is 3 or 4. */
static inline void cr_colour(const cr_params *p, int nb, double v, int64_t i, uint8_t *o) {
  const double *val = p->val;
  const int64_t n = p->n;
  const int exact = p->mode == TR_COLOR_EXACT;
  if (i < 0) {
    cr_put(p, nb, 0, o);
    return;
  }
  if (i == 0 || i == n) {
    const int64_t e = i == 0 ? 0 : n - 1;
    if (exact && val[e] != v)
      memset(o, 0, (size_t)nb);
    else
      cr_put(p, nb, e, o);
    return;
  }
  const double a = val[i - 1], b = val[i];
  if (exact && a != v) {
    memset(o, 0, (size_t)nb);
  } else if (p->mode == TR_COLOR_NEAREST && a != v) {
    cr_put(p, nb, v - a < b - v ? i - 1 : i, o);
  } else if (a == v) {
    cr_put(p, nb, i - 1, o);
  } else if (isnan(a)) {
    cr_put(p, nb, i, o);
  } else {
    const double t = (v - a) / (b - a);
    for (int k = 0; k < nb; k++) o[k] = cr_blend(p->rgba[i - 1][k], p->rgba[i][k], t);
  }
}

/* The bin of a value in [bin_lo, bin_hi]: monotone in v, and this one
 * expression both builds the bins and finds them. */
static inline int64_t cr_bin(double v, double bin_lo, double bin_scale) {
  const int64_t k = (int64_t)((v - bin_lo) * bin_scale);
  return k < CR_BINS - 1 ? k : CR_BINS - 1;
}

static inline void cr_rows(const cr_params *p, int nb, const tr_window *w, int64_t row0, int64_t nrows, uint8_t *out) {
  /* Locals: the output bytes could alias the params for the compiler. */
  const int lut = p->lut_on;
  const double lo = p->lo, hi = p->hi, blo = p->bin_lo, bhi = p->bin_hi, bs = p->bin_scale, nan_as = p->nan_as;
  uint8_t below[4], above[4];
  memcpy(below, p->below, sizeof below);
  memcpy(above, p->above, sizeof above);
  const uint8_t(*bins)[4] = p->bin_rgba;
  const uint8_t *known = p->bin_const;
  for (int64_t r = row0; r < row0 + nrows; r++) {
    const float *in = tr_row(w, r);
    uint8_t *o = out + (r - row0) * w->cols * nb;
    for (int64_t c = 0; c < w->cols; c++, o += nb) {
      const double v = in[c];
      if (lut) {
        if (v >= blo && v <= bhi) {
          const int64_t k = cr_bin(v, blo, bs);
          if (known[k >> 3] & (1u << (k & 7))) {
            memcpy(o, bins[k], (size_t)nb);
            continue;
          }
        } else if (v < lo) {
          memcpy(o, below, (size_t)nb);
          continue;
        } else if (v > hi) {
          memcpy(o, above, (size_t)nb);
          continue;
        }
      }
      const double x = v == v ? v : nan_as;
      cr_colour(p, nb, x, cr_index(p, x), o);
    }
  }
}

static int cr_kernel(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out) {
  const cr_params *p = params;
  /* Constant band counts let the compiler unroll the per-cell stores. */
  if (p->bands == 4)
    cr_rows(p, 4, w, row0, nrows, out);
  else
    cr_rows(p, 3, w, row0, nrows, out);
  return 0;
}

/* No output invariant: every byte is a possible channel value. */
const tr_kernel tr_kernel_color_relief = {
    .name = "color-relief",
    .halo = 0,
    .params_size = sizeof(cr_params),
    .out_type = GDT_Byte,
    .bands = 3,
    .cpu = cr_kernel};
const tr_kernel tr_kernel_color_relief_rgba = {
    .name = "color-relief-rgba",
    .halo = 0,
    .params_size = sizeof(cr_params),
    .out_type = GDT_Byte,
    .bands = 4,
    .cpu = cr_kernel};

/* ------------------------------------------------------ the colour file */

typedef struct {
  double val;
  int32_t rgba[4];
} cr_entry;

/* What tr_color_relief hands the prepare function (local to this process). */
typedef struct {
  const char *path;
  int mode;
  int alpha;
} cr_setup;

/* Parse state: the entries so far, and the band's range for percentages. */
typedef struct {
  const tr_input *in;
  const char *path;
  int line;
  cr_entry e[CR_MAX];
  int n;
  int range_state; /* 0: the band not asked yet */
  double min, max; /* what the next percentage uses */
} cr_parse;

/* gdaldem's named colours (from GRASS 4.1), 255 x a float fraction, truncated. */
static const struct {
  const char *name;
  int r, g, b;
} cr_names[] = {
    {"white", 255, 255, 255}, {"black", 0, 0, 0},      {"red", 255, 0, 0},       {"green", 0, 255, 0},
    {"blue", 0, 0, 255},      {"yellow", 255, 255, 0}, {"magenta", 255, 0, 255}, {"cyan", 0, 255, 255},
    {"aqua", 0, 191, 191},    {"grey", 191, 191, 191}, {"gray", 191, 191, 191},  {"orange", 255, 127, 0},
    {"brown", 191, 127, 63},  {"purple", 127, 0, 255}, {"violet", 127, 0, 255},  {"indigo", 0, 127, 255},
};

static int cr_bad(cr_parse *ps, tr_error *err, const char *fmt, const char *tok) __attribute__((format(printf, 3, 0)));

/* A usage error naming the file, the line and the offending token (its
 * first 40 bytes, non-printable ones as '?': the file may not be text). */
static int cr_bad(cr_parse *ps, tr_error *err, const char *fmt, const char *tok) {
  char shown[48], what[512];
  size_t k = 0;
  for (; tok[k] && k < 40; k++) shown[k] = isprint((unsigned char)tok[k]) ? tok[k] : '?';
  strcpy(shown + k, tok[k] ? "..." : "");
  snprintf(what, sizeof what, fmt, shown);
  return tr_fail(err, TR_EUSAGE, "colour file '%s', line %d: %s", ps->path, ps->line, what);
}

/* An elevation: the whole token is a number (inf and nan included; out of
 * range it is +-inf or 0, as gdaldem's CPLAtof reads it). */
static int cr_number(const char *s, double *v) {
  char *end;
  *v = strtod(s, &end);
  return end != s && *end == 0 ? 0 : -1;
}

/* A colour component as gdaldem's atoi() reads it, minus the garbage: an
 * integer, optionally with a fractional part that atoi() drops. */
static int cr_component(const char *s, int32_t *v) {
  char *end;
  errno = 0;
  long x = strtol(s, &end, 10);
  if (end == s || !isdigit((unsigned char)end[-1]) || errno == ERANGE || x < INT32_MIN || x > INT32_MAX) return -1;
  if (*end == '.')
    for (end++; *end; end++)
      if (!isdigit((unsigned char)*end)) return -1;
  if (*end) return -1;
  *v = (int32_t)x;
  return 0;
}

static int cr_add(cr_parse *ps, double val, const int32_t rgba[4], tr_error *err) {
  if (ps->n >= CR_MAX_FILE)
    return tr_fail(err, TR_EUSAGE, "colour file '%s', line %d: more than %d colour entries", ps->path, ps->line,
                   CR_MAX_FILE);
  ps->e[ps->n].val = val;
  memcpy(ps->e[ps->n].rgba, rgba, sizeof ps->e[ps->n].rgba);
  ps->n++;
  return TR_OK;
}

static double cr_round14(double x) {
  char s[64];
  snprintf(s, sizeof s, "%.14g", x);
  return strtod(s, NULL);
}

/* The band's minimum and maximum for one percentage, the way gdaldem gets
 * them (see the top of the file). */
static void cr_range(cr_parse *ps, double *mn, double *mx) {
  if (ps->range_state == 0) {
    GDALRasterBandH b = ps->in->band;
    int s1 = 0, s2 = 0;
    ps->min = GDALGetRasterMinimum(b, &s1);
    ps->max = GDALGetRasterMaximum(b, &s2);
    ps->range_state = 1;
    if (!(s1 && s2)) {
      /* the exact range, found by the ranks together before the colour
       * file is read (tr_run_kernel_ranged, cr_wants_range) */
      const tr_input *in = ps->in;
      /* No valid cell: gdaldem's statistics call leaves 0 and 0 and stores
       * nothing, so every percentage sees 0 and 0. */
      ps->min = ps->max = 0;
      if (in->range_known && in->range_valid) {
        *mn = in->range_min;
        *mx = in->range_max;
        ps->min = cr_round14(in->range_min);
        ps->max = cr_round14(in->range_max);
        return;
      }
    }
  }
  *mn = ps->min;
  *mx = ps->max;
}

/* The elevation of a plain (non-GMT) line's first token. Returns TR_OK, 1
 * to skip the line, or an error. */
static int cr_elevation(cr_parse *ps, const char *tok, double *v, tr_error *err) {
  const tr_input *in = ps->in;
  if (!strcasecmp(tok, "nv")) {
    if (!in->has_nodata) return 1; /* gdaldem warns and ignores it */
    *v = in->nodata;
    return TR_OK;
  }
  size_t len = strlen(tok);
  if (len > 1 && tok[len - 1] == '%') {
    char num[128];
    double pct;
    if (len - 1 >= sizeof num) return cr_bad(ps, err, "bad percentage '%s'", tok);
    memcpy(num, tok, len - 1);
    num[len - 1] = 0;
    if (cr_number(num, &pct)) return cr_bad(ps, err, "bad percentage '%s'", tok);
    pct /= 100.0;
    if (pct < 0.0 || pct > 1.0) return cr_bad(ps, err, "percentage '%s' is outside 0%%..100%%", tok);
    double mn, mx;
    cr_range(ps, &mn, &mx);
    *v = mn + pct * (mx - mn);
    return TR_OK;
  }
  if (cr_number(tok, v)) return cr_bad(ps, err, "bad elevation '%s'", tok);
  return TR_OK;
}

static int cr_components(cr_parse *ps, char **tok, int n, int32_t *out, tr_error *err) {
  for (int k = 0; k < n; k++)
    if (cr_component(tok[k], &out[k])) return cr_bad(ps, err, "bad colour component '%s'", tok[k]);
  return TR_OK;
}

/* One line, split as gdaldem's CSLTokenizeStringComplex(" ,\t:") does. */
static int cr_line(cr_parse *ps, char *line, int *gmt, tr_error *err) {
  if (line[0] == '#' && strstr(line, "COLOR_MODEL")) {
    if (!strstr(line, "COLOR_MODEL = RGB"))
      return tr_fail(err, TR_EUSAGE, "colour file '%s', line %d: only COLOR_MODEL = RGB is supported", ps->path,
                     ps->line);
    *gmt = 1;
  }
  char *tok[8], *save = NULL;
  int nt = 0; /* every token counts; the first 8 are all any form reads */
  for (char *s = strtok_r(line, " ,\t:", &save); s; s = strtok_r(NULL, " ,\t:", &save), nt++)
    if (nt < 8) tok[nt] = s;
  if (nt >= 1 && (tok[0][0] == '#' || tok[0][0] == '/')) return TR_OK;
  int32_t c[4] = {0, 0, 0, 255};
  double v = 0;
  int st;
  if (*gmt) {
    /* GMT .cpt: "z0 r g b z1 r g b" slices and the nodata colour "N r g b";
     * B and F lines and every other shape are ignored. */
    if (nt == 8) {
      int32_t c2[4] = {0, 0, 0, 255};
      double v2;
      if (cr_number(tok[0], &v)) return cr_bad(ps, err, "bad elevation '%s'", tok[0]);
      if (cr_number(tok[4], &v2)) return cr_bad(ps, err, "bad elevation '%s'", tok[4]);
      if ((st = cr_components(ps, tok + 1, 3, c, err)) || (st = cr_components(ps, tok + 5, 3, c2, err))) return st;
      if ((st = cr_add(ps, v, c, err))) return st;
      return cr_add(ps, v2, c2, err);
    }
    if (nt == 4 && !strcasecmp(tok[0], "N") && ps->in->has_nodata) {
      if ((st = cr_components(ps, tok + 1, 3, c, err))) return st;
      return cr_add(ps, ps->in->nodata, c, err);
    }
    return TR_OK;
  }
  if (nt < 2) return TR_OK;
  if ((st = cr_elevation(ps, tok[0], &v, err))) return st > 0 ? TR_OK : st;
  if (nt >= 4) {
    if ((st = cr_components(ps, tok + 1, nt >= 5 ? 4 : 3, c, err))) return st;
  } else {
    size_t k = 0;
    while (k < sizeof cr_names / sizeof *cr_names && strcasecmp(tok[1], cr_names[k].name)) k++;
    if (k == sizeof cr_names / sizeof *cr_names) return cr_bad(ps, err, "unknown colour '%s'", tok[1]);
    c[0] = cr_names[k].r;
    c[1] = cr_names[k].g;
    c[2] = cr_names[k].b;
    if (nt == 3 && (st = cr_components(ps, tok + 2, 1, c + 3, err))) return st;
  }
  return cr_add(ps, v, c, err);
}

static int cr_read(cr_parse *ps, tr_error *err) {
  struct stat sb; /* GDAL's virtual paths (/vsi...) go straight to VSIFOpenL */
  if (strncmp(ps->path, "/vsi", 4) != 0) {
    if (stat(ps->path, &sb) != 0)
      return tr_fail(err, TR_EINPUT, "cannot open colour file '%s': %s", ps->path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) return tr_fail(err, TR_EINPUT, "colour file '%s' is a directory", ps->path);
  }
  errno = 0;
  VSILFILE *f = VSIFOpenL(ps->path, "rb");
  if (!f)
    return tr_fail(err, TR_EINPUT, "cannot open colour file '%s': %s", ps->path,
                   errno ? strerror(errno) : "unreadable");
  int st = TR_OK, gmt = 0;
  const char *l;
  while (!st && (l = CPLReadLineL(f)) != NULL) {
    ps->line++;
    char *copy = strdup(l); /* the tokenizer writes into it */
    st = copy ? cr_line(ps, copy, &gmt, err) : tr_fail(err, TR_ENOMEM, "out of memory");
    free(copy);
  }
  CPLReadLineL(NULL); /* frees its line buffer */
  VSIFCloseL(f);
  if (!st && ps->n == 0) st = tr_fail(err, TR_EUSAGE, "colour file '%s': no colour entries", ps->path);
  return st;
}

/* ------------------------------------------------ gdaldem's processing */

static int cr_before(const cr_entry *a, const cr_entry *b) {
  return (isnan(a->val) && !isnan(b->val)) || a->val < b->val;
}

/* std::stable_sort with gdaldem's order (NaN first). */
static void cr_sort(cr_entry *e, int n) {
  for (int i = 1; i < n; i++) {
    cr_entry x = e[i];
    int j = i;
    while (j > 0 && cr_before(&x, &e[j - 1])) {
      e[j] = e[j - 1];
      j--;
    }
    e[j] = x;
  }
}

/* GDALColorReliefProcessColors: the sort, the nodata neighbours and the
 * spread of repeated elevations, step for step. */
static void cr_process(cr_entry *e, int *np, const tr_input *in) {
  const int n0 = *np;
  int n = n0;
  cr_sort(e, n0);
  const int nd = in->has_nodata;
  const double ndv = in->nodata;
  int rep = 0;
  for (int i = 1; i < n0; i++) {
    cr_entry *prev = &e[i - 1], *cur = &e[i];
    /* The neighbour sits |nodata| x DBL_EPSILON away: at a nodata of 0 that
     * is the nodata value itself, so the ramp still blends into the "nv"
     * colour from below (gdaldem 3.6 does; later GDAL moved to one ulp). */
    if (nd && cur->val == ndv) {
      const double nv = cur->val - fabs(cur->val) * DBL_EPSILON;
      if (nv > prev->val) {
        e[n] = *prev;
        e[n++].val = nv;
      }
    } else if (nd && prev->val == ndv) {
      const double nv = prev->val + fabs(prev->val) * DBL_EPSILON;
      if (nv < cur->val) {
        e[n] = *cur;
        e[n++].val = nv;
      }
    } else if (rep == 0 && cur->val == prev->val) {
      rep = i;
    } else if (rep != 0 && cur->val != prev->val) {
      double total, left = 0.0;
      if (rep >= 2) {
        total = cur->val - e[rep - 2].val;
        left = prev->val - e[rep - 2].val;
      } else {
        total = cur->val - prev->val;
      }
      const int count = i - rep + 1;
      const double ap = fabs(prev->val);
      if (total > ap * count * DBL_EPSILON) {
        double mult = 0.5 - (double)count * left / total;
        for (int j = rep - 1; j < i; j++) {
          e[j].val += (ap * mult) * DBL_EPSILON;
          mult += 1.0;
        }
      }
      rep = 0;
    }
  }
  if (n != n0) cr_sort(e, n);
  *np = n;
}

/* Float32 values in order: an integer key per float, monotone in its value
 * (-0 and +0 share key 0), and back. */
static int64_t cr_key(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (u & 0x80000000u) ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
}

static float cr_unkey(int64_t k) {
  const uint32_t u = k >= 0 ? (uint32_t)k : (0x80000000u | (uint32_t)(-k));
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Fills the shortcuts. Why the bins are exact: with the entries in order,
 * a value's index and, at one index, each colour component are monotone in
 * the value (differences, quotients by a positive number, products by a
 * constant and truncation keep order), and so is cr_bin. The cells of a bin
 * are thus the floats from its first to its last, found by bisection over
 * the float keys with cr_bin itself; when those two share the index and the
 * colour, every float between does too. Values outside the entries take
 * the first or last colour (or 0 for -exact_color_entry) whatever they are.
 * The bins span the entries minus a nodata entry at either end (and its
 * added neighbour), so an "nv" far from the ramp does not widen them.
 * Without order (NaN or unsorted entries after the processing) every cell
 * is searched. */
static void cr_build_lut(cr_params *p, const tr_input *in) {
  const int64_t lo0 = p->nan_first, n = p->n;
  p->lut_on = 0;
  if (n <= lo0) return;
  for (int64_t j = lo0 + 1; j < n; j++)
    if (!(p->val[j - 1] <= p->val[j])) return;
  p->lo = p->val[lo0];
  p->hi = p->val[n - 1];
  if (isnan(p->lo) || isnan(p->hi)) return;
  if (p->lo > -INFINITY) cr_colour(p, 4, -INFINITY, cr_index(p, -INFINITY), p->below);
  if (p->hi < INFINITY) cr_colour(p, 4, INFINITY, cr_index(p, INFINITY), p->above);
  p->bin_lo = INFINITY;
  p->bin_hi = -INFINITY;
  p->lut_on = 1;
  int64_t a = lo0, b = n - 1;
  const double nd = in->nodata, nd_up = nd + fabs(nd) * DBL_EPSILON, nd_down = nd - fabs(nd) * DBL_EPSILON;
  if (in->has_nodata && p->val[a] == nd)
    while (a < b && p->val[a] <= nd_up) a++;
  if (in->has_nodata && p->val[b] == nd)
    while (b > a && p->val[b] >= nd_down) b--;
  const double lo = p->val[a], hi = p->val[b];
  if (!(hi > lo) || !isfinite(lo) || !isfinite(hi)) return;
  const double scale = CR_BINS / (hi - lo);
  if (!isfinite(scale) || !(scale > 0)) return;
  p->bin_lo = lo;
  p->bin_hi = hi;
  p->bin_scale = scale;
  /* The floats v with lo <= v <= hi, as keys [klo, khi]. */
  float flo = (float)lo, fhi = (float)hi;
  if ((double)flo < lo) flo = nextafterf(flo, INFINITY);
  if ((double)fhi > hi) fhi = nextafterf(fhi, -INFINITY);
  const int64_t klo = cr_key(flo), khi = cr_key(fhi);
  int64_t start = klo;
  for (int64_t k = 0; k < CR_BINS && start <= khi; k++) {
    int64_t x = start, y = khi + 1; /* the first key past bin k */
    while (k < CR_BINS - 1 && x < y) {
      const int64_t mid = x + (y - x) / 2;
      if (cr_bin(cr_unkey(mid), lo, scale) > k)
        y = mid;
      else
        x = mid + 1;
    }
    const int64_t end = k < CR_BINS - 1 ? x : khi + 1;
    if (end > start) {
      const float f0 = cr_unkey(start), f1 = cr_unkey(end - 1);
      const int64_t i0 = cr_index(p, f0), i1 = cr_index(p, f1);
      uint8_t c0[4], c1[4];
      cr_colour(p, 4, f0, i0, c0);
      cr_colour(p, 4, f1, i1, c1);
      if (i0 == i1 && !memcmp(c0, c1, sizeof c0)) {
        memcpy(p->bin_rgba[k], c0, sizeof c0);
        p->bin_const[k >> 3] |= (uint8_t)(1u << (k & 7));
      }
    }
    start = end;
  }
}

static int cr_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  const cr_setup *s = opts;
  cr_params *p = params;
  if (s->mode != TR_COLOR_INTERPOLATE && s->mode != TR_COLOR_EXACT && s->mode != TR_COLOR_NEAREST)
    return tr_fail(err, TR_EUSAGE, "unknown colour selection mode %d", s->mode);
  if (!s->path) return tr_fail(err, TR_EUSAGE, "no colour file given");
  cr_parse *ps = calloc(1, sizeof *ps);
  if (!ps) return tr_fail(err, TR_ENOMEM, "out of memory");
  ps->in = in;
  ps->path = s->path;
  int st = cr_read(ps, err);
  if (!st) {
    cr_process(ps->e, &ps->n, in);
    p->n = ps->n;
    p->mode = s->mode;
    p->bands = s->alpha ? 4 : 3;
    p->nan_first = isnan(ps->e[0].val);
    /* The reader hands every non-finite Float cell over as NaN, and a
     * non-finite cell is nodata here as in every product: where the DEM
     * declares nodata, NaN and +-Inf cells get the nodata cells' colour (the
     * "nv" entry's when there is one). gdaldem colours them as values: NaN
     * past the last entry, -Inf as the lowest, +Inf as the highest. (A
     * Float64 nodata beyond Float32's range, -1e300 or -DBL_MAX, is -Inf as
     * Float32, as gdaldem sees it.) Without a declared nodata a non-finite
     * cell gets gdaldem's NaN colour. */
    p->nan_as = NAN;
    if (in->has_nodata) p->nan_as = (float)in->nodata;
    for (int i = 0; i < ps->n; i++) {
      p->val[i] = ps->e[i].val;
      memcpy(p->rgba[i], ps->e[i].rgba, sizeof p->rgba[i]);
    }
    cr_build_lut(p, in);
    prod->has_nodata = 0;
  }
  free(ps);
  return st;
}

/* The colour file may have a percentage and the band stores no range
 * (cr_range: stored statistics answer alone, as in gdaldem): then the
 * runner finds the band's range first (tr_run_kernel_ranged). Any '%'
 * counts; a file that cannot be read is left for the parser to report. */
static void cr_wants_range(const tr_input *in, const void *opts, int *wants) {
  const cr_setup *s = opts;
  *wants = 0;
  int s1 = 0, s2 = 0;
  GDALGetRasterMinimum(in->band, &s1);
  GDALGetRasterMaximum(in->band, &s2);
  if (s1 && s2) return;
  VSILFILE *f = s->path ? VSIFOpenL(s->path, "rb") : NULL; /* as cr_read opens it */
  if (!f) return;
  char buf[4096];
  size_t n;
  while (!*wants && (n = VSIFReadL(buf, 1, sizeof buf, f)) > 0) *wants = memchr(buf, '%', n) != NULL;
  VSIFCloseL(f);
}

void tr_color_relief_opts_init(tr_color_relief_opts *o) {
  tr_run_opts_init(&o->run);
  o->mode = TR_COLOR_INTERPOLATE;
  o->alpha = 0;
}

int tr_color_relief(const tr_color_relief_opts *opts, const char *src, const char *color_file, const char *dst,
                    tr_error *err) {
  cr_setup s = {color_file, opts->mode, opts->alpha};
  tr_run_opts run = opts->run;
  run.reads[0] = (tr_file_role){color_file, "the colour file"}; /* no output may be it */
  return tr_run_kernel_ranged(&run, opts->alpha ? "color-relief-rgba" : "color-relief", cr_wants_range, cr_prepare,
                              &s, src, dst, err);
}
