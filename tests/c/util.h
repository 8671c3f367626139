/* Helpers shared by the C tests: runtimes on the manual clock, specs, exchange. */
#ifndef SPOT_TEST_UTIL_H
#define SPOT_TEST_UTIL_H

#include "harness.h"

#define MS 1000000ULL

/* A manual-clock runtime delivering through spot_exchange. */
uint64_t manual_runtime(void);
/* A real-clock runtime delivering through spot_exchange. */
uint64_t real_runtime(void);
/* A manual-clock runtime delivering to `cb`. */
uint64_t manual_callback_runtime(spot_batch_fn cb, void *env, spot_finalizer_fn fin);
/* Node `id` (Entry Spot 1000 + id) on the manual clock over `store`, no host callbacks. */
uint64_t manual_node(uint64_t store, uint64_t id);
/* An owner with no lease and the given gate; returns its epoch. */
uint64_t owner(uint64_t rt, uint64_t id, uint32_t gate);
/* A spec: repeating every `period_ns` with `policy` and `max_catch_up`. */
struct spot_timer_spec spec_every(uint64_t period_ns, uint32_t policy, uint64_t max_catch_up);
/* Registers (owner, key) under `epoch` with `spec`, no user data. */
struct spot_timer reg(uint64_t rt, uint64_t owner_id, uint64_t epoch, uint64_t key,
                      struct spot_timer_spec spec);
/* One exchange without waiting: submits `n_done` completions, returns the record count. */
size_t xchg(uint64_t rt, const struct spot_completion *done, size_t n_done,
            struct spot_record *out, size_t cap);
/* Completes one record with `outcome` and receives what follows into `out`. */
size_t complete_and_take(uint64_t rt, const struct spot_record *rec, uint32_t outcome,
                         struct spot_record *out, size_t cap);
struct spot_stats stats(uint64_t rt);
void sleep_ms(unsigned ms);

#endif
