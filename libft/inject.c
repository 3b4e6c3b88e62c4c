/*
 * inject.c - the deterministic fault injector and the worker-side compute
 * step that applies it.
 *
 * No random stream is shared: each decision hashes (seed, block id,
 * sub-block, slot, fault kind) with splitmix64, so the same seed injects the
 * same faults into the same results whatever the thread timing, worker count
 * or back-end. The hash then also picks the cell and the bit.
 *
 * An input fault is applied to a private copy of the block's input window
 * (the caller's input is shared by both replicas and must stay intact); the
 * flipped element lies in the rows the sub-block reads.
 */
#include <stdlib.h>
#include <string.h>

#include "ft_internal.h"

static uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static uint64_t fault_hash(uint64_t seed, int64_t block, int sub, int slot, int kind) {
  uint64_t h = splitmix(seed);
  h = splitmix(h ^ (uint64_t)block);
  return splitmix(h ^ ((uint64_t)(unsigned)sub | (uint64_t)(unsigned)slot << 8 |
                       (uint64_t)(unsigned)kind << 24));
}

/* 1 when fault `kind` hits result (block, sub, slot); *h gets the hash that
 * then places it. */
static int decide(const ft_inject *inj, int kind, int64_t block, int sub, int slot,
                  uint64_t *h) {
  *h = fault_hash(inj->seed, block, sub, slot, kind);
  for (int i = 0; i < inj->n_exact && i < FT_INJECT_MAX_EXACT; i++) {
    const ft_fault_at *e = &inj->exact[i];
    if ((int)e->kind == kind && (e->block < 0 || e->block == block) &&
        (e->sub < 0 || e->sub == sub) && (e->slot < 0 || e->slot == slot))
      return 1;
  }
  double p = kind == FT_FAULT_FLIP ? inj->flip_p : inj->flip_input_p;
  if (p <= 0.0) return 0;
  uint32_t mask = inj->slot_mask ? inj->slot_mask : 3u;
  if (slot >= 32 || !(mask >> slot & 1u)) return 0;
  double u = (double)(splitmix(*h ^ 0x5DEECE66Dull) >> 11) * (1.0 / 9007199254740992.0);
  return u < p;
}

static void flip_bit(unsigned char *base, int64_t nelem, size_t es, uint64_t h) {
  uint64_t a = splitmix(h ^ 1), b = splitmix(h ^ 2);
  int64_t cell = (int64_t)(a % (uint64_t)nelem);
  size_t bit = (size_t)(b % (uint64_t)(es * 8));
  base[(size_t)cell * es + bit / 8] ^= (unsigned char)(1u << (bit % 8));
}

int ft_compute_sub(ft_kernel_fn fn, const void *kctx, const ft_block *blk, int sub, int slot,
                   const ft_inject *inj, void *out, int *ninj) {
  int64_t row0[4], nrows[4];
  ft_split_rows(blk->rows, row0, nrows);
  *ninj = 0;
  uint64_t h;
  int rc;
  if (decide(inj, FT_FAULT_FLIP_INPUT, blk->id, sub, slot, &h)) {
    int64_t wc = blk->cols + 2 * blk->halo, wr = blk->rows + 2 * blk->halo;
    size_t es = blk->in_elem_size;
    unsigned char *copy = malloc((size_t)(wr * wc) * es);
    if (!copy) return FT_ERR_NOMEM;
    for (int64_t r = 0; r < wr; r++)
      memcpy(copy + (size_t)(r * wc) * es,
             (const unsigned char *)blk->in + (size_t)(r * blk->in_stride) * es, (size_t)wc * es);
    /* the element lies in the rows this sub-block reads */
    flip_bit(copy + (size_t)(row0[sub] * wc) * es, (nrows[sub] + 2 * blk->halo) * wc, es, h);
    ft_block b2 = *blk;
    b2.in = copy;
    b2.in_stride = wc;
    rc = fn(kctx, &b2, row0[sub], nrows[sub], out);
    free(copy);
    (*ninj)++;
  } else {
    rc = fn(kctx, blk, row0[sub], nrows[sub], out);
  }
  if (rc == 0 && decide(inj, FT_FAULT_FLIP, blk->id, sub, slot, &h)) {
    flip_bit(out, nrows[sub] * blk->cols, blk->out_elem_size, h);
    (*ninj)++;
  }
  return rc;
}

int ft_inject_stall_ms(const ft_inject *inj, int worker, int64_t n) {
  if (!inj->stall || inj->stall_worker != worker || inj->stall_ms <= 0) return 0;
  if (n < inj->stall_after) return 0;
  if (inj->stall_count > 0 && n >= (int64_t)inj->stall_after + inj->stall_count) return 0;
  return inj->stall_ms;
}

int ft_inject_killed(const ft_inject *inj, int worker, int64_t n) {
  return inj->kill && inj->kill_worker == worker && n >= inj->kill_after;
}
