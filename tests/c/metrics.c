/* The runtime's lateness quantiles and its Prometheus exposition through the C ABI. */
#include <stddef.h>
#include <stdlib.h>

#include "contract.h"
#include "util.h"

static void metrics_lateness_quantile_is_hand_over_minus_due(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_SERIAL);
    struct spot_record r[4];
    uint64_t ns = 0;
    CHECK_OK(spot_lateness_quantile(rt, 0.5, &ns));
    CHECK_EQ_U64(ns, UINT64_MAX); /* nothing recorded yet */
    (void)reg(rt, 1, ep, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK_OK(spot_advance(rt, 25 * MS)); /* tick 2 (due 20 ms) handed over at 25 ms */
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_EQ_U64(r[0].scheduled_index, 2);
    CHECK_OK(spot_lateness_quantile(rt, 1.0, &ns));
    CHECK(ns > 5 * MS && ns <= 5 * MS / 4 * 5);
    CHECK_ST(spot_lateness_quantile(rt, 1.5, &ns), SPOT_E_INVALID_ARGUMENT);
    CHECK_ST(spot_lateness_quantile(rt, 0.5, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r + 1, 3), 0);
    CHECK_OK(spot_runtime_free(rt));
}

/* Finds the sample line `name ` and returns its value (-1 when absent). */
static double sample(const char *text, const char *name) {
    size_t n = strlen(name);
    const char *p = text;
    while ((p = strstr(p, name)) != NULL) {
        if ((p == text || p[-1] == '\n') && p[n] == ' ') return strtod(p + n + 1, NULL);
        p += n;
    }
    return -1;
}

static void metrics_prometheus_exposition_parses(void) {
    uint64_t rt = manual_runtime();
    uint64_t ep = owner(rt, 1, SPOT_GATE_SERIAL);
    struct spot_record r[4];
    (void)reg(rt, 1, ep, 1, spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
    CHECK_OK(spot_advance(rt, 10 * MS));
    CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
    CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r + 1, 3), 0);
    char small[16];
    size_t len = 0;
    CHECK_OK(spot_prometheus(rt, "myapp_timers", small, sizeof small, &len));
    CHECK(len >= sizeof small);          /* cut: the full length is reported */
    CHECK(strlen(small) == sizeof small - 1);
    char *buf = malloc(len + 1);
    size_t len2 = 0;
    CHECK_OK(spot_prometheus(rt, "myapp_timers", buf, len + 1, &len2));
    CHECK_EQ_U64(len2, len);
    CHECK_EQ_U64(strlen(buf), len);
    CHECK(strstr(buf, "# TYPE myapp_timers_live_timers gauge\n") != NULL);
    CHECK(strstr(buf, "# TYPE myapp_timers_records_published_total counter\n") != NULL);
    CHECK(strstr(buf, "# TYPE myapp_timers_lateness_seconds histogram\n") != NULL);
    CHECK(sample(buf, "myapp_timers_live_timers") == 1);
    CHECK(sample(buf, "myapp_timers_records_published_total") == 1);
    CHECK(sample(buf, "myapp_timers_lateness_seconds_bucket{le=\"+Inf\"}") == 1);
    CHECK(sample(buf, "myapp_timers_lateness_seconds_count") == 1);
    /* every non-comment line is "name value" with a number */
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        char *sp = strrchr(line, ' ');
        CHECK(sp != NULL);
        if (!sp) break;
        char *end = NULL;
        (void)strtod(sp + 1, &end);
        CHECK(end != NULL && *end == '\0');
    }
    free(buf);
    CHECK_ST(spot_prometheus(rt, "9bad", small, sizeof small, &len), SPOT_E_INVALID_ARGUMENT);
    CHECK_ST(spot_prometheus(rt, NULL, NULL, 8, &len), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_prometheus(rt, NULL, small, 0, &len), SPOT_E_INVALID_ARGUMENT);
    CHECK_OK(spot_runtime_free(rt));
    CHECK_ST(spot_prometheus(rt, NULL, small, sizeof small, &len), SPOT_E_INVALID_HANDLE);
}

/* One schema: every stats field of the core is exposed (spot_prometheus writes the core's
 * own list) and has its place in struct spot_stats. A field added in Rust only makes the
 * two counts differ. */
static void metrics_every_core_stats_field_is_in_struct_spot_stats(void) {
    uint64_t rt = manual_runtime();
    size_t len = 0;
    char probe[8];
    CHECK_OK(spot_prometheus(rt, "x", probe, sizeof probe, &len));
    char *buf = malloc(len + 1);
    CHECK_OK(spot_prometheus(rt, "x", buf, len + 1, &len));
    size_t families = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "# TYPE x_", 9) == 0 && strncmp(line, "# TYPE x_lateness_seconds ", 26) != 0) families++;
    }
    free(buf);
    size_t fields = (sizeof(struct spot_stats) - offsetof(struct spot_stats, scheduler_threads)) / sizeof(uint64_t);
    CHECK_EQ_U64(families, fields);
    CHECK_OK(spot_runtime_free(rt));
}

void run_metrics_tests(void) {
    RUN(metrics_every_core_stats_field_is_in_struct_spot_stats);
    RUN(metrics_lateness_quantile_is_hand_over_minus_due);
    RUN(metrics_prometheus_exposition_parses);
}
