/*
 * kernels.c - finding a kernel in the context's copy of the registry.
 *
 * Under MPI a kernel crosses ranks by name: the master refuses to send an
 * unregistered one and a worker rank resolves the name it received. Both
 * ask here, below the context and the back-ends, so that the MPI back-end
 * never calls up into ctx.c (which holds the back-ends' tables).
 */
#include <string.h>

#include "ft_internal.h"

const ft_kernel *ft_kernel_lookup(const ft_ctx *ctx, const char *name) {
  for (size_t i = 0; i < ctx->opts.n_kernels; i++)
    if (strcmp(ctx->kernels[i].name, name) == 0) return &ctx->kernels[i];
  return NULL;
}
