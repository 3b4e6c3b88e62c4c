/*
 * status.c - status names, the exit-code table, error lines, and option defaults.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "status.h"

const char *tr_strerror(int status) {
  switch (status) {
    case TR_OK: return "success";
    case TR_EUSAGE: return "invalid usage";
    case TR_EINPUT: return "input error";
    case TR_ETYPE: return "unsupported data type";
    case TR_EBAND: return "no such band";
    case TR_EOUTPUT: return "output error";
    case TR_ENOSPC: return "no space left on device";
    case TR_ENOMEM: return "out of memory";
    case TR_EFT: return "fault tolerance failed";
    case TR_ECOLL: return "collective failed";
    case TR_EINTERRUPTED: return "interrupted";
    case TR_EFTLIMIT: return "too many faults";
    case TR_ERANK: return "a rank stopped answering";
    case TR_EBATCH: return "a job of the batch failed";
    default: return "internal error";
  }
}

int tr_exit_code(int status) {
  switch (status) {
    case TR_OK: return TR_EXIT_OK;
    case TR_EUSAGE: return TR_EXIT_USAGE;
    case TR_EINPUT: case TR_ETYPE: case TR_EBAND: return TR_EXIT_INPUT;
    case TR_EOUTPUT: case TR_ENOSPC: return TR_EXIT_OUTPUT;
    case TR_EFT: return TR_EXIT_FT;
    case TR_ECOLL: return TR_EXIT_COLL;
    case TR_ENOMEM: return TR_EXIT_NOMEM;
    case TR_EINTERRUPTED: return TR_EXIT_INTERRUPTED;
    case TR_EFTLIMIT: return TR_EXIT_FTLIMIT;
    case TR_ERANK: return TR_EXIT_RANK;
    case TR_EBATCH: return TR_EXIT_BATCH;
    default: return TR_EXIT_INTERNAL;
  }
}

void tr_run_opts_init(tr_run_opts *o) {
  memset(o, 0, sizeof *o);
  o->band = 1;
}

void tr_graph_opts_init(tr_graph_opts *o) {
  memset(o, 0, sizeof *o);
  o->staleness = -1;
  o->cache_mb = -1;
}

int tr_fail(tr_error *err, int status, const char *fmt, ...) {
  if (err) {
    /* A line longer than the buffer (a path of thousands of characters)
     * keeps its start and its end, where the reason is, and loses the
     * middle of the path. */
    char line[8192];
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    const size_t len = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if (len < sizeof err->msg) {
      memcpy(err->msg, line, len + 1);
    } else {
      static const char gap[] = "...";
      const size_t head = sizeof err->msg / 4, tail = sizeof err->msg - head - sizeof gap;
      memcpy(err->msg, line, head);
      memcpy(err->msg + head, gap, sizeof gap - 1);
      memcpy(err->msg + head + sizeof gap - 1, line + len - tail, tail);
      err->msg[sizeof err->msg - 1] = 0;
    }
  }
  return status;
}
