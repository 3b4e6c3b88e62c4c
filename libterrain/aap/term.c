/*
 * term.c - termination: inactive / ack / wait waves with message counters.
 *
 * The spec's protocol: a worker whose buffer is empty after a round reports inactive;
 * when all are inactive the master asks everyone; each answers ack (still inactive) or
 * wait; on all acks the master assembles. That alone can end a run while a message is in
 * flight (every buffer empty, the message not yet delivered). So each answer also carries
 * the worker's counts of batches sent and received, and the master ends the run only when
 * a wave is all-ack with sum(sent) == sum(recv) *and* the previous wave was all-ack with
 * the same two sums: nothing was sent or received in between, so nothing is in flight.
 *
 * aap_term_wave is the master's decision on one wave's answers; the back-ends collect the
 * answers their own way (under a lock, from the simulator's state, or over MPI).
 */
#include "aap_internal.h"

int aap_all_inactive(const aap_core *c, int owner) {
  for (int64_t i = 0; i < c->nf; i++) {
    const aap_frag_rt *F = &c->f[i];
    if (owner >= 0 && F->owner != owner) continue;
    if (F->status != AAP_IDLE || F->eta > 0) return 0;
  }
  return 1;
}

int aap_term_wave(aap_wave *prev, int all_ack, int64_t sent, int64_t recv) {
  if (!all_ack || sent != recv) {
    prev->valid = 0;
    return 0;
  }
  if (prev->valid && prev->sent == sent && prev->recv == recv) return 1;
  prev->valid = 1;
  prev->sent = sent;
  prev->recv = recv;
  return 0;
}
