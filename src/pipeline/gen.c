/*
 * Generations: a config and the stages' state built from it; see gen.h.
 * A slot is one stage's state with the config it was made from (the state
 * may borrow from that config's section), shared by every generation whose
 * section is equal.
 */
#include "pipeline/gen.h"
#include "pipeline/call.h"
#include "pipeline/metrics.h"
#include "core/digest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sl_stage_slot {
	unsigned refs;               /* references beyond the first */
	void *state;
	const struct sl_config *cfg; /* a reference: what state may borrow from */
	void (*fini)(void *state);
};

static uint64_t gen_count;

static yyjson_val *section_of(const struct sl_config *cfg, const char *name)
{
	return cfg->sluice ? yyjson_obj_get(cfg->sluice, name) : NULL;
}

static void slot_unref(struct sl_stage_slot *sl)
{
	if (!sl || sl->refs-- > 0)
		return;
	if (sl->fini && sl->state)
		sl->fini(sl->state);
	sl_config_unref(sl->cfg);
	free(sl);
}

/* Whether st's section in g's config equals the one in prev's. */
static bool same_section(const struct sl_stage *st, const struct sl_config *a,
			 const struct sl_config *b)
{
	yyjson_val *x = section_of(a, st->name), *y = section_of(b, st->name);
	return (!x && !y) || (x && y && yyjson_equals(x, y));
}

static void note_restart_only(struct sl_gen *g, const char *name)
{
	size_t used = strlen(g->restart_only);
	if (used < sizeof(g->restart_only))
		snprintf(g->restart_only + used, sizeof(g->restart_only) - used, "%s%s",
			 used ? ", " : "", name);
}

/* The sealing key: HMAC-SHA-256 of a fixed label under the shared secret,
 * so replicas with one secret share one key (and the secret itself is used
 * for nothing else); without a secret, random for this process. */
static void derive_key(struct sl_gen *g, const struct sl_config *cfg)
{
	static const char label[] = "sluice sealing key v1";

	if (!cfg->shared_secret) {
		sl_random(g->key, sizeof(g->key));
		return;
	}
	sl_hmac_sha256(cfg->shared_secret, strlen(cfg->shared_secret), label, strlen(label), g->key);
	g->key_shared = true;
}

static bool same_secret(const struct sl_config *a, const struct sl_config *b)
{
	if (!a->shared_secret || !b->shared_secret)
		return a->shared_secret == b->shared_secret;
	return strcmp(a->shared_secret, b->shared_secret) == 0;
}

int sl_gen_new(const struct sl_config *cfg, const struct sl_gen *prev,
	       const struct sl_stage *const *stages, size_t nstages, struct sl_gen **out,
	       struct sl_err *err)
{
	struct sl_gen *g = sl_alloc(sizeof(*g));
	int rc = SL_OK;

	g->number = ++gen_count;
	if (prev) {
		/* What a client holds stays good: the key is kept, and a new
		 * secret waits for a restart (said by name only). */
		memcpy(g->key, prev->key, sizeof(g->key));
		g->key_shared = prev->key_shared;
		if (!same_secret(prev->cfg, cfg))
			note_restart_only(g, "shared.secret");
		g->metrics = sl_metrics_ref(prev->metrics);
		g->services = prev->services;
		g->services->refs++;
		if (prev->cfg->limits.max_metric_series != cfg->limits.max_metric_series)
			note_restart_only(g, "limits.maxMetricSeries");
	} else {
		derive_key(g, cfg);
		g->metrics = sl_metrics_new(cfg->limits.max_metric_series);
		g->services = sl_alloc(sizeof(*g->services));
		g->services->metrics = g->metrics;
	}
	g->cfg = sl_config_ref(cfg);
	g->stages = stages;
	g->nstages = nstages;
	g->slots = sl_alloc((nstages ? nstages : 1) * sizeof(*g->slots));
	for (size_t i = 0; i < nstages; i++) {
		const struct sl_stage *st = stages[i];
		struct sl_stage_slot *old = prev && prev->stages == stages ? prev->slots[i] : NULL;
		struct sl_stage_slot *sl;
		struct sl_err e;

		if (old && (!st->init || same_section(st, prev->cfg, cfg) || st->restart_only)) {
			if (st->init && st->restart_only && !same_section(st, prev->cfg, cfg))
				note_restart_only(g, st->name);
			old->refs++;
			g->slots[i] = old;
			continue;
		}
		sl = sl_alloc(sizeof(*sl));
		sl->fini = st->fini;
		sl->cfg = sl_config_ref(cfg);
		g->slots[i] = sl;
		if (st->init &&
		    st->init(cfg, g->services, section_of(cfg, st->name), &sl->state, &e) < 0) {
			sl_err_set(err, "%s", e.msg);
			rc = SL_ERR_INVALID;
			goto out;
		}
		g->changed += prev && st->init;
	}
out:
	if (rc < 0) {
		sl_gen_unref(g);
		return rc;
	}
	*out = g;
	return SL_OK;
}

struct sl_gen *sl_gen_ref(struct sl_gen *g)
{
	g->refs++;
	return g;
}

void sl_gen_unref(struct sl_gen *g)
{
	if (!g || g->refs-- > 0)
		return;
	/* Last stage first, as they were made in order. */
	for (size_t i = g->nstages; i-- > 0;)
		slot_unref(g->slots[i]);
	free(g->slots);
	sl_metrics_unref(g->metrics);
	if (g->services->refs-- == 0)
		free(g->services);
	sl_config_unref(g->cfg);
	free(g);
}

void sl_services_tools_changed(const struct sl_services *svc)
{
	if (svc && svc->tools_changed)
		svc->tools_changed(svc->tools_changed_ctx);
}

void *sl_gen_state_at(const struct sl_gen *g, size_t i)
{
	return i < g->nstages && g->slots[i] ? g->slots[i]->state : NULL;
}

void *sl_gen_state(const struct sl_gen *g, const struct sl_stage *st)
{
	for (size_t i = 0; g && i < g->nstages; i++)
		if (g->stages[i] == st)
			return sl_gen_state_at(g, i);
	return NULL;
}
