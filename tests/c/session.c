/* Delivery sessions (spot_session_*): one thread's delivery loop. The start check is done
 * before a record is handed out, completions go back with the next exchange, and a
 * blocking cancel made on the session's thread never waits for a record only that thread
 * would complete. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "contract.h"
#include "util.h"

/* n timers of owner 1 (concurrent gate), every 10 ms, all due at 10 ms. */
static uint64_t two_due(struct spot_timer *t, int n) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    for (int i = 0; i < n; i++) CHECK_OK(spot_timer_register(rt, 1, ep, (uint64_t)i, &sp, NULL, NULL, &t[i]));
    CHECK_OK(spot_advance(rt, 10 * MS));
    return rt;
}

static void session_hands_out_each_record_once(void) {
    struct spot_timer t[3];
    uint64_t rt = two_due(t, 3);
    uint64_t s = 0;
    CHECK_OK(spot_session_new(rt, 16, &s));
    struct spot_record r;
    uint32_t got = 9;
    int n = 0;
    while (1) {
        CHECK_OK(spot_session_next(s, 0, &r, &got));
        if (!got) break;
        CHECK_EQ_U64(r.kind, SPOT_RECORD_TICK);
        /* already started: a second start check refuses it */
        CHECK_ST(spot_record_begin(rt, &r), SPOT_E_STALE_TIMER);
        CHECK_OK(spot_session_done(s, SPOT_OUTCOME_OK));
        n++;
    }
    CHECK_EQ_U64(n, 3);
    struct spot_stats st = {0};
    st.struct_size = sizeof st;
    CHECK_OK(spot_stats(rt, &st));
    CHECK_EQ_U64(st.completed_ok, 3);
    CHECK_OK(spot_session_free(s));
    CHECK_OK(spot_runtime_free(rt));
}

static void session_blocking_cancel_of_a_later_record_does_not_wait(void) {
    struct spot_timer t[2];
    uint64_t rt = two_due(t, 2);
    uint64_t s = 0;
    CHECK_OK(spot_session_new(rt, 16, &s));
    struct spot_record r;
    uint32_t got = 0;
    CHECK_OK(spot_session_next(s, 0, &r, &got));
    CHECK_EQ_U64(got, 1);
    struct spot_timer later = r.timer.slot == t[0].slot ? t[1] : t[0];
    /* inside the first handler; without the session's help this would time out */
    uint32_t reason = 99;
    CHECK_OK(spot_timer_cancel(rt, later, 5000 * MS, &reason));
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    /* the running handler's own timer: still a deadlock, reported */
    CHECK_ST(spot_timer_cancel(rt, r.timer, -1, &reason), SPOT_E_WOULD_DEADLOCK);
    CHECK_OK(spot_session_done(s, SPOT_OUTCOME_OK));
    CHECK_OK(spot_session_next(s, 0, &r, &got));
    CHECK_EQ_U64(got, 0); /* the cancelled timer's record was never handed out */
    struct spot_stats st = {0};
    st.struct_size = sizeof st;
    CHECK_OK(spot_stats(rt, &st));
    CHECK_EQ_U64(st.completed_ok, 1);
    CHECK_EQ_U64(st.not_started, 1);
    CHECK_OK(spot_session_free(s));
    CHECK_OK(spot_runtime_free(rt));
}

static void session_misuse_gets_specific_errors(void) {
    struct spot_timer t[1];
    uint64_t rt = two_due(t, 1);
    uint64_t s = 0;
    struct spot_record r;
    uint32_t got = 0;
    CHECK_ST(spot_session_new(rt, 0, &s), SPOT_E_INVALID_ARGUMENT);
    CHECK_ST(spot_session_new(rt, 4, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_session_new(12345, 4, &s), SPOT_E_INVALID_HANDLE);
    CHECK_OK(spot_session_new(rt, 4, &s));
    CHECK_ST(spot_session_done(s, SPOT_OUTCOME_OK), SPOT_E_INVALID_ARGUMENT); /* no tick */
    CHECK_ST(spot_session_next(s, 0, NULL, &got), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_session_next(s, -2, &r, &got), SPOT_E_INVALID_ARGUMENT);
    CHECK_OK(spot_session_next(s, 0, &r, &got));
    CHECK_EQ_U64(got, 1);
    CHECK_ST(spot_session_next(s, 0, &r, &got), SPOT_E_INVALID_ARGUMENT); /* done first */
    CHECK_ST(spot_session_done(s, 77), SPOT_E_UNKNOWN_ENUM);
    CHECK_OK(spot_session_done(s, SPOT_OUTCOME_OK));
    CHECK_ST(spot_session_next(0, 0, &r, &got), SPOT_E_INVALID_HANDLE);
    CHECK_OK(spot_session_free(s));
    CHECK_ST(spot_session_free(s), SPOT_E_INVALID_HANDLE);        /* double free */
    CHECK_ST(spot_session_next(s, 0, &r, &got), SPOT_E_INVALID_HANDLE); /* freed */
    CHECK_OK(spot_runtime_free(rt));
}

/* ---- The batch form (ABI 2.4): one call per batch, outcomes written in the session's
 * cells, the call-free start check by the host. */

static int start_call_free(uint64_t rt, const struct spot_record *r) {
    uint64_t now = 0;
    CHECK_OK(spot_now(rt, &now));
    uint64_t expected = r->live_value;
    return now < __atomic_load_n(r->lease_word, __ATOMIC_ACQUIRE) &&
           __atomic_compare_exchange_n(r->live_word, &expected, r->started_value, 0,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static struct spot_batch new_batch(void) {
    struct spot_batch b;
    memset(&b, 0xAB, sizeof b);
    b.struct_size = sizeof b;
    return b;
}

static void batch_hands_out_a_whole_exchange_and_completes_it_from_the_cells(void) {
    struct spot_timer t[3];
    uint64_t rt = two_due(t, 3);
    uint64_t s = 0;
    CHECK_OK(spot_session_new(rt, 16, &s));
    struct spot_batch b = new_batch();
    CHECK_OK(spot_session_batch(s, 0, &b));
    CHECK_EQ_U64(b.count, 3);
    CHECK_EQ_U64(*b.position, SIZE_MAX);
    for (size_t i = 0; i < b.count; i++) {
        CHECK_EQ_U64(b.records[i].kind, SPOT_RECORD_TICK);
        CHECK_EQ_U64(b.outcomes[i], SPOT_BATCH_PENDING);
        *b.position = i;
        if (i == 2) continue; /* left pending: completes as not started */
        CHECK(start_call_free(rt, &b.records[i]));
        b.outcomes[i] = i == 0 ? SPOT_OUTCOME_OK : SPOT_OUTCOME_FAILED;
    }
    struct spot_stats st = {0};
    st.struct_size = sizeof st;
    CHECK_OK(spot_stats(rt, &st));
    CHECK_EQ_U64(st.completed_ok + st.completed_failed, 0); /* sent with the next batch */
    struct spot_batch again = new_batch();
    CHECK_OK(spot_session_batch(s, 0, &again));
    CHECK_EQ_U64(again.count, 1); /* the tick that did not start is still due */
    CHECK_OK(spot_stats(rt, &st));
    CHECK_EQ_U64(st.completed_ok, 1);
    CHECK_EQ_U64(st.completed_failed, 1);
    CHECK_EQ_U64(st.not_started, 1);
    again.outcomes[0] = SPOT_OUTCOME_OK;
    CHECK_OK(spot_session_free(s)); /* settles the batch */
    CHECK_OK(spot_stats(rt, &st));
    CHECK_EQ_U64(st.completed_ok, 2);
    CHECK_EQ_U64(st.records_published,
                 st.completed_ok + st.completed_failed + st.completed_deferred + st.not_started +
                     st.records_abandoned);
    CHECK_OK(spot_runtime_free(rt));
}

static void batch_blocking_cancel_from_a_handler_completes_later_records(void) {
    struct spot_timer t[3];
    uint64_t rt = two_due(t, 3);
    uint64_t s = 0;
    CHECK_OK(spot_session_new(rt, 16, &s));
    struct spot_batch b = new_batch();
    CHECK_OK(spot_session_batch(s, 0, &b));
    CHECK_EQ_U64(b.count, 3);
    /* record 0 ran; record 1's handler runs and cancels the timers of records 2 and 0 */
    *b.position = 0;
    CHECK(start_call_free(rt, &b.records[0]));
    b.outcomes[0] = SPOT_OUTCOME_OK;
    *b.position = 1;
    CHECK(start_call_free(rt, &b.records[1]));
    uint32_t reason = 99;
    CHECK_OK(spot_timer_cancel(rt, b.records[2].timer, 5000 * MS, &reason));
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    CHECK_EQ_U64(b.outcomes[2], SPOT_OUTCOME_NOT_STARTED); /* the host skips it */
    CHECK_OK(spot_timer_cancel(rt, b.records[0].timer, 5000 * MS, &reason));
    CHECK_EQ_U64(reason, SPOT_END_CANCELLED);
    b.outcomes[1] = SPOT_OUTCOME_OK;
    struct spot_batch next = new_batch();
    CHECK_OK(spot_session_batch(s, 0, &next));
    CHECK_EQ_U64(next.count, 0);
    CHECK(next.records == NULL && next.outcomes == NULL);
    struct spot_stats st = {0};
    st.struct_size = sizeof st;
    CHECK_OK(spot_stats(rt, &st));
    CHECK_EQ_U64(st.completed_ok, 2);
    CHECK_EQ_U64(st.not_started, 1);
    CHECK_EQ_U64(st.invalid_completions, 0); /* nothing completed twice */
    CHECK_OK(spot_session_free(s));
    CHECK_OK(spot_runtime_free(rt));
}

static void batch_record_kept_by_the_host_is_completed_by_the_host(void) {
    struct spot_timer t[2];
    uint64_t rt = two_due(t, 2);
    uint64_t s = 0;
    CHECK_OK(spot_session_new(rt, 16, &s));
    struct spot_batch b = new_batch();
    CHECK_OK(spot_session_batch(s, 0, &b));
    CHECK_EQ_U64(b.count, 2);
    *b.position = 0;
    CHECK(start_call_free(rt, &b.records[0]));
    b.outcomes[0] = SPOT_BATCH_KEPT; /* an asynchronous handler goes on with it */
    struct spot_completion later = {b.records[0].token, SPOT_OUTCOME_OK, 0};
    *b.position = 1;
    CHECK(start_call_free(rt, &b.records[1]));
    b.outcomes[1] = SPOT_OUTCOME_OK;
    struct spot_batch next = new_batch();
    CHECK_OK(spot_session_batch(s, 0, &next));
    struct spot_stats st = {0};
    st.struct_size = sizeof st;
    CHECK_OK(spot_stats(rt, &st));
    CHECK_EQ_U64(st.completed_ok, 1); /* the kept one is still in flight */
    CHECK_OK(spot_complete(rt, &later, 1));
    CHECK_OK(spot_stats(rt, &st));
    CHECK_EQ_U64(st.completed_ok, 2);
    CHECK_EQ_U64(st.invalid_completions, 0);
    CHECK_OK(spot_session_free(s));
    CHECK_OK(spot_runtime_free(rt));
}

static void batch_misuse_gets_specific_errors(void) {
    struct spot_timer t[1];
    uint64_t rt = two_due(t, 1);
    uint64_t s = 0;
    CHECK_OK(spot_session_new(rt, 4, &s));
    struct spot_batch b = new_batch();
    CHECK_ST(spot_session_batch(s, 0, NULL), SPOT_E_NULL_ARGUMENT);
    b.struct_size = 8;
    CHECK_ST(spot_session_batch(s, 0, &b), SPOT_E_BAD_STRUCT_SIZE);
    b = new_batch();
    CHECK_ST(spot_session_batch(s, -2, &b), SPOT_E_INVALID_ARGUMENT);
    CHECK_ST(spot_session_batch(0, 0, &b), SPOT_E_INVALID_HANDLE);
    /* nothing was lost by the refusals: the record is still there */
    struct spot_record r;
    uint32_t got = 0;
    CHECK_OK(spot_session_next(s, 0, &r, &got));
    CHECK_EQ_U64(got, 1);
    CHECK_ST(spot_session_batch(s, 0, &b), SPOT_E_INVALID_ARGUMENT); /* done first */
    CHECK_OK(spot_session_done(s, SPOT_OUTCOME_OK));
    CHECK_OK(spot_session_batch(s, 0, &b));
    CHECK_EQ_U64(b.count, 0);
    CHECK_OK(spot_session_free(s));
    CHECK_ST(spot_session_batch(s, 0, &b), SPOT_E_INVALID_HANDLE); /* freed */
    CHECK_OK(spot_runtime_free(rt));
}

struct other_thread {
    uint64_t s;
    spot_status st;
};

static void *use_from_other_thread(void *v) {
    struct other_thread *o = v;
    struct spot_record r;
    uint32_t got;
    o->st = spot_session_next(o->s, 0, &r, &got);
    return NULL;
}

static void session_belongs_to_its_thread_and_free_completes_what_it_held(void) {
    struct spot_timer t[3];
    uint64_t rt = two_due(t, 3);
    uint64_t s = 0;
    CHECK_OK(spot_session_new(rt, 16, &s));
    struct other_thread o = {s, -1};
    pthread_t th;
    pthread_create(&th, NULL, use_from_other_thread, &o);
    pthread_join(th, NULL);
    CHECK_ST(o.st, SPOT_E_INVALID_HANDLE);
    struct spot_record r;
    uint32_t got = 0;
    CHECK_OK(spot_session_next(s, 0, &r, &got)); /* one handed out, two unread */
    CHECK_EQ_U64(got, 1);
    CHECK_OK(spot_session_free(s));
    struct spot_stats st = {0};
    st.struct_size = sizeof st;
    CHECK_OK(spot_stats(rt, &st));
    CHECK_EQ_U64(st.completed_ok, 1);
    CHECK_EQ_U64(st.not_started, 2);
    CHECK_OK(spot_runtime_free(rt));
}

static void ignore_batch(void *env, const struct spot_record *recs, size_t n,
                         struct spot_completion *done, size_t *n_done) {
    (void)env;
    (void)recs;
    (void)n;
    (void)done;
    (void)n_done;
}

static void session_on_a_closed_or_callback_runtime(void) {
    uint64_t cb = manual_callback_runtime(ignore_batch, NULL, NULL);
    uint64_t none = 0;
    CHECK_ST(spot_session_new(cb, 4, &none), SPOT_E_WRONG_DELIVERY_MODE);
    CHECK_OK(spot_runtime_free(cb));
    struct spot_timer t[1];
    uint64_t rt = two_due(t, 1);
    uint64_t s = 0;
    CHECK_OK(spot_session_new(rt, 4, &s));
    CHECK_OK(spot_runtime_close(rt));
    struct spot_record r;
    uint32_t got = 0;
    CHECK_ST(spot_session_next(s, 0, &r, &got), SPOT_E_CLOSED);
    CHECK_ST(spot_session_new(rt, 4, &s), SPOT_E_CLOSED);
    CHECK_OK(spot_session_free(s));
    CHECK_OK(spot_runtime_free(rt));
}

void run_session_tests(void) {
    RUN(session_hands_out_each_record_once);
    RUN(session_blocking_cancel_of_a_later_record_does_not_wait);
    RUN(session_misuse_gets_specific_errors);
    RUN(session_belongs_to_its_thread_and_free_completes_what_it_held);
    RUN(session_on_a_closed_or_callback_runtime);
    RUN(batch_hands_out_a_whole_exchange_and_completes_it_from_the_cells);
    RUN(batch_blocking_cancel_from_a_handler_completes_later_records);
    RUN(batch_record_kept_by_the_host_is_completed_by_the_host);
    RUN(batch_misuse_gets_specific_errors);
}
