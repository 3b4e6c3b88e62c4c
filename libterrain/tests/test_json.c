/*
 * test_json.c - the JSON writer (core/json.c, terrain.h's tr_json_*)
 * against texts written out by hand, and read back by json-c's parser:
 * strings (escapes, valid UTF-8 kept byte for byte, every kind of invalid
 * UTF-8 one \udcXX per byte that begins no valid sequence, distinct names
 * distinct), numbers (a double read back is the same double, even one that
 * needs 17 digits; not finite is null), key order, the one-element-a-line
 * array, parsed and verbatim texts, a value lost to a failed allocation
 * leaving no text at all; and the reports libft and the AAP engine fill
 * (core/report_json.c) and the EDAC counters, key for key and byte for byte
 * what the report files held before the writer.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "aap.h"
#include "edac.h"
#include "ft.h"
#include "report_json.h"
#include "terrain.h"
#include "tr_test.h"

/* v's text is `want` (v freed). */
static int text_is(tr_json *v, const char *want) {
  char *t = tr_json_text(v);
  tr_json_free(v);
  const int bad = !t || strcmp(t, want) != 0;
  if (bad) fprintf(stderr, "got [%s], want [%s]\n", t ? t : "(NULL)", want);
  free(t);
  return bad;
}

static int str_is(const char *in, const char *want) { return text_is(tr_json_str(in), want); }

/* text parses (json-c, strict) as one value. */
static int parses(const char *text) {
  json_tokener *t = json_tokener_new();
  json_tokener_set_flags(t, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
  json_object *o = json_tokener_parse_ex(t, text, (int)strlen(text));
  const int ok = json_tokener_get_error(t) == json_tokener_success && json_tokener_get_parse_end(t) == strlen(text);
  json_object_put(o);
  json_tokener_free(t);
  return ok;
}

static int test_escapes(void) {
  ASSERT(!str_is("", "\"\""));
  ASSERT(!str_is(NULL, "\"\""));
  ASSERT(!str_is("dem.tif", "\"dem.tif\""));
  ASSERT(!str_is("a/b/c.tif", "\"a/b/c.tif\"")); /* no \/ */
  ASSERT(!str_is("a\"b\\c", "\"a\\\"b\\\\c\""));
  ASSERT(!str_is("tab\there\nnl\x01\x7f", "\"tab\\u0009here\\u000anl\\u0001\\u007f\""));
  return 0;
}

static int test_valid_utf8_kept(void) {
  ASSERT(!str_is("caf\xC3\xA9", "\"caf\xC3\xA9\""));                    /* U+00E9 */
  ASSERT(!str_is("\xE2\x82\xAC 5", "\"\xE2\x82\xAC 5\""));               /* U+20AC */
  ASSERT(!str_is("\xF0\x9D\x84\x9E", "\"\xF0\x9D\x84\x9E\""));           /* U+1D11E */
  ASSERT(!str_is("\xED\x9F\xBF\xEE\x80\x80", "\"\xED\x9F\xBF\xEE\x80\x80\"")); /* U+D7FF, U+E000 */
  ASSERT(!str_is("\xF4\x8F\xBF\xBF", "\"\xF4\x8F\xBF\xBF\""));           /* U+10FFFF */
  return 0;
}

/* Each byte that begins no valid sequence: \udcXX, XX the byte. */
static int test_invalid_escaped(void) {
  ASSERT(!str_is("caf\xE9.tif", "\"caf\\udce9.tif\""));                        /* Latin-1 */
  ASSERT(!str_is("dem_\xFF\xFE.tif", "\"dem_\\udcff\\udcfe.tif\""));
  ASSERT(!str_is("\x80x", "\"\\udc80x\""));                                    /* stray continuation */
  ASSERT(!str_is("\xC0\xAF", "\"\\udcc0\\udcaf\""));                           /* overlong '/' */
  ASSERT(!str_is("\xE0\x80\xAF", "\"\\udce0\\udc80\\udcaf\""));                /* overlong, 3 bytes */
  ASSERT(!str_is("\xED\xA0\x80", "\"\\udced\\udca0\\udc80\""));                /* a surrogate, U+D800 */
  ASSERT(!str_is("\xF4\x90\x80\x80", "\"\\udcf4\\udc90\\udc80\\udc80\""));     /* past U+10FFFF */
  ASSERT(!str_is("ab\xE2\x82", "\"ab\\udce2\\udc82\""));                       /* cut short at the end */
  ASSERT(!str_is("\xE2\x82x\xC3\xA9", "\"\\udce2\\udc82x\xC3\xA9\""));         /* cut short, then valid */
  /* U+FFFD would make these one name; the rule keeps them two */
  tr_json *ja = tr_json_str("s_\xE9.tif"), *jb = tr_json_str("s_\xE8.tif");
  char *a = tr_json_text(ja), *b = tr_json_text(jb);
  tr_json_free(ja);
  tr_json_free(jb);
  ASSERT(a && b && strcmp(a, b) != 0);
  ASSERT(parses(a) && parses(b));
  /* json-c's own parser takes the escape, as U+FFFD (terrain.h, the man page) */
  json_object *o = json_tokener_parse(a);
  ASSERT(o && !strcmp(json_object_get_string(o), "s_\xEF\xBF\xBD.tif"));
  json_object_put(o);
  free(a);
  free(b);
  return 0;
}

/* v read back by json-c is v, bit for bit, and its text is `want`. */
static int num_back(double v, const char *want) {
  tr_json *n = tr_json_num(v);
  char *t = tr_json_text(n);
  tr_json_free(n);
  ASSERT(t != NULL);
  if (want && strcmp(t, want)) {
    fprintf(stderr, "%.17g: got [%s], want [%s]\n", v, t, want);
    free(t);
    return 1;
  }
  json_object *o = json_tokener_parse(t);
  const double back = json_object_get_double(o);
  json_object_put(o);
  const int same = memcmp(&back, &v, sizeof v) == 0;
  if (!same) fprintf(stderr, "%.17g came back as %.17g from [%s]\n", v, back, t);
  free(t);
  return !same;
}

static int test_numbers(void) {
  ASSERT(!num_back(0.1 + 0.2, "0.30000000000000004")); /* 17 digits, no fewer */
  ASSERT(!num_back(1.0 / 3.0, "0.33333333333333331"));
  ASSERT(!num_back(50.0, "50")); /* json-c's own format writes 50.0 */
  ASSERT(!num_back(0.0, "0"));
  ASSERT(!num_back(-2.5, "-2.5"));
  ASSERT(!num_back(DBL_MAX, "1.7976931348623157e+308"));
  ASSERT(!num_back(DBL_MIN, NULL));
  ASSERT(!num_back(4.9406564584124654e-324, NULL)); /* the least subnormal */
  ASSERT(!num_back((double)14.036488533020020f, NULL));
  ASSERT(!text_is(tr_json_num(NAN), "null"));
  ASSERT(!text_is(tr_json_num(-INFINITY), "null"));
  ASSERT(!text_is(tr_json_fixed(0.5, 6), "0.500000"));
  ASSERT(!text_is(tr_json_fixed(-1.0, 3), "-1.000"));
  ASSERT(!text_is(tr_json_fixed(3.0, 0), "3"));
  ASSERT(!text_is(tr_json_fixed(INFINITY, 3), "null"));
  ASSERT(!text_is(tr_json_int(INT64_MIN), "-9223372036854775808"));
  ASSERT(!text_is(tr_json_uint(UINT64_MAX), "18446744073709551615"));
  ASSERT(!text_is(tr_json_bool(7), "true"));
  ASSERT(!text_is(tr_json_null(), "null"));
  return 0;
}

static int test_objects_arrays(void) {
  tr_json *o = tr_json_object(), *a = tr_json_array(), *l = tr_json_lines(), *e = tr_json_array();
  ASSERT(o && a && l && e);
  ASSERT_EQ_INT(tr_json_set(o, "z", tr_json_int(1)), 0); /* set order, not sorted */
  ASSERT_EQ_INT(tr_json_set(o, "a", tr_json_str("x")), 0);
  ASSERT_EQ_INT(tr_json_push(a, tr_json_int(1)), 0);
  ASSERT_EQ_INT(tr_json_push(a, tr_json_null()), 0);
  ASSERT_EQ_INT(tr_json_set(o, "arr", a), 0);
  ASSERT_EQ_INT(tr_json_set(o, "empty", e), 0);
  for (int i = 0; i < 2; i++) {
    tr_json *r = tr_json_object();
    tr_json_set(r, "i", tr_json_int(i));
    ASSERT_EQ_INT(tr_json_push(l, r), 0);
  }
  ASSERT_EQ_INT(tr_json_set(o, "lines", l), 0);
  ASSERT_EQ_INT(tr_json_set(o, "none", tr_json_lines()), 0);
  const char *want = "{\"z\":1,\"a\":\"x\",\"arr\":[1,null],\"empty\":[],\"lines\":[\n  {\"i\":0},\n  {\"i\":1}],\"none\":[]}";
  char *t = tr_json_text(o);
  ASSERT(t && parses(t));
  free(t);
  ASSERT(!text_is(o, want));
  ASSERT_EQ_INT(tr_json_set(NULL, "k", tr_json_int(1)), -1); /* v freed (the sanitizer tree sees a leak if not) */
  ASSERT_EQ_INT(tr_json_push(NULL, tr_json_int(1)), -1);
  return 0;
}

/* A value lost (NULL from a failed allocation): no text for its container
 * or anything holding it, so no report is written short. */
static int test_lost_value_no_text(void) {
  tr_json *o = tr_json_object(), *inner = tr_json_object(), *l = tr_json_lines();
  tr_json_set(o, "ok", tr_json_int(1));
  ASSERT_EQ_INT(tr_json_set(inner, "lost", NULL), -1);
  tr_json_set(o, "inner", inner);
  tr_json_push(l, o);
  char *t = tr_json_text(l);
  ASSERT(t == NULL);
  FILE *f = tmpfile();
  ASSERT(f != NULL);
  ASSERT_EQ_INT(tr_json_write(l, f), -1);
  ASSERT_EQ_INT(ftell(f), 0);
  fclose(f);
  tr_json_free(l);
  tr_json *a = tr_json_array();
  ASSERT_EQ_INT(tr_json_push(a, NULL), -1);
  ASSERT(tr_json_text(a) == NULL);
  tr_json_free(a);
  ASSERT(tr_json_text(NULL) == NULL);
  ASSERT_EQ_INT(tr_json_write(NULL, stdout), -1);
  return 0;
}

static int test_parse_and_verbatim(void) {
  /* numbers keep their text; strings go by the rule (no \/) */
  ASSERT(!text_is(tr_json_parse(" {\"t\":0.000,\"n\":null,\"p\":\"a\\/b\",\"big\":1e300} \n"),
                  "{\"t\":0.000,\"n\":null,\"p\":\"a/b\",\"big\":1e300}"));
  ASSERT(!text_is(tr_json_parse("null"), "null"));
  /* byte for byte, the escapes of the rule included */
  ASSERT(!text_is(tr_json_verbatim("{ \"f\" : \"d_\\udcff.tif\", \"x\":[1, 2.50] }\n"),
                  "{ \"f\" : \"d_\\udcff.tif\", \"x\":[1, 2.50] }"));
  /* json-c's strict mode takes some of these ('quotes', 1., Infinity, a raw tab) */
  static const char *const bad[] = {"",           "{",          "{} x",          "{'a':1}",      "{\"a\":1,}",
                                    "{\"a\":\"\xff\"}", "[1] [2]",    "nan",           "tru",          "{\"a\":1.}",
                                    "{\"a\":Infinity}", "{\"a\":\"\t\"}", "{\"a\":01}", "{\"a\":\"\\x41\"}", "{\"a\":\"\\u12\"}",
                                    "{\"a\" 1}",   "[1 2]",      "{\"a\":-}",      "/*c*/{}",      "{\"a\":\"\xc0\xaf\"}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tr_json *p = tr_json_parse(bad[i]), *v = tr_json_verbatim(bad[i]);
    if (p || v) {
      fprintf(stderr, "taken for JSON: [%s]\n", bad[i]);
      tr_json_free(p);
      tr_json_free(v);
      return 1;
    }
  }
  ASSERT(tr_json_parse(NULL) == NULL && tr_json_verbatim(NULL) == NULL);
  static const char *const good[] = {"[]", "{}", " -0.5e+10 ", "0", "-0", "1E-2", "\"\\u00e9\\/\\b\\f\\n\\r\\t\"",
                                     "[[[{\"a\":[true,false,null]}]]]", "\"caf\xc3\xa9\"", "{\"\":\"\"}"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    tr_json *p = tr_json_parse(good[i]), *v = tr_json_verbatim(good[i]);
    const int ok = p && v;
    tr_json_free(p);
    tr_json_free(v);
    if (!ok) {
      fprintf(stderr, "not taken for JSON: [%s]\n", good[i]);
      return 1;
    }
  }
  /* merge: from's keys after obj's, in from's order; null kept */
  tr_json *o = tr_json_object(), *from = tr_json_parse("{\"b\":2,\"n\":null,\"c\":[3]}");
  ASSERT(from != NULL);
  tr_json_set(o, "a", tr_json_str("x"));
  ASSERT_EQ_INT(tr_json_merge(o, from), 0);
  tr_json_free(from);
  ASSERT(!text_is(o, "{\"a\":\"x\",\"b\":2,\"n\":null,\"c\":[3]}"));
  return 0;
}

/* o's members set by fill(o), as text */
static int report_is(tr_json *o, int rc, const char *want) {
  ASSERT_EQ_INT(rc, 0);
  return text_is(o, want);
}

static int test_reports(void) {
  ft_report r;
  memset(&r, 0, sizeof r);
  r.blocks = 7;
  r.redispatches = 2;
  r.detect_s = 0.5;
  tr_json *o = tr_json_object();
  ASSERT(!report_is(o, tr_json_ft_report(o, &r),
                    "{\"blocks\":7,\"sub_blocks\":0,\"injected\":0,\"detected\":0,\"corrected\":0,\"tolerated\":0,"
                    "\"fatal\":0,\"mismatches\":0,\"tolerated_sub_blocks\":0,\"failed_sub_blocks\":0,\"recomputes\":0,"
                    "\"votes\":0,\"timeouts\":0,\"redispatches\":2,\"compute_s\":0.000000,\"detect_s\":0.500000,"
                    "\"recompute_s\":0.000000}"));
  ft_track_report t;
  memset(&t, 0, sizeof t);
  t.launches = 10;
  t.idempotent = 8;
  t.relaunch_max = 3;
  t.sample_mismatches = 1;
  o = tr_json_object();
  ASSERT(!report_is(o, tr_json_ft_track(o, &t),
                    "{\"launches\":10,\"idempotent\":8,\"idempotent_share\":0.800000,\"regions\":0,\"outside_writes\":0,"
                    "\"errors\":0,\"reruns\":0,\"relaunch_sets\":0,\"relaunch_launches\":0,\"relaunch_max\":3,"
                    "\"searches_failed\":0,\"checkpoints\":0,\"checkpoint_restores\":0,\"checkpoint_launches\":0,"
                    "\"unrepaired\":0,\"limit_aborts\":0,\"sampled\":0,\"sample_mismatches\":1,\"replay_s\":0.000000}"));
  tr_aap_worker_stats w[2] = {{.rounds = 3, .busy_s = 0.25, .msgs_sent = 4, .work = 9},
                              {.rounds = 1, .idle_s = 1.5, .ds_s = 0.125, .msgs_recv = 4, .batches_sent = 2}};
  tr_aap_stats a = {.backend = "threads", .schedule = TR_AAP_SCHED_AAP, .nworkers = 2, .w = w, .makespan_s = 2,
                    .waves = 5, .max_round = 6};
  o = tr_json_object();
  ASSERT(!report_is(o, tr_json_aap_stats(o, &a),
                    "{\"backend\":\"threads\",\"schedule\":\"aap\",\"makespan_s\":2.000000,\"waves\":5,\"max_round\":6,"
                    "\"totals\":{\"rounds\":4,\"work\":9,\"msgs_sent\":4,\"msgs_recv\":4,\"batches_sent\":2,"
                    "\"batches_recv\":0,\"busy_s\":0.250000,\"idle_s\":1.500000,\"ds_s\":0.125000},\"workers\":["
                    "{\"worker\":0,\"rounds\":3,\"busy_s\":0.250000,\"idle_s\":0.000000,\"ds_s\":0.000000,\"msgs_sent\":4,"
                    "\"msgs_recv\":0,\"batches_sent\":0,\"batches_recv\":0,\"work\":9},"
                    "{\"worker\":1,\"rounds\":1,\"busy_s\":0.000000,\"idle_s\":1.500000,\"ds_s\":0.125000,\"msgs_sent\":0,"
                    "\"msgs_recv\":4,\"batches_sent\":2,\"batches_recv\":0,\"work\":0}]}"));
  a.backend = NULL;
  a.nworkers = 0;
  o = tr_json_object();
  ASSERT(!report_is(o, tr_json_aap_stats(o, &a),
                    "{\"backend\":\"?\",\"schedule\":\"aap\",\"makespan_s\":2.000000,\"waves\":5,\"max_round\":6,"
                    "\"totals\":{\"rounds\":0,\"work\":0,\"msgs_sent\":0,\"msgs_recv\":0,\"batches_sent\":0,"
                    "\"batches_recv\":0,\"busy_s\":0.000000,\"idle_s\":0.000000,\"ds_s\":0.000000},\"workers\":[]}"));
  tr_edac e0 = {.ok = 1, .controllers = 2, .ce = 3, .ue = 0}, e1 = {.ok = 1, .controllers = 2, .ce = 5, .ue = 1},
          none = {0};
  ASSERT(!text_is(tr_edac_json(&e0, &e1),
                  "{\"controllers\":2,\"ce_start\":3,\"ce_end\":5,\"ue_start\":0,\"ue_end\":1}"));
  ASSERT(!text_is(tr_edac_json(&none, &e1), "null"));
  return 0;
}

TR_MAIN(TR_TEST(test_escapes), TR_TEST(test_valid_utf8_kept), TR_TEST(test_invalid_escaped), TR_TEST(test_numbers),
        TR_TEST(test_objects_arrays), TR_TEST(test_lost_value_no_text), TR_TEST(test_parse_and_verbatim),
        TR_TEST(test_reports))
