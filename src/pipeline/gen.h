/*
 * A generation: one loaded configuration and the state every pipeline
 * stage built from it (nginx's cycle). Immutable once built and
 * reference-counted: the gateway holds the current one, and every call and
 * every program holds the one it started with until it ends, so a config
 * reload never changes what a running call sees.
 *
 * Building a generation *is* the validation of a config: each stage's init
 * runs on its own section, and the first failure throws the whole
 * generation away with that stage's message. A generation built from a
 * previous one shares, by reference, the state of every stage whose
 * section is unchanged (a cache keeps its entries, pinning its store); a
 * restart_only stage (telemetry, audit) keeps its old state even when its section
 * changed, and the generation records its name to be logged.
 *
 * The services the process shares (nginx's cycle, handed to init_module):
 * the sealing key and the metrics registry are on the generation; the
 * links a running gateway makes (Redis, the fleet) and the observers it
 * registers are in struct sl_services, made with the first generation,
 * passed to every later one and to each stage's init. A stage reaches the
 * gateway's services only through these, never through a session.
 *
 * API:
 *   if (sl_gen_new(cfg, prev, sl_stages, sl_nstages, &g, &err) < 0) ...
 *   sl_gen_ref(g); ... sl_gen_unref(g);     the last unref runs the stages'
 *                                           fini for state no one shares
 *   st = sl_gen_state(g, &sl_stage_governor);  a stage's state, for the
 *                                           stage's own exported functions
 */
#ifndef SL_PIPELINE_GEN_H
#define SL_PIPELINE_GEN_H

#include "config/config.h"

struct sl_stage;
struct sl_stage_slot;
struct sl_redis;
struct sl_fleet;
struct sl_keeper;
struct sl_once;

/*
 * What every generation of a process shares, handed to each stage's init
 * (which may keep the pointer: it lives as long as any generation). The
 * gateway owns what the pointers name: it sets them when it makes them,
 * and clears them before it frees them (a call may hold a generation
 * longer than the gateway lives). Without a gateway (tests, `sluice
 * check`, `sluice exec`) all are NULL.
 */
struct sl_services {
	unsigned refs;                /* references beyond the first */
	/* sluice.shared.redis (shared/redis.h), once `serve` made it: shared
	 * quotas, cache entries, pins. May be degraded; check its state. */
	struct sl_redis *redis;
	/* The replicas seen through redis (shared/fleet.h), once serving. */
	struct sl_fleet *fleet;
	/* The gateway's observer: which tools clients may see changed outside
	 * a reload (pinning trusted new definitions, here or on another
	 * replica), so every session hears tools/list_changed. */
	void (*tools_changed)(void *ctx);
	void *tools_changed_ctx;
	/* Keeps the whole of a result the governor shortens, for the session
	 * it belongs to (stages/governor.h); NULL: nothing is kept. */
	const struct sl_keeper *keeper;
	/* The approvals used (shared/once.h): a state that authorises an
	 * effect is claimed here, and in redis when set, before it is
	 * honoured; NULL: no gateway, nothing is ever approved by a state. */
	struct sl_once *once;
	/* The process's counters (the generations' metrics, borrowed: they
	 * live as long as these services), for work a stage does outside a
	 * call (pinning's hashes); NULL without a generation. */
	struct sl_metrics *metrics;
};

/* Tells the observer that which tools clients may see changed (svc, or
 * its observer, NULL: nobody listens). */
void sl_services_tools_changed(const struct sl_services *svc);

struct sl_gen {
	unsigned refs;               /* references beyond the first */
	uint64_t number;             /* 1 for the first config, then one more per reload */
	const struct sl_config *cfg; /* a reference */
	const struct sl_stage *const *stages; /* the ordered table (pipeline/stages.c, or a test's) */
	size_t nstages;
	struct sl_stage_slot **slots;/* one per stage: its state, shared between generations */
	/* Seals what clients carry back across requests (2026-07-28 confirmation
	 * states): random, or derived from sluice.shared.secret, made with the
	 * first generation and passed to every later one, so a reload never
	 * invalidates what a client holds. */
	uint8_t key[32];
	/* key is derived from sluice.shared.secret: every replica with the same
	 * secret has it (sealed session ids, adoption: REPLICAS.md). */
	bool key_shared;
	/* The process's counters (pipeline/metrics.h, a reference): made with
	 * the first generation and passed to every later one, like key, so a
	 * reload resets no count. Mutable: stages add to it, nothing decides
	 * by it. */
	struct sl_metrics *metrics;
	/* The rest of the shared services (a reference): made with the first
	 * generation and passed to every later one, like key and metrics. */
	struct sl_services *services;
	/* What building from the previous generation did (for the reload's log). */
	size_t changed;              /* stages that got new state */
	char restart_only[128];      /* changed sections that wait for a restart, ", "-separated */
};

/*
 * Builds a generation from cfg (a reference is taken; the caller keeps its
 * own) and the stage table. prev (may be NULL) is the generation it
 * replaces: stages whose sluice.<name> section is equal in both share
 * prev's state; the key, metrics and services are prev's (else new). Returns 0 with *out owned by the caller (one reference),
 * or SL_ERR_INVALID with err saying "sluice.<stage>: <why>" and nothing
 * kept.
 */
int sl_gen_new(const struct sl_config *cfg, const struct sl_gen *prev,
	       const struct sl_stage *const *stages, size_t nstages, struct sl_gen **out,
	       struct sl_err *err) SL_MUST_USE;
struct sl_gen *sl_gen_ref(struct sl_gen *g);
void sl_gen_unref(struct sl_gen *g);

/* The state stage st built for g (borrowed, lives as long as g), or NULL
 * when st is not in g's table or has no state. */
void *sl_gen_state(const struct sl_gen *g, const struct sl_stage *st);
/* The state of the stage at position i of g's table. */
void *sl_gen_state_at(const struct sl_gen *g, size_t i);

#endif
