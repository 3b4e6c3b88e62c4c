/*
 * draw.h - the seeded draws of the fault injectors (internal to
 * libterrain): the local launch point's (local/launch.c) and the graph
 * rounds' (hydro/graph_ft.c). A draw is a pure function of the seed and of
 * where it is made (tile or fragment, launch or round, what for), so a
 * schedule injects the same faults for any thread or rank count. libft has
 * its own (libft/inject.c), being a library of its own.
 */
#ifndef TR_DRAW_H
#define TR_DRAW_H

#include <stdint.h>

/* SplitMix64's finaliser: every bit of x reaches every bit of the result. */
static inline uint64_t tr_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* A hash's top 53 bits as a number in [0, 1). */
static inline double tr_unit64(uint64_t h) { return (double)(h >> 11) * (1.0 / 9007199254740992.0); }

#endif
