/* Bad input through the C surface: NULL pointers in every pointer argument, freed and
 * made-up runtime handles, stale timer handles, double free, unknown enum values, wrong
 * struct sizes, zero capacity, and re-entrancy from the batch callback. Each must give a
 * status code, never undefined behaviour (ASan/UBSan and valgrind watch). */
#define _GNU_SOURCE
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

#include "contract.h"
#include "util.h"

static void bad_null_pointers(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_runtime_config cfg = {0};
    cfg.struct_size = sizeof cfg;
    uint64_t out64 = 77;
    CHECK_ST(spot_runtime_new(NULL, &out64), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_runtime_new(&cfg, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_EQ_U64(out64, 77); /* outputs are written only on success */
    cfg.delivery = SPOT_DELIVERY_CALLBACK; /* callback mode without a callback */
    CHECK_ST(spot_runtime_new(&cfg, &out64), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_owner_acquire(rt, 2, 0, SPOT_GATE_SERIAL, NULL), SPOT_E_NULL_ARGUMENT);

    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    struct spot_timer t = {0};
    CHECK_ST(spot_timer_register(rt, 1, ep, 1, NULL, NULL, NULL, &t), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_timer_register(rt, 1, ep, 1, &sp, NULL, NULL, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_OK(spot_timer_register(rt, 1, ep, 1, &sp, NULL, NULL, &t)); /* NULL user data is fine */
    CHECK_ST(spot_timer_cancel_async(rt, t, 1, NULL, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_timer_stats(rt, t, NULL), SPOT_E_NULL_ARGUMENT);

    struct spot_record recs[4];
    struct spot_completion c = {1, SPOT_OUTCOME_OK, 0};
    size_t n = 99;
    CHECK_ST(spot_exchange(rt, NULL, 1, recs, 4, 0, &n), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_exchange(rt, NULL, 0, NULL, 4, 0, &n), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_exchange(rt, NULL, 0, recs, 4, 0, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_exchange(rt, &c, 0, recs, 4, 0, &n), SPOT_OK); /* n_completions 0 ignores the pointer */
    CHECK_ST(spot_complete(rt, NULL, 1), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_complete(rt, &c, SIZE_MAX), SPOT_E_INVALID_ARGUMENT); /* impossible length */
    CHECK_OK(spot_complete(rt, NULL, 0));
    CHECK_ST(spot_record_begin(rt, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_wakeup_fd(rt, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_now(rt, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_stats(rt, NULL), SPOT_E_NULL_ARGUMENT);
    /* misaligned pointers are rejected like NULL ones */
    char raw[64] __attribute__((aligned(8)));
    CHECK_ST(spot_now(rt, (uint64_t *)(void *)(raw + 1)), SPOT_E_NULL_ARGUMENT);
    /* infallible functions accept NULL where documented */
    CHECK(spot_last_error(NULL, 0) > 0);
    char tiny[1] = {'x'};
    spot_last_error(tiny, 1);
    CHECK(tiny[0] == '\0');
    CHECK(strcmp(spot_status_name(SPOT_E_TIMEOUT), "SPOT_E_TIMEOUT") == 0);
    CHECK(strcmp(spot_status_name(12345), "SPOT_E_UNKNOWN_STATUS") == 0);
    CHECK(strcmp(spot_status_name(-1), "SPOT_E_UNKNOWN_STATUS") == 0);
    CHECK_OK(spot_runtime_free(rt));
}

static void bad_freed_and_foreign_runtime_handles(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_timer t = reg(rt, 1, ep, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK_OK(spot_runtime_free(rt));
    CHECK_ST(spot_runtime_free(rt), SPOT_E_INVALID_HANDLE); /* double free */
    uint64_t handles[] = {rt, 0, 1, 0xdeadbeefULL, UINT64_MAX, rt + (1ULL << 32), rt ^ 1};
    for (size_t i = 0; i < sizeof handles / sizeof handles[0]; i++) {
        uint64_t h = handles[i], v = 0;
        struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
        struct spot_timer t2;
        struct spot_record recs[2];
        size_t n;
        uint32_t done, reason;
        int32_t fd;
        struct spot_stats s = {0};
        s.struct_size = sizeof s;
        struct spot_timer_stats ts = {0};
        ts.struct_size = sizeof ts;
        CHECK_ST(spot_owner_acquire(h, 1, 0, 0, &v), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_owner_renew(h, 1, ep, 0), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_owner_revoke(h, 1, ep), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_owner_gate_enter(h, 1, 0), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_owner_gate_leave(h, 1), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_timer_register(h, 1, ep, 2, &sp, NULL, NULL, &t2), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_timer_cancel(h, t, -1, &reason), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_timer_cancel_async(h, t, 0, &done, &reason), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_timer_stats(h, t, &ts), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_exchange(h, NULL, 0, recs, 2, -1, &n), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_complete(h, NULL, 0), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_wakeup_fd(h, &fd), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_advance(h, 1), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_now(h, &v), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_stats(h, &s), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_runtime_free(h), SPOT_E_INVALID_HANDLE);
    }
    /* a new runtime may reuse the registry entry; the old handle still does not match */
    uint64_t rt2 = manual_runtime();
    CHECK(rt2 != rt);
    CHECK_ST(spot_advance(rt, 1), SPOT_E_INVALID_HANDLE);
    CHECK_OK(spot_advance(rt2, 1));
    CHECK_OK(spot_runtime_free(rt2));
}

static void bad_stale_timer_handles(void) {
    uint64_t rt = manual_runtime(), other = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    uint64_t ep_o = owner(other, 1, SPOT_GATE_CONCURRENT);
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    struct spot_timer t = reg(rt, 1, ep, 1, sp);
    struct spot_timer foreign = reg(other, 1, ep_o, 1, sp);
    uint32_t reason = 99, done = 9;
    struct spot_timer bogus = t;
    bogus.generation += 1000000;
    CHECK_ST(spot_timer_cancel(rt, bogus, -1, &reason), SPOT_E_STALE_TIMER);
    bogus = t;
    bogus.slot = 4000000;
    CHECK_ST(spot_timer_cancel(rt, bogus, -1, &reason), SPOT_E_STALE_TIMER);
    CHECK_ST(spot_timer_cancel_async(rt, bogus, 0, &done, &reason), SPOT_E_STALE_TIMER);
    struct spot_timer zero = {0};
    CHECK_ST(spot_timer_cancel(rt, zero, 0, &reason), SPOT_E_STALE_TIMER);
    /* a handle of another runtime (slot 0 exists here too, the generation does not) */
    CHECK_ST(spot_timer_cancel(rt, foreign, -1, &reason), SPOT_E_STALE_TIMER);
    CHECK_EQ_U64(reason, 99);
    /* superseded: cancelling the old generation gives its terminal result */
    struct spot_timer t2 = reg(rt, 1, ep, 1, sp);
    CHECK_OK(spot_timer_cancel(rt, t, -1, &reason));
    CHECK_EQ_U64(reason, SPOT_END_SUPERSEDED);
    reason = 99;
    CHECK_ST(spot_timer_cancel_async(rt, t, 0, &done, &reason), SPOT_OK);
    CHECK_EQ_U64(done, 1);
    CHECK_EQ_U64(reason, SPOT_END_SUPERSEDED);
    /* a non-zero reserved field is rejected */
    bogus = t2;
    bogus.reserved = 1;
    CHECK_ST(spot_timer_cancel(rt, bogus, -1, &reason), SPOT_E_INVALID_ARGUMENT);
    /* ended: a repeated cancel gives the recorded result */
    CHECK_OK(spot_timer_cancel(rt, t2, -1, &reason));
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    reason = 99;
    CHECK_OK(spot_timer_cancel(rt, t2, -1, &reason));
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    CHECK_OK(spot_timer_cancel_async(rt, t2, 1, &done, &reason));
    CHECK_EQ_U64(done, 1);
    /* a record of an ended generation cannot be begun; a made-up token is rejected */
    struct spot_record fake = {0};
    fake.kind = SPOT_RECORD_TICK;
    fake.timer = t2;
    CHECK_ST(spot_record_begin(rt, &fake), SPOT_E_STALE_TIMER);
    fake.kind = 7;
    CHECK_ST(spot_record_begin(rt, &fake), SPOT_E_INVALID_ARGUMENT);
    struct spot_completion c = {0x123456789ULL, SPOT_OUTCOME_OK, 0};
    CHECK_ST(spot_complete(rt, &c, 1), SPOT_E_INVALID_COMPLETION);
    CHECK(stats(rt).invalid_completions >= 1);
    /* the runtime is still fine afterwards */
    struct spot_timer t3 = reg(rt, 1, ep, 3, sp);
    CHECK_OK(spot_timer_cancel(rt, t3, -1, NULL));
    CHECK_OK(spot_runtime_free(rt));
    CHECK_OK(spot_runtime_free(other));
}

static void bad_unknown_enum_values(void) {
    struct spot_runtime_config cfg = {0};
    cfg.struct_size = sizeof cfg;
    uint64_t out = 0;
    cfg.clock = 7;
    CHECK_ST(spot_runtime_new(&cfg, &out), SPOT_E_UNKNOWN_ENUM);
    cfg.clock = SPOT_CLOCK_MANUAL;
    cfg.delivery = 9;
    CHECK_ST(spot_runtime_new(&cfg, &out), SPOT_E_UNKNOWN_ENUM);
    cfg.delivery = 0xffffffffu;
    CHECK_ST(spot_runtime_new(&cfg, &out), SPOT_E_UNKNOWN_ENUM);

    uint64_t rt = manual_runtime(), ep = 0;
    CHECK_ST(spot_owner_acquire(rt, 1, 0, 2, &ep), SPOT_E_UNKNOWN_ENUM);
    ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_timer_spec sp = spec_every(10 * MS, 3, 1);
    struct spot_timer t;
    CHECK_ST(spot_timer_register(rt, 1, ep, 1, &sp, NULL, NULL, &t), SPOT_E_UNKNOWN_ENUM);
    sp.policy = SPOT_POLICY_SKIP_LATE_TICKS;
    CHECK_OK(spot_timer_register(rt, 1, ep, 1, &sp, NULL, NULL, &t));
    CHECK_OK(spot_advance(rt, 10 * MS));
    struct spot_record r[4];
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    /* a malformed completion rejects only itself: the others are applied */
    struct spot_completion c[2] = {{r[0].token, 4, 0}, {r[0].token, SPOT_OUTCOME_OK, 0}};
    size_t n = 77;
    CHECK_ST(spot_exchange(rt, c, 2, r + 1, 3, 0, &n), SPOT_E_UNKNOWN_ENUM);
    CHECK_EQ_U64(n, 77); /* nothing received */
    CHECK_EQ_U64(stats(rt).completed_ok, 1);
    CHECK_ST(spot_complete(rt, c, 1), SPOT_E_UNKNOWN_ENUM);
    c[1].reserved = 1;
    CHECK_ST(spot_complete(rt, c + 1, 1), SPOT_E_INVALID_ARGUMENT);
    c[1].reserved = 0;
    /* applied once: the same token again matches no record */
    CHECK_ST(spot_complete(rt, c + 1, 1), SPOT_E_INVALID_COMPLETION);
    CHECK_EQ_U64(stats(rt).completed_ok, 1);
    /* the same token twice in one call, even with conflicting outcomes: the second is
     * rejected, and a completed record can no longer be started */
    CHECK_OK(spot_advance(rt, 10 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    struct spot_completion twice[2] = {{r[0].token, SPOT_OUTCOME_OK, 0},
                                       {r[0].token, SPOT_OUTCOME_FAILED, 0}};
    CHECK_ST(spot_complete(rt, twice, 2), SPOT_E_INVALID_COMPLETION);
    CHECK_EQ_U64(stats(rt).completed_ok, 2);
    CHECK_EQ_U64(stats(rt).completed_failed, 0);
    CHECK_ST(spot_record_begin(rt, &r[0]), SPOT_E_STALE_TIMER);
    CHECK_OK(spot_runtime_free(rt));
}

static void bad_struct_sizes(void) {
    struct {
        struct spot_runtime_config cfg;
        uint64_t newer_field;
    } big = {{0}, 0};
    uint64_t rt = 0;
    /* below the first version's size (40), between versions, absurdly large */
    uint32_t sizes[] = {0, 4, 8, 39, 41, (uint32_t)sizeof(struct spot_runtime_config) - 1, 100000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        big.cfg.struct_size = sizes[i];
        CHECK_ST(spot_runtime_new(&big.cfg, &rt), SPOT_E_BAD_STRUCT_SIZE);
    }
    /* a newer, bigger struct works as long as the fields this version does not know are 0 */
    big.cfg.struct_size = sizeof big;
    big.cfg.clock = SPOT_CLOCK_MANUAL;
    big.newer_field = 1;
    CHECK_ST(spot_runtime_new(&big.cfg, &rt), SPOT_E_BAD_STRUCT_SIZE);
    big.newer_field = 0;
    CHECK_OK(spot_runtime_new(&big.cfg, &rt));
    /* a 1.x host's config (40 bytes, no resolution_ns) is accepted */
    big.cfg.struct_size = 40;
    uint64_t rt1 = 0;
    CHECK_OK(spot_runtime_new(&big.cfg, &rt1));
    CHECK_OK(spot_runtime_free(rt1));
    big.cfg.struct_size = sizeof big.cfg;
    big.cfg.reserved = 1;
    uint64_t rt2 = 0;
    CHECK_ST(spot_runtime_new(&big.cfg, &rt2), SPOT_E_INVALID_ARGUMENT);

    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_timer t;
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    sp.struct_size = 8;
    CHECK_ST(spot_timer_register(rt, 1, ep, 1, &sp, NULL, NULL, &t), SPOT_E_BAD_STRUCT_SIZE);
    sp.struct_size = sizeof sp + 1000000;
    CHECK_ST(spot_timer_register(rt, 1, ep, 1, &sp, NULL, NULL, &t), SPOT_E_BAD_STRUCT_SIZE);
    /* values out of domain */
    sp = spec_every(0, SPOT_POLICY_SKIP_LATE_TICKS, 1); /* one-shot without a delay */
    CHECK_ST(spot_timer_register(rt, 1, ep, 1, &sp, NULL, NULL, &t), SPOT_E_INVALID_ARGUMENT);
    sp = spec_every(10 * MS, SPOT_POLICY_CATCH_UP_BOUNDED, 0);
    CHECK_ST(spot_timer_register(rt, 1, ep, 1, &sp, NULL, NULL, &t), SPOT_E_INVALID_ARGUMENT);
    sp.max_catch_up_ticks = (uint64_t)INT32_MAX + 1;
    CHECK_ST(spot_timer_register(rt, 1, ep, 1, &sp, NULL, NULL, &t), SPOT_E_INVALID_ARGUMENT);
    sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    sp.reserved = 5;
    CHECK_ST(spot_timer_register(rt, 1, ep, 1, &sp, NULL, NULL, &t), SPOT_E_INVALID_ARGUMENT);
    CHECK_ST(spot_timer_cancel(rt, t, -2, NULL), SPOT_E_INVALID_ARGUMENT);
    /* unknown owner and epoch */
    sp.reserved = 0;
    CHECK_ST(spot_timer_register(rt, 99, ep, 1, &sp, NULL, NULL, &t), SPOT_E_UNKNOWN_OWNER);
    CHECK_ST(spot_timer_register(rt, 1, ep + 1, 1, &sp, NULL, NULL, &t), SPOT_E_REVOKED);

    /* output structs: below the first version's size (200 bytes) is rejected, whatever
     * else is filled with the whole fields that fit, never part of one */
    struct spot_stats s;
    memset(&s, 0xab, sizeof s);
    s.struct_size = 4;
    CHECK_ST(spot_stats(rt, &s), SPOT_E_BAD_STRUCT_SIZE);
    s.struct_size = 24;
    CHECK_ST(spot_stats(rt, &s), SPOT_E_BAD_STRUCT_SIZE);
    s.struct_size = 204; /* a torn field: only the 200 bytes of whole fields are written */
    CHECK_OK(spot_stats(rt, &s));
    CHECK_EQ_U64(s.struct_size, 200);
    CHECK_EQ_U64(s.scheduler_threads, 1);
    CHECK_EQ_U64(s.ticks_due, 0xababababababababULL); /* beyond 200 bytes: untouched */
    t = reg(rt, 1, ep, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    struct spot_timer_stats ts = {0};
    CHECK_ST(spot_timer_stats(rt, t, &ts), SPOT_E_BAD_STRUCT_SIZE);
    CHECK_OK(spot_runtime_free(rt));
}

static void bad_zero_capacity_and_modes(void) {
    uint64_t rt = manual_runtime();
    struct spot_record r[1];
    size_t n = 5;
    CHECK_ST(spot_exchange(rt, NULL, 0, r, 0, 0, &n), SPOT_E_INVALID_ARGUMENT);
    CHECK_EQ_U64(n, 5);
    CHECK_ST(spot_exchange(rt, NULL, 0, r, 1, -7, &n), SPOT_E_INVALID_ARGUMENT);
    CHECK_ST(spot_owner_gate_leave(rt, 1), SPOT_E_UNKNOWN_OWNER);
    owner(rt, 1, SPOT_GATE_SERIAL);
    CHECK_ST(spot_owner_gate_leave(rt, 1), SPOT_E_INVALID_ARGUMENT); /* not held */
    CHECK_OK(spot_owner_gate_enter(rt, 1, 0));
    CHECK_OK(spot_owner_gate_leave(rt, 1));
    CHECK_OK(spot_runtime_free(rt));

    /* the real clock cannot be advanced */
    struct spot_runtime_config cfg = {0};
    cfg.struct_size = sizeof cfg;
    CHECK_OK(spot_runtime_new(&cfg, &rt));
    CHECK_ST(spot_advance(rt, 1), SPOT_E_NOT_MANUAL_CLOCK);
    CHECK_ST(spot_exchange(rt, NULL, 0, r, 1, 1000000, &n), SPOT_OK); /* times out: 0 records */
    CHECK_EQ_U64(n, 0);
    CHECK_OK(spot_runtime_free(rt));
}

static void bad_wakeup_fd_tracks_pending(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    int32_t fd = -1;
    CHECK_OK(spot_wakeup_fd(rt, &fd));
    CHECK(fd >= 0);
    struct pollfd p = {fd, POLLIN, 0};
    CHECK_EQ_U64(poll(&p, 1, 0), 0);
    reg(rt, 1, ep, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK_OK(spot_advance(rt, 10 * MS));
    CHECK_EQ_U64(poll(&p, 1, 0), 1); /* readable while a record waits */
    struct spot_record r[2];
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 2), 1);
    p.revents = 0;
    CHECK_EQ_U64(poll(&p, 1, 0), 0);
    CHECK_EQ_U64(stats(rt).wakeup_primitives, 2);
    CHECK_OK(spot_runtime_free(rt));
}

/* --- re-entrancy from the batch callback ------------------------------------------ */

struct reentry {
    uint64_t rt;
    uint64_t epoch;
    struct spot_timer timer;
    int calls;
    int cancel_done_records;
    spot_status st_register, st_cancel, st_cancel_async, st_advance, st_exchange, st_gate,
        st_stats, st_begin, st_free;
    uint32_t async_done;
    int free_in_callback;
    atomic_int finalized;
};

static void reentry_cb(void *env, const struct spot_record *recs, size_t n,
                       struct spot_completion *done, size_t *n_done) {
    struct reentry *e = env;
    e->calls++;
    for (size_t i = 0; i < n; i++) {
        if (recs[i].kind == SPOT_RECORD_CANCEL_DONE) {
            e->cancel_done_records++;
            continue;
        }
        if (e->free_in_callback) {
            e->st_free = spot_runtime_free(e->rt);
            continue; /* nothing completed: the runtime is closing anyway */
        }
        if (e->calls == 1) {
            e->st_begin = spot_record_begin(e->rt, &recs[i]);
            struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
            struct spot_timer t2;
            e->st_register = spot_timer_register(e->rt, 1, e->epoch, 2, &sp, NULL, NULL, &t2);
            e->st_cancel = spot_timer_cancel(e->rt, e->timer, -1, NULL);
            e->st_cancel_async = spot_timer_cancel_async(e->rt, e->timer, 42, &e->async_done, NULL);
            e->st_advance = spot_advance(e->rt, 1);
            struct spot_record r[1];
            size_t k;
            e->st_exchange = spot_exchange(e->rt, NULL, 0, r, 1, 0, &k);
            e->st_gate = spot_owner_gate_enter(e->rt, 1, -1);
            struct spot_stats s = {0};
            s.struct_size = sizeof s;
            e->st_stats = spot_stats(e->rt, &s);
        }
        done[*n_done].token = recs[i].token;
        done[*n_done].outcome = SPOT_OUTCOME_OK;
        (*n_done)++;
    }
}

static void reentry_finalizer(void *env) {
    struct reentry *e = env;
    atomic_fetch_add(&e->finalized, 1);
}

static void bad_reentrancy_from_batch_callback(void) {
    static struct reentry e; /* static: the finalizer may run after this frame in theory */
    memset(&e, 0, sizeof e);
    e.rt = manual_callback_runtime(reentry_cb, &e, reentry_finalizer);
    CHECK_OK(spot_owner_acquire(e.rt, 1, 0, SPOT_GATE_SERIAL, &e.epoch));
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    CHECK_OK(spot_timer_register(e.rt, 1, e.epoch, 1, &sp, NULL, NULL, &e.timer));
    CHECK_OK(spot_advance(e.rt, 10 * MS));
    /* the tick's batch, then (same wakeup, after the synchronous completion ended the
     * cancelled generation) the batch with the CANCEL_DONE record */
    CHECK(e.calls == 1 || e.calls == 2);
    CHECK_ST(e.st_begin, SPOT_OK);
    CHECK_ST(e.st_register, SPOT_OK);              /* registering works */
    CHECK_ST(e.st_cancel, SPOT_E_WOULD_DEADLOCK);  /* blocking cancel of itself */
    CHECK_ST(e.st_cancel_async, SPOT_OK);          /* non-blocking cancel works */
    CHECK_EQ_U64(e.async_done, 0);
    CHECK_ST(e.st_advance, SPOT_E_WOULD_DEADLOCK); /* waiting for its own thread */
    CHECK_ST(e.st_exchange, SPOT_E_WRONG_DELIVERY_MODE);
    CHECK_ST(e.st_gate, SPOT_E_WOULD_DEADLOCK);    /* the gate is held by this batch */
    CHECK_ST(e.st_stats, SPOT_OK);
    CHECK_OK(spot_advance(e.rt, 0));
    CHECK_EQ_U64(e.cancel_done_records, 1); /* the async cancel's result arrived as a record */
    uint32_t reason = 99;
    CHECK_OK(spot_timer_cancel(e.rt, e.timer, 0, &reason));
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    CHECK_ST(spot_exchange(e.rt, NULL, 0, NULL, 0, 0, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_EQ_U64(atomic_load(&e.finalized), 0);
    CHECK_OK(spot_runtime_free(e.rt));
    CHECK_EQ_U64(atomic_load(&e.finalized), 1); /* exactly once, when freed */
    CHECK_ST(spot_runtime_free(e.rt), SPOT_E_INVALID_HANDLE);
    CHECK_EQ_U64(atomic_load(&e.finalized), 1);
}

/* A release hook runs on the cancelling thread inside a call on runtime A; it calls into
 * runtime B and into A, and frees B. The calls of the hook must not disturb A's call
 * (the library caches the runtime a thread used last), and B's handle is dead after. */
struct nested_hook {
    uint64_t a, b, epoch_b;
    spot_status st_register_b, st_cancel_b, st_stats_a, st_free_b;
    int ran;
};

static int32_t nested_hook_release(void *user_data, char *msg, size_t msg_len) {
    (void)msg;
    (void)msg_len;
    struct nested_hook *h = user_data;
    h->ran++;
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    struct spot_timer tb;
    h->st_register_b = spot_timer_register(h->b, 7, h->epoch_b, 1, &sp, NULL, NULL, &tb);
    h->st_cancel_b = spot_timer_cancel(h->b, tb, -1, NULL);
    struct spot_stats s = {0};
    s.struct_size = sizeof s;
    h->st_stats_a = spot_stats(h->a, &s);
    h->st_free_b = spot_runtime_free(h->b);
    return 0;
}

static void bad_release_hook_calls_other_runtime_and_frees_it(void) {
    struct nested_hook h = {0};
    h.a = manual_runtime();
    h.b = manual_runtime();
    uint64_t ep_a = owner(h.a, 1, SPOT_GATE_CONCURRENT);
    h.epoch_b = owner(h.b, 7, SPOT_GATE_CONCURRENT);
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    struct spot_timer t;
    CHECK_OK(spot_timer_register(h.a, 1, ep_a, 1, &sp, &h, nested_hook_release, &t));
    uint32_t reason = 99;
    CHECK_OK(spot_timer_cancel(h.a, t, -1, &reason)); /* the hook runs here, on this thread */
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    CHECK_EQ_U64(h.ran, 1);
    CHECK_ST(h.st_register_b, SPOT_OK);
    CHECK_ST(h.st_cancel_b, SPOT_OK);
    CHECK_ST(h.st_stats_a, SPOT_OK);
    CHECK_ST(h.st_free_b, SPOT_OK);
    /* B is gone for every later call; A goes on working */
    struct spot_stats s = {0};
    s.struct_size = sizeof s;
    CHECK_ST(spot_stats(h.b, &s), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_runtime_free(h.b), SPOT_E_INVALID_HANDLE);
    CHECK_OK(spot_stats(h.a, &s));
    CHECK_OK(spot_timer_register(h.a, 1, ep_a, 2, &sp, NULL, NULL, &t));
    CHECK_OK(spot_timer_cancel(h.a, t, -1, &reason));
    CHECK_EQ_U64(s.registered, 1);
    CHECK_OK(spot_runtime_free(h.a));
    CHECK_ST(spot_stats(h.a, &s), SPOT_E_INVALID_HANDLE);
}

/* A host thread holding a batch blocking-cancels a timer whose record is later in that
 * batch: the wait is for a record only this thread can complete, so it lasts until the
 * timeout (documented at spot_timer_cancel); completing the record ends the generation. */
static void bad_blocking_cancel_of_a_record_this_thread_holds(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    struct spot_timer a, b;
    CHECK_OK(spot_timer_register(rt, 1, ep, 1, &sp, NULL, NULL, &a));
    CHECK_OK(spot_timer_register(rt, 1, ep, 2, &sp, NULL, NULL, &b));
    CHECK_OK(spot_advance(rt, 10 * MS));
    struct spot_record recs[4];
    size_t n = 0;
    CHECK_OK(spot_exchange(rt, NULL, 0, recs, 4, 0, &n));
    CHECK_EQ_U64(n, 2);
    size_t first = 0, other = 1;
    struct spot_timer later = recs[other].timer.slot == a.slot ? a : b;
    CHECK_OK(spot_record_begin(rt, &recs[first]));
    uint32_t reason = 99;
    CHECK_ST(spot_timer_cancel(rt, later, 50 * MS, &reason), SPOT_E_TIMEOUT);
    CHECK_EQ_U64(reason, 99);
    /* the record of the cancelled generation no longer starts; complete it as not started */
    CHECK_ST(spot_record_begin(rt, &recs[other]), SPOT_E_STALE_TIMER);
    struct spot_completion done[2] = {{recs[first].token, SPOT_OUTCOME_OK, 0},
                                      {recs[other].token, SPOT_OUTCOME_NOT_STARTED, 0}};
    CHECK_OK(spot_complete(rt, done, 2));
    CHECK_OK(spot_timer_cancel(rt, later, 0, &reason));
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    CHECK_OK(spot_runtime_free(rt));
}

static void bad_free_from_inside_batch_callback(void) {
    static struct reentry e;
    memset(&e, 0, sizeof e);
    e.free_in_callback = 1;
    e.st_free = -1;
    e.rt = manual_callback_runtime(reentry_cb, &e, reentry_finalizer);
    CHECK_OK(spot_owner_acquire(e.rt, 1, 0, SPOT_GATE_CONCURRENT, &e.epoch));
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    CHECK_OK(spot_timer_register(e.rt, 1, e.epoch, 1, &sp, NULL, NULL, &e.timer));
    spot_status st = spot_advance(e.rt, 10 * MS); /* the callback frees the runtime */
    CHECK(st == SPOT_OK || st == SPOT_E_CLOSED || st == SPOT_E_INVALID_HANDLE);
    CHECK_ST(e.st_free, SPOT_OK);
    for (int i = 0; i < 2000 && atomic_load(&e.finalized) == 0; i++) sleep_ms(1);
    CHECK_EQ_U64(atomic_load(&e.finalized), 1);
    CHECK_ST(spot_advance(e.rt, 1), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_runtime_free(e.rt), SPOT_E_INVALID_HANDLE);
    sleep_ms(20); /* let the detached scheduler thread finish before the next test */
}

static atomic_int ok_release_calls;

static int32_t ok_release(void *ud, char *msg, size_t len) {
    (void)msg;
    (void)len;
    if (ud == (void *)0x55) atomic_fetch_add(&ok_release_calls, 1);
    return 0;
}

/* Exchange mode: a handler that cancels its own timer (blocking) gets WOULD_DEADLOCK
 * instead of waiting for itself; release hooks run exactly once, also on free. */
static void bad_self_cancel_in_exchange_handler(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    struct spot_timer t, t2;
    atomic_store(&ok_release_calls, 0);
    CHECK_OK(spot_timer_register(rt, 1, ep, 1, &sp, (void *)0x55, ok_release, &t));
    CHECK_OK(spot_timer_register(rt, 1, ep, 2, &sp, (void *)0x55, ok_release, &t2));
    CHECK_OK(spot_advance(rt, 10 * MS));
    struct spot_record r[4];
    size_t n = xchg(rt, NULL, 0, r, 4);
    CHECK_EQ_U64(n, 2);
    struct spot_record *mine = r[0].timer.generation == t.generation ? &r[0] : &r[1];
    struct spot_record *other = mine == &r[0] ? &r[1] : &r[0];
    CHECK_OK(spot_record_begin(rt, mine));
    CHECK_ST(spot_timer_cancel(rt, t, -1, NULL), SPOT_E_WOULD_DEADLOCK);
    struct spot_completion c[2] = {{mine->token, SPOT_OUTCOME_OK, 0}, {other->token, SPOT_OUTCOME_OK, 0}};
    CHECK_EQ_U64(xchg(rt, c, 2, r, 4), 0);
    uint32_t reason = 99;
    CHECK_OK(spot_timer_cancel(rt, t, -1, &reason));
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    CHECK_EQ_U64(atomic_load(&ok_release_calls), 1);
    CHECK_OK(spot_runtime_free(rt)); /* t2 ends with RUNTIME_CLOSED: its hook runs */
    CHECK_EQ_U64(atomic_load(&ok_release_calls), 2);
}

/* Exchange mode: a record published but not yet received is taken back when its
 * generation is cancelled, so the host's only exchanging thread can cancel (blocking)
 * without a deadlock, and the record never reaches the host. */
static void bad_cancel_with_record_waiting_in_queue(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_timer t = reg(rt, 1, ep, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK_OK(spot_advance(rt, 10 * MS)); /* a record waits in the ready queue */
    uint32_t reason = 99;
    CHECK_OK(spot_timer_cancel(rt, t, -1, &reason));
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    struct spot_record r[2];
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 2), 0); /* never handed out */
    struct spot_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    CHECK_OK(spot_stats(rt, &s));
    CHECK_EQ_U64(s.not_started, 1);
    CHECK_OK(spot_runtime_free(rt));
}

/* The stats once the scheduler thread is done with what the last call gave it (a cancel
 * may wake it: its wakeup is counted after the call returned), so that later snapshots
 * can be compared with it byte for byte. */
static struct spot_stats settled_stats(uint64_t rt) {
    struct spot_stats a = stats(rt);
    for (int i = 0; i < 500; i++) {
        sleep_ms(2);
        struct spot_stats b = stats(rt);
        if (memcmp(&a, &b, sizeof a) == 0) return b;
        a = b;
    }
    CHECK(!"the stats never settled");
    return a;
}

/* A host built against ABI 1.0 passes struct_size = 200 (the 1.0 sizeof(spot_stats)):
 * still accepted, filled up to exactly 200 bytes with the 1.0 fields, nothing beyond. */
static void bad_old_stats_struct_size_filled_up_to_it(void) {
    enum { V1_0_SIZE = 200 };
    CHECK_EQ_U64(offsetof(struct spot_stats, ticks_due), V1_0_SIZE);
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_record r[4];
    struct spot_timer t = reg(rt, 1, ep, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK_OK(spot_advance(rt, 30 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r, 4), 0);
    CHECK_OK(spot_advance(rt, 10 * MS)); /* tick 4 published, never received */
    CHECK_OK(spot_timer_cancel(rt, t, -1, NULL));
    struct spot_stats full = settled_stats(rt); /* the 2.0 size */
    CHECK_EQ_U64(full.struct_size, 240);
    CHECK_EQ_U64(full.ticks_due, 4);
    CHECK_EQ_U64(full.ticks_discarded, 1);

    /* in a 1.1-sized struct: the two 1.1 fields stay untouched */
    struct spot_stats s;
    memset(&s, 0xab, sizeof s);
    s.struct_size = V1_0_SIZE;
    CHECK_OK(spot_stats(rt, &s));
    CHECK_EQ_U64(s.struct_size, V1_0_SIZE);
    CHECK_EQ_U64(s.reserved, 0);
    CHECK_EQ_U64(s.scheduler_threads, 1);
    CHECK_EQ_U64(s.completed_ok, 1);
    CHECK_EQ_U64(s.ticks_skipped, 2);
    CHECK_EQ_U64(s.ended, 1);
    CHECK_EQ_U64(s.gate_waits, full.gate_waits); /* the last 1.0 field is filled */
    CHECK(memcmp((char *)&s + 8, (char *)&full + 8, V1_0_SIZE - 8) == 0);
    CHECK_EQ_U64(s.ticks_due, 0xababababababababULL);
    CHECK_EQ_U64(s.ticks_discarded, 0xababababababababULL);

    /* in exactly 200 bytes of heap (what a 1.0 host allocates): ASan/valgrind see any
     * write past them */
    unsigned char *old = malloc(V1_0_SIZE);
    CHECK(old != NULL);
    if (old) {
        memset(old, 0, V1_0_SIZE);
        uint32_t size = V1_0_SIZE;
        memcpy(old, &size, sizeof size);
        CHECK_OK(spot_stats(rt, (struct spot_stats *)(void *)old));
        memcpy(&size, old, sizeof size);
        CHECK_EQ_U64(size, V1_0_SIZE);
        CHECK(memcmp(old + 8, (char *)&full + 8, V1_0_SIZE - 8) == 0);
        free(old);
    }

    /* a size between the two versions is filled up to it */
    memset(&s, 0xab, sizeof s);
    s.struct_size = V1_0_SIZE + 8;
    CHECK_OK(spot_stats(rt, &s));
    CHECK_EQ_U64(s.struct_size, V1_0_SIZE + 8);
    CHECK_EQ_U64(s.ticks_due, 4);
    CHECK_EQ_U64(s.ticks_discarded, 0xababababababababULL);
    CHECK_OK(spot_runtime_free(rt));
}

/* spot_owner_release with bad input: unknown runtime, unknown owner, a stale or made-up
 * epoch (nothing happens to the current authority), a second release. */
static void bad_owner_release(void) {
    CHECK_ST(spot_owner_release(0, 1, 1), SPOT_E_INVALID_HANDLE);
    uint64_t rt = manual_runtime();
    CHECK_ST(spot_owner_release(rt, 77, 1), SPOT_E_UNKNOWN_OWNER);
    uint64_t ep1 = owner(rt, 7, SPOT_GATE_SERIAL);
    uint64_t ep2 = owner(rt, 7, SPOT_GATE_SERIAL);
    struct spot_timer t = reg(rt, 7, ep2, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK_ST(spot_owner_release(rt, 7, ep1), SPOT_E_REVOKED);
    CHECK_ST(spot_owner_release(rt, 7, ep2 + 1000), SPOT_E_REVOKED);
    CHECK_OK(spot_advance(rt, 10 * MS));
    struct spot_record r[2];
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 2), 1); /* the current authority is untouched */
    CHECK_EQ_U64(r[0].timer.generation, t.generation);
    struct spot_completion done = {r[0].token, SPOT_OUTCOME_OK, 0};
    CHECK_EQ_U64(xchg(rt, &done, 1, r, 2), 0);
    CHECK_OK(spot_owner_release(rt, 7, ep2));
    CHECK_ST(spot_owner_release(rt, 7, ep2), SPOT_E_UNKNOWN_OWNER);
    CHECK_ST(spot_owner_revoke(rt, 7, ep2), SPOT_E_UNKNOWN_OWNER);
    CHECK_OK(spot_runtime_free(rt));
}

void run_bad_input_tests(void) {
    RUN(bad_null_pointers);
    RUN(bad_freed_and_foreign_runtime_handles);
    RUN(bad_stale_timer_handles);
    RUN(bad_unknown_enum_values);
    RUN(bad_struct_sizes);
    RUN(bad_old_stats_struct_size_filled_up_to_it);
    RUN(bad_zero_capacity_and_modes);
    RUN(bad_wakeup_fd_tracks_pending);
    RUN(bad_reentrancy_from_batch_callback);
    RUN(bad_free_from_inside_batch_callback);
    RUN(bad_release_hook_calls_other_runtime_and_frees_it);
    RUN(bad_blocking_cancel_of_a_record_this_thread_holds);
    RUN(bad_self_cancel_in_exchange_handler);
    RUN(bad_cancel_with_record_waiting_in_queue);
    RUN(bad_owner_release);
}
