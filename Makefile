# SPDX-License-Identifier: GPL-2.0
# perfspy: perf.data -> py-spy folded stacks.
#
#   make deps     install what is missing (apt-get when root; libperf from linux-source)
#   make          build/perfspy, build/libperfspy.so.*, build/perfspy.pc
#   make check    every test (unit, corpus, e2e, diff); prints "N passed, N failed"
#   make demo     record the bundled workload with perf and convert it
#   make bench    benchmarks against the perf script pipeline
#   make bench-record  perfspy record's overhead on a busy Python process
#   make bench-startup  start-up on a libtorch profile, kallsyms loading (issue 16)
#   make bench-memory   peak RSS on 1 GB and 10 GB generated inputs (issue 16)
#   make asan / make ubsan   the suite under sanitizers (build-asan/, build-ubsan/)
#   make tsan                convert -j N under ThreadSanitizer (build-tsan/)
#   make install  DESTDIR, PREFIX, LIBDIR, INCLUDEDIR, BINDIR honoured
#   make help     every target and variable, one line each
#   make wheel    dist/perfspy-*.whl: the CLI, the library, the Python package
#   V=1 shows the commands; WERROR=0 keeps warnings from failing the build.

VERSION_MAJOR := 0
VERSION_MINOR := 7
VERSION_PATCH := 0
VERSION := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)
MAP_NODE := PERFSPY_$(VERSION_MAJOR).$(VERSION_MINOR)

O ?= build
DEPS ?= build/deps
PKG_CONFIG ?= pkg-config
CC ?= cc
CFLAGS ?= -O2 -g
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# libperf: a system one if pkg-config knows it, else ours from linux-source
# (docs/design.md "Dependencies"; docs/perf-data-format.md §4).
SYS_LIBPERF := $(shell $(PKG_CONFIG) --exists libperf 2>/dev/null && echo y)
ifeq ($(SYS_LIBPERF),y)
LIBPERF_CFLAGS := $(shell $(PKG_CONFIG) --cflags libperf)
LIBPERF_LIBS := $(shell $(PKG_CONFIG) --libs libperf)
LIBPERF_STAMP :=
else
LIBPERF_CFLAGS := -I$(DEPS)/libperf/include
# Live capture (perfdata/live.c) links libperf itself; its archive needs
# libapi beside it (scripts/build-libperf.sh).
LIBPERF_LIBS := $(DEPS)/libperf/lib/libperf.a $(DEPS)/libperf/lib/libapi.a
LIBPERF_STAMP := $(DEPS)/libperf/.stamp
endif

# libdebuginfod is dlopen()ed at run time (frames/debuginfod.c): only its
# header is needed here.
PKGS := libdw libelf libzstd libtraceevent zlib libprotobuf-c libdeflate
PKG_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)

# Warnings are errors by default; WERROR=0 relaxes that for a newer
# compiler whose new warnings should not block a build.
WERROR ?= 1
ifeq ($(WERROR),1)
WERROR_FLAG := -Werror
else
WERROR_FLAG :=
endif

REQ_CFLAGS := -std=gnu11 -Wall -Wextra $(WERROR_FLAG) -Wno-missing-field-initializers \
	-D_GNU_SOURCE -Iinclude -Ilibconv $(LIBPERF_CFLAGS)
ALL_CFLAGS = $(REQ_CFLAGS) $(PKG_CFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden \
	-DPERFSPY_VERSION='"$(VERSION)"'
LIBS = $(LIBPERF_LIBS) $(PKG_LIBS) -ldl -lpthread
# The CLI links each dependency's static archive where the compiler finds
# one (scripts/exe-libs.sh): a shared library costs every start its mapping
# and relocation (docs/design.md §6.29). STATIC_DEPS=0 links the shared
# ones, as a distribution's package would.
STATIC_DEPS ?= 1
ifeq ($(STATIC_DEPS),1)
EXE_PKG_LIBS = $(or $(shell PKG_CONFIG='$(PKG_CONFIG)' CC='$(CC)' scripts/exe-libs.sh $(PKGS) 2>/dev/null),$(PKG_LIBS))
else
EXE_PKG_LIBS = $(PKG_LIBS)
endif
EXE_LIBS = $(LIBPERF_LIBS) $(EXE_PKG_LIBS) -ldl -lpthread

LIB_SRCS := $(sort $(wildcard libconv/*.c libconv/*/*.c))
LIB_HDRS := $(wildcard libconv/*.h libconv/*/*.h)
LIB_OBJS := $(patsubst libconv/%.c,$(O)/obj/%.o,$(LIB_SRCS))
TOOL_SRCS := $(sort $(wildcard tools/*.c))
TOOL_OBJS := $(patsubst tools/%.c,$(O)/tools/%.o,$(TOOL_SRCS))
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(patsubst tests/unit/%.c,$(O)/tests/%,$(UNIT_SRCS))
TLIB_SRCS := $(sort $(wildcard tests/lib/*.c))
# Fuzz targets (tests/fuzz/fuzz_*.c) double as unit tests: under gcc a
# driver replays each target's committed corpus (every crasher found).
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
UNIT_BINS += $(patsubst %,$(O)/tests/test_fuzz_%,$(FUZZ_TARGETS))

SONAME := libperfspy.so.$(VERSION_MAJOR)
SHLIB := $(O)/libperfspy.so.$(VERSION)
STLIB := $(O)/libperfspy.a

# perf's dlfilter header: the system's (linux-perf), else the kernel
# source's under $(DEPS); no header, no plugin (see the rule below).
DLFILTER_HDR := $(firstword $(wildcard /usr/include/perf/perf_dlfilter.h \
	$(DEPS)/linux-source-*/tools/perf/include/perf/perf_dlfilter.h))
ifneq ($(DLFILTER_HDR),)
DLFILTER := $(O)/perfspy-dlfilter.so
ifneq ($(DLFILTER_HDR),/usr/include/perf/perf_dlfilter.h)
DLFILTER_CFLAGS := -I$(patsubst %/perf/perf_dlfilter.h,%,$(DLFILTER_HDR))
endif
endif

.PHONY: all deps check check-unit check-e2e print-pkgs demo bench bench-record bench-startup bench-memory asan ubsan tsan install \
	uninstall clean check-abi fuzz help compile_commands.json proto
.DELETE_ON_ERROR:

all: $(O)/perfspy $(SHLIB) $(O)/libperfspy.so $(O)/perfspy.pc $(DLFILTER)

deps:
	$(Q)scripts/install-deps.sh
	$(Q)$(MAKE) --no-print-directory $(LIBPERF_STAMP) DEPS=$(DEPS)

$(DEPS)/libperf/.stamp: scripts/build-libperf.sh
	$(call msg,LIBPERF,$(DEPS)/libperf)
	$(Q)scripts/build-libperf.sh $(DEPS)

$(O)/obj/%.o: libconv/%.c $(LIB_HDRS) include/perfspy.h $(LIBPERF_STAMP)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) -c $< -o $@

# The version is compiled into errors.c (perfspy_version_string): a bump
# of VERSION_* must rebuild it.
$(O)/obj/common/errors.o: Makefile

$(O)/tools/%.o: tools/%.c $(wildcard tools/*.h) include/perfspy.h
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D) && $(CC) $(REQ_CFLAGS) $(CFLAGS) -c $< -o $@

$(STLIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# Versioned soname and a version script whose node must match VERSION
# (libbpf src/Makefile does the same check).
$(SHLIB): $(LIB_OBJS) libperfspy.map
	$(Q)grep -q '^$(MAP_NODE) ' libperfspy.map || \
		{ echo "libperfspy.map lacks node $(MAP_NODE)" >&2; exit 1; }
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=libperfspy.map \
		$(CFLAGS) -o $@ $(LIB_OBJS) $(LIBS)

$(O)/libperfspy.so: $(SHLIB)
	$(Q)ln -sf libperfspy.so.$(VERSION) $(O)/$(SONAME) && \
		ln -sf $(SONAME) $@

$(O)/perfspy.pc: perfspy.pc.template Makefile
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|; s|@VERSION@|$(VERSION)|' \
		$< > $@

# perf dlfilter plugin (plugin/perfspy_dlfilter.c): needs perf's
# perf_dlfilter.h, from the system (linux-perf) or the kernel source under
# $(DEPS); skipped when neither has it. The static archive is linked in
# (the .so loads into any perf without an install path to find), and a
# version script exports only the dlfilter entry points, so nothing of
# ours can clash with perf's own symbols.

$(O)/perfspy-dlfilter.so: plugin/perfspy_dlfilter.c plugin/dlfilter.map include/perfspy.h $(STLIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(REQ_CFLAGS) $(DLFILTER_CFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden \
		-shared -Wl,--version-script=plugin/dlfilter.map -Wl,-z,defs \
		-o $@ $< $(STLIB) $(LIBS)

# The CLI links the static archive: one self-contained binary.
$(O)/perfspy: $(TOOL_OBJS) $(STLIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $(TOOL_OBJS) $(STLIB) $(EXE_LIBS)

$(O)/tests/%: tests/unit/%.c $(TLIB_SRCS) $(wildcard tests/lib/*.h) $(STLIB)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D) && $(CC) $(REQ_CFLAGS) $(PKG_CFLAGS) $(CFLAGS) -Itests/lib \
		-I$(O)/tests -o $@ $< $(TLIB_SRCS) $(STLIB) $(LIBS)

# The usage example in perfspy.h's top comment, cut out between its
# EXAMPLE-BEGIN/END markers, compiled and run by test_api.
$(O)/tests/header_example.inc: include/perfspy.h
	$(Q)mkdir -p $(@D) && sed -n '/EXAMPLE-BEGIN/,/EXAMPLE-END/{/EXAMPLE-/d;s/^ \*//;p;}' $< > $@
	$(Q)test -s $@ || { echo "perfspy.h: no EXAMPLE-BEGIN/END block" >&2; exit 1; }

$(O)/tests/test_api: $(O)/tests/header_example.inc

$(O)/tests/test_fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/driver.c $(STLIB)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D) && $(CC) $(REQ_CFLAGS) $(PKG_CFLAGS) $(CFLAGS) \
		-DFUZZ_TARGET='"$*"' -o $@ $< tests/fuzz/driver.c $(STLIB) $(LIBS)

# The pprof messages' C code is generated once and committed (the build
# needs only libprotobuf-c); regenerate after editing pprof.proto.
proto:
	$(Q)cd libconv/folded && protoc-c --c_out=. pprof.proto

# libFuzzer builds (clang) in build-fuzz/; FUZZ_SECONDS per target.
fuzz:
	$(Q)scripts/fuzz.sh $(FUZZ_TARGETS)

# The pkg-config packages the library links: scripts/fuzz.sh links its
# targets with the same list.
print-pkgs:
	@echo $(PKGS)

check-unit: $(UNIT_BINS)
	$(Q)O=$(O) tests/run-tests.sh unit

check: all $(UNIT_BINS)
	$(Q)O=$(O) tests/run-tests.sh all

check-e2e: all
	$(Q)O=$(O) tests/run-tests.sh e2e

demo: deps all
	$(Q)O=$(O) scripts/demo.sh

bench: all
	$(Q)O=$(O) bench/run.sh

# perfspy record's cost on a 16-thread Python process (REC_SECONDS, REC_LONG=1).
bench-record: all
	$(Q)O=$(O) bench/run-record.sh

# Issue 16: converting a ~100-sample libtorch profile in <= 0.3 s, and the
# cost of loading kallsyms (STARTUP_RUNS, STARTUP_FREQ, STARTUP_REFRESH=1).
bench-startup: all
	$(Q)O=$(O) bench/run-startup.sh

# Issue 16: peak RSS flat from a 1 GB to a 10 GB input, and not above perf
# report's (MEM_SMALL_GB, MEM_LARGE_GB; needs their sum free on disk).
bench-memory: all
	$(Q)O=$(O) bench/run-memory.sh

asan:
	$(Q)$(MAKE) --no-print-directory O=build-asan \
		CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" check

ubsan:
	$(Q)$(MAKE) --no-print-directory O=build-ubsan \
		CFLAGS="-O1 -g -fsanitize=undefined -fno-sanitize-recover=all" check

# -j N's worker threads, the namer, the reader's warming thread and the
# folder's sorting thread under ThreadSanitizer (docs/design.md §6.4, §6.19,
# §6.21, §6.23): the e2e tests that
# split conversions over 2, 3 and 5 threads and that name frames ahead, the
# names log's unit test, the warmer's (its callchain digests) and the folder's
# (its stacks sorted ahead).
tsan:
	$(Q)$(MAKE) --no-print-directory O=build-tsan CFLAGS="-O1 -g -fsanitize=thread" all \
		build-tsan/tests/test_namer build-tsan/tests/test_warm build-tsan/tests/test_fold \
		build-tsan/tests/test_symbols build-tsan/tests/test_copyin
	$(Q)TSAN_OPTIONS=halt_on_error=1 O=build-tsan tests/run-tests.sh unit test_namer
	$(Q)TSAN_OPTIONS=halt_on_error=1 O=build-tsan tests/run-tests.sh unit test_warm
	$(Q)TSAN_OPTIONS=halt_on_error=1 O=build-tsan tests/run-tests.sh unit test_copyin
	$(Q)TSAN_OPTIONS=halt_on_error=1 O=build-tsan tests/run-tests.sh unit test_fold
	$(Q)TSAN_OPTIONS=halt_on_error=1 O=build-tsan tests/run-tests.sh unit test_symbols
	$(Q)TSAN_OPTIONS=halt_on_error=1 O=build-tsan tests/run-tests.sh e2e run-jobs
	$(Q)TSAN_OPTIONS=halt_on_error=1 O=build-tsan tests/run-tests.sh e2e run-namer
	$(Q)TSAN_OPTIONS=halt_on_error=1 O=build-tsan tests/run-tests.sh e2e run-copyin
	$(Q)TSAN_OPTIONS=halt_on_error=1 O=build-tsan tests/run-tests.sh e2e run-behind

check-abi: $(SHLIB)
	$(Q)scripts/check-abi.sh $(SHLIB) libperfspy.map

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)
	install -m 755 $(O)/perfspy $(DESTDIR)$(BINDIR)/perfspy
	install -m 644 include/perfspy.h $(DESTDIR)$(INCLUDEDIR)/perfspy.h
	install -m 755 $(SHLIB) $(DESTDIR)$(LIBDIR)/
	ln -sf libperfspy.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libperfspy.so
	install -m 644 $(STLIB) $(DESTDIR)$(LIBDIR)/
	install -m 644 $(O)/perfspy.pc $(DESTDIR)$(LIBDIR)/pkgconfig/perfspy.pc
	$(if $(DLFILTER),install -d $(DESTDIR)$(LIBDIR)/perfspy && \
		install -m 755 $(DLFILTER) $(DESTDIR)$(LIBDIR)/perfspy/perfspy-dlfilter.so)

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/perfspy $(DESTDIR)$(INCLUDEDIR)/perfspy.h \
		$(DESTDIR)$(LIBDIR)/libperfspy.so* $(DESTDIR)$(LIBDIR)/libperfspy.a \
		$(DESTDIR)$(LIBDIR)/pkgconfig/perfspy.pc \
		$(DESTDIR)$(LIBDIR)/perfspy/perfspy-dlfilter.so

# compile_commands.json for clangd and clang-tidy, from the commands
# `make -n` would run for a full build (nothing is compiled; bear would
# need a real build to watch).
compile_commands.json:
	$(Q)$(MAKE) --no-print-directory -B -n V=1 all $(UNIT_BINS) | \
		python3 scripts/compile-commands.py > $@.tmp && mv $@.tmp $@
	@echo "  GEN      $@"

help:
	@echo 'Targets:'
	@echo '  all (default)      build/perfspy, build/libperfspy.so.*, build/libperfspy.a, build/perfspy.pc'
	@echo '  check              every test: unit, lint, corpus, e2e, diff (prints N passed, N failed)'
	@echo '  check-unit         unit tests and lint checks only (fast)'
	@echo '  check-e2e          end-to-end tests (real perf record)'
	@echo '  check-abi          exports of the shared library against libperfspy.map'
	@echo '  asan / ubsan       the suite under sanitizers (build-asan/, build-ubsan/)'
	@echo '  tsan               convert -j N under ThreadSanitizer (build-tsan/, e2e run-jobs)'
	@echo '  fuzz               libFuzzer targets with clang (build-fuzz/; FUZZ_SECONDS per target)'
	@echo '  bench              speed and memory against the perf script pipeline'
	@echo '  bench-startup      start-up on a ~100-sample libtorch profile, kallsyms cost'
	@echo '  bench-memory       peak RSS on 1 GB and 10 GB generated inputs vs perf report'
	@echo '  demo               record the bundled Python workload and convert it'
	@echo '  deps               install missing dependencies (apt-get when root; libperf)'
	@echo '  compile_commands.json  compilation database for clangd/clang-tidy'
	@echo '  install / uninstall    DESTDIR, PREFIX, LIBDIR, INCLUDEDIR, BINDIR'
	@echo '  clean              remove build output'
	@echo 'Variables:'
	@echo '  O=DIR              build directory (default build)'
	@echo '  V=1                show the commands'
	@echo '  WERROR=0           warnings do not fail the build'
	@echo '  CFLAGS=...         optimisation and debug flags (default -O2 -g)'
	@echo '  CC, PKG_CONFIG, DEPS   compiler, pkg-config, libperf build directory'

clean:
	rm -rf $(O) build-asan build-ubsan build-fuzz

# dist/perfspy-VERSION-py3-none-manylinux_2_XX_ARCH.whl: the CLI, the
# library and the Python package, linked statically against every
# dependency Debian ships an archive of (built in build-wheel/).
.PHONY: wheel
wheel:
	$(Q)scripts/build-wheel.sh
