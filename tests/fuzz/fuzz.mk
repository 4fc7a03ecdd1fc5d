# Fuzzing (tests/fuzz/README.md), included by the Makefile.
#
#   make fuzz-build               the libFuzzer harnesses, .fuzz-build/fuzz_NAME
#   make fuzz FUZZ_SECONDS=N      build, then run each harness N seconds (60)
#                                 FUZZ_JOBS=2 runs two at a time; FUZZ=NAME one
#   tests/fuzz/replay_NAME        the same harness with the normal compiler and
#                                 a main() that replays files: `make check`
#                                 builds and runs them (tests/run.sh)
#
# Every tests/fuzz/fuzz_NAME.c is a harness; a new one needs no edit here.
# The library is compiled a second time, with clang, into .fuzz-build/, so
# the normal build (gcc, SANITIZE=...) is never disturbed.

FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_JOBS    ?= 1
FUZZ_DIR     := .fuzz-build
FUZZ_DEB_PKGS := clang libclang-rt-14-dev
# The warning, language and define flags of the normal build, so the code
# stays clean under both compilers; optimisation and sanitizers our own.
FUZZ_CFLAGS  := -O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=all \
                -fsanitize=fuzzer-no-link,address,undefined \
                $(filter -W% -std=% -D% -I% -pthread -fno-common,$(CFLAGS))
FUZZ_LDFLAGS := -fsanitize=fuzzer,address,undefined -pthread

FUZZ_SRCS    := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES   := $(patsubst tests/fuzz/fuzz_%.c,%,$(FUZZ_SRCS))
FUZZ_BINS    := $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_NAMES))
FUZZ_REPLAYS := $(addprefix tests/fuzz/replay_,$(FUZZ_NAMES))
FUZZ_LIB_OBJS := $(addprefix $(FUZZ_DIR)/,$(LIB_OBJS))

.PHONY: fuzz fuzz-build fuzz-deps fuzz-replay
# Harness objects are made by pattern chains: keep them (no rebuild each run).
.SECONDARY: $(FUZZ_SRCS:.c=.o) $(addprefix $(FUZZ_DIR)/,$(FUZZ_SRCS:.c=.o))

$(FUZZ_DIR)/.flags: FORCE
	@mkdir -p $(FUZZ_DIR)
	@echo '$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_LDFLAGS)' | cmp -s - $@ || \
	  echo '$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_LDFLAGS)' > $@

$(FUZZ_DIR)/%.o: %.c $(FUZZ_DIR)/.flags
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(PKG_CFLAGS) -MMD -MP -c -o $@ $<

$(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/tests/fuzz/fuzz_%.o $(FUZZ_DIR)/tests/fuzz/common.o $(FUZZ_LIB_OBJS)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $^ $(PKG_LIBS)

tests/fuzz/replay_%: tests/fuzz/fuzz_%.o tests/fuzz/common.o tests/fuzz/replay.o $(LIB_OBJS)
	$(CC) $(LDFLAGS) -o $@ $< tests/fuzz/common.o tests/fuzz/replay.o $(LIB_OBJS) $(PKG_LIBS)

# clang and its libFuzzer runtime: installed as root, else the command to run.
fuzz-deps:
	@$(MAKE) --no-print-directory deps DEB_PKGS="$(FUZZ_DEB_PKGS)"

fuzz-build: fuzz-deps
	$(MAKE) $(FUZZ_BINS)

fuzz: fuzz-build
	FUZZ_JOBS=$(FUZZ_JOBS) sh tests/fuzz/run.sh $(FUZZ_SECONDS) $(or $(FUZZ),$(FUZZ_NAMES))

fuzz-replay: $(FUZZ_REPLAYS)

-include $(wildcard $(FUZZ_DIR)/*/*.d $(FUZZ_DIR)/*/*/*.d $(FUZZ_DIR)/*/*/*/*.d) \
         $(wildcard tests/fuzz/*.d)
