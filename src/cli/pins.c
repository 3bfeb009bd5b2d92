/*
 * sluice pins list|diff|approve|reset [server.tool|server]: the tool pins
 * of docs/stages/pinning.md. list, diff and approve start the servers once
 * (as `sluice check` does) to compare their live definitions with the
 * pins; reset only edits the pins file. approve skills.NAME approves a
 * saved skill (cli/skills.c).
 */
#include "cli/cli.h"
#include "core/log.h"
#include "gateway/gateway.h"
#include "pipeline/gen.h"
#include "shared/pins.h"
#include "stages/pinning.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum sub { SUB_LIST, SUB_DIFF, SUB_APPROVE, SUB_RESET };

struct pins {
	struct sl_gateway *gw;
	struct sl_pins *pins; /* our own store: no pipeline here */
	enum sub sub;
	char *server;      /* target server, NULL: all */
	const char *tool;  /* target tool, NULL: all of server */
	int rc;
	size_t shown;
};

/* Splits "server.tool" or "server" against the configured servers and the
 * pinned ones (a tool name may itself contain dots; a server name may too:
 * the longest known server that prefixes the target wins). */
static int parse_target(const struct sl_config *cfg, const struct sl_pins *pins, const char *t,
			char **server, const char **tool)
{
	yyjson_val *pinned = sl_pinning_servers(pins), *k;
	yyjson_obj_iter it;
	size_t best = 0, tl = strlen(t);
	const char *cand;

	*server = NULL;
	*tool = NULL;
	for (size_t i = 0;; i++) {
		if (i < cfg->nservers) {
			cand = cfg->servers[i].name;
		} else {
			if (i == cfg->nservers)
				yyjson_obj_iter_init(pinned, &it);
			k = yyjson_obj_iter_next(&it);
			if (!k)
				break;
			cand = yyjson_get_str(k);
		}
		size_t n = strlen(cand);
		if (n == tl && strcmp(cand, t) == 0) {
			*server = sl_strdup(cand);
			*tool = NULL;
			return 0;
		}
		if (n < tl && t[n] == '.' && strncmp(t, cand, n) == 0 && n > best) {
			best = n;
			free(*server);
			*server = sl_strdup(cand);
			*tool = t + n + 1;
		}
	}
	if (!*server) {
		fprintf(stderr, "sluice pins: '%s' names no configured or pinned server (use server or "
			"server.tool)\n", t);
		return -1;
	}
	return 0;
}

static bool wanted(const struct pins *p, const char *server, const char *tool)
{
	return (!p->server || strcmp(p->server, server) == 0) &&
	       (!p->tool || (tool && strcmp(p->tool, tool) == 0));
}

static bool live_has(const struct sl_upstream *u, const char *tool)
{
	for (size_t i = 0; i < u->tools.n; i++) {
		const char *n = sl_json_str(u->tools.items[i], "name");
		if (n && strcmp(n, tool) == 0)
			return true;
	}
	return false;
}

static void row(const char *server, const char *tool, const char *status, yyjson_val *pin)
{
	const char *sha = sl_json_str(pin, "sha256"), *at = sl_json_str(pin, "pinnedAt");
	char name[256];
	snprintf(name, sizeof(name), "%s.%s", server, tool);
	printf("%-40s %-10s %-20s %.12s\n", name, status, at ? at : "-", sha ? sha : "-");
}

/* True if key is the identity key of one of gw's servers. */
static bool configured_key(struct sl_gateway *gw, const char *key)
{
	bool found = false;
	for (size_t i = 0; i < gw->nups && !found; i++) {
		char *k = sl_pinning_key(gw->ups[i]->cfg);
		found = strcmp(k, key) == 0;
		free(k);
	}
	return found;
}

static void do_list(struct pins *p)
{
	struct sl_gateway *gw = p->gw;
	yyjson_val *pinned = sl_pinning_servers(p->pins), *k, *tk;
	yyjson_obj_iter it, ti;
	size_t changed = 0;

	printf("pins: %s\n", sl_pinning_file(p->pins) ? sl_pinning_file(p->pins) :
	       "(no state directory)");
	printf("%-40s %-10s %-20s %s\n", "TOOL", "STATUS", "PINNED", "SHA-256");
	for (size_t i = 0; i < gw->nups; i++) {
		struct sl_upstream *u = gw->ups[i];
		char *key = sl_pinning_key(u->cfg);
		yyjson_val *sv = yyjson_obj_get(pinned, key);
		if (p->server && strcmp(p->server, u->name) != 0) {
			free(key);
			continue;
		}
		if (u->state != SL_UP_READY) {
			yyjson_obj_iter_init(sv, &ti);
			while ((tk = yyjson_obj_iter_next(&ti)))
				if (wanted(p, u->name, yyjson_get_str(tk)))
					row(u->name, yyjson_get_str(tk), "unchecked",
					    yyjson_obj_iter_get_val(tk));
			printf("  %s is %s%s%s: its tools could not be compared\n", u->name,
			       sl_upstream_state_name(u->state), u->error ? ": " : "",
			       u->error ? u->error : "");
			p->rc = 1;
			free(key);
			continue;
		}
		for (size_t j = 0; j < u->tools.n; j++) {
			yyjson_val *def = u->tools.items[j], *pin;
			const char *name = sl_json_str(def, "name");
			enum sl_pin_status st;
			if (!name || !wanted(p, u->name, name))
				continue;
			st = sl_pinning_check(p->pins, key, def, &pin);
			changed += st == SL_PIN_CHANGED || st == SL_PIN_NEW;
			row(u->name, name, sl_pin_status_name(st), pin);
			p->shown++;
		}
		yyjson_obj_iter_init(sv, &ti);
		while ((tk = yyjson_obj_iter_next(&ti)))
			if (wanted(p, u->name, yyjson_get_str(tk)) && !live_has(u, yyjson_get_str(tk))) {
				row(u->name, yyjson_get_str(tk), "gone", yyjson_obj_iter_get_val(tk));
				p->shown++;
			}
		free(key);
	}
	/* Pins of servers the config no longer has (by identity: a server whose
	 * command, arguments or URL changed is another server). */
	yyjson_obj_iter_init(pinned, &it);
	while ((k = yyjson_obj_iter_next(&it))) {
		if (configured_key(gw, yyjson_get_str(k)) ||
		    (p->server && strcmp(p->server, yyjson_get_str(k)) != 0))
			continue;
		yyjson_obj_iter_init(yyjson_obj_iter_get_val(k), &ti);
		while ((tk = yyjson_obj_iter_next(&ti)))
			if (wanted(p, yyjson_get_str(k), yyjson_get_str(tk)))
				row(yyjson_get_str(k), yyjson_get_str(tk), "no-server",
				    yyjson_obj_iter_get_val(tk));
	}
	if (changed)
		printf("\n%zu tools differ from their pins: `sluice pins diff` shows how, "
		       "`sluice pins approve server.tool` trusts the new definition\n", changed);
}

/* Splits text into lines (in place). */
static char **lines_of(char *text, size_t *n)
{
	size_t cap = 16;
	char **v = sl_alloc(cap * sizeof(*v));
	*n = 0;
	for (char *s = text; s && *s;) {
		char *nl = strchr(s, '\n');
		if (*n == cap)
			v = sl_realloc(v, (cap *= 2) * sizeof(*v));
		v[(*n)++] = s;
		if (!nl)
			break;
		*nl = '\0';
		s = nl + 1;
	}
	return v;
}

/* A line diff (longest common subsequence), "-" old, "+" new, " " both. */
static void print_diff(char *old, char *new)
{
	size_t na, nb;
	char **a = lines_of(old, &na), **b = lines_of(new, &nb);
	if (na > 4000 || nb > 4000) {
		for (size_t i = 0; i < na; i++)
			printf("-%s\n", a[i]);
		for (size_t j = 0; j < nb; j++)
			printf("+%s\n", b[j]);
	} else {
		uint32_t *l = sl_alloc((na + 1) * (nb + 1) * sizeof(*l));
#define L(i, j) l[(i) * (nb + 1) + (j)]
		for (size_t i = na; i-- > 0;)
			for (size_t j = nb; j-- > 0;)
				L(i, j) = strcmp(a[i], b[j]) == 0 ? L(i + 1, j + 1) + 1 :
					  (L(i + 1, j) > L(i, j + 1) ? L(i + 1, j) : L(i, j + 1));
		size_t i = 0, j = 0;
		while (i < na || j < nb) {
			if (i < na && j < nb && strcmp(a[i], b[j]) == 0) {
				printf(" %s\n", a[i]);
				i++, j++;
			} else if (j < nb && (i == na || L(i, j + 1) >= L(i + 1, j))) {
				printf("+%s\n", b[j++]);
			} else {
				printf("-%s\n", a[i++]);
			}
		}
#undef L
		free(l);
	}
	free(a);
	free(b);
}

static char *pretty_live(yyjson_val *def)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *subj = sl_pinning_subject(d, def);
	char *s;
	sl_json_sort_keys(subj);
	s = yyjson_mut_val_write(subj, YYJSON_WRITE_PRETTY_TWO_SPACES, NULL);
	yyjson_mut_doc_free(d);
	return s ? s : sl_strdup("");
}

static void do_diff(struct pins *p)
{
	struct sl_gateway *gw = p->gw;
	size_t differ = 0;

	for (size_t i = 0; i < gw->nups; i++) {
		struct sl_upstream *u = gw->ups[i];
		if (p->server && strcmp(p->server, u->name) != 0)
			continue;
		if (u->state != SL_UP_READY) {
			printf("# %s is %s: not compared\n", u->name, sl_upstream_state_name(u->state));
			p->rc = 2;
			continue;
		}
		for (size_t j = 0; j < u->tools.n; j++) {
			yyjson_val *def = u->tools.items[j], *pin;
			const char *name = sl_json_str(def, "name");
			enum sl_pin_status st;
			char *old, *new, *key;
			if (!name || !wanted(p, u->name, name))
				continue;
			key = sl_pinning_key(u->cfg);
			st = sl_pinning_check(p->pins, key, def, &pin);
			free(key);
			if (st == SL_PIN_OK)
				continue;
			differ++;
			new = pretty_live(def);
			if (st == SL_PIN_CHANGED) {
				old = yyjson_val_write(yyjson_obj_get(pin, "definition"),
						       YYJSON_WRITE_PRETTY_TWO_SPACES, NULL);
				printf("--- %s.%s (pinned %s)\n+++ %s.%s (live)\n", u->name, name,
				       sl_json_str(pin, "pinnedAt") ? sl_json_str(pin, "pinnedAt") : "",
				       u->name, name);
			} else {
				old = NULL;
				printf("--- %s.%s (not pinned)\n+++ %s.%s (live)\n", u->name, name, u->name,
				       name);
			}
			print_diff(old ? old : (char[]){ "" }, new);
			free(old);
			free(new);
		}
	}
	if (!differ)
		printf("no differences: every live tool matches its pin\n");
	else if (p->rc == 0)
		p->rc = 1;
}

static void on_approved(void *ctx, const struct sl_upstream *u, yyjson_val *def,
			enum sl_pin_status before)
{
	char hex[SL_PIN_HEX];
	(void)ctx;
	sl_pinning_hash(def, hex, NULL);
	printf("%s %s.%s sha256:%.12s\n", before == SL_PIN_OK ? "unchanged" : "approved", u->name,
	       sl_json_str(def, "name"), hex);
}

static void do_approve(struct pins *p)
{
	struct sl_gateway *gw = p->gw;
	size_t approved = 0;

	for (size_t i = 0; i < gw->nups; i++) {
		struct sl_upstream *u = gw->ups[i];
		struct sl_err err;
		size_t n = 0;
		if (p->server && strcmp(p->server, u->name) != 0)
			continue;
		if (u->state != SL_UP_READY) {
			if (p->server) {
				fprintf(stderr, "sluice pins: %s is %s%s%s: cannot approve its tools\n",
					u->name, sl_upstream_state_name(u->state), u->error ? ": " : "",
					u->error ? u->error : "");
				p->rc = 1;
			}
			continue;
		}
		if (sl_pinning_approve_live(p->pins, u, p->tool, on_approved, p, &n, &err) < 0) {
			fprintf(stderr, "sluice pins: %s\n", err.msg);
			p->rc = 1;
		}
		approved += n;
	}
	if (!approved && p->rc == 0) {
		fprintf(stderr, "sluice pins: no live tool matches %s%s%s\n",
			p->server ? p->server : "any server", p->tool ? "." : "", p->tool ? p->tool : "");
		p->rc = 1;
	}
}

static void on_stopped(void *ctx)
{
	struct pins *p = ctx;
	sl_gateway_free(p->gw);
}

static void on_settled(void *ctx)
{
	struct pins *p = ctx;
	if (p->sub == SUB_LIST)
		do_list(p);
	else if (p->sub == SUB_DIFF)
		do_diff(p);
	else
		do_approve(p);
	fflush(stdout);
	sl_gateway_stop(p->gw, on_stopped, p);
}

static bool server_named(const struct sl_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->nservers; i++)
		if (strcmp(cfg->servers[i].name, name) == 0)
			return true;
	return false;
}

int sl_cli_pins(const struct sl_config *cfg, const char *sub, const char *target)
{
	yyjson_val *section = cfg->sluice ? yyjson_obj_get(cfg->sluice, "pinning") : NULL;
	struct pins p = { 0 };
	struct sl_shared_pins_push *push = NULL;
	size_t shared = 0;
	struct sl_gen *gen;
	struct sl_err err;
	uv_loop_t *loop;

	if (!sub) {
		fprintf(stderr, "sluice pins: list, diff, approve or reset?\n");
		return 2;
	}
	/* A saved skill is pinned too (gateway/skills.h): approve skills.NAME
	 * is `sluice skills approve NAME`, unless a server is named skills. */
	if (!strcmp(sub, "approve") && target && !strncmp(target, "skills.", 7) &&
	    !server_named(cfg, "skills"))
		return sl_cli_skills("approve", target + 7);
	if (!strcmp(sub, "list"))
		p.sub = SUB_LIST;
	else if (!strcmp(sub, "diff"))
		p.sub = SUB_DIFF;
	else if (!strcmp(sub, "approve"))
		p.sub = SUB_APPROVE;
	else if (!strcmp(sub, "reset"))
		p.sub = SUB_RESET;
	else {
		fprintf(stderr, "sluice pins: unknown subcommand '%s' (list, diff, approve, reset)\n", sub);
		return 2;
	}
	/* reset must work on a corrupt file: it is the way out of one. */
	if (sl_pinning_open(cfg, section, p.sub == SUB_RESET, &p.pins, &err) < 0) {
		fprintf(stderr, "sluice: %s\n", err.msg);
		return 2;
	}
	if (target && parse_target(cfg, p.pins, target, &p.server, &p.tool) < 0) {
		sl_pinning_close(p.pins);
		return 2;
	}
	/* With sluice.shared.redis, what changes here reaches the running
	 * replicas through Redis as well as the pin file (shared/pins.h). */
	push = sl_shared_pins_push_start(sl_pinning_link(p.pins), &cfg->redis);
	if (p.sub == SUB_RESET) {
		size_t n = 0;
		if (sl_pinning_reset(p.pins, cfg, p.server, p.tool, &n, &err) < 0) {
			fprintf(stderr, "sluice pins: %s\n", err.msg);
			p.rc = 1;
		} else {
			printf("forgot %zu pin%s%s%s%s%s\n", n, n == 1 ? "" : "s", p.server ? " of " : "",
			       p.server ? p.server : "", p.tool ? "." : "", p.tool ? p.tool : "");
		}
		goto out;
	}
	/* The servers start in a generation with no stages: nothing here runs
	 * a call, and the pinning stage would open a second store. The cast
	 * only takes a reference (the count is not part of the config). */
	if (sl_gen_new(cfg, NULL, NULL, 0, &gen, &err) < 0) {
		fprintf(stderr, "sluice: %s\n", err.msg);
		p.rc = 2;
		goto out;
	}
	loop = uv_default_loop();
	p.gw = sl_gateway_new(loop, gen);
	sl_gen_unref(gen); /* the gateway holds its own reference */
	sl_gateway_start(p.gw, NULL);
	sl_gateway_when_settled(p.gw, on_settled, &p);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
out:
	if (sl_shared_pins_push_end(push, &shared, &err) < 0)
		fprintf(stderr, "sluice pins: saved in %s, but not shared with the other replicas: "
			"%s (a replica that reads this pin file carries it to the others once it "
			"reconnects to Redis)\n", sl_pinning_file(p.pins) ? sl_pinning_file(p.pins) :
			"memory", err.msg);
	else if (shared)
		printf("shared %zu pin change%s with the other replicas through %s\n", shared,
		       shared == 1 ? "" : "s", cfg->redis.url);
	free(p.server);
	sl_pinning_close(p.pins);
	return p.rc;
}
