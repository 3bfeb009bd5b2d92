/* Unit tests of src/core/digest.c: the sealed states handed to clients. */
#include "unit.h"

#include "core/digest.h"

#include <stdlib.h>

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
