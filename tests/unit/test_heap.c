/* Unit tests of src/sandbox/heap.c: every block keeps its bytes through any
 * sequence of allocations, frees and reallocations, usable sizes hold what
 * was asked, calloc zeroes reused blocks, and a forked child's own copy of
 * the chunks (sl_heap_own) holds what the parent wrote and serves the
 * child's own allocations, and the block last cut grows in place and goes
 * back to the chunk when freed. In sanitizer builds the functions are
 * malloc's, and the same checks hold. */
#include "unit.h"

#include "sandbox/heap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define SLOTS 512

struct slot {
	unsigned char *p;
	size_t n;
	unsigned char fill;
};

/* xorshift: the same sequence on every run. */
static uint32_t next(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static size_t size_of(uint32_t r)
{
	switch (r % 8) {
	case 0: return r % 17;                  /* 0..16 */
	case 1: case 2: return 16 + r % 512;    /* an engine arena's objects */
	case 3: case 4: return 4096;            /* an arena page */
	case 5: return 512 + r % 65536;
	case 6: return 65536 + r % (256u << 10);
	default: return (r % 64) ? 100 + r % 3000 : (2u << 20) + r % (3u << 20); /* now and then, own mapping */
	}
}

static bool intact(const struct slot *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->p[i] != s->fill)
			return false;
	return true;
}

TEST(heap_blocks_keep_their_bytes)
{
	const JSMallocFunctions *f = sl_heap_functions();
	struct sl_heap *h = sl_heap_new();
	static struct slot slot[SLOTS];
	uint32_t r = 0x9e3779b9u;
	bool ok = true;

	for (int step = 0; step < 8000 && ok; step++) {
		struct slot *s = &slot[next(&r) % SLOTS];
		uint32_t op = next(&r) % 4;
		if (s->p && !(ok = intact(s)))
			break;
		if (op == 0 && s->p) {
			f->js_free(h, s->p);
			s->p = NULL;
			continue;
		}
		size_t n = size_of(next(&r));
		unsigned char *p;
		if (op == 1 && s->p) {
			p = f->js_realloc(h, s->p, n ? n : 1);
			/* What fits of the old bytes is kept. */
			if (p)
				for (size_t i = 0; i < (n < s->n ? n : s->n) && ok; i++)
					ok = p[i] == s->fill;
		} else {
			if (s->p)
				f->js_free(h, s->p);
			p = op == 2 ? f->js_calloc(h, 1, n ? n : 1) : f->js_malloc(h, n ? n : 1);
			if (p && op == 2)
				for (size_t i = 0; i < n && ok; i++)
					ok = p[i] == 0;
		}
		CHECK(p != NULL);
		if (!p) {
			s->p = NULL;
			continue;
		}
		CHECK(((uintptr_t)p & 15) == 0);
		CHECK(f->js_malloc_usable_size(p) >= (n ? n : 1));
		s->p = p;
		s->n = n;
		s->fill = (unsigned char)(step | 1);
		memset(p, s->fill, n);
	}
	CHECK(ok);
	for (int i = 0; i < SLOTS; i++) {
		if (slot[i].p)
			CHECK(intact(&slot[i]));
		f->js_free(h, slot[i].p);
		slot[i].p = NULL;
	}
	CHECK_INT(f->js_malloc_usable_size(NULL), 0);
	sl_heap_free(h);
}

TEST(heap_huge_requests_fail_cleanly)
{
#if defined(__SANITIZE_ADDRESS__)
	/* malloc's, where ASan reports such a request as an error. */
	printf("  (malloc's heap under ASan: skipped)\n");
#else
	const JSMallocFunctions *f = sl_heap_functions();
	struct sl_heap *h = sl_heap_new();

	CHECK(f->js_malloc(h, SIZE_MAX - 8) == NULL);
	CHECK(f->js_calloc(h, SIZE_MAX / 2, 4) == NULL);
	sl_heap_free(h);
#endif
}

/* At the address-space limit no chunk can be mapped: a freed larger block
 * is split for smaller ones, and the blocks in use keep their bytes. */
TEST(heap_at_the_address_limit_splits_free_blocks)
{
#if defined(__SANITIZE_ADDRESS__)
	printf("  (malloc's heap under ASan, which cannot run under an address limit: skipped)\n");
#else
	const JSMallocFunctions *f = sl_heap_functions();
	int status = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct sl_heap *h = sl_heap_new();
		enum { MAX = 256, BIG = 1000000 };
		unsigned char *big[MAX], *small[64];
		int n = 0;
		struct rlimit r;
		FILE *st = fopen("/proc/self/statm", "r");
		unsigned long pages = 0;
		if (!st || fscanf(st, "%lu", &pages) != 1)
			_exit(1);
		fclose(st);
		r.rlim_cur = r.rlim_max = pages * 4096 + (48ul << 20);
		if (setrlimit(RLIMIT_AS, &r) != 0)
			_exit(2);
		while (n < MAX && (big[n] = f->js_malloc(h, BIG)))
			memset(big[n], n + 1, BIG), n++;
		if (n < 4 || n == MAX)
			_exit(3); /* the limit was not reached, or nothing fit */
		f->js_free(h, big[1]);
		for (int i = 0; i < 64; i++) {
			if (!(small[i] = f->js_malloc(h, 8000)))
				_exit(4);
			memset(small[i], 0xee, 8000);
		}
		for (int i = 0; i < n; i++)
			for (size_t k = 0; i != 1 && k < BIG; k += 4096)
				if (big[i][k] != (unsigned char)(i + 1))
					_exit(5);
		/* Nothing left to split: a failure, not a crash. */
		for (int i = 0; i < 4096; i++)
			if (!f->js_malloc(h, 100000))
				_exit(0);
		_exit(6);
	}
	CHECK(pid > 0);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status));
	CHECK_INT(WEXITSTATUS(status), 0);
#endif
}

TEST(heap_a_child_owns_its_copy)
{
	const JSMallocFunctions *f = sl_heap_functions();
	struct sl_heap *h = sl_heap_new();
	/* Enough blocks to fill more than one chunk, so every part of every
	 * chunk in use is checked in the child. */
	enum { N = 160, SIZE = 40000 };
	static unsigned char *b[N];
	int status = 0;
	pid_t pid;

	for (int i = 0; i < N; i++) {
		b[i] = f->js_malloc(h, SIZE);
		CHECK(b[i] != NULL);
		if (!b[i])
			return;
		memset(b[i], i + 1, SIZE);
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int rc = sl_heap_own(h) ? 0 : 1;
		for (int i = 0; i < N && !rc; i++)
			for (size_t k = 0; k < SIZE && !rc; k++)
				if (b[i][k] != (unsigned char)(i + 1))
					rc = 2;
		/* The child allocates and frees in its copy as in its own heap. */
		f->js_free(h, b[0]);
		if (!rc && !(b[0] = f->js_malloc(h, 100)))
			rc = 3;
		if (!rc)
			memset(b[0], 0, 100);
		_exit(rc);
	}
	CHECK(pid > 0);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status));
	CHECK_INT(WEXITSTATUS(status), 0);
	CHECK(b[0][0] == 1 && b[N - 1][SIZE - 1] == N);
	for (int i = 0; i < N; i++)
		f->js_free(h, b[i]);
	sl_heap_free(h);
}

/* An array grown a little at a time, with nothing allocated after it,
 * grows where it is and leaves no outgrown blocks behind; the block last
 * cut, freed, is cut again by the next request of any size. What the
 * zygote's stripper left as 1.2 MB of free blocks when it loaded. */
TEST(heap_a_growing_block_grows_in_place)
{
#if defined(__SANITIZE_ADDRESS__)
	printf("  (malloc's heap under ASan: skipped)\n");
#else
	const JSMallocFunctions *f = sl_heap_functions();
	struct sl_heap *h = sl_heap_new();
	unsigned char *a, *p, *q;
	size_t n = 1000;

	CHECK(h != NULL);
	if (!h)
		return;
	a = f->js_malloc(h, n);
	CHECK(a != NULL);
	memset(a, 7, n);
	while (n < 600000) {
		size_t m = n + n / 2;
		p = f->js_realloc(h, a, m);
		CHECK(p == a);
		if (p != a)
			break;
		for (size_t i = 0; i < n; i += 997)
			CHECK(p[i] == 7);
		memset(p + n, 7, m - n);
		n = m;
	}
	CHECK(f->js_malloc_usable_size(a) >= n);
	/* Something cut after it: it can no longer grow in place, and moves
	 * with its bytes. */
	q = f->js_malloc(h, 100);
	p = f->js_realloc(h, a, n * 2);
	CHECK(p != NULL && p != a);
	if (p)
		CHECK(p[0] == 7 && p[n - 1] == 7);
	/* p is now the block last cut: freed, its place serves a block of
	 * another size, which a free list would not. */
	f->js_free(h, p);
	a = f->js_malloc(h, 50000);
	CHECK(a == p);
	f->js_free(h, a);
	f->js_free(h, q);
	sl_heap_free(h);
#endif
}
