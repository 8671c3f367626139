/* A node keeps itself alive and answers truthfully, through the C ABI only (the meaning of
 * lifecycle/tests/node_authority.rs): it renews its own owner lease and runs its own idle
 * scans; a node whose term in the store ended admits nothing of it and gives its Spots up;
 * an intent meeting a closing Spot waits for the close and creates again; refusals name what
 * refused and are counted once; an oversized first message creates nothing; a node reported
 * down is not sent to over an old route.
 *
 * Real clocks, a dispatcher thread per node: a program of its own (run under ASan/UBSan, not
 * valgrind, whose slowdown is no lease's business). Every wait has a deadline. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define MS 1000000ULL
#define MAX_CLOSES 512
#define MAX_RAN 4096

static void sleep_ms(unsigned ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

static uint64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* ---- The host: a counting factory, a closing callback that records its calls ---- */

struct env {
    atomic_ulong factory_runs;
    pthread_mutex_t mu;
    uint64_t close_spot[MAX_CLOSES];
    uint32_t close_reason[MAX_CLOSES];
    size_t n_closes;
    /* The closing-callback test: the node, and what its own intent got inside. */
    uint64_t node;
    uint64_t hold_spot;      /* the callback for this Spot holds 100 ms, once */
    atomic_int entered;      /* set once inside that callback */
    spot_status inner;       /* its send_or_create's status */
};

static void env_init(struct env *e) {
    memset(e, 0, sizeof *e);
    atomic_init(&e->factory_runs, 0);
    atomic_init(&e->entered, 0);
    pthread_mutex_init(&e->mu, NULL);
}

static int32_t factory(void *env, uint64_t spot_id, uint32_t kind, char *msg, size_t msg_len) {
    (void)spot_id, (void)kind, (void)msg, (void)msg_len;
    atomic_fetch_add(&((struct env *)env)->factory_runs, 1);
    return 0;
}

static void on_close(void *env, uint64_t spot_id, uint32_t kind, uint32_t reason) {
    struct env *e = env;
    (void)kind;
    pthread_mutex_lock(&e->mu);
    if (e->n_closes < MAX_CLOSES) {
        e->close_spot[e->n_closes] = spot_id;
        e->close_reason[e->n_closes++] = reason;
    }
    pthread_mutex_unlock(&e->mu);
    if (e->hold_spot && spot_id == e->hold_spot && !atomic_load(&e->entered)) {
        /* This thread's own intent for the closing Spot is refused at once. */
        uint64_t gen = 0;
        const uint8_t b = 'i';
        e->inner = spot_node_send_or_create(e->node, spot_id, &b, 1, &gen);
        atomic_store(&e->entered, 1);
        sleep_ms(100);
    }
}

static size_t closes_of(struct env *e, uint64_t spot, uint32_t reason) {
    size_t n = 0;
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < e->n_closes; i++)
        if (e->close_spot[i] == spot && e->close_reason[i] == reason) n++;
    pthread_mutex_unlock(&e->mu);
    return n;
}

static struct spot_node_config config(uint64_t id, struct env *e) {
    struct spot_node_config c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.clock = SPOT_CLOCK_REAL;
    c.node_id = id;
    c.entry_spot = 1000 + id;
    c.factory = factory;
    c.on_close = on_close;
    c.env = e;
    return c;
}

static uint64_t start(const struct spot_node_config *c, uint64_t store) {
    uint64_t n = 0;
    CHECK_OK(spot_node_start(c, store, &n));
    return n;
}

static struct spot_node_stats stats(uint64_t node) {
    struct spot_node_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    CHECK_OK(spot_node_stats(node, &s));
    return s;
}

static spot_status send_text(uint64_t node, uint64_t spot, const char *t) {
    return spot_node_send(node, spot, SPOT_LANE_APPLICATION, (const uint8_t *)t, strlen(t));
}

static spot_status soc_text(uint64_t node, uint64_t spot, const char *t) {
    uint64_t gen = 0;
    return spot_node_send_or_create(node, spot, (const uint8_t *)t, strlen(t), &gen);
}

/* ---- A dispatcher thread per node: records every message it ran ---- */

struct dispatcher {
    uint64_t node;
    pthread_t thread;
    atomic_int stop;
    pthread_mutex_t mu;
    uint64_t spot[MAX_RAN];
    char text[MAX_RAN][16];
    size_t n;
};

static void *dispatch_loop(void *arg) {
    struct dispatcher *d = arg;
    struct spot_node_record recs[256];
    struct spot_node_completion done[256];
    size_t n_done = 0;
    while (!atomic_load(&d->stop)) {
        size_t n = 0;
        if (spot_node_exchange(d->node, done, n_done, recs, 256, 5 * (int64_t)MS, &n) != SPOT_OK) {
            n_done = 0;
            continue;
        }
        n_done = 0;
        for (size_t i = 0; i < n; i++) {
            done[n_done].token = recs[i].token;
            done[n_done].reserved = 0;
            if (spot_node_begin(d->node, recs[i].token) != SPOT_OK) {
                done[n_done++].outcome = SPOT_OUTCOME_NOT_STARTED;
                continue;
            }
            if (recs[i].kind == SPOT_WORK_MESSAGE) {
                pthread_mutex_lock(&d->mu);
                if (d->n < MAX_RAN) {
                    size_t k = recs[i].payload_len < 15 ? recs[i].payload_len : 15;
                    d->spot[d->n] = recs[i].spot_id;
                    memset(d->text[d->n], 0, 16);
                    if (k) memcpy(d->text[d->n], recs[i].payload, k);
                    d->n++;
                }
                pthread_mutex_unlock(&d->mu);
            }
            done[n_done++].outcome = SPOT_OUTCOME_OK;
        }
    }
    if (n_done) spot_node_complete(d->node, done, n_done);
    return NULL;
}

static void dispatcher_start(struct dispatcher *d, uint64_t node) {
    memset(d, 0, sizeof *d);
    d->node = node;
    atomic_init(&d->stop, 0);
    pthread_mutex_init(&d->mu, NULL);
    pthread_create(&d->thread, NULL, dispatch_loop, d);
}

static void dispatcher_stop(struct dispatcher *d) {
    atomic_store(&d->stop, 1);
    pthread_join(d->thread, NULL);
    pthread_mutex_destroy(&d->mu);
}

static size_t ran_count(struct dispatcher *d) {
    pthread_mutex_lock(&d->mu);
    size_t n = d->n;
    pthread_mutex_unlock(&d->mu);
    return n;
}

static int ran(struct dispatcher *d, uint64_t spot, const char *text) {
    int found = 0;
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; i < d->n && !found; i++)
        found = d->spot[i] == spot && strcmp(d->text[i], text) == 0;
    pthread_mutex_unlock(&d->mu);
    return found;
}

/* Polls until `cond` holds or `ms` pass. */
#define EVENTUALLY(cond, ms)                                       \
    do {                                                           \
        uint64_t until_ = now_ms() + (ms);                         \
        while (!(cond) && now_ms() < until_) sleep_ms(2);          \
        CHECK(cond);                                               \
    } while (0)

/* ---- The tests ---- */

static void a_node_renews_its_own_owner_lease(void) {
    struct env e;
    env_init(&e);
    uint64_t store = 0;
    CHECK_OK(spot_store_new(&store));
    struct spot_node_config c = config(1, &e);
    c.owner_lease_ns = 300 * MS;
    uint64_t a = start(&c, store);
    struct dispatcher d;
    dispatcher_start(&d, a);
    uint64_t gen = 0;
    CHECK_OK(spot_node_create_user_spot(a, 2, &gen));
    CHECK_OK(soc_text(a, 3, "first"));
    for (int i = 0; i < 4; i++) {
        sleep_ms(200);
        CHECK_OK(send_text(a, 1001, "e"));
        CHECK_OK(send_text(a, 2, "u"));
        CHECK_OK(soc_text(a, 3, "i"));
    }
    EVENTUALLY(ran_count(&d) == 1 + 3 * 4, 10000);
    dispatcher_stop(&d);
    struct spot_node_stats s = stats(a);
    CHECK_EQ_U64(s.authority_lost, 0);
    CHECK_EQ_U64(s.factory_runs, 3);
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_store_free(store));
}

static void a_node_runs_its_own_idle_scans(void) {
    struct env e;
    env_init(&e);
    uint64_t store = 0;
    CHECK_OK(spot_store_new(&store));
    struct spot_node_config c = config(1, &e);
    c.instance_idle_timeout_ns = 200 * MS;
    uint64_t a = start(&c, store);
    struct dispatcher d;
    dispatcher_start(&d, a);
    for (uint64_t i = 0; i < 50; i++) CHECK_OK(soc_text(a, 100 + i, "x"));
    uint64_t gen = 0;
    CHECK_OK(spot_node_create_user_spot(a, 7, &gen));
    EVENTUALLY(stats(a).evicted == 50, 10000);
    dispatcher_stop(&d);
    struct spot_node_stats s = stats(a);
    CHECK(s.eviction_passes > 0);
    CHECK_EQ_U64(s.active_spots, 2);
    size_t idle = 0;
    for (uint64_t i = 0; i < 50; i++) idle += closes_of(&e, 100 + i, SPOT_CLOSE_IDLE_EVICTED);
    CHECK_EQ_U64(idle, 50);
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_store_free(store));
}

static void an_expired_node_admits_nothing_and_its_spot_runs_on_one_node_only(void) {
    struct env e;
    env_init(&e);
    uint64_t store = 0;
    CHECK_OK(spot_store_new(&store));
    struct spot_node_config c5 = config(5, &e), c6 = config(6, &e), c7 = config(7, &e);
    uint64_t n5 = start(&c5, store), n6 = start(&c6, store), n7 = start(&c7, store);
    struct dispatcher d5, d6, d7;
    dispatcher_start(&d5, n5);
    dispatcher_start(&d6, n6);
    dispatcher_start(&d7, n7);
    const uint64_t y = 42;
    CHECK_OK(soc_text(n6, y, "on 6"));
    CHECK_OK(send_text(n7, y, "via 7"));
    EVENTUALLY(ran_count(&d6) == 2, 5000);
    CHECK_OK(spot_store_expire_node(store, 6));
    CHECK_OK(soc_text(n5, y, "on 5"));
    spot_status s1 = send_text(n7, y, "old route"), s2 = send_text(n6, y, "on 6 again");
    CHECK(s1 == SPOT_OK || s1 == SPOT_E_STALE_ROUTE || s1 == SPOT_E_UNAVAILABLE);
    CHECK(s2 == SPOT_OK || s2 == SPOT_E_STALE_ROUTE || s2 == SPOT_E_UNAVAILABLE);
    EVENTUALLY(stats(n6).terms_renewed == 1, 5000);
    sleep_ms(50);
    CHECK_EQ_U64(ran_count(&d6), 2);
    CHECK(ran(&d5, y, "on 5"));
    CHECK_EQ_U64(closes_of(&e, y, SPOT_CLOSE_AUTHORITY_LOST), 1);
    CHECK_OK(send_text(n6, y, "after"));
    EVENTUALLY(ran(&d5, y, "after"), 5000);
    dispatcher_stop(&d5);
    dispatcher_stop(&d6);
    dispatcher_stop(&d7);
    CHECK_OK(spot_node_free(n5));
    CHECK_OK(spot_node_free(n6));
    CHECK_OK(spot_node_free(n7));
    CHECK_OK(spot_store_free(store));
}

static void an_intent_during_a_closing_callback_waits_and_creates_again(void) {
    struct env e;
    env_init(&e);
    uint64_t store = 0;
    CHECK_OK(spot_store_new(&store));
    struct spot_node_config c = config(1, &e);
    c.instance_idle_timeout_ns = 50 * MS;
    uint64_t a = start(&c, store);
    e.node = a;
    e.hold_spot = 7;
    struct dispatcher d;
    dispatcher_start(&d, a);
    CHECK_OK(soc_text(a, 7, "one"));
    EVENTUALLY(atomic_load(&e.entered), 10000);
    uint64_t t = now_ms();
    CHECK_OK(soc_text(a, 7, "two"));
    CHECK(now_ms() - t >= 50); /* waited for the close */
    EVENTUALLY(ran(&d, 7, "two"), 5000);
    CHECK_EQ_U64(e.inner, SPOT_E_STALE_ROUTE);
    CHECK_EQ_U64(atomic_load(&e.factory_runs), 3);
    dispatcher_stop(&d);
    e.hold_spot = 0;
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_store_free(store));
}

struct race {
    uint64_t node;
    int t;
    uint64_t until;
    atomic_ulong *wrong;
};

static void *race_sender(void *arg) {
    struct race *r = arg;
    for (uint64_t k = 1;; k++) {
        struct spot_node_stats s = stats(r->node);
        if ((k > 1500 && s.evicted >= 200) || now_ms() >= r->until) break;
        uint64_t id = (k * 7 + (uint64_t)r->t * 61) % 256;
        spot_status st = k % 3 == 0 ? soc_text(r->node, id, "i") : send_text(r->node, id, "s");
        if (st == SPOT_E_STALE_ROUTE) {
            char msg[256];
            spot_last_error(msg, sizeof msg);
            if (!strstr(msg, "closing")) {
                fprintf(stderr, "    a refusal that is not Closing: %s\n", msg);
                atomic_fetch_add(r->wrong, 1);
            }
        } else if (st != SPOT_OK && st != SPOT_E_NOT_FOUND && st != SPOT_E_APPLICATION_LANE_FULL) {
            fprintf(stderr, "    refusal %s\n", spot_status_name(st));
            atomic_fetch_add(r->wrong, 1);
        }
        size_t ev = 0;
        if (k % 64 == 0) spot_node_evict_idle(r->node, &ev);
        if (k % 5 == 0) usleep((useconds_t)(k % 200));
    }
    return NULL;
}

static void refusals_while_sends_race_evictions_say_closing(void) {
    struct env e;
    env_init(&e);
    uint64_t store = 0;
    CHECK_OK(spot_store_new(&store));
    struct spot_node_config c = config(1, &e);
    c.instance_idle_timeout_ns = 1 * MS;
    uint64_t a = start(&c, store);
    struct dispatcher d;
    dispatcher_start(&d, a);
    for (uint64_t i = 0; i < 256; i++) CHECK_OK(soc_text(a, i, "x"));
    atomic_ulong wrong;
    atomic_init(&wrong, 0);
    struct race r[4];
    pthread_t th[4];
    uint64_t until = now_ms() + 60000;
    for (int t = 0; t < 4; t++) {
        r[t].node = a;
        r[t].t = t;
        r[t].until = until;
        r[t].wrong = &wrong;
        pthread_create(&th[t], NULL, race_sender, &r[t]);
    }
    for (int t = 0; t < 4; t++) pthread_join(th[t], NULL);
    CHECK(now_ms() < until); /* progress within 60 s */
    CHECK_EQ_U64(atomic_load(&wrong), 0);
    EVENTUALLY((stats(a).messages_admitted ==
                stats(a).messages_completed + stats(a).messages_dropped), 10000);
    dispatcher_stop(&d);
    CHECK(stats(a).evicted >= 200);
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_store_free(store));
}

struct caller {
    uint64_t node;
    pthread_barrier_t *barrier;
    atomic_ulong *refused;
};

static void *activation_caller(void *arg) {
    struct caller *c = arg;
    for (int round = 0; round < 100; round++) {
        if (round % 20 == 0) pthread_barrier_wait(c->barrier);
        uint64_t gen = 0;
        if (spot_node_send_or_create(c->node, (uint64_t)(round % 3), NULL, 0, &gen) == SPOT_E_ACTIVE_CAP)
            atomic_fetch_add(c->refused, 1);
    }
    return NULL;
}

static void every_activation_refusal_a_caller_sees_is_counted(void) {
    struct env e;
    env_init(&e);
    uint64_t store = 0;
    CHECK_OK(spot_store_new(&store));
    struct spot_node_config c = config(1, &e);
    c.active_cap = 1;
    uint64_t a = start(&c, store);
    atomic_ulong refused;
    atomic_init(&refused, 0);
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 8);
    struct caller cs[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        cs[i].node = a;
        cs[i].barrier = &barrier;
        cs[i].refused = &refused;
        pthread_create(&th[i], NULL, activation_caller, &cs[i]);
    }
    for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&barrier);
    CHECK_EQ_U64(atomic_load(&refused), 800);
    CHECK_EQ_U64(stats(a).rejected_activation, atomic_load(&refused));
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_store_free(store));
}

static void an_oversized_first_message_creates_nothing(void) {
    struct env e;
    env_init(&e);
    uint64_t store = 0;
    CHECK_OK(spot_store_new(&store));
    struct spot_node_config c = config(1, &e);
    uint64_t a = start(&c, store);
    unsigned long before = atomic_load(&e.factory_runs);
    size_t big = (64u << 20) - 255;
    uint8_t *p = calloc(1, big);
    uint64_t gen = 0;
    CHECK_ST(spot_node_send_or_create(a, 9, p, big, &gen), SPOT_E_APPLICATION_LANE_FULL);
    CHECK_EQ_U64(atomic_load(&e.factory_runs), before);
    CHECK_ST(send_text(a, 9, "nothing there"), SPOT_E_NOT_FOUND);
    CHECK_EQ_U64(stats(a).rejected_application_lane, 1);
    CHECK_OK(spot_node_send_or_create(a, 9, p, big - 1, &gen));
    free(p);
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_store_free(store));
}

static void a_node_reported_down_is_not_sent_to_over_an_old_route(void) {
    struct env e;
    env_init(&e);
    uint64_t store = 0;
    CHECK_OK(spot_store_new(&store));
    struct spot_node_config ca = config(1, &e), cb = config(2, &e);
    uint64_t a = start(&ca, store), b = start(&cb, store);
    struct dispatcher db;
    dispatcher_start(&db, b);
    CHECK_OK(soc_text(b, 5, "on b"));
    CHECK_OK(send_text(a, 5, "cached"));
    EVENTUALLY(ran_count(&db) == 2, 5000);
    CHECK_OK(spot_store_mark_down(store, 2));
    uint64_t admitted = stats(b).messages_admitted;
    char msg[256];
    CHECK_ST(send_text(a, 5, "plain"), SPOT_E_UNAVAILABLE);
    spot_last_error(msg, sizeof msg);
    CHECK(strstr(msg, "did not run") != NULL);
    CHECK_ST(soc_text(a, 5, "intent"), SPOT_E_UNAVAILABLE);
    spot_last_error(msg, sizeof msg);
    CHECK(strstr(msg, "did not run") != NULL);
    CHECK_EQ_U64(stats(b).messages_admitted, admitted);
    CHECK_EQ_U64(atomic_load(&e.factory_runs), 3);
    dispatcher_stop(&db);
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_node_free(b));
    CHECK_OK(spot_store_free(store));
}

int main(void) {
    RUN(a_node_renews_its_own_owner_lease);
    RUN(a_node_runs_its_own_idle_scans);
    RUN(an_expired_node_admits_nothing_and_its_spot_runs_on_one_node_only);
    RUN(an_intent_during_a_closing_callback_waits_and_creates_again);
    RUN(refusals_while_sends_race_evictions_say_closing);
    RUN(every_activation_refusal_a_caller_sees_is_counted);
    RUN(an_oversized_first_message_creates_nothing);
    RUN(a_node_reported_down_is_not_sent_to_over_an_old_route);
    return finish_tests();
}
