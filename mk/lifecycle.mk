# The Spot lifecycle (lifecycle/, crate spot-lifecycle). Its tests run with the workspace's
# in `make test-rust`; its demo is part of `make demo`.
#   make demo-lifecycle   100,000 Instance Spots created on demand, messages and reminder
#                         timers, idle eviction (examples/rust/lifecycle_demo.rs)

DEMO_TARGETS += demo-lifecycle

.PHONY: demo-lifecycle

demo-lifecycle:
	$(CARGO) run --release -p spot-lifecycle --example lifecycle_demo

# Lifecycle benchmark rows (activations/s, send→handler records per CPU-second, eviction
# pass cost at 10k and 1M Spots, heap bytes per idle Spot; send→handler through the C ABI;
# from Python, send→handler against a hand-written asyncio-queue actor registry): JSON
# lines to bench/results/lifecycle.jsonl. Not part of `make test`.
BENCH_TARGETS += bench-lifecycle
.PHONY: bench-lifecycle
bench-lifecycle: $$(PY_INSTALLED) | protoc
	@mkdir -p bench/results $(BUILD)/bench
	$(CARGO) run --release -p spot-lifecycle --example lifecycle_bench -- --repeats 5 \
	  | tee bench/results/lifecycle.jsonl
	$(CARGO) build --release -q -p spot-timer-ffi
	ln -sf libspot_timer.so $(ROOT)/target/release/$(SONAME)
	cc -O2 -Wall -Wextra -Iinclude -o $(BUILD)/bench/spot_c_lifecycle bench/c/spot_c_lifecycle.c \
	  -L$(ROOT)/target/release -lspot_timer -Wl,-rpath,$(ROOT)/target/release -lm -lpthread
	$(BUILD)/bench/spot_c_lifecycle 1000 500000 5 | tee -a bench/results/lifecycle.jsonl
	$(PY) bench/py_lifecycle.py --repeats 5 | tee -a bench/results/lifecycle.jsonl
