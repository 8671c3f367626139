/* Contract tests 01-13 of the verification list of docs/contract.md, through the public C
 * surface only, on the manual clock (spot_advance returns after the scheduler fired
 * everything due, and spot_exchange with completions waits until they are applied: timeout 0
 * is deterministic). */
#define _GNU_SOURCE
#include "contract.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* 1. Re-registering a key: ticks of the previous generation that were already pending
 *    never run. */
static void contract_01_reregister_drops_pending_ticks(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_record r[8];

    /* (a) pending in the ready queue, not yet handed over */
    struct spot_timer a = reg(rt, 1, ep, 10, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK_OK(spot_advance(rt, 10 * MS));
    struct spot_timer a2 = reg(rt, 1, ep, 10, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK(a2.generation != a.generation);
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 8), 0); /* the old pending record never shows */

    /* (b) already handed to the host, not yet started */
    struct spot_timer b = reg(rt, 1, ep, 20, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK_OK(spot_advance(rt, 10 * MS));
    size_t n = xchg(rt, NULL, 0, r, 8);
    CHECK_EQ_U64(n, 2); /* a2's first tick and b's first tick */
    struct spot_record held = r[0].timer.generation == b.generation ? r[0] : r[1];
    struct spot_record other = r[0].timer.generation == b.generation ? r[1] : r[0];
    CHECK_EQ_U64(held.timer.generation, b.generation);
    struct spot_timer b2 = reg(rt, 1, ep, 20, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK_ST(spot_record_begin(rt, &held), SPOT_E_STALE_TIMER);
    CHECK(__atomic_load_n(held.live_word, __ATOMIC_ACQUIRE) != held.live_value);
    struct spot_completion done[2] = {{held.token, SPOT_OUTCOME_NOT_STARTED, 0},
                                      {other.token, SPOT_OUTCOME_OK, 0}};
    CHECK_EQ_U64(xchg(rt, done, 2, r, 8), 0);
    CHECK_OK(spot_advance(rt, 10 * MS));
    n = xchg(rt, NULL, 0, r, 8);
    CHECK_EQ_U64(n, 2);
    for (size_t i = 0; i < n; i++) {
        CHECK(r[i].timer.generation == a2.generation || r[i].timer.generation == b2.generation);
        if (r[i].timer.generation == b2.generation) CHECK_EQ_U64(r[i].delivery_index, 1);
        CHECK(__atomic_load_n(r[i].live_word, __ATOMIC_ACQUIRE) == r[i].live_value);
        CHECK_OK(spot_record_begin(rt, &r[i]));
        /* the start is claimed: the word holds started_value, a second start fails */
        CHECK(__atomic_load_n(r[i].live_word, __ATOMIC_ACQUIRE) == r[i].started_value);
        CHECK_ST(spot_record_begin(rt, &r[i]), SPOT_E_STALE_TIMER);
    }
    struct spot_stats s = stats(rt);
    CHECK_EQ_U64(s.completed_ok, 1);
    CHECK_OK(spot_runtime_free(rt));
}

struct cancel_arg {
    uint64_t rt;
    struct spot_timer t;
    spot_status status;
    uint32_t reason;
    char msg[256];
    atomic_int started, done;
};

static void *cancel_thread(void *p) {
    struct cancel_arg *a = p;
    atomic_store(&a->started, 1);
    a->status = spot_timer_cancel(a->rt, a->t, -1, &a->reason);
    spot_last_error(a->msg, sizeof a->msg);
    atomic_store(&a->done, 1);
    return NULL;
}

/* 2. After cancel, no later tick of that generation starts, but a callback running at
 *    cancel time runs to its end. */
static void contract_02_cancel_lets_running_callback_finish(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_record r[4];
    struct spot_timer t = reg(rt, 1, ep, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK_OK(spot_advance(rt, 10 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_OK(spot_record_begin(rt, &r[0])); /* the callback is running */

    struct cancel_arg a = {.rt = rt, .t = t, .reason = 99};
    pthread_t th;
    pthread_create(&th, NULL, cancel_thread, &a);
    while (!atomic_load(&a.started)) sleep_ms(1);
    sleep_ms(50);
    CHECK(!atomic_load(&a.done)); /* waits for the running callback */
    CHECK_OK(spot_advance(rt, 100 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r + 1, 3), 0); /* no later tick starts */
    CHECK(!atomic_load(&a.done));
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r + 1, 3), 0);
    pthread_join(th, NULL);
    CHECK_ST(a.status, SPOT_OK);
    CHECK_EQ_U64(a.reason, SPOT_END_CANCELLED);
    struct spot_timer_stats ts = {0};
    ts.struct_size = sizeof ts;
    CHECK_OK(spot_timer_stats(rt, t, &ts));
    CHECK_EQ_U64(ts.delivered, 1);
    CHECK_OK(spot_runtime_free(rt));
}

static atomic_int release_calls;

static int32_t failing_release(void *ud, char *msg, size_t len) {
    (void)ud;
    atomic_fetch_add(&release_calls, 1);
    snprintf(msg, len, "disk on fire");
    return 7;
}

/* 3. Concurrent cancels of one generation all complete after the running callback and
 *    cleanup end; when cleanup fails, every caller sees the same failure. */
static void contract_03_concurrent_cancels_see_one_result(void) {
    enum { N = 4 };
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_record r[4];
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    struct spot_timer t;
    atomic_store(&release_calls, 0);
    CHECK_OK(spot_timer_register(rt, 1, ep, 1, &sp, (void *)0x1234, failing_release, &t));
    CHECK_OK(spot_advance(rt, 10 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK(r[0].user_data == (void *)0x1234);
    CHECK_OK(spot_record_begin(rt, &r[0]));

    struct cancel_arg a[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        memset(&a[i], 0, sizeof a[i]);
        a[i].rt = rt;
        a[i].t = t;
        pthread_create(&th[i], NULL, cancel_thread, &a[i]);
    }
    for (int i = 0; i < N; i++)
        while (!atomic_load(&a[i].started)) sleep_ms(1);
    sleep_ms(100);
    for (int i = 0; i < N; i++) CHECK(!atomic_load(&a[i].done));
    CHECK_EQ_U64(atomic_load(&release_calls), 0); /* cleanup waits for the callback */
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r + 1, 3), 0);
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        CHECK_ST(a[i].status, SPOT_E_CLEANUP_FAILED);
        CHECK(strstr(a[i].msg, "disk on fire") != NULL);
    }
    /* a later, sequential canceller sees the same recorded result */
    CHECK_ST(spot_timer_cancel(rt, t, 0, NULL), SPOT_E_CLEANUP_FAILED);
    uint32_t done = 9;
    CHECK_ST(spot_timer_cancel_async(rt, t, 5, &done, NULL), SPOT_E_CLEANUP_FAILED);
    CHECK_EQ_U64(atomic_load(&release_calls), 1);
    CHECK_EQ_U64(stats(rt).cleanup_failures, 1);
    CHECK_OK(spot_runtime_free(rt));
}

/* 4. A period shorter than the handler never runs two callbacks of one key at once. */
static void contract_04_no_overlap(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_record r[8], next[8];
    reg(rt, 1, ep, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK_OK(spot_advance(rt, 10 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 8), 1);
    for (int round = 0; round < 5; round++) {
        /* the handler takes 5 periods: nothing else of this key is handed over */
        for (int i = 0; i < 5; i++) {
            CHECK_OK(spot_advance(rt, 10 * MS));
            CHECK_EQ_U64(xchg(rt, NULL, 0, next, 8), 0);
        }
        size_t n = complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, next, 8);
        CHECK_EQ_U64(n, 1); /* the expirations coalesced into one record */
        CHECK_EQ_U64(next[0].delivery_index, (uint64_t)round + 2);
        r[0] = next[0];
    }
    CHECK_OK(spot_runtime_free(rt));
}

/* A deterministic pseudo-random schedule of advances and completions; calls `check` for
 * every delivered record with the previous one (NULL for the first). */
typedef void (*tick_check)(const struct spot_record *prev, const struct spot_record *cur);

static void run_schedule(uint32_t policy, uint64_t max_catch_up, tick_check check) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_record r[4], prev;
    int have_prev = 0;
    reg(rt, 1, ep, 1, spec_every(10 * MS, policy, max_catch_up));
    uint32_t lcg = 12345;
    size_t n = 0;
    for (int step = 0; step < 150; step++) {
        lcg = lcg * 1103515245u + 12345u;
        uint64_t adv = (lcg >> 16) % 45; /* 0..44 ms: on time and late */
        CHECK_OK(spot_advance(rt, adv * MS));
        if (n == 0) n = xchg(rt, NULL, 0, r, 4);
        if (n == 1) {
            check(have_prev ? &prev : NULL, &r[0]);
            prev = r[0];
            have_prev = 1;
            n = complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r, 4);
        }
        CHECK(n <= 1);
    }
    CHECK(have_prev && prev.delivery_index > 20);
    CHECK_OK(spot_runtime_free(rt));
}

static void check_delivery_index(const struct spot_record *prev, const struct spot_record *cur) {
    CHECK_EQ_U64(cur->delivery_index, prev ? prev->delivery_index + 1 : 1);
}

static void check_scheduled_index(const struct spot_record *prev, const struct spot_record *cur) {
    if (prev) CHECK(cur->scheduled_index > prev->scheduled_index);
    CHECK(cur->scheduled_index >= cur->delivery_index);
}

static void check_skipped(const struct spot_record *prev, const struct spot_record *cur) {
    uint64_t want = prev ? cur->scheduled_index - prev->scheduled_index - 1 : cur->scheduled_index - 1;
    CHECK_EQ_U64(cur->skipped_ticks, want);
}

/* 5. delivery_index increases by exactly 1 per callback. */
static void contract_05_delivery_index_plus_one(void) {
    run_schedule(SPOT_POLICY_SKIP_LATE_TICKS, 1, check_delivery_index);
    run_schedule(SPOT_POLICY_CATCH_UP_BOUNDED, 3, check_delivery_index);
    run_schedule(SPOT_POLICY_DELAY_NEXT_TICK, 1, check_delivery_index);
}

/* 6. scheduled_index never decreases and is always >= delivery_index. */
static void contract_06_scheduled_index_monotonic(void) {
    run_schedule(SPOT_POLICY_SKIP_LATE_TICKS, 1, check_scheduled_index);
    run_schedule(SPOT_POLICY_CATCH_UP_BOUNDED, 3, check_scheduled_index);
    run_schedule(SPOT_POLICY_DELAY_NEXT_TICK, 1, check_scheduled_index);
}

/* 7. skipped_ticks is scheduled_index - 1 first, then scheduled_index - previous - 1. */
static void contract_07_skipped_ticks_formula(void) {
    run_schedule(SPOT_POLICY_SKIP_LATE_TICKS, 1, check_skipped);
    run_schedule(SPOT_POLICY_CATCH_UP_BOUNDED, 3, check_skipped);
    run_schedule(SPOT_POLICY_DELAY_NEXT_TICK, 1, check_skipped);
}

/* 8. SkipLateTicks: a late timer's next callback skips the missed ticks and receives only
 *    the newest. */
static void contract_08_skip_late_ticks(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_record r[4];
    reg(rt, 1, ep, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK_OK(spot_advance(rt, 10 * MS)); /* t=10: tick 1 */
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_EQ_U64(r[0].scheduled_index, 1);
    CHECK_OK(spot_advance(rt, 45 * MS)); /* t=55: ticks 2..5 came due while running */
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r, 4), 1);
    CHECK_EQ_U64(r[0].delivery_index, 2);
    CHECK_EQ_U64(r[0].scheduled_index, 5);
    CHECK_EQ_U64(r[0].skipped_ticks, 3);
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r, 4), 0);
    CHECK_OK(spot_advance(rt, 5 * MS)); /* t=60: tick 6, on time */
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_EQ_U64(r[0].scheduled_index, 6);
    CHECK_EQ_U64(r[0].skipped_ticks, 0);
    CHECK_EQ_U64(stats(rt).ticks_skipped, 3);
    CHECK_OK(spot_runtime_free(rt));
}

/* 9. CatchUpBounded: a late timer receives at most max_catch_up_ticks ticks, in order;
 *    the rest are skipped. */
static void contract_09_catch_up_bounded(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_record r[4];
    reg(rt, 1, ep, 1, spec_every(10 * MS, SPOT_POLICY_CATCH_UP_BOUNDED, 3));
    CHECK_OK(spot_advance(rt, 10 * MS)); /* tick 1 */
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_OK(spot_advance(rt, 90 * MS)); /* t=100: ticks 2..10 due */
    uint64_t want[3] = {8, 9, 10};
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r, 4), 1);
        CHECK_EQ_U64(r[0].scheduled_index, want[i]);
        CHECK_EQ_U64(r[0].skipped_ticks, i == 0 ? 6 : 0);
    }
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r, 4), 0); /* backlog done */
    CHECK_OK(spot_advance(rt, 10 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_EQ_U64(r[0].scheduled_index, 11);
    CHECK_OK(spot_runtime_free(rt));
}

/* 10. DelayNextTick: the next tick is scheduled one period after the handler ends. */
static void contract_10_delay_next_tick(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_record r[4];
    reg(rt, 1, ep, 1, spec_every(10 * MS, SPOT_POLICY_DELAY_NEXT_TICK, 1));
    CHECK_OK(spot_advance(rt, 10 * MS)); /* t=10: tick 1 */
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_OK(spot_advance(rt, 25 * MS)); /* handler ends at t=35 */
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r, 4), 0);
    CHECK_OK(spot_advance(rt, 9 * MS)); /* t=44 */
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 0);
    CHECK_OK(spot_advance(rt, 1 * MS)); /* t=45 = 35 + period */
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_EQ_U64(r[0].delivery_index, 2);
    CHECK_EQ_U64(r[0].scheduled_index, 2);
    CHECK_EQ_U64(r[0].skipped_ticks, 0);
    CHECK_OK(spot_runtime_free(rt));
}

/* 11. After the lease expires no new tick starts a callback; a pause past the lease does
 *     not run the backlog at once. (The real-process SIGSTOP version is lease_sigstop.c.) */
static void contract_11_lease_expiry(void) {
    uint64_t rt = manual_runtime();
    struct spot_record r[4];
    uint64_t ep = 0;
    CHECK_OK(spot_owner_acquire(rt, 1, 100 * MS, SPOT_GATE_CONCURRENT, &ep));
    struct spot_timer t = reg(rt, 1, ep, 1, spec_every(10 * MS, SPOT_POLICY_CATCH_UP_BOUNDED, 100));
    CHECK_OK(spot_advance(rt, 10 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_OK(spot_advance(rt, 40 * MS)); /* t=50 */
    CHECK_OK(spot_owner_renew(rt, 1, ep, 100 * MS)); /* deadline 150 */
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r, 4), 1); /* still alive */
    /* a record in hand when the process "pauses" past the lease */
    CHECK_OK(spot_advance(rt, 500 * MS)); /* t=550: a pause far past the deadline */
    CHECK_ST(spot_record_begin(rt, &r[0]), SPOT_E_STALE_TIMER);
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_NOT_STARTED, r + 1, 3), 0); /* no backlog */
    CHECK_OK(spot_advance(rt, 100 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 0);
    uint32_t reason = 99;
    CHECK_OK(spot_timer_cancel(rt, t, 0, &reason));
    CHECK_EQ_U64(reason, SPOT_END_LEASE_EXPIRED);
    CHECK_ST(spot_owner_renew(rt, 1, ep, 100 * MS), SPOT_E_LEASE_EXPIRED);
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    struct spot_timer t2;
    CHECK_ST(spot_timer_register(rt, 1, ep, 2, &sp, NULL, NULL, &t2), SPOT_E_LEASE_EXPIRED);
    /* a new authority re-registers */
    uint64_t ep2 = 0;
    CHECK_OK(spot_owner_acquire(rt, 1, 100 * MS, SPOT_GATE_CONCURRENT, &ep2));
    CHECK(ep2 > ep);
    reg(rt, 1, ep2, 1, sp);
    CHECK_OK(spot_advance(rt, 10 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_EQ_U64(r[0].delivery_index, 1);
    CHECK_OK(spot_runtime_free(rt));
}

/* 11 without a call: the call-free start check (now < *lease_word, then a compare-and-swap
 * of *live_word) sees the lease. *lease_word is the owner's deadline on the runtime's clock,
 * moves with a renewal, and is 0 once the authority is revoked; a host reading past it
 * (a pause between receiving and starting) must not start. */
static int call_free_start(const struct spot_record *r, uint64_t now) {
    uint64_t expected = r->live_value;
    return now < __atomic_load_n(r->lease_word, __ATOMIC_ACQUIRE) &&
           __atomic_compare_exchange_n(r->live_word, &expected, r->started_value, 0,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static void call_free_check_covers_the_lease(void) {
    uint64_t rt = manual_runtime();
    struct spot_record r[4];
    uint64_t ep = 0, now = 0;
    CHECK_OK(spot_owner_acquire(rt, 1, 100 * MS, SPOT_GATE_CONCURRENT, &ep));
    CHECK_OK(spot_now(rt, &now));
    uint64_t t0 = now;
    reg(rt, 1, ep, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK_OK(spot_advance(rt, 10 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_EQ_U64(*r[0].lease_word, t0 + 100 * MS);
    /* a reading at or past the deadline refuses the start; the word stays live */
    CHECK(!call_free_start(&r[0], t0 + 100 * MS));
    CHECK(__atomic_load_n(r[0].live_word, __ATOMIC_ACQUIRE) == r[0].live_value);
    /* a renewal moves the deadline the record sees */
    CHECK_OK(spot_owner_renew(rt, 1, ep, 100 * MS)); /* at t0+10: deadline t0+110 */
    CHECK_EQ_U64(*r[0].lease_word, t0 + 110 * MS);
    CHECK(call_free_start(&r[0], t0 + 100 * MS));
    CHECK(!call_free_start(&r[0], t0 + 100 * MS)); /* claimed once */
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r, 4), 0);
    CHECK_OK(spot_advance(rt, 10 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    /* revoked while the record is in hand: no reading passes */
    CHECK_OK(spot_owner_revoke(rt, 1, ep));
    CHECK_EQ_U64(*r[0].lease_word, 0);
    CHECK(!call_free_start(&r[0], 0));
    CHECK_OK(spot_runtime_free(rt));
}

/* A blocking cancel of a timer that is not running ends it on the calling thread: the
 * scheduler is neither woken nor asked for a turn. */
static void blocking_cancel_of_an_idle_timer_never_wakes_the_scheduler(void) {
    struct spot_runtime_config cfg = {0};
    cfg.struct_size = sizeof cfg;
    cfg.clock = SPOT_CLOCK_REAL;
    uint64_t rt = 0;
    CHECK_OK(spot_runtime_new(&cfg, &rt));
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_timer t[200];
    for (int i = 0; i < 200; i++) {
        struct spot_timer_spec sp = {0};
        sp.struct_size = sizeof sp;
        sp.policy = SPOT_POLICY_SKIP_LATE_TICKS;
        sp.period_ns = 0;
        sp.first_due_ns = 3600ULL * 1000 * MS; /* an hour away: the scheduler sleeps */
        t[i] = reg(rt, 1, ep, (uint64_t)i, sp);
    }
    /* the first registration woke the scheduler (an earlier deadline); let it settle */
    struct spot_stats before = stats(rt), settled;
    for (int i = 0; i < 100; i++) {
        usleep(20 * 1000);
        settled = before;
        before = stats(rt);
        if (settled.wakeups == before.wakeups) break;
    }
    for (int i = 0; i < 200; i++) {
        uint32_t reason = 99;
        CHECK_OK(spot_timer_cancel(rt, t[i], 10 * 1000 * MS, &reason));
        CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    }
    struct spot_stats after = stats(rt);
    CHECK_EQ_U64(after.ended - before.ended, 200);
    CHECK_EQ_U64(after.wakeups, before.wakeups);
    CHECK_EQ_U64(after.scheduler_wakes_by_hosts, before.scheduler_wakes_by_hosts);
    CHECK_OK(spot_runtime_free(rt));
}

/* 12. Scheduler threads and OS timers do not grow with the number of registered timers. */
static void contract_12_resources_do_not_grow(void) {
    uint64_t rt = manual_runtime();
    struct spot_stats s0 = stats(rt);
    for (uint64_t o = 0; o < 500; o++) {
        uint64_t ep = owner(rt, o, SPOT_GATE_SERIAL);
        reg(rt, o, ep, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
        reg(rt, o, ep, 2, spec_every(15 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    }
    CHECK_OK(spot_advance(rt, 0));
    struct spot_stats s1 = stats(rt);
    CHECK_EQ_U64(s1.scheduler_threads, 1);
    CHECK_EQ_U64(s1.scheduler_threads, s0.scheduler_threads);
    CHECK_EQ_U64(s1.os_timers, 0);
    CHECK_EQ_U64(s1.wakeup_primitives, s0.wakeup_primitives);
    CHECK_EQ_U64(s1.live_timers, 1000);
    CHECK_EQ_U64(s1.queue_len, 1000);
    CHECK_OK(spot_runtime_free(rt));
}

/* 13. A long-running timer's statistics do not grow memory: spot_timer_stats is a fixed
 *     struct of counters, and queue entries do not pile up over many ticks. */
static void contract_13_stats_fixed_size(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_record r[4];
    struct spot_timer t = reg(rt, 1, ep, 1, spec_every(1 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    size_t n = 0;
    for (int i = 0; i < 2000; i++) {
        CHECK_OK(spot_advance(rt, 1 * MS));
        n = n ? complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r, 4) : xchg(rt, NULL, 0, r, 4);
        if (n == 1) n = complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r, 4);
    }
    struct spot_timer_stats ts = {0};
    ts.struct_size = sizeof ts;
    CHECK_OK(spot_timer_stats(rt, t, &ts));
    CHECK_EQ_U64(ts.struct_size, sizeof ts);
    CHECK_EQ_U64(ts.delivered, 2000);
    CHECK(stats(rt).queue_len <= 2);
    CHECK_OK(spot_runtime_free(rt));
}

struct crossing_env {
    atomic_int calls;
    atomic_size_t records;
};

static void crossing_cb(void *env, const struct spot_record *recs, size_t n,
                        struct spot_completion *done, size_t *n_done) {
    struct crossing_env *e = env;
    atomic_fetch_add(&e->calls, 1);
    atomic_fetch_add(&e->records, n);
    for (size_t i = 0; i < n; i++) {
        done[i].token = recs[i].token;
        done[i].outcome = SPOT_OUTCOME_OK;
    }
    *n_done = n;
}

/* T10: one crossing per wakeup, in both delivery modes (stats.host_crossings vs batches). */
static void contract_t10_one_crossing_per_wakeup(void) {
    struct crossing_env env = {0};
    uint64_t rt = manual_callback_runtime(crossing_cb, &env, NULL);
    for (uint64_t o = 0; o < 50; o++) {
        uint64_t ep = owner(rt, o, SPOT_GATE_CONCURRENT);
        reg(rt, o, ep, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
        reg(rt, o, ep, 2, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    }
    for (int i = 0; i < 5; i++) CHECK_OK(spot_advance(rt, 10 * MS));
    struct spot_stats s = stats(rt);
    CHECK_EQ_U64(atomic_load(&env.calls), 5);
    CHECK_EQ_U64(atomic_load(&env.records), 500);
    CHECK_EQ_U64(s.batches, 5);
    CHECK_EQ_U64(s.host_crossings, s.batches);
    CHECK_EQ_U64(s.records_received, 500);
    CHECK_EQ_U64(s.completed_ok, 500);
    printf("     callback mode: %llu records, %llu batches, %llu crossings\n",
           (unsigned long long)s.records_received, (unsigned long long)s.batches,
           (unsigned long long)s.host_crossings);
    CHECK_OK(spot_runtime_free(rt));

    /* exchange mode: one exchange call takes the whole batch and returns the completions */
    rt = manual_runtime();
    for (uint64_t o = 0; o < 50; o++) {
        uint64_t ep = owner(rt, o, SPOT_GATE_CONCURRENT);
        reg(rt, o, ep, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
        reg(rt, o, ep, 2, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    }
    static struct spot_record recs[256];
    static struct spot_completion done[256];
    size_t n = 0;
    for (int i = 0; i < 5; i++) {
        CHECK_OK(spot_advance(rt, 10 * MS));
        n = xchg(rt, done, n, recs, 256);
        CHECK_EQ_U64(n, 100);
        for (size_t k = 0; k < n; k++) {
            done[k].token = recs[k].token;
            done[k].outcome = SPOT_OUTCOME_OK;
            done[k].reserved = 0;
        }
    }
    s = stats(rt);
    CHECK_EQ_U64(s.batches, 5);
    CHECK_EQ_U64(s.host_crossings, 5);
    CHECK_EQ_U64(s.records_received, 500);
    printf("     exchange mode: %llu records, %llu batches, %llu crossings\n",
           (unsigned long long)s.records_received, (unsigned long long)s.batches,
           (unsigned long long)s.host_crossings);
    CHECK_OK(spot_runtime_free(rt));
}

/* The layout the bindings mirror (x86_64 / any LP64 target). */
static void abi_layout(void) {
    CHECK_EQ_U64(spot_abi_version(), SPOT_ABI_VERSION);
    CHECK_EQ_U64(SPOT_ABI_VERSION, 0x0002000b); /* 2.11: spot_runtime_close_handing_back (2.10: spot_timer_register_held) */
    CHECK_EQ_U64(sizeof(struct spot_pass), 40); /* 2.7 */
    CHECK_EQ_U64(offsetof(struct spot_pass, ran), 8);
    CHECK_EQ_U64(offsetof(struct spot_pass, notices), 32);
    CHECK_EQ_U64(SPOT_RUN_KEEP, SPOT_BATCH_KEPT);
    CHECK_EQ_U64(sizeof(struct spot_timer), 16);
    CHECK_EQ_U64(sizeof(struct spot_runtime_config), 48);
    CHECK_EQ_U64(sizeof(struct spot_timer_spec), 40);
    CHECK_EQ_U64(sizeof(struct spot_completion), 16);
    CHECK_EQ_U64(sizeof(struct spot_record), 128);
    CHECK_EQ_U64(sizeof(struct spot_stats), 240);
    CHECK_EQ_U64(sizeof(struct spot_timer_stats), 40);
    CHECK_EQ_U64(sizeof(struct spot_node_config), 120); /* 2.3: `listen` appended */
    CHECK_EQ_U64(offsetof(struct spot_node_config, listen), 112); /* the 2.1/2.2 size */
    CHECK_EQ_U64(sizeof(struct spot_batch), 40); /* 2.4 */
    CHECK_EQ_U64(offsetof(struct spot_batch, records), 8);
    CHECK_EQ_U64(offsetof(struct spot_batch, outcomes), 16);
    CHECK_EQ_U64(offsetof(struct spot_batch, position), 24);
    CHECK_EQ_U64(offsetof(struct spot_batch, count), 32);
    CHECK_EQ_U64(offsetof(struct spot_record, token), 16);
    CHECK_EQ_U64(offsetof(struct spot_record, timer), 24);
    CHECK_EQ_U64(offsetof(struct spot_record, user_data), 56);
    CHECK_EQ_U64(offsetof(struct spot_record, live_word), 88);
    CHECK_EQ_U64(offsetof(struct spot_record, live_value), 96);
    CHECK_EQ_U64(offsetof(struct spot_record, started_value), 104);
    CHECK_EQ_U64(offsetof(struct spot_record, lease_word), 112);
    CHECK_EQ_U64(offsetof(struct spot_record, tag), 120);
    CHECK_EQ_U64(offsetof(struct spot_runtime_config, callback), 16);
    CHECK_EQ_U64(offsetof(struct spot_runtime_config, resolution_ns), 40);
    CHECK_EQ_U64(offsetof(struct spot_stats, host_crossings), 8 + 9 * 8);
    CHECK_EQ_U64(offsetof(struct spot_stats, gate_waits), 192);
    /* appended after the 200 bytes of 1.0: 1.1 */
    CHECK_EQ_U64(offsetof(struct spot_stats, ticks_due), 200);
    CHECK_EQ_U64(offsetof(struct spot_stats, ticks_discarded), 208);
    /* 2.0 */
    CHECK_EQ_U64(offsetof(struct spot_stats, records_taken_back), 216);
    CHECK_EQ_U64(offsetof(struct spot_stats, records_abandoned), 224);
    CHECK_EQ_U64(offsetof(struct spot_stats, scheduler_wakes_by_hosts), 232);
}

static struct spot_timer_spec spec_once(uint64_t delay_ns) {
    struct spot_timer_spec s = spec_every(0, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    s.first_due_ns = delay_ns;
    return s;
}

struct cancel_now_arg {
    uint64_t rt;
    struct spot_timer t;
    int64_t timeout_ns;
    spot_status status;
    uint32_t reason;
};

static void *cancel_now_thread(void *p) {
    struct cancel_now_arg *a = p;
    a->status = spot_timer_cancel(a->rt, a->t, a->timeout_ns, &a->reason);
    return NULL;
}

/* Cancels `t` from another thread (this thread may have started one of t's records, and
 * spot_record_begin marks it as running t's callback), waiting up to `timeout_ns`. */
static void cancel_on_thread(uint64_t rt, struct spot_timer t, int64_t timeout_ns,
                             spot_status want) {
    struct cancel_now_arg a = {.rt = rt, .t = t, .timeout_ns = timeout_ns, .reason = 99};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, cancel_now_thread, &a) == 0);
    pthread_join(th, NULL);
    CHECK_ST(a.status, want);
    if (want == SPOT_OK) CHECK_EQ_U64(a.reason, SPOT_END_CANCELLED);
}

static struct spot_record *find(struct spot_record *r, size_t n, struct spot_timer t) {
    for (size_t i = 0; i < n; i++)
        if (r[i].kind == SPOT_RECORD_TICK && r[i].timer.generation == t.generation) return &r[i];
    CHECK(!"no record of the timer");
    return &r[0];
}

/* Contract T7/T10 tick accounting through the C ABI (1.1): once every generation has ended,
 * ticks_due == completed_ok + completed_failed + ticks_skipped + ticks_dropped_authority
 * + ticks_discarded. Timers of every policy and a one-shot; Ok and Failed completions;
 * cancels with a record published but not received, and with records in the host's hands
 * (one started, one stale); a superseded generation with a due tick; a revoked owner. */
static void stats_tick_accounting_identity(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep1 = owner(rt, 1, SPOT_GATE_CONCURRENT);
    uint64_t ep2 = owner(rt, 2, SPOT_GATE_CONCURRENT);
    struct spot_record r[16];
    struct spot_completion done[8];

    struct spot_timer a = reg(rt, 1, ep1, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    struct spot_timer b = reg(rt, 1, ep1, 2, spec_every(10 * MS, SPOT_POLICY_CATCH_UP_BOUNDED, 2));
    struct spot_timer c = reg(rt, 1, ep1, 3, spec_every(10 * MS, SPOT_POLICY_DELAY_NEXT_TICK, 1));
    struct spot_timer d = reg(rt, 1, ep1, 4, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    struct spot_timer e;
    struct spot_timer_spec once = spec_once(5 * MS);
    CHECK_OK(spot_timer_register(rt, 1, ep1, 5, &once, NULL, NULL, &e));
    reg(rt, 2, ep2, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1)); /* f */

    /* t=35: A (3, skips 2), B (2, skips 1), C (1), D (3), E (once), F (3) are published */
    CHECK_OK(spot_advance(rt, 35 * MS));
    /* D is cancelled while its record waits unreceived: 3 due ticks discarded */
    uint32_t reason = 99;
    CHECK_OK(spot_timer_cancel(rt, d, -1, &reason));
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    /* owner 2's authority ends with F's record unreceived: 3 ticks dropped */
    CHECK_OK(spot_owner_revoke(rt, 2, ep2));
    size_t n = xchg(rt, NULL, 0, r, 16);
    CHECK_EQ_U64(n, 4);
    if (n != 4) goto out;
    struct spot_record ra = *find(r, n, a), rb = *find(r, n, b), rc = *find(r, n, c),
                       re = *find(r, n, e);
    CHECK_EQ_U64(ra.skipped_ticks, 2);
    CHECK_EQ_U64(rb.skipped_ticks, 1);
    done[0] = (struct spot_completion){ra.token, SPOT_OUTCOME_OK, 0};
    done[1] = (struct spot_completion){rb.token, SPOT_OUTCOME_FAILED, 0};
    done[2] = (struct spot_completion){rc.token, SPOT_OUTCOME_OK, 0};
    done[3] = (struct spot_completion){re.token, SPOT_OUTCOME_OK, 0};
    n = xchg(rt, done, 4, r, 16); /* B's backlog: tick 3 right away */
    CHECK_EQ_U64(n, 1);
    CHECK_EQ_U64(r[0].timer.generation, b.generation);
    CHECK_EQ_U64(r[0].scheduled_index, 3);
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r, 16), 0);

    /* G gets superseded while its first tick waits unreceived: 1 tick discarded */
    struct spot_timer g = reg(rt, 1, ep1, 6, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK_OK(spot_advance(rt, 10 * MS)); /* t=45: A 4, B 4, C 2 (45 = 35 + period), G 1 */
    struct spot_timer g2 = reg(rt, 1, ep1, 6, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK(g2.generation != g.generation);
    n = xchg(rt, NULL, 0, r, 16);
    CHECK_EQ_U64(n, 3);
    if (n != 3) goto out;
    ra = *find(r, n, a);
    rb = *find(r, n, b);
    rc = *find(r, n, c);
    /* B's and C's handlers start; then A, B and C are cancelled with records in hand */
    CHECK_OK(spot_record_begin(rt, &rb));
    CHECK_OK(spot_record_begin(rt, &rc));
    cancel_on_thread(rt, a, 0, SPOT_E_TIMEOUT);
    cancel_on_thread(rt, b, 0, SPOT_E_TIMEOUT);
    cancel_on_thread(rt, c, 0, SPOT_E_TIMEOUT);
    CHECK_ST(spot_record_begin(rt, &ra), SPOT_E_STALE_TIMER); /* A's tick 4: discarded */
    CHECK_EQ_U64(stats(rt).live_timers, 4); /* A, B, C end when their records complete */
    done[0] = (struct spot_completion){ra.token, SPOT_OUTCOME_NOT_STARTED, 0};
    done[1] = (struct spot_completion){rb.token, SPOT_OUTCOME_OK, 0};
    done[2] = (struct spot_completion){rc.token, SPOT_OUTCOME_FAILED, 0};
    CHECK_EQ_U64(xchg(rt, done, 3, r, 16), 0);
    /* applied completions ended A, B and C: their recorded result, without waiting */
    cancel_on_thread(rt, a, 0, SPOT_OK);
    cancel_on_thread(rt, b, 0, SPOT_OK);
    cancel_on_thread(rt, c, 0, SPOT_OK);
    CHECK_OK(spot_timer_cancel(rt, g2, -1, &reason)); /* nothing due yet */
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    CHECK_OK(spot_advance(rt, 100 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 16), 0);

    struct spot_stats s = stats(rt);
    CHECK_EQ_U64(s.struct_size, sizeof s);
    CHECK_EQ_U64(s.live_timers, 0);
    CHECK_EQ_U64(s.registered, 8);
    CHECK_EQ_U64(s.ended, s.registered);
    CHECK_EQ_U64(s.ticks_due, s.completed_ok + s.completed_failed + s.ticks_skipped +
                                  s.ticks_dropped_authority + s.ticks_discarded);
    CHECK(s.ticks_due > 0);
    CHECK(s.ticks_discarded > 0);
    CHECK(s.ticks_skipped > 0);
    CHECK(s.ticks_dropped_authority > 0);
    /* the exact split: A 4 + B 4 + C 2 + D 3 + E 1 + F 3 + G 1 due */
    CHECK_EQ_U64(s.ticks_due, 18);
    CHECK_EQ_U64(s.completed_ok, 5);            /* A3 C1 E1 B3 B4 */
    CHECK_EQ_U64(s.completed_failed, 2);        /* B2 C2 */
    CHECK_EQ_U64(s.ticks_skipped, 3);           /* A 2, B 1 */
    CHECK_EQ_U64(s.ticks_dropped_authority, 3); /* F */
    CHECK_EQ_U64(s.ticks_discarded, 5);         /* D 3, G 1, A 1 */
    /* the per-generation statistics agree */
    uint64_t delivered = 0, skipped = 0, failed = 0;
    struct spot_timer ended[4] = {a, b, c, e};
    for (int i = 0; i < 4; i++) {
        struct spot_timer_stats ts = {0};
        ts.struct_size = sizeof ts;
        CHECK_OK(spot_timer_stats(rt, ended[i], &ts));
        delivered += ts.delivered;
        skipped += ts.skipped_ticks;
        failed += ts.failed;
    }
    CHECK_EQ_U64(delivered, s.completed_ok + s.completed_failed);
    CHECK_EQ_U64(failed, s.completed_failed);
    CHECK_EQ_U64(skipped, s.ticks_skipped);
out:
    CHECK_OK(spot_runtime_free(rt));
}

/* spot_owner_release: a released owner's timers end (SPOT_END_REVOKED) and the runtime
 * forgets the owner once they have; its id can be acquired again with a larger epoch, and
 * the old (id, epoch) never matches the new owner. */
static void owner_release_forgets_owners(void) {
    uint64_t rt = manual_runtime();
    enum { N = 200 };
    uint64_t epochs[N];
    struct spot_timer timers[N];
    for (uint64_t i = 0; i < N; i++) {
        epochs[i] = owner(rt, 100 + i, SPOT_GATE_SERIAL);
        timers[i] = reg(rt, 100 + i, epochs[i], 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    }
    CHECK_OK(spot_advance(rt, 0));
    CHECK_EQ_U64(stats(rt).owners, N);
    /* one owner's callback is in the host's hands when it is released */
    struct spot_record r[4];
    CHECK_OK(spot_advance(rt, 10 * MS));
    size_t n = xchg(rt, NULL, 0, r, 4);
    CHECK(n > 0);
    struct spot_record held = r[0];
    CHECK_OK(spot_record_begin(rt, &held));
    uint64_t held_owner = held.owner_id;
    struct spot_completion nst[4];
    for (size_t i = 1; i < n; i++) nst[i - 1] = (struct spot_completion){r[i].token, SPOT_OUTCOME_OK, 0};
    for (uint64_t i = 0; i < N; i++) CHECK_OK(spot_owner_release(rt, 100 + i, epochs[i]));
    CHECK_ST(spot_owner_release(rt, 100, epochs[0]), SPOT_E_UNKNOWN_OWNER);
    CHECK_EQ_U64(xchg(rt, nst, n - 1, r, 4), 0);
    CHECK_OK(spot_advance(rt, 0));
    CHECK_EQ_U64(stats(rt).owners, 1); /* the one with a running callback */
    struct spot_completion done = {held.token, SPOT_OUTCOME_OK, 0};
    CHECK_EQ_U64(xchg(rt, &done, 1, r, 4), 0);
    CHECK_OK(spot_advance(rt, 0));
    struct spot_stats s = stats(rt);
    CHECK_EQ_U64(s.owners, 0);
    CHECK_EQ_U64(s.live_timers, 0);
    uint32_t reason = 99;
    CHECK_OK(spot_timer_cancel(rt, timers[N - 1], 0, &reason));
    CHECK_EQ_U64(reason, SPOT_END_REVOKED);
    /* the id again: a new owner, epochs above the released ones */
    uint64_t again = owner(rt, held_owner, SPOT_GATE_SERIAL);
    CHECK(again > epochs[held_owner - 100]);
    struct spot_timer t;
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    CHECK_ST(spot_timer_register(rt, held_owner, epochs[held_owner - 100], 1, &sp, NULL, NULL, &t),
             SPOT_E_REVOKED);
    t = reg(rt, held_owner, again, 1, sp);
    CHECK_OK(spot_advance(rt, 10 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_EQ_U64(r[0].timer.generation, t.generation);
    CHECK_EQ_U64(stats(rt).owners, 1);
    CHECK_OK(spot_runtime_free(rt));
}

static atomic_int ok_release_calls;

static int32_t ok_release(void *ud, char *msg, size_t len) {
    (void)ud; (void)msg; (void)len;
    atomic_fetch_add(&ok_release_calls, 1);
    return 0;
}

/* spot_timer_rearm: the same outcome as spot_timer_register (a new generation, the old
 * one's one result SPOT_END_SUPERSEDED), in place when the old one is idle; a stale or
 * foreign `previous` is only a hint; a malformed one is refused. */
static void rearm_supersedes_in_place_and_keeps_the_result(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_SERIAL);
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    struct spot_timer ids[300];
    CHECK_OK(spot_timer_register(rt, 1, ep, 7, &sp, NULL, NULL, &ids[0]));
    for (int i = 1; i < 300; i++)
        CHECK_OK(spot_timer_rearm(rt, 1, ep, ids[i - 1], 7, &sp, (void *)(uintptr_t)i, NULL, &ids[i]));
    CHECK_EQ_U64(ids[1].slot, ids[0].slot); /* taken in place */
    for (int i = 0; i < 299; i++) {
        uint32_t reason = 99;
        CHECK_OK(spot_timer_cancel(rt, ids[i], 0, &reason));
        CHECK_EQ_U64(reason, SPOT_END_SUPERSEDED);
        uint32_t done = 9;
        CHECK_OK(spot_timer_cancel_async(rt, ids[i], 1, &done, &reason));
        CHECK_EQ_U64(done, 1);
        CHECK_EQ_U64(reason, SPOT_END_SUPERSEDED);
    }
    struct spot_stats st = stats(rt);
    CHECK_EQ_U64(st.registered, 300);
    CHECK_EQ_U64(st.ended, 299);
    /* the current one ticks with its own user data, delivery index 1 */
    struct spot_record r[4];
    CHECK_OK(spot_advance(rt, 10 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_EQ_U64(r[0].timer.generation, ids[299].generation);
    CHECK(r[0].user_data == (void *)(uintptr_t)299);
    CHECK_EQ_U64(r[0].delivery_index, 1);
    CHECK_OK(spot_record_begin(rt, &r[0]));
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r + 1, 3), 0);

    /* a previous generation with a release function: registered elsewhere, released once */
    struct spot_timer with_release, after;
    atomic_store(&ok_release_calls, 0);
    CHECK_OK(spot_timer_register(rt, 1, ep, 8, &sp, (void *)0x8, ok_release, &with_release));
    CHECK_OK(spot_timer_rearm(rt, 1, ep, with_release, 8, &sp, NULL, NULL, &after));
    CHECK(after.slot != with_release.slot);
    CHECK_EQ_U64(atomic_load(&ok_release_calls), 1);
    uint32_t reason = 99;
    CHECK_OK(spot_timer_cancel(rt, with_release, 0, &reason));
    CHECK_EQ_U64(reason, SPOT_END_SUPERSEDED);

    /* a stale previous (cancelled) and one out of range: a plain registration */
    struct spot_timer fresh, far = {.generation = ~0ULL, .slot = ~0U, .reserved = 0};
    CHECK_OK(spot_timer_cancel(rt, after, 0, &reason));
    CHECK_OK(spot_timer_rearm(rt, 1, ep, after, 8, &sp, NULL, NULL, &fresh));
    CHECK_OK(spot_timer_rearm(rt, 1, ep, far, 9, &sp, NULL, NULL, &fresh));
    /* bad input: the errors of spot_timer_register, and a malformed previous */
    struct spot_timer bad = fresh;
    bad.reserved = 1;
    CHECK_ST(spot_timer_rearm(rt, 1, ep, bad, 9, &sp, NULL, NULL, &fresh), SPOT_E_INVALID_ARGUMENT);
    CHECK_ST(spot_timer_rearm(rt, 1, ep, fresh, 9, NULL, NULL, NULL, &fresh), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_timer_rearm(rt, 1, ep, fresh, 9, &sp, NULL, NULL, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_timer_rearm(rt, 1, ep + 1000, fresh, 9, &sp, NULL, NULL, &fresh), SPOT_E_REVOKED);
    struct spot_timer_spec zero = sp;
    zero.period_ns = 0;
    zero.first_due_ns = SPOT_FIRST_DUE_DEFAULT;
    CHECK_ST(spot_timer_rearm(rt, 1, ep, fresh, 9, &zero, NULL, NULL, &after), SPOT_E_INVALID_ARGUMENT);
    CHECK_OK(spot_timer_cancel(rt, fresh, 0, &reason));
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED); /* a refused rearm superseded nothing */
    CHECK_OK(spot_runtime_free(rt));
}

/* spot_timer_reset: an idle generation moves in place with the user data given, and its
 * own release hook does not run (its user data is the host's again); one with its record in
 * the host's hands does not move and nothing changes; a stale or malformed handle is
 * refused. The release hook runs once, for the last generation. */
/* Registers and cancels `n` timers of owner (`owner_id`, `ep`) on this thread. */
struct churn_args {
    uint64_t rt, owner_id, ep;
    int n;
};

static void *churn(void *p) {
    struct churn_args *a = p;
    struct spot_timer_spec far = spec_every(3600ull * 1000 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    for (int i = 0; i < a->n; i++) {
        struct spot_timer t;
        uint32_t reason = 99;
        CHECK_OK(spot_timer_register(a->rt, a->owner_id, a->ep, (uint64_t)i, &far, NULL, NULL, &t));
        CHECK_OK(spot_timer_cancel(a->rt, t, 0, &reason));
        CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    }
    return NULL;
}

/* 100,000 registrations and cancels, half on this thread and half on another. */
static void churn_two_threads(uint64_t rt, uint64_t first_owner) {
    struct churn_args a = {rt, first_owner, owner(rt, first_owner, SPOT_GATE_SERIAL), 50000};
    struct churn_args b = {rt, first_owner + 1, owner(rt, first_owner + 1, SPOT_GATE_SERIAL), 50000};
    pthread_t other;
    CHECK(pthread_create(&other, NULL, churn, &b) == 0);
    churn(&a);
    CHECK(pthread_join(other, NULL) == 0);
    CHECK_OK(spot_owner_release(rt, a.owner_id, a.ep));
    CHECK_OK(spot_owner_release(rt, b.owner_id, b.ep));
}

static void held_timers_keep_their_result(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_SERIAL);
    struct spot_timer_spec once = spec_once(MS);
    struct spot_timer_spec far = spec_every(3600ull * 1000 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    struct spot_timer completed, cancelled, unheld;
    uint32_t reason = 99;
    CHECK_OK(spot_timer_register_held(rt, 1, ep, 1, &once, NULL, NULL, &completed));
    CHECK_OK(spot_timer_register_held(rt, 1, ep, 2, &far, NULL, NULL, &cancelled));
    CHECK_OK(spot_timer_register(rt, 1, ep, 3, &far, NULL, NULL, &unheld));
    struct spot_record r[4];
    CHECK_OK(spot_advance(rt, 2 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_OK(spot_record_begin(rt, &r[0]));
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r + 1, 3), 0);
    CHECK_OK(spot_timer_cancel(rt, cancelled, 0, &reason));
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    CHECK_OK(spot_timer_cancel(rt, unheld, 0, &reason));

    churn_two_threads(rt, 10);
    CHECK_OK(spot_timer_cancel(rt, completed, 0, &reason));
    CHECK_EQ_U64(reason, SPOT_END_COMPLETED);
    CHECK_OK(spot_timer_cancel(rt, cancelled, 0, &reason));
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    struct spot_timer_stats st = {.struct_size = sizeof st};
    CHECK_OK(spot_timer_stats(rt, completed, &st));
    CHECK_EQ_U64(st.delivered, 1);
    CHECK_ST(spot_timer_cancel(rt, unheld, 0, &reason), SPOT_E_STALE_TIMER); /* the churn reused slots */

    /* bad input, before the holds go */
    CHECK_ST(spot_timer_release_hold(rt, unheld), SPOT_E_STALE_TIMER);
    struct spot_timer bad = completed;
    bad.reserved = 1;
    CHECK_ST(spot_timer_release_hold(rt, bad), SPOT_E_INVALID_ARGUMENT);
    CHECK_ST(spot_timer_release_hold(rt + 1, completed), SPOT_E_INVALID_HANDLE);
    struct spot_timer never = {.generation = 1, .slot = 12345, .reserved = 0};
    CHECK_ST(spot_timer_release_hold(rt, never), SPOT_E_STALE_TIMER);
    /* given back: once, then there is nothing to give back */
    CHECK_OK(spot_timer_release_hold(rt, completed));
    CHECK_OK(spot_timer_release_hold(rt, cancelled));
    CHECK_ST(spot_timer_release_hold(rt, cancelled), SPOT_E_STALE_TIMER);
    CHECK_OK(spot_owner_release(rt, 1, ep));
    churn_two_threads(rt, 20);
    CHECK_ST(spot_timer_cancel(rt, completed, 0, &reason), SPOT_E_STALE_TIMER);
    CHECK_ST(spot_timer_cancel(rt, cancelled, 0, &reason), SPOT_E_STALE_TIMER);
    CHECK_OK(spot_runtime_free(rt));
}

static void cancel_keeping_calls_no_release_function_for_an_idle_timer(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_SERIAL);
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    struct spot_timer idle, busy;
    uint32_t done = 9, reason = 99, kept = 9;
    atomic_store(&ok_release_calls, 0);
    /* idle: ends here, the release function does not run, the end is recorded */
    CHECK_OK(spot_timer_register(rt, 1, ep, 1, &sp, (void *)0x1, ok_release, &idle));
    CHECK_OK(spot_timer_cancel_keeping(rt, idle, &done, &reason, &kept));
    CHECK_EQ_U64(done, 1);
    CHECK_EQ_U64(kept, 1);
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    CHECK_EQ_U64(atomic_load(&ok_release_calls), 0);
    CHECK_OK(spot_timer_cancel(rt, idle, 0, &reason));
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    /* its record with the host: ends later, the ordinary way (its release function runs once) */
    CHECK_OK(spot_timer_register(rt, 1, ep, 2, &sp, (void *)0x2, ok_release, &busy));
    struct spot_record r[4];
    CHECK_OK(spot_advance(rt, 10 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_OK(spot_record_begin(rt, &r[0]));
    reason = 99;
    CHECK_OK(spot_timer_cancel_keeping(rt, busy, &done, &reason, &kept));
    CHECK_EQ_U64(done, 0);
    CHECK_EQ_U64(kept, 0);
    CHECK_EQ_U64(reason, 99);
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r + 1, 3), 0);
    CHECK_EQ_U64(atomic_load(&ok_release_calls), 1);
    CHECK_OK(spot_timer_cancel(rt, busy, 0, &reason));
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    /* an ended one answers its result again; bad input */
    CHECK_OK(spot_timer_cancel_keeping(rt, idle, &done, NULL, &kept));
    CHECK_EQ_U64(done, 1);
    CHECK_EQ_U64(kept, 0);
    CHECK_ST(spot_timer_cancel_keeping(rt, idle, NULL, &reason, &kept), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_timer_cancel_keeping(rt, idle, &done, &reason, NULL), SPOT_E_NULL_ARGUMENT);
    struct spot_timer bad = idle;
    bad.reserved = 1;
    CHECK_ST(spot_timer_cancel_keeping(rt, bad, &done, &reason, &kept), SPOT_E_INVALID_ARGUMENT);
    CHECK_ST(spot_timer_cancel_keeping(rt + 1, idle, &done, &reason, &kept), SPOT_E_INVALID_HANDLE);
    struct spot_timer never = {.generation = 1, .slot = 12345, .reserved = 0};
    CHECK_ST(spot_timer_cancel_keeping(rt, never, &done, &reason, &kept), SPOT_E_STALE_TIMER);
    CHECK_EQ_U64(atomic_load(&ok_release_calls), 1);
    CHECK_OK(spot_runtime_free(rt));
}

/* spot_runtime_close_handing_back: every generation the close ends with a release
 * function hands its user data back, once, in batches of at most 1,024; no release
 * function runs; the cancels afterwards say SPOT_END_RUNTIME_CLOSED. */
enum { HB_N = 2500 };
static unsigned char hb_seen[HB_N + 3];
static size_t hb_calls, hb_largest;
static uint64_t hb_rt, hb_other;
static atomic_int other_release_calls;

static int32_t other_release(void *ud, char *msg, size_t len) {
    (void)msg; (void)len;
    CHECK(ud == (void *)999999);
    atomic_fetch_add(&other_release_calls, 1);
    return 0;
}

static void count_handback(void *env, void *const *user_data, size_t n) {
    CHECK(env == (void *)&hb_calls);
    hb_calls++;
    if (n > hb_largest) hb_largest = n;
    for (size_t i = 0; i < n; i++) {
        uintptr_t u = (uintptr_t)user_data[i];
        CHECK(u >= 1 && u <= HB_N + 1);
        if (u >= 1 && u <= HB_N + 1) hb_seen[u]++;
    }
    /* the library may be called from here: closing again does nothing, and closing another
     * runtime runs that runtime's release functions (nothing of it is handed back here) */
    CHECK_OK(spot_runtime_close(hb_rt));
    CHECK_OK(spot_runtime_close(hb_other));
}

static void close_handing_back_returns_user_data_in_batches(void) {
    uint64_t rt = manual_runtime();
    hb_rt = rt;
    hb_other = manual_runtime();
    atomic_store(&other_release_calls, 0);
    uint64_t other_ep = owner(hb_other, 1, SPOT_GATE_SERIAL);
    struct spot_timer other_t;
    struct spot_timer_spec other_sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    CHECK_OK(spot_timer_register(hb_other, 1, other_ep, 1, &other_sp, (void *)999999, other_release, &other_t));
    memset(hb_seen, 0, sizeof hb_seen);
    hb_calls = hb_largest = 0;
    atomic_store(&ok_release_calls, 0);
    uint64_t ep = owner(rt, 1, SPOT_GATE_SERIAL);
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    struct spot_timer t[HB_N + 1], bare;
    for (uint64_t i = 0; i < HB_N; i++)
        CHECK_OK(spot_timer_register(rt, 1, ep, i, &sp, (void *)(uintptr_t)(i + 1), ok_release, &t[i]));
    CHECK_OK(spot_timer_register(rt, 1, ep, HB_N + 1, &sp, (void *)(uintptr_t)(HB_N + 2), NULL, &bare));
    /* one whose callback the host is running when the runtime closes */
    struct spot_timer_spec once = spec_once(MS);
    CHECK_OK(spot_timer_register(rt, 1, ep, HB_N, &once, (void *)(uintptr_t)(HB_N + 1), ok_release, &t[HB_N]));
    struct spot_record r[2];
    CHECK_OK(spot_advance(rt, MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 2), 1);
    CHECK_OK(spot_record_begin(rt, &r[0]));

    CHECK_ST(spot_runtime_close_handing_back(rt, NULL, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_runtime_close_handing_back(rt + 1, count_handback, &hb_calls), SPOT_E_INVALID_HANDLE);
    CHECK_EQ_U64(hb_calls, 0);
    CHECK_OK(spot_runtime_close_handing_back(rt, count_handback, &hb_calls));
    for (size_t u = 1; u <= HB_N + 1; u++) CHECK_EQ_U64(hb_seen[u], 1);
    CHECK_EQ_U64(hb_seen[HB_N + 2], 0); /* no release function: not listed */
    CHECK_EQ_U64(hb_calls, (HB_N + 1 + 1023) / 1024);
    CHECK_EQ_U64(hb_largest, 1024);
    CHECK_EQ_U64(atomic_load(&ok_release_calls), 0);
    uint32_t reason = 99;
    CHECK_OK(spot_timer_cancel(rt, t[7], 0, &reason));
    CHECK_EQ_U64(reason, SPOT_END_RUNTIME_CLOSED);
    /* again: nothing more is handed back */
    CHECK_OK(spot_runtime_close_handing_back(rt, count_handback, &hb_calls));
    CHECK_EQ_U64(hb_calls, (HB_N + 1 + 1023) / 1024);
    struct spot_completion done = {r[0].token, SPOT_OUTCOME_OK, 0};
    (void)spot_complete(rt, &done, 1);
    CHECK_OK(spot_runtime_free(rt));
    CHECK_EQ_U64(atomic_load(&ok_release_calls), 0);
    CHECK_EQ_U64(atomic_load(&other_release_calls), 1);
    CHECK_OK(spot_runtime_free(hb_other));
}

static void reset_moves_idle_timers_in_place(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_SERIAL);
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    struct spot_timer ids[100];
    uint32_t moved = 9, reason = 99;
    atomic_store(&ok_release_calls, 0);
    CHECK_OK(spot_timer_register(rt, 1, ep, 7, &sp, (void *)(uintptr_t)1000, ok_release, &ids[0]));
    for (int i = 1; i < 100; i++) {
        /* a new user data per generation, except every tenth, which keeps its own */
        void *ud = (void *)(uintptr_t)(i % 10 == 0 ? 1000 + i - 1 : 1000 + i);
        CHECK_OK(spot_timer_reset(rt, ids[i - 1], 25 * MS, ud, ok_release, &ids[i], &moved));
        CHECK_EQ_U64(moved, 1);
        CHECK_EQ_U64(ids[i].slot, ids[0].slot);
    }
    CHECK_EQ_U64(atomic_load(&ok_release_calls), 0); /* nothing released on the way */
    for (int i = 0; i < 99; i++) {
        CHECK_OK(spot_timer_cancel(rt, ids[i], 0, &reason));
        CHECK_EQ_U64(reason, SPOT_END_SUPERSEDED);
    }
    /* the first tick is due 25 ms from the reset, then every 10 ms: the period is kept */
    struct spot_record r[4];
    CHECK_OK(spot_advance(rt, 20 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 0);
    CHECK_OK(spot_advance(rt, 5 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_EQ_U64(r[0].timer.generation, ids[99].generation);
    CHECK(r[0].user_data == (void *)(uintptr_t)1099);
    CHECK_EQ_U64(r[0].delivery_index, 1);
    /* its record is with the host: it cannot move, and nothing changed */
    struct spot_timer untouched = {.generation = 1, .slot = 2, .reserved = 0}, out = untouched;
    CHECK_OK(spot_timer_reset(rt, ids[99], MS, (void *)0x5, ok_release, &out, &moved));
    CHECK_EQ_U64(moved, 0);
    CHECK_EQ_U64(out.generation, untouched.generation);
    CHECK_OK(spot_record_begin(rt, &r[0]));
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r + 1, 3), 0);
    CHECK_OK(spot_advance(rt, 10 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1); /* still the same generation, every 10 ms */
    CHECK_EQ_U64(r[0].timer.generation, ids[99].generation);
    CHECK(r[0].user_data == (void *)(uintptr_t)1099);
    CHECK_OK(spot_record_begin(rt, &r[0]));
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r + 1, 3), 0);
    /* the last generation's end runs the hook, once */
    CHECK_OK(spot_timer_cancel(rt, ids[99], 0, &reason));
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    CHECK_EQ_U64(atomic_load(&ok_release_calls), 1);
    /* bad input */
    CHECK_ST(spot_timer_reset(rt, ids[99], MS, NULL, NULL, &out, &moved), SPOT_E_STALE_TIMER);
    struct spot_timer bad = ids[99];
    bad.reserved = 1;
    CHECK_ST(spot_timer_reset(rt, bad, MS, NULL, NULL, &out, &moved), SPOT_E_INVALID_ARGUMENT);
    CHECK_ST(spot_timer_reset(rt, ids[99], MS, NULL, NULL, NULL, &moved), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_timer_reset(rt, ids[99], MS, NULL, NULL, &out, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_timer_reset(rt + 1, ids[99], MS, NULL, NULL, &out, &moved), SPOT_E_INVALID_HANDLE);
    /* a revoked authority: its timers ended, so the handle is stale */
    struct spot_timer live;
    CHECK_OK(spot_timer_register(rt, 1, ep, 8, &sp, NULL, NULL, &live));
    CHECK_OK(spot_owner_revoke(rt, 1, ep));
    CHECK_ST(spot_timer_reset(rt, live, MS, NULL, NULL, &out, &moved), SPOT_E_STALE_TIMER);
    CHECK_EQ_U64(atomic_load(&ok_release_calls), 1); /* nothing given to a refused reset ran */
    CHECK_OK(spot_runtime_free(rt));
}

/* spot_release_reason: inside a release hook, why its generation ended; outside, UINT32_MAX. */
static uint32_t seen_reasons[8];
static atomic_int seen_count;

static int32_t reason_release(void *ud, char *msg, size_t len) {
    (void)msg; (void)len;
    int i = atomic_fetch_add(&seen_count, 1);
    if (i < 8) seen_reasons[(uintptr_t)ud] = spot_release_reason();
    return 0;
}

static void release_hooks_learn_the_end_reason(void) {
    CHECK_EQ_U64(spot_release_reason(), UINT32_MAX);
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_SERIAL);
    uint64_t ep2 = owner(rt, 2, SPOT_GATE_SERIAL);
    struct spot_timer_spec every = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    struct spot_timer_spec once = spec_every(0, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    once.first_due_ns = 5 * MS;
    struct spot_timer t[6];
    uint32_t reason;
    for (int i = 0; i < 8; i++) seen_reasons[i] = 99;
    atomic_store(&seen_count, 0);
    CHECK_OK(spot_timer_register(rt, 1, ep, 1, &every, (void *)1, reason_release, &t[1]));
    CHECK_OK(spot_timer_cancel(rt, t[1], 0, &reason)); /* 1: cancelled */
    CHECK_OK(spot_timer_register(rt, 1, ep, 2, &every, (void *)2, reason_release, &t[2]));
    CHECK_OK(spot_timer_register(rt, 1, ep, 2, &every, (void *)3, reason_release, &t[3])); /* 2: superseded */
    CHECK_OK(spot_timer_register(rt, 1, ep, 4, &once, (void *)4, reason_release, &t[4]));
    struct spot_record r[4];
    CHECK_OK(spot_advance(rt, 5 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_OK(spot_record_begin(rt, &r[0]));
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r + 1, 3), 0); /* 4: completed */
    CHECK_OK(spot_timer_register(rt, 2, ep2, 5, &every, (void *)5, reason_release, &t[5]));
    CHECK_OK(spot_owner_revoke(rt, 2, ep2)); /* 5: revoked */
    CHECK_OK(spot_runtime_close(rt)); /* 3: the runtime closed */
    CHECK_EQ_U64(seen_reasons[1], SPOT_END_CANCELLED);
    CHECK_EQ_U64(seen_reasons[2], SPOT_END_SUPERSEDED);
    CHECK_EQ_U64(seen_reasons[3], SPOT_END_RUNTIME_CLOSED);
    CHECK_EQ_U64(seen_reasons[4], SPOT_END_COMPLETED);
    CHECK_EQ_U64(seen_reasons[5], SPOT_END_REVOKED);
    CHECK_EQ_U64(atomic_load(&seen_count), 5);
    CHECK_EQ_U64(spot_release_reason(), UINT32_MAX);
    CHECK_OK(spot_runtime_free(rt));
}

/* T6 through the C ABI: an owner released while its records are in flight gives its index
 * to the next owner; a host's look at the released authority (ended at its release) must
 * not end the timers of the owner that took the index. Real clock, a host thread running
 * the documented loop (exchange, spot_record_begin, completions); a varying wait moves the
 * release across the records' delivery. The far timers' release functions say whether and
 * how they ended. */
enum { REUSE_KEPT = 64 };
static _Atomic uint32_t far_end[REUSE_KEPT + 1];
static atomic_int reuse_stop;
static atomic_long reuse_ran;

static int32_t far_release(void *ud, char *msg, size_t len) {
    (void)msg; (void)len;
    atomic_store(&far_end[(uintptr_t)ud], spot_release_reason() + 1);
    return 0;
}

static void *reuse_host(void *p) {
    uint64_t rt = *(uint64_t *)p;
    struct spot_record recs[64];
    struct spot_completion done[64];
    size_t n_done = 0, n = 0;
    while (!atomic_load(&reuse_stop)) {
        spot_status s = spot_exchange(rt, done, n_done, recs, 64, 5 * 1000000LL, &n);
        CHECK(s == SPOT_OK);
        n_done = 0;
        for (size_t i = 0; i < n; i++) {
            if (recs[i].kind != SPOT_RECORD_TICK) continue;
            uint32_t outcome = SPOT_OUTCOME_NOT_STARTED;
            if (spot_record_begin(rt, &recs[i]) == SPOT_OK) {
                atomic_fetch_add(&reuse_ran, 1);
                outcome = SPOT_OUTCOME_OK;
            }
            done[n_done++] = (struct spot_completion){recs[i].token, outcome, 0};
        }
    }
    if (n_done) CHECK_OK(spot_complete(rt, done, n_done));
    return NULL;
}

static void a_record_of_a_released_owner_never_expires_the_next_owner_of_its_index(void) {
    const char *env = getenv("SPOT_C_RACE_ROUNDS");
    uint64_t rounds = env ? 100 * (uint64_t)atoi(env) : 20000;
    uint64_t rt = real_runtime();
    atomic_store(&reuse_stop, 0);
    atomic_store(&reuse_ran, 0);
    pthread_t host;
    CHECK(pthread_create(&host, NULL, reuse_host, &rt) == 0);
    struct { uint64_t round, id, epoch; } kept[REUSE_KEPT + 1];
    struct spot_timer_spec now = spec_once(0), far = spec_once(3600ull * 1000 * MS);
    time_t deadline = time(NULL) + 120;
    for (uint64_t r = 0; r < rounds && h_failed_checks == 0; r++) {
        CHECK(time(NULL) < deadline); /* no progress */
        uint64_t gone_epoch = owner(rt, 2 * r + 1, SPOT_GATE_SERIAL);
        for (uint64_t k = 0; k <= r % 8; k++) (void)reg(rt, 2 * r + 1, gone_epoch, k, now);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do clock_gettime(CLOCK_MONOTONIC, &t1);
        while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < (long)(r % 41) * 1000);
        CHECK_OK(spot_owner_release(rt, 2 * r + 1, gone_epoch));
        /* the next owner, no lease: whatever index it gets, nothing may end it */
        uint64_t slot = r % (REUSE_KEPT + 1);
        if (r > REUSE_KEPT) {
            CHECK_EQ_U64(atomic_load(&far_end[slot]), 0); /* still live */
            CHECK_OK(spot_owner_release(rt, kept[slot].id, kept[slot].epoch));
            CHECK_EQ_U64(atomic_load(&far_end[slot]), SPOT_END_REVOKED + 1);
        }
        atomic_store(&far_end[slot], 0);
        kept[slot].round = r;
        kept[slot].id = 2 * r + 2;
        kept[slot].epoch = owner(rt, 2 * r + 2, SPOT_GATE_SERIAL);
        struct spot_timer t;
        CHECK_OK(spot_timer_register(rt, 2 * r + 2, kept[slot].epoch, 0, &far,
                                     (void *)(uintptr_t)slot, far_release, &t));
    }
    for (int i = 0; i <= REUSE_KEPT; i++) CHECK_EQ_U64(atomic_load(&far_end[i]), 0);
    atomic_store(&reuse_stop, 1);
    CHECK(pthread_join(host, NULL) == 0);
    fprintf(stderr, "    records of released owners that ran: %ld\n", atomic_load(&reuse_ran));
    CHECK_OK(spot_runtime_free(rt));
}

void run_contract_tests(void) {
    RUN(owner_release_forgets_owners);
    RUN(abi_layout);
    RUN(contract_01_reregister_drops_pending_ticks);
    RUN(rearm_supersedes_in_place_and_keeps_the_result);
    RUN(held_timers_keep_their_result);
    RUN(a_record_of_a_released_owner_never_expires_the_next_owner_of_its_index);
    RUN(cancel_keeping_calls_no_release_function_for_an_idle_timer);
    RUN(reset_moves_idle_timers_in_place);
    RUN(close_handing_back_returns_user_data_in_batches);
    RUN(release_hooks_learn_the_end_reason);
    RUN(contract_02_cancel_lets_running_callback_finish);
    RUN(contract_03_concurrent_cancels_see_one_result);
    RUN(contract_04_no_overlap);
    RUN(contract_05_delivery_index_plus_one);
    RUN(contract_06_scheduled_index_monotonic);
    RUN(contract_07_skipped_ticks_formula);
    RUN(contract_08_skip_late_ticks);
    RUN(contract_09_catch_up_bounded);
    RUN(contract_10_delay_next_tick);
    RUN(contract_11_lease_expiry);
    RUN(call_free_check_covers_the_lease);
    RUN(blocking_cancel_of_an_idle_timer_never_wakes_the_scheduler);
    RUN(contract_12_resources_do_not_grow);
    RUN(contract_13_stats_fixed_size);
    RUN(contract_t10_one_crossing_per_wakeup);
    RUN(stats_tick_accounting_identity);
}
