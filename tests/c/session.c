/* Delivery sessions (spot_session_*): one thread's delivery loop. The start check is done
 * before a record is handed out, completions go back with the next exchange, and a
 * blocking cancel made on the session's thread never waits for a record only that thread
 * would complete. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>

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
}
