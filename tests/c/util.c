#define _GNU_SOURCE
#include "util.h"

#include <time.h>

static uint64_t exchange_runtime(uint32_t clock) {
    struct spot_runtime_config cfg = {0};
    cfg.struct_size = sizeof cfg;
    cfg.clock = clock;
    cfg.delivery = SPOT_DELIVERY_EXCHANGE;
    uint64_t rt = 0;
    CHECK_OK(spot_runtime_new(&cfg, &rt));
    return rt;
}

uint64_t manual_runtime(void) { return exchange_runtime(SPOT_CLOCK_MANUAL); }

uint64_t real_runtime(void) { return exchange_runtime(SPOT_CLOCK_REAL); }

uint64_t manual_callback_runtime(spot_batch_fn cb, void *env, spot_finalizer_fn fin) {
    struct spot_runtime_config cfg = {0};
    cfg.struct_size = sizeof cfg;
    cfg.clock = SPOT_CLOCK_MANUAL;
    cfg.delivery = SPOT_DELIVERY_CALLBACK;
    cfg.callback = cb;
    cfg.callback_env = env;
    cfg.callback_finalizer = fin;
    uint64_t rt = 0;
    CHECK_OK(spot_runtime_new(&cfg, &rt));
    return rt;
}

uint64_t manual_node(uint64_t store, uint64_t id) {
    struct spot_node_config c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.clock = SPOT_CLOCK_MANUAL;
    c.node_id = id;
    c.entry_spot = 1000 + id;
    uint64_t node = 0;
    CHECK_OK(spot_node_start(&c, store, &node));
    return node;
}

uint64_t owner(uint64_t rt, uint64_t id, uint32_t gate) {
    uint64_t epoch = 0;
    CHECK_OK(spot_owner_acquire(rt, id, 0, gate, &epoch));
    return epoch;
}

struct spot_timer_spec spec_every(uint64_t period_ns, uint32_t policy, uint64_t max_catch_up) {
    struct spot_timer_spec s = {0};
    s.struct_size = sizeof s;
    s.policy = policy;
    s.period_ns = period_ns;
    s.first_due_ns = SPOT_FIRST_DUE_DEFAULT;
    s.max_catch_up_ticks = max_catch_up;
    return s;
}

struct spot_timer reg(uint64_t rt, uint64_t owner_id, uint64_t epoch, uint64_t key,
                      struct spot_timer_spec spec) {
    struct spot_timer t = {0};
    CHECK_OK(spot_timer_register(rt, owner_id, epoch, key, &spec, NULL, NULL, &t));
    return t;
}

size_t xchg(uint64_t rt, const struct spot_completion *done, size_t n_done,
            struct spot_record *out, size_t cap) {
    size_t n = 0;
    CHECK_OK(spot_exchange(rt, done, n_done, out, cap, 0, &n));
    return n;
}

size_t complete_and_take(uint64_t rt, const struct spot_record *rec, uint32_t outcome,
                         struct spot_record *out, size_t cap) {
    struct spot_completion c = {rec->token, outcome, 0};
    return xchg(rt, &c, 1, out, cap);
}

struct spot_stats stats(uint64_t rt) {
    struct spot_stats s = {0};
    s.struct_size = sizeof s;
    CHECK_OK(spot_stats(rt, &s));
    return s;
}

void sleep_ms(unsigned ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}
