/*
 * graph_plan.c - the planner (graph_plan.h): a body's memory from its
 * declared state shape, the body a run takes, and the state store's budget.
 *
 * The figures are the same for every rank: each rank computes every other
 * rank's from the tiles it would own (the owner rule, tile i is rank i mod
 * N's), so ranks with the same --mem choose the same body without a message.
 * With the default --mem on nodes of different memory they might not, and
 * bodies of one program still agree: a twin exchanges the same messages as
 * the main body (fill and fill_perimeter both send a perimeter cell's
 * current W, min-aggregated, towards one fixed point).
 */
#include "graph_plan.h"

#include <stdio.h>

#include "mem_limit.h"

static tr_graph_need need_of_rank(const tr_graph_program *prog, const tr_graph_body *b, const tr_graph_space *sp,
                                  int rank) {
  const tr_graph_state *s = &b->state;
  const int64_t type_bytes = GDALGetDataTypeSizeBytes(prog->cell_type);
  const int64_t cell = s->cell_bytes > 0 ? s->cell_bytes : type_bytes;
  const int64_t vs = b->msg_bytes > 0 ? b->msg_bytes : type_bytes;
  tr_graph_need n = {.fixed = sp->fixed};
  for (int64_t i = rank; i < sp->ntiles; i += sp->nranks) {
    const tr_tile t = sp->tile_at(sp->geom, i);
    const int64_t window = (t.rows + 2) * (t.cols + 2), perimeter = 2 * (t.rows + t.cols) + 4;
    const int64_t st =
        s->perimeter_bytes > 0 ? perimeter * s->perimeter_bytes + (window * s->cell_bits + 7) / 8 : window * cell;
    /* a round under --ft computes on copies of the state (and, dual, of the window) */
    const int64_t round = window * s->round_bytes + sp->ft_copies * st +
                          (sp->ft_copies > 1 ? sp->ft_copies * window * (int64_t)sizeof(float) : 0);
    if (round > n.round_max) n.round_max = round;
    /* the engine's halo buffers of an owned fragment: a slot per perimeter
     * cell with its value, up to twice a cell's size, a received mark and a
     * dirty index (snapshots and outboxes live for one round) */
    n.fixed += perimeter * (2 * vs + 5) + 512;
    n.state += st;
    if (st > n.frag_max) n.frag_max = st;
  }
  return n;
}

tr_graph_need tr_graph_plan_need(const tr_graph_program *prog, const tr_graph_body *b, const tr_graph_space *sp) {
  tr_graph_need n = need_of_rank(prog, b, sp, sp->rank);
  n.fixed += sp->writer + (int64_t)sp->pinned * n.round_max;
  return n;
}

/* Over the ranks, the most state (minimum 0) or the most a rank needs at
 * least to run b (minimum 1: the rounds running, one fragment read back, the
 * buffers). */
static int64_t largest_rank(const tr_graph_program *prog, const tr_graph_body *b, const tr_graph_space *sp,
                            int minimum) {
  int64_t most = 0;
  for (int r = 0; r < sp->nranks; r++) {
    const tr_graph_need n = need_of_rank(prog, b, sp, r);
    const int64_t v = !minimum ? n.state
                               : n.fixed + sp->writer + (int64_t)sp->pinned * n.round_max +
                                     (int64_t)(sp->pinned + 1) * n.frag_max;
    if (v > most) most = v;
  }
  return most;
}

int64_t tr_graph_plan_all_in_memory(const tr_graph_program *prog, const tr_graph_body *b, const tr_graph_space *sp) {
  return tr_graph_plan_need(prog, b, sp).fixed + largest_rank(prog, b, sp, 0);
}

static int applies(const tr_graph_body *b, const void *params) { return !b->applies || b->applies(params); }

const tr_graph_body *tr_graph_plan_body(const tr_graph_program *prog, const void *params, const tr_graph_space *sp,
                                        int64_t mem, tr_graph_need *need) {
  const tr_graph_body *main = NULL;
  for (int i = 0; i < TR_GRAPH_MAX_BODIES && prog->bodies[i] && !main; i++)
    if (prog->bodies[i]->role == TR_BODY_MAIN && applies(prog->bodies[i], params)) main = prog->bodies[i];
  if (!main) return NULL;
  const tr_graph_body *b = main;
  /* Where the state outweighs the fixed part, a twin only when the main
   * body would spill more than half of it: with less to spill the main body
   * is the faster (fill at 8000² keeping 2/3 of its state: 5.97 s against
   * fill_perimeter's 7.5 to 8.6 s, 4.9 to 5.6 s in memory, timed by hand:
   * scripts/bench/RESULTS.md, fill; terrafort-fill(1), MEMORY). Where it
   * does not, the buffers are what --mem is short of, and a twin whenever
   * the state does not fit whole. */
  const tr_graph_need mn = tr_graph_plan_need(prog, main, sp);
  const int64_t main_budget = mem - mn.fixed - (int64_t)sp->pinned * mn.frag_max;
  if (tr_graph_plan_all_in_memory(prog, main, sp) > mem && (mn.state <= mn.fixed || 2 * main_budget < mn.state))
    for (int i = 0; i < TR_GRAPH_MAX_BODIES && prog->bodies[i]; i++) {
      const tr_graph_body *t = prog->bodies[i];
      /* only when the twin's own working set fits (its rounds may hold more
       * than the main body's: d8_up_perimeter's): otherwise the main body
       * spills, or says what it needs */
      if (t->role == TR_BODY_TWIN && applies(t, params) && largest_rank(prog, t, sp, 1) <= mem) {
        b = t;
        break;
      }
    }
  if (need) *need = tr_graph_plan_need(prog, b, sp);
  return b;
}

static double mib(int64_t b) { return (double)b / (1 << 20); }

int tr_graph_plan_budget(const tr_graph_need *need, int pinned, int64_t mem, int64_t mem_opt, const char *what,
                         int64_t *budget, tr_error *err) {
  *budget = -1;
  if (need->fixed + need->state <= mem) return TR_OK;
  /* the rounds running, and room for one more fragment to be read back */
  const int64_t min = need->fixed + (int64_t)(pinned + 1) * need->frag_max;
  char have[32];
  if (mem < min)
    return tr_fail(err, TR_ENOMEM,
                   "%s needs at least %.0f MiB of memory per process (%d round%s at once of tiles of %.1f MiB of "
                   "state, and %.0f MiB of buffers), more than %s %s: give more --mem, fewer --threads or "
                   "a smaller --tile-size",
                   what, mib(min), pinned, pinned == 1 ? "" : "s", mib(need->frag_max), mib(need->fixed),
                   mem_opt > 0 ? "--mem" : "the default --mem (3/4 of what this process may have),",
                   tr_size_text(mem, have));
  *budget = mem - need->fixed - (int64_t)pinned * need->frag_max;
  return TR_OK;
}
