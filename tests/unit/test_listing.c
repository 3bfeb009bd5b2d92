/* Unit tests of the tools/list cursor (src/gateway/listing.c): what one
 * writes reads back for its key and caller only, and the parse is strict
 * (length, separators, lower-case hex, the tag) whatever the input. */
#include "unit.h"

#include "gateway/listing.h"

#include <stdio.h>
#include <string.h>

static const uint8_t KEY[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
static const uint8_t OTHER[32] = { 2 };

static bool reads(const uint8_t *key, const char *caller, const char *text, uint64_t *id,
		  uint32_t *off)
{
	return sl_listing_cursor_read(key, caller, text, strlen(text), id, off);
}

TEST(listing_cursor_round_trip)
{
	char c[SL_LISTING_CURSOR_LEN + 1];
	uint64_t id = 0;
	uint32_t off = 0;

	sl_listing_cursor(KEY, "alice-key", 0x0123456789abcdefull, 37, c);
	CHECK_INT(strlen(c), SL_LISTING_CURSOR_LEN);
	CHECK(reads(KEY, "alice-key", c, &id, &off));
	CHECK(id == 0x0123456789abcdefull);
	CHECK_INT(off, 37);
	sl_listing_cursor(KEY, "", UINT64_MAX, UINT32_MAX, c);
	CHECK(reads(KEY, "", c, &id, &off));
	CHECK(id == UINT64_MAX);
	CHECK(off == UINT32_MAX);
}

TEST(listing_cursor_bound_to_key_and_caller)
{
	char c[SL_LISTING_CURSOR_LEN + 1];
	uint64_t id = 7;
	uint32_t off = 9;

	sl_listing_cursor(KEY, "alice-key", 42, 74, c);
	CHECK(!reads(OTHER, "alice-key", c, &id, &off));
	CHECK(!reads(KEY, "bob-key", c, &id, &off));
	CHECK(!reads(KEY, "", c, &id, &off));
	/* Nothing is set on a refusal. */
	CHECK(id == 7 && off == 9);
}

TEST(listing_cursor_strict)
{
	char c[SL_LISTING_CURSOR_LEN + 1], t[SL_LISTING_CURSOR_LEN + 8];
	uint64_t id;
	uint32_t off;

	sl_listing_cursor(KEY, "k", 42, 74, c);
	/* Every single-character change is refused: the offset or id with the
	 * old tag, a separator, a tag digit, or a digit in upper case. */
	for (size_t i = 0; i < SL_LISTING_CURSOR_LEN; i++) {
		static const char subst[] = "0fA.g \x01";
		for (size_t k = 0; k < sizeof(subst) - 1; k++) {
			if (subst[k] == c[i])
				continue;
			memcpy(t, c, sizeof(c));
			t[i] = subst[k];
			if (reads(KEY, "k", t, &id, &off)) {
				printf("  accepted %s\n", t);
				CHECK(0);
			}
		}
	}
	/* Any other length, a NUL inside, the empty string. */
	snprintf(t, sizeof(t), "%s0", c);
	CHECK(!reads(KEY, "k", t, &id, &off));
	CHECK(!sl_listing_cursor_read(KEY, "k", c, SL_LISTING_CURSOR_LEN - 1, &id, &off));
	memcpy(t, c, sizeof(c));
	t[40] = '\0';
	CHECK(!sl_listing_cursor_read(KEY, "k", t, SL_LISTING_CURSOR_LEN, &id, &off));
	CHECK(!reads(KEY, "k", "", &id, &off));
	CHECK(!reads(KEY, "k", "garbage", &id, &off));
	CHECK(reads(KEY, "k", c, &id, &off));
}
