#include "harness.h"

int h_failed_checks;
static int passed, failed;

void run_test(const char *name, test_fn fn) {
    h_failed_checks = 0;
    fn();
    if (h_failed_checks == 0) {
        passed++;
        printf("ok   %s\n", name);
    } else {
        failed++;
        printf("FAIL %s (%d checks)\n", name, h_failed_checks);
    }
    fflush(stdout);
}

int finish_tests(void) {
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
