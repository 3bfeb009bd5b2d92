/* Unit tests of src/core/buf.c: the cap, append, consume and take. */
#include "unit.h"

#include "core/buf.h"

#include <stdlib.h>

TEST(buf_append_and_nul_terminated)
{
	struct sl_buf b;
	sl_buf_init(&b, 64);
	CHECK_INT(sl_buf_append(&b, "abc", 3), SL_OK);
	CHECK_INT(sl_buf_appends(&b, "def"), SL_OK);
	CHECK_INT(b.len, 6);
	CHECK_STR(b.data, "abcdef");
	CHECK_INT(b.data[b.len], '\0');
	CHECK_INT(sl_buf_printf(&b, "-%d-", 42), SL_OK);
	CHECK_STR(b.data, "abcdef-42-");
	sl_buf_dispose(&b);
	CHECK(b.data == NULL);
	CHECK_INT(b.len, 0);
}

TEST(buf_cap_exact_fits_one_more_fails)
{
	struct sl_buf b;
	char big[16];
	memset(big, 'x', sizeof(big));
	sl_buf_init(&b, 10);
	CHECK_INT(sl_buf_append(&b, big, 7), SL_OK);
	CHECK_INT(sl_buf_append(&b, big, 3), SL_OK); /* exactly at the cap */
	CHECK_INT(b.len, 10);
	CHECK_INT(sl_buf_append(&b, "y", 1), SL_ERR_TOO_LARGE);
	/* Nothing appended past the cap, contents unchanged. */
	CHECK_INT(b.len, 10);
	CHECK_STR(b.data, "xxxxxxxxxx");
	CHECK_INT(sl_buf_appends(&b, "zz"), SL_ERR_TOO_LARGE);
	CHECK_INT(sl_buf_printf(&b, "%s", "q"), SL_ERR_TOO_LARGE);
	CHECK_INT(b.len, 10);
	CHECK_STR(b.data, "xxxxxxxxxx");
	/* An empty append at the cap is fine. */
	CHECK_INT(sl_buf_append(&b, "", 0), SL_OK);
	CHECK_INT(b.len, 10);
	sl_buf_dispose(&b);
}

TEST(buf_oversize_single_append_leaves_buffer_untouched)
{
	struct sl_buf b;
	static char big[10000];
	memset(big, 'x', sizeof(big));
	sl_buf_init(&b, 50);
	CHECK_INT(sl_buf_appends(&b, "hi"), SL_OK);
	CHECK_INT(sl_buf_append(&b, big, sizeof(big)), SL_ERR_TOO_LARGE);
	CHECK_INT(b.len, 2);
	CHECK_STR(b.data, "hi");
	/* The buffer did not grow to hold the refused bytes. */
	CHECK(b.alloc < sizeof(big));
	sl_buf_dispose(&b);
}

TEST(buf_zero_cap_refuses_everything)
{
	struct sl_buf b;
	sl_buf_init(&b, 0);
	CHECK_INT(sl_buf_append(&b, "a", 1), SL_ERR_TOO_LARGE);
	CHECK_INT(b.len, 0);
	sl_buf_dispose(&b);
}

TEST(buf_consume)
{
	struct sl_buf b;
	sl_buf_init(&b, 100);
	CHECK_INT(sl_buf_appends(&b, "hello world"), SL_OK);
	sl_buf_consume(&b, 6);
	CHECK_INT(b.len, 5);
	CHECK_STR(b.data, "world");
	sl_buf_consume(&b, 0);
	CHECK_STR(b.data, "world");
	sl_buf_consume(&b, 100); /* more than there is: empties */
	CHECK_INT(b.len, 0);
	CHECK_STR(b.data, "");
	sl_buf_dispose(&b);
	/* Consuming frees room under the cap again. */
	sl_buf_init(&b, 4);
	CHECK_INT(sl_buf_appends(&b, "abcd"), SL_OK);
	CHECK_INT(sl_buf_appends(&b, "e"), SL_ERR_TOO_LARGE);
	sl_buf_consume(&b, 2);
	CHECK_INT(sl_buf_appends(&b, "ef"), SL_OK);
	CHECK_STR(b.data, "cdef");
	sl_buf_dispose(&b);
}

TEST(buf_consume_and_reset_on_empty)
{
	struct sl_buf b;
	sl_buf_init(&b, 8);
	sl_buf_consume(&b, 3); /* never allocated: must not crash */
	sl_buf_reset(&b);
	CHECK_INT(b.len, 0);
	sl_buf_dispose(&b);
}

TEST(buf_take)
{
	struct sl_buf b;
	size_t len = 99;
	char *s;
	sl_buf_init(&b, 100);
	CHECK_INT(sl_buf_appends(&b, "payload"), SL_OK);
	s = sl_buf_take(&b, &len);
	CHECK_INT(len, 7);
	CHECK_STR(s, "payload");
	CHECK(b.data == NULL);
	CHECK_INT(b.len, 0);
	CHECK_INT(b.max, 100); /* still usable with the same cap */
	CHECK_INT(sl_buf_appends(&b, "again"), SL_OK);
	CHECK_STR(b.data, "again");
	free(s);
	sl_buf_dispose(&b);

	/* Taking from a never-used buffer gives an empty string, not NULL. */
	sl_buf_init(&b, 10);
	s = sl_buf_take(&b, &len);
	CHECK(s != NULL);
	CHECK_INT(len, 0);
	CHECK_STR(s, "");
	free(s);
	sl_buf_dispose(&b);
}

TEST(buf_reset_keeps_cap)
{
	struct sl_buf b;
	sl_buf_init(&b, 3);
	CHECK_INT(sl_buf_appends(&b, "abc"), SL_OK);
	sl_buf_reset(&b);
	CHECK_INT(b.len, 0);
	CHECK_STR(b.data, "");
	CHECK_INT(sl_buf_appends(&b, "xyz"), SL_OK);
	CHECK_INT(sl_buf_appends(&b, "w"), SL_ERR_TOO_LARGE);
	sl_buf_dispose(&b);
}

TEST(blob_lives_until_its_last_reference)
{
	char *data = malloc(4);
	struct sl_blob *k;

	memcpy(data, "abc", 4);
	k = sl_blob_new(data, 3);
	CHECK_INT(k->refs, 1);
	CHECK(sl_blob_ref(k) == k);
	CHECK_INT(k->refs, 2);
	/* The store drops its reference: a write still holds the bytes
	 * (ASan would report a read of freed memory). */
	sl_blob_unref(k);
	CHECK_INT(k->refs, 1);
	CHECK_STR(k->data, "abc");
	sl_blob_unref(k); /* the last: freed (LeakSanitizer would say otherwise) */
	sl_blob_unref(NULL);
}
