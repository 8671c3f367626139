// The C++ wrapper's own checks (the C ABI's behaviour is tested by tests/c): durations that
// would wrap are rejected with a readable error, and a timer is cancelled only when its
// Timer goes out of scope.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>

#include <stdexcept>

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
        std::fprintf(stderr, "%s: expected spot::Error, got none\n", what);
        failures++;
    } catch (const spot::Error &e) {
        if (e.status() != status || std::strstr(e.what(), words) == nullptr) {
            std::fprintf(stderr, "%s: unexpected error %d: %s\n", what, (int)e.status(), e.what());
            failures++;
        }
    }
}

int main() {
    expect_error("every(-5ms)", SPOT_E_INVALID_ARGUMENT, "must not be negative",
                 [] { (void)spot::TimerSpec::every(-5ms); });
    expect_error("every(0ms)", SPOT_E_INVALID_ARGUMENT, "period must be greater than zero",
                 [] { (void)spot::TimerSpec::every(0ms); });
    expect_error("after(-1ns)", SPOT_E_INVALID_ARGUMENT, "must not be negative",
                 [] { (void)spot::TimerSpec::after(-1ns); });
    expect_error("first_due(-1ms)", SPOT_E_INVALID_ARGUMENT, "must not be negative",
                 [] { (void)spot::TimerSpec::every(1ms).first_due(-1ms); });
    EXPECT(spot::TimerSpec::after(0ms).c().first_due_ns == 0);
    EXPECT(spot::TimerSpec::every(3ms).c().period_ns == 3000000);

    spot::Runtime rt = spot::Runtime::exchange(spot::Clock::Manual);
    expect_error("acquire with a negative lease", SPOT_E_INVALID_ARGUMENT, "must not be negative",
                 [&] { (void)rt.acquire(1, -1s); });
    expect_error("advance(-1ms)", SPOT_E_INVALID_ARGUMENT, "must not be negative",
                 [&] { rt.advance(-1ms); });
    auto owner = rt.acquire(1, 10s);
    expect_error("renew(-1s)", SPOT_E_INVALID_ARGUMENT, "must not be negative",
                 [&] { owner.renew(-1s); });
    {
        spot::Timer kept = owner.register_timer(1, spot::TimerSpec::every(1ms));
        EXPECT(rt.stats().live_timers == 1);
        EXPECT(kept.cancel(1s) == spot::EndReason::Cancelled);
    }
    {
        spot::Timer scoped = owner.register_timer(2, spot::TimerSpec::every(1ms));
        EXPECT(rt.stats().live_timers == 1);
    } // the destructor starts the cancel
    rt.advance(0ms);
    EXPECT(rt.stats().live_timers == 0);
    {
        // A session: two ticks due together; inside the first handler a blocking cancel of
        // the other timer (its record unread in the session) does not wait for it.
        auto o2 = rt.acquire(2, std::nullopt, spot::Gate::Concurrent);
        spot::Timer a = o2.register_timer(1, spot::TimerSpec::every(10ms));
        spot::Timer b = o2.register_timer(2, spot::TimerSpec::every(10ms));
        spot::Session session(rt, 16);
        EXPECT(!session.next(0ns).has_value());
        rt.advance(10ms);
        auto first = session.next(0ns);
        EXPECT(first.has_value() && first->kind == SPOT_RECORD_TICK);
        spot::Timer &later = first && first->timer.slot == a.c().slot ? b : a;
        EXPECT(later.cancel(5s) == spot::EndReason::Cancelled);
        session.done(spot::Outcome::Ok);
        EXPECT(!session.next(0ns).has_value());
        expect_error("done without a tick", SPOT_E_INVALID_ARGUMENT, "no tick in progress",
                     [&] { session.done(spot::Outcome::Ok); });
    }
    {
        // The driver: a callable per record, an exception stops the batch and is rethrown,
        // the rest runs at the next run().
        auto o3 = rt.acquire(3, std::nullopt, spot::Gate::Concurrent);
        spot::Timer a = o3.register_timer(1, spot::TimerSpec::every(10ms));
        spot::Timer b = o3.register_timer(2, spot::TimerSpec::every(10ms));
        spot::Timer c = o3.register_timer(3, spot::TimerSpec::every(10ms));
        spot::Session session(rt, 16);
        rt.advance(10ms);
        int calls = 0;
        bool threw = false;
        try {
            session.run([&](const spot_record &r) {
                EXPECT(r.kind == SPOT_RECORD_TICK);
                if (++calls == 1) throw std::runtime_error("first handler");
                return spot::Outcome::Ok;
            }, 0ns);
        } catch (const std::runtime_error &) {
            threw = true;
        }
        EXPECT(threw && calls == 1);
        spot_pass p = session.run([&](const spot_record &) { ++calls; return spot::Outcome::Ok; }, 0ns);
        EXPECT(p.ran == 2 && calls == 3);
        // The stopped batch's outcomes (one FAILED, two OK) go with the next receive.
        auto before = rt.stats();
        session.run([](const spot_record &) { return spot::Outcome::Ok; }, 0ns);
        auto after = rt.stats();
        EXPECT(after.completed_failed == before.completed_failed + 1);
        EXPECT(after.completed_ok == before.completed_ok + 2);
        EXPECT(a.cancel(5s) == spot::EndReason::Cancelled);
        EXPECT(b.cancel(5s) == spot::EndReason::Cancelled);
        EXPECT(c.cancel(5s) == spot::EndReason::Cancelled);
    }
    {
        // A Timer keeps its generation's result as long as it lives: ended every way (ran,
        // cancelled, superseded, revoked), then 100,000 registrations and cancels here and
        // on another thread, and each Timer still answers its original end.
        auto o4 = rt.acquire(4, std::nullopt, spot::Gate::Concurrent);
        spot::Timer ran = o4.register_timer(1, spot::TimerSpec::after(1ms));
        spot::Timer cancelled = o4.register_timer(2, spot::TimerSpec::every(1h));
        spot::Timer superseded = o4.register_timer(3, spot::TimerSpec::every(1h));
        spot::Timer successor = o4.register_timer(3, spot::TimerSpec::every(1h));
        auto o5 = rt.acquire(5, std::nullopt);
        spot::Timer revoked = o5.register_timer(1, spot::TimerSpec::every(1h));
        spot::Session session(rt, 16);
        rt.advance(1ms);
        EXPECT(session.run([](const spot_record &) { return spot::Outcome::Ok; }, 0ns).ran == 1);
        session.run([](const spot_record &) { return spot::Outcome::Ok; }, 0ns); // hands its outcome in
        EXPECT(cancelled.cancel(1s) == spot::EndReason::Cancelled);
        EXPECT(successor.cancel(1s) == spot::EndReason::Cancelled);
        o5.revoke();
        auto churn = [&rt](uint64_t owner_id) {
            auto o = rt.acquire(owner_id, std::nullopt);
            for (uint64_t k = 0; k < 50000; k++) {
                spot::Timer t = o.register_timer(k, spot::TimerSpec::every(1h));
                if (t.cancel(1s) != spot::EndReason::Cancelled) failures++;
            }
            o.release();
        };
        std::thread other(churn, 100);
        churn(101);
        other.join();
        EXPECT(ran.cancel(1s) == spot::EndReason::Completed);
        EXPECT(ran.stats().delivered == 1);
        EXPECT(cancelled.cancel(1s) == spot::EndReason::Cancelled);
        EXPECT(superseded.cancel(1s) == spot::EndReason::Superseded);
        EXPECT(successor.cancel(1s) == spot::EndReason::Cancelled);
        EXPECT(revoked.cancel(1s) == spot::EndReason::Revoked);
        // A bare id given up by release() keeps no hold: the slot serves again later.
        spot_timer bare = ran.release();
        o4.release();
        churn(102);
        expect_error("a released Timer's bare id, after churn", SPOT_E_STALE_TIMER,
                     "no live or recorded generation",
                     [&] {
                         uint32_t r;
                         spot::check(spot_timer_cancel(rt.handle(), bare, 0, &r));
                     });
    }
    if (failures) {
        std::fprintf(stderr, "C++ wrapper tests: %d failed\n", failures);
        return 1;
    }
    std::printf("C++ wrapper tests: all passed\n");
    return 0;
}
