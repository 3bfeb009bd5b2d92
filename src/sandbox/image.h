/*
 * The sandbox's own executable, embedded in sluice: src/sandbox/main.c
 * linked statically with the zygote, the workers and what they run (the
 * engine, the C library, libseccomp, nettle), and nothing of the gateway's
 * (TLS, HTTP, Redis, the event loop). A worker forked from it copies a
 * tenth of the mappings a fork of sluice does, and no program shares an
 * address space with code it never runs (docs/internals/SANDBOX.md,
 * "Processes" and "The floor, seventh pass").
 */
#ifndef SL_SANDBOX_IMAGE_H
#define SL_SANDBOX_IMAGE_H

#include <stddef.h>

/* The image's bytes and *len; *len is 0 in builds without one (sanitizer
 * builds, whose runtime cannot be linked statically). */
const unsigned char *sl_sandbox_image(size_t *len);

#endif
