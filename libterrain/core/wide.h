/*
 * wide.h - 128-bit integers for sums that no order of addition may change
 * (internal to libterrain).
 *
 * A sum of doubles depends on the order of its terms, and the order depends
 * on threads, tiles and ranks. Where the bytes must not, values are made
 * whole numbers of 2^-k units once and summed as 128-bit integers: exact,
 * so any order gives the same sum (acc_perimeter.c's d8_up_wide,
 * basin_stats.c). Across ranks such a sum travels as four 32-bit limbs, one
 * per uint64 lane of a plain COLL_UINT64 SUM allreduce: a lane adds one limb
 * per rank, so it cannot wrap below 2^32 ranks, and folding the lanes back
 * (tr_wide_from_limbs, the carries included) gives the total mod 2^128,
 * which is the total whenever it fits.
 */
#ifndef TR_WIDE_H
#define TR_WIDE_H

#include <stdint.h>

__extension__ typedef __int128 tr_wide;
__extension__ typedef unsigned __int128 tr_uwide;

/* v's two's complement as four 32-bit limbs, least significant first. */
static inline void tr_wide_to_limbs(uint64_t lane[4], tr_wide v) {
  const tr_uwide u = (tr_uwide)v;
  for (int k = 0; k < 4; k++) lane[k] = (uint64_t)(u >> (32 * k)) & 0xffffffffu;
}

/* The sum of limbs of several values (lanes summed), folded back. */
static inline tr_wide tr_wide_from_limbs(const uint64_t lane[4]) {
  tr_uwide u = 0;
  for (int k = 0; k < 4; k++) u += (tr_uwide)lane[k] << (32 * k);
  return (tr_wide)u;
}

#endif
