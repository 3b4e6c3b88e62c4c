/*
 * written.c - the report of the final files a run wrote (see written.h).
 *
 * One line per file, its absolute path (realpath: the file exists once it
 * is in place), appended with one write() to a file opened O_APPEND, so
 * that lines of several writers never interleave. A path holding a newline
 * cannot be one line and is not reported: a caller then does not count the
 * file as written (a batch reruns the job rather than skip it wrongly).
 * Scratch rasters (flowgraph's filled DEM, its accumulation for the
 * network) are committed like outputs but under terrafort's hidden
 * temporary names, and deleted by the run: those names are not reported.
 *
 * Every final file is also noted in a fixed table of this process's, for
 * tr_remove_outputs (terrain.h): under mpirun, a rank lost after rank 0
 * has put the outputs in place (in the closing exchange, in MPI_Finalize)
 * still ends the job with exit 10, and exit 10 leaves no output. The
 * table is fixed (no allocation, no lock) because the step watchdog of
 * tools/process.c empties it from its own thread while the others may be
 * stopped anywhere.
 */
#include "written.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terrain.h"

int tr_is_scratch_name(const char *path) {
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  return base[0] == '.' && strstr(base, TR_TMP_MARK) != NULL;
}

#define NPLACED 64
static char placed[NPLACED][PATH_MAX];
static int nplaced; /* slots claimed; a slot is used once its path is whole */
static int ready[NPLACED];

/* Notes abs for tr_remove_outputs (beyond the table's size: not noted). */
static void note_placed(const char *abs) {
  const int k = __atomic_fetch_add(&nplaced, 1, __ATOMIC_SEQ_CST);
  if (k >= NPLACED) return;
  snprintf(placed[k], sizeof placed[k], "%s", abs);
  __atomic_store_n(&ready[k], 1, __ATOMIC_RELEASE);
}

/* Every caller unlinks every noted file, none claims one: two threads may
 * remove at once (the step watchdog past MPI_Finalize's deadline, the
 * SIGTERM handler of mpirun ending the job), and either may end the
 * process as soon as its own pass returns. With slots claimed, one could
 * exit between the other's claim and its unlink (CI saw o.tif.aux.xml
 * left alone so). A second unlink of a path is ENOENT. */
void tr_remove_outputs(void) {
  const int n = __atomic_load_n(&nplaced, __ATOMIC_SEQ_CST);
  for (int k = 0; k < n && k < NPLACED; k++)
    if (__atomic_load_n(&ready[k], __ATOMIC_ACQUIRE)) unlink(placed[k]);
}

void tr_output_written(const char *path) {
  if (!path || tr_is_scratch_name(path)) return;
  char abs[PATH_MAX], line[PATH_MAX + 2];
  if (!realpath(path, abs)) snprintf(abs, sizeof abs, "%s", path);
  note_placed(abs);
  const char *to = getenv(TR_OUTPUTS_ENV);
  if (!to || !*to) return;
  const int n = snprintf(line, sizeof line, "%s\n", abs);
  if (n <= 1 || (size_t)n >= sizeof line || memchr(line, '\n', (size_t)n - 1)) return;
  const int fd = open(to, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  if (write(fd, line, (size_t)n) != n) {
    /* nothing more to do: the report is best effort, the output is in place */
  }
  close(fd);
}
