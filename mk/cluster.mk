# Several nodes on etcd (lifecycle-etcd/, crate spot-lifecycle-etcd).
#   make test-cluster   installs etcd-server/etcd-client when missing, starts a
#                       single-member etcd and a 3-member etcd cluster on loopback with
#                       temporary data directories (tests/cluster/with-etcd.sh), runs the
#                       cluster and failover tests (node processes spawned by the tests),
#                       then the etcd tests of the C ABI, the C++ wrapper, .NET and the
#                       Python binding (and its failover tests), and stops every etcd at
#                       the end whatever happens.
# The etcd client crate compiles etcd's protobuf files at build time, so every cargo
# command over the workspace needs `protoc` (Debian protobuf-compiler): RUST_TOOLS. So does
# the Python binding, which links the etcd store (mk/python.mk).

RUST_TOOLS += protoc
TEST_TARGETS += test-cluster
.PHONY: protoc etcd-installed test-cluster

protoc:
	@command -v protoc >/dev/null || (apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler >/dev/null)

etcd-installed:
	@command -v etcd >/dev/null && command -v etcdctl >/dev/null || (apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server etcd-client >/dev/null)

# Then the C ABI, the C++ wrapper, .NET and the Python binding on etcd (two nodes on two stores, as two
# processes would have them) against a fresh etcd each. PY_INSTALLED is defined by
# mk/python.mk, read after this file: `$$(PY_INSTALLED)` is expanded once every file is read.
.SECONDEXPANSION:
test-cluster: protoc etcd-installed ffi-lib dotnet-build $$(PY_INSTALLED)
	$(CARGO) build --release -p spot-lifecycle-etcd --tests --bins
	timeout --kill-after=10 900 tests/cluster/with-etcd.sh \
	  $(CARGO) test --release -p spot-lifecycle-etcd -- --include-ignored --nocapture --test-threads 1
	@echo "== the etcd store through the C ABI"
	@mkdir -p $(C_BUILD)
	gcc $(C_CFLAGS) $(SAN) tests/cluster/c_etcd.c $(C_SHARED) -o $(C_BUILD)/c_etcd
	timeout --kill-after=10 120 tests/cluster/with-etcd.sh $(C_BUILD)/c_etcd
	@echo "== the C++ wrapper's listen address on etcd (nodes of two stores over TCP)"
	g++ $(CXX_FLAGS) $(SAN) tests/cluster/cpp_etcd.cpp $(C_STATIC) -o $(C_BUILD)/cpp_etcd
	timeout --kill-after=10 120 tests/cluster/with-etcd.sh $(C_BUILD)/cpp_etcd
	@echo "== the etcd store from .NET (the fixture's etcd test must run, not be ignored)"
	cd $(DOTNET_BUILD) && timeout --kill-after=10 200 $(ROOT)/tests/cluster/with-etcd.sh \
	  env $(DOTNET_ENV) nunit-console -nologo -noshadow SpotTimer.Tests.dll \
	  -run:SpotTimer.Tests.EtcdStoreTests -xml=EtcdTestResult.xml > etcd-nunit.log 2>&1; \
	  rc=$$?; cat etcd-nunit.log; [ "$$rc" = 0 ] && grep -q 'Not run: 0' etcd-nunit.log
	@echo "== the etcd store from Python"
	timeout --kill-after=10 180 tests/cluster/with-etcd.sh \
	  $(PY) -m pytest -q --timeout 120 bindings/python/tests/test_lifecycle_etcd.py
	@echo "== failover from Python: node processes killed, stopped past their lease, etcd down and its leader killed"
	timeout --kill-after=10 900 tests/cluster/with-etcd.sh \
	  $(PY) -m pytest -q -s --timeout 300 bindings/python/tests/test_lifecycle_failover.py

# Cluster benchmark rows (activations/s, etcd requests per activation, send→handler
# latency; etcd store against the embedded one): JSON lines to bench/results/cluster.jsonl.
# Not part of `make test`.
BENCH_TARGETS += bench-cluster
.PHONY: bench-cluster
bench-cluster: protoc etcd-installed
	@mkdir -p bench/results
	$(CARGO) build --release -p spot-lifecycle-etcd --example etcd_bench
	set -o pipefail; tests/cluster/with-etcd.sh \
	  $(CARGO) run --release -q -p spot-lifecycle-etcd --example etcd_bench | tee bench/results/cluster.jsonl
