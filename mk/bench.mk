# Benchmarks. `make bench` runs the Rust suite (criterion: register+cancel churn and expiry
# throughput against tokio-util's DelayQueue and a std BinaryHeap, plus bytes per live
# timer) and every other area's BENCH_TARGETS. `make bench QUICK=1` runs a short version
# (smaller sizes, shorter measurements). Results: target/criterion/, summarised by
# `make bench-rust-report` (markdown on stdout); recorded figures: bench/results/rust.md.
#
# Other fragments append to BENCH_TARGETS after this file is read, so the prerequisite
# list of `bench` is expanded late (secondary expansion).

.SECONDEXPANSION:

.PHONY: bench bench-rust-quick bench-rust-memory bench-rust-report

bench: $(if $(QUICK),bench-rust-quick,bench-rust) $$(BENCH_TARGETS)

bench-rust-quick:
	SPOT_BENCH_QUICK=1 $(CARGO) bench -p spot-timer-core

bench-rust-memory:
	$(CARGO) bench -p spot-timer-core --bench memory

bench-rust-report:
	python3 core/benches/report.py $(ROOT)/target
