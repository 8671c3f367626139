/* The etcd Location Store through the C ABI against a real etcd (run by make test-cluster
 * under tests/cluster/with-etcd.sh, which sets SPOT_ETCD_ENDPOINT): two nodes, each on its
 * own etcd store as two processes would be, agree on who owns a Spot; the factory runs
 * once; a node that does not own it is told StaleRoute (never a second creation); and the
 * steady-state send path makes no etcd request. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spot_timer.h"

static int failures = 0;
#define CHECK(c)                                                                         \
    do {                                                                                 \
        if (!(c)) {                                                                      \
            char m_[512];                                                                \
            spot_last_error(m_, sizeof m_);                                              \
            fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__,      \
                    __LINE__, #c, m_);                                                   \
            failures++;                                                                  \
        }                                                                                \
    } while (0)

static atomic_ulong instance_factory_runs;

static int32_t factory(void *env, uint64_t spot_id, uint32_t kind, char *msg, size_t len) {
    (void)env;
    (void)spot_id;
    (void)msg;
    (void)len;
    if (kind == SPOT_KIND_INSTANCE) atomic_fetch_add(&instance_factory_runs, 1);
    return 0;
}

static uint64_t etcd_store(const char *endpoint, const char *prefix) {
    struct spot_etcd_config c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.endpoints = endpoint;
    c.prefix = prefix;
    c.lease_ttl_ns = 4000000000ull;
    uint64_t s = 0;
    CHECK(spot_store_new_etcd(&c, &s) == SPOT_OK);
    return s;
}

static uint64_t node_on(uint64_t store, uint64_t id) {
    struct spot_node_config c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.clock = SPOT_CLOCK_REAL;
    c.node_id = id;
    c.entry_spot = 1000000 + id;
    c.factory = factory;
    uint64_t n = 0;
    CHECK(spot_node_start(&c, store, &n) == SPOT_OK);
    return n;
}

int main(void) {
    const char *endpoint = getenv("SPOT_ETCD_ENDPOINT");
    if (!endpoint) {
        fprintf(stderr, "c_etcd: SPOT_ETCD_ENDPOINT is not set (run under tests/cluster/with-etcd.sh)\n");
        return 2;
    }
    char prefix[64];
    snprintf(prefix, sizeof prefix, "/spot-c-test-%d/", (int)getpid());
    uint64_t s1 = etcd_store(endpoint, prefix), s2 = etcd_store(endpoint, prefix);
    uint64_t n1 = node_on(s1, 1), n2 = node_on(s2, 2);
    const uint8_t msg[] = "hello";
    uint64_t gen = 0;
    CHECK(spot_node_send_or_create(n1, 42, msg, sizeof msg, &gen) == SPOT_OK);
    CHECK(gen >= 1);
    CHECK(atomic_load(&instance_factory_runs) == 1);
    /* node 2 finds Spot 42 owned by node 1 (another process, as far as it knows): */
    CHECK(spot_node_send_or_create(n2, 42, msg, sizeof msg, NULL) == SPOT_E_STALE_ROUTE);
    CHECK(atomic_load(&instance_factory_runs) == 1); /* never a second creation */
    /* steady state: node 1 sends to its own Ready Spot without asking etcd */
    uint64_t before = 0, after = 0;
    CHECK(spot_store_requests(s1, &before) == SPOT_OK);
    for (int i = 0; i < 100; i++) CHECK(spot_node_send(n1, 42, SPOT_LANE_APPLICATION, msg, sizeof msg) == SPOT_OK);
    CHECK(spot_store_requests(s1, &after) == SPOT_OK);
    CHECK(after == before);
    CHECK(before > 0); /* the creation went through etcd */
    /* an etcd store has no simulated-node controls */
    CHECK(spot_store_expire_node(s1, 2) == SPOT_E_INVALID_ARGUMENT);
    CHECK(spot_node_free(n2) == SPOT_OK);
    CHECK(spot_node_free(n1) == SPOT_OK);
    CHECK(spot_store_free(s2) == SPOT_OK);
    CHECK(spot_store_free(s1) == SPOT_OK);
    printf("c_etcd: %s (etcd requests of store 1: %llu, none on the steady-state sends)\n",
           failures ? "FAILED" : "all passed",
           (unsigned long long)before);
    return failures ? 1 : 0;
}
