/*
 * json.c - the one JSON writer (terrain.h, tr_json_*): every JSON file
 * terrafort writes (--stats-json, --ft-report, --aap-stats, batch's summary)
 * is a json-c tree made here and written by tr_json_text / tr_json_write.
 *
 * json-c holds the tree (objects keep their keys' order) and writes its
 * structure; what it would get wrong for us is given a serializer of our
 * own, set on the value when it is made, so no caller can go around it:
 * - strings: json-c copies bytes that are not UTF-8 into its text as they
 *   are (invalid UTF-8, not JSON); ours escapes such a byte 0xXX as \udcXX
 *   (terrain.h gives the rule and why);
 * - numbers: json_object_new_double_s keeps the text we format (%.17g reads
 *   back as the same double; json-c's own format adds ".0" to 50);
 * - literals (null, an embedded JSON text): a string node whose serializer
 *   copies its text, so NULL pointers never mean null (json-c's way) and can
 *   mean one thing only: out of memory;
 * - a container that lost a value (out of memory) gets a serializer that
 *   fails, and json-c passes a child's failure up to the root: the text of
 *   a report with a hole in it is NULL, never a shorter report.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "terrain.h"

/* no '/' escaped (file names), no blanks */
#define FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* The length of the valid UTF-8 sequence at p (1..4), or 0. */
static int utf8_len(const unsigned char *p) {
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  int n;
  unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;      /* overlong */
    else if (c == 0xED) hi = 0x9F; /* surrogates */
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;      /* overlong */
    else if (c == 0xF4) hi = 0x8F; /* past U+10FFFF */
  } else
    return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (int i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return n;
}

static int put(struct printbuf *pb, const void *s, size_t n) {
  return n == 0 || printbuf_memappend(pb, s, (int)n) >= 0 ? 0 : -1;
}

/* A string node's text by the rule (terrain.h). Runs of bytes kept as they
 * are go in one append. */
static int string_out(json_object *o, struct printbuf *pb, int level, int flags) {
  (void)level;
  (void)flags;
  const unsigned char *s = (const unsigned char *)json_object_get_string(o), *run = s;
  if (put(pb, "\"", 1)) return -1;
  for (const unsigned char *p = s; *p;) {
    char e[8];
    int en = 0, n = 1;
    if (*p == '"' || *p == '\\') en = snprintf(e, sizeof e, "\\%c", *p);
    else if (*p < 0x20 || *p == 0x7F) en = snprintf(e, sizeof e, "\\u%04x", *p);
    else if (!(n = utf8_len(p))) en = snprintf(e, sizeof e, "\\udc%02x", *p), n = 1;
    if (en) {
      if (put(pb, run, (size_t)(p - run)) || put(pb, e, (size_t)en)) return -1;
      run = p + n;
    }
    p += n;
  }
  const size_t rest = strlen((const char *)run);
  return put(pb, run, rest) || put(pb, "\"", 1) ? -1 : 0;
}

/* A literal's text as it is. */
static int literal_out(json_object *o, struct printbuf *pb, int level, int flags) {
  (void)level;
  (void)flags;
  return put(pb, json_object_get_string(o), (size_t)json_object_get_string_len(o));
}

/* An array with each element on a line of its own. */
static int lines_out(json_object *o, struct printbuf *pb, int level, int flags) {
  (void)level;
  const size_t n = json_object_array_length(o);
  if (put(pb, "[", 1)) return -1;
  for (size_t i = 0; i < n; i++) {
    size_t len;
    const char *t = json_object_to_json_string_length(json_object_array_get_idx(o, i), flags, &len);
    if (!t || put(pb, i ? ",\n  " : "\n  ", i ? 4 : 3) || put(pb, t, len)) return -1;
  }
  return put(pb, "]", 1);
}

/* A container that lost a value: no text. */
static int marked_out(json_object *o, struct printbuf *pb, int level, int flags) {
  (void)o;
  (void)pb;
  (void)level;
  (void)flags;
  return -1;
}

static void mark(json_object *o) {
  if (o) json_object_set_serializer(o, marked_out, NULL, NULL);
}

static tr_json *with(tr_json *o, json_object_to_json_string_fn *out) {
  if (o) json_object_set_serializer(o, out, NULL, NULL);
  return o;
}

tr_json *tr_json_object(void) { return json_object_new_object(); }

tr_json *tr_json_array(void) { return json_object_new_array(); }

tr_json *tr_json_lines(void) { return with(json_object_new_array(), lines_out); }

tr_json *tr_json_str(const char *s) { return with(json_object_new_string(s ? s : ""), string_out); }

tr_json *tr_json_int(int64_t v) { return json_object_new_int64(v); }

tr_json *tr_json_uint(uint64_t v) { return json_object_new_uint64(v); }

tr_json *tr_json_null(void) { return with(json_object_new_string("null"), literal_out); }

tr_json *tr_json_bool(int v) { return json_object_new_boolean(v != 0); }

tr_json *tr_json_num(double v) {
  if (!isfinite(v)) return tr_json_null();
  char t[32];
  snprintf(t, sizeof t, "%.17g", v);
  return json_object_new_double_s(v, t);
}

tr_json *tr_json_fixed(double v, int decimals) {
  if (!isfinite(v)) return tr_json_null();
  if (decimals < 0) decimals = 0;
  if (decimals > 17) decimals = 17;
  const int n = snprintf(NULL, 0, "%.*f", decimals, v);
  char *t = malloc((size_t)n + 1);
  if (!t) return NULL;
  snprintf(t, (size_t)n + 1, "%.*f", decimals, v);
  tr_json *o = json_object_new_double_s(v, t);
  free(t);
  return o;
}

/* Every string under o written by our rule, as the strings we make are. */
static void own_strings(json_object *o) {
  switch (json_object_get_type(o)) {
  case json_type_string:
    json_object_set_serializer(o, string_out, NULL, NULL);
    break;
  case json_type_array:
    for (size_t i = 0, n = json_object_array_length(o); i < n; i++) own_strings(json_object_array_get_idx(o, i));
    break;
  case json_type_object: {
    json_object_object_foreach(o, k, v) {
      (void)k;
      own_strings(v);
    }
    break;
  }
  default:
    break;
  }
}

/* ---- reading: RFC 8259's grammar, checked here because json-c's strict
 * mode still takes 'single quotes', 1., Infinity and raw control characters,
 * which would make the text we write with them invalid */

typedef struct {
  const unsigned char *p;
  int depth;
} lex;

static void blanks(lex *x) {
  while (*x->p == ' ' || *x->p == '\t' || *x->p == '\n' || *x->p == '\r') x->p++;
}

static int digits(lex *x) {
  const unsigned char *s = x->p;
  while (*x->p >= '0' && *x->p <= '9') x->p++;
  return x->p > s;
}

static int number(lex *x) {
  if (*x->p == '-') x->p++;
  if (*x->p == '0') x->p++;
  else if (!digits(x)) return 0;
  if (*x->p == '.' && (x->p++, !digits(x))) return 0;
  if (*x->p == 'e' || *x->p == 'E') {
    x->p++;
    if (*x->p == '+' || *x->p == '-') x->p++;
    if (!digits(x)) return 0;
  }
  return 1;
}

static int string(lex *x) {
  if (*x->p++ != '"') return 0;
  for (;;) {
    const unsigned char c = *x->p;
    if (c == '"') return x->p++, 1;
    if (c < 0x20) return 0; /* a control character, or the end */
    if (c == '\\') {
      x->p++;
      if (*x->p == 'u') {
        for (int i = 1; i <= 4; i++)
          if (!x->p[i] || !strchr("0123456789abcdefABCDEF", x->p[i])) return 0;
        x->p += 5;
      } else if (*x->p && strchr("\"\\/bfnrt", *x->p)) x->p++;
      else return 0;
    } else {
      const int n = utf8_len(x->p);
      if (!n) return 0;
      x->p += n;
    }
  }
}

static int word(lex *x, const char *w) {
  const size_t n = strlen(w);
  if (strncmp((const char *)x->p, w, n)) return 0;
  x->p += n;
  return 1;
}

static int value(lex *x);

/* members or elements up to `close`: [ v, v ] or { "k": v, ... } */
static int members(lex *x, unsigned char close, int keys) {
  x->p++;
  blanks(x);
  if (*x->p == close) return x->p++, 1;
  for (;;) {
    blanks(x);
    if (keys) {
      if (!string(x)) return 0;
      blanks(x);
      if (*x->p++ != ':') return 0;
    }
    if (!value(x)) return 0;
    blanks(x);
    if (*x->p == close) return x->p++, 1;
    if (*x->p++ != ',') return 0;
  }
}

static int value(lex *x) {
  blanks(x);
  int ok;
  switch (*x->p) {
  case '{':
  case '[':
    if (++x->depth > 256) return 0; /* the stack (json-c's tokener stops at 32 itself) */
    ok = members(x, *x->p == '{' ? '}' : ']', *x->p == '{');
    x->depth--;
    return ok;
  case '"':
    return string(x);
  case 't':
    return word(x, "true");
  case 'f':
    return word(x, "false");
  case 'n':
    return word(x, "null");
  default:
    return number(x);
  }
}

/* text is one JSON value and nothing after it but blanks. */
static int valid(const char *text) {
  lex x = {(const unsigned char *)text, 0};
  if (!value(&x)) return 0;
  blanks(&x);
  return *x.p == 0;
}

/* text parsed by json-c once valid: 1 and its tree in *o (NULL for the text
 * null), or 0. */
static int parse(const char *text, json_object **o) {
  *o = NULL;
  if (!text || !valid(text)) return 0;
  json_tokener *t = json_tokener_new();
  if (!t) return 0;
  const size_t len = strlen(text);
  /* its NUL too: the end of the input (a number or null at the end would
   * otherwise wait for more) */
  if (len < INT32_MAX) *o = json_tokener_parse_ex(t, text, (int)len + 1);
  const int ok = len < INT32_MAX && json_tokener_get_error(t) == json_tokener_success;
  json_tokener_free(t);
  if (ok) return 1;
  json_object_put(*o);
  *o = NULL;
  return 0;
}

tr_json *tr_json_parse(const char *text) {
  json_object *o;
  if (!parse(text, &o)) return NULL;
  if (!o) return tr_json_null(); /* the text was null */
  own_strings(o);
  return o;
}

tr_json *tr_json_verbatim(const char *text) {
  if (!text || !valid(text)) return NULL;
  size_t n = strlen(text);
  while (n && strchr(" \t\r\n", text[n - 1])) n--;
  return with(json_object_new_string_len(text, (int)n), literal_out);
}

int tr_json_set(tr_json *obj, const char *key, tr_json *v) {
  if (!json_object_is_type(obj, json_type_object) || !v || !key || json_object_object_add(obj, key, v) != 0) {
    json_object_put(v);
    mark(obj);
    return -1;
  }
  return 0;
}

int tr_json_push(tr_json *arr, tr_json *v) {
  if (!json_object_is_type(arr, json_type_array) || !v || json_object_array_add(arr, v) != 0) {
    json_object_put(v);
    mark(arr);
    return -1;
  }
  return 0;
}

int tr_json_merge(tr_json *obj, tr_json *from) {
  if (!json_object_is_type(from, json_type_object)) {
    mark(obj);
    return -1;
  }
  int rc = 0;
  json_object_object_foreach(from, k, v) rc |= tr_json_set(obj, k, v ? json_object_get(v) : tr_json_null()); /* parsed null */
  return rc;
}

char *tr_json_text(tr_json *v) {
  size_t len;
  const char *t = v ? json_object_to_json_string_length(v, FLAGS, &len) : NULL;
  char *c = t ? malloc(len + 1) : NULL;
  if (c) memcpy(c, t, len + 1);
  return c;
}

int tr_json_write(tr_json *v, FILE *f) {
  size_t len;
  const char *t = v ? json_object_to_json_string_length(v, FLAGS, &len) : NULL;
  if (!t) return -1;
  return fwrite(t, 1, len, f) == len && fputc('\n', f) != EOF ? 0 : -1;
}

void tr_json_free(tr_json *v) { json_object_put(v); }
