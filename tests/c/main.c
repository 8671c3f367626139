/* The C test suite of libspot_timer: contract tests, bad-input tests and the shared
 * result table. */
#include "contract.h"
#include "harness.h"

int main(void) {
    if (spot_abi_version() >> 16 != SPOT_ABI_VERSION >> 16) {
        printf("ABI major mismatch\n0 passed, 1 failed\n");
        return 1;
    }
    run_contract_tests();
    run_bad_input_tests();
    run_result_table_tests();
    return finish_tests();
}
