# spot-timer: the whole set-up is `make demo` and `make test`.
# Each language area adds its targets in mk/<area>.mk:
#   TEST_TARGETS += test-<area>     (run by `make test`)
#   DEMO_TARGETS += demo-<area>     (run by `make demo`)
SHELL := /bin/bash
.DEFAULT_GOAL := help
CARGO ?= cargo
ROOT := $(abspath .)
BUILD := $(ROOT)/build
# The test and demo commands build from scratch on a fresh machine, where incremental
# compilation state only doubles the target directory (set it to 1 to work on the code).
export CARGO_INCREMENTAL ?= 0

TEST_TARGETS :=
DEMO_TARGETS :=
BENCH_TARGETS :=
# Tools every cargo command over the workspace needs (mk/*.mk add to it).
RUST_TOOLS :=

include $(sort $(wildcard mk/*.mk))

.PHONY: help demo test lint test-rust demo-rust bench-rust
help:
	@echo "make demo   - run the main job: 10,000 owners x 2 timers on one scheduler thread"
	@echo "make test   - every test of every language (installs what it needs)"
	@echo "make test-reliability - loom, Miri, fuzzing, stress, fault tests, ThreadSanitizer"
	@echo "make bench  - benchmark suite (QUICK=1 for a short run)"

demo: demo-rust $(DEMO_TARGETS)

test: lint test-rust $(TEST_TARGETS)
	@echo "make test: all suites passed"

lint: $(RUST_TOOLS)
	python3 tests/module_cycles.py --self-test
	python3 tests/module_cycles.py core/src ffi/src lifecycle/src lifecycle-etcd/src bindings/python/src bindings/python/src/lifecycle
	python3 tests/readme_commands.py --self-test
	python3 tests/readme_commands.py
	python3 tests/readme_commands.py ffi/README.md
	python3 tests/readme_commands.py bindings/dotnet/README.md
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --workspace --quiet

test-rust: $(RUST_TOOLS)
	$(CARGO) test --workspace --release
	@echo "== the core's suite in a debug build: a spin lock taken twice by one thread, or host code run under one, panics"
	$(CARGO) test -p spot-timer-core --quiet
	@echo "== the core crate packages and verifies as it would be published"
	set -o pipefail; $(CARGO) publish --dry-run -p spot-timer-core --allow-dirty 2>&1 | tail -3

demo-rust:
	$(CARGO) run --release -p spot-timer-core --example demo

bench-rust:
	$(CARGO) bench -p spot-timer-core
