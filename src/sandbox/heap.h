/*
 * The engines' heap in the sandbox: where QuickJS's memory lives in the
 * zygote and in every worker forked from it.
 *
 * On the machines measured here (docs/internals/SANDBOX.md, "The floor,
 * sixth pass"), a fresh process pays for every 4 KiB page it first touches,
 * nearly as much for a fresh page as for a copy-on-write one, and almost
 * nothing per page of a transparent huge page it owns. In malloc's heap, a
 * worker's engine took about 140 page faults a program, reusing free blocks
 * spread over the zygote's pages. So each engine allocates from chunks of
 * huge pages of its own, and a worker starts by copying its engine's chunks
 * into huge pages of its own: one fault per 2 MiB, and the copy reads the
 * zygote's huge pages, not 4 KiB ones.
 *
 * The allocator: each block's size is one of 64 classes (16, 32, 48, 64,
 * then four steps to each doubling, up to 2 MiB), at most a quarter more
 * than asked; each class has a free list, and new blocks are cut from the
 * current chunk (4 MiB). The block last cut grows where it is when
 * reallocated, and goes back to the chunk when freed, so that an array
 * grown one element at a time leaves no trail of outgrown blocks. Larger
 * blocks are mappings of their own, unmapped when freed. QuickJS keeps
 * objects of up to 512 bytes in arenas of its own, so most requests here
 * are arena pages and large strings and arrays.
 *
 * Bounds: the engine's memory limit (JS_SetMemoryLimit) counts the usable
 * sizes returned here, and the worker's address-space limit (kernel.c)
 * bounds the chunks. Chunks are never unmapped while the engine lives, and
 * freed blocks are not merged: a block serves its own class, or is split
 * for smaller ones when no chunk can be had. A program that frees much of
 * one size and then asks for much of a larger one can so reach the address
 * limit before the engine's, and fails as out of memory, as it would there.
 *
 * Not in sanitizer builds: there every engine allocation goes to malloc, so
 * that AddressSanitizer sees each block (QuickJS keeps no arenas there
 * either).
 *
 * API (a heap serves one engine; a worker's heaps are copies of the zygote's):
 *   h = sl_heap_new();
 *   rt = JS_NewRuntime2(sl_heap_functions(), h);
 *   ... fork ...
 *   sl_heap_own(h);         in the worker, before the engine runs there
 *   JS_FreeRuntime(rt); sl_heap_free(h);
 */
#ifndef SL_SANDBOX_HEAP_H
#define SL_SANDBOX_HEAP_H

#include <quickjs.h>

#include <stdbool.h>
#include <stddef.h>

struct sl_heap;

/* NULL when no chunk can be mapped. Its own state (about 8 KiB) is at the
 * start of its first chunk. */
struct sl_heap *sl_heap_new(void);
/* Unmaps every chunk: after the engine using it is freed. */
void sl_heap_free(struct sl_heap *h);
/* The engine's allocator (opaque: the heap); malloc's own functions in
 * sanitizer builds, where the heap stays empty. */
const JSMallocFunctions *sl_heap_functions(void);
/* In a worker, before its engine runs there: copies the chunks made so far
 * into fresh huge pages at the same addresses. Once; later calls do
 * nothing. false if a copy could not be made (that part is then shared
 * with the zygote, as before: nothing is lost but time). */
bool sl_heap_own(struct sl_heap *h);

#endif
