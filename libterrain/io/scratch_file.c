/*
 * scratch_file.c - unlinked scratch files (see scratch_file.h).
 */
#include "scratch_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tr_scratch_folder(const char *tmp_dir, const char *dst, char *out, size_t n, tr_error *err) {
  if (tmp_dir && tmp_dir[0]) {
    struct stat sb;
    if (stat(tmp_dir, &sb) != 0) return tr_fail(err, TR_EOUTPUT, "--tmp '%s': %s", tmp_dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return tr_fail(err, TR_EOUTPUT, "--tmp '%s' is not a folder", tmp_dir);
    if (access(tmp_dir, W_OK | X_OK) != 0)
      return tr_fail(err, TR_EOUTPUT, "--tmp '%s': this process cannot write there (%s)", tmp_dir, strerror(errno));
    snprintf(out, n, "%s", tmp_dir);
    return TR_OK;
  }
  const char *slash = strrchr(dst, '/');
  if (!slash) snprintf(out, n, ".");
  else if (slash == dst) snprintf(out, n, "/");
  else snprintf(out, n, "%.*s", (int)(slash - dst), dst);
  return TR_OK;
}

int tr_scratch_open(const char *dir, const char *tag) {
  const size_t n = strlen(dir) + strlen(tag) + 32;
  char *path = malloc(n);
  if (!path) {
    errno = ENOMEM;
    return -1;
  }
  snprintf(path, n, "%s/.terrafort-%s-XXXXXX", dir, tag);
  const int fd = mkstemp(path);
  const int e = errno;
  if (fd >= 0) unlink(path);
  free(path);
  errno = e;
  return fd;
}

int tr_pwrite_all(int fd, const void *buf, int64_t n, int64_t off) {
  const char *p = buf;
  while (n > 0) {
    const ssize_t w = pwrite(fd, p, (size_t)n, (off_t)off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = ENOSPC;
      return -1;
    }
    p += w, n -= w, off += w;
  }
  return 0;
}

int tr_pread_all(int fd, void *buf, int64_t n, int64_t off) {
  char *p = buf;
  while (n > 0) {
    const ssize_t r = pread(fd, p, (size_t)n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = EIO;
      return -1;
    }
    p += r, n -= r, off += r;
  }
  return 0;
}
