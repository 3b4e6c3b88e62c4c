/*
 * program_table.c - the table of graph programs (see graph.h).
 *
 * Each program file defines its row, `const tr_graph_program
 * tr_program_NAME`; this list collects them. Adding a program adds one name.
 */
#include <string.h>

#include "graph.h"

#define TR_PROGRAM_LIST(X) X(fill) X(fill_eps) X(fill_perimeter) X(flowdir) X(flowdir_compact) X(d8_up) X(d8_up_perimeter) X(d8_up_wide) X(d8_basins) X(d8_basins_perimeter) X(d8_order_cells)

#define TR_PROGRAM_DECLARE(n) extern const tr_graph_program tr_program_##n;
TR_PROGRAM_LIST(TR_PROGRAM_DECLARE)

#define TR_PROGRAM_ROW(n) &tr_program_##n,
static const tr_graph_program *const table[] = {TR_PROGRAM_LIST(TR_PROGRAM_ROW)};

const tr_graph_program *tr_graph_program_find(const char *name) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(table[i]->name, name)) return table[i];
  return NULL;
}
