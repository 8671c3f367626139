/* Lifecycle send→handler from C, in the shape of bench/py_lifecycle.py: one thread sends a
 * window of messages round-robin to 1,000 User Spots (`spot_node_send`), then handles what
 * is ready (`spot_node_exchange`, `spot_node_begin` per record, completions handed back
 * with the next exchange) until the window is handled. CPU is process time (every thread
 * of the process, the runtime's included).
 *
 *     spot_c_lifecycle [spots] [messages] [repeats]
 *
 * Prints one JSON object: records per CPU-second, median of the repeats with min and max.
 */
#include "common.h"

#include <spot_timer.h>

#define BATCH 8192
#define WINDOW 100000

static void check(spot_status st, const char *what) {
    if (st != SPOT_OK) {
        char msg[256];
        spot_last_error(msg, sizeof msg);
        fprintf(stderr, "%s failed: %s: %s\n", what, spot_status_name(st), msg);
        exit(1);
    }
}

static double run(uint64_t spots, uint64_t messages) {
    struct spot_node_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.clock = SPOT_CLOCK_REAL;
    cfg.node_id = 1;
    cfg.entry_spot = 1ull << 62;
    uint64_t node = 0;
    check(spot_node_start(&cfg, 0, &node), "spot_node_start");
    for (uint64_t i = 0; i < spots; i++) check(spot_node_create_user_spot(node, i + 1, NULL), "create_user_spot");

    static struct spot_node_record recs[BATCH];
    static struct spot_node_completion done[BATCH];
    const uint8_t payload[] = "payload!";
    size_t n_done = 0;
    uint64_t handled = 0, sent = 0;
    double c0 = cpu_s();
    while (sent < messages) {
        uint64_t window = messages - sent < WINDOW ? messages - sent : WINDOW;
        for (uint64_t k = sent; k < sent + window; k++)
            check(spot_node_send(node, k % spots + 1, SPOT_LANE_APPLICATION, payload, sizeof payload - 1), "send");
        sent += window;
        while (handled < sent) {
            size_t n = 0;
            check(spot_node_exchange(node, done, n_done, recs, BATCH, 50000000, &n), "exchange");
            n_done = 0;
            for (size_t i = 0; i < n; i++) {
                done[n_done].token = recs[i].token;
                done[n_done].reserved = 0;
                if (spot_node_begin(node, recs[i].token) == SPOT_OK) {
                    handled++; /* the handler: it only counts */
                    done[n_done++].outcome = SPOT_OUTCOME_OK;
                } else {
                    done[n_done++].outcome = SPOT_OUTCOME_NOT_STARTED;
                }
            }
        }
    }
    check(spot_node_complete(node, done, n_done), "complete");
    double cpu = cpu_s() - c0;
    spot_node_free(node);
    return (double)messages / cpu;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    uint64_t spots = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000;
    uint64_t messages = argc > 2 ? strtoull(argv[2], NULL, 10) : 500000;
    int repeats = argc > 3 ? atoi(argv[3]) : 5;
    if (spots == 0 || messages == 0 || repeats < 1 || repeats > 100) {
        fprintf(stderr, "usage: spot_c_lifecycle [spots >= 1] [messages >= 1] [repeats 1..100]\n");
        return 2;
    }
    double v[100];
    run(spots, messages / 10 + 1); /* warm-up */
    for (int i = 0; i < repeats; i++) v[i] = run(spots, messages);
    qsort(v, (size_t)repeats, sizeof v[0], cmp);
    printf("{\"row\":\"send→handler records per CPU-second, 1,000 Spots, one thread: a window sent, then "
           "handled (C)\",\"unit\":\"per CPU-s\",\"median\":%.1f,\"min\":%.1f,\"max\":%.1f}\n",
           v[repeats / 2], v[0], v[repeats - 1]);
    return 0;
}
