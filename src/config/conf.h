/*
 * Config key tables (nginx's ngx_command_t idea): a section of the config
 * file is declared as a table of keys, each with its JSON type, its range,
 * where it goes in a struct (offsetof) and its reference text. One function
 * applies a table to a JSON object; the same table sets the defaults and
 * prints the reference (docs/CONFIG.md, `sluice config-reference`), so the
 * parser, the defaults and the documentation cannot drift apart.
 *
 * Messages: "FILE: sluice.http.maxSessions: must be a whole number from 1 to
 * 100000" (the path of the key, then "must be " and the key's shape). A
 * section with SL_CONF_KEY_FIRST names the key in the text instead
 * ("FILE: mcpServers.gh: \"timeout\" must be ..."), as server entries do.
 * Unknown keys are warnings (cx->warn), or errors in an SL_CONF_STRICT
 * section ("unknown key \"x\" (known: a, b)"); a key given twice is an error.
 *
 * API (how a stage declares its section; src/stages/governor.c):
 *   struct sl_governor { bool enabled; size_t max_tokens; uint64_t ttl_ms; ... };
 *   static const struct sl_conf_key governor_keys[] = {
 *           { "enabled", SL_CONF_BOOL, SL_CONF_AT(struct sl_governor, enabled), .dflt = 1,
 *             .doc = "`false`: results pass unchanged." },
 *           { "maxTokens", SL_CONF_UINT, SL_CONF_AT(struct sl_governor, max_tokens),
 *             .min = 100, .max = 1000000, .dflt = 4000,
 *             .doc = "A result over this many tokens is shrunk to fit." },
 *           ...
 *   };
 *   static const struct sl_conf_section governor_conf = {
 *           "sluice.governor", "The response governor: ...", governor_keys,
 *           SL_COUNT(governor_keys), SL_CONF_STRICT, NULL,
 *   };
 *   const struct sl_stage sl_stage_governor = { ..., .conf = &governor_conf };
 *   ...in init(cfg, section, &state, err), section NULL when the file has none:
 *   struct sl_governor *gov = sl_alloc(sizeof(*gov));
 *   if ((rc = sl_conf_load(&governor_conf, section, gov, err)) < 0)
 *           { free(gov); return rc; }   err: "sluice.governor.maxTokens: must be a
 *                                        whole number from 100 to 1000000"
 *   The reference (docs/CONFIG.md) lists every stage's .conf after the
 *   gateway's own sections (sl_config_reference).
 */
#ifndef SL_CONFIG_CONF_H
#define SL_CONFIG_CONF_H

#include "core/common.h"

#include <stddef.h>
#include <stdio.h>
#include <yyjson.h>

enum sl_conf_type {
	SL_CONF_BOOL,   /* true/false into a bool */
	SL_CONF_UINT,   /* a whole number in [min, max] into a 4- or 8-byte unsigned field */
	SL_CONF_STRING, /* a string, copied (the target frees it); min 1: non-empty */
	SL_CONF_ENUM,   /* one of names[] into a 4-byte enum or int field */
	SL_CONF_OBJECT, /* a nested section applied at target + offset */
	SL_CONF_CUSTOM, /* anything else: parse() */
};

/* One accepted spelling of an enum value; a table of them ends with NULL. */
struct sl_conf_name {
	const char *name;
	int value;
};

struct sl_conf_ctx;
struct sl_conf_key;

/* Parses v for key k into target (the section's whole struct). Returns 0, or
 * the result of sl_conf_fail / sl_conf_fail_key. */
typedef int sl_conf_parse_fn(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			     void *target);

struct sl_conf_key {
	const char *key;
	enum sl_conf_type type;
	size_t offset;                       /* of the field in the target (SL_CONF_AT) */
	size_t size;                         /* of the field */
	uint64_t min, max;                   /* UINT: the range; STRING: min 1 is non-empty */
	uint64_t dflt;                       /* BOOL, UINT, ENUM: set by sl_conf_defaults */
	const struct sl_conf_name *names;    /* ENUM */
	sl_conf_parse_fn *parse;             /* CUSTOM */
	const struct sl_conf_section *sub;   /* OBJECT; CUSTOM: the section each item of an
					      * array follows, listed by the reference */
	const char *shape;                   /* what a value must be ("an array of strings");
					      * NULL: from the type and range */
	const char *dflt_doc;                /* the default as the reference shows it, where
					      * dflt does not say it (strings, custom keys) */
	const char *doc;                     /* one sentence or two for the reference */
};

#define SL_CONF_AT(type, field) .offset = offsetof(type, field), .size = sizeof(((type *)0)->field)

enum {
	SL_CONF_STRICT = 1 << 0,    /* an unknown key fails the section */
	SL_CONF_KEY_FIRST = 1 << 1, /* messages: "where: \"key\" must be ..." */
};

/* The result of an `other` hook for a key that is not its business either. */
#define SL_CONF_DECLINED 1

struct sl_conf_section {
	const char *path;   /* "sluice.http": messages and the reference */
	const char *doc;    /* a paragraph for the reference */
	const struct sl_conf_key *keys;
	size_t nkeys;
	unsigned flags;     /* SL_CONF_STRICT, SL_CONF_KEY_FIRST */
	/* Keys not in the table (NULL: none): SL_OK when taken, SL_CONF_DECLINED
	 * for an unknown key, or a failure. */
	int (*other)(struct sl_conf_ctx *cx, const char *key, yyjson_val *v, void *target);
};

struct sl_conf_ctx {
	const char *file;   /* the first part of every message; NULL: none */
	struct sl_err *err;
	/* An unknown key in a lenient section; msg is the callee's to free.
	 * NULL: logged as a warning. */
	void (*warn)(struct sl_conf_ctx *cx, char *msg);
	/* Set by sl_conf_apply while a section is applied. */
	const char *where;
	unsigned flags;
};

/* Applies section s to the JSON object obj, storing into target. where names
 * the object in messages (NULL: s->path). Returns 0, or SL_ERR_INVALID with
 * cx->err set; on failure target may hold part of the values (its owner frees
 * them as usual). */
int sl_conf_apply(struct sl_conf_ctx *cx, const struct sl_conf_section *s, const char *where,
		  yyjson_val *obj, void *target) SL_MUST_USE;
/* Stores every BOOL, UINT and ENUM key's default, nested sections included. */
void sl_conf_defaults(const struct sl_conf_section *s, void *target);
/* A stage's section (pipeline/call.h): stores the defaults in target, then
 * applies obj when there is one (NULL: the section is absent), with
 * messages that start at s->path ("sluice.cache.ttlMs: must be ...").
 * Returns what sl_conf_apply returns. */
int sl_conf_load(const struct sl_conf_section *s, yyjson_val *obj, void *target,
		 struct sl_err *err) SL_MUST_USE;

/* Fails with "FILE: where: message" (where NULL: the section being applied).
 * Returns SL_ERR_INVALID. */
int sl_conf_fail(struct sl_conf_ctx *cx, const char *where, const char *fmt, ...)
	SL_PRINTF(3, 4) SL_MUST_USE;
/* Fails about key k in the section's style ("where.key: message", or
 * "where: \"key\" message" in an SL_CONF_KEY_FIRST section). */
int sl_conf_fail_key(struct sl_conf_ctx *cx, const struct sl_conf_key *k, const char *fmt, ...)
	SL_PRINTF(3, 4) SL_MUST_USE;
/* The same with the key's own message, "must be <shape>". */
int sl_conf_bad(struct sl_conf_ctx *cx, const struct sl_conf_key *k) SL_MUST_USE;
/* True when an earlier key of obj equals key (JSON allows it, yyjson keeps both). */
bool sl_conf_repeated(yyjson_val *obj, yyjson_val *key);
/* The field of key k in target. */
void *sl_conf_field(void *target, const struct sl_conf_key *k);

/* Writes the markdown reference of s (a heading and a table of its keys) to f;
 * a nested section is a section of its own. */
void sl_conf_reference(FILE *f, const struct sl_conf_section *s);

#endif
