# tpuform build.
#
#   make            build ./tpuform
#   make demo       deps + build + the main job on examples/local.yaml
#   make check      deps + build + every test (unit, end-to-end), JOBS=N at a time
#   make bench      benchmarks (print figures; never pass/fail on time, but
#                   fail when a bench breaks: tests/bench/run.sh)
#   make bench-smoke  every benchmark at its smallest size: fails when one
#                   exits non-zero, prints no figure line or leaves a process
#   make soak       fault soak of watch (SOAK_MINUTES=N, default 10; a benchmark)
#   make lint       static checks: function length, shellcheck, clang
#                   analyzer, cppcheck, layering, call circles, basenames
#                   (tests/lint/run.sh)
#   make fuzz       libFuzzer harnesses, FUZZ_SECONDS=N each (tests/fuzz/)
#   make SANITIZE=address,undefined check
#   make install      PREFIX=/usr/local DESTDIR=... (dist/install.mk: also
#                     uninstall, gen, dist, deb)
#   WERROR=1          -Werror for any target (on by itself for check, lint, fuzz)
#
# Sources are picked up by directory, so a new module needs no Makefile edit:
#   util/*.c state/*.c plan/*.c providers/*/*.c cmd/*.c  -> ./tpuform
#   tests/unit/test_*.c                                   -> one binary each
#   tests/fakegcp/*.c                                     -> tests/fakegcp/fakegcp

# `make` with no target builds the binary: the included files below define
# rules of their own (.build-info), and the first rule read would otherwise
# be the default goal.
.DEFAULT_GOAL := all

# The version, commit and build date (VERSION, COMMIT, BUILD_DATE), from
# git or from a release tarball's .tarball-version; `make install`, `make
# dist` and `make deb` (dist/install.mk).
# version.mk has rules: without this its .build-info would be the default goal
# and a bare `make` would build nothing else.
.DEFAULT_GOAL := all
include dist/version.mk

PKGS      := libcurl yaml-0.1 jansson libgit2 libssh2 libcrypto libmicrohttpd
TEST_PKGS := libmicrohttpd
# Debian packages that provide the pkg-config modules above, plus the
# programs the tests and the local provider run (python3-prometheus-client:
# the metrics test parses `watch -metrics-addr` output with it;
# python3-asyncssh: the many-worker SSH harness, tests/e2e/ssh_workers.py).
DEB_PKGS  := build-essential pkg-config libcurl4-openssl-dev libyaml-dev \
             libjansson-dev libgit2-dev libssh2-1-dev libssl-dev \
             libmicrohttpd-dev screen git openssh-server openssh-client \
             procps python3-prometheus-client python3-asyncssh
# What `make lint` needs on top (installed by it through `make deps`).
LINT_DEB_PKGS := shellcheck clang cppcheck

CC      ?= cc
CFLAGS  ?= -O2 -g
# -Werror for the project's own checks only (make check, make lint, make
# fuzz, CI), as curl and git do: a newer compiler's new warning must not
# break a user's `make` or `make install`. WERROR=1 turns it on anywhere.
WERROR  ?=
ifneq ($(filter check lint fuzz fuzz-build,$(MAKECMDGOALS)),)
WERROR  := 1
endif
CFLAGS  += -std=gnu11 -Wall -Wextra $(if $(filter-out 0,$(WERROR)),-Werror) -Wno-unused-parameter \
           -Wshadow -Wformat=2 -Wstrict-prototypes -fno-common \
           -D_GNU_SOURCE -DTPF_VERSION='"$(VERSION)"' -I. -pthread
LDFLAGS += -pthread

ifneq ($(SANITIZE),)
CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif

PKG_CFLAGS  = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS    = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
TEST_CFLAGS = $(shell pkg-config --cflags $(TEST_PKGS) 2>/dev/null)
TEST_LIBS   = $(shell pkg-config --libs $(TEST_PKGS) 2>/dev/null)

LIB_SRCS  := $(sort $(wildcard util/*.c model/*.c google/*.c config/*.c state/*.c source/*.c plan/*.c providers/*.c providers/*/*.c providers/*/*/*.c engine/*.c engine/*/*.c) $(filter-out templates/embedded.c,$(wildcard templates/*.c)))
CMD_SRCS  := $(sort $(wildcard cmd/*.c))
TEMPLATES := $(sort $(wildcard templates/*.sh))
GEN_SRCS  := templates/embedded.c
LIB_OBJS  := $(LIB_SRCS:.c=.o) $(GEN_SRCS:.c=.o)
CMD_OBJS  := $(CMD_SRCS:.c=.o)
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:.c=)
FAKEGCP_SRCS := $(sort $(wildcard tests/fakegcp/*.c))
FAKEGCP   := $(if $(FAKEGCP_SRCS),tests/fakegcp/fakegcp)
DEPS      := $(LIB_OBJS:.o=.d) $(CMD_OBJS:.o=.d) $(UNIT_SRCS:.c=.d) $(FAKEGCP_SRCS:.c=.d)

.PHONY: all deps demo check test unit e2e bench bench-smoke soak clean check-deps lint
all: tpuform

# Flags the objects were built with: a change (e.g. SANITIZE) rebuilds all.
.build-flags: FORCE
	@echo '$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS)' | cmp -s - $@ || echo '$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS)' > $@
FORCE:

%.o: %.c .build-flags
	$(CC) $(CPPFLAGS) $(CFLAGS) $(PKG_CFLAGS) $(TEST_CFLAGS) -MMD -MP -c -o $@ $<

# Templates are embedded into the binary: each file becomes a C string.
templates/embedded.c: $(TEMPLATES) templates/embed.sh
	sh templates/embed.sh $(TEMPLATES) > $@.tmp && mv $@.tmp $@

# Objects are linked directly (no static archive: ar would confuse two
# objects with the same base name in different directories).
tpuform: $(CMD_OBJS) $(LIB_OBJS)
	$(CC) $(LDFLAGS) -o $@ $(CMD_OBJS) $(LIB_OBJS) $(PKG_LIBS)

tests/unit/test_%: tests/unit/test_%.o tests/unit/unit.o $(LIB_OBJS)
	$(CC) $(LDFLAGS) -o $@ $< tests/unit/unit.o $(LIB_OBJS) $(PKG_LIBS)

# test_gcp_fields runs tpuform's partial-response field lists through the
# emulator's fields filter (tests/fakegcp/fg_fields.c, jansson only).
tests/unit/test_gcp_fields: tests/unit/test_gcp_fields.o tests/unit/unit.o tests/fakegcp/fg_fields.o $(LIB_OBJS)
	$(CC) $(LDFLAGS) -o $@ $< tests/unit/unit.o tests/fakegcp/fg_fields.o $(LIB_OBJS) $(PKG_LIBS)

# The emulator needs only util/: it must build even when product code does not.
UTIL_OBJS := $(patsubst %.c,%.o,$(wildcard util/*.c))
tests/fakegcp/fakegcp: $(FAKEGCP_SRCS:.c=.o) $(UTIL_OBJS)
	$(CC) $(LDFLAGS) -o $@ $(FAKEGCP_SRCS:.c=.o) $(UTIL_OBJS) $(TEST_LIBS) $(PKG_LIBS)

# Install the Debian packages that are missing where apt is (as root), or
# name the missing pkg-config modules elsewhere (dist/deps.sh).
deps:
	@DEB_PKGS="$(DEB_PKGS)" PKGS="$(PKGS)" sh dist/deps.sh

demo: deps
	$(MAKE) tpuform
	sh examples/demo.sh

unit: $(UNIT_BINS)
e2e: tpuform $(FAKEGCP)

# The test command README.md gives. Prints TAP, ends with "N passed, N failed, N skipped".
# JOBS=N: tests run N at a time (default: twice the CPUs; tests/run.sh).
check: deps
	$(MAKE) WERROR=$(WERROR) tpuform $(UNIT_BINS) $(FAKEGCP) $(FUZZ_REPLAYS)
	sh tests/run.sh $(if $(JOBS),-j $(JOBS))

test: check

bench: tpuform $(FAKEGCP)
	sh tests/bench/run.sh

# Each bench at its smallest size, soak.sh included (a few minutes): it must
# exit 0, print its figure lines and leave no process behind. CI runs it
# after make check, on that build (SANITIZE=address,undefined).
bench-smoke: tpuform $(FAKEGCP)
	sh tests/bench/run.sh -smoke

# tests/bench/soak.sh: watch under mixed faults for SOAK_MINUTES; prints figures.
SOAK_MINUTES ?= 10
soak: tpuform $(FAKEGCP)
	sh tests/bench/soak.sh $(SOAK_MINUTES)

# Static checks; all run even when one fails, and any failure fails lint.
# CI (.ci/run) runs it after make check.
lint:
	@$(MAKE) --no-print-directory deps DEB_PKGS="$(DEB_PKGS) $(LINT_DEB_PKGS)"
	sh tests/lint/run.sh

clean:
	rm -f tpuform templates/embedded.c .build-flags .build-info $(UNIT_BINS) $(FAKEGCP) tests/unit/unit.o
	find . -type f \( -name '*.o' -o -name '*.d' \) -delete
	rm -rf tests/out $(FUZZ_DIR) $(FUZZ_REPLAYS) gen

include tests/fuzz/fuzz.mk
include dist/install.mk

-include $(DEPS)
