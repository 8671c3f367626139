# Reliability: Miri, cargo-fuzz smoke runs, stress with the accounting identity,
# fault tests (C and Python), ThreadSanitizer over the library with the C fault program and
# the stress tests.
#   make test-reliability          quick form (CI runs it after `make test`)
#   make test-reliability LONG=1   long form: 10M churn operations, 4 churn threads,
#                                  60 s slow handlers, 10 min of fuzzing per target, ...
# Pieces: reliability-miri, reliability-fuzz, reliability-stress, reliability-faults-c,
# reliability-tsan, reliability-faults-py. Results and figures: RELIABILITY.md; the logs
# of the last run: build/reliability/*.log.
#
# Nightly-only parts (Miri, cargo-fuzz) are skipped with a message when the machine has no
# nightly toolchain (`rustup toolchain list`); the Miri and rust-src components are added
# when missing. Without a nightly, TSan covers only the C host side (see reliability-tsan).

REL_BUILD := $(BUILD)/reliability
REL_NIGHTLY := $(shell rustup toolchain list 2>/dev/null | grep -q '^nightly' && echo yes)
CARGO_FUZZ_VERSION := 0.13.2
CARGO_FUZZ := $(TOOLS)/bin/cargo-fuzz
CARGO_FUZZ_STAMP := $(TOOLS)/.cargo-fuzz-$(CARGO_FUZZ_VERSION)
REL_FUZZ_TARGET_DIR := $(BUILD)/fuzz-target
REL_FUZZ_CORPUS := $(BUILD)/fuzz-corpus
REL_C_FLAGS := -std=c11 -Wall -Wextra -Werror -g -O1 -pthread -I$(ROOT)/include
REL_T := timeout --kill-after=10

ifdef LONG
REL_FUZZ_SECS ?= 600
REL_STRESS_ENV := STRESS_LIVE_TIMERS=1000000 STRESS_CHURN_OPS=10000000 STRESS_CHURN_THREADS=4 \
	STRESS_SLOW_SECS=60 STRESS_RSS_TIMERS=300000 STRESS_RSS_ROUNDS=30 \
	STRESS_OWNER_CHURN=100000 STRESS_OWNER_ROUNDS=40
REL_FAULT_ENV := RELIABILITY_TIMERS=20000 RELIABILITY_STALL_MS=5000 RELIABILITY_CONCURRENT_MS=30000
REL_LIFECYCLE_ENV := LIFECYCLE_STRESS_THREADS=8 LIFECYCLE_STRESS_SPOTS=100000 LIFECYCLE_STRESS_SECS=60 \
	LIFECYCLE_STRESS_ROUNDS=6
REL_PY_ENV := RELIABILITY_PY_TICKS=10000000
REL_REPLAY_CASES := 5000
REL_LIMIT := 3600
REL_MIRI_LIMIT := 3600
else
REL_FUZZ_SECS ?= 30
REL_STRESS_ENV := STRESS_LIVE_TIMERS=1000000 STRESS_CHURN_OPS=1000000 STRESS_CHURN_THREADS=2 \
	STRESS_SLOW_SECS=5 STRESS_RSS_TIMERS=100000
REL_FAULT_ENV := RELIABILITY_TIMERS=20000 RELIABILITY_STALL_MS=1500 RELIABILITY_CONCURRENT_MS=2000
REL_LIFECYCLE_ENV := LIFECYCLE_STRESS_THREADS=8 LIFECYCLE_STRESS_SPOTS=100000 LIFECYCLE_STRESS_SECS=20 \
	LIFECYCLE_STRESS_ROUNDS=5
REL_PY_ENV := RELIABILITY_PY_TICKS=1000000
REL_REPLAY_CASES := 200
REL_LIMIT := 600
# Miri interprets the core's whole unit suite: about 500 s here, so its guard leaves room
# for a slower machine.
REL_MIRI_LIMIT := 1200
endif

.PHONY: test-reliability reliability-miri reliability-fuzz reliability-stress \
	reliability-faults-c reliability-tsan reliability-faults-py reliability-clang \
	reliability-lib reliability-lifecycle

test-reliability: reliability-miri reliability-fuzz reliability-stress reliability-faults-c \
	reliability-tsan reliability-faults-py reliability-lifecycle
	@echo "test-reliability: all reliability suites passed ($(if $(LONG),long,quick) form)"

# Miri over the unit tests (core, ffi) and the ffi boundary tests that need no scheduler
# thread (Miri cannot run the scheduler's prctl; see RELIABILITY.md).
reliability-miri:
ifeq ($(REL_NIGHTLY),yes)
	@mkdir -p $(REL_BUILD)
	@installed=$$(rustup component list --toolchain nightly --installed 2>/dev/null); \
	  if ! grep -q '^miri' <<<"$$installed" || ! grep -q '^rust-src' <<<"$$installed"; then \
	    rustup component add miri rust-src --toolchain nightly; fi
	MIRIFLAGS=-Zmiri-disable-isolation PROPTEST_CASES=4 $(REL_T) $(REL_MIRI_LIMIT) \
	  $(CARGO) +nightly miri test -p spot-timer-core --lib 2>&1 | tee $(REL_BUILD)/miri-core.log | grep -E '^test |test result'; \
	  exit $${PIPESTATUS[0]}
	# A real runtime (scheduler thread, manual clock) under Miri: records outliving their
	# runtime, generations, concurrent cancels with a failing release hook, a delivery
	# session helping a blocking cancel (its thread-local pointer to the unread records and to
	# the cells of the batch it handed out), a re-registration in place, the delivery driver
	# (outcomes, a stop, a panicking handler caught and resumed, notices, blocking cancels).
	MIRIFLAGS=-Zmiri-disable-isolation $(REL_T) $(REL_MIRI_LIMIT) \
	  $(CARGO) +nightly miri test -p spot-timer-core --test miri_record_lifetime --test contract \
	  --test delivery_session --test rearm_in_place --test driver \
	  -- record_outlives_its_runtime contract_01 contract_03 a_blocking_cancel dropping_a_session a_batch \
	  rearm_in_place_on_a_manual_clock every_outcome a_stop_keeps a_panicking a_cancel_notice 2>&1 | tee $(REL_BUILD)/miri-runtime.log \
	  | grep -E '^test |test result'; exit $${PIPESTATUS[0]}
	MIRIFLAGS=-Zmiri-disable-isolation $(REL_T) $(REL_MIRI_LIMIT) \
	  $(CARGO) +nightly miri test -p spot-timer-ffi --no-default-features --lib --test miri_boundary --test fuzz_replay 2>&1 \
	  | tee $(REL_BUILD)/miri-ffi.log | grep -E '^test |test result'; exit $${PIPESTATUS[0]}
else
	@echo "reliability-miri: SKIPPED - no nightly toolchain (rustup toolchain install nightly)"
endif

$(CARGO_FUZZ_STAMP):
	$(CARGO) install cargo-fuzz --version $(CARGO_FUZZ_VERSION) --locked --root $(TOOLS)
	@touch $@

# cargo-fuzz smoke runs: REL_FUZZ_SECS per target (30 s each = 60 s quick; 600 s long),
# then the fuzz harnesses replayed natively on pseudo-random inputs.
reliability-fuzz:
ifeq ($(REL_NIGHTLY),yes)
	@$(MAKE) --no-print-directory $(CARGO_FUZZ_STAMP)
	@mkdir -p $(REL_BUILD) $(REL_FUZZ_CORPUS)/abi_ops $(REL_FUZZ_CORPUS)/tick_info
	cd fuzz && PATH=$(TOOLS)/bin:$$PATH $(CARGO) +nightly fuzz build --target-dir $(REL_FUZZ_TARGET_DIR)
	@for t in abi_ops tick_info; do \
	  echo "== fuzz $$t for $(REL_FUZZ_SECS) s"; \
	  (cd fuzz && PATH=$(TOOLS)/bin:$$PATH $(REL_T) $$(( $(REL_FUZZ_SECS) + 300 )) \
	    $(CARGO) +nightly fuzz run --target-dir $(REL_FUZZ_TARGET_DIR) $$t $(REL_FUZZ_CORPUS)/$$t -- \
	    -max_total_time=$(REL_FUZZ_SECS) -max_len=4096 -print_final_stats=1 \
	    > $(REL_BUILD)/fuzz-$$t.log 2>&1); rc=$$?; \
	  grep -E '^Done|stat::number_of_executed_units|stat::peak_rss' $(REL_BUILD)/fuzz-$$t.log; \
	  if [ $$rc != 0 ]; then tail -60 $(REL_BUILD)/fuzz-$$t.log; echo "fuzz $$t FAILED (fuzz/artifacts/$$t)"; exit 1; fi; \
	done
else
	@echo "reliability-fuzz: SKIPPED - cargo-fuzz needs a nightly toolchain"
endif
	FUZZ_REPLAY_CASES=$(REL_REPLAY_CASES) $(REL_T) $(REL_LIMIT) \
	  $(CARGO) test --release -p spot-timer-ffi --no-default-features --test fuzz_replay

# Stress with the accounting identity (core/tests/stress_accounting.rs, #[ignore]d tests).
reliability-stress:
	@mkdir -p $(REL_BUILD)
	$(REL_STRESS_ENV) $(REL_T) $(REL_LIMIT) $(CARGO) test --release -p spot-timer-core \
	  --test stress_accounting -- --ignored --nocapture --test-threads=1 2>&1 \
	  | tee $(REL_BUILD)/stress.log | grep -E 'FIGURES|^RSS|^test |test result|panicked'; \
	  exit $${PIPESTATUS[0]}

# The Spot lifecycle under 8 sending threads with eviction running: no message lost or run
# twice, live heap flat over rounds (lifecycle/tests/stress.rs); and a node that keeps itself
# alive for a minute (0.5 s owner lease, 0.2 s idle timeout, 10,000 Instance Spots, no call to
# evict_idle: lifecycle/tests/keeps_itself_alive.rs).
reliability-lifecycle:
	@mkdir -p $(REL_BUILD)
	$(REL_LIFECYCLE_ENV) KEEPALIVE_SECS=60 $(REL_T) $(REL_LIMIT) $(CARGO) test --release -p spot-lifecycle \
	  --test stress --test keeps_itself_alive -- --ignored --nocapture 2>&1 \
	  | tee $(REL_BUILD)/lifecycle-stress.log | grep -E 'FIGURES|^test |test result|panicked'; \
	  exit $${PIPESTATUS[0]}

reliability-lib: protoc
	$(CARGO) build --release -p spot-timer-ffi
	@mkdir -p $(REL_BUILD)
	cp $(CARGO_TARGET_DIR)/release/libspot_timer.a $(CARGO_TARGET_DIR)/release/libspot_timer.so $(REL_BUILD)/
	ln -sf libspot_timer.so $(REL_BUILD)/$(SONAME)

reliability-faults-c: reliability-lib
	gcc $(REL_C_FLAGS) tests/reliability/faults.c $(REL_BUILD)/libspot_timer.a -lpthread -ldl -lm \
	  -o $(REL_BUILD)/faults
	$(REL_FAULT_ENV) $(REL_T) $(REL_LIMIT) $(REL_BUILD)/faults 2>&1 | tee $(REL_BUILD)/faults.log; \
	  exit $${PIPESTATUS[0]}

reliability-clang:
	@command -v clang >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang)

# ThreadSanitizer over the library itself (nightly): std (-Zbuild-std), the dependencies
# and spot-timer-core/-ffi are built with -Zsanitizer=thread into their own target dir
# (REL_TSAN_DIR, so the normal builds stay valid). Two programs run under it:
#  - faults.c (clang -fsanitize=thread) linked to the instrumented libspot_timer.a and to
#    the TSan runtime that ships with the nightly (librustc-*_rt.tsan.a, matching the LLVM
#    that instrumented the Rust code; Debian clang 14's own runtime lacks __tsan_memcpy /
#    __tsan_memset that newer LLVM emits), linked without -fsanitize so clang does not add
#    its runtime too; -rdynamic exports the runtime's interceptors;
#  - the core's stress tests (stress_accounting.rs, minus the RSS test, whose figures mean
#    nothing under TSan's shadow memory) at reduced sizes.
# Non-workspace crates (std, parking_lot, crossbeam, the test-only dev-dependencies) are
# built at opt-level 0 (still instrumented): the cold build drops from ~5 min to ~1.5 min;
# spot-timer-core/-ffi keep the release profile (opt-level 3, line debug info).
# tests/reliability/tsan.supp holds the suppressions of this run (none needed so far).
# Without a nightly the library cannot be instrumented: TSan then covers the C host side
# only (faults.c against the normal libspot_timer.so, tests/reliability/tsan-host-only.supp).
REL_TSAN_DIR := $(BUILD)/tsan-target
REL_TSAN_HOST = $(shell rustc +nightly -vV | sed -n 's/^host: //p')
REL_TSAN_RT = $(firstword $(wildcard $(shell rustc +nightly --print target-libdir \
	--target $(REL_TSAN_HOST))/librustc-*_rt.tsan.a))
REL_TSAN_CARGO = env -u CARGO_ENCODED_RUSTFLAGS RUSTFLAGS=-Zsanitizer=thread $(CARGO) +nightly
REL_TSAN_ARGS = -Zbuild-std --target $(REL_TSAN_HOST) --release --target-dir $(REL_TSAN_DIR) \
	--config 'profile.release.package."*".opt-level=0'
REL_TSAN_OPTIONS := TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$(ROOT)/tests/reliability/tsan.supp"
REL_TSAN_CASES := failing_release forever_handler stalled_host concurrent_hosts
ifdef LONG
REL_TSAN_STRESS_ENV := STRESS_LIVE_TIMERS=300000 STRESS_CHURN_OPS=2000000 STRESS_CHURN_THREADS=4 \
	STRESS_SLOW_SECS=30
else
REL_TSAN_STRESS_ENV := STRESS_LIVE_TIMERS=100000 STRESS_CHURN_OPS=200000 STRESS_CHURN_THREADS=2 \
	STRESS_SLOW_SECS=3
endif

ifeq ($(REL_NIGHTLY),yes)
reliability-tsan: reliability-clang
	@mkdir -p $(REL_BUILD)
	@rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src' \
	  || rustup component add rust-src --toolchain nightly
	$(REL_TSAN_CARGO) build $(REL_TSAN_ARGS) -p spot-timer-ffi --no-default-features
	$(REL_TSAN_CARGO) test $(REL_TSAN_ARGS) -p spot-timer-core --test stress_accounting --no-run
	@test -f "$(REL_TSAN_RT)" || { echo "reliability-tsan: no TSan runtime in the nightly sysroot"; exit 1; }
	clang $(REL_C_FLAGS) -fsanitize=thread -c tests/reliability/faults.c -o $(REL_BUILD)/faults_tsan.o
	clang -g -pthread $(REL_BUILD)/faults_tsan.o $(REL_TSAN_DIR)/$(REL_TSAN_HOST)/release/libspot_timer.a \
	  -Wl,--whole-archive $(REL_TSAN_RT) -Wl,--no-whole-archive -rdynamic -ldl -lm -lrt \
	  -o $(REL_BUILD)/faults_tsan
	# Self-check first: a deliberate race with a plain store inside the library must be
	# reported (exit 66, naming spot_last_error), or the library is not instrumented.
	clang $(REL_C_FLAGS) -fsanitize=thread -c tests/reliability/tsan_selfcheck.c -o $(REL_BUILD)/tsan_selfcheck.o
	clang -g -pthread $(REL_BUILD)/tsan_selfcheck.o $(REL_TSAN_DIR)/$(REL_TSAN_HOST)/release/libspot_timer.a \
	  -Wl,--whole-archive $(REL_TSAN_RT) -Wl,--no-whole-archive -rdynamic -ldl -lm -lrt \
	  -o $(REL_BUILD)/tsan_selfcheck
	@# TSan reports the planted race in most runs, not all (about four in five were seen):
	@# the check is that the library is instrumented, so one report in five tries suffices.
	@for try in 1 2 3 4 5; do \
	  TSAN_OPTIONS="halt_on_error=1 exitcode=66" $(REL_BUILD)/tsan_selfcheck > $(REL_BUILD)/tsan-selfcheck.log 2>&1; \
	  rc=$$?; if [ $$rc = 66 ] && grep -q 'spot_last_error' $(REL_BUILD)/tsan-selfcheck.log; then \
	    echo "reliability-tsan: self-check ok (a planted race inside the library was reported, try $$try)"; exit 0; fi; \
	done; cat $(REL_BUILD)/tsan-selfcheck.log; echo "reliability-tsan: self-check FAILED (rc $$rc, 5 tries)"; exit 1
	$(REL_TSAN_OPTIONS) $(REL_FAULT_ENV) RELIABILITY_TIMERS=5000 $(REL_T) $(REL_LIMIT) \
	  $(REL_BUILD)/faults_tsan $(REL_TSAN_CASES) 2>&1 | tee $(REL_BUILD)/tsan.log; exit $${PIPESTATUS[0]}
	$(REL_TSAN_OPTIONS) $(REL_TSAN_STRESS_ENV) $(REL_T) $(REL_LIMIT) $(REL_TSAN_CARGO) test $(REL_TSAN_ARGS) \
	  -p spot-timer-core --test stress_accounting -- --ignored --nocapture --test-threads=1 \
	  stress_live_timers stress_churn_threads stress_slow_handlers 2>&1 | tee $(REL_BUILD)/tsan-stress.log \
	  | grep -E 'ThreadSanitizer|^SUMMARY|^test |test result|panicked'; exit $${PIPESTATUS[0]}
else
reliability-tsan: reliability-lib reliability-clang
	@echo "reliability-tsan: no nightly toolchain - the library is not instrumented, only the C host side"
	clang $(REL_C_FLAGS) -fsanitize=thread tests/reliability/faults.c \
	  -L$(REL_BUILD) -lspot_timer -Wl,-rpath,$(REL_BUILD) -lpthread -ldl -lm -o $(REL_BUILD)/faults_tsan
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$(ROOT)/tests/reliability/tsan-host-only.supp" \
	  $(REL_FAULT_ENV) RELIABILITY_TIMERS=5000 $(REL_T) $(REL_LIMIT) $(REL_BUILD)/faults_tsan \
	  $(REL_TSAN_CASES) 2>&1 | tee $(REL_BUILD)/tsan.log; exit $${PIPESTATUS[0]}
endif

# Python faults: raising handler for 1M ticks (memory flat), shutdown with 20k live timers.
reliability-faults-py: $(PY_INSTALLED)
	cd tests/reliability && $(REL_PY_ENV) $(PY) -m pytest -q -s -p no:cacheprovider --timeout $(REL_LIMIT) \
	  test_py_faults.py 2>&1 | tee $(REL_BUILD)/py-faults.log; exit $${PIPESTATUS[0]}
