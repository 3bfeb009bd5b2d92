/*
 * What every fuzz target shares: the libFuzzer entry point's prototype and
 * ASSERT, an invariant check that stays on in every build and aborts (which
 * libFuzzer reports as a crash, with the input saved).
 */
#ifndef SL_TESTS_FUZZ_H
#define SL_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define ASSERT(c)                                                                   \
	((c) ? (void)0                                                              \
	     : (fprintf(stderr, "invariant failed: %s (%s:%d)\n", #c, __FILE__, __LINE__), \
		abort()))

#endif
