/* Unit tests of src/proto/lines.c: framing across chunk boundaries, the cap,
 * oversize lines with bounded memory. */
#include "unit.h"

#include "proto/lines.h"

#include <stdio.h>
#include <stdlib.h>

#define MAX_EVENTS 64

/* Everything the framer reported, in order. */
struct seen {
	int n;
	char *ev[MAX_EVENTS];        /* "L:<line>" or "O:<total>" */
	char head[MAX_EVENTS][SL_LINES_EDGE + 1];
	char tail[MAX_EVENTS][SL_LINES_EDGE + 1];
	size_t head_len[MAX_EVENTS], tail_len[MAX_EVENTS], total[MAX_EVENTS];
	int stop_after;              /* return nonzero after this many events */
};

static int on_line(void *ctx, const char *line, size_t len)
{
	struct seen *s = ctx;
	char *e = malloc(len + 3);
	memcpy(e, "L:", 2);
	memcpy(e + 2, line, len);
	e[len + 2] = '\0';
	if (s->n < MAX_EVENTS)
		s->ev[s->n++] = e;
	else
		free(e);
	return s->stop_after && s->n >= s->stop_after;
}

static int on_oversize(void *ctx, const char *head, size_t head_len, const char *tail,
		       size_t tail_len, size_t total)
{
	struct seen *s = ctx;
	int i = s->n;
	if (i >= MAX_EVENTS)
		return 0;
	s->ev[i] = malloc(32);
	snprintf(s->ev[i], 32, "O:%zu", total);
	s->head_len[i] = head_len;
	s->tail_len[i] = tail_len;
	s->total[i] = total;
	if (head_len <= SL_LINES_EDGE)
		memcpy(s->head[i], head, head_len);
	if (tail_len <= SL_LINES_EDGE)
		memcpy(s->tail[i], tail, tail_len);
	s->n++;
	return s->stop_after && s->n >= s->stop_after;
}

static const struct sl_lines_ops ops = { on_line, on_oversize };

static void seen_free(struct seen *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->ev[i]);
	s->n = 0;
}

/* Feeds s in chunks of `chunk` bytes (0: all at once). */
static void feed(struct seen *out, size_t max, const char *s, size_t n, size_t chunk)
{
	struct sl_lines l;
	memset(out, 0, sizeof(*out));
	sl_lines_init(&l, max, &ops, out);
	if (!chunk)
		chunk = n ? n : 1;
	for (size_t i = 0; i < n; i += chunk)
		CHECK_INT(sl_lines_feed(&l, s + i, n - i < chunk ? n - i : chunk), 0);
	sl_lines_dispose(&l);
}

static bool same(const struct seen *a, const struct seen *b)
{
	if (a->n != b->n)
		return false;
	for (int i = 0; i < a->n; i++) {
		if (strcmp(a->ev[i], b->ev[i]) != 0)
			return false;
		if (a->ev[i][0] == 'O' &&
		    (a->head_len[i] != b->head_len[i] || a->tail_len[i] != b->tail_len[i] ||
		     memcmp(a->head[i], b->head[i], a->head_len[i]) != 0 ||
		     memcmp(a->tail[i], b->tail[i], a->tail_len[i]) != 0))
			return false;
	}
	return true;
}

TEST(lines_split_chunks)
{
	const char *in = "{\"a\":1}\nsecond line\r\n\nthird\n";
	struct seen whole, each, c3;
	size_t n = strlen(in);

	feed(&whole, 1024, in, n, 0);
	CHECK_INT(whole.n, 4);
	CHECK_STR(whole.ev[0], "L:{\"a\":1}");
	CHECK_STR(whole.ev[1], "L:second line");
	CHECK_STR(whole.ev[2], "L:");
	CHECK_STR(whole.ev[3], "L:third");

	feed(&each, 1024, in, n, 1);
	CHECK(same(&whole, &each));
	feed(&c3, 1024, in, n, 3);
	CHECK(same(&whole, &c3));
	seen_free(&whole);
	seen_free(&each);
	seen_free(&c3);
}

TEST(lines_every_chunk_size_same_result)
{
	const char *in = "alpha\r\nbeta\n\r\ngamma delta\n\n\nz\n";
	struct seen ref, got;
	size_t n = strlen(in);
	int bad = 0;
	feed(&ref, 64, in, n, 0);
	CHECK_INT(ref.n, 7);
	for (size_t c = 1; c <= n; c++) {
		feed(&got, 64, in, n, c);
		if (!same(&ref, &got))
			bad++;
		seen_free(&got);
	}
	CHECK_INT(bad, 0);
	seen_free(&ref);
}

TEST(lines_crlf_and_empty)
{
	struct seen s;
	const char *in = "\r\n\n a \r\nx\r\r\n";
	feed(&s, 100, in, strlen(in), 0);
	CHECK_INT(s.n, 4);
	CHECK_STR(s.ev[0], "L:");
	CHECK_STR(s.ev[1], "L:");
	CHECK_STR(s.ev[2], "L: a ");
	CHECK_STR(s.ev[3], "L:x\r"); /* only the one '\r' before '\n' goes */
	seen_free(&s);
}

TEST(lines_partial_line_not_reported)
{
	struct seen s;
	feed(&s, 100, "abc\ndef", 7, 0);
	CHECK_INT(s.n, 1);
	CHECK_STR(s.ev[0], "L:abc");
	seen_free(&s);
}

static char *repeat(char ch, size_t n, const char *suffix)
{
	size_t sl = strlen(suffix);
	char *s = malloc(n + sl + 1);
	memset(s, ch, n);
	memcpy(s + n, suffix, sl + 1);
	return s;
}

TEST(lines_exactly_at_cap_vs_one_over)
{
	const size_t max = 300;
	char *at = repeat('a', max, "\nok\n");
	char *over = repeat('b', max + 1, "\nok\n");
	struct seen s;

	for (size_t chunk = 0; chunk <= 7; chunk += 7) {
		feed(&s, max, at, strlen(at), chunk);
		CHECK_INT(s.n, 2);
		CHECK(s.n >= 1 && s.ev[0][0] == 'L' && strlen(s.ev[0]) == max + 2);
		CHECK(s.n >= 2 && strcmp(s.ev[1], "L:ok") == 0);
		seen_free(&s);

		feed(&s, max, over, strlen(over), chunk);
		CHECK_INT(s.n, 2);
		CHECK(s.n >= 1 && strcmp(s.ev[0], "O:301") == 0);
		CHECK(s.n >= 2 && strcmp(s.ev[1], "L:ok") == 0);
		seen_free(&s);
	}
	/* One byte at a time too. */
	feed(&s, max, at, strlen(at), 1);
	CHECK_INT(s.n, 2);
	CHECK(s.n >= 1 && s.ev[0][0] == 'L' && strlen(s.ev[0]) == max + 2);
	seen_free(&s);
	feed(&s, max, over, strlen(over), 1);
	CHECK_INT(s.n, 2);
	CHECK(s.n >= 1 && strcmp(s.ev[0], "O:301") == 0);
	seen_free(&s);
	free(at);
	free(over);
}

/* A line of `total` bytes whose byte i is "0123456789..."[i % 62]. */
static char pattern(size_t i)
{
	static const char a[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	return a[i % 62];
}

TEST(lines_oversize_spanning_many_chunks)
{
	const size_t max = 1000, total = 50000, chunk = 333;
	struct sl_lines l;
	struct seen s;
	char buf[400];
	size_t sent = 0;
	bool ok = true;

	memset(&s, 0, sizeof(s));
	sl_lines_init(&l, max, &ops, &s);
	CHECK_INT(sl_lines_feed(&l, "before\n", 7), 0);
	while (sent < total) {
		size_t n = total - sent < chunk ? total - sent : chunk;
		for (size_t i = 0; i < n; i++)
			buf[i] = pattern(sent + i);
		CHECK_INT(sl_lines_feed(&l, buf, n), 0);
		sent += n;
		/* Memory stays bounded while the line streams by. */
		if (l.buf.alloc > 2 * max + 2)
			ok = false;
	}
	CHECK(ok);
	CHECK_INT(s.n, 1); /* not reported before it ends */
	CHECK_INT(sl_lines_feed(&l, "\nafter\r\nmore\n", 13), 0);
	CHECK(l.buf.alloc <= 2 * max + 2);

	CHECK_INT(s.n, 4);
	CHECK_STR(s.ev[0], "L:before");
	CHECK_STR(s.ev[1], "O:50000");
	CHECK_INT(s.total[1], total);
	CHECK_INT(s.head_len[1], SL_LINES_EDGE);
	CHECK_INT(s.tail_len[1], SL_LINES_EDGE);
	for (size_t i = 0; i < SL_LINES_EDGE; i++) {
		if (s.head[1][i] != pattern(i))
			ok = false;
		if (s.tail[1][i] != pattern(total - SL_LINES_EDGE + i))
			ok = false;
	}
	CHECK(ok);
	CHECK_STR(s.ev[2], "L:after");
	CHECK_STR(s.ev[3], "L:more");
	sl_lines_dispose(&l);
	seen_free(&s);
}

TEST(lines_oversize_same_for_any_chunking)
{
	const size_t max = 200, total = 1234;
	char *in = malloc(total + 16);
	struct seen ref, got;
	size_t chunks[] = { 1, 2, 7, 160, 161, 199, 200, 201, 500 };
	int bad = 0;

	for (size_t i = 0; i < total; i++)
		in[i] = pattern(i);
	memcpy(in + total, "\nnext\n", 7);
	feed(&ref, max, in, total + 6, 0);
	CHECK_INT(ref.n, 2);
	CHECK(ref.n >= 1 && ref.total[0] == total);
	CHECK(ref.head_len[0] == SL_LINES_EDGE && memcmp(ref.head[0], in, SL_LINES_EDGE) == 0);
	CHECK(ref.tail_len[0] == SL_LINES_EDGE &&
	      memcmp(ref.tail[0], in + total - SL_LINES_EDGE, SL_LINES_EDGE) == 0);
	for (size_t c = 0; c < SL_COUNT(chunks); c++) {
		feed(&got, max, in, total + 6, chunks[c]);
		if (!same(&ref, &got)) {
			printf("  chunk %zu differs\n", chunks[c]);
			bad++;
		}
		seen_free(&got);
	}
	CHECK_INT(bad, 0);
	seen_free(&ref);
	free(in);
}

TEST(lines_oversize_short_edges)
{
	/* A cap under the edge size: the whole line fits in head and tail. */
	struct seen s;
	const char *in = "0123456789ABCDEF\nok\n";
	feed(&s, 10, in, strlen(in), 0);
	CHECK_INT(s.n, 2);
	CHECK(s.n >= 1 && s.total[0] == 16);
	CHECK(s.head_len[0] == 16 && memcmp(s.head[0], "0123456789ABCDEF", 16) == 0);
	CHECK(s.tail_len[0] == 16 && memcmp(s.tail[0], "0123456789ABCDEF", 16) == 0);
	seen_free(&s);
	feed(&s, 10, in, strlen(in), 1);
	CHECK_INT(s.n, 2);
	CHECK(s.n >= 1 && s.total[0] == 16);
	CHECK(s.head_len[0] == 16 && memcmp(s.head[0], "0123456789ABCDEF", 16) == 0);
	CHECK(s.tail_len[0] == 16 && memcmp(s.tail[0], "0123456789ABCDEF", 16) == 0);
	CHECK(s.n >= 2 && strcmp(s.ev[1], "L:ok") == 0);
	seen_free(&s);
}

TEST(lines_two_oversize_in_a_row)
{
	const size_t max = 50;
	char *a = repeat('a', 120, "\n");
	char *b = repeat('b', 80, "\nfine\n");
	struct sl_lines l;
	struct seen s;
	memset(&s, 0, sizeof(s));
	sl_lines_init(&l, max, &ops, &s);
	CHECK_INT(sl_lines_feed(&l, a, strlen(a)), 0);
	CHECK_INT(sl_lines_feed(&l, b, strlen(b)), 0);
	CHECK_INT(s.n, 3);
	CHECK(s.n >= 1 && strcmp(s.ev[0], "O:120") == 0);
	CHECK(s.n >= 2 && strcmp(s.ev[1], "O:80") == 0);
	CHECK(s.n >= 2 && s.head_len[1] == 80 && s.head[1][0] == 'b' && s.tail[1][0] == 'b');
	CHECK(s.n >= 3 && strcmp(s.ev[2], "L:fine") == 0);
	sl_lines_dispose(&l);
	seen_free(&s);
	free(a);
	free(b);
}

TEST(lines_callback_stop)
{
	struct sl_lines l;
	struct seen s;
	memset(&s, 0, sizeof(s));
	s.stop_after = 2;
	sl_lines_init(&l, 100, &ops, &s);
	CHECK(sl_lines_feed(&l, "one\ntwo\nthree\n", 14) != 0);
	CHECK_INT(s.n, 2);
	CHECK_STR(s.ev[1], "L:two");
	sl_lines_dispose(&l);
	seen_free(&s);
}
