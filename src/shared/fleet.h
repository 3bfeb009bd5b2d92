/*
 * The replicas of a gateway as seen through Redis (docs/internals/REPLICAS.md,
 * "The fleet"): each replica with sluice.shared.redis writes a heartbeat
 * every SL_FLEET_BEAT_MS into the hash <prefix>replicas (field: its replica
 * id, value: a small JSON object), reads the hash back, and removes its own
 * field on a clean shutdown. GET /status shows what the last read found,
 * each replica `alive` (seen within 3 heartbeats) or `gone`; entries not
 * seen for an hour are deleted by whichever replica reads them.
 *
 * What is read from Redis is untrusted (the hash may be shared, or written
 * by something hostile): an entry over SL_FLEET_ENTRY_MAX bytes, not a JSON
 * object of the expected shape, whose id is not the field's, with control
 * characters in its strings or a time far in the future is ignored (and
 * counted); at most SL_FLEET_READ_MAX are looked at per read and
 * SL_FLEET_SHOWN kept, in id order.
 *
 * The fleet knows nothing of what it reports: at each beat it asks its
 * owner for this replica's load (sessions, programs, upstreams) through
 * the callback it was started with.
 *
 * API (serve makes one when the gateway has Redis; the gateway owns it):
 *   f = sl_fleet_start(loop, redis, id, "127.0.0.1:8370", load, ctx);
 *                                   heartbeats start at once
 *   sl_fleet_status(f, d, obj);     fills GET /status's "fleet" (f NULL: nothing)
 *   sl_fleet_leave(f);              on a clean shutdown: stops beating, deletes
 *                                   its entry (sent before the loop ends)
 *   sl_fleet_free(f);               NULL is fine; before sl_redis_free
 * Pure, for the tests:
 *   sl_fleet_default_id, sl_fleet_id_ok, sl_fleet_parse, sl_fleet_state.
 */
#ifndef SL_SHARED_FLEET_H
#define SL_SHARED_FLEET_H

#include "core/common.h"

#include <uv.h>
#include <yyjson.h>

#define SL_FLEET_BEAT_MS 2000u
#define SL_FLEET_ALIVE_BEATS 3u                 /* seen within 3 beats: alive */
#define SL_FLEET_PRUNE_MS (3600u * 1000u)       /* not seen for an hour: deleted */
#define SL_FLEET_ENTRY_MAX 4096u                /* one entry, bytes; bigger: ignored */
#define SL_FLEET_SHOWN 256u                     /* replicas kept from one read */
#define SL_FLEET_READ_MAX 1024u                 /* entries looked at per read; the rest
						 * are only counted (a hash grown huge
						 * costs the loop no more than this) */
#define SL_FLEET_ID_MAX 128u                    /* a replica id, bytes */

struct sl_redis;
struct sl_fleet;

/* One replica's entry, as checked (strings bounded and free of controls). */
struct sl_fleet_member {
	char id[SL_FLEET_ID_MAX + 1];
	char version[65];
	char listen[256];
	int64_t pid;
	uint64_t started_ms;   /* wall clock, ms since the epoch */
	uint64_t seen_ms;      /* wall clock of its last heartbeat */
	uint64_t sessions, programs, ups_up, ups_total;
};

/* "<hostname>:<pid>" into out (size at least SL_FLEET_ID_MAX + 1), cut to
 * fit and with anything unprintable in the host name replaced by '_'. */
void sl_fleet_default_id(char *out, size_t size);
/* A replica id: 1 to SL_FLEET_ID_MAX bytes of printable ASCII (no space). */
bool sl_fleet_id_ok(const char *id);
/* The entry under field in the hash, value as read. False (why says what
 * was wrong) for one to ignore. now_ms: the reader's wall clock. */
bool sl_fleet_parse(const char *field, size_t flen, const char *value, size_t vlen,
		    uint64_t now_ms, struct sl_fleet_member *m, const char **why);
/* "alive" or "gone" for a member last seen at seen_ms, read at now_ms. */
const char *sl_fleet_state(uint64_t seen_ms, uint64_t now_ms);

/* This replica's load, as its heartbeat reports it. */
struct sl_fleet_load {
	uint64_t sessions;     /* sessions of legacy clients (initialize handshake) */
	uint64_t programs;     /* programs running */
	uint64_t ups_up, ups_total;
};
/* Fills *out with the owner's load now; called from the loop at each beat. */
typedef void sl_fleet_load_fn(void *ctx, struct sl_fleet_load *out);

/* Starts heartbeating on loop into r's hash. id: sluice.shared.replicaId
 * (copied), NULL for sl_fleet_default_id's; listen (copied, may be NULL):
 * the address served, for the operator; load(ctx, ...) is asked at each
 * beat, ctx borrowed until sl_fleet_free. */
struct sl_fleet *sl_fleet_start(uv_loop_t *loop, struct sl_redis *r, const char *id,
				const char *listen, sl_fleet_load_fn *load, void *ctx);
void sl_fleet_status(const struct sl_fleet *f, yyjson_mut_doc *d, yyjson_mut_val *obj);
void sl_fleet_leave(struct sl_fleet *f);
void sl_fleet_free(struct sl_fleet *f);

#endif
