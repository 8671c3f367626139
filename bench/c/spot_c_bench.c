/* spot-timer through its C ABI (libspot_timer), for the C-level comparison with libuv and
 * for W5 (boundary crossings versus batch size).
 *
 *   spot_c_bench w1 <n>                              arm (spot_timer_register) + cancel
 *                                                    (spot_timer_cancel_async), batch-callback delivery
 *   spot_c_bench w2 <n> <seconds> <period_ms> [batch [same|spread [latency|noop]]]
 *                                                    periodic timers sharing one period (and phase,
 *                                                    or phases spread over it), delivered with
 *                                                    spot_exchange(capacity = batch, default 1024);
 *                                                    lateness (W3) unless the handler is noop;
 *                                                    crossings
 *   spot_c_bench w4 <n>                              RSS per live timer
 *   spot_c_bench w6 <n> <threads>                    registration from 1..k threads, one runtime
 *   spot_c_bench w7 <n> <pairs> [cancel|rearm]       steady churn: n live timers, then pairs of
 *                                                    "cancel a random live timer, arm it again"
 *                                                    (spot_timer_cancel + spot_timer_register, or
 *                                                    spot_timer_rearm naming the one it replaces)
 * Owners: 100 timers each, SPOT_GATE_CONCURRENT. One JSON object on stdout.
 */
#include "common.h"
#include <pthread.h>
#include <unistd.h>
#include <sched.h>
#include "spot_timer.h"

#define PER_OWNER 100
#define CHECK(x) do { spot_status s_ = (x); if (s_ != SPOT_OK) { char m_[256]; spot_last_error(m_, sizeof m_); \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, spot_status_name(s_), m_); exit(1); } } while (0)

/* The handler of the runtimes whose records only the flush sentinel produces: it runs and
 * does nothing. (NOT_STARTED would mean "never ran": the runtime offers the tick again, and
 * a one-shot sentinel completed that way went round the scheduler thread for the rest of
 * the run, busy on the other core while W1 cancelled.) */
static void discard_batch(void *env, const struct spot_record *r, size_t n, struct spot_completion *c, size_t *nc) {
    (void)env;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].kind == SPOT_RECORD_TICK) c[k++] = (struct spot_completion){r[i].token, SPOT_OUTCOME_OK, 0};
    *nc = k;
}

static uint64_t new_runtime(int callback) {
    struct spot_runtime_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.clock = SPOT_CLOCK_REAL;
    cfg.delivery = callback ? SPOT_DELIVERY_CALLBACK : SPOT_DELIVERY_EXCHANGE;
    cfg.callback = callback ? discard_batch : NULL;
    uint64_t rt;
    CHECK(spot_runtime_new(&cfg, &rt));
    return rt;
}

static uint64_t *acquire_owners(uint64_t rt, size_t n, uint64_t base) {
    size_t no = (n + PER_OWNER - 1) / PER_OWNER;
    uint64_t *ep = malloc((no ? no : 1) * sizeof *ep);
    for (size_t i = 0; i < no; i++) CHECK(spot_owner_acquire(rt, base + i, 0, SPOT_GATE_CONCURRENT, &ep[i]));
    return ep;
}

/* Fills the caller's spec in place: returning the struct by value made GCC build it on the
 * stack and copy it with loads wider than the stores that wrote it (store-forwarding
 * stalls in the harness, not in the runtime). */
static void one_shot(struct spot_timer_spec *s, uint64_t ns) {
    memset(s, 0, sizeof *s);
    s->struct_size = sizeof *s;
    s->policy = SPOT_POLICY_SKIP_LATE_TICKS;
    s->period_ns = 0;
    s->first_due_ns = ns;
    s->max_catch_up_ticks = 1;
}

static struct spot_stats stats(uint64_t rt) {
    struct spot_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    CHECK(spot_stats(rt, &st));
    return st;
}

/* Makes the scheduler thread apply every command sent so far and waits for it: commands
 * that do not move the earliest deadline do not wake it (lazy), so a sentinel timer due
 * at once (owner 0) is registered; the commands are applied in order before it fires. */
static uint64_t g_sentinel_key;
static void flush_sched(uint64_t rt) {
    static uint64_t ep0;
    static uint64_t rt0;
    if (rt0 != rt) { CHECK(spot_owner_acquire(rt, 0, 0, SPOT_GATE_CONCURRENT, &ep0)); rt0 = rt; }
    uint64_t before = stats(rt).records_published;
    struct spot_timer_spec sp;
    one_shot(&sp, 1);
    struct spot_timer t;
    CHECK(spot_timer_register(rt, 0, ep0, g_sentinel_key++, &sp, NULL, NULL, &t));
    while (stats(rt).records_published <= before) sched_yield();
}
#define wait_registered(rt, n) flush_sched(rt)
#define wait_ended(rt, n) flush_sched(rt)

static void w1_once(size_t n, uint64_t seed, double *arm, double *cancel) {
    uint64_t rt = new_runtime(1);
    uint64_t *ep = acquire_owners(rt, n, 1);
    struct spot_timer *ts = malloc(n * sizeof *ts);
    uint64_t *dl = malloc(n * sizeof *dl), s = seed | 1;
    for (size_t i = 0; i < n; i++) dl[i] = rng_deadline_ms(&s) * 1000000ull;
    uint64_t t0 = mono_ns();
    for (size_t i = 0; i < n; i++) {
        struct spot_timer_spec sp;
        one_shot(&sp, dl[i]);
        CHECK(spot_timer_register(rt, 1 + i / PER_OWNER, ep[i / PER_OWNER], i, &sp, NULL, NULL, &ts[i]));
    }
    wait_registered(rt, n); /* the scheduler thread's share */
    uint64_t t1 = mono_ns();
    for (size_t i = 0; i < n; i++) {
        uint32_t done, reason;
        CHECK(spot_timer_cancel_async(rt, ts[i], i, &done, &reason));
    }
    wait_ended(rt, n);
    uint64_t t2 = mono_ns();
    CHECK(spot_runtime_free(rt));
    free(ts); free(dl); free(ep);
    *arm = (double)(t1 - t0) / n;
    *cancel = (double)(t2 - t1) / n;
}

static void w7_once(size_t n, size_t m, int rearm, uint64_t seed, double *pair, double *cpu) {
    uint64_t rt = new_runtime(1);
    uint64_t *ep = acquire_owners(rt, n, 1);
    struct spot_timer *ts = malloc(n * sizeof *ts);
    uint64_t s = seed | 1;
    uint32_t *pick = malloc(m * sizeof *pick);
    uint64_t *dl = malloc(m * sizeof *dl);
    for (size_t i = 0; i < n; i++) {
        struct spot_timer_spec sp;
        one_shot(&sp, rng_w7_deadline_ms(&s) * 1000000ull);
        CHECK(spot_timer_register(rt, 1 + i / PER_OWNER, ep[i / PER_OWNER], i, &sp, NULL, NULL, &ts[i]));
    }
    for (size_t j = 0; j < m; j++) {
        pick[j] = (uint32_t)(rng_next(&s) % n);
        dl[j] = rng_w7_deadline_ms(&s) * 1000000ull;
    }
    wait_registered(rt, n);
    double c0 = cpu_s();
    uint64_t t0 = mono_ns();
    for (size_t j = 0; j < m; j++) {
        size_t i = pick[j];
        struct spot_timer_spec sp;
        one_shot(&sp, dl[j]);
        if (rearm) {
            CHECK(spot_timer_rearm(rt, 1 + i / PER_OWNER, ep[i / PER_OWNER], ts[i], i, &sp, NULL, NULL, &ts[i]));
        } else {
            uint32_t reason;
            CHECK(spot_timer_cancel(rt, ts[i], 0, &reason));
            CHECK(spot_timer_register(rt, 1 + i / PER_OWNER, ep[i / PER_OWNER], i, &sp, NULL, NULL, &ts[i]));
        }
    }
    wait_registered(rt, n);
    uint64_t t1 = mono_ns();
    *cpu = (cpu_s() - c0) * 1e9 / (double)m;
    *pair = (double)(t1 - t0) / (double)m;
    CHECK(spot_runtime_free(rt));
    free(ts); free(pick); free(dl); free(ep);
}

/* W2's variants (see the usage line): phases spread evenly over the period, and a handler
 * that does nothing but count (the runtime's own cost per record). */
static int w2_spread = 0, w2_noop = 0;

static uint64_t w2_offset(uint64_t i, size_t n, uint64_t period) {
    return w2_spread ? (uint64_t)((double)period * (double)i / (double)n) : 0;
}

static void w2(size_t n, double seconds, uint64_t period_ms, size_t batch) {
    uint64_t rt = new_runtime(0);
    uint64_t *ep = acquire_owners(rt, n, 1);
    uint64_t period = period_ms * 1000000ull;
    hist_t h;
    hist_init(&h);
    uint64_t now0;
    CHECK(spot_now(rt, &now0));
    uint64_t start = now0 + 200000000ull + 5000ull * n; /* runtime clock (CLOCK_BOOTTIME) */
    struct spot_timer t;
    for (size_t i = 0; i < n; i++) {
        uint64_t now;
        CHECK(spot_now(rt, &now));
        uint64_t first = start + w2_offset(i, n, period);
        struct spot_timer_spec sp;
        one_shot(&sp, first > now ? first - now : 0);
        sp.period_ns = period;
        CHECK(spot_timer_register(rt, 1 + i / PER_OWNER, ep[i / PER_OWNER], i, &sp, NULL, NULL, &t));
    }
    struct spot_record *recs = malloc(batch * sizeof *recs);
    struct spot_completion *comp = malloc(batch * sizeof *comp);
    size_t nc = 0, got;
    uint64_t t_begin = start + 500000000ull, t_end = t_begin + (uint64_t)(seconds * 1e9);
    int measuring = 0;
    double c0 = 0;
    uint64_t records = 0;
    struct spot_stats s0 = stats(rt);
    for (;;) {
        uint64_t now = boot_ns();
        if (!measuring && now >= t_begin) { measuring = 1; c0 = cpu_s(); s0 = stats(rt); }
        if (now >= t_end) break;
        CHECK(spot_exchange(rt, comp, nc, recs, batch, 5000000, &got));
        nc = 0;
        uint64_t batch_now = boot_ns(); /* the real clock is CLOCK_BOOTTIME: one read per batch */
        for (size_t i = 0; i < got; i++) {
            const struct spot_record *r = &recs[i];
            if (r->kind != SPOT_RECORD_TICK) continue;
            /* the call-free start check: lease running, and claim the start */
            uint64_t expected = r->live_value;
            if (batch_now < *r->lease_word &&
                __atomic_compare_exchange_n(r->live_word, &expected, r->started_value, 0,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                /* the handler: count, lateness against the nominal due time */
                if (measuring) {
                    if (!w2_noop)
                        hist_add(&h, (int64_t)(boot_ns() - (start + w2_offset(r->key, n, period) +
                                                           (r->scheduled_index - 1) * period)));
                    records++;
                }
                comp[nc++] = (struct spot_completion){r->token, SPOT_OUTCOME_OK, 0};
            } else {
                comp[nc++] = (struct spot_completion){r->token, SPOT_OUTCOME_NOT_STARTED, 0};
            }
        }
    }
    double cpu = cpu_s() - c0;
    struct spot_stats s1 = stats(rt);
    double rec = (double)(s1.records_received - s0.records_received);
    print_w2(records, cpu, &h, rec > 0 ? (double)(s1.host_crossings - s0.host_crossings) / rec : -1);
    CHECK(spot_runtime_free(rt));
}

static void w4(size_t n) {
    uint64_t s = 99;
    long before = rss_bytes();
    uint64_t rt = new_runtime(1);
    uint64_t *ep = acquire_owners(rt, n, 1);
    struct spot_timer *ts = malloc(n * sizeof *ts);
    for (size_t i = 0; i < n; i++) {
        struct spot_timer_spec sp;
        one_shot(&sp, rng_deadline_ms(&s) * 1000000ull);
        CHECK(spot_timer_register(rt, 1 + i / PER_OWNER, ep[i / PER_OWNER], i, &sp, NULL, NULL, &ts[i]));
    }
    wait_registered(rt, n);
    struct timespec d = {0, 300000000};
    nanosleep(&d, NULL);
    long after = rss_bytes();
    /* the host keeps one struct spot_timer per timer (included in bytes_per_timer) */
    printf("{\"rss_before\":%ld,\"rss_after\":%ld,\"bytes_per_timer\":%.1f,\"host_handle_bytes\":%zu,"
           "\"runtime_bytes_per_timer\":%.1f}\n",
           before, after, (double)(after - before) / (double)n, sizeof(struct spot_timer),
           (double)(after - before) / (double)n - (double)sizeof(struct spot_timer));
    fflush(stdout);
    _exit(0);
}

typedef struct { uint64_t rt; size_t n; uint64_t base, seed; uint64_t *ep; pthread_barrier_t *b; uint64_t t0; } w6arg_t;
static void *w6_thread(void *v) {
    w6arg_t *a = v;
    struct spot_timer *ts = malloc(a->n * sizeof *ts);
    uint64_t *dl = malloc(a->n * sizeof *dl), s = a->seed;
    for (size_t i = 0; i < a->n; i++) dl[i] = rng_deadline_ms(&s) * 1000000ull;
    pthread_barrier_wait(a->b);
    a->t0 = mono_ns();
    for (size_t i = 0; i < a->n; i++) {
        struct spot_timer_spec sp;
        one_shot(&sp, dl[i]);
        CHECK(spot_timer_register(a->rt, a->base + i / PER_OWNER, a->ep[i / PER_OWNER], i, &sp, NULL, NULL, &ts[i]));
    }
    return NULL;
}
static void w6(size_t n, int threads) {
    uint64_t rt = new_runtime(1);
    size_t per = n / threads;
    pthread_barrier_t b;
    pthread_barrier_init(&b, NULL, threads);
    pthread_t th[16];
    w6arg_t a[16];
    for (int i = 0; i < threads; i++) {
        uint64_t base = 1 + (uint64_t)i * 1000000;
        a[i] = (w6arg_t){rt, per, base, 1000 + i, acquire_owners(rt, per, base), &b, 0};
    }
    for (int i = 0; i < threads; i++) pthread_create(&th[i], NULL, w6_thread, &a[i]);
    uint64_t t0 = UINT64_MAX;
    for (int i = 0; i < threads; i++) { pthread_join(th[i], NULL); if (a[i].t0 < t0) t0 = a[i].t0; }
    wait_registered(rt, per * threads);
    uint64_t t1 = mono_ns();
    size_t total = per * threads;
    printf("{\"ns_per_register\":%.2f,\"registrations_per_s\":%.0f}\n", (double)(t1 - t0) / total,
           total / ((t1 - t0) * 1e-9));
    CHECK(spot_runtime_free(rt));
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: spot_c_bench w1|w2|w4|w6|w7 <n> ...\n"); return 2; }
    size_t n = strtoull(argv[2], NULL, 10);
    if (!strcmp(argv[1], "w1")) {
        double arm, cancel;
        w1_once(n < 20000 ? n : 20000, 7, &arm, &cancel); /* warm-up */
        w1_once(n, 12345, &arm, &cancel);
        printf("{\"arm_ns\":%.2f,\"cancel_ns\":%.2f,\"arm_cancel_ns\":%.2f,\"allocs_per_arm\":null,\"allocs_per_cancel\":null}\n",
               arm, cancel, arm + cancel);
    } else if (!strcmp(argv[1], "w2") && argc >= 5) {
        w2_spread = argc >= 7 && !strcmp(argv[6], "spread");
        w2_noop = argc >= 8 && !strcmp(argv[7], "noop");
        w2(n, atof(argv[3]), strtoull(argv[4], NULL, 10), argc >= 6 ? strtoull(argv[5], NULL, 10) : 1024);
    } else if (!strcmp(argv[1], "w7") && argc >= 4) {
        size_t m = strtoull(argv[3], NULL, 10);
        int rearm = argc >= 5 && !strcmp(argv[4], "rearm");
        double pair, cpu;
        w7_once(n < 20000 ? n : 20000, m < 20000 ? m : 20000, rearm, 7, &pair, &cpu); /* warm-up */
        w7_once(n, m, rearm, 12345, &pair, &cpu);
        printf("{\"pair_ns\":%.2f,\"cpu_ns_per_pair\":%.2f}\n", pair, cpu);
    } else if (!strcmp(argv[1], "w4")) {
        w4(n);
    } else if (!strcmp(argv[1], "w6") && argc >= 4) {
        w6(n, atoi(argv[3]));
    } else {
        return 2;
    }
    return 0;
}
