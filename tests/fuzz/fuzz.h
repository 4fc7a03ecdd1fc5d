/*
 * What every harness of tests/fuzz/ shares. Each fuzz_NAME.c defines
 * LLVMFuzzerTestOneInput (https://llvm.org/docs/LibFuzzer.html) and is
 * linked twice: with clang and libFuzzer into .fuzz-build/fuzz_NAME
 * (`make fuzz`), and with the normal compiler and tests/fuzz/replay.c into
 * tests/fuzz/replay_NAME, which `make check` runs over the seed corpus and
 * the regression inputs.
 *
 * A harness must not keep state between inputs, must free everything it
 * allocates (LeakSanitizer reports any leak as a crash) and must never
 * touch the network or write outside a temporary file of its own.
 */
#ifndef TPF_FUZZ_H
#define TPF_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated copy (what text parsers are given: the
 * transport and the file readers terminate their buffers). Caller frees. */
char *fuzz_cstr(const uint8_t *data, size_t size);

#endif
