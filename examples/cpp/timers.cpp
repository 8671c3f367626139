// examples/cpp/timers.cpp - the C++17 wrapper (spot_timer.hpp) with a batch callback.
//
// A runtime on the real clock delivers each wakeup's records to one lambda on its
// scheduler thread; the lambda re-checks and "runs" each tick and completes it in place.
// Timers are move-only RAII handles; the runtime frees itself at the end of main.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "spot_timer.hpp"

using namespace std::chrono_literals;

int main() {
    std::atomic<int> ticks{0};
    uint64_t rt_handle = 0;
    {
        auto rt = spot::Runtime::with_callback(
            [&ticks, &rt_handle](spot::Batch &batch) {
                for (const spot_record &rec : batch) {
                    if (rec.kind != SPOT_RECORD_TICK) continue;
                    bool live = spot_record_begin(rt_handle, &rec) == SPOT_OK;
                    if (live) {
                        std::printf("%-6s delivery %2llu  scheduled %2llu  skipped %llu\n",
                                    static_cast<const char *>(rec.user_data),
                                    static_cast<unsigned long long>(rec.delivery_index),
                                    static_cast<unsigned long long>(rec.scheduled_index),
                                    static_cast<unsigned long long>(rec.skipped_ticks));
                        ticks++;
                    }
                    batch.complete(rec, live ? spot::Outcome::Ok : spot::Outcome::NotStarted);
                }
            });
        rt_handle = rt.handle();
        auto owner = rt.acquire(1, std::nullopt, spot::Gate::Concurrent);
        static const char kFast[] = "fast", kSlow[] = "slow";
        spot::Timer fast = owner.register_timer(1, spot::TimerSpec::every(15ms), (void *)kFast);
        spot::Timer slow = owner.register_timer(
            2, spot::TimerSpec::every(40ms).policy(spot::Policy::DelayNextTick), (void *)kSlow);
        std::this_thread::sleep_for(200ms);
        std::printf("fast ended: %s\n", spot::to_string(fast.cancel(1s)));
        std::printf("slow stats: %llu delivered\n",
                    static_cast<unsigned long long>(slow.stats().delivered));
        try {
            // invalid: CatchUpBounded needs max_catch_up_ticks >= 1
            (void)owner.register_timer(3, spot::TimerSpec::every(10ms)
                                              .policy(spot::Policy::CatchUpBounded)
                                              .max_catch_up_ticks(0));
        } catch (const spot::Error &e) {
            std::printf("expected error: %s\n", e.what());
        }
        spot::Stats s = rt.stats();
        std::printf("example_cpp: %d ticks, %llu batches, %llu crossings\n", ticks.load(),
                    static_cast<unsigned long long>(s.batches),
                    static_cast<unsigned long long>(s.host_crossings));
    } // slow's destructor cancels it; the runtime's frees the runtime and the lambda
    return 0;
}
