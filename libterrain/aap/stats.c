/*
 * stats.c - per-worker statistics of an AAP run (aap.h, tr_aap_stats): a
 * worker is a thread (threads back-end), a simulated worker, or an MPI rank.
 * The engine writes no JSON; libterrain names the fields in --aap-stats
 * (core/report_json.c).
 */
#include "aap_internal.h"

#include <stdlib.h>

void tr_aap_stats_free(tr_aap_stats *s) {
  if (!s) return;
  free(s->w);
  s->w = NULL;
  s->nworkers = 0;
}
