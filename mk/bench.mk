# Benchmarks.
#
# `make bench` runs the side-by-side suite (bench/suite.py): workloads W1-W6 for
# spot-timer (Rust core, C ABI, Python, .NET) and its peers (tokio sleep/Interval, tokio-util
# DelayQueue, libuv uv_timer, Go time.AfterFunc, asyncio, uvloop, rloop, threading.Timer,
# System.Threading.Timer on Mono) in one run, and writes bench/results/latest.json,
# latest.md and PNG plots. `make bench QUICK=1` is the short version (< 5 min on 2 cores
# after the builds). The peers are installed here (Debian packages, crates into
# build/bench/target, matplotlib into build/venv-bench); one that cannot be installed or
# built is reported as missing, with the reason, in the results (build/bench/missing/).
#
# Per-language detail: `make bench-rust` (criterion, target/criterion, summarised by
# `make bench-rust-report`; bench/results/rust.md), `make bench-python`, `make bench-dotnet`
# (the BENCH_TARGETS of the other fragments); `make bench-all` runs them and the suite.
# None of this is part of `make test`.

.SECONDEXPANSION:

BENCH_BUILD := $(BUILD)/bench
BENCH_MISSING := $(BENCH_BUILD)/missing
BENCH_VENV := $(BUILD)/venv-bench
BENCH_SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: bench bench-all bench-deps bench-build bench-report bench-rust-quick bench-rust-memory bench-rust-report

bench: bench-build
	$(BENCH_VENV)/bin/python bench/suite.py $(if $(QUICK),--quick,)

bench-all: bench bench-rust $$(BENCH_TARGETS)

# Re-render latest.md and the plots from bench/results/latest.json.
bench-report:
	$(BENCH_VENV)/bin/python bench/suite.py --report-only

# Debian packages of the C and Go peers, only when missing; a failure is recorded, not fatal.
bench-deps:
	@mkdir -p $(BENCH_MISSING) && rm -f $(BENCH_MISSING)/*.txt
	@if ! pkg-config --exists libuv 2>/dev/null || ! command -v go >/dev/null; then \
	  echo "installing libuv1-dev golang-go pkg-config"; \
	  ( $(BENCH_SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    $(BENCH_SUDO) apt-get install -y -qq libuv1-dev golang-go pkg-config ) > $(BENCH_BUILD)/apt.log 2>&1 \
	  || echo "apt-get install failed (see build/bench/apt.log)"; \
	fi
	@if [ ! -x $(BENCH_VENV)/bin/python ] || ! $(BENCH_VENV)/bin/python -c 'import matplotlib' 2>/dev/null; then \
	  python3 -m venv $(BENCH_VENV) && { $(BENCH_VENV)/bin/python -m pip install -q "matplotlib>=3.7,<4" \
	    || echo "matplotlib could not be installed: the suite runs without plots"; }; \
	fi

# Every harness; a harness that does not build leaves its reason in build/bench/missing/.
bench-build: bench-deps protoc
	@cargo build --release -p spot-timer-ffi -q || echo "libspot_timer did not build" > $(BENCH_MISSING)/spot-c.txt
	@ln -sf libspot_timer.so $(ROOT)/target/release/$(SONAME)
	@echo "building bench/rust (spot-timer core, tokio, tokio-util)"
	@$(CARGO) build --release -q --manifest-path bench/rust/Cargo.toml --target-dir $(BENCH_BUILD)/target \
	  2> $(BENCH_BUILD)/rust.log || { echo "cargo build of bench/rust failed: $$(tail -3 $(BENCH_BUILD)/rust.log | tr '\n' ' ')" > $(BENCH_MISSING)/rust.txt; }
	@[ -f $(BENCH_MISSING)/spot-c.txt ] || cc -O2 -Iinclude -o $(BENCH_BUILD)/spot_c_bench bench/c/spot_c_bench.c \
	  -L$(ROOT)/target/release -lspot_timer -Wl,-rpath,$(ROOT)/target/release -lm -lpthread \
	  || echo "cc of bench/c/spot_c_bench.c failed" > $(BENCH_MISSING)/spot-c.txt
	@if pkg-config --exists libuv; then \
	  cc -O2 -o $(BENCH_BUILD)/uv_bench bench/c/uv_bench.c $$(pkg-config --cflags --libs libuv) -lm -lpthread \
	  || echo "cc of bench/c/uv_bench.c failed" > $(BENCH_MISSING)/libuv.txt; \
	else echo "libuv1-dev is not installed (apt-get install failed: see build/bench/apt.log)" > $(BENCH_MISSING)/libuv.txt; fi
	@if command -v go >/dev/null; then \
	  (cd bench/go && go build -o $(BENCH_BUILD)/gobench .) \
	  || echo "go build of bench/go failed" > $(BENCH_MISSING)/go.txt; \
	else echo "golang-go is not installed (apt-get install failed: see build/bench/apt.log)" > $(BENCH_MISSING)/go.txt; fi
	@$(MAKE) --no-print-directory python-install > $(BENCH_BUILD)/python.log 2>&1 \
	  || echo "the Python binding did not install (make python-install; see build/bench/python.log)" > $(BENCH_MISSING)/python.txt
	@$(PY) -c 'import uvloop' 2>/dev/null || $(PY) -m pip install -q "uvloop>=0.19" >> $(BENCH_BUILD)/python.log 2>&1 \
	  || echo "uvloop could not be installed (pip; see build/bench/python.log)" > $(BENCH_MISSING)/uvloop.txt
	@$(PY) -c 'import rloop' 2>/dev/null || $(PY) -m pip install -q "rloop>=0.1" >> $(BENCH_BUILD)/python.log 2>&1 \
	  || echo "rloop could not be installed (pip; see build/bench/python.log)" > $(BENCH_MISSING)/rloop.txt
	@{ $(MAKE) --no-print-directory dotnet-build > $(BENCH_BUILD)/dotnet.log 2>&1 && \
	  $(DOTNET_MCS) -optimize+ -out:$(DOTNET_BUILD)/Bench.exe -r:$(DOTNET_BUILD)/SpotTimer.dll -r:System.Core \
	    bindings/dotnet/bench/Bench.cs >> $(BENCH_BUILD)/dotnet.log 2>&1 && \
	  $(DOTNET_MCS) -optimize+ -out:$(DOTNET_BUILD)/Extra.exe -r:$(DOTNET_BUILD)/SpotTimer.dll -r:System.Core \
	    bindings/dotnet/bench/Extra.cs >> $(BENCH_BUILD)/dotnet.log 2>&1; } \
	  || echo "Mono or the .NET binding did not build (make dotnet-build; see build/bench/dotnet.log)" > $(BENCH_MISSING)/dotnet.txt
	@ls $(BENCH_MISSING)/*.txt >/dev/null 2>&1 && { echo "missing peers:"; head -n 3 $(BENCH_MISSING)/*.txt; } || true

bench-rust-quick:
	SPOT_BENCH_QUICK=1 $(CARGO) bench -p spot-timer-core

bench-rust-memory:
	$(CARGO) bench -p spot-timer-core --bench memory

bench-rust-report:
	python3 core/benches/report.py $(ROOT)/target
