# loom models of the core's cross-thread protocols (the `loom_models` modules of
# core/src/slot/word.rs, slot/succession.rs, owner/mod.rs and owner/gate.rs), run on the
# real code with the protocol atomics swapped for loom's (core/src/sync.rs).
# Own target dir: the cfg changes every crate's build.
LOOM_TARGET := $(ROOT)/target/loom

.PHONY: test-loom
test-loom:
	RUSTFLAGS="--cfg spot_loom" CARGO_TARGET_DIR=$(LOOM_TARGET) \
	  $(CARGO) test -p spot-timer-core --release --lib loom_models

# The loom models are part of the reliability suite too.
test-reliability: test-loom
