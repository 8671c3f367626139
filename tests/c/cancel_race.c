/* A blocking cancel (spot_timer_cancel), a cancel asking for a notice
 * (spot_timer_cancel_async) and an exchanging host race the end of one-shot timers whose
 * release hook fails after a short busy wait (public header only, real clock).
 *
 * Each round registers a one-shot timer due in 0-60 us; the two cancellers are released
 * together and each waits a different few microseconds first, so the window moves across
 * the timer's delivery, its callback and its end. Every round must finish within its
 * deadline (a call that never returns is the defect this hunts: the process is stopped by
 * an alarm with the round it hung in), and every asker must see the one terminal result,
 * SPOT_E_CLEANUP_FAILED with the hook's own message: the blocking cancel, and the notice
 * either at once or as exactly one CANCEL_DONE record.
 *
 * Usage: cancel_race [ROUNDS]   (default 20000) */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spot_timer.h"

#define ROUND_DEADLINE_S 30

static uint64_t rt;
static uint64_t epoch;
static atomic_ulong current_round;
static atomic_int stop_host;

/* Per round, written by the main thread before the cancellers are released. */
static struct spot_timer timer;
static pthread_barrier_t go;
static pthread_barrier_t done_round;

/* What each side saw in this round. */
static atomic_int blocking_status;
static atomic_int async_status;   /* -1: notice pending (a record follows) */
static atomic_int notices_received;
static atomic_int notice_status;
static atomic_ulong notice_tag;
static atomic_ulong hooks_run;
static atomic_ulong callbacks_started;

static uint64_t mix(uint64_t x) {
    uint64_t z = x + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void spin_ns(uint64_t ns) {
    uint64_t until = now_ns() + ns;
    while (now_ns() < until) {
    }
}

static void fail(const char *what) {
    char msg[512] = {0};
    spot_last_error(msg, sizeof msg);
    fprintf(stderr, "FAIL (round %lu): %s [%s]\n", (unsigned long)atomic_load(&current_round),
            what, msg);
    exit(1);
}

static void on_alarm(int sig) {
    (void)sig;
    static const char m[] = "FAIL: a round made no progress within its deadline: a cancel never returned\n";
    ssize_t w = write(2, m, sizeof m - 1);
    (void)w;
    _exit(1);
}

/* The release hook: busy-waits the round's few microseconds, then fails with a message
 * naming the round. */
static int32_t failing_release(void *user_data, char *msg, size_t msg_len) {
    uint64_t round = (uint64_t)(uintptr_t)user_data;
    spin_ns(mix(round) % 20000);
    snprintf(msg, msg_len, "hook of round %llu failed", (unsigned long long)round);
    atomic_fetch_add(&hooks_run, 1);
    return 1;
}

static void *host(void *arg) {
    (void)arg;
    struct spot_record recs[64];
    struct spot_completion done[64];
    size_t n_done = 0, n = 0;
    while (!atomic_load(&stop_host)) {
        spot_status s = spot_exchange(rt, done, n_done, recs, 64, 5 * 1000000LL, &n);
        if (s != SPOT_OK && s != SPOT_E_CLOSED) fail("spot_exchange");
        n_done = 0;
        for (size_t i = 0; i < n; i++) {
            if (recs[i].kind == SPOT_RECORD_TICK) {
                uint32_t outcome = SPOT_OUTCOME_NOT_STARTED;
                if (spot_record_begin(rt, &recs[i]) == SPOT_OK) {
                    atomic_fetch_add(&callbacks_started, 1);
                    outcome = SPOT_OUTCOME_OK;
                }
                done[n_done].token = recs[i].token;
                done[n_done].outcome = outcome;
                done[n_done].reserved = 0;
                n_done++;
            } else if (recs[i].kind == SPOT_RECORD_CANCEL_DONE) {
                atomic_store(&notice_tag, recs[i].tag);
                atomic_store(&notice_status, recs[i].status);
                atomic_fetch_add(&notices_received, 1);
            }
        }
    }
    if (n_done) spot_complete(rt, done, n_done);
    return NULL;
}

static void *blocking_canceller(void *arg) {
    (void)arg;
    for (;;) {
        pthread_barrier_wait(&go);
        uint64_t round = atomic_load(&current_round);
        if (round == UINT64_MAX) return NULL;
        spin_ns(mix(round ^ 1) % 15000);
        uint32_t reason = 0;
        atomic_store(&blocking_status,
                     spot_timer_cancel(rt, timer, (int64_t)ROUND_DEADLINE_S * 1000000000LL, &reason));
        pthread_barrier_wait(&done_round);
    }
}

static void *async_canceller(void *arg) {
    (void)arg;
    for (;;) {
        pthread_barrier_wait(&go);
        uint64_t round = atomic_load(&current_round);
        if (round == UINT64_MAX) return NULL;
        spin_ns(mix(round ^ 2) % 15000);
        uint32_t is_done = 0, reason = 0;
        spot_status s = spot_timer_cancel_async(rt, timer, round, &is_done, &reason);
        atomic_store(&async_status, (s == SPOT_OK && !is_done) ? -1 : s);
        pthread_barrier_wait(&done_round);
    }
}

int main(int argc, char **argv) {
    uint64_t rounds = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000;
    signal(SIGALRM, on_alarm);
    struct spot_runtime_config cfg = {0};
    cfg.struct_size = sizeof cfg;
    cfg.clock = SPOT_CLOCK_REAL;
    cfg.delivery = SPOT_DELIVERY_EXCHANGE;
    if (spot_runtime_new(&cfg, &rt)) fail("spot_runtime_new");
    if (spot_owner_acquire(rt, 1, 0, SPOT_GATE_SERIAL, &epoch)) fail("spot_owner_acquire");
    pthread_barrier_init(&go, NULL, 3);
    pthread_barrier_init(&done_round, NULL, 3);
    pthread_t th[3];
    pthread_create(&th[0], NULL, host, NULL);
    pthread_create(&th[1], NULL, blocking_canceller, NULL);
    pthread_create(&th[2], NULL, async_canceller, NULL);

    uint64_t immediate = 0, by_record = 0;
    char expected[128], msg[256];
    for (uint64_t round = 0; round < rounds; round++) {
        alarm(ROUND_DEADLINE_S);
        atomic_store(&current_round, round);
        atomic_store(&notices_received, 0);
        struct spot_timer_spec sp = {0};
        sp.struct_size = sizeof sp;
        sp.policy = SPOT_POLICY_SKIP_LATE_TICKS;
        sp.period_ns = 0;
        sp.first_due_ns = (mix(round) >> 20) % 60000;
        sp.max_catch_up_ticks = 1;
        if (spot_timer_register(rt, 1, epoch, round, &sp, (void *)(uintptr_t)round,
                                failing_release, &timer))
            fail("spot_timer_register");
        pthread_barrier_wait(&go);
        pthread_barrier_wait(&done_round);
        snprintf(expected, sizeof expected, "hook of round %llu failed", (unsigned long long)round);

        if (atomic_load(&blocking_status) != SPOT_E_CLEANUP_FAILED) fail("the blocking cancel's result");
        int a = atomic_load(&async_status);
        if (a == -1) {
            /* The notice arrives as exactly one record (the host keeps exchanging). */
            while (atomic_load(&notices_received) == 0) usleep(20);
            if (atomic_load(&notice_tag) != round) fail("a notice of another round");
            if (atomic_load(&notice_status) != SPOT_E_CLEANUP_FAILED) fail("the notice's result");
            by_record++;
        } else if (a == SPOT_E_CLEANUP_FAILED) {
            immediate++;
        } else {
            fail("spot_timer_cancel_async's result");
        }
        /* The handle keeps answering with the same result and the same message. */
        if (spot_timer_cancel(rt, timer, 0, NULL) != SPOT_E_CLEANUP_FAILED) fail("the result again");
        spot_last_error(msg, sizeof msg);
        if (!strstr(msg, expected)) {
            fprintf(stderr, "FAIL (round %llu): message '%s', expected '%s'\n",
                    (unsigned long long)round, msg, expected);
            return 1;
        }
        /* A notice answered once: nothing more arrives for this round. */
        if (atomic_load(&notices_received) > 1) fail("a notice answered twice");
    }
    alarm(0);
    usleep(20000);
    if (atomic_load(&notices_received) > (by_record ? 1 : 0)) fail("a notice answered twice");
    atomic_store(&current_round, UINT64_MAX);
    pthread_barrier_wait(&go);
    atomic_store(&stop_host, 1);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    if (atomic_load(&hooks_run) != rounds) fail("every hook ran once");
    spot_runtime_free(rt);
    printf("cancel race: %llu rounds, %lu callbacks started, %llu notices at once, %llu by record: ok\n",
           (unsigned long long)rounds, (unsigned long)atomic_load(&callbacks_started),
           (unsigned long long)immediate, (unsigned long long)by_record);
    return 0;
}
