/*
 * scratch_file.c - unlinked scratch files (see scratch_file.h).
 */
#define _GNU_SOURCE /* O_TMPFILE, mkostemp */
#include "scratch_file.h"
#include "tmp_files.h"
#include "written.h"

#include <errno.h>
#include <fcntl.h>
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
  /* Unnamed from the start where the file system can (ext4, xfs, btrfs,
   * tmpfs): no moment exists in which a SIGKILL leaves a file behind. */
  int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
  /* Elsewhere a name lives between mkstemp and unlink: it is a temporary's
   * name (pid and host, tracked), so the signal handler or the next run's
   * stale clean-up removes what a signal leaves in between. */
  const size_t n = strlen(dir) + strlen(tag) + 64;
  char *path = malloc(n);
  if (!path) {
    errno = ENOMEM;
    return -1;
  }
  snprintf(path, n, "%s/%s%ld-%08x.tmp%s-XXXXXX", dir, TR_TMP_MARK, (long)getpid(), (unsigned)tr_tmp_host_tag(), tag);
  const int tracked = tr_tmp_track(path) == 0;
  fd = mkostemp(path, O_CLOEXEC);
  const int e = errno;
  if (fd >= 0) unlink(path);
  if (tracked) tr_tmp_untrack(path);
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
