/*
 * program_table.c - the table of graph programs (see graph.h).
 *
 * Each program file defines its row, `const tr_graph_program
 * tr_program_NAME` (graph.h); this list collects them. Adding a program adds
 * one name; adding a body to a program changes only that program's row.
 */
#include <string.h>

#include "graph.h"

#define TR_PROGRAM_LIST(X) X(fill) X(flowdir) X(d8_up) X(d8_basins) X(d8_order_cells) X(dinf) X(dinf_up) X(mfd_up) X(dist_down) X(d8_len)

#define TR_PROGRAM_DECLARE(n) extern const tr_graph_program tr_program_##n;
TR_PROGRAM_LIST(TR_PROGRAM_DECLARE)

#define TR_PROGRAM_ROW(n) &tr_program_##n,
static const tr_graph_program *const table[] = {TR_PROGRAM_LIST(TR_PROGRAM_ROW)};

const tr_graph_program *tr_graph_program_find(const char *name) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(table[i]->name, name)) return table[i];
  return NULL;
}

const tr_graph_body *tr_graph_body_find(const char *name, const tr_graph_program **prog) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    for (int b = 0; b < TR_GRAPH_MAX_BODIES && table[i]->bodies[b]; b++)
      if (!strcmp(table[i]->bodies[b]->name, name)) {
        if (prog) *prog = table[i];
        return table[i]->bodies[b];
      }
  return NULL;
}
