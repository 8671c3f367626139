// The shared result table (tests/vectors/results.txt), asserted through the C++ wrapper.
// The Rust, C, Python and .NET suites read the same file. The table is found at
// $SPOT_RESULT_TABLE, else at tests/vectors/results.txt from the working directory.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "spot_timer.hpp"

using namespace std::chrono_literals;

static const char *reason_name(spot::EndReason r) {
    switch (r) {
    case spot::EndReason::Cancelled: return "CANCELLED";
    case spot::EndReason::Superseded: return "SUPERSEDED";
    case spot::EndReason::Completed: return "COMPLETED";
    case spot::EndReason::LeaseExpired: return "LEASE_EXPIRED";
    case spot::EndReason::Revoked: return "REVOKED";
    case spot::EndReason::RuntimeClosed: return "RUNTIME_CLOSED";
    }
    return "UNKNOWN_REASON";
}

// "E_TIMEOUT" for SPOT_E_TIMEOUT.
static std::string error_name(const spot::Error &e) {
    std::string n = spot_status_name(e.status());
    return n.rfind("SPOT_", 0) == 0 ? n.substr(5) : n;
}

static int failures = 0;

// A blocking cancel's result: the terminal result or the error's name.
static std::string cancel_result(spot::Timer &t) {
    try {
        return reason_name(t.cancel(5s));
    } catch (const spot::Error &e) {
        if (e.status() == SPOT_E_CLEANUP_FAILED) {
            if (std::strstr(e.what(), "boom") == nullptr) {
                std::fprintf(stderr, "cleanup failure without the hook's message: %s\n", e.what());
                failures++;
            }
            return "CLEANUP_FAILED";
        }
        return error_name(e);
    }
}

// "OK", or the error `f` threw.
static std::string outcome_of(const std::function<void()> &f) {
    try {
        f();
        return "OK";
    } catch (const spot::Error &e) {
        return error_name(e);
    }
}

static int32_t failing_hook(void *, char *msg, size_t len) {
    std::snprintf(msg, len, "boom");
    return 1;
}

// Delivers what is due, as a host's handler would: start each record, run `inside`,
// complete it Ok.
static void run_due(spot::Runtime &rt, const std::function<void()> &inside = [] {}) {
    spot::Exchanger ex(rt);
    auto [recs, n] = ex.next(0ns);
    while (n > 0) {
        for (size_t i = 0; i < n; i++) {
            if (rt.begin(recs[i])) inside();
            ex.complete(recs[i], spot::Outcome::Ok);
        }
        std::tie(recs, n) = ex.next(0ns);
    }
}

static std::string run(const std::string &scenario) {
    spot::Runtime rt = spot::Runtime::exchange(spot::Clock::Manual);
    const auto every10 = spot::TimerSpec::every(10ms);
    if (scenario == "cancel_live") {
        spot::Timer t = rt.acquire(1).register_timer(1, every10);
        return cancel_result(t);
    }
    if (scenario == "cancel_twice") {
        spot::Timer t = rt.acquire(1).register_timer(1, every10);
        (void)cancel_result(t);
        return cancel_result(t);
    }
    if (scenario == "cancel_superseded") {
        spot::Owner o = rt.acquire(1);
        spot::Timer first = o.register_timer(1, every10);
        spot::Timer second = o.register_timer(1, every10);
        return cancel_result(first);
    }
    if (scenario == "cancel_completed_one_shot") {
        spot::Timer t = rt.acquire(1).register_timer(1, spot::TimerSpec::after(5ms));
        rt.advance(10ms);
        run_due(rt);
        return cancel_result(t);
    }
    if (scenario == "cancel_revoked") {
        spot::Owner o = rt.acquire(1);
        spot::Timer t = o.register_timer(1, every10);
        o.revoke();
        return cancel_result(t);
    }
    if (scenario == "cancel_lease_expired") {
        spot::Timer t = rt.acquire(1, 10ms).register_timer(1, spot::TimerSpec::every(100ms));
        rt.advance(20ms);
        return cancel_result(t);
    }
    if (scenario == "cancel_after_close") {
        spot::Timer t = rt.acquire(1).register_timer(1, every10);
        rt.close();
        return cancel_result(t);
    }
    if (scenario == "cancel_cleanup_failed" || scenario == "cancel_cleanup_failed_twice") {
        spot::Timer t = rt.acquire(1).register_timer(1, every10, nullptr, failing_hook);
        std::string first = cancel_result(t);
        return scenario == "cancel_cleanup_failed" ? first : cancel_result(t);
    }
    if (scenario == "cancel_in_own_callback" || scenario == "cancel_in_own_callback_result") {
        spot::Timer t = rt.acquire(1).register_timer(1, every10);
        rt.advance(10ms);
        std::string inside = "handler did not run";
        run_due(rt, [&] { inside = cancel_result(t); });
        return scenario == "cancel_in_own_callback" ? inside : cancel_result(t);
    }
    if (scenario == "register_revoked_owner") {
        spot::Owner o = rt.acquire(1);
        o.revoke();
        return outcome_of([&] { spot::Timer t = o.register_timer(1, every10); });
    }
    if (scenario == "register_lease_expired") {
        spot::Owner o = rt.acquire(1, 10ms);
        rt.advance(20ms);
        return outcome_of([&] { spot::Timer t = o.register_timer(1, every10); });
    }
    if (scenario == "register_after_close") {
        spot::Owner o = rt.acquire(1);
        rt.close();
        return outcome_of([&] { spot::Timer t = o.register_timer(1, every10); });
    }
    if (scenario == "register_zero_period") {
        spot::Owner o = rt.acquire(1);
        return outcome_of([&] { spot::Timer t = o.register_timer(1, spot::TimerSpec::every(0ms)); });
    }
    if (scenario == "renew_after_expiry") {
        spot::Owner o = rt.acquire(1, 10ms);
        rt.advance(20ms);
        return outcome_of([&] { o.renew(10ms); });
    }
    if (scenario == "renew_revoked") {
        spot::Owner o = rt.acquire(1);
        o.revoke();
        return outcome_of([&] { o.renew(10ms); });
    }
    return "NOT_IMPLEMENTED_IN_CPP";
}

int main() {
    const char *path = std::getenv("SPOT_RESULT_TABLE");
    std::ifstream f(path && *path ? path : "tests/vectors/results.txt");
    if (!f) {
        std::fprintf(stderr, "cannot open the result table\n");
        return 1;
    }
    std::string line;
    int rows = 0;
    while (std::getline(f, line)) {
        line = line.substr(0, line.find('#'));
        std::istringstream fields(line);
        std::string scenario, expected;
        if (!(fields >> scenario >> expected)) continue;
        rows++;
        std::string got = run(scenario);
        if (got != expected) {
            std::fprintf(stderr, "result table: %s: expected %s, got %s\n", scenario.c_str(),
                         expected.c_str(), got.c_str());
            failures++;
        }
    }
    if (rows < 17) {
        std::fprintf(stderr, "the result table has only %d rows\n", rows);
        failures++;
    }
    std::printf("C++ result table: %d rows, %d failures\n", rows, failures);
    return failures == 0 ? 0 : 1;
}
