/*
 * sluice policy check server.tool [--as SUBJECT] [--groups a,b] [--scopes x,y]
 *   [--client ID] [--profile NAME] [--claims JSON]: prints what the policy
 * decides for a tool called by that identity and which rule decided it,
 * without starting any server. Annotation rules need the tool's live
 * definition, so they are listed as caveats ("if the tool has
 * destructiveHint") instead of being evaluated.
 *
 * The identity: --claims reads a token's claims as a JWT's would be read
 * (auth/claims.h); the other options then set the subject, client and
 * profile, and add groups and scopes. Without any, the caller is anonymous,
 * as over stdio.
 */
#include "auth/claims.h"
#include "cli/cli.h"
#include "core/glob.h"
#include "pipeline/gen.h"
#include "stages/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"sluice: usage: sluice policy check SERVER.TOOL [--as SUBJECT] [--groups A,B] "
	"[--scopes X,Y] [--client ID] [--profile NAME] [--claims JSON] [--config FILE]\n";

/* The identity options, as given. */
struct as {
	const char *subject, *groups, *scopes, *client, *profile, *claims;
};

/* Where the value of the option arg goes, or NULL when arg is none. */
static const char **option(struct as *o, const char *arg)
{
	if (!strcmp(arg, "--as"))
		return &o->subject;
	if (!strcmp(arg, "--groups"))
		return &o->groups;
	if (!strcmp(arg, "--scopes"))
		return &o->scopes;
	if (!strcmp(arg, "--client"))
		return &o->client;
	if (!strcmp(arg, "--profile"))
		return &o->profile;
	if (!strcmp(arg, "--claims"))
		return &o->claims;
	return NULL;
}

/* Adds each comma-separated name of list (empty ones skipped). */
static void add_each(struct sl_caller *c, const char *list,
		     void (*add)(struct sl_caller *, const char *))
{
	char *copy = sl_strdup(list), *save = NULL;
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save))
		add(c, w);
	free(copy);
}

/* The caller the options describe, or NULL (anonymous) when none is given.
 * Returns 0, or 2 after saying what is wrong. */
static int make_caller(const struct as *o, struct sl_caller **out)
{
	struct sl_caller *c = NULL;
	struct sl_err err;

	*out = NULL;
	if (o->claims) {
		yyjson_read_err rerr;
		yyjson_doc *d = yyjson_read_opts((char *)o->claims, strlen(o->claims), 0, NULL, &rerr);
		int rc;
		if (!d) {
			fprintf(stderr, "sluice: --claims: not JSON: %s at byte %zu\n", rerr.msg, rerr.pos);
			return 2;
		}
		rc = sl_caller_from_claims("cli", yyjson_doc_get_root(d), NULL, &c, &err);
		yyjson_doc_free(d);
		if (rc < 0) {
			fprintf(stderr, "sluice: --claims: %s\n", err.msg);
			return 2;
		}
	} else if (o->subject || o->groups || o->scopes || o->client || o->profile) {
		c = sl_caller_new("cli");
	} else {
		return 0;
	}
	if (o->subject)
		sl_caller_set_subject(c, c->issuer, o->subject);
	if (o->groups)
		add_each(c, o->groups, sl_caller_add_group);
	if (o->scopes)
		add_each(c, o->scopes, sl_caller_add_scope);
	if (o->client) {
		free(c->client_id);
		c->client_id = sl_strdup(o->client);
	}
	/* profile:default is the /mcp route, where a caller has no profile. */
	if (o->profile && strcmp(o->profile, "default") != 0)
		sl_caller_set_profile(c, o->profile);
	*out = c;
	return 0;
}

static void print_list(const char *label, char *const *l)
{
	printf("; %s ", label);
	if (!l[0])
		printf("-");
	for (size_t i = 0; l[i]; i++)
		printf("%s%s", i ? "," : "", l[i]);
}

/* "  as alice (groups sre; scopes -; client -; profile default)" */
static void print_caller(const struct sl_caller *c)
{
	printf("  as %s (", c->subject ? c->subject : "an anonymous caller");
	printf("issuer %s", c->issuer ? c->issuer : "-");
	print_list("groups", c->groups);
	print_list("scopes", c->scopes);
	printf("; client %s; profile %s)\n", c->client_id ? c->client_id : "-",
	       c->profile ? c->profile : "default");
}

static bool has_who_rules(const struct sl_policy *p)
{
	for (size_t i = 0; i < p->nrules; i++)
		if (p->rules[i].who.n || p->rules[i].not_who.n)
			return true;
	return false;
}

int sl_cli_policy(struct sl_gen *gen, int argc, const char *const *argv)
{
	const struct sl_config *cfg = gen->cfg;
	const struct sl_policy *p = sl_policy_current(sl_gen_state(gen, &sl_stage_policy));
	const char *name = NULL, *dot;
	char server[SL_SERVER_NAME_MAX + 1], text[500];
	const char *tool;
	size_t sl = 0;
	int rule, rc;
	enum sl_policy_action a;
	bool known = false;
	struct as o = { 0 };
	struct sl_caller *who;

	if (argc < 1 || strcmp(argv[0], "check") != 0) {
		fputs(usage, stderr);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		const char **slot = option(&o, argv[i]);
		if (slot && i + 1 < argc) {
			*slot = argv[++i];
		} else if (!slot && !name && argv[i][0] != '-') {
			name = argv[i];
		} else {
			fprintf(stderr, "sluice: policy check: unknown or incomplete argument '%s'\n%s",
				argv[i], usage);
			return 2;
		}
	}
	if (!name) {
		fputs(usage, stderr);
		return 2;
	}
	/* The longest configured server name followed by '.', so that a server
	 * whose name has a dot still splits right; else the first dot. */
	for (size_t i = 0; i < cfg->nservers; i++) {
		size_t n = strlen(cfg->servers[i].name);
		if (n > sl && strncmp(name, cfg->servers[i].name, n) == 0 && name[n] == '.')
			sl = n;
	}
	if (!sl && (dot = strchr(name, '.')))
		sl = (size_t)(dot - name);
	if (!sl || !name[sl] || !name[sl + 1] || sl > SL_SERVER_NAME_MAX) {
		fprintf(stderr, "sluice: '%s' is not SERVER.TOOL\n", name);
		return 2;
	}
	if ((rc = make_caller(&o, &who)) != 0)
		return rc;
	memcpy(server, name, sl);
	server[sl] = '\0';
	tool = name + sl + 1;

	a = sl_policy_decide(p, who, server, tool, NULL, true, &rule);
	if (rule >= 0) {
		sl_policy_rule_text(&p->rules[rule], text, sizeof(text));
		printf("%s.%s: %s (rule %d: %s)\n", server, tool, sl_policy_action_name(a), rule + 1, text);
	} else {
		printf("%s.%s: %s (default)\n", server, tool, sl_policy_action_name(a));
	}
	if (who)
		print_caller(who);
	else if (has_who_rules(p))
		printf("  as an anonymous caller; --as SUBJECT (and --groups, --scopes, --client, "
		       "--profile, --claims) checks another\n");
	/* Annotation rules for this caller before the deciding one would win
	 * if the tool has the hint. */
	for (size_t i = 0; i < p->nrules && (rule < 0 || i < (size_t)rule); i++) {
		const struct sl_policy_rule *r = &p->rules[i];
		if (!r->annotation || (r->match && !sl_glob_match(r->match, name)) ||
		    !sl_policy_rule_for(r, who))
			continue;
		sl_policy_rule_text(r, text, sizeof(text));
		printf("  but %s if the tool has %s (rule %zu: %s); annotations come from the live "
		       "server and are not read here\n", sl_policy_action_name(r->action),
		       r->annotation, i + 1, text);
	}
	for (size_t i = 0; i < cfg->nservers; i++)
		known |= strcmp(cfg->servers[i].name, server) == 0;
	if (!known)
		printf("  note: the config has no server '%s'\n", server);
	sl_caller_unref(who);
	return 0;
}
