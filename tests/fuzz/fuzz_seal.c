/*
 * Fuzz target: the sealed states a client hands back (src/core/digest.c,
 * sl_seal_check): a 2026-07-28 requestState of a parked call or of a policy
 * confirmation, a pinning question's state and a 2026 task handle all end
 * in "EXPIRY.MAC" and are checked here. The input is the state, a NUL, then
 * the sealed text it is checked against.
 *
 * Invariants checked:
 *   - a state that verifies (ok or expired) is exactly what sl_seal makes
 *     for its expiry and that text: nothing else is accepted;
 *   - what sl_seal makes for the input's text verifies, and the same state
 *     with any one character changed, or checked against other text, does
 *     not.
 *
 * fuzz-flags: -max_len=512
 */
#include "fuzz.h"

#include "core/digest.h"

#include <string.h>

static const unsigned char key[32] = "sluice fuzz key, 32 bytes long!";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = malloc(size + 2), *what, *sealed;
	unsigned long long expiry = 0;
	enum sl_seal_check chk;
	size_t n;

	memcpy(in, data, size);
	in[size] = in[size + 1] = '\0';
	what = in + strlen(in) + (strlen(in) < size ? 1 : 0);

	chk = sl_seal_check(key, sizeof(key), in, what);
	if (chk != SL_SEAL_FORGED) {
		ASSERT(sscanf(in, "%llx.", &expiry) == 1);
		sealed = sl_seal(key, sizeof(key), expiry, what);
		ASSERT(strcmp(sealed, in) == 0);
		free(sealed);
	}

	sealed = sl_seal(key, sizeof(key), 0xffffffffffull, what);
	ASSERT(sl_seal_check(key, sizeof(key), sealed, what) == SL_SEAL_OK);
	n = strlen(sealed);
	sealed[size % n] ^= 1;
	ASSERT(sl_seal_check(key, sizeof(key), sealed, what) == SL_SEAL_FORGED);
	sealed[size % n] ^= 1;
	ASSERT(sl_seal_check(key, sizeof(key), sealed, "another text") == SL_SEAL_FORGED ||
	       strcmp(what, "another text") == 0);
	free(sealed);
	free(in);
	return 0;
}
