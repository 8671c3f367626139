/* Helpers shared by the C harnesses of the benchmark suite (bench/suite.py drives them). */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>
#include <sys/resource.h>

static inline uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t boot_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

static inline long rss_bytes(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) { kib = atol(line + 6); break; }
    fclose(f);
    return kib * 1024;
}

/* Deadlines 60..120 s away, pseudo-random (xorshift): nothing fires during a run. */
static inline uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
    return *s;
}
static inline uint64_t rng_deadline_ms(uint64_t *s) { return 60000 + rng_next(s) % 60000; }
/* W7's deadlines: 1..60 s away. */
static inline uint64_t rng_w7_deadline_ms(uint64_t *s) { return 1000 + rng_next(s) % 59000; }

/* Lateness histogram, 1 us buckets up to 2 s. */
#define HIST_US 2000000
typedef struct { uint32_t *b; uint64_t count; } hist_t;
static inline void hist_init(hist_t *h) { h->b = calloc(HIST_US + 1, sizeof(uint32_t)); h->count = 0; }
static inline void hist_add(hist_t *h, int64_t late_ns) {
    uint64_t us = late_ns < 0 ? 0 : (uint64_t)late_ns / 1000;
    if (us > HIST_US) us = HIST_US;
    __atomic_fetch_add(&h->b[us], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&h->count, 1, __ATOMIC_RELAXED);
}
static inline double hist_pct(const hist_t *h, double p) {
    if (!h->count) return NAN;
    uint64_t want = (uint64_t)ceil(p / 100.0 * (double)h->count), acc = 0;
    if (want < 1) want = 1;
    for (uint64_t i = 0; i <= HIST_US; i++) { acc += h->b[i]; if (acc >= want) return (double)i; }
    return HIST_US;
}

/* A JSON number, or null when there is none (no lateness recorded). */
static inline void print_num(const char *key, double v) {
    if (v != v) printf("\"%s\":null,", key); else printf("\"%s\":%.0f,", key, v);
}

static inline void print_w2(uint64_t records, double cpu, const hist_t *h, double crossings) {
    double rps = records / (cpu > 1e-9 ? cpu : 1e-9);
    printf("{\"records\":%llu,\"cpu_s\":%.4f,\"records_per_cpu_s\":%.1f,\"cpu_ns_per_record\":%.1f,",
           (unsigned long long)records, cpu, rps, 1e9 / rps);
    print_num("lat_p50_us", hist_pct(h, 50));
    print_num("lat_p99_us", hist_pct(h, 99));
    print_num("lat_p999_us", hist_pct(h, 99.9));
    printf("\"crossings_per_record\":");
    if (crossings < 0) printf("null}\n"); else printf("%.6f}\n", crossings);
}

#endif
