/*
 * Fuzz target: the sealed states a client hands back (src/core/digest.c,
 * sl_seal_check): a 2026-07-28 requestState of a parked call or of a policy
 * confirmation, a pinning question's state and a 2026 task handle all end
 * in "EXPIRY.MAC" and are checked here. The input is the state, a NUL, then
 * the sealed text it is checked against.
 *
 * The same input goes to sl_seal_open, the private form (a program's
 * requestState: "EXPIRY.BLOB", AES-256-GCM).
 *
 * Invariants checked:
 *   - a state that verifies (ok or expired) is exactly what sl_seal makes
 *     for its expiry and that text: nothing else is accepted;
 *   - what sl_seal makes for the input's text verifies, and the same state
 *     with any one character changed, or checked against other text, does
 *     not;
 *   - no input opens as a private seal (that takes the key), and nothing
 *     is handed out from one that does not open;
 *   - what sl_seal_private makes of the input opens to it, under its text
 *     only, and not with one character of its expiry or blob changed.
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

	{
		char *plain = (char *)1, *priv;
		size_t pn = 1, len = strlen(in);

		ASSERT(sl_seal_open(key, sizeof(key), in, what, &plain, &pn, NULL) == SL_SEAL_FORGED);
		ASSERT(plain == NULL && pn == 0);
		priv = sl_seal_private(key, sizeof(key), 0xffffffffffull, what, in, len);
		ASSERT(sl_seal_open(key, sizeof(key), priv, what, &plain, &pn, NULL) == SL_SEAL_OK);
		ASSERT(pn == len && memcmp(plain, in, len) == 0);
		free(plain);
		ASSERT(sl_seal_open(key, sizeof(key), priv, "another text", &plain, &pn, NULL) ==
		       SL_SEAL_FORGED || strcmp(what, "another text") == 0);
		free(plain);
		/* Not the last character: its low bits may be padding that
		 * decodes to the same bytes. */
		n = strlen(priv);
		priv[size % (n - 1)] ^= 1;
		ASSERT(sl_seal_open(key, sizeof(key), priv, what, &plain, &pn, NULL) == SL_SEAL_FORGED);
		ASSERT(plain == NULL);
		free(priv);
	}
	free(in);
	return 0;
}
