/* The C test suite of libspot_timer: contract tests, bad-input tests, the shared result
 * table, the Spot lifecycle (L01-L16), delivery sessions and the delivery driver. */
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
    run_lifecycle_tests();
    run_metrics_tests();
    run_schema_tests();
    run_session_tests();
    run_driver_tests();
    run_store_etcd_tests();
    return finish_tests();
}
