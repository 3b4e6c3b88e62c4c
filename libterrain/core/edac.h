/*
 * edac.h - the machine's memory-error counters (Linux EDAC, sysfs), which
 * --ft reports beside its own counts (internal to libterrain).
 *
 * Each memory controller /sys/devices/system/edac/mc/mc<N> counts the
 * corrected (ce_count) and uncorrected (ue_count) errors its ECC saw. A
 * report gives their sums when the run started and when it ended on the
 * writer's node: a rise during a run is an error the hardware corrected, or
 * one it could not (which --ft dual or --ft-check may have caught in the
 * output). Machines without an EDAC driver (most VMs and containers) have no
 * such folder: the report says null. TERRAFORT_EDAC_ROOT replaces
 * /sys/devices/system/edac/mc (tests).
 */
#ifndef TR_EDAC_H
#define TR_EDAC_H

#include <stddef.h>
#include <stdint.h>

#include "terrain.h"

typedef struct {
  int ok;          /* 0: no EDAC counters on this machine */
  int controllers; /* memory controllers read */
  int64_t ce, ue;  /* corrected and uncorrected errors, summed */
} tr_edac;

/* Reads the counters now into *e (e->ok 0 when there are none). */
void tr_edac_read(tr_edac *e);

/* A report's "edac" value: null, or {"controllers":N,"ce_start":..,
 * "ce_end":..,"ue_start":..,"ue_end":..} (NULL out of memory). */
tr_json *tr_edac_json(const tr_edac *start, const tr_edac *end);

#endif
