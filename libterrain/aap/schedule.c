/*
 * schedule.c - delay stretch (DS): when a fragment may start its next round.
 *
 * aap_start_time(c, f, now) returns the time from which f may start given what is known
 * now: a time <= now (start at once; for the rules with a deadline it is the moment the DS
 * ran out, which the statistics use), a later time (the back-end sleeps or schedules a
 * wake-up and asks again), or INFINITY (held back until something changes). A fragment that has
 * not run PEval may always start; otherwise it needs eta_i >= 1 buffered batches.
 *
 * Notation: r_i = completed rounds of fragment i (PEval is round 0, so after PEval
 * r_i = 1); r_min = min r_j over *busy* fragments j (running, not yet PEval'd, holding
 * buffered batches, or with batches in flight towards them). Idle fragments with nothing
 * to do do not hold anyone back: when a batch of round k is sent to one, it joins at
 * round k+1 (aap_on_send), as if it had run empty rounds.
 *
 *   ap      DS = 0.
 *   bsp     DS = inf while r_i > r_min or a batch is in flight towards i (the round waits
 *           for all messages of the previous round); else 0.
 *   ssp(c)  DS = inf while r_i - r_min > c; else 0.
 *   random  DS = u * DS_max with u uniform in [0,1) from hash(seed, i, r_i); the threads
 *           back-end also picks among ready fragments at random.
 *   aap     the project's default rule (specs/aap-engine.md):
 *           - held back (r_i - r_min > c): DS = inf. c = opts.staleness when >= 0; no
 *             bound when -1 (the default); TR_AAP_STALENESS_AUTO (opt-in) sets c = 0
 *             while i's time per cell (moving-average round time / (moving-average work
 *             per round + 1)) and some neighbour's differ by more than straggler_ratio,
 *             else no bound. AUTO was the default once: with one slow worker it holds
 *             the fast fragments to the straggler's round, which cuts the total work
 *             (~1.36 cells per cell against ap's ~1.7) but not the makespan. The slow
 *             worker owns many fragments (32 in the benchmark) and is never idle under
 *             any schedule, so the makespan is its own work plus the rounds left after
 *             its last one; the fast fragments running ahead cost nothing (their
 *             worker idles anyway), hand the slow one fresher halo values (less
 *             re-flooding there) and leave fewer rounds after it. Held to r_min they lengthen that tail, and where tiles of
 *             different sizes look like stragglers (skewed tiles, balanced runs with
 *             noisy timings) the bound leaves workers idle as bsp does. Measured in
 *             scripts/bench/RESULTS.md (aap_schedules);
 *           - eta_i >= L_i: DS = 0. L_i = neighbour rounds that overlapped i's previous
 *             round (the batches it can expect), clamped to [L_bottom, L_up];
 *           - else DS = min(DS_max, max(0, T^ - T_idle)) where T_idle = now - end of i's
 *             last round and T^ = the predicted arrival, measured from that end, of the
 *             newest batch of every neighbour s it still waits for. s is waited for when
 *             it has started a round newer than the newest batch i holds from s and s's
 *             round time is known; its batch is predicted at start_s + ema_s + latency
 *             (s running) or end_s + latency (s done, batch on its way), ema_s being the
 *             moving average of s's round times and latency a moving average of observed
 *             latencies. DS_max is counted from when i became ready, so a fragment with
 *             eta_i >= 1 always starts within DS_max. DS_max = opts.ds_max when > 0,
 *             else opts.ds_rel x the longest moving-average round time of i and the
 *             senders it waits for (adaptive: default ds_rel 2).
 */
#include "aap_internal.h"

#include <math.h>
#include <string.h>

static const char *const names[] = {"aap", "bsp", "ap", "ssp", "random"};

int tr_aap_schedule_parse(const char *name, tr_aap_schedule *out) {
  for (int i = 0; i < 5; i++)
    if (name && strcmp(name, names[i]) == 0) {
      *out = (tr_aap_schedule)i;
      return TR_AAP_OK;
    }
  return TR_AAP_EINVAL;
}

const char *tr_aap_schedule_name(tr_aap_schedule s) {
  return (int)s >= 0 && s <= TR_AAP_SCHED_RANDOM ? names[s] : "?";
}

uint64_t aap_mix(uint64_t x) {
  /* splitmix64 finaliser */
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static int busy(const aap_frag_rt *F) {
  return F->status != AAP_IDLE || F->eta > 0 || F->inflight_to > 0;
}

int64_t aap_rmin(const aap_core *c) {
  int64_t m = INT64_MAX;
  for (int64_t i = 0; i < c->nf; i++)
    if (busy(&c->f[i]) && c->f[i].round < m) m = c->f[i].round;
  return m;
}

/* time per cell of f's rounds (moving averages); +1 cell keeps empty rounds finite. A
 * tile's rounds differ in size, so time per cell, not per round, tells a slow worker
 * from a big tile. */
static double cost(const aap_frag_rt *F) { return F->ema / (F->wema + 1.0); }

/* largest ratio (>= 1) between f's time per cell and a neighbour's; 1 before any is known */
static double speed_spread(const aap_core *c, int64_t f) {
  const aap_frag_rt *F = &c->f[f];
  const tr_aap_layout *L = c->L;
  double mine = cost(F), spread = 1.0;
  if (!F->has_ema || !(mine > 0)) return spread;
  for (int64_t k = L->nb_start[f]; k < L->nb_start[f + 1]; k++) {
    const aap_frag_rt *S = &c->f[L->nb[k]];
    double theirs = cost(S);
    if (!S->has_ema || !(theirs > 0)) continue;
    double r = theirs > mine ? theirs / mine : mine / theirs;
    if (r > spread) spread = r;
  }
  return spread;
}

double aap_start_time(const aap_core *c, int64_t f, double now) {
  const aap_frag_rt *F = &c->f[f];
  if (F->status == AAP_RUNNING) return INFINITY;
  if (F->status == AAP_NEW) return now;
  if (F->eta == 0) return INFINITY;
  const tr_aap_opts *o = &c->o;
  double base = F->t_ready > F->t_end ? F->t_ready : F->t_end;
  switch (o->schedule) {
  case TR_AAP_SCHED_AP:
    return base;
  case TR_AAP_SCHED_BSP:
    return (F->round <= aap_rmin(c) && F->inflight_to == 0) ? now : INFINITY;
  case TR_AAP_SCHED_SSP:
    return (F->round - aap_rmin(c) <= o->staleness) ? now : INFINITY;
  case TR_AAP_SCHED_RANDOM: {
    uint64_t h = aap_mix(o->seed ^ aap_mix((uint64_t)f * 0x100000001b3ULL + (uint64_t)F->round));
    double u = (double)(h >> 11) * (1.0 / 9007199254740992.0);
    double dsmax = o->ds_max > 0 ? o->ds_max : o->ds_rel * (F->has_ema ? F->ema : 0.0);
    return base + u * dsmax;
  }
  case TR_AAP_SCHED_AAP:
  default:
    break;
  }
  int stale = o->staleness;
  if (stale == TR_AAP_STALENESS_AUTO) stale = speed_spread(c, f) > o->straggler_ratio ? 0 : -1;
  if (stale >= 0 && F->round - aap_rmin(c) > stale) return INFINITY;
  if (F->eta >= F->Lexp) return now < base ? now : base;
  const tr_aap_layout *L = c->L;
  double lat = c->has_lat ? c->lat_ema : 0.0;
  double T = -INFINITY, scale = F->has_ema ? F->ema : 0.0;
  for (int64_t k = L->nb_start[f]; k < L->nb_start[f + 1]; k++) {
    const aap_frag_rt *S = &c->f[L->nb[k]];
    int64_t newest = S->status == AAP_RUNNING ? S->round : S->round - 1;
    if (newest <= F->nb_last[k - L->nb_start[f]] || !S->has_ema) continue;
    double pred = S->status == AAP_RUNNING ? S->t_start + S->ema + lat : S->t_end + lat;
    if (pred > T) T = pred;
    if (pred > now && S->ema > scale) scale = S->ema;
  }
  /* DS_max: ds_max when given, else ds_rel x the longest moving-average round time among
     i and the senders it waits for, so the bound follows the rounds actually measured (a
     fixed 2 ms was shorter than a straggler's round and far longer than a fast one's) */
  double dsmax = o->ds_max > 0 ? o->ds_max : o->ds_rel * scale;
  double deadline = base + dsmax;
  if (T < base) return base;
  return T < deadline ? T : deadline;
}

int aap_prefer(const aap_core *c, int64_t f, int64_t best) {
  if (best < 0) return 1;
  if (c->p->resident) {
    const int rf = c->p->resident(c->p->user, f) != 0, rb = c->p->resident(c->p->user, best) != 0;
    if (rf != rb) return rf;
  }
  return c->f[f].round < c->f[best].round;
}
