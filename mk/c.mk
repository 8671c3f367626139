# C ABI area: libspot_timer (ffi/), the generated header, C/C++ examples and C tests.
#   make header       regenerate include/spot_timer.h with the pinned cbindgen (and the .NET
#                     mirror of it, bindings/dotnet/src/Interop.g.cs)
#   make test-c       header drift check + C tests (ASan/UBSan and valgrind, static and
#                     shared library) + SIGSTOP lease test + install/pkg-config check
#   make examples     build and run examples/c and examples/cpp (examples-c; part of make demo)
#   make install PREFIX=/usr/local   headers, both libraries and spot_timer.pc

CBINDGEN_VERSION := 0.29.4
TOOLS := $(BUILD)/tools
CBINDGEN := $(TOOLS)/bin/cbindgen
CBINDGEN_STAMP := $(TOOLS)/.cbindgen-$(CBINDGEN_VERSION)
C_BUILD := $(BUILD)/c
C_LIB := $(C_BUILD)/lib
CARGO_TARGET_DIR ?= $(ROOT)/target
# The shared library's SONAME is libspot_timer.so.<ABI major> (ffi/build.rs); installed as
# libspot_timer.so.<major>.<minor>.0 with the usual .so.<major> and .so links.
ABI_MAJOR := $(shell sed -n 's/^\#define SPOT_ABI_VERSION ((\([0-9]*\) << 16) | \([0-9]*\))/\1/p' $(ROOT)/include/spot_timer.h)
ABI_MINOR := $(shell sed -n 's/^\#define SPOT_ABI_VERSION ((\([0-9]*\) << 16) | \([0-9]*\))/\2/p' $(ROOT)/include/spot_timer.h)
SONAME := libspot_timer.so.$(ABI_MAJOR)
PREFIX ?= /usr/local

C_WARN := -std=c11 -Wall -Wextra -Werror -pedantic -g -O1 -pthread
C_CFLAGS := $(C_WARN) -I$(ROOT)/include
CXX_FLAGS := -std=c++17 -Wall -Wextra -Werror -pedantic -g -O1 -pthread -I$(ROOT)/include
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SYS_LIBS := -lpthread -ldl -lm
C_STATIC := $(C_LIB)/libspot_timer.a $(SYS_LIBS)
C_SHARED := -L$(C_LIB) -lspot_timer -Wl,-rpath,$(C_LIB) $(SYS_LIBS)
VALGRIND := valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible \
	--suppressions=$(ROOT)/tests/c/valgrind.supp
# Every test program runs under a time limit, so a hang fails the target instead of
# blocking it.
T := timeout --kill-after=10 120
C_TEST_SRC := $(wildcard tests/c/*.c)
C_SUITE_SRC := $(filter-out tests/c/lease_sigstop.c tests/c/cancel_race.c tests/c/lifecycle_authority.c,$(C_TEST_SRC))
LEASE_SRC := tests/c/lease_sigstop.c tests/c/harness.c

TEST_TARGETS += test-c
DEMO_TARGETS += demo-c

.PHONY: c-deps cbindgen header header-check ffi-lib test-c examples examples-c demo-c install

# Tools test-c needs; installed only when missing (fresh Debian machine).
c-deps:
	@command -v gcc >/dev/null && command -v g++ >/dev/null && command -v valgrind >/dev/null \
	  && command -v pkg-config >/dev/null && command -v cmake >/dev/null \
	  || (apt-get update && apt-get install -y gcc g++ valgrind pkg-config cmake)

$(CBINDGEN_STAMP):
	$(CARGO) install cbindgen --version $(CBINDGEN_VERSION) --locked --root $(TOOLS)
	@touch $@

cbindgen: $(CBINDGEN_STAMP)

header: cbindgen
	$(CBINDGEN) -q --config ffi/cbindgen.toml --crate spot-timer-ffi --output include/spot_timer.h ffi
	python3 bindings/dotnet/gen_interop.py include/spot_timer.h > bindings/dotnet/src/Interop.g.cs

# Fails when the committed header differs from a fresh generation.
header-check: cbindgen
	@mkdir -p $(C_BUILD)
	$(CBINDGEN) -q --config ffi/cbindgen.toml --crate spot-timer-ffi --output $(C_BUILD)/spot_timer.h ffi
	@diff -u include/spot_timer.h $(C_BUILD)/spot_timer.h \
	  || (echo "include/spot_timer.h is out of date: run 'make header' and commit it" && exit 1)
	@echo "header-check: include/spot_timer.h matches cbindgen $(CBINDGEN_VERSION)"
	@printf '#include "spot_timer.h"\nint main(void) { return 0; }\n' > $(C_BUILD)/c89_check.c
	gcc -std=c89 -pedantic -Wall -Wextra -Werror -I$(ROOT)/include -fsyntax-only $(C_BUILD)/c89_check.c
	@echo "header-check: the header compiles as C89 (-pedantic)"

# protoc: the etcd store's client compiles etcd's protobuf files (mk/cluster.mk).
ffi-lib: protoc
	$(CARGO) build --release -p spot-timer-ffi
	@mkdir -p $(C_LIB)
	cp $(CARGO_TARGET_DIR)/release/libspot_timer.a $(CARGO_TARGET_DIR)/release/libspot_timer.so $(C_LIB)/
	ln -sf libspot_timer.so $(C_LIB)/$(SONAME)

test-c: c-deps header-check ffi-lib
	@mkdir -p $(C_BUILD)
	gcc $(C_CFLAGS) $(SAN) $(C_SUITE_SRC) $(C_STATIC) -o $(C_BUILD)/tests_asan_static
	gcc $(C_CFLAGS) $(SAN) $(C_SUITE_SRC) $(C_SHARED) -o $(C_BUILD)/tests_asan_shared
	gcc $(C_CFLAGS) $(C_SUITE_SRC) $(C_STATIC) -o $(C_BUILD)/tests_static
	gcc $(C_CFLAGS) $(C_SUITE_SRC) $(C_SHARED) -o $(C_BUILD)/tests_shared
	gcc $(C_CFLAGS) $(SAN) $(LEASE_SRC) $(C_STATIC) -o $(C_BUILD)/lease_asan_static
	gcc $(C_CFLAGS) $(SAN) $(LEASE_SRC) $(C_SHARED) -o $(C_BUILD)/lease_asan_shared
	gcc $(C_CFLAGS) $(LEASE_SRC) $(C_STATIC) -o $(C_BUILD)/lease_static
	gcc $(C_CFLAGS) $(SAN) tests/c/cancel_race.c $(C_STATIC) -o $(C_BUILD)/cancel_race_asan
	gcc $(C_CFLAGS) $(SAN) tests/c/lifecycle_authority.c tests/c/harness.c $(C_STATIC) -o $(C_BUILD)/lifecycle_authority_asan
	g++ $(CXX_FLAGS) $(SAN) examples/cpp/*.cpp $(C_STATIC) -o $(C_BUILD)/example_cpp_asan
	g++ $(CXX_FLAGS) $(SAN) tests/cpp/wrapper.cpp $(C_STATIC) -o $(C_BUILD)/cpp_wrapper_asan
	g++ $(CXX_FLAGS) $(SAN) tests/cpp/result_table.cpp $(C_STATIC) -o $(C_BUILD)/cpp_result_table_asan
	g++ $(CXX_FLAGS) $(SAN) tests/cpp/lifecycle.cpp $(C_STATIC) -o $(C_BUILD)/cpp_lifecycle_asan
	@echo "== C++: a Timer dropped at once does not compile ([[nodiscard]]; the file is fine otherwise)"
	@g++ $(CXX_FLAGS) -Wno-unused-result -fsyntax-only tests/cpp/discard_timer.cpp
	@! g++ $(CXX_FLAGS) -fsyntax-only tests/cpp/discard_timer.cpp 2>/dev/null
	@echo "== C tests, ASan/UBSan, static library";  $(T) $(C_BUILD)/tests_asan_static
	@echo "== C tests, ASan/UBSan, shared library";  $(T) $(C_BUILD)/tests_asan_shared
	@echo "== C tests, valgrind, static library";    SPOT_C_RACE_ROUNDS=10 $(T) $(VALGRIND) $(C_BUILD)/tests_static
	@echo "== C tests, valgrind, shared library";    SPOT_C_RACE_ROUNDS=10 $(T) $(VALGRIND) $(C_BUILD)/tests_shared
	@echo "== SIGSTOP lease test, ASan, static";     $(T) $(C_BUILD)/lease_asan_static
	@echo "== SIGSTOP lease test, ASan, shared";     $(T) $(C_BUILD)/lease_asan_shared
	@echo "== SIGSTOP lease test, valgrind (x5 durations)"; $(T) $(VALGRIND) $(C_BUILD)/lease_static 5
	@echo "== cancel x notice x exchange racing failing hooks, 20,000 rounds, ASan/UBSan"; \
	  $(T) $(C_BUILD)/cancel_race_asan 20000
	@echo "== a node's own lease, scans and term; refusals (real clocks), ASan/UBSan"; \
	  $(T) $(C_BUILD)/lifecycle_authority_asan
	@echo "== C++ wrapper example, ASan/UBSan";      $(T) $(C_BUILD)/example_cpp_asan > $(C_BUILD)/example_cpp.out && tail -1 $(C_BUILD)/example_cpp.out
	@echo "== C++ wrapper tests, ASan/UBSan";        $(T) $(C_BUILD)/cpp_wrapper_asan
	@echo "== C++ result table, ASan/UBSan";         $(T) $(C_BUILD)/cpp_result_table_asan
	@echo "== C++ lifecycle wrapper, ASan/UBSan";    $(T) $(C_BUILD)/cpp_lifecycle_asan
	@echo "== SONAME $(SONAME): in the library and in what links to it"
	readelf -d $(C_LIB)/libspot_timer.so | grep -q 'Library soname: \[$(SONAME)\]'
	readelf -d $(C_BUILD)/tests_shared | grep -q 'Shared library: \[$(SONAME)\]'
	@echo "== make install + pkg-config build of examples/c"
	@rm -rf $(C_BUILD)/prefix
	@$(MAKE) --no-print-directory install PREFIX=$(C_BUILD)/prefix > /dev/null
	gcc $(C_WARN) examples/c/*.c \
	  $$(PKG_CONFIG_PATH=$(C_BUILD)/prefix/lib/pkgconfig pkg-config --cflags --libs spot_timer) \
	  -o $(C_BUILD)/example_c_pkgconfig
	LD_LIBRARY_PATH=$(C_BUILD)/prefix/lib $(T) $(C_BUILD)/example_c_pkgconfig > $(C_BUILD)/example_c.out && tail -1 $(C_BUILD)/example_c.out
	test -L $(C_BUILD)/prefix/lib/libspot_timer.so && test -L $(C_BUILD)/prefix/lib/$(SONAME) \
	  && test -f $(C_BUILD)/prefix/lib/$(SONAME).$(ABI_MINOR).0
	@echo "== CMake consumer: find_package(spot_timer CONFIG) from the installed prefix"
	@rm -rf $(C_BUILD)/cmake-consumer
	cmake -S tests/cmake -B $(C_BUILD)/cmake-consumer -DCMAKE_PREFIX_PATH=$(C_BUILD)/prefix \
	  -DEXAMPLES=$(ROOT)/examples > $(C_BUILD)/cmake-consumer.log
	cmake --build $(C_BUILD)/cmake-consumer >> $(C_BUILD)/cmake-consumer.log
	$(T) $(C_BUILD)/cmake-consumer/consumer_c | tail -1
	$(T) $(C_BUILD)/cmake-consumer/consumer_cpp | tail -1
	readelf -d $(C_BUILD)/cmake-consumer/consumer_c | grep -q 'Shared library: \[$(SONAME)\]'
	@echo "== pkg-config and CMake package versions agree with the header ($(ABI_MAJOR).$(ABI_MINOR).0)"
	test "$$(PKG_CONFIG_PATH=$(C_BUILD)/prefix/lib/pkgconfig pkg-config --modversion spot_timer)" = "$(ABI_MAJOR).$(ABI_MINOR).0"
	grep -q 'set(PACKAGE_VERSION "$(ABI_MAJOR).$(ABI_MINOR).0")' $(C_BUILD)/prefix/lib/cmake/spot_timer/spot_timerConfigVersion.cmake
	@echo "== the install recipe of ffi/README.md, as written"
	python3 tests/doc_scripts.py --self-test
	python3 tests/doc_scripts.py ffi/README.md
	@echo "test-c: all C suites passed"

# `examples` may gain prerequisites from other areas too: this rule adds ours, no recipe.
examples: examples-c
demo-c: examples-c
examples-c: c-deps ffi-lib
	@mkdir -p $(C_BUILD)
	gcc $(C_CFLAGS) examples/c/*.c $(C_STATIC) -o $(C_BUILD)/example_c
	g++ $(CXX_FLAGS) examples/cpp/*.cpp $(C_STATIC) -o $(C_BUILD)/example_cpp
	@echo "== examples/c";   $(T) $(C_BUILD)/example_c
	@echo "== examples/cpp"; $(T) $(C_BUILD)/example_cpp

install: ffi-lib
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 include/spot_timer.h include/spot_timer.hpp $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(C_LIB)/libspot_timer.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(C_LIB)/libspot_timer.so $(DESTDIR)$(PREFIX)/lib/$(SONAME).$(ABI_MINOR).0
	ln -sf $(SONAME).$(ABI_MINOR).0 $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libspot_timer.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(ABI_MAJOR).$(ABI_MINOR).0|' ffi/spot_timer.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/spot_timer.pc
	install -d $(DESTDIR)$(PREFIX)/lib/cmake/spot_timer
	sed -e 's|@SONAME_MAJOR@|$(ABI_MAJOR)|g' ffi/cmake/spot_timerConfig.cmake \
	  > $(DESTDIR)$(PREFIX)/lib/cmake/spot_timer/spot_timerConfig.cmake
	sed -e 's|@ABI_VERSION@|$(ABI_MAJOR).$(ABI_MINOR).0|g' -e 's|@ABI_MAJOR@|$(ABI_MAJOR)|g' \
	  ffi/cmake/spot_timerConfigVersion.cmake \
	  > $(DESTDIR)$(PREFIX)/lib/cmake/spot_timer/spot_timerConfigVersion.cmake
	@echo "installed spot_timer $(ABI_MAJOR).$(ABI_MINOR).0 (the C ABI's version) to $(DESTDIR)$(PREFIX)"
