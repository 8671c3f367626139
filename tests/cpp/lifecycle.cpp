// The C++ wrapper of the Spot lifecycle (spot::Store, spot::NodeConfig, spot::Node): the
// verification items it is most used for (L02, L03, L07, L12), the factory and closing
// callbacks kept by the Node (also across a move and during its destruction), and errors
// as spot::Error. The C ABI's behaviour in full is tested by tests/c/lifecycle.c.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "spot_timer.hpp"

using namespace std::chrono_literals;

static int failures = 0;

#define EXPECT(cond)                                                                    \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);    \
            failures++;                                                                 \
        }                                                                               \
    } while (0)

// Runs `f`; expects a spot::Error with `status` whose message contains `words`.
static void expect_error(const char *what, spot_status status, const char *words,
                         const std::function<void()> &f) {
    try {
        f();
        std::fprintf(stderr, "%s: expected spot::Error %s, got none\n", what, spot_status_name(status));
        failures++;
    } catch (const spot::Error &e) {
        if (e.status() != status || std::strstr(e.what(), words) == nullptr) {
            std::fprintf(stderr, "%s: unexpected error %d: %s\n", what, (int)e.status(), e.what());
            failures++;
        }
    }
}

constexpr uint64_t S = 7;

// What a handler saw: (spot, payload) of each message, in order.
using Ran = std::vector<std::pair<uint64_t, std::string>>;

// Lets the node deliver what is due and runs every ready record (begin, record, complete
// Ok), until nothing is ready.
static Ran run_ready(spot::Node &node) {
    Ran ran;
    std::vector<spot::NodeCompletion> done;
    for (;;) {
        node.advance(0ns);
        auto recs = node.exchange(done);
        done.clear();
        if (recs.empty()) return ran;
        for (const auto &r : recs) {
            if (node.begin(r)) {
                if (r.kind == SPOT_WORK_MESSAGE) ran.emplace_back(r.spot_id, std::string(spot::payload_of(r)));
                done.push_back(spot::completion_of(r, spot::Outcome::Ok));
            } else {
                done.push_back(spot::completion_of(r, spot::Outcome::NotStarted));
            }
        }
    }
}

static size_t messages_for(const Ran &ran, uint64_t spot) {
    size_t n = 0;
    for (const auto &m : ran) n += m.first == spot;
    return n;
}

// A manual-clock config for node `id` (Entry Spot 1000 + id) whose factory counts its runs.
static spot::NodeConfig config(uint64_t id, std::atomic<int> *runs = nullptr) {
    spot::NodeConfig c;
    c.clock(spot::Clock::Manual).node_id(id).entry_spot(1000 + id);
    if (runs) c.factory([runs](uint64_t spot, spot::SpotKind) {
        if (spot < 1000) runs->fetch_add(1); // not the Entry Spots
    });
    return c;
}

static void l02_an_ordinary_message_to_a_missing_id_creates_nothing() {
    spot::Store store;
    std::atomic<int> runs{0};
    spot::Node node(config(1, &runs), store);
    expect_error("L02 send to a missing id", SPOT_E_NOT_FOUND, "not found",
                 [&] { node.send(S, "x"); });
    expect_error("L02 kind of a missing id", SPOT_E_NOT_FOUND, "not found",
                 [&] { (void)node.spot_kind(S); });
    EXPECT(runs == 0);
    EXPECT(node.stats().active_spots == 1); // only the Entry Spot
    uint64_t gen = node.send_or_create(S, "hello");
    EXPECT(gen != 0);
    EXPECT(runs == 1);
    EXPECT(node.spot_kind(S) == spot::SpotKind::Instance);
    EXPECT(run_ready(node) == (Ran{{S, "hello"}}));
    node.send(S, "again");
    EXPECT(run_ready(node) == (Ran{{S, "again"}}));
    EXPECT(node.send_or_create(S, "third") == gen);
    EXPECT(runs == 1);
    run_ready(node);
}

static void l03_concurrent_creation_runs_the_factory_once() {
    spot::Store store;
    std::atomic<int> runs{0};
    auto factory = [&runs](uint64_t spot, spot::SpotKind) {
        if (spot == S) {
            runs.fetch_add(1);
            std::this_thread::sleep_for(30ms); // let the others pile up
        }
    };
    spot::Node a(config(1).factory(factory), store);
    spot::Node b(config(2).factory(factory), store);
    constexpr int N = 16;
    std::atomic<int> ready{0};
    std::vector<uint64_t> gens(N, 0);
    std::vector<int> errors(N, 0);
    std::vector<std::thread> threads;
    for (int i = 0; i < N; i++) {
        threads.emplace_back([&, i] {
            spot::Node &n = i % 2 ? b : a;
            ready.fetch_add(1);
            while (ready.load() < N) std::this_thread::yield();
            try {
                char byte = static_cast<char>('a' + i);
                gens[i] = n.send_or_create(S, std::string_view(&byte, 1));
            } catch (const spot::Error &e) {
                std::fprintf(stderr, "L03 caller %d: %s\n", i, e.what());
                errors[i] = 1;
            }
        });
    }
    for (auto &t : threads) t.join();
    EXPECT(runs == 1); // the factory ran once
    for (int i = 0; i < N; i++) {
        EXPECT(errors[i] == 0);
        EXPECT(gens[i] == gens[0]);
    }
    bool on_a = false, on_b = false;
    try { on_a = a.spot_kind(S) == spot::SpotKind::Instance; } catch (const spot::Error &) {}
    try { on_b = b.spot_kind(S) == spot::SpotKind::Instance; } catch (const spot::Error &) {}
    EXPECT(on_a != on_b);
    Ran ran = run_ready(on_a ? a : b);
    EXPECT(messages_for(ran, S) == N); // every caller's message ran on the one Spot
    EXPECT(run_ready(on_a ? b : a).empty());
}

static void l07_a_stale_route_ends_with_stale_route_and_is_not_retried() {
    spot::Store store;
    spot::Node a(config(1), store), b(config(2), store), c(config(3), store);
    b.send_or_create(S, "b");
    a.send(S, "cache"); // A caches the route to B
    EXPECT(messages_for(run_ready(b), S) == 2);
    b.close_spot(S, spot::SpotKind::Instance); // S moves: closed on B, created on C
    c.send_or_create(S, "c");
    uint64_t stale = a.stats().stale_routes;
    expect_error("L07 stale route", SPOT_E_STALE_ROUTE, "stale route", [&] { a.send(S, "stale"); });
    EXPECT(a.stats().stale_routes == stale + 1);
    EXPECT(run_ready(b).empty()); // no automatic retry
    EXPECT(run_ready(c) == (Ran{{S, "c"}}));
    a.send(S, "new call"); // a new call finds the current owner
    EXPECT(run_ready(c) == (Ran{{S, "new call"}}));

    // An owner whose lease ran out refuses with STALE_ROUTE too.
    spot::Node d(config(4).owner_lease(50ms), store);
    d.send_or_create(8, "x");
    EXPECT(messages_for(run_ready(d), 8) == 1);
    d.advance(100ms);
    expect_error("L07 lease over", SPOT_E_STALE_ROUTE, "stale route", [&] { d.send(8, "late"); });
    EXPECT(run_ready(d).empty());
}

static void l12_lanes_are_limited_by_count_and_bytes() {
    spot::Node node(config(1).application_lane({4, 2000}).lifecycle_lane({2, 1 << 20}));
    node.create_user_spot(S);
    std::string ten(10, 'z');
    for (int i = 0; i < 4; i++) node.send(S, ten);
    expect_error("L12 count", SPOT_E_APPLICATION_LANE_FULL, "capacity exceeded",
                 [&] { node.send(S, ten); });
    spot::LaneUse u = node.lane_use(S, spot::Lane::Application);
    EXPECT(u.items == 4 && u.bytes == 4 * 266);
    EXPECT(messages_for(run_ready(node), S) == 4);
    u = node.lane_use(S, spot::Lane::Application);
    EXPECT(u.items == 0 && u.bytes == 0);
    std::string big(1000, 'b');
    node.send(S, big);
    expect_error("L12 bytes", SPOT_E_APPLICATION_LANE_FULL, "capacity exceeded",
                 [&] { node.send(S, big); });
    EXPECT(node.stats().rejected_application_lane == 2);
    run_ready(node);
    // the lifecycle lane: its own limit, its own status, served first
    node.send_lifecycle(S, "a");
    node.send_lifecycle(S, "b");
    expect_error("L12 lifecycle", SPOT_E_LIFECYCLE_LANE_FULL, "capacity exceeded",
                 [&] { node.send_lifecycle(S, "c"); });
    node.send(S, "app");
    EXPECT(run_ready(node) == (Ran{{S, "a"}, {S, "b"}, {S, "app"}}));
    // the node's inbound budget
    spot::Node small(config(2).node_inbound_bytes(1000));
    small.create_user_spot(1);
    small.create_user_spot(2);
    small.send(1, std::string(600, 'x'));
    expect_error("L12 node inbound", SPOT_E_NODE_INBOUND_FULL, "capacity exceeded",
                 [&] { small.send(2, std::string(600, 'x')); });
}

static void a_failing_factory_fails_the_creation() {
    std::atomic<int> mode{1};
    spot::Node node(config(1).factory([&mode](uint64_t spot, spot::SpotKind) {
        if (spot != S) return;
        if (mode == 1) throw std::runtime_error("no room for the object");
        if (mode == 2) throw 42; // not a std::exception
    }));
    expect_error("factory throws std::runtime_error", SPOT_E_CREATION_FAILED, "no room for the object",
                 [&] { node.send_or_create(S, "x"); });
    mode = 2;
    expect_error("factory throws an int", SPOT_E_CREATION_FAILED, "the factory threw",
                 [&] { node.create_user_spot(S); });
    EXPECT(node.stats().creation_failures == 2);
    // the reservation was released: Missing, so the next intent creates
    expect_error("after a failed creation", SPOT_E_NOT_FOUND, "not found", [&] { node.send(S, "x"); });
    mode = 0;
    node.send_or_create(S, "y");
    EXPECT(run_ready(node) == (Ran{{S, "y"}}));

    // A factory failing for the Entry Spot fails the node's start.
    expect_error("Entry Spot factory fails", SPOT_E_CREATION_FAILED, "entry refused", [] {
        spot::Node n(config(9).factory([](uint64_t, spot::SpotKind k) {
            if (k == spot::SpotKind::Entry) throw std::runtime_error("entry refused");
        }));
    });
}

static void callbacks_live_as_long_as_the_node() {
    using Close = std::tuple<uint64_t, spot::SpotKind, spot::CloseReason>;
    std::mutex mu;
    std::vector<Close> closes;
    auto cfg = config(1)
                   .instance_idle_timeout(10s)
                   .on_close([&](uint64_t id, spot::SpotKind k, spot::CloseReason r) {
                       std::lock_guard<std::mutex> g(mu);
                       closes.emplace_back(id, k, r);
                   });
    {
        spot::Node first(cfg);
        spot::Node node(std::move(first)); // the callbacks stay where the library points
        EXPECT(first.handle() == 0);
        node.create_user_spot(20);
        node.send_or_create(30, "x");
        node.add_entry_actor(501);
        auto targets = node.relocation_targets();
        EXPECT(targets.size() == 3);
        for (const auto &t : targets) EXPECT(t.id != 1001); // never the Entry Spot
        run_ready(node);
        node.advance(20s);
        EXPECT(node.evict_idle() == 1); // only the Instance Spot
        EXPECT(node.spot_kind(20) == spot::SpotKind::User);
        EXPECT(node.stats().evicted == 1);
        {
            std::lock_guard<std::mutex> g(mu);
            EXPECT(closes == (std::vector<Close>{{30, spot::SpotKind::Instance, spot::CloseReason::IdleEvicted}}));
        }
        // a move-assignment frees the target's node first (its callbacks still valid)
        spot::Node other(config(2).on_close([&](uint64_t id, spot::SpotKind, spot::CloseReason r) {
            std::lock_guard<std::mutex> g(mu);
            closes.emplace_back(id + 100000, spot::SpotKind::Entry, r);
        }));
        other = std::move(node);
        {
            std::lock_guard<std::mutex> g(mu);
            EXPECT(closes.size() == 2);
            EXPECT(std::get<0>(closes.back()) == 101002);
            EXPECT(std::get<2>(closes.back()) == spot::CloseReason::NodeShutdown);
        }
        other.send(20, "still mine");
        EXPECT(run_ready(other) == (Ran{{20, "still mine"}}));
    } // ~Node: every Spot closes with NodeShutdown, through the callback
    std::lock_guard<std::mutex> g(mu);
    size_t shutdown = 0;
    for (const auto &c : closes)
        if (std::get<2>(c) == spot::CloseReason::NodeShutdown && std::get<0>(c) < 100000) shutdown++;
    EXPECT(shutdown == 2); // the User Spot and the Entry Spot
}

static void ticks_and_bad_input() {
    spot::Node node(config(1));
    node.create_user_spot(S);
    node.every(S, 1, 10ms, 77);
    node.send(S, "m");
    node.advance(10ms);
    size_t ticks = 0, messages = 0;
    std::vector<spot::NodeCompletion> done;
    for (;;) {
        node.advance(0ns);
        auto recs = node.exchange(done, 0ns, 8);
        done.clear();
        if (recs.empty()) break;
        for (const auto &r : recs) {
            EXPECT(node.begin(r));
            if (r.kind == SPOT_WORK_TICK) {
                ticks++;
                EXPECT(r.key == 1 && r.value == 77 && spot::payload_of(r).empty());
            } else {
                messages++;
                EXPECT(spot::payload_of(r) == "m");
            }
            done.push_back(spot::completion_of(r, spot::Outcome::Ok));
        }
    }
    EXPECT(ticks == 1 && messages == 1);
    expect_error("close the Entry Spot", SPOT_E_WRONG_KIND, "Entry",
                 [&] { node.close_spot(1001, spot::SpotKind::Entry); });
    expect_error("close with kind 0", SPOT_E_UNKNOWN_ENUM, "kind",
                 [&] { node.close_spot(S, static_cast<spot::SpotKind>(0)); });
    expect_error("close with kind 4", SPOT_E_UNKNOWN_ENUM, "kind",
                 [&] { node.close_spot(S, static_cast<spot::SpotKind>(4)); });
    expect_error("close with the wrong kind", SPOT_E_WRONG_KIND, "spot",
                 [&] { node.close_spot(S, spot::SpotKind::Instance); });
    expect_error("send on lane 2", SPOT_E_UNKNOWN_ENUM, "lane",
                 [&] { node.send(S, "x", static_cast<spot::Lane>(2)); });
    expect_error("negative advance", SPOT_E_INVALID_ARGUMENT, "must not be negative",
                 [&] { node.advance(-1ms); });
    expect_error("negative period", SPOT_E_INVALID_ARGUMENT, "must not be negative",
                 [&] { node.every(S, 2, -1ms); });
    expect_error("negative idle timeout", SPOT_E_INVALID_ARGUMENT, "must not be negative",
                 [] { (void)spot::NodeConfig().instance_idle_timeout(-1s); });
    expect_error("reserved timer key", SPOT_E_INVALID_ARGUMENT, "reserved",
                 [&] { node.every(S, 1ull << 63, 1ms); });
    spot::NodeRecord fake{};
    fake.token = 0x123456789ull;
    expect_error("unknown token", SPOT_E_INVALID_COMPLETION, "token",
                 [&] { node.complete(fake, spot::Outcome::Ok); });
    expect_error("begin an unknown token", SPOT_E_INVALID_COMPLETION, "token",
                 [&] { (void)node.begin(fake); });
    expect_error("a lane that cannot hold one item", SPOT_E_INVALID_ARGUMENT, "lane",
                 [] { spot::Node n(config(2).lifecycle_lane({10, 255})); });
    spot::Node real(spot::NodeConfig().node_id(3).entry_spot(1003));
    expect_error("advance a real clock", SPOT_E_NOT_MANUAL_CLOCK, "",
                 [&] { real.advance(1ms); });
    // stores: mark_down / expire_node through the wrapper
    spot::Store store;
    spot::Node a(config(1), store), b(config(2), store);
    b.send_or_create(S, "on b");
    store.mark_down(2);
    expect_error("L05 unavailable", SPOT_E_UNAVAILABLE, "unavailable",
                 [&] { a.send_or_create(S, "x"); });
    store.expire_node(2);
    a.send_or_create(S, "on a");
    EXPECT(run_ready(a) == (Ran{{S, "on a"}}));
    spot::Store moved(std::move(store));
    EXPECT(store.handle() == 0 && moved.handle() != 0);
    EXPECT(moved.requests() == 0); // the embedded store asks no etcd
    // the etcd store: an unreachable endpoint is an error at start, naming it
    expect_error("etcd unreachable", SPOT_E_STORE, "127.0.0.1:1", [] {
        (void)spot::Store::etcd("http://127.0.0.1:1", {}, 0s, 1s);
    });
    expect_error("etcd lease ttl", SPOT_E_INVALID_ARGUMENT, "lease_ttl", [] {
        (void)spot::Store::etcd("http://127.0.0.1:1", {}, 1500ms);
    });
}

// NodeConfig::listen and Node::address (ABI 2.3): the address bound, none by default, and
// a bad address or one in use as spot::Error SPOT_E_INVALID_ARGUMENT saying what was wrong.
static void listen_and_address() {
    spot::Node quiet(config(1));
    EXPECT(!quiet.address().has_value());
    spot::Node node(config(2).listen("127.0.0.1:0"));
    std::optional<std::string> addr = node.address();
    EXPECT(addr.has_value());
    if (addr) {
        EXPECT(addr->rfind("127.0.0.1:", 0) == 0);
        long port = std::strtol(addr->c_str() + 10, nullptr, 10);
        EXPECT(port > 0 && port < 65536);
        // moved: the same node, the same address
        spot::Node moved(std::move(node));
        EXPECT(moved.address() == addr);
        expect_error("listen in use", SPOT_E_INVALID_ARGUMENT, "cannot listen on",
                     [&] { spot::Node again(config(3).listen(*addr)); });
    }
    expect_error("listen without port", SPOT_E_INVALID_ARGUMENT, "is not an address IP:PORT",
                 [] { spot::Node bad(config(4).listen("127.0.0.1")); });
    expect_error("listen host name", SPOT_E_INVALID_ARGUMENT, "\"localhost:0\"",
                 [] { spot::Node bad(config(4).listen("localhost:0")); });
}

int main() {
    l02_an_ordinary_message_to_a_missing_id_creates_nothing();
    l03_concurrent_creation_runs_the_factory_once();
    l07_a_stale_route_ends_with_stale_route_and_is_not_retried();
    l12_lanes_are_limited_by_count_and_bytes();
    a_failing_factory_fails_the_creation();
    callbacks_live_as_long_as_the_node();
    ticks_and_bad_input();
    listen_and_address();
    if (failures) {
        std::fprintf(stderr, "C++ lifecycle tests: %d failed\n", failures);
        return 1;
    }
    std::printf("C++ lifecycle tests: all passed\n");
    return 0;
}
