# .NET area: bindings/dotnet (C# over the C ABI, P/Invoke), compiled with Mono's mcs.
#   make test-dotnet      installs Mono + NUnit 2.6 when missing, builds libspot_timer,
#                         compiles SpotTimer.dll + tests into build/dotnet, runs NUnit
#   make demo-dotnet      builds and runs examples/dotnet
#   make bench-dotnet     20,000 periodic timers: spot-timer vs System.Threading.Timer
#                         (bench/results/dotnet.json; DOTNET_BENCH_SECONDS, DOTNET_BENCH_RUNS)

DOTNET_BUILD := $(BUILD)/dotnet
DOTNET_SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DOTNET_MCS := mcs -langversion:7.2 -unsafe -debug -nowarn:1591
DOTNET_LIBDIR := $(ROOT)/target/release
DOTNET_ENV := LD_LIBRARY_PATH=$(DOTNET_LIBDIR)$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH} SPOT_REPO_ROOT=$(ROOT) \
  SPOT_RESULT_TABLE=$(ROOT)/tests/vectors/results.txt
DOTNET_SRC := $(wildcard bindings/dotnet/src/*.cs bindings/dotnet/src/Lifecycle/*.cs)
DOTNET_TEST_SRC := $(wildcard bindings/dotnet/tests/*.cs)
DOTNET_BENCH_SECONDS ?= 5
DOTNET_BENCH_RUNS ?= 3

TEST_TARGETS += test-dotnet
# demo-dotnet is not part of `make demo` (it would install Mono); run it explicitly.
BENCH_TARGETS += bench-dotnet

.PHONY: dotnet-deps dotnet-lib dotnet-build test-dotnet demo-dotnet examples-dotnet bench-dotnet

# Mono's compiler and runtime and NUnit 2.6 from Debian, only when missing.
dotnet-deps:
	@if ! command -v mcs >/dev/null || ! command -v mono >/dev/null || ! command -v nunit-console >/dev/null \
	    || ! ls /usr/lib/cli/nunit.framework-2.6*/nunit.framework.dll >/dev/null 2>&1; then \
	  echo "installing mono-mcs mono-runtime nunit-console libnunit-cil-dev"; \
	  $(DOTNET_SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(DOTNET_SUDO) apt-get install -y -qq mono-mcs mono-runtime nunit-console libnunit-cil-dev >/dev/null; \
	fi
	@command -v cc >/dev/null || { echo "a C compiler (cc) is needed for the layout test"; exit 1; }

dotnet-lib:
	$(CARGO) build --release -p spot-timer-ffi

dotnet-build: dotnet-deps dotnet-lib
	@mkdir -p $(DOTNET_BUILD)
	$(DOTNET_MCS) -target:library -out:$(DOTNET_BUILD)/SpotTimer.dll $(DOTNET_SRC)
	cp bindings/dotnet/SpotTimer.dll.config $(DOTNET_BUILD)/
	$(DOTNET_MCS) -target:library -r:$(DOTNET_BUILD)/SpotTimer.dll -r:System.Core \
	  -r:$$(ls /usr/lib/cli/nunit.framework-2.6*/nunit.framework.dll | head -1) \
	  -out:$(DOTNET_BUILD)/SpotTimer.Tests.dll $(DOTNET_TEST_SRC)

test-dotnet: dotnet-build
	@cd $(DOTNET_BUILD) && rm -f TestResult.xml && \
	  $(DOTNET_ENV) timeout 600 nunit-console -nologo -noshadow SpotTimer.Tests.dll -xml=TestResult.xml > nunit.log 2>&1; \
	  rc=$$?; cat nunit.log; \
	  if [ ! -f TestResult.xml ]; then echo "0 passed, 1 failed (nunit-console exited $$rc without results)"; exit 1; fi; \
	  total=$$(sed -n 's/.*<test-results[^>]* total="\([0-9]*\)".*/\1/p' TestResult.xml); \
	  errors=$$(sed -n 's/.*<test-results[^>]* errors="\([0-9]*\)".*/\1/p' TestResult.xml); \
	  failures=$$(sed -n 's/.*<test-results[^>]* failures="\([0-9]*\)".*/\1/p' TestResult.xml); \
	  notrun=$$(sed -n 's/.*<test-results[^>]* not-run="\([0-9]*\)".*/\1/p' TestResult.xml); \
	  failed=$$((errors + failures)); passed=$$((total - failed - notrun)); \
	  echo "$$passed passed, $$failed failed"; \
	  [ "$$rc" = 0 ] && [ "$$failed" = 0 ]

demo-dotnet: dotnet-build
	$(DOTNET_MCS) -out:$(DOTNET_BUILD)/Example.exe -r:$(DOTNET_BUILD)/SpotTimer.dll examples/dotnet/Program.cs
	$(DOTNET_ENV) mono $(DOTNET_BUILD)/Example.exe

examples-dotnet: demo-dotnet

bench-dotnet: dotnet-build
	$(DOTNET_MCS) -optimize+ -out:$(DOTNET_BUILD)/Bench.exe -r:$(DOTNET_BUILD)/SpotTimer.dll -r:System.Core bindings/dotnet/bench/Bench.cs
	@mkdir -p bench/results
	$(DOTNET_ENV) mono --gc=sgen $(DOTNET_BUILD)/Bench.exe --seconds $(DOTNET_BENCH_SECONDS) --runs $(DOTNET_BENCH_RUNS) \
	  --out $(ROOT)/bench/results/dotnet.json
