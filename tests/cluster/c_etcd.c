/* The etcd Location Store through the C ABI against a real etcd (run by make test-cluster
 * under tests/cluster/with-etcd.sh, which sets SPOT_ETCD_ENDPOINT): two nodes, each on its
 * own etcd store as two processes would be, agree on who owns a Spot; the factory runs
 * once; a node that does not own it is told Unavailable while its owner lives and does
 * not listen (never a second creation); and the steady-state send path makes no etcd request. Since
 * ABI 2.3, nodes started with `listen` are reached over TCP: a message from the other
 * store's node runs on the owner, and a creation placed on the listening node (the other
 * one is full) runs there with its first message. */
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

static uint64_t node_with(uint64_t store, uint64_t id, const char *listen, uint64_t active_cap) {
    struct spot_node_config c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.clock = SPOT_CLOCK_REAL;
    c.node_id = id;
    c.entry_spot = 1000000 + id;
    c.factory = factory;
    c.active_cap = active_cap;
    c.listen = listen;
    uint64_t n = 0;
    CHECK(spot_node_start(&c, store, &n) == SPOT_OK);
    return n;
}

static uint64_t node_on(uint64_t store, uint64_t id) { return node_with(store, id, NULL, 0); }

/* What a node's exchange handed over: (spot, payload) of each message, in order. */
struct ran {
    size_t n;
    uint64_t spot[16];
    char text[16][32];
};

/* Runs what the node receives within `wait_ms` (each record: begin, note, complete OK),
 * until `want` records ran or the time is up; then one more short exchange to catch
 * anything beyond `want`. */
static struct ran run_node(uint64_t node, size_t want, int wait_ms) {
    struct ran r;
    memset(&r, 0, sizeof r);
    struct spot_node_record recs[16];
    struct spot_node_completion done[16];
    size_t n_done = 0;
    for (int waited = 0;; waited += 50) {
        int last = r.n >= want || waited >= wait_ms;
        size_t n = 0;
        CHECK(spot_node_exchange(node, done, n_done, recs, 16, 50000000, &n) == SPOT_OK);
        n_done = 0;
        for (size_t i = 0; i < n; i++) {
            CHECK(spot_node_begin(node, recs[i].token) == SPOT_OK);
            if (r.n < 16) {
                size_t k = recs[i].payload_len < 31 ? recs[i].payload_len : 31;
                r.spot[r.n] = recs[i].spot_id;
                if (k) memcpy(r.text[r.n], recs[i].payload, k);
                r.n++;
            }
            done[n_done].token = recs[i].token;
            done[n_done].outcome = SPOT_OUTCOME_OK;
            done[n_done].reserved = 0;
            n_done++;
        }
        if (last && n == 0) break;
    }
    CHECK(spot_node_complete(node, done, n_done) == SPOT_OK);
    return r;
}

static int ran_is(const struct ran *r, size_t i, uint64_t spot, const char *text) {
    return i < r->n && r->spot[i] == spot && strcmp(r->text[i], text) == 0;
}

/* The address a node listens at; checks it is 127.0.0.1 with a port bound. */
static void check_listens(uint64_t node, char *addr, size_t cap) {
    size_t len = 0;
    CHECK(spot_node_address(node, addr, cap, &len) == SPOT_OK);
    CHECK(len == strlen(addr));
    CHECK(strncmp(addr, "127.0.0.1:", 10) == 0);
    long port = strtol(addr + 10, NULL, 10);
    CHECK(port > 0 && port < 65536);
}

/* Node 1 (store A) listens and creates Instance Spot 77; node 2 (store B, not listening)
 * sends to it: the message travels over TCP and runs on node 1, nothing on node 2. */
static void a_message_reaches_the_owner_over_tcp(const char *endpoint) {
    char prefix[64], addr[64];
    snprintf(prefix, sizeof prefix, "/spot-c-tcp-msg-%d/", (int)getpid());
    uint64_t sa = etcd_store(endpoint, prefix), sb = etcd_store(endpoint, prefix);
    uint64_t n1 = node_with(sa, 1, "127.0.0.1:0", 0), n2 = node_with(sb, 2, NULL, 0);
    check_listens(n1, addr, sizeof addr);
    size_t len = 9;
    CHECK(spot_node_address(n2, addr, sizeof addr, &len) == SPOT_OK);
    CHECK(len == 0 && addr[0] == 0); /* node 2 does not listen */
    unsigned long runs = atomic_load(&instance_factory_runs);
    uint64_t gen1 = 0, gen2 = 0;
    CHECK(spot_node_send_or_create(n1, 77, (const uint8_t *)"created", 7, &gen1) == SPOT_OK);
    CHECK(spot_node_send(n2, 77, SPOT_LANE_APPLICATION, (const uint8_t *)"over tcp", 8) == SPOT_OK);
    CHECK(spot_node_send_or_create(n2, 77, (const uint8_t *)"again", 5, &gen2) == SPOT_OK);
    CHECK(gen1 >= 1 && gen2 == gen1); /* the same Spot, not a second one */
    CHECK(atomic_load(&instance_factory_runs) == runs + 1);
    struct ran on1 = run_node(n1, 3, 5000), on2 = run_node(n2, 0, 200);
    CHECK(on1.n == 3);
    CHECK(ran_is(&on1, 0, 77, "created"));
    CHECK(ran_is(&on1, 1, 77, "over tcp"));
    CHECK(ran_is(&on1, 2, 77, "again"));
    CHECK(on2.n == 0);
    uint32_t kind = 0;
    CHECK(spot_node_spot_kind(n2, 77, &kind) == SPOT_E_NOT_FOUND);
    CHECK(spot_node_free(n2) == SPOT_OK);
    CHECK(spot_node_free(n1) == SPOT_OK);
    CHECK(spot_store_free(sb) == SPOT_OK);
    CHECK(spot_store_free(sa) == SPOT_OK);
}

/* Node 4 (store D) holds only its Entry Spot (active_cap 1): its send_or_create of a new
 * id is placed on node 3 (store C, listening), created there over TCP, and its first
 * message runs there. */
static void a_creation_placed_on_the_listening_node_runs_there(const char *endpoint) {
    char prefix[64], addr[64];
    snprintf(prefix, sizeof prefix, "/spot-c-tcp-place-%d/", (int)getpid());
    uint64_t sc = etcd_store(endpoint, prefix), sd = etcd_store(endpoint, prefix);
    uint64_t n3 = node_with(sc, 3, "127.0.0.1:0", 0), n4 = node_with(sd, 4, "127.0.0.1:0", 1);
    check_listens(n3, addr, sizeof addr);
    unsigned long runs = atomic_load(&instance_factory_runs);
    uint64_t gen = 0;
    CHECK(spot_node_send_or_create(n4, 88, (const uint8_t *)"first", 5, &gen) == SPOT_OK);
    CHECK(gen >= 1);
    CHECK(atomic_load(&instance_factory_runs) == runs + 1);
    uint32_t kind = 0;
    CHECK(spot_node_spot_kind(n3, 88, &kind) == SPOT_OK && kind == SPOT_KIND_INSTANCE);
    CHECK(spot_node_spot_kind(n4, 88, &kind) == SPOT_E_NOT_FOUND);
    struct ran on3 = run_node(n3, 1, 5000), on4 = run_node(n4, 0, 200);
    CHECK(on3.n == 1);
    CHECK(ran_is(&on3, 0, 88, "first"));
    CHECK(on4.n == 0);
    CHECK(spot_node_free(n4) == SPOT_OK);
    CHECK(spot_node_free(n3) == SPOT_OK);
    CHECK(spot_store_free(sd) == SPOT_OK);
    CHECK(spot_store_free(sc) == SPOT_OK);
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
    /* node 2 finds Spot 42 owned by node 1 (another process, as far as it knows), which
     * lives and does not listen: */
    CHECK(spot_node_send_or_create(n2, 42, msg, sizeof msg, NULL) == SPOT_E_UNAVAILABLE);
    {
        char why[512];
        spot_last_error(why, sizeof why);
        CHECK(strstr(why, "does not listen") != NULL);
    }
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
    a_message_reaches_the_owner_over_tcp(endpoint);
    a_creation_placed_on_the_listening_node_runs_there(endpoint);
    printf("c_etcd: %s (etcd requests of store 1: %llu, none on the steady-state sends)\n",
           failures ? "FAILED" : "all passed",
           (unsigned long long)before);
    return failures ? 1 : 0;
}
