/* The shared result table (tests/vectors/results.txt), asserted through the C ABI. The
 * Rust, C++, Python and .NET suites read the same file. The table is found at
 * $SPOT_RESULT_TABLE, else at tests/vectors/results.txt from the working directory (the
 * repository root under `make test-c`). */
#include <stdlib.h>

#include "contract.h"
#include "util.h"

/* "E_TIMEOUT" for SPOT_E_TIMEOUT: the status name without its prefix. */
static const char *error_name(spot_status st) {
    const char *n = spot_status_name(st);
    return strncmp(n, "SPOT_", 5) == 0 ? n + 5 : n;
}

static const char *reason_name(uint32_t reason) {
    switch (reason) {
    case SPOT_END_CANCELLED: return "CANCELLED";
    case SPOT_END_SUPERSEDED: return "SUPERSEDED";
    case SPOT_END_COMPLETED: return "COMPLETED";
    case SPOT_END_LEASE_EXPIRED: return "LEASE_EXPIRED";
    case SPOT_END_REVOKED: return "REVOKED";
    case SPOT_END_RUNTIME_CLOSED: return "RUNTIME_CLOSED";
    default: return "UNKNOWN_REASON";
    }
}

/* A blocking cancel's result: the terminal result, or the error. */
static const char *cancel_result(uint64_t rt, struct spot_timer t) {
    uint32_t reason = 99;
    spot_status st = spot_timer_cancel(rt, t, 5000 * (int64_t)MS, &reason);
    if (st == SPOT_OK) return reason_name(reason);
    if (st == SPOT_E_CLEANUP_FAILED) {
        char msg[256];
        spot_last_error(msg, sizeof msg);
        CHECK(strstr(msg, "boom") != NULL); /* the hook's message */
        return "CLEANUP_FAILED";
    }
    return error_name(st);
}

static const char *status_result(spot_status st) {
    return st == SPOT_OK ? "OK" : error_name(st);
}

static int32_t failing_hook(void *ud, char *msg, size_t len) {
    (void)ud;
    snprintf(msg, len, "boom");
    return 1;
}

static uint64_t owner_with_lease(uint64_t rt, uint64_t id, uint64_t lease_ns) {
    uint64_t epoch = 0;
    CHECK_OK(spot_owner_acquire(rt, id, lease_ns, SPOT_GATE_SERIAL, &epoch));
    return epoch;
}

static spot_status try_register(uint64_t rt, uint64_t epoch, struct spot_timer_spec sp) {
    struct spot_timer t;
    return spot_timer_register(rt, 1, epoch, 1, &sp, NULL, NULL, &t);
}

/* Runs one scenario on a fresh runtime; returns the result's name (a static string). */
static const char *run_scenario(const char *scenario) {
    uint64_t rt = manual_runtime();
    struct spot_timer_spec every10 = spec_every(10 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    struct spot_record r[4];
    const char *got;
    if (strcmp(scenario, "cancel_live") == 0) {
        struct spot_timer t = reg(rt, 1, owner(rt, 1, SPOT_GATE_SERIAL), 1, every10);
        got = cancel_result(rt, t);
    } else if (strcmp(scenario, "cancel_twice") == 0) {
        struct spot_timer t = reg(rt, 1, owner(rt, 1, SPOT_GATE_SERIAL), 1, every10);
        (void)cancel_result(rt, t);
        got = cancel_result(rt, t);
    } else if (strcmp(scenario, "cancel_superseded") == 0) {
        uint64_t ep = owner(rt, 1, SPOT_GATE_SERIAL);
        struct spot_timer first = reg(rt, 1, ep, 1, every10);
        (void)reg(rt, 1, ep, 1, every10);
        got = cancel_result(rt, first);
    } else if (strcmp(scenario, "cancel_completed_one_shot") == 0) {
        struct spot_timer_spec once = every10;
        once.period_ns = 0;
        once.first_due_ns = 5 * MS;
        struct spot_timer t = reg(rt, 1, owner(rt, 1, SPOT_GATE_SERIAL), 1, once);
        CHECK_OK(spot_advance(rt, 10 * MS));
        CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
        CHECK_OK(spot_record_begin(rt, &r[0]));
        CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r + 1, 3), 0);
        got = cancel_result(rt, t);
    } else if (strcmp(scenario, "cancel_revoked") == 0) {
        uint64_t ep = owner(rt, 1, SPOT_GATE_SERIAL);
        struct spot_timer t = reg(rt, 1, ep, 1, every10);
        CHECK_OK(spot_owner_revoke(rt, 1, ep));
        got = cancel_result(rt, t);
    } else if (strcmp(scenario, "cancel_lease_expired") == 0) {
        struct spot_timer t = reg(rt, 1, owner_with_lease(rt, 1, 10 * MS), 1,
                                  spec_every(100 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1));
        CHECK_OK(spot_advance(rt, 20 * MS));
        got = cancel_result(rt, t);
    } else if (strcmp(scenario, "cancel_after_close") == 0) {
        struct spot_timer t = reg(rt, 1, owner(rt, 1, SPOT_GATE_SERIAL), 1, every10);
        CHECK_OK(spot_runtime_close(rt));
        got = cancel_result(rt, t);
    } else if (strcmp(scenario, "cancel_cleanup_failed") == 0 ||
               strcmp(scenario, "cancel_cleanup_failed_twice") == 0) {
        struct spot_timer t;
        uint64_t ep = owner(rt, 1, SPOT_GATE_SERIAL);
        CHECK_OK(spot_timer_register(rt, 1, ep, 1, &every10, NULL, failing_hook, &t));
        got = cancel_result(rt, t);
        if (strcmp(scenario, "cancel_cleanup_failed_twice") == 0) got = cancel_result(rt, t);
    } else if (strcmp(scenario, "cancel_in_own_callback") == 0 ||
               strcmp(scenario, "cancel_in_own_callback_result") == 0) {
        struct spot_timer t = reg(rt, 1, owner(rt, 1, SPOT_GATE_SERIAL), 1, every10);
        CHECK_OK(spot_advance(rt, 10 * MS));
        CHECK_EQ_U64(xchg(rt, NULL, 0, r, 4), 1);
        /* the handler: started, then cancels its own timer */
        CHECK_OK(spot_record_begin(rt, &r[0]));
        got = cancel_result(rt, t);
        CHECK_EQ_U64(complete_and_take(rt, &r[0], SPOT_OUTCOME_OK, r + 1, 3), 0);
        if (strcmp(scenario, "cancel_in_own_callback_result") == 0) got = cancel_result(rt, t);
    } else if (strcmp(scenario, "register_revoked_owner") == 0) {
        uint64_t ep = owner(rt, 1, SPOT_GATE_SERIAL);
        CHECK_OK(spot_owner_revoke(rt, 1, ep));
        got = status_result(try_register(rt, ep, every10));
    } else if (strcmp(scenario, "register_lease_expired") == 0) {
        uint64_t ep = owner_with_lease(rt, 1, 10 * MS);
        CHECK_OK(spot_advance(rt, 20 * MS));
        got = status_result(try_register(rt, ep, every10));
    } else if (strcmp(scenario, "register_after_close") == 0) {
        uint64_t ep = owner(rt, 1, SPOT_GATE_SERIAL);
        CHECK_OK(spot_runtime_close(rt));
        got = status_result(try_register(rt, ep, every10));
    } else if (strcmp(scenario, "register_zero_period") == 0) {
        struct spot_timer_spec zero = every10;
        zero.period_ns = 0; /* and no first_due_ns: not a one-shot either */
        got = status_result(try_register(rt, owner(rt, 1, SPOT_GATE_SERIAL), zero));
    } else if (strcmp(scenario, "renew_after_expiry") == 0) {
        uint64_t ep = owner_with_lease(rt, 1, 10 * MS);
        CHECK_OK(spot_advance(rt, 20 * MS));
        got = status_result(spot_owner_renew(rt, 1, ep, 10 * MS));
    } else if (strcmp(scenario, "renew_revoked") == 0) {
        uint64_t ep = owner(rt, 1, SPOT_GATE_SERIAL);
        CHECK_OK(spot_owner_revoke(rt, 1, ep));
        got = status_result(spot_owner_renew(rt, 1, ep, 10 * MS));
    } else {
        got = "NOT_IMPLEMENTED_IN_C";
    }
    CHECK_OK(spot_runtime_free(rt));
    return got;
}

static void result_table_every_scenario_gives_its_expected_result(void) {
    const char *path = getenv("SPOT_RESULT_TABLE");
    if (!path || !*path) path = "tests/vectors/results.txt";
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f) {
        fprintf(stderr, "    cannot open the result table %s\n", path);
        return;
    }
    char line[512];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char scenario[128], expected[64];
        if (sscanf(line, "%127s %63s", scenario, expected) != 2) continue;
        rows++;
        const char *got = run_scenario(scenario);
        if (strcmp(got, expected) != 0) {
            h_failed_checks++;
            fprintf(stderr, "    result table: %s: expected %s, got %s\n", scenario, expected, got);
        }
    }
    fclose(f);
    CHECK(rows >= 17);
}

void run_result_table_tests(void) {
    RUN(result_table_every_scenario_gives_its_expected_result);
}
