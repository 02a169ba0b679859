# SPDX-License-Identifier: GPL-2.0
# perfspy: perf.data -> py-spy folded stacks.
#
#   make deps     install what is missing (apt-get when root; libperf from linux-source)
#   make          build/perfspy, build/libperfspy.so.*, build/perfspy.pc
#   make check    every test (unit, corpus, e2e, diff); prints "N passed, N failed"
#   make demo     record the bundled workload with perf and convert it
#   make bench    benchmarks against the perf script pipeline
#   make bench-record  perfspy record's overhead on a busy Python process
#   make asan / make ubsan   the suite under sanitizers (build-asan/, build-ubsan/)
#   make install  DESTDIR, PREFIX, LIBDIR, INCLUDEDIR, BINDIR honoured
#   V=1 shows the commands.

VERSION_MAJOR := 0
VERSION_MINOR := 1
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
# (DESIGN.md "Dependencies"; reference/perf-data-format.md §4).
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

PKGS := libdw libelf libzstd libtraceevent
PKG_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)

REQ_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -Wno-missing-field-initializers \
	-D_GNU_SOURCE -Iinclude -Ilibconv $(LIBPERF_CFLAGS)
ALL_CFLAGS = $(REQ_CFLAGS) $(PKG_CFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden \
	-DPERFSPY_VERSION='"$(VERSION)"'
LIBS = $(LIBPERF_LIBS) $(PKG_LIBS) -lstdc++ -lpthread

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

.PHONY: all deps check check-unit check-e2e demo bench bench-record asan ubsan install \
	uninstall clean check-abi fuzz
.DELETE_ON_ERROR:

all: $(O)/perfspy $(SHLIB) $(O)/libperfspy.so $(O)/perfspy.pc

deps:
	$(Q)scripts/install-deps.sh
	$(Q)$(MAKE) --no-print-directory $(LIBPERF_STAMP) DEPS=$(DEPS)

$(DEPS)/libperf/.stamp: scripts/build-libperf.sh
	$(call msg,LIBPERF,$(DEPS)/libperf)
	$(Q)scripts/build-libperf.sh $(DEPS)

$(O)/obj/%.o: libconv/%.c $(LIB_HDRS) include/perfspy.h $(LIBPERF_STAMP)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) -c $< -o $@

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

# The CLI links the static archive: one self-contained binary.
$(O)/perfspy: $(TOOL_OBJS) $(STLIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $(TOOL_OBJS) $(STLIB) $(LIBS)

$(O)/tests/%: tests/unit/%.c $(TLIB_SRCS) $(wildcard tests/lib/*.h) $(STLIB)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D) && $(CC) $(REQ_CFLAGS) $(PKG_CFLAGS) $(CFLAGS) -Itests/lib \
		-o $@ $< $(TLIB_SRCS) $(STLIB) $(LIBS)

$(O)/tests/test_fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/driver.c $(STLIB)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D) && $(CC) $(REQ_CFLAGS) $(PKG_CFLAGS) $(CFLAGS) \
		-DFUZZ_TARGET='"$*"' -o $@ $< tests/fuzz/driver.c $(STLIB) $(LIBS)

# libFuzzer builds (clang) in build-fuzz/; FUZZ_SECONDS per target.
fuzz:
	$(Q)scripts/fuzz.sh $(FUZZ_TARGETS)

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

asan:
	$(Q)$(MAKE) --no-print-directory O=build-asan \
		CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" check

ubsan:
	$(Q)$(MAKE) --no-print-directory O=build-ubsan \
		CFLAGS="-O1 -g -fsanitize=undefined -fno-sanitize-recover=all" check

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

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/perfspy $(DESTDIR)$(INCLUDEDIR)/perfspy.h \
		$(DESTDIR)$(LIBDIR)/libperfspy.so* $(DESTDIR)$(LIBDIR)/libperfspy.a \
		$(DESTDIR)$(LIBDIR)/pkgconfig/perfspy.pc

clean:
	rm -rf $(O) build-asan build-ubsan build-fuzz
