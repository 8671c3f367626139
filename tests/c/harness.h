/* A tiny test harness for the C tests: CHECK macros, a runner and the final
 * "N passed, N failed" line. */
#ifndef SPOT_TEST_HARNESS_H
#define SPOT_TEST_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "spot_timer.h"

extern int h_failed_checks; /* failed checks of the running test */

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            h_failed_checks++;                                                       \
            fprintf(stderr, "    %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

/* Checks that `call` returns status `want`; prints both names and the last error. */
#define CHECK_ST(call, want)                                                         \
    do {                                                                             \
        spot_status st_ = (call);                                                    \
        if (st_ != (want)) {                                                         \
            char msg_[256];                                                          \
            spot_last_error(msg_, sizeof msg_);                                      \
            h_failed_checks++;                                                       \
            fprintf(stderr, "    %s:%d: %s -> %s, want %s (last error: %s)\n",       \
                    __FILE__, __LINE__, #call, spot_status_name(st_),                \
                    spot_status_name(want), msg_);                                   \
        }                                                                            \
    } while (0)

#define CHECK_OK(call) CHECK_ST(call, SPOT_OK)

#define CHECK_EQ_U64(a, b)                                                           \
    do {                                                                             \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                             \
        if (a_ != b_) {                                                              \
            h_failed_checks++;                                                       \
            fprintf(stderr, "    %s:%d: %s == %llu, want %s == %llu\n", __FILE__,    \
                    __LINE__, #a, (unsigned long long)a_, #b, (unsigned long long)b_); \
        }                                                                            \
    } while (0)

typedef void (*test_fn)(void);

/* Runs one test and counts it. */
void run_test(const char *name, test_fn fn);
/* Prints the final "N passed, N failed" line; returns the process exit code. */
int finish_tests(void);

#define RUN(fn) run_test(#fn, fn)

#endif
