/*
 * inject.c - parser of the fault-injection spec (see inject.h).
 */
#include "inject.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

static int num(const char *kind, const char *key, const char *v, double lo, double hi, double *out,
               tr_error *err) {
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  if (!*v || *end || errno || d < lo || d > hi)
    return tr_fail(err, TR_EUSAGE, "inject: %s:%s=%s is not a number in [%g, %g]", kind, key, v, lo, hi);
  *out = d;
  return 0;
}

int tr_inject_parse(const char *spec, tr_inject *out, tr_error *err) {
  memset(out, 0, sizeof *out);
  out->delay_rank = -1;
  out->aap.slow_worker = -1;
  out->aap.slow_factor = 1.0;
  if (!spec || !*spec) return TR_OK;
  char *copy = strdup(spec);
  if (!copy) return tr_fail(err, TR_ENOMEM, "out of memory");
  int st = TR_OK, items = 0;
  char *save1 = NULL;
  for (char *item = strtok_r(copy, ";", &save1); item && !st; item = strtok_r(NULL, ";", &save1)) {
    while (*item == ' ') item++;
    if (!*item) continue;
    items++;
    char *colon = strchr(item, ':');
    if (!colon) {
      st = tr_fail(err, TR_EUSAGE, "inject: '%s' is not kind:key=value,...", item);
      break;
    }
    *colon = 0;
    const char *kind = item;
    double p = -1, seed = 0, sub = -1, block = -1, slot = 0, worker = -1, ms = -1, after = 0, count = 0, rank = -1,
           factor = -1, tile = -2, launch = 0, silent = 0, bit = -1, round = 0;
    int at = 0, buf = TR_SIGBUS_IN, ao = 0;
    char *save2 = NULL;
    for (char *kv = strtok_r(colon + 1, ",", &save2); kv && !st; kv = strtok_r(NULL, ",", &save2)) {
      char *eq = strchr(kv, '=');
      if (!eq) {
        st = tr_fail(err, TR_EUSAGE, "inject: %s: '%s' is not key=value", kind, kv);
        break;
      }
      *eq = 0;
      const char *k = kv, *v = eq + 1;
      if (!strcmp(k, "p")) st = num(kind, k, v, 0, 1, &p, err);
      else if (!strcmp(k, "seed")) st = num(kind, k, v, 0, 1.8e19, &seed, err);
      else if (!strcmp(k, "sub")) st = num(kind, k, v, 0, 3, &sub, err);
      else if (!strcmp(k, "block")) st = num(kind, k, v, -1, 9e15, &block, err);
      else if (!strcmp(k, "slot")) st = num(kind, k, v, -1, 15, &slot, err);
      else if (!strcmp(k, "worker")) st = num(kind, k, v, 0, 1e6, &worker, err);
      else if (!strcmp(k, "ms")) st = num(kind, k, v, 0, 3.6e6, &ms, err);
      else if (!strcmp(k, "after")) st = num(kind, k, v, 0, 1e9, &after, err);
      else if (!strcmp(k, "count")) st = num(kind, k, v, 0, 1e9, &count, err);
      else if (!strcmp(k, "rank")) st = num(kind, k, v, 0, 1e6, &rank, err);
      else if (!strcmp(k, "factor")) st = num(kind, k, v, 1, 1e6, &factor, err);
      else if (!strcmp(k, "tile")) st = num(kind, k, v, -1, 9e15, &tile, err);
      else if (!strcmp(k, "launch")) st = num(kind, k, v, -1, 1e6, &launch, err); /* -1: a graph round's Assemble */
      else if (!strcmp(k, "silent")) st = num(kind, k, v, 0, 1, &silent, err);
      else if (!strcmp(k, "bit")) st = num(kind, k, v, 0, 63, &bit, err);
      else if (!strcmp(k, "round")) st = num(kind, k, v, -1, 1e9, &round, err);
      else if (!strcmp(k, "at")) {
        if (!strcmp(v, "state")) at = 0;
        else if (!strcmp(v, "msgs")) at = 2;
        else st = tr_fail(err, TR_EUSAGE, "inject: %s:at=%s is not state or msgs", kind, v);
      } else if (!strcmp(k, "buf")) {
        if (!strcmp(v, "in")) buf = TR_SIGBUS_IN;
        else if (!strcmp(v, "out")) buf = TR_SIGBUS_OUT;
        else if (!strcmp(v, "outside")) buf = TR_SIGBUS_OUTSIDE;
        else st = tr_fail(err, TR_EUSAGE, "inject: %s:buf=%s is not in, out or outside", kind, v);
      } else if (!strcmp(k, "code")) {
        if (!strcmp(v, "ar")) ao = 0;
        else if (!strcmp(v, "ao")) ao = 1;
        else st = tr_fail(err, TR_EUSAGE, "inject: %s:code=%s is not ar or ao", kind, v);
      }
      else st = tr_fail(err, TR_EUSAGE, "inject: %s: unknown key '%s'", kind, k);
    }
    if (st) break;
    ft_inject *f = &out->ft;
    if (!strcmp(kind, "flip") || !strcmp(kind, "flip-input")) {
      ft_fault_kind fk = kind[4] ? FT_FAULT_FLIP_INPUT : FT_FAULT_FLIP;
      if (seed > 0) f->seed = (uint64_t)seed;
      if (p >= 0) {
        if (fk == FT_FAULT_FLIP) f->flip_p = p;
        else f->flip_input_p = p;
      } else if (sub >= 0 || block >= 0) {
        if (f->n_exact >= FT_INJECT_MAX_EXACT) {
          st = tr_fail(err, TR_EUSAGE, "inject: more than %d exact faults", FT_INJECT_MAX_EXACT);
          break;
        }
        ft_fault_at *a = &f->exact[f->n_exact++];
        a->kind = fk;
        a->block = (int64_t)block;
        a->sub = (int)sub;
        a->slot = (int)slot;
        a->round = (int64_t)round;
        a->at = at;
      } else {
        st = tr_fail(err, TR_EUSAGE, "inject: %s needs p=P or sub=J", kind);
      }
    } else if (!strcmp(kind, "stall")) {
      if (worker < 0 || ms < 0) {
        st = tr_fail(err, TR_EUSAGE, "inject: stall needs worker=W,ms=M");
        break;
      }
      f->stall = 1;
      f->stall_worker = (int)worker;
      f->stall_ms = (int)ms;
      f->stall_after = (int)after;
      f->stall_count = (int)count;
    } else if (!strcmp(kind, "kill")) {
      if (worker < 0) {
        st = tr_fail(err, TR_EUSAGE, "inject: kill needs worker=W");
        break;
      }
      f->kill = 1;
      f->kill_worker = (int)worker;
      f->kill_after = (int)after;
    } else if (!strcmp(kind, "stop-send")) {
      if (after < 1) {
        st = tr_fail(err, TR_EUSAGE, "inject: stop-send needs after=K (K >= 1)");
        break;
      }
      /* one kind, two senders: libft's (it travels in its task headers) and
       * the AAP engine's, each reading its own library's struct */
      f->stop_send_after = out->aap.stop_send_after = (int)after;
      f->stop_send_rank = out->aap.stop_send_rank = rank >= 0 ? (int)rank : 0;
    } else if (!strcmp(kind, "delay")) {
      if (rank < 0 || ms < 0) {
        st = tr_fail(err, TR_EUSAGE, "inject: delay needs rank=R,ms=M");
        break;
      }
      out->delay_rank = (int)rank;
      out->delay_ms = (int)ms;
    } else if (!strcmp(kind, "hold")) {
      if (rank < 0 || ms < 0) {
        st = tr_fail(err, TR_EUSAGE, "inject: hold needs rank=R,ms=M");
        break;
      }
      if (out->n_hold == TR_INJECT_MAX_HOLDS) {
        st = tr_fail(err, TR_EUSAGE, "inject: more than %d holds", TR_INJECT_MAX_HOLDS);
        break;
      }
      out->hold_rank[out->n_hold] = (int)rank;
      out->hold_ms[out->n_hold++] = (int)ms;
    } else if (!strcmp(kind, "slow")) {
      if (worker < 0 || factor < 1) {
        st = tr_fail(err, TR_EUSAGE, "inject: slow needs worker=W,factor=F");
        break;
      }
      out->aap.slow_worker = (int)worker;
      out->aap.slow_factor = factor;
    } else if (!strcmp(kind, "msg-delay")) {
      if (ms < 0) {
        st = tr_fail(err, TR_EUSAGE, "inject: msg-delay needs ms=M");
        break;
      }
      out->aap.delay_max = ms / 1000.0;
    } else if (!strcmp(kind, "spill-fail")) {
      out->spill_fail = (int64_t)(after < 0 ? 0 : after) + 1;
    } else if (!strcmp(kind, "flip-launch") || !strcmp(kind, "touch")) {
      tr_launch_inject *li = &out->launch;
      const int touch = kind[0] == 't';
      if (!touch && p >= 0) {
        li->p = p;
        li->seed = (uint64_t)seed;
        li->p_silent = (int)silent;
        li->p_bit = (int)bit;
      } else if (tile < -1) {
        st = tr_fail(err, TR_EUSAGE, "inject: %s needs tile=T%s", kind, touch ? "" : " or p=P");
      } else if ((touch ? li->ntouch : li->n) >= TR_LAUNCH_INJECT_MAX) {
        st = tr_fail(err, TR_EUSAGE, "inject: more than %d %s faults", TR_LAUNCH_INJECT_MAX, kind);
      } else if (touch) {
        li->touch[li->ntouch].tile = (int64_t)tile;
        li->touch[li->ntouch++].launch = (int)launch;
      } else {
        li->at[li->n].tile = (int64_t)tile;
        li->at[li->n].launch = (int)launch;
        li->at[li->n].bit = (int)bit;
        li->at[li->n++].silent = (int)silent;
      }
    } else if (!strcmp(kind, "stop-stage")) {
      if (after < 1) st = tr_fail(err, TR_EUSAGE, "inject: stop-stage needs after=K (K >= 1)");
      else {
        out->stop_stage = (int)after;
        out->stop_stage_rank = rank >= 0 ? (int)rank : 0;
      }
    } else if (!strcmp(kind, "stop-start") || !strcmp(kind, "stop-started") || !strcmp(kind, "stop-end") ||
               !strcmp(kind, "stop-finalize")) {
      /* acted on by the program around the command (tools/process.c) */
      if (rank < 0) st = tr_fail(err, TR_EUSAGE, "inject: %s needs rank=R", kind);
    } else if (!strcmp(kind, "gpu-hang")) {
      tr_launch_inject *li = &out->launch;
      if (tile < -1) st = tr_fail(err, TR_EUSAGE, "inject: gpu-hang needs tile=T");
      else if (li->nhang >= TR_LAUNCH_INJECT_MAX)
        st = tr_fail(err, TR_EUSAGE, "inject: more than %d gpu-hang faults", TR_LAUNCH_INJECT_MAX);
      else {
        li->hang_ms[li->nhang] = ms > 0 ? (int)ms : 60000;
        li->hang[li->nhang++] = (int64_t)tile;
      }
    } else if (!strcmp(kind, "gpu-trap")) {
      tr_launch_inject *li = &out->launch;
      if (tile < -1) st = tr_fail(err, TR_EUSAGE, "inject: gpu-trap needs tile=T");
      else if (li->ntrap >= TR_LAUNCH_INJECT_MAX)
        st = tr_fail(err, TR_EUSAGE, "inject: more than %d gpu-trap faults", TR_LAUNCH_INJECT_MAX);
      else li->trap[li->ntrap++] = (int64_t)tile;
    } else if (!strcmp(kind, "sigbus") || !strcmp(kind, "hwpoison")) {
      tr_launch_inject *li = &out->launch;
      const int hw = kind[0] == 'h';
      if (tile < -1) st = tr_fail(err, TR_EUSAGE, "inject: %s needs tile=T", kind);
      else if (launch < 0 && hw) st = tr_fail(err, TR_EUSAGE, "inject: hwpoison: launch=%g is not a launch of a tile", launch);
      else if (hw && (buf != TR_SIGBUS_IN || ao || after))
        st = tr_fail(err, TR_EUSAGE, "inject: hwpoison poisons the input window: no buf=, code= or after=");
      else if (li->nsigbus >= TR_LAUNCH_INJECT_MAX)
        st = tr_fail(err, TR_EUSAGE, "inject: more than %d sigbus and hwpoison faults", TR_LAUNCH_INJECT_MAX);
      else {
        li->sigbus[li->nsigbus].tile = (int64_t)tile;
        li->sigbus[li->nsigbus].launch = (int)launch;
        li->sigbus[li->nsigbus].buf = buf;
        li->sigbus[li->nsigbus].ao = ao;
        li->sigbus[li->nsigbus].after = after > 0;
        li->sigbus[li->nsigbus++].hwpoison = hw;
      }
    } else {
      st = tr_fail(err, TR_EUSAGE,
                   "inject: unknown kind '%s' (flip, flip-input, stall, kill, delay, hold, slow, msg-delay, "
                   "spill-fail, flip-launch, gpu-trap, gpu-hang, touch, stop-stage, stop-start, stop-started, stop-end, stop-finalize, stop-send, sigbus, hwpoison)",
                   kind);
    }
  }
  free(copy);
  if (!st && !items) st = tr_fail(err, TR_EUSAGE, "inject: '%s' names no fault (kind:key=value,...)", spec);
  return st;
}
