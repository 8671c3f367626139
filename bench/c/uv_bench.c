/* libuv peer of the benchmark suite: uv_timer_t on one uv_loop_t, as libuv's guide uses it.
 *
 *   uv_bench w1 <n>                       arm (uv_timer_init + uv_timer_start) + cancel (uv_timer_stop)
 *   uv_bench w2 <n> <seconds> <period_ms> periodic timers (fixed rate: each callback re-arms
 *                                         for its next nominal due time), lateness (W3)
 *   uv_bench w4 <n>                       RSS per live timer
 *   uv_bench w6 <n> <threads>             registration from 1..k threads; a uv_loop_t is not
 *                                         thread-safe, so each thread runs its own loop
 * One JSON object on stdout.
 */
#include "common.h"
#include <pthread.h>
#include <uv.h>

static double ns_per(uint64_t ns, size_t n) { return (double)ns / (double)n; }
static void noop_cb(uv_timer_t *t) { (void)t; }

static void w1_once(size_t n, uint64_t seed, double *arm, double *cancel) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    uv_timer_t *ts = malloc(n * sizeof *ts);
    uint64_t *dl = malloc(n * sizeof *dl), s = seed | 1;
    for (size_t i = 0; i < n; i++) dl[i] = rng_deadline_ms(&s);
    uint64_t t0 = mono_ns();
    for (size_t i = 0; i < n; i++) {
        uv_timer_init(&loop, &ts[i]);
        uv_timer_start(&ts[i], noop_cb, dl[i], 0);
    }
    uint64_t t1 = mono_ns();
    for (size_t i = 0; i < n; i++) uv_timer_stop(&ts[i]);
    uint64_t t2 = mono_ns();
    for (size_t i = 0; i < n; i++) uv_close((uv_handle_t *)&ts[i], NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    free(ts); free(dl);
    *arm = ns_per(t1 - t0, n);
    *cancel = ns_per(t2 - t1, n);
}

/* ---- W7: steady churn; uv_timer_start on an active timer moves it (libuv's own reset). */
static void w7_once(size_t n, size_t m, uint64_t seed, double *pair, double *cpu) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    uv_timer_t *ts = malloc(n * sizeof *ts);
    uint64_t s = seed | 1;
    uint32_t *pick = malloc(m * sizeof *pick);
    uint64_t *dl = malloc(m * sizeof *dl);
    for (size_t i = 0; i < n; i++) {
        uv_timer_init(&loop, &ts[i]);
        uv_timer_start(&ts[i], noop_cb, rng_w7_deadline_ms(&s), 0);
    }
    for (size_t j = 0; j < m; j++) {
        pick[j] = (uint32_t)(rng_next(&s) % n);
        dl[j] = rng_w7_deadline_ms(&s);
    }
    double c0 = cpu_s();
    uint64_t t0 = mono_ns();
    for (size_t j = 0; j < m; j++) uv_timer_start(&ts[pick[j]], noop_cb, dl[j], 0);
    uint64_t t1 = mono_ns();
    *cpu = (cpu_s() - c0) * 1e9 / (double)m;
    *pair = ns_per(t1 - t0, m);
    for (size_t i = 0; i < n; i++) uv_close((uv_handle_t *)&ts[i], NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    free(ts); free(pick); free(dl);
}

/* ---- W2 */
typedef struct { uv_timer_t t; uint64_t k; } ptimer_t;
static uint64_t g_start_ms, g_period_ms, g_records;
static int g_measuring;
static hist_t g_hist;
static uint64_t g_start_mono_ns;

static void periodic_cb(uv_timer_t *t) {
    ptimer_t *p = (ptimer_t *)t;
    uint64_t due_ns = g_start_mono_ns + p->k * g_period_ms * 1000000ull;
    uint64_t now = mono_ns();
    if (g_measuring) { hist_add(&g_hist, (int64_t)(now - due_ns)); g_records++; }
    /* fixed rate, skipping late ticks */
    uint64_t k = p->k + 1;
    uint64_t late_k = (now - g_start_mono_ns) / (g_period_ms * 1000000ull) + 1;
    if (late_k > k) k = late_k;
    p->k = k;
    uint64_t due_ms = g_start_ms + k * g_period_ms;
    uint64_t now_ms = uv_now(t->loop);
    uv_timer_start(t, periodic_cb, due_ms > now_ms ? due_ms - now_ms : 0, 0);
}

static double g_cpu0, g_cpu1;
static void begin_cb(uv_timer_t *t) { (void)t; g_measuring = 1; g_cpu0 = cpu_s(); }
static void end_cb(uv_timer_t *t) { g_measuring = 0; g_cpu1 = cpu_s(); uv_stop(t->loop); }

static void w2(size_t n, double seconds, uint64_t period_ms) {
    uv_loop_t *loop = uv_default_loop();
    hist_init(&g_hist);
    g_period_ms = period_ms;
    uv_update_time(loop);
    uint64_t lead_ms = 200 + n / 200;
    g_start_ms = uv_now(loop) + lead_ms;
    g_start_mono_ns = mono_ns() + lead_ms * 1000000ull;
    ptimer_t *ps = calloc(n, sizeof *ps);
    for (size_t i = 0; i < n; i++) {
        uv_timer_init(loop, &ps[i].t);
        ps[i].k = 0;
        uv_timer_start(&ps[i].t, periodic_cb, lead_ms, 0);
    }
    uv_timer_t tb, te;
    uv_timer_init(loop, &tb); uv_timer_init(loop, &te);
    uv_timer_start(&tb, begin_cb, lead_ms + 500, 0);
    uv_timer_start(&te, end_cb, lead_ms + 500 + (uint64_t)(seconds * 1000), 0);
    uv_run(loop, UV_RUN_DEFAULT);
    print_w2(g_records, g_cpu1 - g_cpu0, &g_hist, -1);
}

static void w4(size_t n) {
    uint64_t s = 99;
    long before = rss_bytes();
    uv_loop_t *loop = uv_default_loop();
    uv_timer_t *ts = malloc(n * sizeof *ts);
    for (size_t i = 0; i < n; i++) {
        uv_timer_init(loop, &ts[i]);
        uv_timer_start(&ts[i], noop_cb, rng_deadline_ms(&s), 0);
    }
    long after = rss_bytes();
    printf("{\"rss_before\":%ld,\"rss_after\":%ld,\"bytes_per_timer\":%.1f}\n", before, after,
           (double)(after - before) / (double)n);
}

/* ---- W6 */
typedef struct { size_t n; uint64_t seed; pthread_barrier_t *b; uint64_t t0, t1; } w6arg_t;
static void *w6_thread(void *v) {
    w6arg_t *a = v;
    uv_loop_t loop;
    uv_loop_init(&loop);
    uv_timer_t *ts = malloc(a->n * sizeof *ts);
    uint64_t *dl = malloc(a->n * sizeof *dl), s = a->seed;
    for (size_t i = 0; i < a->n; i++) dl[i] = rng_deadline_ms(&s);
    pthread_barrier_wait(a->b);
    a->t0 = mono_ns();
    for (size_t i = 0; i < a->n; i++) {
        uv_timer_init(&loop, &ts[i]);
        uv_timer_start(&ts[i], noop_cb, dl[i], 0);
    }
    a->t1 = mono_ns();
    return NULL;
}
static void w6(size_t n, int threads) {
    pthread_barrier_t b;
    pthread_barrier_init(&b, NULL, threads);
    pthread_t th[16];
    w6arg_t a[16];
    for (int i = 0; i < threads; i++) {
        a[i] = (w6arg_t){n / threads, 1000 + i, &b, 0, 0};
        pthread_create(&th[i], NULL, w6_thread, &a[i]);
    }
    uint64_t t0 = UINT64_MAX, t1 = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        if (a[i].t0 < t0) t0 = a[i].t0;
        if (a[i].t1 > t1) t1 = a[i].t1;
    }
    size_t total = (n / threads) * threads;
    printf("{\"ns_per_register\":%.2f,\"registrations_per_s\":%.0f}\n", ns_per(t1 - t0, total),
           total / ((t1 - t0) * 1e-9));
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: uv_bench w1|w2|w4|w6|w7 <n> ...\n"); return 2; }
    size_t n = strtoull(argv[2], NULL, 10);
    if (!strcmp(argv[1], "w1")) {
        double arm, cancel;
        w1_once(n < 20000 ? n : 20000, 7, &arm, &cancel); /* warm-up */
        w1_once(n, 12345, &arm, &cancel);
        printf("{\"arm_ns\":%.2f,\"cancel_ns\":%.2f,\"arm_cancel_ns\":%.2f,\"allocs_per_arm\":0,\"allocs_per_cancel\":0}\n",
               arm, cancel, arm + cancel);
    } else if (!strcmp(argv[1], "w2") && argc >= 5) {
        w2(n, atof(argv[3]), strtoull(argv[4], NULL, 10));
    } else if (!strcmp(argv[1], "w7") && argc >= 4) {
        size_t m = strtoull(argv[3], NULL, 10);
        double pair, cpu;
        w7_once(n < 20000 ? n : 20000, m < 20000 ? m : 20000, 7, &pair, &cpu); /* warm-up */
        w7_once(n, m, 12345, &pair, &cpu);
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
