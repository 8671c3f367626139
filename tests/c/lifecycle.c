/* The Spot lifecycle through the C ABI (docs/lifecycle.md, L1-L7): the verification items
 * lifecycle_l01 ... lifecycle_l16 with the same meaning as lifecycle/tests/lifecycle.rs,
 * plus bad input (unknown kinds and lanes, wrong kinds, freed and made-up handles, NULL
 * out pointers, unknown completion tokens, calls after spot_node_free). Nodes run on the
 * manual clock and share one embedded store per test; every node and store is freed (the
 * suite runs under ASan/UBSan and valgrind). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>

#include "contract.h"
#include "util.h"

#define LC_S 7ULL /* the Spot most tests use */
#define SEC (1000 * MS)
#define LC_BATCH 64
#define LC_MAX_RAN 256
#define LC_MAX_CLOSES 64

/* ---- The host: a counting factory and a closing callback that records its calls ---- */

struct lc_close {
    uint64_t spot;
    uint32_t kind;
    uint32_t reason;
};

struct lc_env {
    atomic_ulong factory_runs; /* every call, the Entry Spots' included */
    atomic_ulong runs_of_s;    /* calls for LC_S */
    atomic_int s_entered;      /* the factory for LC_S has started */
    atomic_int fail_s;         /* non-zero: the factory fails for LC_S */
    unsigned s_sleep_ms;       /* the factory sleeps this long for LC_S */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct lc_close closes[LC_MAX_CLOSES];
    size_t n_closes;
    /* L11: while the eviction's callback runs, a probe thread sends to LC_S from
     * probe_a (the owner) and probe_b (another node of the store). */
    int probe;
    uint64_t probe_a, probe_b;
    pthread_t probe_thread;
    int probe_started, probe_done, probe_timed_out;
    spot_status probe_st_a, probe_st_b;
};

static void env_init(struct lc_env *e) {
    memset(e, 0, sizeof *e);
    atomic_init(&e->factory_runs, 0);
    atomic_init(&e->runs_of_s, 0);
    atomic_init(&e->s_entered, 0);
    atomic_init(&e->fail_s, 0);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
}

static void env_destroy(struct lc_env *e) {
    if (e->probe_started) pthread_join(e->probe_thread, NULL);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
}

static int32_t lc_factory(void *env, uint64_t spot_id, uint32_t kind, char *msg, size_t msg_len) {
    struct lc_env *e = env;
    (void)kind;
    atomic_fetch_add(&e->factory_runs, 1);
    if (spot_id != LC_S) return 0;
    atomic_fetch_add(&e->runs_of_s, 1);
    atomic_store(&e->s_entered, 1);
    if (e->s_sleep_ms) sleep_ms(e->s_sleep_ms);
    if (atomic_load(&e->fail_s)) {
        snprintf(msg, msg_len, "no room for %llu", (unsigned long long)spot_id);
        return 1;
    }
    return 0;
}

static void *lc_probe(void *arg) {
    struct lc_env *e = arg;
    const uint8_t p = 'p';
    spot_status b = spot_node_send(e->probe_b, LC_S, SPOT_LANE_APPLICATION, &p, 1);
    spot_status a = spot_node_send(e->probe_a, LC_S, SPOT_LANE_APPLICATION, &p, 1);
    pthread_mutex_lock(&e->mu);
    e->probe_st_a = a;
    e->probe_st_b = b;
    e->probe_done = 1;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

static void lc_on_close(void *env, uint64_t spot_id, uint32_t kind, uint32_t reason) {
    struct lc_env *e = env;
    pthread_mutex_lock(&e->mu);
    if (e->n_closes < LC_MAX_CLOSES) {
        struct lc_close c = {spot_id, kind, reason};
        e->closes[e->n_closes++] = c;
    }
    int probe = e->probe && spot_id == LC_S && reason == SPOT_CLOSE_IDLE_EVICTED && !e->probe_started;
    if (probe && pthread_create(&e->probe_thread, NULL, lc_probe, e) == 0) {
        /* The callback itself does not call into the node: another thread does, while
         * the callback has not returned (waited for, with a time limit). */
        e->probe_started = 1;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 20;
        while (!e->probe_done) {
            if (pthread_cond_timedwait(&e->cv, &e->mu, &until) == ETIMEDOUT) {
                e->probe_timed_out = 1;
                break;
            }
        }
    }
    pthread_mutex_unlock(&e->mu);
}

/* The closing callbacks recorded for `spot` with `reason`. */
static size_t closes_of(struct lc_env *e, uint64_t spot, uint32_t reason, uint32_t *kind) {
    size_t n = 0;
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < e->n_closes; i++) {
        if (e->closes[i].spot == spot && e->closes[i].reason == reason) {
            n++;
            if (kind) *kind = e->closes[i].kind;
        }
    }
    pthread_mutex_unlock(&e->mu);
    return n;
}

/* A config for node `id` (Entry Spot 1000 + id) on the manual clock, with the host above. */
static struct spot_node_config lc_config(uint64_t id, struct lc_env *env) {
    struct spot_node_config c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.clock = SPOT_CLOCK_MANUAL;
    c.node_id = id;
    c.entry_spot = 1000 + id;
    c.factory = lc_factory;
    c.on_close = lc_on_close;
    c.env = env;
    return c;
}

static uint64_t lc_start(const struct spot_node_config *cfg, uint64_t store) {
    uint64_t n = 0;
    CHECK_OK(spot_node_start(cfg, store, &n));
    return n;
}

static uint64_t lc_node(uint64_t id, struct lc_env *env, uint64_t store) {
    struct spot_node_config c = lc_config(id, env);
    return lc_start(&c, store);
}

static uint64_t lc_store(void) {
    uint64_t s = 0;
    CHECK_OK(spot_store_new(&s));
    return s;
}

static struct spot_node_stats lc_stats(uint64_t node) {
    struct spot_node_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    CHECK_OK(spot_node_stats(node, &s));
    return s;
}

static spot_status lc_send(uint64_t node, uint64_t spot, const char *text) {
    return spot_node_send(node, spot, SPOT_LANE_APPLICATION, (const uint8_t *)text, strlen(text));
}

static spot_status lc_send_lifecycle(uint64_t node, uint64_t spot, const char *text) {
    return spot_node_send(node, spot, SPOT_LANE_LIFECYCLE, (const uint8_t *)text, strlen(text));
}

static spot_status lc_send_n(uint64_t node, uint64_t spot, size_t len) {
    static uint8_t zeros[64 << 10];
    return spot_node_send(node, spot, SPOT_LANE_APPLICATION, len ? zeros : NULL, len);
}

static spot_status lc_soc(uint64_t node, uint64_t spot, const char *text, uint64_t *gen) {
    return spot_node_send_or_create(node, spot, (const uint8_t *)text, strlen(text), gen);
}

/* ---- Running work: what a handler saw ---- */

struct lc_ran {
    uint32_t kind; /* SPOT_WORK_* */
    uint32_t lane;
    uint64_t spot;
    uint64_t key;
    uint64_t value;
    size_t len;
    char text[32];
};

struct lc_log {
    struct lc_ran r[LC_MAX_RAN];
    size_t n;     /* all that ran (only the first LC_MAX_RAN are kept) */
    size_t stale; /* records spot_node_begin refused */
};

/* Lets the node's timer runtime deliver what is due, then runs every ready record: begin,
 * record what it carried, complete OK (NOT_STARTED when begin refuses); until nothing is
 * ready. The completions of the last batch go back with the final, empty exchange. */
static void lc_drain(uint64_t node, struct lc_log *log) {
    struct spot_node_record recs[LC_BATCH];
    struct spot_node_completion done[LC_BATCH];
    size_t n_done = 0;
    memset(log, 0, sizeof *log);
    for (int rounds = 0; rounds < 100000; rounds++) {
        size_t n = 0;
        CHECK_OK(spot_node_advance(node, 0));
        spot_status st = spot_node_exchange(node, done, n_done, recs, LC_BATCH, 0, &n);
        CHECK_OK(st);
        n_done = 0;
        if (st != SPOT_OK || n == 0) return;
        for (size_t i = 0; i < n; i++) {
            const struct spot_node_record *r = &recs[i];
            done[n_done].token = r->token;
            done[n_done].reserved = 0;
            if (spot_node_begin(node, r->token) != SPOT_OK) {
                log->stale++;
                done[n_done++].outcome = SPOT_OUTCOME_NOT_STARTED;
                continue;
            }
            if (log->n < LC_MAX_RAN) {
                struct lc_ran *x = &log->r[log->n];
                memset(x, 0, sizeof *x);
                x->kind = r->kind;
                x->lane = r->lane;
                x->spot = r->spot_id;
                x->key = r->key;
                x->value = r->value;
                x->len = r->payload_len;
                if (r->payload_len) {
                    size_t k = r->payload_len < sizeof x->text - 1 ? r->payload_len : sizeof x->text - 1;
                    memcpy(x->text, r->payload, k);
                }
            }
            log->n++;
            done[n_done++].outcome = SPOT_OUTCOME_OK;
        }
    }
    CHECK(!"lc_drain: the node never became quiet");
}

/* Receives ready records without completing them. */
static size_t lc_take(uint64_t node, struct spot_node_record *out, size_t cap) {
    size_t n = 0;
    CHECK_OK(spot_node_advance(node, 0));
    CHECK_OK(spot_node_exchange(node, NULL, 0, out, cap, 0, &n));
    return n;
}

static size_t messages_for(const struct lc_log *log, uint64_t spot) {
    size_t n = 0;
    for (size_t i = 0; i < log->n && i < LC_MAX_RAN; i++)
        if (log->r[i].kind == SPOT_WORK_MESSAGE && log->r[i].spot == spot) n++;
    return n;
}

/* Whether message `i` of the log is `text` for `spot`. */
static int ran_msg(const struct lc_log *log, size_t i, uint64_t spot, const char *text) {
    return i < log->n && i < LC_MAX_RAN && log->r[i].kind == SPOT_WORK_MESSAGE &&
           log->r[i].spot == spot && log->r[i].len == strlen(text) &&
           strcmp(log->r[i].text, text) == 0;
}

static uint32_t kind_of(uint64_t node, uint64_t spot, spot_status want) {
    uint32_t k = 0;
    CHECK_ST(spot_node_spot_kind(node, spot, &k), want);
    return k;
}

static void lane_use(uint64_t node, uint64_t spot, uint32_t lane, uint64_t *items, uint64_t *bytes) {
    *items = *bytes = 0xdead;
    CHECK_OK(spot_node_lane_use(node, spot, lane, items, bytes));
}

/* ---- L1, L2: kinds; the Entry Spot stays, its actors move ---- */

static void lifecycle_l01_the_entry_spot_is_not_relocated_its_actors_are(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    uint64_t node = lc_node(1, &env, store);
    CHECK_OK(spot_node_add_entry_actor(node, 501));
    CHECK_OK(spot_node_add_entry_actor(node, 502));
    CHECK_OK(spot_node_add_entry_actor(node, 502)); /* once only */
    uint64_t gen_user = 0, gen_inst = 0;
    CHECK_OK(spot_node_create_user_spot(node, 20, &gen_user));
    CHECK_OK(lc_soc(node, 30, "hi", &gen_inst));
    CHECK(gen_user != 0 && gen_inst != 0);

    struct spot_relocation_target t[8];
    size_t n = 0, total = 0;
    CHECK_OK(spot_node_relocation_targets(node, t, 8, &n, &total));
    CHECK_EQ_U64(n, 4);
    CHECK_EQ_U64(total, 4);
    int actor501 = 0, actor502 = 0, user = 0, inst = 0, entry = 0;
    for (size_t i = 0; i < n && i < 8; i++) {
        if (t[i].what == SPOT_TARGET_ENTRY_ACTOR) {
            CHECK_EQ_U64(t[i].spot_kind, 0);
            actor501 += t[i].id == 501;
            actor502 += t[i].id == 502;
        } else {
            CHECK_EQ_U64(t[i].what, SPOT_TARGET_SPOT);
            user += t[i].id == 20 && t[i].spot_kind == SPOT_KIND_USER;
            inst += t[i].id == 30 && t[i].spot_kind == SPOT_KIND_INSTANCE;
            entry += t[i].id == 1001 || t[i].spot_kind == SPOT_KIND_ENTRY;
        }
    }
    CHECK(actor501 == 1 && actor502 == 1 && user == 1 && inst == 1);
    CHECK(entry == 0); /* never the Entry Spot itself */
    /* a short array: the first `cap` targets, the full count in *out_total */
    n = 0;
    total = 0;
    CHECK_OK(spot_node_relocation_targets(node, t, 1, &n, NULL));
    CHECK_EQ_U64(n, 1);
    CHECK_OK(spot_node_relocation_targets(node, t, 2, &n, &total));
    CHECK_EQ_U64(n, 2);
    CHECK_EQ_U64(total, 4);

    /* three kinds: the node knows each Spot's */
    CHECK_EQ_U64(kind_of(node, 1001, SPOT_OK), SPOT_KIND_ENTRY);
    CHECK_EQ_U64(kind_of(node, 20, SPOT_OK), SPOT_KIND_USER);
    CHECK_EQ_U64(kind_of(node, 30, SPOT_OK), SPOT_KIND_INSTANCE);
    /* an id of one kind is refused where another is asked for */
    CHECK_ST(spot_node_close_spot(node, 30, SPOT_KIND_USER), SPOT_E_WRONG_KIND);
    CHECK_ST(spot_node_close_spot(node, 20, SPOT_KIND_INSTANCE), SPOT_E_WRONG_KIND);
    CHECK_ST(lc_soc(node, 20, "x", NULL), SPOT_E_WRONG_KIND); /* a User Spot is no Instance */
    CHECK_ST(spot_node_create_user_spot(node, 30, NULL), SPOT_E_WRONG_KIND);
    /* the kind numbers: 0 and every unknown number are refused */
    CHECK_EQ_U64(SPOT_KIND_INVALID, 0);
    CHECK_EQ_U64(SPOT_KIND_ENTRY, 1);
    CHECK_EQ_U64(SPOT_KIND_USER, 2);
    CHECK_EQ_U64(SPOT_KIND_INSTANCE, 3);
    CHECK_ST(spot_node_close_spot(node, 30, 0), SPOT_E_UNKNOWN_ENUM);
    CHECK_ST(spot_node_close_spot(node, 30, 4), SPOT_E_UNKNOWN_ENUM);
    CHECK_EQ_U64(kind_of(node, 30, SPOT_OK), SPOT_KIND_INSTANCE); /* still there */
    CHECK_OK(spot_node_free(node));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

/* ---- L3: only an explicit intent creates; once; publication ---- */

static void lifecycle_l02_an_ordinary_message_to_a_missing_id_creates_nothing(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    uint64_t node = lc_node(1, &env, store);
    uint64_t runs_at_start = atomic_load(&env.factory_runs); /* the Entry Spot's */
    CHECK_EQ_U64(runs_at_start, 1);
    CHECK_ST(lc_send(node, LC_S, "x"), SPOT_E_NOT_FOUND);
    CHECK_ST(lc_send_lifecycle(node, LC_S, "x"), SPOT_E_NOT_FOUND);
    uint32_t k = 99;
    CHECK_ST(spot_node_spot_kind(node, LC_S, &k), SPOT_E_NOT_FOUND);
    CHECK_EQ_U64(k, 99);
    uint64_t items, bytes;
    CHECK_ST(spot_node_lane_use(node, LC_S, SPOT_LANE_APPLICATION, &items, &bytes), SPOT_E_NOT_FOUND);
    CHECK_ST(spot_node_every(node, LC_S, 1, 10 * MS, 0), SPOT_E_NOT_FOUND);
    CHECK_ST(spot_node_close_spot(node, LC_S, SPOT_KIND_INSTANCE), SPOT_E_NOT_FOUND);
    CHECK_EQ_U64(atomic_load(&env.factory_runs), runs_at_start); /* no factory ran */
    struct spot_node_stats s = lc_stats(node);
    CHECK_EQ_U64(s.active_spots, 1); /* only the Entry Spot */
    CHECK_EQ_U64(s.created, 1);
    CHECK_EQ_U64(s.messages_admitted, 0);
    /* nothing in the store either: another node of the store finds nothing */
    uint64_t other = lc_node(2, &env, store);
    CHECK_ST(lc_send(other, LC_S, "x"), SPOT_E_NOT_FOUND);

    /* The explicit intent creates. */
    uint64_t gen = 0;
    CHECK_OK(lc_soc(node, LC_S, "hello", &gen));
    CHECK(gen != 0);
    CHECK_EQ_U64(atomic_load(&env.runs_of_s), 1);
    CHECK_EQ_U64(kind_of(node, LC_S, SPOT_OK), SPOT_KIND_INSTANCE);
    struct lc_log log;
    lc_drain(node, &log);
    CHECK_EQ_U64(log.n, 1);
    CHECK(ran_msg(&log, 0, LC_S, "hello"));
    CHECK_EQ_U64(log.r[0].lane, SPOT_LANE_APPLICATION);
    /* and an ordinary message now reaches it, from this node and from the other */
    CHECK_OK(lc_send(node, LC_S, "again"));
    CHECK_OK(lc_send(other, LC_S, "routed"));
    lc_drain(node, &log);
    CHECK_EQ_U64(log.n, 2);
    CHECK(ran_msg(&log, 0, LC_S, "again"));
    CHECK(ran_msg(&log, 1, LC_S, "routed"));
    /* send_or_create of an existing Spot creates nothing more */
    uint64_t gen2 = 0;
    CHECK_OK(lc_soc(node, LC_S, "third", &gen2));
    CHECK_EQ_U64(gen2, gen);
    CHECK_EQ_U64(atomic_load(&env.runs_of_s), 1);
    lc_drain(node, &log);
    CHECK(ran_msg(&log, 0, LC_S, "third"));
    s = lc_stats(node);
    CHECK_EQ_U64(s.messages_admitted, 4);
    CHECK_EQ_U64(s.messages_completed, 4);
    CHECK_EQ_U64(s.messages_dropped, 0);
    CHECK_OK(spot_node_free(other));
    CHECK_OK(spot_node_free(node));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

#define L03_THREADS 16

struct l03_arg {
    uint64_t node;
    uint8_t byte;
    pthread_barrier_t *barrier;
    spot_status st;
    uint64_t gen;
};

static void *l03_caller(void *p) {
    struct l03_arg *a = p;
    pthread_barrier_wait(a->barrier);
    a->st = spot_node_send_or_create(a->node, LC_S, &a->byte, 1, &a->gen);
    return NULL;
}

static void lifecycle_l03_concurrent_creation_runs_the_factory_once(void) {
    struct lc_env env;
    env_init(&env);
    env.s_sleep_ms = 30; /* let the others pile up */
    uint64_t store = lc_store();
    /* two nodes racing: the store's reservation decides across nodes */
    uint64_t nodes[2] = {lc_node(1, &env, store), lc_node(2, &env, store)};
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, L03_THREADS);
    struct l03_arg args[L03_THREADS];
    pthread_t th[L03_THREADS];
    for (int i = 0; i < L03_THREADS; i++) {
        args[i].node = nodes[i % 2];
        args[i].byte = (uint8_t)i;
        args[i].barrier = &barrier;
        args[i].st = SPOT_E_PANIC;
        args[i].gen = 0;
        CHECK(pthread_create(&th[i], NULL, l03_caller, &args[i]) == 0);
    }
    for (int i = 0; i < L03_THREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&barrier);
    CHECK_EQ_U64(atomic_load(&env.runs_of_s), 1); /* the factory ran once */
    for (int i = 0; i < L03_THREADS; i++) {
        CHECK_ST(args[i].st, SPOT_OK); /* every caller reaches the Spot */
        CHECK_EQ_U64(args[i].gen, args[0].gen); /* one Spot */
    }
    /* one owner; the other node does not have it */
    uint32_t k0 = 0, k1 = 0;
    spot_status s0 = spot_node_spot_kind(nodes[0], LC_S, &k0);
    spot_status s1 = spot_node_spot_kind(nodes[1], LC_S, &k1);
    CHECK((s0 == SPOT_OK) != (s1 == SPOT_OK));
    CHECK(s0 == SPOT_E_NOT_FOUND || s1 == SPOT_E_NOT_FOUND);
    uint64_t owner = s0 == SPOT_OK ? nodes[0] : nodes[1];
    uint64_t idle = s0 == SPOT_OK ? nodes[1] : nodes[0];
    CHECK_EQ_U64(s0 == SPOT_OK ? k0 : k1, SPOT_KIND_INSTANCE);
    struct lc_log log;
    lc_drain(owner, &log);
    CHECK_EQ_U64(messages_for(&log, LC_S), L03_THREADS); /* every caller's message ran */
    int seen[L03_THREADS] = {0};
    for (size_t i = 0; i < log.n && i < LC_MAX_RAN; i++)
        if (log.r[i].len == 1 && (uint8_t)log.r[i].text[0] < L03_THREADS)
            seen[(uint8_t)log.r[i].text[0]]++;
    for (int i = 0; i < L03_THREADS; i++) CHECK_EQ_U64(seen[i], 1);
    lc_drain(idle, &log);
    CHECK_EQ_U64(log.n, 0);
    struct spot_node_stats a = lc_stats(nodes[0]), b = lc_stats(nodes[1]);
    CHECK_EQ_U64(a.created + b.created, 3); /* two Entry Spots and S */
    CHECK_EQ_U64(a.creation_failures + b.creation_failures, 0);
    CHECK_OK(spot_node_free(nodes[0]));
    CHECK_OK(spot_node_free(nodes[1]));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

struct l04_arg {
    uint64_t node;
    spot_status st;
};

static void *l04_creator(void *p) {
    struct l04_arg *a = p;
    a->st = lc_soc(a->node, LC_S, "first", NULL);
    return NULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void lifecycle_l04_a_message_right_after_creation_is_processed_at_once(void) {
    struct lc_env env_a, env_b;
    env_init(&env_a);
    env_init(&env_b);
    env_a.s_sleep_ms = 100; /* a slow factory on A */
    uint64_t store = lc_store();
    uint64_t a = lc_node(1, &env_a, store);
    uint64_t b = lc_node(2, &env_b, store);
    struct l04_arg arg = {a, SPOT_E_PANIC};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, l04_creator, &arg) == 0);
    /* The factory runs after the reservation: from now on S is Creating. */
    double give_up = now_s() + 30;
    while (!atomic_load(&env_a.s_entered) && now_s() < give_up) sleep_ms(1);
    CHECK(atomic_load(&env_a.s_entered));
    /* Node B sends while S is Creating: it waits for that creation (Creating is never
     * cached as a route) and is admitted as soon as Ready is committed. */
    double t0 = now_s();
    CHECK_OK(lc_send(b, LC_S, "second"));
    double waited = now_s() - t0;
    pthread_join(th, NULL);
    CHECK_ST(arg.st, SPOT_OK);
    CHECK(waited < 4.0); /* within the creation, not a cache lifetime */
    CHECK_EQ_U64(atomic_load(&env_a.runs_of_s), 1);
    CHECK_EQ_U64(atomic_load(&env_b.runs_of_s), 0);
    struct lc_log log;
    lc_drain(a, &log);
    CHECK_EQ_U64(log.n, 2);
    CHECK(ran_msg(&log, 0, LC_S, "first")); /* the creator's message first */
    CHECK(ran_msg(&log, 1, LC_S, "second"));
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_node_free(b));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env_a);
    env_destroy(&env_b);
}

static void lifecycle_l05_unavailable_starts_no_creation(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    uint64_t a = lc_node(1, &env, store);
    uint64_t b = lc_node(2, &env, store);
    CHECK_OK(lc_soc(b, LC_S, "on b", NULL));
    /* (The runs of LC_S's factory: node 2, its term ended, creates its own Entry Spot again.) */
    uint64_t runs = atomic_load(&env.runs_of_s);
    CHECK_OK(spot_store_mark_down(store, 2));
    /* The authority exists, its owner is down: the request ends, nothing is created. */
    CHECK_ST(lc_soc(a, LC_S, "x", NULL), SPOT_E_UNAVAILABLE);
    CHECK_ST(lc_send(a, LC_S, "x"), SPOT_E_UNAVAILABLE);
    CHECK_ST(spot_node_create_user_spot(a, LC_S, NULL), SPOT_E_UNAVAILABLE);
    CHECK_EQ_U64(atomic_load(&env.runs_of_s), runs); /* no creation started */
    CHECK_ST(spot_node_spot_kind(a, LC_S, &(uint32_t){0}), SPOT_E_NOT_FOUND);
    /* Once the owner's lease is over its authority is released: the intent creates. */
    CHECK_OK(spot_store_expire_node(store, 2));
    uint64_t gen = 0;
    CHECK_OK(lc_soc(a, LC_S, "on a", &gen));
    CHECK_EQ_U64(atomic_load(&env.runs_of_s), runs + 1);
    CHECK_EQ_U64(kind_of(a, LC_S, SPOT_OK), SPOT_KIND_INSTANCE);
    struct lc_log log;
    lc_drain(a, &log);
    CHECK_EQ_U64(log.n, 1);
    CHECK(ran_msg(&log, 0, LC_S, "on a"));
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_node_free(b));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

/* ---- L4: stale owners are filtered by owner and lease, not by generation ---- */

static void lifecycle_l06_messages_are_not_rejected_for_a_new_object_generation(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    uint64_t a = lc_node(1, &env, store);
    uint64_t b = lc_node(2, &env, store);
    uint64_t first = 0, second = 0;
    CHECK_OK(lc_soc(a, LC_S, "1", &first));
    CHECK_OK(lc_send(b, LC_S, "2")); /* B caches a route to A */
    struct lc_log log;
    lc_drain(a, &log);
    CHECK_EQ_U64(messages_for(&log, LC_S), 2);
    CHECK_OK(spot_node_close_spot(a, LC_S, SPOT_KIND_INSTANCE));
    CHECK_EQ_U64(closes_of(&env, LC_S, SPOT_CLOSE_CLOSED, NULL), 1);
    CHECK_ST(lc_send(a, LC_S, "gone"), SPOT_E_NOT_FOUND);
    CHECK_OK(lc_soc(a, LC_S, "3", &second));
    CHECK(second > first); /* re-created: a new object generation */
    /* right after the re-creation: ordinary messages, also over B's older route, run */
    CHECK_OK(lc_send(a, LC_S, "4"));
    CHECK_OK(lc_send(b, LC_S, "5"));
    lc_drain(a, &log);
    CHECK_EQ_U64(messages_for(&log, LC_S), 3);
    CHECK(ran_msg(&log, 0, LC_S, "3"));
    CHECK(ran_msg(&log, 1, LC_S, "4"));
    CHECK(ran_msg(&log, 2, LC_S, "5"));
    CHECK_EQ_U64(log.stale, 0);
    CHECK_EQ_U64(lc_stats(b).stale_routes, 0);
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_node_free(b));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

static void lifecycle_l07_a_stale_route_ends_with_stale_route_and_is_not_retried(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    uint64_t a = lc_node(1, &env, store);
    uint64_t b = lc_node(2, &env, store);
    uint64_t c = lc_node(3, &env, store);
    CHECK_OK(lc_soc(b, LC_S, "b", NULL));
    CHECK_OK(lc_send(a, LC_S, "cache")); /* A caches the route to B */
    struct lc_log log;
    lc_drain(b, &log);
    CHECK_EQ_U64(messages_for(&log, LC_S), 2);
    /* S moves: closed on B, created again on C */
    CHECK_OK(spot_node_close_spot(b, LC_S, SPOT_KIND_INSTANCE));
    CHECK_OK(lc_soc(c, LC_S, "c", NULL));
    uint64_t stale_before = lc_stats(a).stale_routes;
    uint64_t admitted_b = lc_stats(b).messages_admitted;
    uint64_t admitted_c = lc_stats(c).messages_admitted;
    CHECK_ST(lc_send(a, LC_S, "stale"), SPOT_E_STALE_ROUTE);
    CHECK_EQ_U64(lc_stats(a).stale_routes, stale_before + 1);
    /* the handler ran zero times for it, anywhere: no automatic retry */
    CHECK_EQ_U64(lc_stats(b).messages_admitted, admitted_b);
    CHECK_EQ_U64(lc_stats(c).messages_admitted, admitted_c);
    lc_drain(b, &log);
    CHECK_EQ_U64(log.n, 0);
    lc_drain(c, &log);
    CHECK_EQ_U64(log.n, 1);
    CHECK(ran_msg(&log, 0, LC_S, "c"));
    lc_drain(a, &log);
    CHECK_EQ_U64(log.n, 0);
    /* a new call by the application finds the current owner */
    CHECK_OK(lc_send(a, LC_S, "new call"));
    lc_drain(c, &log);
    CHECK_EQ_U64(log.n, 1);
    CHECK(ran_msg(&log, 0, LC_S, "new call"));
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_node_free(b));
    CHECK_OK(spot_node_free(c));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

static void lifecycle_l07_an_owner_whose_lease_ran_out_refuses_with_stale_route(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    struct spot_node_config cfg = lc_config(1, &env);
    cfg.owner_lease_ns = 50 * MS;
    uint64_t a = lc_start(&cfg, store);
    CHECK_OK(lc_soc(a, LC_S, "x", NULL));
    struct lc_log log;
    lc_drain(a, &log);
    CHECK_EQ_U64(messages_for(&log, LC_S), 1);
    CHECK_OK(spot_node_advance(a, 100 * MS));
    uint64_t stale_before = lc_stats(a).stale_routes;
    /* Refused as a stale route, or — once the node's lease keeper has given the Spot up,
     * which it does on its own thread at any moment after the advance — not found. */
    spot_status st = lc_send(a, LC_S, "late");
    CHECK(st == SPOT_E_STALE_ROUTE || st == SPOT_E_NOT_FOUND);
    CHECK_EQ_U64(lc_stats(a).stale_routes, stale_before + (st == SPOT_E_STALE_ROUTE));
    lc_drain(a, &log);
    CHECK_EQ_U64(log.n, 0); /* nothing ran */
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

/* ---- L5: the active cap, idle eviction ---- */

static void lifecycle_l08_at_the_active_cap_a_new_activation_is_rejected(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    struct spot_node_config cfg = lc_config(1, &env);
    cfg.active_cap = 3; /* the Entry Spot and two more */
    uint64_t a = lc_start(&cfg, store);
    CHECK_OK(spot_node_send_or_create(a, 1, NULL, 0, NULL));
    CHECK_OK(spot_node_create_user_spot(a, 2, NULL));
    uint64_t runs = atomic_load(&env.factory_runs);
    CHECK_ST(spot_node_send_or_create(a, 3, NULL, 0, NULL), SPOT_E_ACTIVE_CAP);
    CHECK_ST(spot_node_create_user_spot(a, 4, NULL), SPOT_E_ACTIVE_CAP);
    struct spot_node_stats s = lc_stats(a);
    CHECK_EQ_U64(s.rejected_activation, 2);
    CHECK_EQ_U64(s.active_spots, 3);
    CHECK_EQ_U64(atomic_load(&env.factory_runs), runs); /* no factory ran */
    CHECK_ST(lc_send(a, 3, "x"), SPOT_E_NOT_FOUND);     /* nothing reserved */
    /* Placement: with another node below its cap, the new Spot is placed there. */
    uint64_t b = lc_node(2, &env, store);
    CHECK_OK(lc_soc(a, 3, "placed", NULL));
    CHECK_EQ_U64(kind_of(b, 3, SPOT_OK), SPOT_KIND_INSTANCE);
    CHECK_ST(spot_node_spot_kind(a, 3, &(uint32_t){0}), SPOT_E_NOT_FOUND);
    struct lc_log log;
    lc_drain(b, &log);
    CHECK_EQ_U64(log.n, 1);
    CHECK(ran_msg(&log, 0, 3, "placed"));
    lc_drain(a, &log);
    CHECK_EQ_U64(log.n, 1); /* Spot 1's empty creating message */
    CHECK(ran_msg(&log, 0, 1, ""));
    CHECK_EQ_U64(lc_stats(a).rejected_activation, 2);
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_node_free(b));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

/* L5 placement: "a full node is not chosen; another live node below its cap is". A node
 * that was freed (spot_node_free) or whose start failed is not live: a full node with no
 * live node below its cap refuses with SPOT_E_ACTIVE_CAP. */
static void lifecycle_l08_a_freed_node_is_not_chosen_for_placement(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    struct spot_node_config cfg = lc_config(1, &env);
    cfg.active_cap = 1; /* the Entry Spot only */
    uint64_t a = lc_start(&cfg, store);
    uint64_t b = lc_node(2, &env, store);
    CHECK_OK(spot_node_free(b));
    CHECK_ST(spot_node_send_or_create(a, 50, NULL, 0, NULL), SPOT_E_ACTIVE_CAP);
    CHECK_ST(spot_node_create_user_spot(a, 51, NULL), SPOT_E_ACTIVE_CAP);
    /* a node whose start failed (its Entry Spot id is node 1's) */
    struct spot_node_config dup = lc_config(3, &env);
    dup.entry_spot = 1001;
    uint64_t out = 77;
    CHECK_ST(spot_node_start(&dup, store, &out), SPOT_E_INVALID_ARGUMENT);
    CHECK_ST(spot_node_send_or_create(a, 52, NULL, 0, NULL), SPOT_E_ACTIVE_CAP);
    /* a live node below its cap is chosen */
    uint64_t c = lc_node(4, &env, store);
    CHECK_OK(spot_node_send_or_create(a, 53, NULL, 0, NULL));
    CHECK_EQ_U64(kind_of(c, 53, SPOT_OK), SPOT_KIND_INSTANCE);
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_node_free(c));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

static uint64_t idle_node(struct lc_env *env, uint64_t store, uint64_t timeout_s) {
    struct spot_node_config cfg = lc_config(1, env);
    cfg.instance_idle_timeout_ns = timeout_s * SEC;
    return lc_start(&cfg, store);
}

static size_t evict(uint64_t node) {
    size_t n = 12345;
    CHECK_OK(spot_node_evict_idle(node, &n));
    return n;
}

static void lifecycle_l09_only_instance_spots_are_evicted(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    uint64_t node = idle_node(&env, store, 10);
    CHECK_OK(spot_node_create_user_spot(node, 20, NULL));
    CHECK_OK(lc_soc(node, 30, "x", NULL));
    struct lc_log log;
    lc_drain(node, &log);
    CHECK_OK(spot_node_advance(node, 20 * SEC));
    CHECK_EQ_U64(evict(node), 1);
    CHECK_ST(spot_node_spot_kind(node, 30, &(uint32_t){0}), SPOT_E_NOT_FOUND);
    CHECK_EQ_U64(kind_of(node, 20, SPOT_OK), SPOT_KIND_USER);    /* never evicted */
    CHECK_EQ_U64(kind_of(node, 1001, SPOT_OK), SPOT_KIND_ENTRY); /* the Entry Spot stays */
    uint32_t kind = 0;
    CHECK_EQ_U64(closes_of(&env, 30, SPOT_CLOSE_IDLE_EVICTED, &kind), 1);
    CHECK_EQ_U64(kind, SPOT_KIND_INSTANCE);
    CHECK_EQ_U64(closes_of(&env, 20, SPOT_CLOSE_IDLE_EVICTED, NULL), 0);
    struct spot_node_stats s = lc_stats(node);
    CHECK_EQ_U64(s.evicted, 1);
    CHECK_EQ_U64(s.closed, 0);
    CHECK_EQ_U64(s.active_spots, 2);
    CHECK(s.eviction_passes >= 1);
    /* much later, still only the Entry and User Spots */
    CHECK_OK(spot_node_advance(node, 3600 * SEC));
    CHECK_EQ_U64(evict(node), 0);
    CHECK_EQ_U64(lc_stats(node).active_spots, 2);
    CHECK_OK(spot_node_free(node));
    /* at shutdown the User and Entry Spots close with NODE_SHUTDOWN */
    CHECK_EQ_U64(closes_of(&env, 20, SPOT_CLOSE_NODE_SHUTDOWN, NULL), 1);
    CHECK_EQ_U64(closes_of(&env, 1001, SPOT_CLOSE_NODE_SHUTDOWN, &kind), 1);
    CHECK_EQ_U64(kind, SPOT_KIND_ENTRY);
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

static void lifecycle_l10_a_spot_with_work_in_progress_is_not_evicted(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    uint64_t node = idle_node(&env, store, 10);
    CHECK_OK(lc_soc(node, LC_S, "running", NULL));
    struct spot_node_record held[4];
    size_t n = lc_take(node, held, 4);
    CHECK_EQ_U64(n, 1);
    if (n != 1) {
        CHECK_OK(spot_node_free(node));
        CHECK_OK(spot_store_free(store));
        env_destroy(&env);
        return;
    }
    CHECK_OK(spot_node_begin(node, held[0].token));
    CHECK_OK(lc_send(node, LC_S, "queued"));
    CHECK_OK(spot_node_advance(node, 30 * SEC));
    CHECK_EQ_U64(evict(node), 0); /* running and queued work */
    /* the handler finishes; the queued message runs; the Spot is idle only from then on */
    struct spot_node_completion c = {held[0].token, SPOT_OUTCOME_OK, 0};
    CHECK_OK(spot_node_complete(node, &c, 1));
    struct lc_log log;
    lc_drain(node, &log);
    CHECK_EQ_U64(log.n, 1);
    CHECK(ran_msg(&log, 0, LC_S, "queued"));
    CHECK_EQ_U64(evict(node), 0); /* its last work finished just now */
    CHECK_OK(spot_node_advance(node, 11 * SEC));
    CHECK_EQ_U64(evict(node), 1);
    CHECK_EQ_U64(closes_of(&env, LC_S, SPOT_CLOSE_IDLE_EVICTED, NULL), 1);
    CHECK_OK(spot_node_free(node));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

static void lifecycle_l11_eviction_calls_the_closing_callback_before_releasing_the_location(void) {
    struct lc_env env, env_b;
    env_init(&env);
    env_init(&env_b);
    uint64_t store = lc_store();
    uint64_t a = idle_node(&env, store, 10);
    uint64_t b = lc_node(2, &env_b, store);
    CHECK_OK(lc_soc(a, LC_S, "x", NULL));
    struct lc_log log;
    lc_drain(a, &log);
    CHECK_OK(spot_node_advance(a, 10 * SEC));
    /* While the callback runs (it waits for the probe), another thread sends to S from
     * B and from A: the location is still recorded (B reaches A, not NOT_FOUND) and
     * nothing new is admitted (STALE_ROUTE: closing). */
    env.probe = 1;
    env.probe_a = a;
    env.probe_b = b;
    env.probe_st_a = env.probe_st_b = SPOT_E_PANIC;
    uint64_t admitted = lc_stats(a).messages_admitted;
    CHECK_EQ_U64(evict(a), 1);
    if (env.probe_started) {
        pthread_join(env.probe_thread, NULL);
        env.probe_started = 0;
    }
    CHECK(env.probe_done);
    CHECK(!env.probe_timed_out);
    CHECK_ST(env.probe_st_b, SPOT_E_STALE_ROUTE);
    CHECK_ST(env.probe_st_a, SPOT_E_STALE_ROUTE);
    CHECK_EQ_U64(lc_stats(a).messages_admitted, admitted);
    /* called once, with IDLE_EVICTED */
    uint32_t kind = 0;
    CHECK_EQ_U64(closes_of(&env, LC_S, SPOT_CLOSE_IDLE_EVICTED, &kind), 1);
    CHECK_EQ_U64(kind, SPOT_KIND_INSTANCE);
    CHECK_EQ_U64(env.n_closes, 1);
    /* released afterwards: Missing again, so only an explicit intent creates it again */
    CHECK_ST(lc_send(a, LC_S, "y"), SPOT_E_NOT_FOUND);
    CHECK_ST(lc_send(b, LC_S, "y"), SPOT_E_NOT_FOUND);
    CHECK_EQ_U64(atomic_load(&env.runs_of_s), 1);
    CHECK_OK(lc_soc(b, LC_S, "z", NULL));
    CHECK_EQ_U64(atomic_load(&env_b.runs_of_s), 1);
    lc_drain(b, &log);
    CHECK_EQ_U64(log.n, 1);
    CHECK(ran_msg(&log, 0, LC_S, "z"));
    lc_drain(a, &log);
    CHECK_EQ_U64(log.n, 0);
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_node_free(b));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
    env_destroy(&env_b);
}

/* ---- L6: two lanes, each bounded by count and bytes ---- */

/* A node whose application lane has these limits, with User Spot S. */
static uint64_t lane_node(struct lc_env *env, uint64_t store, uint64_t items, uint64_t bytes) {
    struct spot_node_config cfg = lc_config(1, env);
    cfg.application_lane_items = items;
    cfg.application_lane_bytes = bytes;
    uint64_t node = lc_start(&cfg, store);
    CHECK_OK(spot_node_create_user_spot(node, LC_S, NULL));
    return node;
}

static void lifecycle_l12_a_lane_is_limited_by_count_and_bytes_whichever_comes_first(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    uint64_t node = lane_node(&env, store, 4, 2000);
    uint64_t items, bytes;
    /* count first: four 10-byte messages (4 x 266 = 1064 bytes) */
    for (int i = 0; i < 4; i++) CHECK_OK(lc_send_n(node, LC_S, 10));
    CHECK_ST(lc_send_n(node, LC_S, 10), SPOT_E_APPLICATION_LANE_FULL);
    lane_use(node, LC_S, SPOT_LANE_APPLICATION, &items, &bytes);
    CHECK_EQ_U64(items, 4);
    CHECK_EQ_U64(bytes, 1064);
    lane_use(node, LC_S, SPOT_LANE_LIFECYCLE, &items, &bytes);
    CHECK_EQ_U64(items, 0);
    CHECK_EQ_U64(bytes, 0);
    /* completing returns the reservation */
    struct lc_log log;
    lc_drain(node, &log);
    CHECK_EQ_U64(messages_for(&log, LC_S), 4);
    lane_use(node, LC_S, SPOT_LANE_APPLICATION, &items, &bytes);
    CHECK_EQ_U64(items, 0);
    CHECK_EQ_U64(bytes, 0);
    /* bytes first: 1,000 + 256 fits once, not twice */
    CHECK_OK(lc_send_n(node, LC_S, 1000));
    CHECK_ST(lc_send_n(node, LC_S, 1000), SPOT_E_APPLICATION_LANE_FULL);
    lane_use(node, LC_S, SPOT_LANE_APPLICATION, &items, &bytes);
    CHECK_EQ_U64(items, 1);
    CHECK_EQ_U64(bytes, 1256);
    struct spot_node_stats s = lc_stats(node);
    CHECK_EQ_U64(s.rejected_application_lane, 2);
    CHECK_EQ_U64(s.rejected_lifecycle_lane, 0);
    CHECK_EQ_U64(s.messages_admitted, 5); /* refused admissions were never admitted */
    CHECK_OK(spot_node_free(node)); /* the queued message is dropped with the node */
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

static void lifecycle_l13_large_payloads_hit_the_byte_limit_first(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    uint64_t node = lane_node(&env, store, 1024, 64 << 10);
    for (int i = 0; i < 3; i++) CHECK_OK(lc_send_n(node, LC_S, 16 << 10));
    CHECK_ST(lc_send_n(node, LC_S, 16 << 10), SPOT_E_APPLICATION_LANE_FULL);
    uint64_t items, bytes;
    lane_use(node, LC_S, SPOT_LANE_APPLICATION, &items, &bytes);
    CHECK_EQ_U64(items, 3); /* far below the count limit */
    CHECK_EQ_U64(bytes, 3 * ((16 << 10) + 256));
    /* a smaller one still fits the bytes left */
    CHECK_OK(lc_send_n(node, LC_S, 1000));
    struct lc_log log;
    lc_drain(node, &log);
    CHECK_EQ_U64(log.n, 4);
    CHECK_EQ_U64(log.r[0].len, 16 << 10);
    CHECK_OK(spot_node_free(node));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

static void lifecycle_l14_empty_payloads_hit_the_count_limit_first(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    uint64_t node = lane_node(&env, store, 8, 64 << 20);
    for (int i = 0; i < 8; i++) CHECK_OK(lc_send_n(node, LC_S, 0));
    CHECK_ST(lc_send_n(node, LC_S, 0), SPOT_E_APPLICATION_LANE_FULL);
    uint64_t items, bytes;
    lane_use(node, LC_S, SPOT_LANE_APPLICATION, &items, &bytes);
    CHECK_EQ_U64(items, 8);
    CHECK_EQ_U64(bytes, 8 * 256);
    /* an empty payload arrives as NULL, 0 */
    struct spot_node_record r[4];
    size_t n = lc_take(node, r, 4);
    /* a burst of the Spot's messages, as many as the output holds */
    CHECK_EQ_U64(n, 4);
    struct spot_node_completion c[4];
    for (size_t i = 0; i < n && i < 4; i++) {
        CHECK(r[i].payload == NULL);
        CHECK_EQ_U64(r[i].payload_len, 0);
        CHECK_EQ_U64(r[i].kind, SPOT_WORK_MESSAGE);
        CHECK_OK(spot_node_begin(node, r[i].token));
        c[i] = (struct spot_node_completion){r[i].token, SPOT_OUTCOME_OK, 0};
    }
    CHECK_OK(spot_node_complete(node, c, n < 4 ? n : 4));
    struct lc_log log;
    lc_drain(node, &log);
    CHECK_EQ_U64(log.n, 4);
    CHECK_OK(spot_node_free(node));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

static void lifecycle_l15_the_fixed_cost_per_item_is_counted(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    uint64_t node = lane_node(&env, store, 100, 1024);
    for (int i = 0; i < 4; i++) CHECK_OK(lc_send_n(node, LC_S, 0));
    /* four empty messages have used the 1,024-byte budget */
    CHECK_ST(lc_send_n(node, LC_S, 0), SPOT_E_APPLICATION_LANE_FULL);
    uint64_t items, bytes;
    lane_use(node, LC_S, SPOT_LANE_APPLICATION, &items, &bytes);
    CHECK_EQ_U64(items, 4);
    CHECK_EQ_U64(bytes, 1024);
    /* a 1-byte message costs 257 */
    struct lc_log log;
    lc_drain(node, &log);
    CHECK_OK(lc_send_n(node, LC_S, 1));
    lane_use(node, LC_S, SPOT_LANE_APPLICATION, &items, &bytes);
    CHECK_EQ_U64(bytes, 257);
    /* a lane takes at most bytes - 256 of payload in one item */
    lc_drain(node, &log);
    CHECK_OK(lc_send_n(node, LC_S, 1024 - 256));
    lc_drain(node, &log);
    CHECK_ST(lc_send_n(node, LC_S, 1024 - 255), SPOT_E_APPLICATION_LANE_FULL);
    CHECK_OK(spot_node_free(node));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

static void lifecycle_l16_every_lane_has_both_limits(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    uint64_t items, bytes;
    /* A zero limit takes its default (the header's rule): no lane can be unbounded.
     * Application: 1,024 items; lifecycle: 128 items. */
    {
        struct spot_node_config cfg = lc_config(1, &env);
        uint64_t node = lc_start(&cfg, store);
        CHECK_OK(spot_node_create_user_spot(node, LC_S, NULL));
        for (int i = 0; i < 1024; i++) CHECK_OK(lc_send_n(node, LC_S, 0));
        CHECK_ST(lc_send_n(node, LC_S, 0), SPOT_E_APPLICATION_LANE_FULL);
        for (int i = 0; i < 128; i++) CHECK_OK(lc_send_lifecycle(node, LC_S, ""));
        CHECK_ST(lc_send_lifecycle(node, LC_S, ""), SPOT_E_LIFECYCLE_LANE_FULL);
        lane_use(node, LC_S, SPOT_LANE_LIFECYCLE, &items, &bytes);
        CHECK_EQ_U64(items, 128);
        CHECK_EQ_U64(bytes, 128 * 256);
        /* default bytes: 4 MiB on the lifecycle lane, 64 MiB on the application lane */
        CHECK_OK(spot_node_create_user_spot(node, 8, NULL));
        static uint8_t big[(4 << 20) - 255];
        CHECK_ST(spot_node_send(node, 8, SPOT_LANE_LIFECYCLE, big, sizeof big), SPOT_E_LIFECYCLE_LANE_FULL);
        CHECK_OK(spot_node_send(node, 8, SPOT_LANE_LIFECYCLE, big, sizeof big - 1));
        CHECK_OK(spot_node_send(node, 8, SPOT_LANE_APPLICATION, big, sizeof big));
        struct spot_node_stats s = lc_stats(node);
        CHECK_EQ_U64(s.rejected_application_lane, 1);
        CHECK_EQ_U64(s.rejected_lifecycle_lane, 2);
        CHECK_OK(spot_node_free(node));
    }
    /* A lane that cannot take one empty item is refused. */
    {
        struct spot_node_config cfg = lc_config(2, &env);
        uint64_t node = 77;
        cfg.lifecycle_lane_items = 10;
        cfg.lifecycle_lane_bytes = 255;
        CHECK_ST(spot_node_start(&cfg, store, &node), SPOT_E_INVALID_ARGUMENT);
        cfg.lifecycle_lane_bytes = 0;
        cfg.application_lane_bytes = 255;
        CHECK_ST(spot_node_start(&cfg, store, &node), SPOT_E_INVALID_ARGUMENT);
        CHECK_EQ_U64(node, 77);
    }
    /* Tiny explicit limits are enforced on both lanes, each with its own status. */
    {
        struct spot_node_config cfg = lc_config(3, &env);
        cfg.lifecycle_lane_items = 2;
        cfg.lifecycle_lane_bytes = 1 << 20;
        cfg.application_lane_items = 100;
        cfg.application_lane_bytes = 600; /* two empty items, or one of 344 bytes */
        uint64_t node = lc_start(&cfg, store);
        CHECK_OK(spot_node_create_user_spot(node, LC_S, NULL));
        CHECK_OK(lc_send_lifecycle(node, LC_S, "a"));
        CHECK_OK(lc_send_lifecycle(node, LC_S, "b"));
        CHECK_ST(lc_send_lifecycle(node, LC_S, "c"), SPOT_E_LIFECYCLE_LANE_FULL); /* count */
        CHECK_OK(lc_send(node, LC_S, "app")); /* the application lane is separate */
        CHECK_ST(lc_send_n(node, LC_S, 100), SPOT_E_APPLICATION_LANE_FULL); /* bytes */
        lane_use(node, LC_S, SPOT_LANE_LIFECYCLE, &items, &bytes);
        CHECK_EQ_U64(items, 2);
        CHECK_EQ_U64(bytes, 2 * 257);
        lane_use(node, LC_S, SPOT_LANE_APPLICATION, &items, &bytes);
        CHECK_EQ_U64(items, 1);
        CHECK_EQ_U64(bytes, 259);
        /* lifecycle work is served first */
        struct lc_log log;
        lc_drain(node, &log);
        CHECK_EQ_U64(log.n, 3);
        CHECK(ran_msg(&log, 0, LC_S, "a"));
        CHECK(ran_msg(&log, 1, LC_S, "b"));
        CHECK(ran_msg(&log, 2, LC_S, "app"));
        CHECK_EQ_U64(log.r[0].lane, SPOT_LANE_LIFECYCLE);
        CHECK_EQ_U64(log.r[2].lane, SPOT_LANE_APPLICATION);
        struct spot_node_stats s = lc_stats(node);
        CHECK_EQ_U64(s.rejected_lifecycle_lane, 1);
        CHECK_EQ_U64(s.rejected_application_lane, 1);
        CHECK_OK(spot_node_free(node));
    }
    {
        struct spot_node_config cfg = lc_config(4, &env);
        cfg.lifecycle_lane_items = 100;
        cfg.lifecycle_lane_bytes = 600; /* the lifecycle lane's byte limit */
        uint64_t node = lc_start(&cfg, store);
        CHECK_OK(spot_node_create_user_spot(node, LC_S, NULL));
        static const uint8_t p[100];
        CHECK_OK(spot_node_send(node, LC_S, SPOT_LANE_LIFECYCLE, p, sizeof p));
        CHECK_ST(spot_node_send(node, LC_S, SPOT_LANE_LIFECYCLE, p, sizeof p), SPOT_E_LIFECYCLE_LANE_FULL);
        CHECK_OK(spot_node_send(node, LC_S, SPOT_LANE_APPLICATION, p, sizeof p));
        CHECK_OK(spot_node_free(node));
    }
    /* The node's inbound budget is its own queue. */
    {
        struct spot_node_config cfg = lc_config(5, &env);
        cfg.node_inbound_bytes = 1000;
        uint64_t node = lc_start(&cfg, store);
        CHECK_OK(spot_node_create_user_spot(node, 1, NULL));
        CHECK_OK(spot_node_create_user_spot(node, 2, NULL));
        CHECK_OK(lc_send_n(node, 1, 600));
        CHECK_ST(lc_send_n(node, 2, 600), SPOT_E_NODE_INBOUND_FULL);
        struct spot_node_stats s = lc_stats(node);
        CHECK_EQ_U64(s.rejected_node_inbound, 1);
        CHECK_EQ_U64(s.rejected_application_lane, 0);
        struct lc_log log;
        lc_drain(node, &log);
        CHECK_OK(lc_send_n(node, 2, 600)); /* given back at completion */
        CHECK_OK(spot_node_free(node));
    }
    /* four refusing queues, four statuses */
    spot_status q[4] = {SPOT_E_APPLICATION_LANE_FULL, SPOT_E_LIFECYCLE_LANE_FULL,
                        SPOT_E_NODE_INBOUND_FULL, SPOT_E_ACTIVE_CAP};
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++) {
            CHECK(q[i] != q[j]);
            CHECK(strcmp(spot_status_name(q[i]), spot_status_name(q[j])) != 0);
        }
    CHECK(strcmp(spot_status_name(SPOT_E_LIFECYCLE_LANE_FULL), "SPOT_E_LIFECYCLE_LANE_FULL") == 0);
    CHECK(strcmp(spot_status_name(SPOT_E_NODE_INBOUND_FULL), "SPOT_E_NODE_INBOUND_FULL") == 0);
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

/* ---- L7 and accounting: messages and ticks through one exchange ---- */

static void lifecycle_ticks_and_messages_share_one_exchange(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t node = lc_node(1, &env, 0); /* a private store */
    CHECK_OK(spot_node_create_user_spot(node, LC_S, NULL));
    CHECK_OK(spot_node_every(node, LC_S, 1, 10 * MS, 77));
    CHECK_OK(spot_node_every(node, 1001, 2, 10 * MS, 88)); /* the Entry Spot's timer */
    for (int i = 0; i < 20; i++) {
        uint8_t b = (uint8_t)i;
        CHECK_OK(spot_node_send(node, LC_S, SPOT_LANE_APPLICATION, &b, 1));
    }
    CHECK_OK(spot_node_advance(node, 10 * MS));
    struct lc_log log;
    lc_drain(node, &log);
    size_t ticks_s = 0, ticks_entry = 0, next = 0;
    for (size_t i = 0; i < log.n && i < LC_MAX_RAN; i++) {
        const struct lc_ran *r = &log.r[i];
        if (r->kind == SPOT_WORK_TICK) {
            CHECK_EQ_U64(r->len, 0);
            if (r->spot == LC_S) {
                ticks_s++;
                CHECK_EQ_U64(r->key, 1);
                CHECK_EQ_U64(r->value, 77);
            } else {
                ticks_entry++;
                CHECK_EQ_U64(r->spot, 1001);
                CHECK_EQ_U64(r->key, 2);
                CHECK_EQ_U64(r->value, 88);
            }
        } else {
            CHECK_EQ_U64(r->spot, LC_S);
            CHECK_EQ_U64(r->len, 1);
            CHECK_EQ_U64((uint8_t)r->text[0], next); /* FIFO per Spot */
            next++;
        }
    }
    CHECK_EQ_U64(next, 20);
    CHECK_EQ_U64(ticks_s, 1);
    CHECK_EQ_U64(ticks_entry, 1);
    CHECK_ST(spot_node_every(node, LC_S, 1ULL << 63, 10 * MS, 0), SPOT_E_INVALID_ARGUMENT);
    /* closing drops queued messages and counts them */
    for (int i = 0; i < 5; i++) CHECK_OK(lc_send(node, LC_S, "m"));
    CHECK_OK(spot_node_close_spot(node, LC_S, SPOT_KIND_USER));
    CHECK_EQ_U64(closes_of(&env, LC_S, SPOT_CLOSE_CLOSED, NULL), 1);
    lc_drain(node, &log);
    for (size_t i = 0; i < log.n && i < LC_MAX_RAN; i++) CHECK(log.r[i].spot != LC_S);
    struct spot_node_stats s = lc_stats(node);
    CHECK_EQ_U64(s.messages_admitted, 25);
    CHECK_EQ_U64(s.messages_completed, 20);
    CHECK_EQ_U64(s.messages_dropped, 5);
    CHECK_EQ_U64(s.closed, 1);
    CHECK_ST(lc_send(node, LC_S, "m"), SPOT_E_NOT_FOUND);
    CHECK_ST(spot_node_close_spot(node, LC_S, SPOT_KIND_USER), SPOT_E_NOT_FOUND);
    CHECK_OK(spot_node_free(node));
    env_destroy(&env);
}

static void lifecycle_a_failing_factory_releases_the_reservation(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    uint64_t node = lc_node(1, &env, store);
    atomic_store(&env.fail_s, 1);
    uint64_t gen = 99;
    CHECK_ST(lc_soc(node, LC_S, "x", &gen), SPOT_E_CREATION_FAILED);
    CHECK_EQ_U64(gen, 99);
    char msg[256];
    spot_last_error(msg, sizeof msg);
    CHECK(strstr(msg, "no room for 7") != NULL); /* the factory's message */
    CHECK_ST(spot_node_create_user_spot(node, LC_S, NULL), SPOT_E_CREATION_FAILED);
    struct spot_node_stats s = lc_stats(node);
    CHECK_EQ_U64(s.creation_failures, 2);
    CHECK_EQ_U64(s.active_spots, 1);
    /* the reservation is released: Missing, not Creating */
    CHECK_ST(lc_send(node, LC_S, "x"), SPOT_E_NOT_FOUND);
    atomic_store(&env.fail_s, 0);
    CHECK_OK(lc_soc(node, LC_S, "y", NULL));
    struct lc_log log;
    lc_drain(node, &log);
    CHECK_EQ_U64(log.n, 1);
    CHECK(ran_msg(&log, 0, LC_S, "y"));
    CHECK_OK(spot_node_free(node));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

/* ---- Bad input ---- */

static void lifecycle_bad_kinds_and_lanes(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t node = lc_node(1, &env, 0);
    CHECK_OK(spot_node_create_user_spot(node, 20, NULL));
    CHECK_OK(lc_soc(node, 30, "x", NULL));
    uint32_t kinds[] = {0, 4, 5, 0xffffffffu};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        CHECK_ST(spot_node_close_spot(node, 20, kinds[i]), SPOT_E_UNKNOWN_ENUM);
        CHECK_ST(spot_node_close_spot(node, 30, kinds[i]), SPOT_E_UNKNOWN_ENUM);
        CHECK_ST(spot_node_close_spot(node, 1001, kinds[i]), SPOT_E_UNKNOWN_ENUM);
        CHECK_ST(spot_node_close_spot(node, 999, kinds[i]), SPOT_E_UNKNOWN_ENUM);
    }
    /* the Entry Spot closes only with its node */
    CHECK_ST(spot_node_close_spot(node, 1001, SPOT_KIND_ENTRY), SPOT_E_WRONG_KIND);
    CHECK_ST(spot_node_close_spot(node, 1001, SPOT_KIND_USER), SPOT_E_WRONG_KIND);
    CHECK_ST(spot_node_close_spot(node, 1001, SPOT_KIND_INSTANCE), SPOT_E_WRONG_KIND);
    CHECK_EQ_U64(kind_of(node, 1001, SPOT_OK), SPOT_KIND_ENTRY);
    CHECK_ST(lc_soc(node, 1001, "x", NULL), SPOT_E_WRONG_KIND);
    CHECK_ST(spot_node_create_user_spot(node, 1001, NULL), SPOT_E_WRONG_KIND);
    /* unknown lanes */
    const uint8_t p = 1;
    uint64_t items = 5, bytes = 5;
    CHECK_ST(spot_node_send(node, 20, 2, &p, 1), SPOT_E_UNKNOWN_ENUM);
    CHECK_ST(spot_node_send(node, 20, 0xffffffffu, &p, 1), SPOT_E_UNKNOWN_ENUM);
    CHECK_ST(spot_node_lane_use(node, 20, 2, &items, &bytes), SPOT_E_UNKNOWN_ENUM);
    CHECK_EQ_U64(items, 5);
    /* unknown clock, bad struct size */
    struct spot_node_config cfg = lc_config(2, &env);
    uint64_t h = 77;
    cfg.clock = 7;
    CHECK_ST(spot_node_start(&cfg, 0, &h), SPOT_E_UNKNOWN_ENUM);
    cfg.clock = SPOT_CLOCK_MANUAL;
    cfg.struct_size = 8;
    CHECK_ST(spot_node_start(&cfg, 0, &h), SPOT_E_BAD_STRUCT_SIZE);
    cfg.struct_size = 0;
    CHECK_ST(spot_node_start(&cfg, 0, &h), SPOT_E_BAD_STRUCT_SIZE);
    CHECK_EQ_U64(h, 77);
    struct spot_node_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = 4;
    CHECK_ST(spot_node_stats(node, &s), SPOT_E_BAD_STRUCT_SIZE);
    /* the real clock cannot be advanced */
    cfg.struct_size = sizeof cfg;
    cfg.clock = SPOT_CLOCK_REAL;
    uint64_t real = lc_start(&cfg, 0);
    CHECK_ST(spot_node_advance(real, 1), SPOT_E_NOT_MANUAL_CLOCK);
    CHECK_OK(spot_node_free(real));
    /* unknown outcomes and a non-zero reserved field */
    CHECK_OK(lc_send(node, 20, "y"));
    struct spot_node_record r[8];
    size_t n = lc_take(node, r, 8);
    CHECK_EQ_U64(n, 2);
    for (size_t i = 0; i < n && i < 8; i++) {
        struct spot_node_completion c = {r[i].token, 9, 0};
        CHECK_ST(spot_node_complete(node, &c, 1), SPOT_E_UNKNOWN_ENUM);
        c.outcome = SPOT_OUTCOME_OK;
        c.reserved = 1;
        CHECK_ST(spot_node_complete(node, &c, 1), SPOT_E_INVALID_ARGUMENT);
        c.reserved = 0;
        CHECK_OK(spot_node_complete(node, &c, 1)); /* refused ones were not applied */
    }
    CHECK_OK(spot_node_free(node));
    env_destroy(&env);
}

static void lifecycle_bad_null_out_pointers(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t node = lc_node(1, &env, 0);
    CHECK_OK(spot_node_create_user_spot(node, 20, NULL));
    struct spot_node_config cfg = lc_config(2, &env);
    uint64_t h = 77;
    CHECK_ST(spot_store_new(NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_node_start(NULL, 0, &h), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_node_start(&cfg, 0, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_EQ_U64(h, 77);
    CHECK_ST(spot_node_send(node, 20, SPOT_LANE_APPLICATION, NULL, 3), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_node_send_or_create(node, 30, NULL, 3, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_OK(spot_node_send(node, 20, SPOT_LANE_APPLICATION, NULL, 0)); /* empty is fine */
    CHECK_OK(spot_node_send_or_create(node, 30, NULL, 0, NULL)); /* out_generation may be NULL */
    CHECK_OK(spot_node_create_user_spot(node, 40, NULL));
    CHECK_ST(spot_node_spot_kind(node, 20, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_node_evict_idle(node, NULL), SPOT_E_NULL_ARGUMENT);
    uint64_t items = 5, bytes = 5;
    CHECK_ST(spot_node_lane_use(node, 20, SPOT_LANE_APPLICATION, NULL, &bytes), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_node_lane_use(node, 20, SPOT_LANE_APPLICATION, &items, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_EQ_U64(items, 5);
    CHECK_EQ_U64(bytes, 5);
    struct spot_relocation_target t[4];
    size_t n = 99, total = 99;
    CHECK_ST(spot_node_relocation_targets(node, NULL, 4, &n, &total), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_node_relocation_targets(node, t, 4, NULL, &total), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_node_relocation_targets(node, t, 0, &n, &total), SPOT_E_INVALID_ARGUMENT);
    CHECK_EQ_U64(n, 99);
    CHECK_EQ_U64(total, 99);
    CHECK_ST(spot_node_stats(node, NULL), SPOT_E_NULL_ARGUMENT);
    struct spot_node_record r[4];
    struct spot_node_completion c = {1, SPOT_OUTCOME_OK, 0};
    CHECK_ST(spot_node_exchange(node, NULL, 1, r, 4, 0, &n), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_node_exchange(node, NULL, 0, NULL, 4, 0, &n), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_node_exchange(node, NULL, 0, r, 4, 0, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_node_exchange(node, NULL, 0, r, 0, 0, &n), SPOT_E_INVALID_ARGUMENT);
    CHECK_EQ_U64(n, 99);
    CHECK_ST(spot_node_complete(node, NULL, 1), SPOT_E_NULL_ARGUMENT);
    CHECK_OK(spot_node_complete(node, NULL, 0));
    CHECK_OK(spot_node_exchange(node, &c, 0, r, 4, 0, &n)); /* n_done 0 ignores the pointer */
    /* nothing was lost: the two messages still run */
    struct lc_log log;
    size_t first = n;
    struct spot_node_completion done[4];
    for (size_t i = 0; i < first && i < 4; i++) {
        done[i].token = r[i].token;
        done[i].outcome = SPOT_OUTCOME_OK;
        done[i].reserved = 0;
    }
    CHECK_OK(spot_node_complete(node, done, first));
    lc_drain(node, &log);
    CHECK_EQ_U64(first + log.n, 2);
    CHECK_EQ_U64(lc_stats(node).messages_completed, 2);
    CHECK_OK(spot_node_free(node));
    env_destroy(&env);
}

static void lifecycle_bad_completion_tokens(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t node = lc_node(1, &env, 0);
    CHECK_OK(spot_node_create_user_spot(node, 20, NULL));
    CHECK_OK(spot_node_create_user_spot(node, 21, NULL));
    CHECK_ST(spot_node_begin(node, 0x123456789ULL), SPOT_E_INVALID_COMPLETION);
    struct spot_node_completion bogus = {0x123456789ULL, SPOT_OUTCOME_OK, 0};
    CHECK_ST(spot_node_complete(node, &bogus, 1), SPOT_E_INVALID_COMPLETION);
    struct spot_node_record r[4];
    size_t n = 99;
    CHECK_ST(spot_node_exchange(node, &bogus, 1, r, 4, 0, &n), SPOT_E_INVALID_COMPLETION);
    CHECK_EQ_U64(n, 99);
    CHECK_OK(lc_send(node, 20, "a"));
    CHECK_OK(lc_send(node, 21, "b"));
    n = lc_take(node, r, 4);
    CHECK_EQ_U64(n, 2);
    if (n != 2) {
        CHECK_OK(spot_node_free(node));
        env_destroy(&env);
        return;
    }
    CHECK_OK(spot_node_begin(node, r[0].token));
    CHECK_OK(spot_node_begin(node, r[1].token));
    struct spot_node_completion c0 = {r[0].token, SPOT_OUTCOME_OK, 0};
    struct spot_node_completion c1 = {r[1].token, SPOT_OUTCOME_OK, 0};
    CHECK_OK(spot_node_complete(node, &c0, 1));
    /* completed once: the same token again, and its begin, match no record */
    CHECK_ST(spot_node_complete(node, &c0, 1), SPOT_E_INVALID_COMPLETION);
    CHECK_ST(spot_node_begin(node, r[0].token), SPOT_E_INVALID_COMPLETION);
    CHECK_OK(spot_node_exchange(node, &c1, 1, r, 4, 0, &n));
    CHECK_ST(spot_node_exchange(node, &c1, 1, r, 4, 0, &n), SPOT_E_INVALID_COMPLETION);
    /* once quiet, every admitted message is completed or dropped */
    struct lc_log log;
    lc_drain(node, &log);
    struct spot_node_stats s = lc_stats(node);
    CHECK_EQ_U64(s.messages_admitted, 2);
    CHECK_EQ_U64(s.messages_completed, 2);
    CHECK_EQ_U64(s.messages_dropped, 0);
    CHECK_OK(spot_node_free(node));
    env_destroy(&env);
}

/* spot_node_complete / spot_node_exchange: "SPOT_E_INVALID_COMPLETION (nothing of the
 * call applied)". A call whose completions are a valid token followed by an unknown token,
 * a non-zero `reserved` or an unknown outcome fails as a whole; the valid completion can
 * be submitted again afterwards, and the Spot is not left stuck. */
static void lifecycle_bad_a_refused_completion_call_applies_nothing(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t node = lc_node(1, &env, 0);
    CHECK_OK(spot_node_create_user_spot(node, 20, NULL));
    struct spot_node_completion bogus[3] = {
        {0x123456789ULL, SPOT_OUTCOME_OK, 0}, /* unknown token */
        {0, SPOT_OUTCOME_OK, 1},              /* reserved != 0 (token set below) */
        {0, 9, 0},                            /* unknown outcome (token set below) */
    };
    spot_status want[3] = {SPOT_E_INVALID_COMPLETION, SPOT_E_INVALID_ARGUMENT, SPOT_E_UNKNOWN_ENUM};
    for (int b = 0; b < 3; b++) {
        CHECK_OK(lc_send(node, 20, "m"));
        struct spot_node_record r[4];
        size_t n = lc_take(node, r, 4);
        CHECK_EQ_U64(n, 1);
        if (n != 1) break;
        CHECK_OK(spot_node_begin(node, r[0].token));
        struct spot_node_completion ok = {r[0].token, SPOT_OUTCOME_OK, 0};
        struct spot_node_completion mixed[2] = {ok, bogus[b]};
        if (b > 0) mixed[1].token = r[0].token;
        size_t got = 99;
        CHECK_ST(spot_node_complete(node, mixed, 2), want[b]);
        CHECK_ST(spot_node_exchange(node, mixed, 2, r + 1, 3, 0, &got), want[b]);
        CHECK_EQ_U64(got, 99);
        /* nothing of either call applied: the valid completion is still accepted */
        CHECK_OK(spot_node_complete(node, &ok, 1));
    }
    /* the Spot is not stuck: its lane is empty and a new message runs */
    uint64_t items = 9, bytes = 9;
    lane_use(node, 20, SPOT_LANE_APPLICATION, &items, &bytes);
    CHECK_EQ_U64(items, 0);
    CHECK_EQ_U64(bytes, 0);
    CHECK_OK(lc_send(node, 20, "after"));
    struct lc_log log;
    lc_drain(node, &log);
    CHECK_EQ_U64(log.n, 1);
    CHECK(ran_msg(&log, 0, 20, "after"));
    struct spot_node_stats s = lc_stats(node);
    CHECK_EQ_U64(s.messages_admitted, 4);
    CHECK_EQ_U64(s.messages_completed, 4);
    CHECK_OK(spot_node_free(node));
    env_destroy(&env);
}

/* Every function taking a node handle, with handle `h`: SPOT_E_INVALID_HANDLE. */
static void check_dead_node(uint64_t h) {
    uint64_t v = 5, items = 5, bytes = 5;
    uint32_t k = 5;
    size_t n = 5, total = 5;
    const uint8_t p = 1;
    struct spot_node_record r[2];
    struct spot_node_completion c = {1, SPOT_OUTCOME_OK, 0};
    struct spot_relocation_target t[2];
    struct spot_node_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    CHECK_ST(spot_node_send(h, LC_S, SPOT_LANE_APPLICATION, &p, 1), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_send_or_create(h, LC_S, &p, 1, &v), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_create_user_spot(h, LC_S, &v), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_spot_kind(h, LC_S, &k), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_close_spot(h, LC_S, SPOT_KIND_USER), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_every(h, LC_S, 1, 10 * MS, 0), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_evict_idle(h, &n), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_advance(h, 1), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_exchange(h, NULL, 0, r, 2, 0, &n), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_exchange(h, NULL, 0, r, 2, -1, &n), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_begin(h, 1), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_complete(h, &c, 1), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_lane_use(h, LC_S, SPOT_LANE_APPLICATION, &items, &bytes), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_add_entry_actor(h, 1), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_relocation_targets(h, t, 2, &n, &total), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_stats(h, &s), SPOT_E_INVALID_HANDLE);
    CHECK_ST(spot_node_free(h), SPOT_E_INVALID_HANDLE);
    CHECK(v == 5 && k == 5 && n == 5 && total == 5 && items == 5 && bytes == 5);
}

static void lifecycle_bad_freed_and_made_up_handles(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    uint64_t node = lc_node(1, &env, store);
    CHECK_OK(spot_node_create_user_spot(node, LC_S, NULL));
    CHECK_OK(lc_send(node, LC_S, "queued"));
    CHECK_OK(spot_node_free(node));
    /* the node's Spots closed with it (NODE_SHUTDOWN), the Entry Spot included */
    CHECK_EQ_U64(closes_of(&env, LC_S, SPOT_CLOSE_NODE_SHUTDOWN, NULL), 1);
    CHECK_EQ_U64(closes_of(&env, 1001, SPOT_CLOSE_NODE_SHUTDOWN, NULL), 1);
    /* calls after spot_node_free, double free, made-up handles */
    uint64_t handles[] = {node, 0, 1, 0xdeadbeefULL, UINT64_MAX, node + (1ULL << 32), node ^ 0xff00000000ULL};
    for (size_t i = 0; i < sizeof handles / sizeof handles[0]; i++) check_dead_node(handles[i]);
    /* a new node may reuse the table entry; the old handle still does not match */
    uint64_t node2 = lc_node(2, &env, store);
    CHECK(node2 != node);
    check_dead_node(node);
    CHECK_OK(spot_node_advance(node2, 1));

    /* stores: freed and made-up handles */
    CHECK_OK(spot_store_free(store));
    CHECK_OK(spot_node_advance(node2, 1)); /* nodes keep their reference */
    CHECK_OK(lc_soc(node2, LC_S, "still works", NULL));
    uint64_t stores[] = {store, 0xdeadbeefULL, UINT64_MAX, store + (1ULL << 32)};
    for (size_t i = 0; i < sizeof stores / sizeof stores[0]; i++) {
        uint64_t h = stores[i], out = 77;
        struct spot_node_config cfg = lc_config(3, &env);
        CHECK_ST(spot_store_free(h), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_store_mark_down(h, 1), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_store_expire_node(h, 1), SPOT_E_INVALID_HANDLE);
        CHECK_ST(spot_node_start(&cfg, h, &out), SPOT_E_INVALID_HANDLE);
        CHECK_EQ_U64(out, 77);
    }
    CHECK_OK(spot_node_free(node2));
    check_dead_node(node2);
    env_destroy(&env);
}

static void lifecycle_bad_entry_spot_of_another_node(void) {
    struct lc_env env;
    env_init(&env);
    uint64_t store = lc_store();
    uint64_t a = lc_node(1, &env, store);
    /* node 2 with node 1's Entry Spot id: that id is owned by another node */
    struct spot_node_config cfg = lc_config(2, &env);
    cfg.entry_spot = 1001;
    uint64_t out = 77;
    CHECK_ST(spot_node_start(&cfg, store, &out), SPOT_E_INVALID_ARGUMENT);
    CHECK_EQ_U64(out, 77);
    CHECK_EQ_U64(kind_of(a, 1001, SPOT_OK), SPOT_KIND_ENTRY);
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_store_free(store));
    env_destroy(&env);
}

/* ---- Listening for other processes' nodes (ABI 2.3) ---- */

static int lc_last_error_has(const char *words) {
    char msg[512];
    spot_last_error(msg, sizeof msg);
    return strstr(msg, words) != NULL;
}

/* The node's address as text (empty: not listening); checks the length it reports. */
static void lc_address(uint64_t node, char *buf, size_t cap) {
    size_t len = 999;
    buf[0] = 'x';
    CHECK_OK(spot_node_address(node, buf, cap, &len));
    CHECK_EQ_U64(len, strlen(buf));
}

static void lifecycle_listen_the_address_bound_is_readable(void) {
    struct lc_env env;
    env_init(&env);
    struct spot_node_config cfg = lc_config(1, &env);
    cfg.listen = "127.0.0.1:0";
    uint64_t node = lc_start(&cfg, 0);
    char addr[64];
    lc_address(node, addr, sizeof addr);
    CHECK(strncmp(addr, "127.0.0.1:", 10) == 0);
    long port = strtol(addr + 10, NULL, 10);
    CHECK(port > 0 && port < 65536);
    /* too small a buffer: cut, NUL-terminated, the full length reported */
    char small[5];
    size_t len = 0;
    CHECK_OK(spot_node_address(node, small, sizeof small, &len));
    CHECK_EQ_U64(len, strlen(addr));
    CHECK(strcmp(small, "127.") == 0);
    /* bad arguments */
    len = 77;
    CHECK_ST(spot_node_address(node, addr, 0, &len), SPOT_E_INVALID_ARGUMENT);
    CHECK_ST(spot_node_address(node, NULL, 64, &len), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_node_address(node, addr, sizeof addr, NULL), SPOT_E_NULL_ARGUMENT);
    CHECK_ST(spot_node_address(0, addr, sizeof addr, &len), SPOT_E_INVALID_HANDLE);
    CHECK_EQ_U64(len, 77);
    /* another node cannot listen on the same address: a readable error naming it */
    struct spot_node_config taken = lc_config(2, &env);
    char same[64];
    snprintf(same, sizeof same, "%s", addr);
    taken.listen = same;
    uint64_t h = 77;
    CHECK_ST(spot_node_start(&taken, 0, &h), SPOT_E_INVALID_ARGUMENT);
    CHECK(lc_last_error_has("cannot listen on"));
    CHECK(lc_last_error_has(addr));
    CHECK_EQ_U64(h, 77);
    CHECK_OK(spot_node_free(node));
    CHECK_ST(spot_node_address(node, addr, sizeof addr, &len), SPOT_E_INVALID_HANDLE);
    env_destroy(&env);
}

static void lifecycle_listen_none_is_an_empty_address(void) {
    struct lc_env env;
    env_init(&env);
    char addr[64];
    /* NULL and "" both mean: not listening */
    struct spot_node_config cfg = lc_config(1, &env);
    uint64_t a = lc_start(&cfg, 0);
    lc_address(a, addr, sizeof addr);
    CHECK(strcmp(addr, "") == 0);
    cfg = lc_config(1, &env);
    cfg.listen = "";
    uint64_t b = lc_start(&cfg, 0);
    lc_address(b, addr, sizeof addr);
    CHECK(strcmp(addr, "") == 0);
    /* a host built before 2.3 (the struct without `listen`): whatever follows is not read */
    cfg = lc_config(1, &env);
    cfg.struct_size = (uint32_t)offsetof(struct spot_node_config, listen);
    cfg.listen = "not read";
    uint64_t c = lc_start(&cfg, 0);
    lc_address(c, addr, sizeof addr);
    CHECK(strcmp(addr, "") == 0);
    /* a size between the two versions is refused */
    cfg.struct_size = (uint32_t)offsetof(struct spot_node_config, listen) + 4;
    uint64_t h = 77;
    CHECK_ST(spot_node_start(&cfg, 0, &h), SPOT_E_BAD_STRUCT_SIZE);
    CHECK_EQ_U64(h, 77);
    CHECK_OK(spot_node_free(a));
    CHECK_OK(spot_node_free(b));
    CHECK_OK(spot_node_free(c));
    env_destroy(&env);
}

static void lifecycle_bad_listen_addresses_are_refused(void) {
    struct lc_env env;
    env_init(&env);
    const char *bad[] = {"localhost:0", "127.0.0.1", "127.0.0.1:70000", "not an address", " 127.0.0.1:0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct spot_node_config cfg = lc_config(1, &env);
        cfg.listen = bad[i];
        uint64_t h = 77;
        CHECK_ST(spot_node_start(&cfg, 0, &h), SPOT_E_INVALID_ARGUMENT);
        CHECK(lc_last_error_has("spot_node_start: invalid argument: `cfg->listen`"));
        CHECK(lc_last_error_has(bad[i]));
        CHECK(lc_last_error_has("is not an address IP:PORT"));
        CHECK_EQ_U64(h, 77);
    }
    struct spot_node_config cfg = lc_config(1, &env);
    cfg.listen = "\xff:0";
    uint64_t h = 77;
    CHECK_ST(spot_node_start(&cfg, 0, &h), SPOT_E_INVALID_ARGUMENT);
    CHECK(lc_last_error_has("`cfg->listen` is not UTF-8"));
    CHECK_EQ_U64(h, 77);
    /* nothing was started: the factory never ran, the id starts fine afterwards */
    CHECK_EQ_U64(atomic_load(&env.factory_runs), 0);
    uint64_t n = lc_node(1, &env, 0);
    CHECK_OK(spot_node_free(n));
    env_destroy(&env);
}

void run_lifecycle_tests(void) {
    RUN(lifecycle_l01_the_entry_spot_is_not_relocated_its_actors_are);
    RUN(lifecycle_l02_an_ordinary_message_to_a_missing_id_creates_nothing);
    RUN(lifecycle_l03_concurrent_creation_runs_the_factory_once);
    RUN(lifecycle_l04_a_message_right_after_creation_is_processed_at_once);
    RUN(lifecycle_l05_unavailable_starts_no_creation);
    RUN(lifecycle_l06_messages_are_not_rejected_for_a_new_object_generation);
    RUN(lifecycle_l07_a_stale_route_ends_with_stale_route_and_is_not_retried);
    RUN(lifecycle_l07_an_owner_whose_lease_ran_out_refuses_with_stale_route);
    RUN(lifecycle_l08_at_the_active_cap_a_new_activation_is_rejected);
    RUN(lifecycle_l08_a_freed_node_is_not_chosen_for_placement);
    RUN(lifecycle_l09_only_instance_spots_are_evicted);
    RUN(lifecycle_l10_a_spot_with_work_in_progress_is_not_evicted);
    RUN(lifecycle_l11_eviction_calls_the_closing_callback_before_releasing_the_location);
    RUN(lifecycle_l12_a_lane_is_limited_by_count_and_bytes_whichever_comes_first);
    RUN(lifecycle_l13_large_payloads_hit_the_byte_limit_first);
    RUN(lifecycle_l14_empty_payloads_hit_the_count_limit_first);
    RUN(lifecycle_l15_the_fixed_cost_per_item_is_counted);
    RUN(lifecycle_l16_every_lane_has_both_limits);
    RUN(lifecycle_ticks_and_messages_share_one_exchange);
    RUN(lifecycle_a_failing_factory_releases_the_reservation);
    RUN(lifecycle_bad_kinds_and_lanes);
    RUN(lifecycle_bad_null_out_pointers);
    RUN(lifecycle_bad_completion_tokens);
    RUN(lifecycle_bad_a_refused_completion_call_applies_nothing);
    RUN(lifecycle_bad_freed_and_made_up_handles);
    RUN(lifecycle_bad_entry_spot_of_another_node);
    RUN(lifecycle_listen_the_address_bound_is_readable);
    RUN(lifecycle_listen_none_is_an_empty_address);
    RUN(lifecycle_bad_listen_addresses_are_refused);
}
