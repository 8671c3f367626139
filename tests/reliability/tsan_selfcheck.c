/* Proves that `make reliability-tsan` really instruments the library: a deliberate data
 * race between a plain store made by Rust code inside libspot_timer (the NUL terminator
 * spot_last_error writes) and a plain load by a C thread. TSan sees the race only if both
 * sides are instrumented, so the run must end with TSan's exit code (66) and a report
 * naming spot_last_error; the make rule checks both. Not a test of the library. */
#include <pthread.h>
#include <stdio.h>

#include "spot_timer.h"

static char shared_buf[1];
static volatile int sink;

static void *writer(void *arg) {
    (void)arg;
    spot_runtime_free(0); /* fails (no such runtime): sets this thread's last error */
    for (int i = 0; i < 1000; i++) spot_last_error(shared_buf, sizeof shared_buf);
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    for (int i = 0; i < 1000; i++) sink += shared_buf[0]; /* unsynchronised, on purpose */
    return NULL;
}

int main(void) {
    pthread_t w, r;
    pthread_create(&w, NULL, writer, NULL);
    pthread_create(&r, NULL, reader, NULL);
    pthread_join(w, NULL);
    pthread_join(r, NULL);
    puts("tsan_selfcheck: no report (TSan is not instrumenting the library?)");
    return 0;
}
