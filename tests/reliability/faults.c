/* Reliability fault tests over the C ABI. Built and run by
 * `make test-reliability` against libspot_timer.a, twice: plain, and ThreadSanitizer-
 * instrumented (clang -fsanitize=thread; the library itself is not instrumented).
 *
 *   forever_handler     a handler that does not return: a blocking cancel times out
 *                       (SPOT_E_TIMEOUT) and the cancel still completes once it returns
 *   failing_release     a release hook that fails: 8 concurrent blocking cancellers and a
 *                       later non-blocking one all see the same SPOT_E_CLEANUP_FAILED
 *   stalled_host        20,000 timers keep firing while the host stops draining: at most
 *                       one pending record per timer, memory bounded, delivery resumes with
 *                       correct tick info
 *   sigstop_under_load  a child with 20,000 leased timers is stopped past its leases and
 *                       continued: no callback starts after a lease deadline, no backlog
 *   concurrent_hosts    4 exchanging threads + 2 churning threads (the TSan workload)
 *
 * Sizes: RELIABILITY_TIMERS (20000), RELIABILITY_STALL_MS (1500). Prints FIGURES lines and
 * the final "N passed, N failed" line. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spot_timer.h"

#define MS 1000000ULL
static int failed_checks;
#define CHECK(c)                                                                        \
    do {                                                                                \
        if (!(c)) {                                                                     \
            failed_checks++;                                                            \
            fprintf(stderr, "    %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);   \
        }                                                                               \
    } while (0)
#define CHECK_ST(call, want)                                                            \
    do {                                                                                \
        spot_status st_ = (call);                                                       \
        if (st_ != (want)) {                                                            \
            char m_[256];                                                               \
            spot_last_error(m_, sizeof m_);                                             \
            failed_checks++;                                                            \
            fprintf(stderr, "    %s:%d: %s -> %s, want %s (%s)\n", __FILE__, __LINE__,  \
                    #call, spot_status_name(st_), spot_status_name(want), m_);          \
        }                                                                               \
    } while (0)

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}
static void sleep_ms(uint64_t ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}
static uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 10) : dflt;
}
static long rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static uint64_t new_runtime(uint32_t clock) {
    struct spot_runtime_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.clock = clock;
    cfg.delivery = SPOT_DELIVERY_EXCHANGE;
    uint64_t rt = 0;
    CHECK_ST(spot_runtime_new(&cfg, &rt), SPOT_OK);
    return rt;
}
/* Ends every generation (revoking the given owners, epochs[i] their authorities), completes
 * whatever is still delivered as not started, then checks the two accounting identities
 * of the runtime's counters:
 *   ticks:   ticks_due == completed_ok + completed_failed + ticks_skipped
 *                         + ticks_dropped_authority + ticks_discarded
 *   records: records_published == completed_ok + completed_failed + completed_deferred
 *                                 + not_started + records_abandoned */
static void end_all_and_check_identities(uint64_t rt, const uint64_t *owners, const uint64_t *epochs,
                                         size_t n_owners, const char *name) {
    for (size_t i = 0; i < n_owners; i++) spot_owner_revoke(rt, owners[i], epochs[i]);
    struct spot_record recs[256];
    struct spot_completion done[256];
    struct spot_stats s;
    for (int round = 0; round < 1000; round++) {
        size_t n = 0, m = 0;
        CHECK_ST(spot_exchange(rt, NULL, 0, recs, 256, 1 * MS, &n), SPOT_OK);
        /* Only ticks are completed: a cancel notice (a cancel_async that ended later) has
         * no token. */
        for (size_t i = 0; i < n; i++)
            if (recs[i].kind == SPOT_RECORD_TICK)
                done[m++] = (struct spot_completion){recs[i].token, SPOT_OUTCOME_NOT_STARTED, 0};
        if (m) CHECK_ST(spot_complete(rt, done, m), SPOT_OK);
        memset(&s, 0, sizeof s);
        s.struct_size = sizeof s;
        CHECK_ST(spot_stats(rt, &s), SPOT_OK);
        if (n == 0 && s.live_timers == 0) break;
    }
    CHECK(s.live_timers == 0);
    uint64_t ticks = s.completed_ok + s.completed_failed + s.ticks_skipped +
                     s.ticks_dropped_authority + s.ticks_discarded;
    uint64_t records = s.completed_ok + s.completed_failed + s.completed_deferred + s.not_started +
                       s.records_abandoned;
    CHECK(s.ticks_due == ticks);
    CHECK(s.records_published == records);
    printf("FIGURES %s identities: ticks_due=%llu accounted=%llu records_published=%llu "
           "accounted=%llu taken_back=%llu\n",
           name, (unsigned long long)s.ticks_due, (unsigned long long)ticks,
           (unsigned long long)s.records_published, (unsigned long long)records,
           (unsigned long long)s.records_taken_back);
}

static struct spot_timer_spec every(uint64_t period_ns) {
    struct spot_timer_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.struct_size = sizeof sp;
    sp.policy = SPOT_POLICY_SKIP_LATE_TICKS;
    sp.period_ns = period_ns;
    sp.first_due_ns = SPOT_FIRST_DUE_DEFAULT;
    sp.max_catch_up_ticks = 1;
    return sp;
}

/* ---- forever_handler ------------------------------------------------------------ */

struct forever_ctx {
    uint64_t rt;
    atomic_int started;
    atomic_int finished;
    uint64_t hold_ms;
};

static void *forever_host(void *arg) {
    struct forever_ctx *c = arg;
    struct spot_record rec;
    size_t n = 0;
    while (n == 0) CHECK_ST(spot_exchange(c->rt, NULL, 0, &rec, 1, 100 * MS, &n), SPOT_OK);
    CHECK(rec.kind == SPOT_RECORD_TICK);
    CHECK_ST(spot_record_begin(c->rt, &rec), SPOT_OK);
    atomic_store(&c->started, 1);
    sleep_ms(c->hold_ms); /* the handler "takes forever" */
    atomic_store(&c->finished, 1);
    struct spot_completion done = {rec.token, SPOT_OUTCOME_OK, 0};
    CHECK_ST(spot_complete(c->rt, &done, 1), SPOT_OK);
    return NULL;
}

static void forever_handler(void) {
    struct forever_ctx c = {new_runtime(SPOT_CLOCK_REAL), 0, 0, 1500};
    uint64_t epoch;
    CHECK_ST(spot_owner_acquire(c.rt, 1, 0, SPOT_GATE_SERIAL, &epoch), SPOT_OK);
    struct spot_timer_spec sp = every(1 * MS);
    struct spot_timer t;
    CHECK_ST(spot_timer_register(c.rt, 1, epoch, 1, &sp, NULL, NULL, &t), SPOT_OK);
    pthread_t th;
    pthread_create(&th, NULL, forever_host, &c);
    while (!atomic_load(&c.started)) sleep_ms(1);
    uint32_t reason = 99;
    uint64_t t0 = mono_ns();
    CHECK_ST(spot_timer_cancel(c.rt, t, 100 * MS, &reason), SPOT_E_TIMEOUT);
    uint64_t waited = mono_ns() - t0;
    CHECK(waited >= 90 * MS && waited < 1000 * MS);
    CHECK(reason == 99);
    CHECK(!atomic_load(&c.finished));
    /* Still running: a second bounded wait times out too; then wait for the end. */
    CHECK_ST(spot_timer_cancel(c.rt, t, 0, &reason), SPOT_E_TIMEOUT);
    CHECK_ST(spot_timer_cancel(c.rt, t, -1, &reason), SPOT_OK);
    CHECK(atomic_load(&c.finished)); /* completed only after the handler returned */
    CHECK(reason == SPOT_END_CANCELLED);
    pthread_join(th, NULL);
    /* No record of the cancelled generation arrives afterwards. */
    struct spot_record rec;
    size_t n = 0;
    CHECK_ST(spot_exchange(c.rt, NULL, 0, &rec, 1, 50 * MS, &n), SPOT_OK);
    CHECK(n == 0);
    CHECK_ST(spot_runtime_free(c.rt), SPOT_OK);
    printf("FIGURES forever_handler: bounded_cancel_returned_after_ms=%.1f handler_ms=%llu\n",
           waited / 1e6, (unsigned long long)c.hold_ms);
}

/* ---- failing_release ------------------------------------------------------------- */

static atomic_int release_calls;
static int32_t failing_release_hook(void *ud, char *msg, size_t len) {
    (void)ud;
    atomic_fetch_add(&release_calls, 1);
    sleep_ms(50); /* cancellers pile up meanwhile */
    snprintf(msg, len, "release failed: disk on fire");
    return 1;
}

struct canceller {
    uint64_t rt;
    struct spot_timer t;
    pthread_barrier_t *barrier;
    spot_status st;
    char msg[256];
};

static void *cancel_thread(void *arg) {
    struct canceller *c = arg;
    pthread_barrier_wait(c->barrier);
    uint32_t reason = 99;
    c->st = spot_timer_cancel(c->rt, c->t, -1, &reason);
    spot_last_error(c->msg, sizeof c->msg);
    return NULL;
}

static void failing_release(void) {
    enum { N = 8 };
    uint64_t rt = new_runtime(SPOT_CLOCK_REAL), epoch;
    CHECK_ST(spot_owner_acquire(rt, 1, 0, SPOT_GATE_SERIAL, &epoch), SPOT_OK);
    struct spot_timer_spec sp = every(1000 * MS);
    struct spot_timer t;
    atomic_store(&release_calls, 0);
    CHECK_ST(spot_timer_register(rt, 1, epoch, 1, &sp, (void *)0x1, failing_release_hook, &t), SPOT_OK);
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, N);
    struct canceller cs[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        memset(&cs[i], 0, sizeof cs[i]);
        cs[i].rt = rt;
        cs[i].t = t;
        cs[i].barrier = &barrier;
        pthread_create(&th[i], NULL, cancel_thread, &cs[i]);
    }
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    int same = 1;
    for (int i = 0; i < N; i++) {
        CHECK(cs[i].st == SPOT_E_CLEANUP_FAILED);
        CHECK(strstr(cs[i].msg, "disk on fire") != NULL);
        if (strcmp(cs[i].msg, cs[0].msg) != 0) same = 0;
    }
    CHECK(same);
    /* Later cancellers, blocking and not, see the same recorded failure. */
    uint32_t reason = 99, done = 7;
    CHECK_ST(spot_timer_cancel(rt, t, 0, &reason), SPOT_E_CLEANUP_FAILED);
    CHECK_ST(spot_timer_cancel_async(rt, t, 5, &done, &reason), SPOT_E_CLEANUP_FAILED);
    CHECK(atomic_load(&release_calls) == 1);
    struct spot_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    CHECK_ST(spot_stats(rt, &s), SPOT_OK);
    CHECK(s.cleanup_failures == 1);
    CHECK_ST(spot_runtime_free(rt), SPOT_OK);
    pthread_barrier_destroy(&barrier);
    printf("FIGURES failing_release: cancellers=%d all_saw=SPOT_E_CLEANUP_FAILED release_calls=%d msg=\"%s\"\n",
           N, atomic_load(&release_calls), cs[0].msg);
}

/* ---- stalled_host ----------------------------------------------------------------- */

struct per_timer {
    uint64_t generation;
    uint64_t delivered, scheduled;
    int seen_in_batch;
};

/* Drains for `ms`, checking T4 per timer (the index is user_data). Returns records run. */
static uint64_t drain_for(uint64_t rt, struct per_timer *pt, size_t ntimers, uint64_t ms,
                          struct spot_record *recs, size_t cap, int *violations) {
    struct spot_completion *done = calloc(cap, sizeof *done);
    size_t ndone = 0, n = 0;
    uint64_t end = mono_ns() + ms * MS, ran = 0;
    while (mono_ns() < end) {
        CHECK_ST(spot_exchange(rt, done, ndone, recs, cap, 10 * MS, &n), SPOT_OK);
        ndone = 0;
        for (size_t i = 0; i < n; i++) {
            if (recs[i].kind != SPOT_RECORD_TICK) continue;
            size_t k = (size_t)(uintptr_t)recs[i].user_data;
            int ok = k < ntimers;
            if (ok && spot_record_begin(rt, &recs[i]) == SPOT_OK) {
                struct per_timer *p = &pt[k];
                if (recs[i].delivery_index != p->delivered + 1 ||
                    recs[i].scheduled_index <= p->scheduled ||
                    recs[i].skipped_ticks != recs[i].scheduled_index - p->scheduled - 1)
                    (*violations)++;
                p->delivered = recs[i].delivery_index;
                p->scheduled = recs[i].scheduled_index;
                done[ndone++] = (struct spot_completion){recs[i].token, SPOT_OUTCOME_OK, 0};
                ran++;
            } else {
                done[ndone++] = (struct spot_completion){recs[i].token, SPOT_OUTCOME_NOT_STARTED, 0};
            }
        }
    }
    CHECK_ST(spot_complete(rt, done, ndone), SPOT_OK);
    free(done);
    return ran;
}

static void stalled_host(void) {
    size_t ntimers = env_u64("RELIABILITY_TIMERS", 20000);
    uint64_t stall_ms = env_u64("RELIABILITY_STALL_MS", 1500);
    uint64_t rt = new_runtime(SPOT_CLOCK_REAL);
    struct per_timer *pt = calloc(ntimers, sizeof *pt);
    size_t cap = 2 * ntimers + 16;
    struct spot_record *recs = calloc(cap, sizeof *recs);
    uint64_t *owner_ids = calloc(ntimers / 2 + 1, sizeof *owner_ids);
    uint64_t *epochs = calloc(ntimers / 2 + 1, sizeof *epochs);
    for (size_t i = 0; i < ntimers; i++) {
        uint64_t owner = i / 2;
        if (i % 2 == 0) {
            owner_ids[owner] = owner;
            CHECK_ST(spot_owner_acquire(rt, owner, 0, SPOT_GATE_CONCURRENT, &epochs[owner]), SPOT_OK);
        }
        struct spot_timer_spec sp = every((1 + i % 5) * MS);
        struct spot_timer t;
        CHECK_ST(spot_timer_register(rt, owner, epochs[owner], i % 2, &sp, (void *)(uintptr_t)i, NULL, &t), SPOT_OK);
        pt[i].generation = t.generation;
    }
    int violations = 0;
    uint64_t ran1 = drain_for(rt, pt, ntimers, 300, recs, cap, &violations);
    long rss_before = rss_kib();
    sleep_ms(stall_ms); /* the host stops draining; timers keep coming due */
    long rss_stalled = rss_kib();
    struct spot_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    CHECK_ST(spot_stats(rt, &s), SPOT_OK);
    /* Everything pending, in one crossing: at most one record per timer. */
    size_t n = 0;
    CHECK_ST(spot_exchange(rt, NULL, 0, recs, cap, 0, &n), SPOT_OK);
    CHECK(n <= ntimers);
    CHECK(n > ntimers / 2);
    int dup = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)(uintptr_t)recs[i].user_data;
        if (k < ntimers && pt[k].seen_in_batch++) dup++;
    }
    CHECK(dup == 0);
    /* Run them (checking T4), then resume normal draining. */
    struct spot_completion *done = calloc(n + 1, sizeof *done);
    uint64_t max_skipped = 0;
    size_t stale_labels = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)(uintptr_t)recs[i].user_data;
        struct per_timer *p = &pt[k];
        if (spot_record_begin(rt, &recs[i]) != SPOT_OK) {
            done[i] = (struct spot_completion){recs[i].token, SPOT_OUTCOME_NOT_STARTED, 0};
            continue;
        }
        if (recs[i].delivery_index != p->delivered + 1 || recs[i].scheduled_index <= p->scheduled ||
            recs[i].skipped_ticks != recs[i].scheduled_index - p->scheduled - 1)
            violations++;
        if (recs[i].skipped_ticks > max_skipped) max_skipped = recs[i].skipped_ticks;
        /* Contract T3: tick info is computed when the record is delivered (handed over), so
         * a SkipLateTicks record that waited out the stall carries the newest tick due
         * now: about stall_ms / period skipped ticks, not the few of its publication. */
        if (recs[i].skipped_ticks + 1 < stall_ms / (1 + k % 5) / 2) stale_labels++;
        p->delivered = recs[i].delivery_index;
        p->scheduled = recs[i].scheduled_index;
        done[i] = (struct spot_completion){recs[i].token, SPOT_OUTCOME_OK, 0};
    }
    CHECK_ST(spot_complete(rt, done, n), SPOT_OK);
    free(done);
    uint64_t ran2 = drain_for(rt, pt, ntimers, 500, recs, cap, &violations);
    CHECK(violations == 0);
    CHECK(ran2 > ntimers); /* delivery resumed */
    CHECK(stale_labels == 0);
    long growth = rss_stalled - rss_before;
    CHECK(growth < 32 * 1024); /* bounded: no per-tick growth while stalled */
    CHECK(s.queue_len <= 4 * ntimers + 1024);
    end_all_and_check_identities(rt, owner_ids, epochs, (ntimers + 1) / 2, "stalled_host");
    CHECK_ST(spot_runtime_free(rt), SPOT_OK);
    free(owner_ids);
    free(epochs);
    printf("FIGURES stalled_host: timers=%zu stall_ms=%llu pending_after_stall=%zu dup=%d "
           "rss_growth_kib=%ld queue_len=%llu max_skipped=%llu stale_labels=%zu ran_before=%llu ran_after=%llu violations=%d\n",
           ntimers, (unsigned long long)stall_ms, n, dup, growth, (unsigned long long)s.queue_len,
           (unsigned long long)max_skipped, stale_labels, (unsigned long long)ran1, (unsigned long long)ran2,
           violations);
    free(pt);
    free(recs);
}

/* ---- sigstop_under_load ---------------------------------------------------------- */

#define LOAD_OWNERS 100
static int sigstop_child(int out_fd, size_t ntimers) {
    uint64_t rt = new_runtime(SPOT_CLOCK_REAL);
    const uint64_t lease = 300 * MS;
    uint64_t epoch[LOAD_OWNERS], deadline[LOAD_OWNERS], now;
    int renewing[LOAD_OWNERS];
    for (int o = 0; o < LOAD_OWNERS; o++) {
        CHECK_ST(spot_owner_acquire(rt, o, lease, SPOT_GATE_CONCURRENT, &epoch[o]), SPOT_OK);
        spot_now(rt, &now);
        deadline[o] = now + lease - 1 * MS; /* conservative: acquire set it a bit earlier */
        renewing[o] = 1;
    }
    for (size_t i = 0; i < ntimers; i++) {
        struct spot_timer_spec sp = every((2 + i % 8) * MS);
        struct spot_timer t;
        int o = (int)(i % LOAD_OWNERS);
        CHECK_ST(spot_timer_register(rt, o, epoch[o], i, &sp, (void *)(uintptr_t)o, NULL, &t), SPOT_OK);
    }
    if (write(out_fd, "R", 1) != 1) return 90;
    size_t cap = ntimers + 16;
    struct spot_record *recs = calloc(cap, sizeof *recs);
    struct spot_completion *done = calloc(cap, sizeof *done);
    size_t ndone = 0, n = 0;
    uint64_t start, last_renew, late_starts = 0, started_total = 0, started_after_expiry = 0;
    spot_now(rt, &start);
    last_renew = start;
    uint64_t first_expiry = 0;
    for (;;) {
        spot_now(rt, &now);
        if (now - start > 2500 * MS) break;
        if (now - last_renew >= 50 * MS) {
            for (int o = 0; o < LOAD_OWNERS; o++) {
                if (!renewing[o]) continue;
                uint64_t before;
                spot_now(rt, &before);
                spot_status st = spot_owner_renew(rt, o, epoch[o], lease);
                if (st == SPOT_OK) {
                    deadline[o] = before + lease; /* renew set it at or after `before` */
                } else {
                    renewing[o] = 0; /* expired while we were stopped: the authority is over */
                    if (!first_expiry) first_expiry = before;
                }
            }
            last_renew = now;
        }
        CHECK_ST(spot_exchange(rt, done, ndone, recs, cap, 5 * MS, &n), SPOT_OK);
        ndone = 0;
        for (size_t i = 0; i < n; i++) {
            if (recs[i].kind != SPOT_RECORD_TICK) continue;
            int o = (int)(uintptr_t)recs[i].user_data;
            uint64_t t_before;
            spot_now(rt, &t_before);
            if (spot_record_begin(rt, &recs[i]) == SPOT_OK) {
                started_total++;
                if (t_before > deadline[o]) late_starts++;
                if (!renewing[o]) started_after_expiry++;
                done[ndone++] = (struct spot_completion){recs[i].token, SPOT_OUTCOME_OK, 0};
            } else {
                done[ndone++] = (struct spot_completion){recs[i].token, SPOT_OUTCOME_NOT_STARTED, 0};
            }
        }
    }
    spot_complete(rt, done, ndone);
    int expired = 0;
    for (int o = 0; o < LOAD_OWNERS; o++) expired += !renewing[o];
    struct spot_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    spot_stats(rt, &s);
    printf("FIGURES sigstop_under_load: timers=%zu owners=%d expired_owners=%d started=%llu "
           "late_starts=%llu started_after_expiry=%llu dropped_authority=%llu\n",
           ntimers, LOAD_OWNERS, expired, (unsigned long long)started_total,
           (unsigned long long)late_starts, (unsigned long long)started_after_expiry,
           (unsigned long long)s.ticks_dropped_authority);
    fflush(stdout);
    spot_runtime_free(rt);
    free(recs);
    free(done);
    if (late_starts || started_after_expiry) return 1;
    if (expired != LOAD_OWNERS) return 2; /* the stop must have outlasted every lease */
    return failed_checks ? 3 : 0;
}

static void sigstop_under_load(void) {
    size_t ntimers = env_u64("RELIABILITY_TIMERS", 20000);
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        _exit(sigstop_child(pipefd[1], ntimers));
    }
    close(pipefd[1]);
    char c;
    CHECK(read(pipefd[0], &c, 1) == 1);
    sleep_ms(400); /* under load, leases renewed */
    kill(pid, SIGSTOP);
    sleep_ms(900); /* past every 300 ms lease */
    kill(pid, SIGCONT);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
        fprintf(stderr, "    sigstop child exited %d\n", WEXITSTATUS(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(pipefd[0]);
}

/* ---- concurrent_hosts -------------------------------------------------------------- */

struct chost {
    uint64_t rt;
    atomic_int *stop;
    uint64_t ran;
    int id;
    uint64_t epoch; /* churners: their owner's authority */
};

static void *exchanger(void *arg) {
    struct chost *h = arg;
    struct spot_record recs[64];
    struct spot_completion done[64];
    size_t ndone = 0, n = 0;
    while (!atomic_load(h->stop)) {
        if (spot_exchange(h->rt, done, ndone, recs, 64, 5 * MS, &n) != SPOT_OK) break;
        ndone = 0;
        for (size_t i = 0; i < n; i++) {
            if (recs[i].kind != SPOT_RECORD_TICK) continue;
            /* the call-free re-check a managed host uses */
            uint64_t live = __atomic_load_n(recs[i].live_word, __ATOMIC_ACQUIRE);
            int ok = live == recs[i].live_value && spot_record_begin(h->rt, &recs[i]) == SPOT_OK;
            if (ok) h->ran++;
            done[ndone++] = (struct spot_completion){recs[i].token,
                                                     ok ? SPOT_OUTCOME_OK : SPOT_OUTCOME_NOT_STARTED, 0};
        }
    }
    spot_complete(h->rt, done, ndone);
    return NULL;
}

static void *churner(void *arg) {
    struct chost *h = arg;
    uint64_t epoch;
    CHECK_ST(spot_owner_acquire(h->rt, 100 + h->id, 0, SPOT_GATE_CONCURRENT, &epoch), SPOT_OK);
    h->epoch = epoch;
    struct spot_timer ts[256];
    memset(ts, 0, sizeof ts);
    unsigned seed = 1234u + (unsigned)h->id;
    while (!atomic_load(h->stop)) {
        unsigned k = (unsigned)rand_r(&seed) % 256;
        uint32_t done = 0, reason = 0;
        switch (rand_r(&seed) % 4) {
        case 0:
        case 1: {
            struct spot_timer_spec sp = every((uint64_t)(1 + rand_r(&seed) % 3) * MS);
            CHECK_ST(spot_timer_register(h->rt, 100 + h->id, epoch, k, &sp, NULL, NULL, &ts[k]), SPOT_OK);
            h->ran++;
            break;
        }
        case 2:
            if (ts[k].generation) spot_timer_cancel_async(h->rt, ts[k], k, &done, &reason);
            break;
        default:
            if (ts[k].generation) spot_timer_cancel(h->rt, ts[k], 100 * MS, &reason);
            break;
        }
    }
    return NULL;
}

static void concurrent_hosts(void) {
    uint64_t rt = new_runtime(SPOT_CLOCK_REAL);
    atomic_int stop = 0;
    struct chost hs[6];
    pthread_t th[6];
    for (int i = 0; i < 6; i++) {
        hs[i] = (struct chost){rt, &stop, 0, i, 0};
        pthread_create(&th[i], NULL, i < 4 ? exchanger : churner, &hs[i]);
    }
    sleep_ms(env_u64("RELIABILITY_CONCURRENT_MS", 2000));
    atomic_store(&stop, 1);
    uint64_t ran = 0, ops = 0;
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        if (i < 4) ran += hs[i].ran; else ops += hs[i].ran;
    }
    CHECK(ran > 0);
    uint64_t owners[2] = {104, 105}, epochs[2] = {hs[4].epoch, hs[5].epoch};
    end_all_and_check_identities(rt, owners, epochs, 2, "concurrent_hosts");
    CHECK_ST(spot_runtime_free(rt), SPOT_OK);
    printf("FIGURES concurrent_hosts: exchangers=4 churners=2 callbacks_run=%llu registrations=%llu\n",
           (unsigned long long)ran, (unsigned long long)ops);
}

struct test {
    const char *name;
    void (*fn)(void);
};

int main(int argc, char **argv) {
    static const struct test tests[] = {
        {"forever_handler", forever_handler},
        {"failing_release", failing_release},
        {"stalled_host", stalled_host},
        {"sigstop_under_load", sigstop_under_load},
        {"concurrent_hosts", concurrent_hosts},
    };
    int passed = 0, failed = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        int selected = argc < 2;
        for (int a = 1; a < argc; a++) selected |= strcmp(argv[a], tests[i].name) == 0;
        if (!selected) continue;
        failed_checks = 0;
        uint64_t t0 = mono_ns();
        tests[i].fn();
        printf("%s %s (%.2f s)\n", failed_checks ? "FAIL" : "ok  ", tests[i].name,
               (mono_ns() - t0) / 1e9);
        fflush(stdout);
        if (failed_checks) failed++; else passed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
