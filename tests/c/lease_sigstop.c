/* Real-process lease test (contract T6, verification 11): a C host process with a 200 ms owner
 * lease, renewed every 50 ms, and a 5 ms periodic timer is stopped with SIGSTOP for 600 ms
 * (past its lease) and continued. Its own log must show no callback start after the lease
 * deadline and no burst of backlog ticks after it resumes.
 *
 * The child logs, on the runtime's clock (CLOCK_BOOTTIME, which runs while the process is
 * stopped): every lease deadline it set, and every tick whose handler it started, with
 * the clock reading its start was decided on. The parent checks the log.
 *
 * It runs twice: starting records with spot_record_begin, and with the call-free check a
 * host does itself (one clock read per batch; per record, now < *lease_word and a
 * compare-and-swap of *live_word to started_value). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define MS 1000000ULL
/* Lease and stop length: 200 ms and 600 ms by default; `lease_sigstop SCALE` multiplies
 * every duration except the period (the valgrind run uses a larger scale because the first
 * calls under valgrind can take longer than a 200 ms lease). */
static uint64_t scale = 1;
/* Start records without a call (see the file comment). */
static int call_free = 0;
#define LEASE (200 * MS * scale)
#define PERIOD (5 * MS)
#define RENEW_EVERY (50 * MS * scale)
#define RUN_FOR (1800 * MS * scale)
#define STOP_US (600 * 1000 * scale)

static uint64_t boottime(void) {
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int child(FILE *log) {
    struct spot_runtime_config cfg = {0};
    cfg.struct_size = sizeof cfg;
    cfg.clock = SPOT_CLOCK_REAL;
    uint64_t rt, epoch, now, before_acquire;
    if (spot_runtime_new(&cfg, &rt)) return 2;
    spot_now(rt, &before_acquire);
    if (spot_owner_acquire(rt, 1, LEASE, SPOT_GATE_SERIAL, &epoch)) return 2;
    spot_now(rt, &now);
    fprintf(log, "deadline %llu %llu\n", (unsigned long long)(before_acquire + LEASE),
            (unsigned long long)(now + LEASE));
    struct spot_timer_spec sp = {0};
    sp.struct_size = sizeof sp;
    sp.policy = SPOT_POLICY_SKIP_LATE_TICKS;
    sp.period_ns = PERIOD;
    sp.first_due_ns = SPOT_FIRST_DUE_DEFAULT;
    sp.max_catch_up_ticks = 1;
    struct spot_timer t;
    if (spot_timer_register(rt, 1, epoch, 1, &sp, NULL, NULL, &t)) return 3;
    fprintf(log, "ready\n");
    fflush(log);

    uint64_t start = now, last_renew = now;
    int renewing = 1;
    struct spot_record recs[16];
    struct spot_completion done[16];
    size_t n_done = 0, n = 0;
    while (boottime() - start < RUN_FOR) {
        if (spot_exchange(rt, done, n_done, recs, 16, 10 * (int64_t)MS, &n) != SPOT_OK) return 4;
        n_done = 0;
        uint64_t batch_now = boottime(); /* the call-free check's one reading per batch */
        for (size_t i = 0; i < n; i++) {
            if (recs[i].kind != SPOT_RECORD_TICK) continue;
            uint64_t before;
            int started;
            if (call_free) {
                uint64_t expected = recs[i].live_value;
                before = batch_now;
                started = before < __atomic_load_n(recs[i].lease_word, __ATOMIC_ACQUIRE) &&
                          __atomic_compare_exchange_n(recs[i].live_word, &expected,
                                                      recs[i].started_value, 0, __ATOMIC_ACQ_REL,
                                                      __ATOMIC_ACQUIRE);
            } else {
                spot_now(rt, &before);
                started = spot_record_begin(rt, &recs[i]) == SPOT_OK;
            }
            if (started)
                fprintf(log, "tick %llu %llu %llu %llu\n", (unsigned long long)before,
                        (unsigned long long)recs[i].delivery_index,
                        (unsigned long long)recs[i].scheduled_index,
                        (unsigned long long)recs[i].skipped_ticks);
            done[n_done].token = recs[i].token;
            done[n_done].outcome = started ? SPOT_OUTCOME_OK : SPOT_OUTCOME_NOT_STARTED;
            done[n_done].reserved = 0;
            n_done++;
        }
        spot_now(rt, &now);
        if (renewing && now - last_renew >= RENEW_EVERY) {
            uint64_t before_renew = now;
            spot_status st = spot_owner_renew(rt, 1, epoch, LEASE);
            if (st == SPOT_OK) {
                /* The new deadline lies between the clock read before the renewal and the one
                 * after it (plus the lease); a SIGSTOP between the two widens the gap. */
                spot_now(rt, &now);
                fprintf(log, "deadline %llu %llu\n", (unsigned long long)(before_renew + LEASE),
                        (unsigned long long)(now + LEASE));
                last_renew = now;
            } else {
                fprintf(log, "renew-failed %llu %s\n", (unsigned long long)now, spot_status_name(st));
                renewing = 0;
            }
        }
        fflush(log);
    }
    if (n_done) spot_complete(rt, done, n_done);
    uint32_t reason = 99;
    spot_status st = spot_timer_cancel(rt, t, -1, &reason);
    fprintf(log, "end %s %u\n", spot_status_name(st), reason);
    struct spot_stats s = {0};
    s.struct_size = sizeof s;
    spot_stats(rt, &s);
    fprintf(log, "stats dropped=%llu delivered=%llu\n",
            (unsigned long long)s.ticks_dropped_authority, (unsigned long long)s.completed_ok);
    fclose(log);
    return spot_runtime_free(rt) == SPOT_OK ? 0 : 5;
}

static void sigstop_past_lease(void) {
    char path[] = "/tmp/spot_lease_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *log = fdopen(fd, "w+");
    pid_t pid = fork();
    if (pid == 0) _exit(child(log));
    fclose(log);

    /* wait until the child's timer has ticked a while (slow under valgrind), then stop it
     * past its lease */
    char line[256];
    for (int i = 0; i < 10000; i++) {
        FILE *r = fopen(path, "r");
        int ticks = 0;
        while (r && fgets(line, sizeof line, r))
            if (strncmp(line, "tick ", 5) == 0) ticks++;
        if (r) fclose(r);
        if (ticks >= 20) break;
        usleep(1000);
    }
    usleep(100 * 1000);
    uint64_t stop_at = boottime();
    kill(pid, SIGSTOP);
    usleep(STOP_US);
    uint64_t cont_at = boottime();
    kill(pid, SIGCONT);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    FILE *r = fopen(path, "r");
    /* deadline: the latest the lease can end (ticks at or after it are violations);
     * deadline_lo: the earliest (the stop must outlast it). */
    uint64_t deadline = 0, deadline_lo = 0, last_tick = 0, last_sched = 0;
    unsigned long long ticks_before = 0, ticks_after_deadline = 0, ticks_after_cont = 0,
                       max_burst = 0, bad_index = 0;
    int renew_failed = 0, ended_expired = 0;
    while (r && fgets(line, sizeof line, r)) {
        unsigned long long a, b, c, d;
        char word[64];
        if (sscanf(line, "deadline %llu %llu", &a, &b) == 2) {
            deadline_lo = a;
            deadline = b;
        } else if (sscanf(line, "tick %llu %llu %llu %llu", &a, &b, &c, &d) == 4) {
            if (a >= deadline) ticks_after_deadline++;
            if (a >= cont_at) ticks_after_cont++;
            else ticks_before++;
            if (b > 1 && c != last_sched + d + 1) bad_index++;
            last_sched = c;
            last_tick = a;
        } else if (sscanf(line, "renew-failed %llu %63s", &a, word) == 2) {
            renew_failed = strcmp(word, "SPOT_E_LEASE_EXPIRED") == 0;
        } else if (sscanf(line, "end %63s %llu", word, &a) == 2) {
            ended_expired = strcmp(word, "SPOT_OK") == 0 && a == SPOT_END_LEASE_EXPIRED;
        }
    }
    if (r) fclose(r);
    (void)max_burst;
    printf("     %s: lease %llu ms, period %llu ms, stopped %llu ms; ticks before stop %llu, "
           "after deadline %llu, after continue %llu; last tick %.1f ms before the final "
           "deadline\n",
           call_free ? "call-free check" : "spot_record_begin", LEASE / MS, PERIOD / MS, (unsigned long long)((cont_at - stop_at) / MS), ticks_before,
           ticks_after_deadline, ticks_after_cont, (double)(deadline - last_tick) / 1e6);
    CHECK(ticks_before >= 10);          /* it really ran before the stop */
    CHECK_EQ_U64(ticks_after_deadline, 0); /* no callback after the lease deadline */
    CHECK_EQ_U64(ticks_after_cont, 0);  /* no backlog burst on resume */
    CHECK(deadline_lo < cont_at);       /* the stop really outlasted the lease */
    CHECK(renew_failed);                /* the late renewal was refused */
    CHECK(ended_expired);               /* the timer ended with LEASE_EXPIRED */
    CHECK_EQ_U64(bad_index, 0);
    if (h_failed_checks == 0) unlink(path); else printf("     log kept: %s\n", path);
}

static void sigstop_past_lease_with_begin(void) {
    call_free = 0;
    sigstop_past_lease();
}

static void sigstop_past_lease_with_the_call_free_check(void) {
    call_free = 1;
    sigstop_past_lease();
}

int main(int argc, char **argv) {
    if (argc > 1) scale = strtoull(argv[1], NULL, 10) ? strtoull(argv[1], NULL, 10) : 1;
    RUN(sigstop_past_lease_with_begin);
    RUN(sigstop_past_lease_with_the_call_free_check);
    return finish_tests();
}
