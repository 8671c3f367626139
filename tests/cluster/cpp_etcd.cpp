// The C++ wrapper's listen address against a real etcd (make test-cluster, under
// tests/cluster/with-etcd.sh which sets SPOT_ETCD_ENDPOINT): two nodes on two etcd stores of
// one prefix, as two processes would have them. A node started with
// NodeConfig::listen is reached over TCP: a message from the other store's node runs on it,
// and a creation placed on it (the other node is full) runs there with its first message.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>
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

using Ran = std::vector<std::pair<uint64_t, std::string>>;

static std::mutex made_mu;
static std::map<uint64_t, int> made; // factory runs per Spot id, both nodes

static spot::NodeConfig config(uint64_t id) {
    spot::NodeConfig c;
    c.node_id(id).entry_spot(3000000 + id).factory([](uint64_t spot, spot::SpotKind) {
        std::lock_guard<std::mutex> g(made_mu);
        made[spot]++;
    });
    return c;
}

static int made_of(uint64_t spot) {
    std::lock_guard<std::mutex> g(made_mu);
    return made.count(spot) ? made[spot] : 0;
}

// Runs what the node receives until `want` messages ran or `wait` passed, then once more
// briefly to catch any beyond `want`.
static Ran run_node(spot::Node &node, size_t want, std::chrono::milliseconds wait) {
    Ran ran;
    std::vector<spot::NodeCompletion> done;
    auto until = std::chrono::steady_clock::now() + wait;
    for (;;) {
        bool last = ran.size() >= want || std::chrono::steady_clock::now() >= until;
        auto recs = node.exchange(done, last ? 200ms : 50ms);
        done.clear();
        for (const auto &r : recs) {
            EXPECT(node.begin(r));
            ran.emplace_back(r.spot_id, std::string(spot::payload_of(r)));
            done.push_back(spot::completion_of(r, spot::Outcome::Ok));
        }
        if (last && recs.empty()) break;
    }
    node.complete(done);
    return ran;
}

static void expect_listens(const spot::Node &node) {
    auto addr = node.address();
    EXPECT(addr.has_value());
    if (!addr) return;
    EXPECT(addr->rfind("127.0.0.1:", 0) == 0);
    long port = std::strtol(addr->c_str() + 10, nullptr, 10);
    EXPECT(port > 0 && port < 65536);
}

static std::string prefix(const char *what) {
    return std::string("/spot-cpp-") + what + "-" + std::to_string(getpid()) + "/";
}

static void a_message_reaches_the_owner_over_tcp(const std::string &endpoint) {
    spot::Store a = spot::Store::etcd(endpoint, prefix("tcp-msg"), 4s);
    spot::Store b = spot::Store::etcd(endpoint, prefix("tcp-msg"), 4s);
    spot::Node n1(config(1).listen("127.0.0.1:0"), a);
    spot::Node n2(config(2), b);
    expect_listens(n1);
    EXPECT(!n2.address().has_value());
    uint64_t gen = n1.send_or_create(77, "created");
    n2.send(77, "over tcp");
    EXPECT(n2.send_or_create(77, "again") == gen); // the same Spot, not a second one
    EXPECT(made_of(77) == 1);
    EXPECT(run_node(n1, 3, 5000ms) == (Ran{{77, "created"}, {77, "over tcp"}, {77, "again"}}));
    EXPECT(run_node(n2, 0, 0ms).empty());
    try {
        (void)n2.spot_kind(77);
        EXPECT(!"spot 77 on node 2");
    } catch (const spot::Error &e) {
        EXPECT(e.status() == SPOT_E_NOT_FOUND);
    }
}

static void a_creation_placed_on_the_listening_node_runs_there(const std::string &endpoint) {
    spot::Store c = spot::Store::etcd(endpoint, prefix("tcp-place"), 4s);
    spot::Store d = spot::Store::etcd(endpoint, prefix("tcp-place"), 4s);
    spot::Node n3(config(3).listen("127.0.0.1:0"), c);
    spot::Node n4(config(4).listen("127.0.0.1:0").active_cap(1), d); // its Entry Spot only
    expect_listens(n3);
    expect_listens(n4);
    EXPECT(n3.address() != n4.address());
    EXPECT(n4.send_or_create(88, "first") >= 1);
    EXPECT(made_of(88) == 1);
    EXPECT(n3.spot_kind(88) == spot::SpotKind::Instance);
    EXPECT(run_node(n3, 1, 5000ms) == (Ran{{88, "first"}}));
    EXPECT(run_node(n4, 0, 0ms).empty());
}

int main() {
    const char *endpoint = std::getenv("SPOT_ETCD_ENDPOINT");
    if (!endpoint) {
        std::fprintf(stderr, "cpp_etcd: SPOT_ETCD_ENDPOINT is not set (run under tests/cluster/with-etcd.sh)\n");
        return 2;
    }
    try {
        a_message_reaches_the_owner_over_tcp(endpoint);
        a_creation_placed_on_the_listening_node_runs_there(endpoint);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "cpp_etcd: %s\n", e.what());
        failures++;
    }
    std::printf("cpp_etcd: %s\n", failures ? "FAILED" : "all passed");
    return failures ? 1 : 0;
}
