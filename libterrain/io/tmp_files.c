/*
 * tmp_files.c - the table of this process's temporary names (tmp_files.h).
 *
 * A fixed table, so that the signal handler's side allocates nothing and
 * takes no lock (only async-signal-safe calls: unlink). Each slot has a
 * state (free, being written, live) and a sequence number bumped by every
 * track and untrack; the handler copies a live slot's name and unlinks the
 * copy only when the state and number are the same after the copy, so a
 * name being rewritten by another thread is never unlinked half-made.
 * A folder (flowgraph's network is written into one: an OGR driver may make
 * several files) is emptied and removed by the handler: its entries are
 * listed with the getdents64 system call, as opendir allocates.
 */
#include "tmp_files.h"

#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "terrain.h"

enum { SLOT_FREE = 0, SLOT_BUSY = 1, SLOT_LIVE = 2 };
#define NSLOTS 64
#define AUX_EXT ".aux.xml"

static int removed; /* tr_remove_temporaries has run */

static struct {
  int state;
  unsigned seq;
  int folder; /* a folder: its files go, then it */
  char path[PATH_MAX];
} slots[NSLOTS];

static int track(const char *path, int folder) {
  if (!path || strlen(path) + sizeof AUX_EXT > PATH_MAX) return -1;
  for (int i = 0; i < NSLOTS; i++) {
    int want = SLOT_FREE;
    if (!__atomic_compare_exchange_n(&slots[i].state, &want, SLOT_BUSY, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      continue;
    __atomic_fetch_add(&slots[i].seq, 1, __ATOMIC_RELAXED);
    strcpy(slots[i].path, path);
    slots[i].folder = folder;
    __atomic_store_n(&slots[i].state, SLOT_LIVE, __ATOMIC_RELEASE);
    return 0;
  }
  return -1;
}

int tr_tmp_track(const char *path) { return track(path, 0); }

int tr_tmp_track_folder(const char *path) { return track(path, 1); }

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

/* The folder's entries (one level: the drivers write files), then the
 * folder; async-signal-safe. */
static void remove_folder(const char *path) {
  const int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    struct entry {
      unsigned long long ino;
      long long off;
      unsigned short reclen;
      unsigned char type;
      char name[];
    };
    _Alignas(8) char buf[4096];
    long n;
    while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
      for (long at = 0; at < n;) {
        const struct entry *e = (const struct entry *)(buf + at);
        if (strcmp(e->name, ".") && strcmp(e->name, "..")) unlinkat(fd, e->name, 0);
        at += e->reclen;
      }
    close(fd);
  }
  rmdir(path);
}

void tr_remove_temporaries(void) {
  /* first: a file created from now on is unlinked by its creator */
  __atomic_store_n(&removed, 1, __ATOMIC_SEQ_CST);
  char name[PATH_MAX];
  for (int i = 0; i < NSLOTS; i++) {
    if (__atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE) != SLOT_LIVE) continue;
    const unsigned seq = __atomic_load_n(&slots[i].seq, __ATOMIC_ACQUIRE);
    const int folder = slots[i].folder;
    size_t n = 0;
    while (n < PATH_MAX - sizeof AUX_EXT && (name[n] = slots[i].path[n])) n++;
    name[n] = 0;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&slots[i].state, __ATOMIC_RELAXED) != SLOT_LIVE ||
        __atomic_load_n(&slots[i].seq, __ATOMIC_RELAXED) != seq || n == 0)
      continue;
    if (folder) {
      remove_folder(name);
      continue;
    }
    unlink(name);
    /* GDAL's side-car of the same name (statistics, a partial copy's) */
    memcpy(name + n, AUX_EXT, sizeof AUX_EXT);
    unlink(name);
  }
}
