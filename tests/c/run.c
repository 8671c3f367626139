/* The delivery driver through the C ABI (spot_session_run, spot_node_run): a host writes
 * one function per record and no loop. Each test reads the outcomes back from the
 * runtime's or node's stats, and ends with the accounting identity. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "contract.h"
#include "util.h"

struct run_env {
    uint64_t rt;
    int calls;
    int notices;
    uint32_t answers[16]; /* by call number; 0 past the end (OK) */
    uint64_t kept_tokens[16];
    int n_kept;
    uint64_t keys[16];
    struct spot_timer cancel_in_first; /* a blocking cancel from the first handler */
    int cancel_status;
    uint32_t cancel_reason;
};

static uint32_t run_timer(void *p, const struct spot_record *r) {
    struct run_env *e = p;
    if (r->kind == SPOT_RECORD_CANCEL_DONE) {
        e->notices++;
        return 0x1234; /* ignored for a notice */
    }
    int i = e->calls++;
    if (i < 16) e->keys[i] = r->key;
    if (i == 0 && e->cancel_in_first.generation != 0) {
        e->cancel_status = spot_timer_cancel(e->rt, e->cancel_in_first, 5000 * MS, &e->cancel_reason);
    }
    uint32_t a = i < 16 ? e->answers[i] : SPOT_OUTCOME_OK;
    if (a == SPOT_RUN_KEEP && e->n_kept < 16) e->kept_tokens[e->n_kept++] = r->token;
    return a;
}

static uint64_t due_timers(struct spot_timer *t, int n) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_CONCURRENT);
    struct spot_timer_spec sp = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    for (int i = 0; i < n; i++) CHECK_OK(spot_timer_register(rt, 1, ep, (uint64_t)i, &sp, NULL, NULL, &t[i]));
    CHECK_OK(spot_advance(rt, 10 * MS));
    return rt;
}

static struct spot_pass pass0(void) {
    struct spot_pass p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    return p;
}

static void accounted(uint64_t rt) {
    struct spot_stats s = stats(rt);
    CHECK_EQ_U64(s.records_published,
                 s.completed_ok + s.completed_failed + s.completed_deferred + s.not_started + s.records_abandoned);
    CHECK_EQ_U64(s.invalid_completions, 0);
}

static void run_every_answer_is_the_outcome_counted(void) {
    struct spot_timer t[4];
    uint64_t rt = due_timers(t, 4);
    uint64_t s = 0;
    CHECK_OK(spot_session_new(rt, 16, &s));
    struct run_env e;
    memset(&e, 0, sizeof e);
    e.rt = rt;
    e.answers[0] = SPOT_OUTCOME_OK;
    e.answers[1] = SPOT_OUTCOME_FAILED;
    e.answers[2] = SPOT_OUTCOME_DEFERRED;
    e.answers[3] = SPOT_OUTCOME_NOT_STARTED;
    struct spot_pass p = pass0();
    CHECK_OK(spot_session_run(s, 0, run_timer, &e, &p));
    CHECK_EQ_U64(p.ran, 4);
    CHECK_EQ_U64(p.stopped, 0);
    /* Sent with the next run call. */
    CHECK_OK(spot_session_run(s, 0, run_timer, &e, NULL));
    struct spot_stats st = stats(rt);
    CHECK_EQ_U64(st.completed_ok, 1);
    CHECK_EQ_U64(st.completed_failed, 1);
    CHECK_EQ_U64(st.completed_deferred, 1);
    CHECK_EQ_U64(st.not_started, 1);
    CHECK_OK(spot_session_free(s));
    CHECK_OK(spot_runtime_close(rt));
    accounted(rt);
    CHECK_OK(spot_runtime_free(rt));
}

static void run_a_kept_record_is_completed_by_its_token(void) {
    struct spot_timer t[2];
    uint64_t rt = due_timers(t, 2);
    uint64_t s = 0;
    CHECK_OK(spot_session_new(rt, 16, &s));
    struct run_env e;
    memset(&e, 0, sizeof e);
    e.rt = rt;
    e.answers[0] = SPOT_RUN_KEEP;
    struct spot_pass p = pass0();
    CHECK_OK(spot_session_run(s, 0, run_timer, &e, &p));
    CHECK_EQ_U64(p.kept, 1);
    CHECK_EQ_U64(e.n_kept, 1);
    CHECK_OK(spot_session_run(s, 0, run_timer, &e, NULL));
    CHECK_EQ_U64(stats(rt).completed_ok, 1); /* the other one */
    struct spot_completion c = {e.kept_tokens[0], SPOT_OUTCOME_OK, 0};
    CHECK_OK(spot_complete(rt, &c, 1));
    CHECK_EQ_U64(stats(rt).completed_ok, 2);
    /* The token is spent: a second completion is refused. */
    CHECK_ST(spot_complete(rt, &c, 1), SPOT_E_INVALID_COMPLETION);
    CHECK_OK(spot_session_free(s));
    CHECK_OK(spot_runtime_close(rt));
    CHECK_OK(spot_runtime_free(rt));
}

static void run_a_stop_keeps_the_rest_for_the_next_run(void) {
    struct spot_timer t[4];
    uint64_t rt = due_timers(t, 4);
    uint64_t s = 0;
    CHECK_OK(spot_session_new(rt, 16, &s));
    struct run_env e;
    memset(&e, 0, sizeof e);
    e.rt = rt;
    e.answers[1] = SPOT_OUTCOME_FAILED | SPOT_RUN_STOP;
    struct spot_pass p = pass0();
    CHECK_OK(spot_session_run(s, 0, run_timer, &e, &p));
    CHECK_EQ_U64(p.stopped, 1);
    CHECK_EQ_U64(p.ran, 2);
    p = pass0();
    CHECK_OK(spot_session_run(s, 0, run_timer, &e, &p));
    CHECK_EQ_U64(p.ran, 2);
    CHECK_EQ_U64(e.calls, 4);
    /* each key once */
    uint64_t seen = 0;
    for (int i = 0; i < 4; i++) seen |= 1ULL << e.keys[i];
    CHECK_EQ_U64(seen, 0xF);
    CHECK_OK(spot_session_free(s));
    struct spot_stats st = stats(rt);
    CHECK_EQ_U64(st.completed_ok, 3);
    CHECK_EQ_U64(st.completed_failed, 1);
    CHECK_OK(spot_runtime_close(rt));
    accounted(rt);
    CHECK_OK(spot_runtime_free(rt));
}

static void run_a_blocking_cancel_from_a_handler_does_not_wait_for_this_batch(void) {
    struct spot_timer t[2];
    uint64_t rt = due_timers(t, 2);
    uint64_t s = 0;
    CHECK_OK(spot_session_new(rt, 16, &s));
    struct run_env e;
    memset(&e, 0, sizeof e);
    e.rt = rt;
    /* Whichever runs first cancels both; the one it is running reports would-deadlock,
     * so cancel the timer with the other key by trying both in turn is not possible here:
     * cancel t[1] and make sure t[1] is not the first (keys in registration order). */
    e.cancel_in_first = t[1];
    struct spot_pass p = pass0();
    CHECK_OK(spot_session_run(s, 0, run_timer, &e, &p));
    if (e.keys[0] == 1) {
        CHECK_EQ_U64(e.cancel_status, SPOT_E_WOULD_DEADLOCK);
        CHECK_EQ_U64(p.ran, 2);
    } else {
        CHECK_EQ_U64(e.cancel_status, SPOT_OK);
        CHECK_EQ_U64(e.cancel_reason, SPOT_END_CANCELLED);
        CHECK_EQ_U64(p.ran, 1); /* the cancelled one never reached the host */
    }
    CHECK_OK(spot_session_free(s));
    CHECK_OK(spot_runtime_close(rt));
    accounted(rt);
    CHECK_OK(spot_runtime_free(rt));
}

static void run_a_notice_reaches_the_run_function(void) {
    struct spot_timer t[1];
    uint64_t rt = due_timers(t, 1);
    uint64_t s = 0;
    CHECK_OK(spot_session_new(rt, 16, &s));
    struct run_env e;
    memset(&e, 0, sizeof e);
    e.rt = rt;
    e.answers[0] = SPOT_RUN_KEEP;
    CHECK_OK(spot_session_run(s, 0, run_timer, &e, NULL));
    uint32_t done = 9, reason = 9;
    CHECK_OK(spot_timer_cancel_async(rt, t[0], 42, &done, &reason));
    CHECK_EQ_U64(done, 0); /* its record is still out: a notice will tell */
    struct spot_completion c = {e.kept_tokens[0], SPOT_OUTCOME_OK, 0};
    CHECK_OK(spot_complete(rt, &c, 1));
    struct spot_pass p = pass0();
    CHECK_OK(spot_session_run(s, 5000 * MS, run_timer, &e, &p));
    CHECK_EQ_U64(p.notices, 1);
    CHECK_EQ_U64(e.notices, 1);
    CHECK_OK(spot_session_free(s));
    CHECK_OK(spot_runtime_close(rt));
    accounted(rt);
    CHECK_OK(spot_runtime_free(rt));
}

static void run_bad_input_gets_specific_errors(void) {
    struct spot_timer t[2];
    uint64_t rt = due_timers(t, 2);
    uint64_t s = 0;
    CHECK_OK(spot_session_new(rt, 16, &s));
    struct run_env e;
    memset(&e, 0, sizeof e);
    e.rt = rt;
    CHECK_ST(spot_session_run(s, 0, NULL, &e, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_session_run(s, -2, run_timer, &e, NULL), SPOT_E_INVALID_ARGUMENT);
    CHECK_ST(spot_session_run(s + 1, 0, run_timer, &e, NULL), SPOT_E_INVALID_HANDLE);
    struct spot_pass small = pass0();
    small.struct_size = 4;
    CHECK_ST(spot_session_run(s, 0, run_timer, &e, &small), SPOT_E_BAD_STRUCT_SIZE);
    /* That call ran its batch (the size is checked when the pass is written). An answer
     * outside the contract: the record fails, the rest waits, the error says so. */
    CHECK_OK(spot_advance(rt, 10 * MS));
    memset(e.answers, 0, sizeof e.answers);
    e.calls = 0;
    e.answers[0] = 77;
    CHECK_ST(spot_session_run(s, 0, run_timer, &e, NULL), SPOT_E_UNKNOWN_ENUM);
    char msg[512];
    spot_last_error(msg, sizeof msg);
    CHECK(strstr(msg, "SPOT_RUN_KEEP") != NULL);
    CHECK_OK(spot_session_run(s, 0, run_timer, &e, NULL));
    CHECK_EQ_U64(e.calls, 2);
    CHECK_OK(spot_session_free(s));
    CHECK_OK(spot_runtime_close(rt));
    accounted(rt);
    CHECK_OK(spot_runtime_free(rt));
}

/* ---- a node ------------------------------------------------------------------------ */

struct node_env {
    int calls;
    char seen[16][8];
    uint32_t answers[16];
    uint64_t kept_token;
};

static uint32_t run_node(void *p, const struct spot_node_record *r) {
    struct node_env *e = p;
    int i = e->calls++;
    if (i < 16 && r->kind == SPOT_WORK_MESSAGE && r->payload_len < 8) {
        memcpy(e->seen[i], r->payload, r->payload_len);
        e->seen[i][r->payload_len] = 0;
    }
    uint32_t a = i < 16 ? e->answers[i] : SPOT_OUTCOME_OK;
    if (a == SPOT_RUN_KEEP) e->kept_token = r->token;
    return a;
}

static struct spot_node_stats node_stats(uint64_t node) {
    struct spot_node_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    CHECK_OK(spot_node_stats(node, &s));
    return s;
}

static uint64_t node_with_messages(uint64_t *store, int n) {
    CHECK_OK(spot_store_new(store));
    uint64_t node = manual_node(*store, 1);
    uint64_t gen = 0;
    CHECK_OK(spot_node_create_user_spot(node, 20, &gen));
    for (int i = 0; i < n; i++) {
        char m[4] = {'m', (char)('0' + i), 0, 0};
        CHECK_OK(spot_node_send(node, 20, SPOT_LANE_APPLICATION, (const uint8_t *)m, 2));
    }
    return node;
}

static void node_run_delivers_a_burst_in_order_and_a_stop_resumes(void) {
    uint64_t store = 0;
    uint64_t node = node_with_messages(&store, 5);
    struct node_env e;
    memset(&e, 0, sizeof e);
    e.answers[1] = SPOT_OUTCOME_OK | SPOT_RUN_STOP;
    struct spot_pass p = pass0();
    CHECK_OK(spot_node_run(node, 0, 4096, run_node, &e, &p));
    CHECK_EQ_U64(p.stopped, 1);
    for (int k = 0; k < 10 && e.calls < 5; k++) CHECK_OK(spot_node_run(node, 0, 4096, run_node, &e, NULL));
    CHECK_EQ_U64(e.calls, 5);
    for (int i = 0; i < 5; i++) {
        char want[3] = {'m', (char)('0' + i), 0};
        CHECK(strcmp(e.seen[i], want) == 0);
    }
    struct spot_node_stats s = node_stats(node);
    CHECK_EQ_U64(s.messages_completed, 5);
    CHECK_EQ_U64(s.messages_dropped, 0);
    CHECK_OK(spot_node_free(node));
    CHECK_OK(spot_store_free(store));
}

static void node_run_a_kept_message_is_completed_by_its_token(void) {
    uint64_t store = 0;
    uint64_t node = node_with_messages(&store, 1);
    struct node_env e;
    memset(&e, 0, sizeof e);
    e.answers[0] = SPOT_RUN_KEEP;
    struct spot_pass p = pass0();
    CHECK_OK(spot_node_run(node, 0, 4096, run_node, &e, &p));
    CHECK_EQ_U64(p.kept, 1);
    CHECK_EQ_U64(node_stats(node).messages_completed, 0);
    struct spot_node_completion c;
    memset(&c, 0, sizeof c);
    c.token = e.kept_token;
    c.outcome = SPOT_OUTCOME_OK;
    CHECK_OK(spot_node_complete(node, &c, 1));
    CHECK_EQ_U64(node_stats(node).messages_completed, 1);
    CHECK_ST(spot_node_complete(node, &c, 1), SPOT_E_INVALID_COMPLETION);
    CHECK_OK(spot_node_free(node));
    CHECK_OK(spot_store_free(store));
}

static void node_free_after_a_stop_completes_the_rest_and_the_handle_is_gone(void) {
    uint64_t store = 0;
    uint64_t node = node_with_messages(&store, 4);
    struct node_env e;
    memset(&e, 0, sizeof e);
    e.answers[0] = SPOT_OUTCOME_OK | SPOT_RUN_STOP;
    CHECK_OK(spot_node_run(node, 0, 4096, run_node, &e, NULL));
    struct spot_node_stats before = node_stats(node);
    CHECK_EQ_U64(before.messages_admitted, 4);
    CHECK_OK(spot_node_free(node));
    CHECK_ST(spot_node_run(node, 0, 4096, run_node, &e, NULL), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_run(0, 0, 4096, NULL, &e, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_OK(spot_store_free(store));
}

struct free_env {
    uint64_t node;
    int calls;
    int free_status;
};

static uint32_t run_node_and_free_it(void *p, const struct spot_node_record *r) {
    (void)r;
    struct free_env *e = p;
    if (e->calls++ == 0) e->free_status = spot_node_free(e->node);
    return SPOT_OUTCOME_OK;
}

static void node_free_from_the_run_function_ends_the_batch_without_waiting(void) {
    uint64_t store = 0;
    uint64_t node = node_with_messages(&store, 3);
    struct free_env e = {node, 0, -1};
    spot_status st = spot_node_run(node, 0, 4096, run_node_and_free_it, &e, NULL);
    CHECK(st == SPOT_OK || st == SPOT_E_CLOSED);
    CHECK_EQ_U64(e.free_status, SPOT_OK);
    CHECK(e.calls >= 1);
    CHECK_ST(spot_node_run(node, 0, 4096, run_node, &e, NULL), SPOT_E_INVALID_HANDLE);
    CHECK_OK(spot_store_free(store));
}

static void *free_later(void *p) {
    struct free_env *e = p;
    sleep_ms(200);
    e->free_status = spot_node_free(e->node);
    return NULL;
}

static void node_free_from_another_thread_wakes_a_waiting_run(void) {
    uint64_t store = 0;
    uint64_t node = node_with_messages(&store, 0);
    struct free_env e = {node, 0, -1};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, free_later, &e) == 0);
    /* Waits without a limit: only the free can end it. */
    spot_status st = spot_node_run(node, -1, 4096, run_node_and_free_it, &e, NULL);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(st == SPOT_E_CLOSED || st == SPOT_OK);
    CHECK_EQ_U64(e.free_status, SPOT_OK);
    CHECK_OK(spot_store_free(store));
}

struct race_env {
    uint64_t node;
    int stop;
    long sent, ran;
};

static uint32_t count_run(void *p, const struct spot_node_record *r) {
    (void)r;
    __atomic_add_fetch(&((struct race_env *)p)->ran, 1, __ATOMIC_RELAXED);
    return SPOT_OUTCOME_OK;
}

static void *race_runner(void *p) {
    struct race_env *e = p;
    /* Runs without a time limit until the node is freed under it. */
    while (spot_node_run(e->node, -1, 64, count_run, e, NULL) == SPOT_OK) {}
    return NULL;
}

static void *race_sender(void *p) {
    struct race_env *e = p;
    const uint8_t m = 'x';
    /* A send every 20 us: a sender that never blocks would starve the other threads under
     * valgrind, which runs one thread at a time. */
    const struct timespec pause = {0, 20000L};
    while (!__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE)) {
        if (spot_node_send(e->node, 20, SPOT_LANE_APPLICATION, &m, 1) == SPOT_OK) e->sent++;
        nanosleep(&pause, NULL);
    }
    return NULL;
}

/* A node freed while one thread runs it without a time limit and another sends to it,
 * the free moved across the window by varying delays: every round ends (the free never
 * waits for the run, the run wakes), nothing crashes (ASan, valgrind). */
static void node_free_races_run_and_send(void) {
    /* SPOT_C_RACE_ROUNDS: fewer under valgrind (mk/c.mk), where a round is ~50x slower. */
    const char *env = getenv("SPOT_C_RACE_ROUNDS");
    int rounds = env ? atoi(env) : 150;
    for (int i = 0; i < rounds; i++) {
        uint64_t store = 0;
        struct race_env e;
        memset(&e, 0, sizeof e);
        e.node = node_with_messages(&store, 2);
        pthread_t runner, sender;
        CHECK(pthread_create(&runner, NULL, race_runner, &e) == 0);
        CHECK(pthread_create(&sender, NULL, race_sender, &e) == 0);
        struct timespec d = {0, (long)(i % 7) * 300000L};
        nanosleep(&d, NULL);
        CHECK_OK(spot_node_free(e.node));
        __atomic_store_n(&e.stop, 1, __ATOMIC_RELEASE);
        CHECK(pthread_join(sender, NULL) == 0);
        CHECK(pthread_join(runner, NULL) == 0);
        CHECK_OK(spot_store_free(store));
    }
}

void run_driver_tests(void) {
    RUN(run_every_answer_is_the_outcome_counted);
    RUN(run_a_kept_record_is_completed_by_its_token);
    RUN(run_a_stop_keeps_the_rest_for_the_next_run);
    RUN(run_a_blocking_cancel_from_a_handler_does_not_wait_for_this_batch);
    RUN(run_a_notice_reaches_the_run_function);
    RUN(run_bad_input_gets_specific_errors);
    RUN(node_run_delivers_a_burst_in_order_and_a_stop_resumes);
    RUN(node_run_a_kept_message_is_completed_by_its_token);
    RUN(node_free_after_a_stop_completes_the_rest_and_the_handle_is_gone);
    RUN(node_free_from_the_run_function_ends_the_batch_without_waiting);
    RUN(node_free_from_another_thread_wakes_a_waiting_run);
    RUN(node_free_races_run_and_send);
}
