#ifndef SPOT_TEST_SUITES_H
#define SPOT_TEST_SUITES_H
void run_contract_tests(void);
void run_bad_input_tests(void);
void run_result_table_tests(void);
void run_lifecycle_tests(void);
void run_metrics_tests(void);
void run_schema_tests(void);
void run_session_tests(void);
void run_driver_tests(void);
void run_store_etcd_tests(void);
#endif
