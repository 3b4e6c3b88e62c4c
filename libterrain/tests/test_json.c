/*
 * test_json.c - tr_json_string (core/json.c) against strings written out
 * by hand: escapes, valid UTF-8 kept byte for byte, and every kind of
 * invalid UTF-8 (a stray continuation byte, a Latin-1 byte, overlong
 * forms, surrogates, past U+10FFFF, a sequence cut short) one U+FFFD per
 * byte that begins no valid sequence.
 */
#include <stdlib.h>
#include <string.h>

#include "terrain.h"
#include "tr_test.h"

static int same(const char *in, const char *want) {
  char *q = tr_json_string(in);
  ASSERT(q != NULL);
  if (strcmp(q, want) != 0) {
    fprintf(stderr, "got [%s], want [%s]\n", q, want);
    free(q);
    return 1;
  }
  free(q);
  return 0;
}

#define R "\xEF\xBF\xBD" /* U+FFFD */

static int test_escapes(void) {
  ASSERT(!same("", "\"\""));
  ASSERT(!same(NULL, "\"\""));
  ASSERT(!same("dem.tif", "\"dem.tif\""));
  ASSERT(!same("a\"b\\c", "\"a\\\"b\\\\c\""));
  ASSERT(!same("tab\there\nnl\x01\x7f", "\"tab\\u0009here\\u000anl\\u0001\\u007f\""));
  return 0;
}

static int test_valid_utf8_kept(void) {
  ASSERT(!same("caf\xC3\xA9", "\"caf\xC3\xA9\""));                    /* U+00E9 */
  ASSERT(!same("\xE2\x82\xAC 5", "\"\xE2\x82\xAC 5\""));               /* U+20AC */
  ASSERT(!same("\xF0\x9D\x84\x9E", "\"\xF0\x9D\x84\x9E\""));           /* U+1D11E */
  ASSERT(!same("\xED\x9F\xBF\xEE\x80\x80", "\"\xED\x9F\xBF\xEE\x80\x80\"")); /* U+D7FF, U+E000 */
  ASSERT(!same("\xF4\x8F\xBF\xBF", "\"\xF4\x8F\xBF\xBF\""));           /* U+10FFFF */
  return 0;
}

static int test_invalid_replaced(void) {
  ASSERT(!same("caf\xE9.tif", "\"caf" R ".tif\""));         /* Latin-1 */
  ASSERT(!same("\x80x", "\"" R "x\""));                     /* stray continuation */
  ASSERT(!same("\xC0\xAF", "\"" R R "\""));                 /* overlong '/' */
  ASSERT(!same("\xE0\x80\xAF", "\"" R R R "\""));           /* overlong, 3 bytes */
  ASSERT(!same("\xED\xA0\x80", "\"" R R R "\""));           /* a surrogate, U+D800 */
  ASSERT(!same("\xF4\x90\x80\x80", "\"" R R R R "\""));     /* past U+10FFFF */
  ASSERT(!same("\xF5\xFF", "\"" R R "\""));
  ASSERT(!same("ab\xE2\x82", "\"ab" R R "\""));             /* cut short at the end */
  ASSERT(!same("\xE2\x82x", "\"" R R "x\""));               /* cut short by ASCII */
  return 0;
}

TR_MAIN(TR_TEST(test_escapes), TR_TEST(test_valid_utf8_kept), TR_TEST(test_invalid_replaced))
