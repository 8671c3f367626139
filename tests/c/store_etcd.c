/* The etcd Location Store through the C ABI, without etcd: bad configurations and an
 * unreachable endpoint give specific, readable errors (never a store that would create
 * Spots on its own). The same store against a real etcd: tests/cluster/c_etcd.c (make
 * test-cluster). */
#define _GNU_SOURCE
#include <stddef.h>
#include <string.h>

#include "contract.h"
#include "util.h"

static struct spot_etcd_config etcd_cfg(const char *endpoints) {
    struct spot_etcd_config c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.endpoints = endpoints;
    c.connect_timeout_ns = 1000 * MS;
    return c;
}

static int last_error_has(const char *words) {
    char msg[512];
    spot_last_error(msg, sizeof msg);
    return strstr(msg, words) != NULL;
}

static void etcd_store_bad_configurations_are_refused(void) {
    uint64_t s = 77;
    struct spot_etcd_config c = etcd_cfg("http://127.0.0.1:1");
    CHECK_ST(spot_store_new_etcd(NULL, &s), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_store_new_etcd(&c, NULL), SPOT_E_NULL_ARGUMENT);
    c.endpoints = NULL;
    CHECK_ST(spot_store_new_etcd(&c, &s), SPOT_E_NULL_ARGUMENT);
    c = etcd_cfg("");
    CHECK_ST(spot_store_new_etcd(&c, &s), SPOT_E_INVALID_ARGUMENT);
    CHECK(last_error_has("endpoint"));
    c = etcd_cfg("not a url");
    CHECK_ST(spot_store_new_etcd(&c, &s), SPOT_E_INVALID_ARGUMENT);
    c = etcd_cfg("http://127.0.0.1:1");
    c.lease_ttl_ns = 1500 * MS; /* not whole seconds */
    CHECK_ST(spot_store_new_etcd(&c, &s), SPOT_E_INVALID_ARGUMENT);
    CHECK(last_error_has("lease_ttl"));
    c = etcd_cfg("http://127.0.0.1:1");
    c.prefix = "no-slash";
    CHECK_ST(spot_store_new_etcd(&c, &s), SPOT_E_INVALID_ARGUMENT);
    c = etcd_cfg("http://127.0.0.1:1");
    c.reserved = 1;
    CHECK_ST(spot_store_new_etcd(&c, &s), SPOT_E_INVALID_ARGUMENT);
    c = etcd_cfg("http://127.0.0.1:1");
    c.struct_size = 8;
    CHECK_ST(spot_store_new_etcd(&c, &s), SPOT_E_BAD_STRUCT_SIZE);
    CHECK_EQ_U64(s, 77); /* nothing written on failure */
}

static void etcd_store_unreachable_is_a_readable_error_at_start(void) {
    uint64_t s = 77;
    struct spot_etcd_config c = etcd_cfg("http://127.0.0.1:1");
    CHECK_ST(spot_store_new_etcd(&c, &s), SPOT_E_STORE);
    CHECK(last_error_has("127.0.0.1:1"));
    CHECK(last_error_has("cannot be reached"));
    CHECK_EQ_U64(s, 77);
}

static void embedded_store_counts_no_etcd_requests(void) {
    uint64_t s = 0, n = 99;
    CHECK_OK(spot_store_new(&s));
    CHECK_OK(spot_store_requests(s, &n));
    CHECK_EQ_U64(n, 0);
    CHECK_ST(spot_store_requests(s, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_OK(spot_store_free(s));
    CHECK_ST(spot_store_requests(s, &n), SPOT_E_INVALID_HANDLE);
}

void run_store_etcd_tests(void) {
    RUN(etcd_store_bad_configurations_are_refused);
    RUN(etcd_store_unreachable_is_a_readable_error_at_start);
    RUN(embedded_store_counts_no_etcd_requests);
}
