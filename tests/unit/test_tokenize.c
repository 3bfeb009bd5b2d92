/*
 * Unit tests of src/stages/tokenize.c: each detector on valid and invalid
 * checksums, at boundaries and next to non-ASCII text; the map's
 * stability, restore and bounds.
 */
#include "unit.h"
#include "core/json.h"
#include "pipeline/call.h"
#include "stages/tokenize.h"

#include <stdlib.h>

static struct sl_tokenize *tk;
static yyjson_doc *tk_section;

static void tk_done(void)
{
	sl_stage_tokenize.fini(tk);
	yyjson_doc_free(tk_section);
	tk = NULL;
	tk_section = NULL;
}

static int tk_init(const char *json)
{
	struct sl_err err;
	void *st = NULL;
	int rc;
	tk_done();
	tk_section = yyjson_read(json, strlen(json), 0);
	rc = sl_stage_tokenize.init(NULL, NULL, yyjson_doc_get_root(tk_section), &st, &err);
	tk = st;
	return rc;
}

/* in tokenised in map "k"; the result (static) or "" when nothing changed. */
static const char *tok(const char *in)
{
	static char buf[4096];
	char *out;
	size_t n = sl_tokenize_text(tk, "k", in, strlen(in), &out, NULL);
	if (n == SL_TOKENIZE_FAILED)
		return "FAILED";
	if (n == 0)
		return "";
	snprintf(buf, sizeof(buf), "%s", out);
	free(out);
	return buf;
}

TEST(tokenize_checksums)
{
	CHECK(sl_tokenize_luhn("4111111111111111", 16));
	CHECK(!sl_tokenize_luhn("4111111111111112", 16));
	CHECK(sl_tokenize_iban_ok("GB82WEST12345698765432", 22));
	CHECK(!sl_tokenize_iban_ok("GB82WEST12345698765433", 22));
	CHECK(sl_tokenize_iban_ok("DE89370400440532013000", 22));
	CHECK(!sl_tokenize_iban_ok("DE89", 4));
}

TEST(tokenize_email)
{
	CHECK_INT(tk_init("{\"enabled\":true}"), 0);
	CHECK_STR(tok("mail alice@example.com now"), "mail <EMAIL_1> now");
	CHECK_STR(tok("(bob.smith+x@mail.example.co.uk)."), "(<EMAIL_2>).");
	CHECK_STR(tok("again alice@example.com"), "again <EMAIL_1>");
	CHECK_STR(tok("not an address: a@b, x@localhost, @example.com, a@example.c"), "");
	CHECK_STR(tok("电话alice@example.com。"), "电话<EMAIL_1>。");
	CHECK_STR(tok("alice@example.com1"), "");
	CHECK_STR(tok("Write to alice@example.com. Or carol@example.net..."),
		  "Write to <EMAIL_1>. Or <EMAIL_3>...");
	tk_done();
}

TEST(tokenize_phone)
{
	CHECK_INT(tk_init("{\"enabled\":true,\"kinds\":[\"phone\"]}"), 0);
	CHECK_STR(tok("call +44 20 7946 0958."), "call <PHONE_1>.");
	CHECK_STR(tok("+1 (415) 555-0100"), "<PHONE_2>");
	CHECK_STR(tok("é+33612345678é"), "é<PHONE_3>é");
	CHECK_STR(tok("+123 short, 1+44207946095, +44 20 7946 0958x, +0123456789"), "");
	CHECK_STR(tok("alice@example.com"), ""); /* kind off */
	tk_done();
}

TEST(tokenize_card)
{
	CHECK_INT(tk_init("{\"enabled\":true}"), 0);
	CHECK_STR(tok("card 4111 1111 1111 1111 ok"), "card <CARD_1> ok");
	CHECK_STR(tok("4111-1111-1111-1111"), "<CARD_1>"); /* the same number */
	CHECK_STR(tok("amex 378282246310005"), "amex <CARD_2>");
	CHECK_STR(tok("bad 4111 1111 1111 1112, long 41111111111111110, id A4111111111111111"), "");
	CHECK_STR(tok("order 1234567890123452"), ""); /* Luhn-valid, not a card prefix */
	CHECK_STR(tok("3.4111111111111111"), "");
	tk_done();
}

TEST(tokenize_iban)
{
	CHECK_INT(tk_init("{\"enabled\":true,\"kinds\":[\"iban\"]}"), 0);
	CHECK_STR(tok("to GB82 WEST 1234 5698 7654 32 today"), "to <IBAN_1> today");
	CHECK_STR(tok("DE89370400440532013000"), "<IBAN_2>");
	CHECK_STR(tok("DE89 3704 0044 0532 0130 00 ABCD"), "<IBAN_2> ABCD");
	CHECK_STR(tok("GB82WEST12345698765433 XGB82WEST12345698765432"), "");
	/* 34 characters that pass mod 97, running on into a longer word. */
	CHECK(sl_tokenize_iban_ok("GB35WEST1234569876543212345678901X", 34));
	CHECK_STR(tok("GB35WEST1234569876543212345678901XQ"), "");
	tk_done();
}

TEST(tokenize_national_ids)
{
	CHECK_INT(tk_init("{\"enabled\":true,\"kinds\":[\"ssn\",\"nino\"]}"), 0);
	CHECK_STR(tok("ssn 123-45-6789."), "ssn <SSN_1>.");
	CHECK_STR(tok("000-12-3456 666-12-3456 912-12-3456 123-00-4567 123-45-0000 1123-45-6789"),
		  "");
	CHECK_STR(tok("NINO: QQ 12 34 56 C"), "");      /* Q is never a first letter */
	CHECK_STR(tok("NINO: AB 12 34 56 C"), "NINO: <NINO_1>");
	CHECK_STR(tok("AB123456D,"), "<NINO_2>,");
	CHECK_STR(tok("GB123456A BG123456A AB123456E AB12345C"), "");
	tk_done();
}

TEST(tokenize_custom_patterns)
{
	CHECK_INT(tk_init("{\"enabled\":true,\"kinds\":[],"
			  "\"patterns\":[{\"name\":\"emp_id\",\"regex\":\"EMP-[0-9]{6}\"}]}"),
		  0);
	CHECK_STR(tok("id EMP-123456 and EMP-123456 and EMP-654321"),
		  "id <EMP_ID_1> and <EMP_ID_1> and <EMP_ID_2>");
	/* A pattern overlapping a built-in kind's value: one placeholder for
	 * the union, nothing of either left in clear. */
	CHECK_INT(tk_init("{\"enabled\":true,\"kinds\":[\"email\"],"
			  "\"patterns\":[{\"name\":\"acct\",\"regex\":\"com/[0-9]{4}\"}]}"),
		  0);
	CHECK_STR(tok("to ann@example.com/1234 now"), "to <EMAIL_1> now");
	CHECK(tk_init("{\"enabled\":true,\"patterns\":[{\"name\":\"a b\",\"regex\":\"x\"}]}") < 0);
	CHECK(tk_init("{\"enabled\":true,\"patterns\":[{\"name\":\"ab\",\"regex\":\"(\"}]}") < 0);
	CHECK(tk_init("{\"enabled\":true,\"kinds\":[\"passport\"]}") < 0);
	/* A catastrophic pattern hits the match limit: the text fails. */
	CHECK_INT(tk_init("{\"enabled\":true,\"patterns\":[{\"name\":\"bad\",\"regex\":"
			  "\"(a+)+$\"}]}"), 0);
	{
		char in[200];
		memset(in, 'a', 60);
		strcpy(in + 60, "!");
		CHECK_STR(tok(in), "FAILED");
	}
	tk_done();
}

TEST(tokenize_restore_and_sessions)
{
	char *out;
	size_t n;
	CHECK_INT(tk_init("{\"enabled\":true,\"restoreTo\":[\"crm\",\"mail.send\",\"db.q*\"]}"),
		  0);
	CHECK_STR(tok("a@example.com b@example.com"), "<EMAIL_1> <EMAIL_2>");
	n = sl_tokenize_restore(tk, "k", "to <EMAIL_2>, <EMAIL_9>, <EMAIL_1", 33, &out, NULL);
	CHECK_INT(n, 1);
	CHECK_STR(out, "to b@example.com, <EMAIL_9>, <EMAIL_1");
	free(out);
	/* Another session has its own map: the same value, its own number. */
	n = sl_tokenize_restore(tk, "other", "<EMAIL_1>", 9, &out, NULL);
	CHECK_INT(n, 0);
	n = sl_tokenize_text(tk, "other", "b@example.com", 13, &out, NULL);
	CHECK_STR(out, "<EMAIL_1>");
	free(out);
	CHECK_INT(sl_tokenize_maps(tk), 2);
	CHECK(sl_tokenize_restores_to(tk, "crm", "lookup"));
	CHECK(sl_tokenize_restores_to(tk, "mail", "send"));
	CHECK(!sl_tokenize_restores_to(tk, "mail", "sendall"));
	CHECK(sl_tokenize_restores_to(tk, "db", "query"));
	CHECK(!sl_tokenize_restores_to(tk, "web", "fetch"));
	tk_done();
}

TEST(tokenize_bounds)
{
	char in[64];
	CHECK_INT(tk_init("{\"enabled\":true,\"maxValues\":2,\"maxSessions\":2,"
			  "\"maxValueBytes\":16,\"maxTextBytes\":1024}"), 0);
	CHECK_STR(tok("a@example.com b@example.com c@example.com a@example.com"),
		  "<EMAIL_1> <EMAIL_2> <EMAIL_REDACTED> <EMAIL_1>");
	CHECK_INT(sl_tokenize_count(tk, "k"), 2);
	CHECK_STR(tok("toolongaddress@example.com"), "<EMAIL_REDACTED>");
	{
		char big[2048];
		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		CHECK_STR(tok(big), "FAILED");
	}
	/* A third map evicts the least recently used. */
	for (int i = 0; i < 3; i++) {
		char key[8], *out;
		snprintf(key, sizeof(key), "m%d", i);
		snprintf(in, sizeof(in), "x@example.com");
		CHECK_INT(sl_tokenize_text(tk, key, in, strlen(in), &out, NULL), 1);
		free(out);
	}
	CHECK_INT(sl_tokenize_maps(tk), 2);
	CHECK_INT(sl_tokenize_count(tk, "k"), 0);
	CHECK_INT(sl_tokenize_count(tk, "m2"), 1);
	/* All maps together: a third value evicts the other map. */
	CHECK_INT(tk_init("{\"enabled\":true,\"maxTotalValues\":2}"), 0);
	CHECK_STR(tok("a@example.com"), "<EMAIL_1>");
	{
		char *out;
		CHECK_INT(sl_tokenize_text(tk, "o", "b@example.com c@example.com", 27, &out, NULL), 2);
		CHECK_STR(out, "<EMAIL_1> <EMAIL_2>");
		free(out);
	}
	CHECK_INT(sl_tokenize_maps(tk), 1);
	CHECK_INT(sl_tokenize_count(tk, "o"), 2);
	CHECK_STR(tok("a@example.com"), "<EMAIL_1>"); /* "o" evicted in turn */
	CHECK_INT(sl_tokenize_count(tk, "o"), 0);
	tk_done();
}

TEST(tokenize_disabled_by_default)
{
	CHECK_INT(tk_init("{}"), 0);
	CHECK(tk == NULL);
	CHECK_STR(tok("alice@example.com"), "");
	tk_done();
}

/* Text made to make a scanner go back over itself: every detector's
 * start condition holds at almost every byte. Linear scanning takes
 * milliseconds; a quadratic one would take minutes. */
TEST(tokenize_linear_on_hostile_text)
{
	static const char *const unit[] = { "a@a@", "1 1 ", "+1 1", "<EMAIL_", "AB12 ", "a.b-" };
	size_t len = 4u << 20, k = 0;
	char *in = malloc(len + 1), *out;
	uint64_t t0;
	size_t n;

	CHECK_INT(tk_init("{\"enabled\":true}"), 0);
	for (size_t i = 0; i < len; k++)
		for (const char *p = unit[(k / 4096) % SL_COUNT(unit)]; *p && i < len; p++)
			in[i++] = *p;
	in[len] = '\0';
	t0 = sl_now_ms();
	n = sl_tokenize_text(tk, "k", in, len, &out, NULL);
	CHECK(n != SL_TOKENIZE_FAILED);
	free(out);
	n = sl_tokenize_restore(tk, "k", in, len, &out, NULL);
	CHECK(n != SL_TOKENIZE_FAILED);
	free(out);
	CHECK(sl_now_ms() - t0 < 3000);
	free(in);
	tk_done();
}
