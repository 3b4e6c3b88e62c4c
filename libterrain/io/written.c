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

void tr_output_written(const char *path) {
  const char *to = getenv(TR_OUTPUTS_ENV);
  if (!to || !*to || !path) return;
  if (tr_is_scratch_name(path)) return;
  char abs[PATH_MAX], line[PATH_MAX + 2];
  if (!realpath(path, abs)) snprintf(abs, sizeof abs, "%s", path);
  const int n = snprintf(line, sizeof line, "%s\n", abs);
  if (n <= 1 || (size_t)n >= sizeof line || memchr(line, '\n', (size_t)n - 1)) return;
  const int fd = open(to, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  if (write(fd, line, (size_t)n) != n) {
    /* nothing more to do: the report is best effort, the output is in place */
  }
  close(fd);
}
