/* The engines' heap in the sandbox; see heap.h. */
#include "sandbox/heap.h"

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE       (2ul << 20)
#define CHUNK      (4ul << 20)
#define PAGE       4096ul
#define HEAD       16ul          /* a block's header: its class, or its mapping's length */
/* Block sizes, header included: 16, 32, 48, 64, then four steps to each
 * doubling (80, 96, 112, 128, 160, ...) up to 2 MiB, half a chunk. A block
 * is at most a quarter larger than asked, so the engine's memory limit,
 * which counts these sizes, is not reached much sooner than with malloc. */
#define NCLASS     64
#define OWN        ((size_t)-1)  /* the class of a block mapped on its own */
/* 4 GiB of chunks, beyond any engine's memory limit. */
#define MAX_CHUNKS 1024

/* As quickjs.c decides to keep no arenas of its own. */
#if defined(__SANITIZE_ADDRESS__)
#define SL_HEAP_MALLOC 1
#else
#define SL_HEAP_MALLOC 0
#endif

struct head {
	size_t cls;
	size_t len; /* the mapping's length, for a block of its own */
};

static size_t class_size(size_t cls)
{
	size_t b;

	if (cls < 4)
		return (cls + 1) * 16;
	b = 6 + (cls - 4) / 4;
	return ((size_t)1 << b) + ((cls - 4) % 4 + 1) * ((size_t)1 << (b - 2));
}

/* The class of the smallest block holding n bytes, header included
 * (16 <= n <= 2 MiB). */
static size_t class_of(size_t n)
{
	size_t b;

	if (n <= 64)
		return (n + 15) / 16 - 1;
	b = (size_t)(63 - __builtin_clzl(n - 1));
	return 4 + (b - 6) * 4 + (((n - 1) >> (b - 2)) & 3);
}

struct sl_heap {
	char *at, *end;           /* the current chunk's unused part */
	bool owned;
	void *free[NCLASS];       /* each class's free blocks, linked through their first word */
	char *chunk[MAX_CHUNKS];  /* every chunk, for sl_heap_own */
	size_t nchunk;
};

/* An anonymous mapping of n bytes (a multiple of the page size) aligned to
 * a huge page, in huge pages where the kernel has them. */
static char *map_huge(size_t n)
{
	char *m = mmap(NULL, n + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t a;

	if (m == MAP_FAILED)
		return NULL;
	a = ((uintptr_t)m + HUGE - 1) & ~(uintptr_t)(HUGE - 1);
	if (a > (uintptr_t)m)
		munmap(m, a - (uintptr_t)m);
	munmap((char *)a + n, (uintptr_t)m + HUGE - a);
	madvise((char *)a, n, MADV_HUGEPAGE);
	return (char *)a;
}

static void push(struct sl_heap *heap, size_t cls, void *b)
{
	*(void **)b = heap->free[cls];
	heap->free[cls] = b;
}

/* [at, end) becomes free blocks, largest first (both are multiples of 16
 * bytes apart, and so is every class). */
static void carve(struct sl_heap *heap, char *at, char *end)
{
	for (size_t cls = NCLASS; cls-- > 0;)
		while ((size_t)(end - at) >= class_size(cls)) {
			push(heap, cls, at);
			at += class_size(cls);
		}
}

/* With no chunk to be had (the worker's address-space limit), a free block
 * of a larger class is split: its first part for this block, its rest free
 * blocks of smaller classes. Free blocks are not merged back, so memory
 * freed in small blocks serves only small blocks. */
static struct head *split(struct sl_heap *heap, size_t cls)
{
	for (size_t c = cls + 1; c < NCLASS; c++)
		if (heap->free[c]) {
			char *b = heap->free[c];
			heap->free[c] = *(void **)b;
			carve(heap, b + class_size(cls), b + class_size(c));
			return (struct head *)b;
		}
	return NULL;
}

static void *alloc_own(size_t n)
{
	size_t len = (n + HEAD + PAGE - 1) & ~(PAGE - 1);
	struct head *h;

	if (n > SIZE_MAX / 2)
		return NULL;
	h = (struct head *)map_huge(len);
	if (!h)
		return NULL;
	h->cls = OWN;
	h->len = len;
	return (char *)h + HEAD;
}

static void *heap_alloc(struct sl_heap *heap, size_t n)
{
	size_t cls, size;
	struct head *h;

	if (n > CHUNK / 2 - HEAD)
		return alloc_own(n);
	cls = class_of(n + HEAD);
	size = class_size(cls);
	if (heap->free[cls]) {
		h = heap->free[cls];
		heap->free[cls] = *(void **)h;
	} else if ((size_t)(heap->end - heap->at) >= size) {
		h = (struct head *)heap->at;
		heap->at += size;
	} else {
		char *c = heap->nchunk < MAX_CHUNKS ? map_huge(CHUNK) : NULL;
		if (c) {
			carve(heap, heap->at, heap->end);
			heap->chunk[heap->nchunk++] = c;
			h = (struct head *)c;
			heap->at = c + size;
			heap->end = c + CHUNK;
		} else if (!(h = split(heap, cls))) {
			return NULL;
		}
	}
	h->cls = cls;
	h->len = 0;
	return (char *)h + HEAD;
}

static struct head *head_of(const void *p)
{
	return (struct head *)((uintptr_t)p - HEAD);
}

static size_t heap_usable(const void *p)
{
	const struct head *h;

	if (!p)
		return 0;
	h = head_of(p);
	return (h->cls == OWN ? h->len : class_size(h->cls)) - HEAD;
}

/* Whether h is the block last cut from the current chunk (chunks may be
 * adjacent: a block of the one before never counts). */
static bool on_top(const struct sl_heap *heap, const struct head *h)
{
	return h->cls != OWN && (const char *)h >= heap->end - CHUNK &&
	       (const char *)h + class_size(h->cls) == heap->at;
}

static void heap_free(struct sl_heap *heap, void *p)
{
	struct head *h;

	if (!p)
		return;
	h = head_of(p);
	if (h->cls == OWN)
		munmap(h, h->len);
	else if (on_top(heap, h))
		heap->at = (char *)h; /* cut again by the next block */
	else
		push(heap, h->cls, h);
}

static void *heap_realloc(struct sl_heap *heap, void *p, size_t n)
{
	size_t have = heap_usable(p);
	void *q;

	if (p && n <= have)
		return p;
	/* An array grown one element at a time grows where it is while
	 * nothing has been cut after it: the engine's load leaves no trail
	 * of outgrown blocks behind it ("The floor, eighth pass"). */
	if (p && n <= CHUNK / 2 - HEAD) {
		struct head *h = head_of(p);
		size_t cls = class_of(n + HEAD);
		if (on_top(heap, h) && (size_t)(heap->end - (char *)h) >= class_size(cls)) {
			h->cls = cls;
			heap->at = (char *)h + class_size(cls);
			return p;
		}
	}
	q = heap_alloc(heap, n);
	if (q && p) {
		memcpy(q, p, have);
		heap_free(heap, p);
	}
	return q;
}

static void *f_malloc(void *opaque, size_t n)
{
	return heap_alloc(opaque, n);
}

static void *f_calloc(void *opaque, size_t count, size_t size)
{
	void *p;

	if (size && count > SIZE_MAX / size)
		return NULL;
	p = heap_alloc(opaque, count * size);
	return p ? memset(p, 0, count * size) : NULL;
}

static void f_free(void *opaque, void *p)
{
	heap_free(opaque, p);
}

static void *f_realloc(void *opaque, void *p, size_t n)
{
	return heap_realloc(opaque, p, n);
}

static void *m_malloc(void *opaque, size_t n)
{
	(void)opaque;
	return malloc(n);
}

static void *m_calloc(void *opaque, size_t count, size_t size)
{
	(void)opaque;
	return calloc(count, size);
}

static void m_free(void *opaque, void *p)
{
	(void)opaque;
	free(p);
}

static void *m_realloc(void *opaque, void *p, size_t n)
{
	(void)opaque;
	return realloc(p, n);
}

static size_t m_usable(const void *p)
{
	return malloc_usable_size((void *)p);
}

const JSMallocFunctions *sl_heap_functions(void)
{
	static const JSMallocFunctions chunks = { f_calloc, f_malloc, f_free, f_realloc, heap_usable };
	static const JSMallocFunctions libc = { m_calloc, m_malloc, m_free, m_realloc, m_usable };
	return SL_HEAP_MALLOC ? &libc : &chunks;
}

/* The heap's own state is at the start of its first chunk, so that a
 * worker's copy of the chunk holds it too: in malloc's heap it was a page
 * of the zygote's, copied on the first write in every worker ("The floor,
 * eighth pass"). */
struct sl_heap *sl_heap_new(void)
{
	char *c = map_huge(CHUNK);
	struct sl_heap *heap = (struct sl_heap *)c;

	if (!c)
		return NULL;
	heap->chunk[heap->nchunk++] = c;
	heap->at = c + ((sizeof(*heap) + HEAD - 1) & ~(HEAD - 1));
	heap->end = c + CHUNK;
	return heap;
}

void sl_heap_free(struct sl_heap *heap)
{
	if (!heap)
		return;
	/* The first chunk, holding heap, last. */
	for (size_t i = heap->nchunk; i-- > 0;)
		munmap(heap->chunk[i], CHUNK);
}

bool sl_heap_own(struct sl_heap *heap)
{
	bool ok = true;

	if (heap->owned)
		return true;
	/* Nothing is written here before the copies: heap is in the first
	 * chunk, and a write to the zygote's huge page would split it. */
	for (size_t i = 0; i < heap->nchunk; i++) {
		char *c = heap->chunk[i], *mine = map_huge(CHUNK);
		/* What is in use is copied. The current chunk's huge pages past
		 * it are left to the first write: zeroing one costs about 190 us
		 * here, which every worker paid for a page most programs never
		 * reach ("The floor, seventh pass"). */
		size_t used = c + CHUNK == heap->end ? (size_t)(heap->at - c) : CHUNK;
		if (!mine) {
			ok = false;
			continue;
		}
		memcpy(mine, c, used);
		if (mremap(mine, CHUNK, CHUNK, MREMAP_MAYMOVE | MREMAP_FIXED, c) == MAP_FAILED) {
			munmap(mine, CHUNK);
			ok = false;
		}
	}
	heap->owned = true;
	return ok;
}
