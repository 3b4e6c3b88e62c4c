/*
 * edac.c - the EDAC counters (edac.h).
 */
#include "edac.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_count(const char *dir, const char *mc, const char *name, int64_t *v) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s/%s", dir, mc, name);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long long x = 0;
  const int ok = fscanf(f, "%lld", &x) == 1;
  fclose(f);
  if (!ok) return -1;
  *v += (int64_t)x;
  return 0;
}

void tr_edac_read(tr_edac *e) {
  memset(e, 0, sizeof *e);
  const char *dir = getenv("TERRAFORT_EDAC_ROOT");
  if (!dir || !*dir) dir = "/sys/devices/system/edac/mc";
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strncmp(de->d_name, "mc", 2) || !de->d_name[2] || strspn(de->d_name + 2, "0123456789") != strlen(de->d_name + 2))
      continue;
    int64_t ce = 0, ue = 0;
    if (read_count(dir, de->d_name, "ce_count", &ce) || read_count(dir, de->d_name, "ue_count", &ue)) continue;
    e->ce += ce;
    e->ue += ue;
    e->controllers++;
  }
  closedir(d);
  e->ok = e->controllers > 0;
}

tr_json *tr_edac_json(const tr_edac *start, const tr_edac *end) {
  if (!start->ok || !end->ok) return tr_json_null();
  tr_json *o = tr_json_object();
  tr_json_set(o, "controllers", tr_json_int(end->controllers));
  tr_json_set(o, "ce_start", tr_json_int(start->ce));
  tr_json_set(o, "ce_end", tr_json_int(end->ce));
  tr_json_set(o, "ue_start", tr_json_int(start->ue));
  tr_json_set(o, "ue_end", tr_json_int(end->ue));
  return o;
}
