/* examples/c/timers.c - a small C host of libspot_timer.
 *
 * One runtime on the real clock, one owner, three timers (a fast repeating one, a slower
 * catch-up one and a one-shot). The host waits on the runtime's wakeup fd like an event
 * loop would, receives each wakeup's records in one spot_exchange call, re-checks each
 * record right before "running" it, prints its tick info, and hands the completions back
 * with the next exchange. Then it cancels (blocking and non-blocking) and prints stats.
 *
 * Build: cc timers.c $(pkg-config --cflags --libs spot_timer)   or   make examples */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>

#include "spot_timer.h"

#define MS 1000000ULL

static void die(const char *what, spot_status st) {
    char msg[256];
    spot_last_error(msg, sizeof msg);
    fprintf(stderr, "%s failed: %s (%s)\n", what, spot_status_name(st), msg);
    exit(1);
}

#define TRY(call)                                   \
    do {                                            \
        spot_status st_ = (call);                   \
        if (st_ != SPOT_OK) die(#call, st_);        \
    } while (0)

static struct spot_timer_spec every(uint64_t period_ns, uint32_t policy, uint64_t catch_up) {
    struct spot_timer_spec s = {0};
    s.struct_size = sizeof s;
    s.policy = policy;
    s.period_ns = period_ns;
    s.first_due_ns = SPOT_FIRST_DUE_DEFAULT;
    s.max_catch_up_ticks = catch_up;
    return s;
}

int main(void) {
    printf("libspot_timer ABI %u.%u\n", spot_abi_version() >> 16, spot_abi_version() & 0xffff);

    struct spot_runtime_config cfg = {0};
    cfg.struct_size = sizeof cfg;
    cfg.clock = SPOT_CLOCK_REAL;
    cfg.delivery = SPOT_DELIVERY_EXCHANGE;
    uint64_t rt;
    TRY(spot_runtime_new(&cfg, &rt));

    uint64_t epoch;
    TRY(spot_owner_acquire(rt, 7, 0 /* no lease */, SPOT_GATE_CONCURRENT, &epoch));

    const char *names[] = {"fast", "catch-up", "one-shot"};
    struct spot_timer fast, slow, once;
    struct spot_timer_spec s1 = every(20 * MS, SPOT_POLICY_SKIP_LATE_TICKS, 1);
    struct spot_timer_spec s2 = every(50 * MS, SPOT_POLICY_CATCH_UP_BOUNDED, 3);
    struct spot_timer_spec s3 = {0};
    s3.struct_size = sizeof s3;
    s3.first_due_ns = 70 * MS; /* one-shot: period 0, due after 70 ms */
    TRY(spot_timer_register(rt, 7, epoch, 1, &s1, (void *)names[0], NULL, &fast));
    TRY(spot_timer_register(rt, 7, epoch, 2, &s2, (void *)names[1], NULL, &slow));
    TRY(spot_timer_register(rt, 7, epoch, 3, &s3, (void *)names[2], NULL, &once));

    int32_t fd;
    TRY(spot_wakeup_fd(rt, &fd));
    struct spot_record recs[32];
    struct spot_completion done[32];
    size_t n_done = 0, n = 0;
    uint64_t start, now;
    int once_ran = 0;
    TRY(spot_now(rt, &start));
    /* 260 ms of ticks, and at least until the one-shot has run (a busy machine may delay it;
     * only a stall reaches the 30 s bound). */
    do {
        /* hand back the last completions and take whatever is ready, in one call */
        TRY(spot_exchange(rt, done, n_done, recs, 32, 0, &n));
        n_done = 0;
        if (n == 0) {
            struct pollfd p = {fd, POLLIN, 0};
            poll(&p, 1, 50); /* an event loop would watch this fd among others */
        }
        for (size_t i = 0; i < n; i++) {
            const struct spot_record *r = &recs[i];
            int run = spot_record_begin(rt, r) == SPOT_OK;
            if (run && r->user_data == (void *)names[2]) once_ran = 1;
            if (run)
                printf("%-8s delivery %2llu  scheduled %2llu  skipped %llu\n",
                       (const char *)r->user_data, (unsigned long long)r->delivery_index,
                       (unsigned long long)r->scheduled_index,
                       (unsigned long long)r->skipped_ticks);
            done[n_done].token = r->token;
            done[n_done].outcome = run ? SPOT_OUTCOME_OK : SPOT_OUTCOME_NOT_STARTED;
            done[n_done].reserved = 0;
            n_done++;
        }
        TRY(spot_now(rt, &now));
    } while ((now - start < 260 * MS || !once_ran) && now - start < 30000 * MS);
    if (!once_ran) {
        fprintf(stderr, "FAIL: the one-shot did not run within 30 s\n");
        return 1;
    }
    TRY(spot_complete(rt, done, n_done));

    /* Cancel without blocking: no new callback starts from here on, and each result comes
     * back as a CANCEL_DONE record. (This thread is the only one calling spot_exchange: a
     * record of a timer that is still waiting for that call counts as in flight, so a
     * blocking spot_timer_cancel here could wait for this very thread.) */
    uint32_t reason, fast_done = 0, slow_done = 0;
    TRY(spot_timer_cancel_async(rt, fast, 1, &fast_done, &reason));
    TRY(spot_timer_cancel_async(rt, slow, 2, &slow_done, &reason));
    while (!fast_done || !slow_done) {
        TRY(spot_exchange(rt, NULL, 0, recs, 32, 1000 * 1000 * 1000LL, &n));
        for (size_t i = 0; i < n; i++) {
            if (recs[i].kind == SPOT_RECORD_CANCEL_DONE) {
                printf("%-8s ended: reason %u (SPOT_END_CANCELLED = %d), notice tag %llu\n",
                       recs[i].tag == 1 ? "fast" : "catch-up", recs[i].end_reason,
                       SPOT_END_CANCELLED, (unsigned long long)recs[i].tag);
                if (recs[i].tag == 1) fast_done = 1;
                if (recs[i].tag == 2) slow_done = 1;
            } else { /* a tick that became ready just before the cancel: not started */
                struct spot_completion c = {recs[i].token, SPOT_OUTCOME_NOT_STARTED, 0};
                TRY(spot_complete(rt, &c, 1));
            }
        }
    }
    /* the blocking form returns the recorded terminal result of an ended generation */
    TRY(spot_timer_cancel(rt, fast, -1, &reason));
    /* the one-shot already ended by itself */
    TRY(spot_timer_cancel(rt, once, 0, &reason));
    printf("one-shot ended: reason %u (SPOT_END_COMPLETED = %d)\n", reason, SPOT_END_COMPLETED);

    struct spot_stats st = {0};
    st.struct_size = sizeof st;
    TRY(spot_stats(rt, &st));
    TRY(spot_runtime_free(rt));
    /* What it did, not how fast: every generation has ended, and every tick that came due
     * was delivered, skipped by its policy or discarded with its generation. */
    uint64_t accounted = st.completed_ok + st.completed_failed + st.ticks_skipped +
                         st.ticks_dropped_authority + st.ticks_discarded;
    if (st.live_timers != 0 || st.ticks_due != accounted) {
        fprintf(stderr, "FAIL: accounting: %llu live, due %llu vs accounted %llu\n",
                (unsigned long long)st.live_timers, (unsigned long long)st.ticks_due,
                (unsigned long long)accounted);
        return 1;
    }
    printf("example_c: %llu records in %llu batches over %llu crossings, %llu scheduler thread(s)\n",
           (unsigned long long)st.records_received, (unsigned long long)st.batches,
           (unsigned long long)st.host_crossings, (unsigned long long)st.scheduler_threads);
    return 0;
}
