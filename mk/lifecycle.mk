# The Spot lifecycle (lifecycle/, crate spot-lifecycle). Its tests run with the workspace's
# in `make test-rust`; its demo is part of `make demo`.
#   make demo-lifecycle   100,000 Instance Spots created on demand, messages and reminder
#                         timers, idle eviction (examples/rust/lifecycle_demo.rs)

DEMO_TARGETS += demo-lifecycle
TEST_TARGETS += test-demo-busy

.PHONY: demo-lifecycle test-demo-busy

demo-lifecycle:
	$(CARGO) run --release -p spot-lifecycle --example lifecycle_demo

# The lifecycle demo, shortened, beside four CPU hogs on the machine's cores: a demo judges
# what it did (every message handled or dropped, every idle Spot evicted), never how fast the
# machine was, so a busy machine makes it slower, never failed.
test-demo-busy:
	$(CARGO) build --release -p spot-lifecycle --example lifecycle_demo
	@mkdir -p $(BUILD)
	@hogs=""; for i in 1 2 3 4; do (while :; do :; done) & hogs="$$hogs $$!"; done; \
	  timeout --kill-after=10 900 $(CARGO_TARGET_DIR)/release/examples/lifecycle_demo \
	    --seconds 2 --spots 20000 --rate 100000 > $(BUILD)/demo-busy.log 2>&1; rc=$$?; \
	  kill $$hogs; tail -4 $(BUILD)/demo-busy.log; \
	  if [ $$rc != 0 ]; then cat $(BUILD)/demo-busy.log | tr '\r' '\n' | tail -30; fi; exit $$rc

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
