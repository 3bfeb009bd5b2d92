/* Unit tests of src/core/digest.c: the sealed states handed to clients. */
#include "unit.h"

#include "core/digest.h"
#include "core/escape.h"

#include <stdlib.h>
#include <string.h>

static const unsigned char key[32] = { 1, 2, 3 };
static const unsigned char other[32] = { 9 };

TEST(seal_round_trip)
{
	unsigned long long later = sl_seal_now() + 60;
	char *s = sl_seal(key, sizeof(key), later, "sluice-park\n1\n0\ncred\ntool");
	CHECK_INT(sl_seal_check(key, sizeof(key), s, "sluice-park\n1\n0\ncred\ntool"), SL_SEAL_OK);
	/* Anything it stands for changed, another key: forged. */
	CHECK_INT(sl_seal_check(key, sizeof(key), s, "sluice-park\n1\n1\ncred\ntool"), SL_SEAL_FORGED);
	CHECK_INT(sl_seal_check(other, sizeof(other), s, "sluice-park\n1\n0\ncred\ntool"), SL_SEAL_FORGED);
	/* The expiry is under the seal: a later one does not verify. */
	s[0] = s[0] == '9' ? 'a' : (char)(s[0] + 1);
	CHECK_INT(sl_seal_check(key, sizeof(key), s, "sluice-park\n1\n0\ncred\ntool"), SL_SEAL_FORGED);
	free(s);
}

TEST(seal_expired_and_malformed)
{
	char *s = sl_seal(key, sizeof(key), 0, "x");
	CHECK_INT(sl_seal_check(key, sizeof(key), s, "x"), SL_SEAL_EXPIRED);
	free(s);
	CHECK_INT(sl_seal_check(key, sizeof(key), "", "x"), SL_SEAL_FORGED);
	CHECK_INT(sl_seal_check(key, sizeof(key), "12.", "x"), SL_SEAL_FORGED);
	CHECK_INT(sl_seal_check(key, sizeof(key), "zz.00", "x"), SL_SEAL_FORGED);
	/* One spelling of the expiry: upper case or a 0x is another text. */
	{
		unsigned long long ex = (sl_seal_now() + 60) | 0xaa;
		char *good = sl_seal(key, sizeof(key), ex, "x");
		char *upper = sl_printf("%llX.%s", ex, strchr(good, '.') + 1);
		char *hex = sl_printf("0x%s", good);
		CHECK_INT(sl_seal_check(key, sizeof(key), good, "x"), SL_SEAL_OK);
		CHECK_INT(sl_seal_check(key, sizeof(key), upper, "x"), SL_SEAL_FORGED);
		CHECK_INT(sl_seal_check(key, sizeof(key), hex, "x"), SL_SEAL_FORGED);
		CHECK_INT(sl_seal_expiry(upper), 0);
		free(good);
		free(upper);
		free(hex);
	}
}

TEST(seal_tag_binds_what_and_key)
{
	char tag[SL_SEAL_TAG_HEX + 1], mac[SL_SHA256_HEX];

	sl_seal_tag(key, sizeof(key), "sluice-task:a", tag);
	CHECK_INT(strlen(tag), SL_SEAL_TAG_HEX);
	/* The first 128 bits of the HMAC: ids issued before stay valid. */
	sl_hmac_sha256_hex(key, sizeof(key), "sluice-task:a", 13, mac);
	CHECK(strncmp(tag, mac, SL_SEAL_TAG_HEX) == 0);
	CHECK(sl_seal_tag_check(key, sizeof(key), "sluice-task:a", tag, strlen(tag)));
	CHECK(!sl_seal_tag_check(key, sizeof(key), "sluice-task:b", tag, strlen(tag)));
	CHECK(!sl_seal_tag_check(other, sizeof(other), "sluice-task:a", tag, strlen(tag)));
	CHECK(!sl_seal_tag_check(key, sizeof(key), "sluice-task:a", tag, strlen(tag) - 1));
	CHECK(!sl_seal_tag_check(key, sizeof(key), "sluice-task:a", mac, strlen(mac)));
	tag[5] = tag[5] == '0' ? '1' : '0';
	CHECK(!sl_seal_tag_check(key, sizeof(key), "sluice-task:a", tag, strlen(tag)));
}

TEST(seal_private_hides_and_binds)
{
	static const char secret[] = "alice@example.com wrote 42";
	unsigned long long later = sl_seal_now() + 60;
	char *s = sl_seal_private(key, sizeof(key), later, "sluice-code\ncred\ncode", secret,
				  sizeof(secret) - 1);
	char *plain, *again, id[SL_SEAL_ID_HEX + 1], id2[SL_SEAL_ID_HEX + 1];
	size_t n;

	/* Nothing of the content shows, in the text or in its decoded bytes. */
	CHECK(strstr(s, "alice") == NULL);
	{
		const char *dot = strchr(s, '.');
		size_t blen = 0;
		char *blob = dot ? sl_unbase64url(dot + 1, strlen(dot + 1), &blen) : NULL;
		CHECK(blob != NULL && blen == sizeof(secret) - 1 + SL_AEAD_OVERHEAD);
		CHECK(blob && memmem(blob, blen, "alice", 5) == NULL);
		free(blob);
	}
	CHECK_INT(sl_seal_open(key, sizeof(key), s, "sluice-code\ncred\ncode", &plain, &n, id),
		  SL_SEAL_OK);
	CHECK(plain && n == sizeof(secret) - 1 && memcmp(plain, secret, n) == 0);
	CHECK_INT(strlen(id), SL_SEAL_ID_HEX);
	free(plain);
	/* Another caller, key, or a changed byte: forged, and nothing opened. */
	CHECK_INT(sl_seal_open(key, sizeof(key), s, "sluice-code\nother\ncode", &plain, &n, NULL),
		  SL_SEAL_FORGED);
	CHECK(plain == NULL);
	CHECK_INT(sl_seal_open(other, sizeof(other), s, "sluice-code\ncred\ncode", &plain, &n, NULL),
		  SL_SEAL_FORGED);
	s[strlen(s) - 3] = s[strlen(s) - 3] == 'A' ? 'B' : 'A';
	CHECK_INT(sl_seal_open(key, sizeof(key), s, "sluice-code\ncred\ncode", &plain, &n, NULL),
		  SL_SEAL_FORGED);
	CHECK_INT(sl_seal_open(key, sizeof(key), "12", "x", &plain, &n, NULL), SL_SEAL_FORGED);
	CHECK_INT(sl_seal_open(key, sizeof(key), "12.!!", "x", &plain, &n, NULL), SL_SEAL_FORGED);
	free(s);
	/* Two seals of the same content differ (a fresh nonce each), and so
	 * do their ids; an expired one is told apart from a forged one. */
	s = sl_seal_private(key, sizeof(key), later, "w", "x", 1);
	again = sl_seal_private(key, sizeof(key), later, "w", "x", 1);
	CHECK(strcmp(s, again) != 0);
	CHECK_INT(sl_seal_open(key, sizeof(key), s, "w", &plain, &n, id), SL_SEAL_OK);
	free(plain);
	CHECK_INT(sl_seal_open(key, sizeof(key), again, "w", &plain, &n, id2), SL_SEAL_OK);
	free(plain);
	CHECK(strcmp(id, id2) != 0);
	CHECK_INT(sl_seal_expiry(s), later);
	/* The expiry has one spelling: upper case, a 0x, a sign or a space
	 * before it is another text, refused, though sscanf reads the same. */
	{
		unsigned long long ex = later | 0xaa; /* hex letters to spell otherwise */
		char *lettered = sl_seal_private(key, sizeof(key), ex, "w", "x", 1);
		const char *blob = strchr(lettered, '.') + 1;
		char *respell[] = { sl_printf("%llX.%s", ex, blob), sl_printf("0x%llx.%s", ex, blob),
				    sl_printf("+%llx.%s", ex, blob), sl_printf(" %llx.%s", ex, blob) };
		CHECK_INT(sl_seal_open(key, sizeof(key), lettered, "w", &plain, &n, NULL), SL_SEAL_OK);
		free(plain);
		for (size_t i = 0; i < SL_COUNT(respell); i++) {
			CHECK_INT(sl_seal_open(key, sizeof(key), respell[i], "w", &plain, &n, NULL),
				  SL_SEAL_FORGED);
			free(respell[i]);
		}
		free(lettered);
	}
	free(s);
	free(again);
	s = sl_seal_private(key, sizeof(key), 1, "w", "x", 1);
	CHECK_INT(sl_seal_open(key, sizeof(key), s, "w", &plain, &n, NULL), SL_SEAL_EXPIRED);
	CHECK(plain == NULL);
	free(s);
}
