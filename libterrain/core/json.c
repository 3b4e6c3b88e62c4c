/*
 * json.c - JSON strings (terrain.h, tr_json_string): the one escaper of text
 * that goes into the JSON files terrafort writes (batch summaries, a
 * flowgraph's --stats-json products). File names are bytes, not text: a
 * byte that does not begin a valid UTF-8 sequence (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF) becomes U+FFFD, so the file
 * is valid JSON, and valid UTF-8, whatever a name holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terrain.h"

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

static size_t quote(const char *s, char *buf, size_t len) {
  size_t at = 0;
#define PUT(str, n)                                             \
  do {                                                          \
    if (at + (n) < len) memcpy(buf + at, (str), (n));           \
    at += (n);                                                  \
  } while (0)
  PUT("\"", 1);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
    char e[8];
    if (*p == '"' || *p == '\\') {
      e[0] = '\\', e[1] = (char)*p;
      PUT(e, 2);
      p++;
    } else if (*p < 0x20 || *p == 0x7F) {
      snprintf(e, sizeof e, "\\u%04x", *p);
      PUT(e, 6);
      p++;
    } else {
      const int n = utf8_len(p);
      if (n) PUT(p, (size_t)n);
      else PUT("\xEF\xBF\xBD", 3); /* U+FFFD */
      p += n ? n : 1;
    }
  }
  PUT("\"", 1);
#undef PUT
  if (len) buf[at < len ? at : len - 1] = '\0';
  return at;
}

char *tr_json_string(const char *s) {
  const size_t n = quote(s, NULL, 0);
  char *q = malloc(n + 1);
  if (q) quote(s, q, n + 1);
  return q;
}
