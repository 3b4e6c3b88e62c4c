/*
 * report.c - the run report as JSON.
 */
#include <inttypes.h>

#include "ft_internal.h"

int ft_report_format_json(const ft_report *r, char *buf, size_t len) {
  return snprintf(buf, len,
                  "{\"blocks\":%" PRId64 ",\"sub_blocks\":%" PRId64 ",\"injected\":%" PRId64
                  ",\"detected\":%" PRId64 ",\"corrected\":%" PRId64 ",\"tolerated\":%" PRId64
                  ",\"fatal\":%" PRId64 ",\"mismatches\":%" PRId64
                  ",\"tolerated_sub_blocks\":%" PRId64 ",\"failed_sub_blocks\":%" PRId64
                  ",\"recomputes\":%" PRId64 ",\"votes\":%" PRId64 ",\"timeouts\":%" PRId64
                  ",\"redispatches\":%" PRId64
                  ",\"compute_s\":%.6f,\"detect_s\":%.6f,\"recompute_s\":%.6f}",
                  r->blocks, r->sub_blocks, r->injected, r->detected, r->corrected, r->tolerated,
                  r->fatal, r->mismatches, r->tolerated_sub_blocks, r->failed_sub_blocks,
                  r->recomputes, r->votes, r->timeouts, r->redispatches, r->compute_s,
                  r->detect_s, r->recompute_s);
}

int ft_report_json(const ft_report *r, FILE *f) {
  char buf[1024];
  ft_report_format_json(r, buf, sizeof buf);
  return fprintf(f, "%s\n", buf) < 0 ? -1 : 0;
}
