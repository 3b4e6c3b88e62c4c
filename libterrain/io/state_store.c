/*
 * state_store.c - per-fragment program state in memory up to a budget, the
 * rest in an unlinked spill file (see state_store.h).
 *
 * Bookkeeping is under one mutex; the file I/O and compression of a spill or
 * a restore run outside it, with the fragment marked busy so that a pin or a
 * drop of it waits on the condition variable instead of racing the I/O.
 */
#define _GNU_SOURCE
#include "state_store.h"
#include "scratch_file.h"

#include <errno.h>
#include <fcntl.h>
#include <lz4.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  void *pp;               /* where the program keeps the array's pointer */
  size_t elem;            /* bytes, or bytes per element with count */
  const size_t *count;
  int64_t off, cap;       /* its extent in the spill file; cap 0: none yet */
  int64_t raw, stored;    /* bytes when spilled, and as stored */
  int lz4;                /* stored compressed */
  int skip;               /* spills left before compression is tried again */
} st_array;

typedef struct {
  st_array *a;
  int n, cap;
  int pinned, busy, spilled;
  uint64_t stamp;         /* LRU clock at its last unpin */
  int64_t bytes;          /* bytes in memory as of its last unpin */
} st_frag;

struct tr_state_store {
  int64_t nf, budget;
  char *dir;
  int fd;                 /* -1 until the first spill */
  int64_t end;            /* the file's allocated length */
  st_frag *f;
  atomic_uchar *on_disk;  /* the engine's hint, read without the lock */
  uint64_t clock;
  int64_t fail_at, attempts; /* injected: spill number fail_at fails (0: none) */
  int64_t freed;             /* bytes spilled since the heap was last trimmed */
  tr_state_store_stats st;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  char err[512];
};

static void set_error(tr_state_store *s, const char *fmt, const char *a, int e) {
  if (!s->err[0]) snprintf(s->err, sizeof s->err, fmt, a, strerror(e));
}

tr_state_store *tr_state_store_create(int64_t nfrags, int64_t budget, const char *dir) {
  tr_state_store *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->f = calloc((size_t)(nfrags > 0 ? nfrags : 1), sizeof *s->f);
  s->on_disk = calloc((size_t)(nfrags > 0 ? nfrags : 1), sizeof *s->on_disk);
  s->dir = strdup(dir && dir[0] ? dir : ".");
  if (!s->f || !s->on_disk || !s->dir) {
    free(s->f);
    free((void *)s->on_disk);
    free(s->dir);
    free(s);
    return NULL;
  }
  s->nf = nfrags;
  s->budget = budget;
  s->st.budget = budget;
  s->fd = -1;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  return s;
}

void tr_state_store_destroy(tr_state_store *s) {
  if (!s) return;
  for (int64_t i = 0; i < s->nf; i++) free(s->f[i].a);
  if (s->fd >= 0) close(s->fd);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s->f);
  free((void *)s->on_disk);
  free(s->dir);
  free(s);
}

static void *get_ptr(const st_array *a) {
  void *p;
  memcpy(&p, a->pp, sizeof p);
  return p;
}

static void set_ptr(st_array *a, void *p) { memcpy(a->pp, &p, sizeof p); }

static int64_t array_bytes(const st_array *a) {
  if (!get_ptr(a)) return 0;
  return (int64_t)(a->count ? a->elem * *a->count : a->elem);
}

static int64_t frag_bytes(const st_frag *F) {
  int64_t b = 0;
  for (int i = 0; i < F->n; i++) b += array_bytes(&F->a[i]);
  return b;
}

int tr_state_store_keep(tr_state_store *s, int64_t f, void *pp, size_t bytes, const size_t *count) {
  pthread_mutex_lock(&s->mu);
  st_frag *F = &s->f[f];
  int rc = 0;
  if (F->n == F->cap) {
    int cap = F->cap ? 2 * F->cap : 8;
    st_array *a = realloc(F->a, (size_t)cap * sizeof *a);
    if (a) F->a = a, F->cap = cap;
    else rc = -1;
  }
  if (!rc) F->a[F->n++] = (st_array){pp, bytes, count, 0, 0, 0, 0, 0, 0};
  pthread_mutex_unlock(&s->mu);
  return rc;
}

/* ---- file I/O, outside the lock ----------------------------------------------------- */

/* The spill file, made on first use (called under the lock): created in the
 * folder and unlinked at once. */
static int open_file(tr_state_store *s) {
  if (s->fd >= 0) return 0;
  const int fd = tr_scratch_open(s->dir, "state");
  if (fd < 0) {
    set_error(s, "cannot create a spill file in '%s': %s", s->dir, errno);
    return -1;
  }
  s->fd = fd;
  return 0;
}

/* Writes F's arrays out and frees them. Extents are assigned under the lock
 * before (spill_extents), so this runs unlocked. */
static int spill_arrays(tr_state_store *s, st_frag *F, int64_t *written, int64_t *raw_total) {
  for (int i = 0; i < F->n; i++) {
    st_array *a = &F->a[i];
    void *p = get_ptr(a);
    if (!p || !a->raw) continue;
    const void *out = p;
    int64_t len = a->raw;
    char *tmp = NULL;
    a->lz4 = 0;
    if (a->skip > 0) {
      a->skip--;
    } else if (a->raw <= LZ4_MAX_INPUT_SIZE) {
      const int bound = LZ4_compressBound((int)a->raw);
      tmp = malloc((size_t)bound);
      const int c = tmp ? LZ4_compress_default(p, tmp, (int)a->raw, bound) : 0;
      if (c > 0 && c <= a->raw - a->raw / 8) {
        out = tmp, len = c, a->lz4 = 1;
      } else {
        a->skip = 7; /* did not pay: raw for the next seven spills of this array */
      }
    }
    const int rc = tr_pwrite_all(s->fd, out, len, a->off);
    const int e = errno;
    free(tmp);
    if (rc) {
      errno = e;
      return -1;
    }
    a->stored = len;
    *written += len;
    *raw_total += a->raw;
  }
  for (int i = 0; i < F->n; i++) {
    st_array *a = &F->a[i];
    void *p = get_ptr(a);
    if (p && a->raw) {
      free(p);
      set_ptr(a, NULL);
    }
  }
  return 0;
}

/* Reads F's arrays back into fresh memory and sets the program's pointers. */
static int restore_arrays(tr_state_store *s, st_frag *F, int64_t *read) {
  int i = 0;
  for (; i < F->n; i++) {
    st_array *a = &F->a[i];
    if (!a->raw) continue;
    char *dst = malloc((size_t)a->raw);
    if (!dst) {
      errno = ENOMEM;
      break;
    }
    int ok;
    if (a->lz4) {
      char *tmp = malloc((size_t)a->stored);
      ok = tmp && !tr_pread_all(s->fd, tmp, a->stored, a->off) &&
           LZ4_decompress_safe(tmp, dst, (int)a->stored, (int)a->raw) == a->raw;
      if (tmp && !ok && errno == 0) errno = EIO;
      if (!tmp) errno = ENOMEM;
      free(tmp);
    } else {
      ok = !tr_pread_all(s->fd, dst, a->raw, a->off);
    }
    if (!ok) {
      free(dst);
      break;
    }
    set_ptr(a, dst);
    *read += a->stored;
  }
  if (i == F->n) return 0;
  /* leave the fragment as it was: spilled, nothing in memory */
  const int e = errno;
  for (int j = 0; j < i; j++) {
    st_array *a = &F->a[j];
    if (a->raw) {
      free(get_ptr(a));
      set_ptr(a, NULL);
    }
  }
  errno = e;
  return -1;
}

/* ---- pin, unpin, drop ---------------------------------------------------------------- */

int tr_state_store_pin(tr_state_store *s, int64_t f) {
  pthread_mutex_lock(&s->mu);
  st_frag *F = &s->f[f];
  while (F->busy) pthread_cond_wait(&s->cv, &s->mu);
  F->pinned = 1;
  int rc = 0;
  if (F->spilled) {
    F->busy = 1;
    pthread_mutex_unlock(&s->mu);
    int64_t nread = 0;
    rc = restore_arrays(s, F, &nread);
    const int e = errno;
    pthread_mutex_lock(&s->mu);
    F->busy = 0;
    if (rc) {
      set_error(s, "cannot read state back from the spill file in '%s': %s", s->dir, e);
    } else {
      F->spilled = 0;
      atomic_store_explicit(&s->on_disk[f], 0, memory_order_relaxed);
      s->st.resident += F->bytes;
      if (s->st.resident > s->st.peak_resident) s->st.peak_resident = s->st.resident;
      s->st.restores++;
      s->st.bytes_read += nread;
    }
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

/* Spilled arrays are freed, and restored ones allocated, in every size a
 * tile's state takes: the heap fills with holes that glibc keeps (the
 * outofcore benchmark's flowgraph at 32000² with --mem 1G peaked 249 MiB
 * over it, while the state it held stayed within the budget). malloc_trim
 * gives the holes' whole pages back, after every eighth of the budget
 * spilled (at least 16 MiB); graph_run.c maps the large arrays on their own. */
static int64_t trim_every(const tr_state_store *s) {
  const int64_t e = s->budget / 8;
  return e > ((int64_t)16 << 20) ? e : (int64_t)16 << 20;
}

/* The least recently used fragment that may be spilled, or -1. */
static int64_t victim(const tr_state_store *s) {
  int64_t best = -1;
  for (int64_t i = 0; i < s->nf; i++) {
    const st_frag *V = &s->f[i];
    if (V->pinned || V->busy || V->spilled || V->bytes <= 0) continue;
    if (best < 0 || V->stamp < s->f[best].stamp) best = i;
  }
  return best;
}

int tr_state_store_unpin(tr_state_store *s, int64_t f) {
  pthread_mutex_lock(&s->mu);
  st_frag *F = &s->f[f];
  F->pinned = 0;
  const int64_t b = frag_bytes(F);
  s->st.resident += b - F->bytes;
  F->bytes = b;
  F->stamp = ++s->clock;
  if (s->st.resident > s->st.peak_resident) s->st.peak_resident = s->st.resident;
  int rc = 0;
  while (!rc && s->budget >= 0 && s->st.resident > s->budget) {
    const int64_t v = victim(s);
    if (v < 0) break;
    st_frag *V = &s->f[v];
    if (open_file(s)) {
      rc = -1;
      break;
    }
    /* extents: reuse while the array fits, else a new one at the end */
    for (int i = 0; i < V->n; i++) {
      st_array *a = &V->a[i];
      a->raw = array_bytes(a);
      if (a->raw > a->cap) {
        a->off = s->end;
        a->cap = a->raw;
        s->end += a->raw;
      }
    }
    V->busy = 1;
    atomic_store_explicit(&s->on_disk[v], 1, memory_order_relaxed);
    const int injected = ++s->attempts == s->fail_at;
    pthread_mutex_unlock(&s->mu);
    int64_t written = 0, raw = 0;
    rc = injected ? (errno = EIO, -1) : spill_arrays(s, V, &written, &raw);
    const int e = errno;
    pthread_mutex_lock(&s->mu);
    V->busy = 0;
    if (rc) {
      atomic_store_explicit(&s->on_disk[v], 0, memory_order_relaxed);
      set_error(s, "cannot spill state to a file in '%s': %s", s->dir, e);
    } else {
      V->spilled = 1;
      s->st.resident -= V->bytes;
      s->st.spills++;
      s->st.bytes_written += written;
      s->st.raw_written += raw;
      s->freed += V->bytes;
    }
    pthread_cond_broadcast(&s->cv);
  }
  const int trim = s->freed >= trim_every(s);
  if (trim) s->freed = 0;
  pthread_mutex_unlock(&s->mu);
#ifdef __GLIBC__
  if (trim) malloc_trim(0);
#endif
  return rc;
}

void tr_state_store_drop(tr_state_store *s, int64_t f) {
  pthread_mutex_lock(&s->mu);
  st_frag *F = &s->f[f];
  while (F->busy) pthread_cond_wait(&s->cv, &s->mu);
  if (!F->spilled) s->st.resident -= F->bytes;
  /* give the disk blocks back now: a run's spill file shrinks as it assembles */
  if (s->fd >= 0)
    for (int i = 0; i < F->n; i++)
      if (F->a[i].cap > 0)
        (void)fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)F->a[i].off, (off_t)F->a[i].cap);
  free(F->a);
  *F = (st_frag){0};
  atomic_store_explicit(&s->on_disk[f], 0, memory_order_relaxed);
  pthread_mutex_unlock(&s->mu);
}

int tr_state_store_resident(const tr_state_store *s, int64_t f) {
  return !atomic_load_explicit(&s->on_disk[f], memory_order_relaxed);
}

void tr_state_store_inject_fail(tr_state_store *s, int64_t nth) {
  pthread_mutex_lock(&s->mu);
  s->fail_at = nth;
  pthread_mutex_unlock(&s->mu);
}

void tr_state_store_get_stats(tr_state_store *s, tr_state_store_stats *st) {
  pthread_mutex_lock(&s->mu);
  *st = s->st;
  pthread_mutex_unlock(&s->mu);
}

const char *tr_state_store_error(tr_state_store *s) { return s->err; }
