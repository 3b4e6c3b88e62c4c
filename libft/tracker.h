/*
 * tracker.h - the idempotence tracker's state, shared by tracker.c (regions,
 * versions, launch records) and replay.c (relaunch sets, checkpoints, the
 * repair loop); never installed.
 *
 * Data structures, all under one mutex:
 *   - regions[]: every region ever registered, indexed by id - 1; an id is
 *     never reused, which is what a region's generation is. Each holds its
 *     range, its latest version (pgvmap) and invalid_below: entries of a
 *     version below it can no longer be regenerated (an outside write was
 *     made after them). Marking "every older entry invalid" is then O(1):
 *     an entry is checked against its region when it is looked at.
 *   - live[]: ids of live regions sorted by start address, for the binary
 *     search that resolves a range (or a sub-range) to its region.
 *   - ring[]: plvmap, the last `history` launch records, record seq in slot
 *     seq % history. A relaunch set never needs a launch older than the
 *     launch being repaired, except producers; a producer that fell out of
 *     the ring makes the search fail (then a checkpoint repairs).
 *   - cps[]: checkpoints (region copies and the sequence number they precede).
 */
#ifndef FT_TRACKER_H
#define FT_TRACKER_H

#include <pthread.h>
#include <stdalign.h>

#include "ft.h"

typedef struct {
  uintptr_t lo, hi;        /* [lo, hi) */
  int64_t version;         /* pgvmap */
  int64_t invalid_below;   /* entries with an older version are invalid */
  int live;
} ft_region_rec;

typedef struct {
  uint64_t region;
  int64_t version;
  uintptr_t lo, hi;        /* the range as given (for the overlap test) */
} ft_param_rec;

typedef struct {
  int64_t seq;             /* -1: empty slot */
  uint64_t af;
  int nin, nout;           /* p[0..nin) inputs, p[nin..nin+nout) outputs */
  ft_param_rec p[FT_TRACK_MAX_PARAMS];
  int idempotent;
  ft_launch_fn fn;
  size_t args_size;
  alignas(16) unsigned char args[FT_TRACK_ARGS_MAX];
} ft_launch_rec;

typedef struct {
  int64_t id;
  int64_t seq_at;          /* launches with seq >= seq_at come after it */
  int n;
  uint64_t region[FT_TRACK_MAX_PARAMS];
  void *copy[FT_TRACK_MAX_PARAMS];
  size_t size[FT_TRACK_MAX_PARAMS];
} ft_cp_rec;

struct ft_tracker {
  pthread_mutex_t lock;
  ft_tracker_opts o;
  ft_region_rec *regions;
  size_t nregions, capregions;
  uint64_t *live;
  size_t nlive, caplive;
  ft_launch_rec *ring;
  int64_t next_seq;
  ft_cp_rec *cps;
  size_t ncp, capcp;
  int64_t next_cp;
  ft_track_report rep;
};

/* Under the lock: the record of seq, or NULL when not remembered. */
ft_launch_rec *ft_rec_at(ft_tracker *t, int64_t seq);
/* Under the lock: 1 when entry (region, version) can still be regenerated. */
int ft_entry_valid(const ft_tracker *t, uint64_t region, int64_t version);
/* Under the lock: the live region holding [a, a + size) (whole: exactly
 * that range), or 0. */
uint64_t ft_resolve(const ft_tracker *t, uintptr_t a, size_t size, int whole);
/* Under the lock: latest version of a region id. */
int64_t ft_latest(const ft_tracker *t, uint64_t region);

#endif
