/*
 * report_json.h - the reports the libraries below libterrain keep in
 * structs (libft's dual and replay reports, the AAP engine's statistics) as
 * members of a JSON object, through the one writer (terrain.h, tr_json_*)
 * (internal to libterrain).
 *
 * libft and the AAP engine write no JSON: they fill public structs (ft.h,
 * aap.h) and this file gives each field its key, in the order the report
 * files (--ft-report, --aap-stats) have always had them. Counts are
 * integers, times in seconds with 6 decimals.
 */
#ifndef TR_REPORT_JSON_H
#define TR_REPORT_JSON_H

#include "terrain.h"

struct ft_report;       /* ft.h */
struct ft_track_report; /* ft.h */
struct tr_aap_stats;    /* aap.h */

/* Each sets its report's members in object o, after those o has; 0, or -1
 * (o is then marked and has no text: terrain.h). */

/* "blocks", "sub_blocks", ... "recompute_s": libft's --ft dual counts. */
int tr_json_ft_report(tr_json *o, const struct ft_report *r);

/* "launches", "idempotent", "idempotent_share", ... "replay_s": the
 * idempotence tracker's counts (--ft replay). */
int tr_json_ft_track(tr_json *o, const struct ft_track_report *r);

/* "backend", "schedule", "makespan_s", "waves", "max_round", "totals" (the
 * workers' sums) and "workers" (one object each): an AAP run's statistics. */
int tr_json_aap_stats(tr_json *o, const struct tr_aap_stats *s);

#endif
