/* One schema: the codes, reasons and stats fields the library names (from its Rust enums
 * and structs) are exactly the ones this header defines. A value added in Rust only makes
 * a count or a name here differ. */
#include <stddef.h>
#include <stdlib.h>

#include "contract.h"
#include "util.h"

struct named {
    uint32_t value;
    const char *name;
};
#define NAMED(x) {(uint32_t)(x), #x}

static const struct named statuses[] = {
    NAMED(SPOT_OK), NAMED(SPOT_E_NULL_ARGUMENT), NAMED(SPOT_E_INVALID_ARGUMENT),
    NAMED(SPOT_E_UNKNOWN_ENUM), NAMED(SPOT_E_BAD_STRUCT_SIZE), NAMED(SPOT_E_INVALID_HANDLE),
    NAMED(SPOT_E_STALE_TIMER), NAMED(SPOT_E_UNKNOWN_OWNER), NAMED(SPOT_E_LEASE_EXPIRED),
    NAMED(SPOT_E_REVOKED), NAMED(SPOT_E_INVALID_COMPLETION), NAMED(SPOT_E_TIMEOUT),
    NAMED(SPOT_E_WOULD_DEADLOCK), NAMED(SPOT_E_CLEANUP_FAILED), NAMED(SPOT_E_CLOSED),
    NAMED(SPOT_E_NOT_MANUAL_CLOCK), NAMED(SPOT_E_CAPACITY_EXHAUSTED), NAMED(SPOT_E_OS),
    NAMED(SPOT_E_PANIC), NAMED(SPOT_E_WRONG_DELIVERY_MODE), NAMED(SPOT_E_NOT_FOUND),
    NAMED(SPOT_E_STALE_ROUTE), NAMED(SPOT_E_UNAVAILABLE), NAMED(SPOT_E_CREATION_FAILED),
    NAMED(SPOT_E_WRONG_KIND), NAMED(SPOT_E_APPLICATION_LANE_FULL),
    NAMED(SPOT_E_LIFECYCLE_LANE_FULL), NAMED(SPOT_E_NODE_INBOUND_FULL),
    NAMED(SPOT_E_ACTIVE_CAP), NAMED(SPOT_E_STORE),
};

static const struct named end_reasons[] = {
    NAMED(SPOT_END_CANCELLED), NAMED(SPOT_END_SUPERSEDED), NAMED(SPOT_END_COMPLETED),
    NAMED(SPOT_END_LEASE_EXPIRED), NAMED(SPOT_END_REVOKED), NAMED(SPOT_END_RUNTIME_CLOSED),
};

static const struct named close_reasons[] = {
    NAMED(SPOT_CLOSE_IDLE_EVICTED), NAMED(SPOT_CLOSE_CLOSED), NAMED(SPOT_CLOSE_NODE_SHUTDOWN),
    NAMED(SPOT_CLOSE_AUTHORITY_LOST), NAMED(SPOT_CLOSE_CREATION_FAILED),
};

static const char *status_name(uint32_t v) { return spot_status_name((spot_status)v); }

/* Every value 0..255 the library names is in `table` under that name, and every entry of
 * `table` is named so by the library. */
static void agree(const struct named *table, size_t n, const char *(*name)(uint32_t), const char *unknown) {
    size_t named = 0;
    for (uint32_t v = 0; v < 256; v++) {
        const char *got = name(v);
        if (strcmp(got, unknown) == 0) continue;
        named++;
        size_t i = 0;
        while (i < n && table[i].value != v) i++;
        if (i == n) {
            fprintf(stderr, "    the library names %u %s; this test's header table does not\n", v, got);
            CHECK(0);
            continue;
        }
        CHECK(strcmp(got, table[i].name) == 0);
    }
    CHECK_EQ_U64(named, n);
}

static void schema_status_codes_are_the_librarys(void) {
    agree(statuses, sizeof statuses / sizeof statuses[0], status_name, "SPOT_E_UNKNOWN_STATUS");
}

static void schema_end_reasons_are_the_librarys(void) {
    agree(end_reasons, sizeof end_reasons / sizeof end_reasons[0], spot_end_reason_name, "SPOT_END_UNKNOWN");
    CHECK(strcmp(spot_end_reason_name(UINT32_MAX), "SPOT_END_UNKNOWN") == 0);
}

static void schema_close_reasons_are_the_librarys(void) {
    agree(close_reasons, sizeof close_reasons / sizeof close_reasons[0], spot_close_reason_name,
          "SPOT_CLOSE_UNKNOWN");
    CHECK(strcmp(spot_close_reason_name(UINT32_MAX), "SPOT_CLOSE_UNKNOWN") == 0);
}

/* The node's exposition lists the lifecycle's stats fields: as many as struct
 * spot_node_stats has, the gauge active_spots counting the Entry Spot. */
static void schema_every_node_stats_field_is_in_struct_spot_node_stats(void) {
    uint64_t store = 0;
    CHECK_OK(spot_store_new(&store));
    uint64_t node = manual_node(store, 1);
    size_t len = 0;
    char probe[8];
    CHECK_OK(spot_node_prometheus(node, "n", probe, sizeof probe, &len));
    CHECK(len >= sizeof probe);
    char *buf = malloc(len + 1);
    size_t len2 = 0;
    CHECK_OK(spot_node_prometheus(node, "n", buf, len + 1, &len2));
    CHECK_EQ_U64(len2, len);
    CHECK(strstr(buf, "# TYPE n_active_spots gauge\nn_active_spots 1\n") != NULL);
    CHECK(strstr(buf, "# TYPE n_created_total counter\n") != NULL);
    size_t families = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "# TYPE n_", 9) == 0) families++;
    }
    free(buf);
    size_t fields = (sizeof(struct spot_node_stats) - offsetof(struct spot_node_stats, active_spots)) / sizeof(uint64_t);
    CHECK_EQ_U64(families, fields);
    CHECK_ST(spot_node_prometheus(node, "9bad", probe, sizeof probe, &len), SPOT_E_INVALID_ARGUMENT);
    CHECK_ST(spot_node_prometheus(node, NULL, probe, 0, &len), SPOT_E_INVALID_ARGUMENT);
    CHECK_ST(spot_node_prometheus(node, NULL, NULL, 8, &len), SPOT_E_NULL_ARGUMENT);
    CHECK_OK(spot_node_free(node));
    CHECK_ST(spot_node_prometheus(node, NULL, probe, sizeof probe, &len), SPOT_E_INVALID_HANDLE);
    CHECK_OK(spot_store_free(store));
}

void run_schema_tests(void) {
    RUN(schema_status_codes_are_the_librarys);
    RUN(schema_end_reasons_are_the_librarys);
    RUN(schema_close_reasons_are_the_librarys);
    RUN(schema_every_node_stats_field_is_in_struct_spot_node_stats);
}
