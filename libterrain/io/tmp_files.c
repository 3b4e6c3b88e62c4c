/*
 * tmp_files.c - the table of this process's temporary names (tmp_files.h).
 *
 * A fixed table, so that the signal handler's side allocates nothing and
 * takes no lock (only async-signal-safe calls: unlink). Each slot has a
 * state (free, being written, live) and a sequence number bumped by every
 * track and untrack; the handler copies a live slot's name and unlinks the
 * copy only when the state and number are the same after the copy, so a
 * name being rewritten by another thread is never unlinked half-made.
 */
#include "tmp_files.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "terrain.h"

enum { SLOT_FREE = 0, SLOT_BUSY = 1, SLOT_LIVE = 2 };
#define NSLOTS 64
#define AUX_EXT ".aux.xml"

static int removed; /* tr_remove_temporaries has run */

static struct {
  int state;
  unsigned seq;
  char path[PATH_MAX];
} slots[NSLOTS];

int tr_tmp_track(const char *path) {
  if (!path || strlen(path) + sizeof AUX_EXT > PATH_MAX) return -1;
  for (int i = 0; i < NSLOTS; i++) {
    int want = SLOT_FREE;
    if (!__atomic_compare_exchange_n(&slots[i].state, &want, SLOT_BUSY, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      continue;
    __atomic_fetch_add(&slots[i].seq, 1, __ATOMIC_RELAXED);
    strcpy(slots[i].path, path);
    __atomic_store_n(&slots[i].state, SLOT_LIVE, __ATOMIC_RELEASE);
    return 0;
  }
  return -1;
}

void tr_tmp_untrack(const char *path) {
  if (!path) return;
  for (int i = 0; i < NSLOTS; i++) {
    int want = SLOT_LIVE;
    if (__atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE) != SLOT_LIVE || strcmp(slots[i].path, path)) continue;
    if (!__atomic_compare_exchange_n(&slots[i].state, &want, SLOT_BUSY, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      continue;
    __atomic_fetch_add(&slots[i].seq, 1, __ATOMIC_RELEASE);
    slots[i].path[0] = 0;
    __atomic_store_n(&slots[i].state, SLOT_FREE, __ATOMIC_RELEASE);
    return;
  }
}

void tr_tmp_created(const char *path) {
  if (path && __atomic_load_n(&removed, __ATOMIC_SEQ_CST)) unlink(path);
}

void tr_remove_temporaries(void) {
  /* first: a file created from now on is unlinked by its creator */
  __atomic_store_n(&removed, 1, __ATOMIC_SEQ_CST);
  char name[PATH_MAX];
  for (int i = 0; i < NSLOTS; i++) {
    if (__atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE) != SLOT_LIVE) continue;
    const unsigned seq = __atomic_load_n(&slots[i].seq, __ATOMIC_ACQUIRE);
    size_t n = 0;
    while (n < PATH_MAX - sizeof AUX_EXT && (name[n] = slots[i].path[n])) n++;
    name[n] = 0;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&slots[i].state, __ATOMIC_RELAXED) != SLOT_LIVE ||
        __atomic_load_n(&slots[i].seq, __ATOMIC_RELAXED) != seq || n == 0)
      continue;
    unlink(name);
    /* GDAL's side-car of the same name (statistics, a partial copy's) */
    memcpy(name + n, AUX_EXT, sizeof AUX_EXT);
    unlink(name);
  }
}
