/*
 * sluice policy check server.tool: prints what the policy decides for a
 * tool and which rule decided it, without starting any server. Annotation
 * rules need the tool's live definition, so they are listed as caveats
 * ("if the tool has destructiveHint") instead of being evaluated.
 */
#include "cli/cli.h"
#include "pipeline/gen.h"
#include "stages/policy.h"

#include <stdio.h>
#include <string.h>

int sl_cli_policy(struct sl_gen *gen, int argc, const char *const *argv)
{
	const struct sl_config *cfg = gen->cfg;
	const struct sl_policy *p = sl_policy_current(sl_gen_state(gen, &sl_stage_policy));
	const char *name, *dot;
	char server[SL_SERVER_NAME_MAX + 1], text[300];
	const char *tool;
	size_t sl = 0;
	int rule;
	enum sl_policy_action a;
	bool known = false;

	if (argc != 2 || strcmp(argv[0], "check") != 0) {
		fprintf(stderr, "sluice: usage: sluice policy check SERVER.TOOL [--config FILE]\n");
		return 2;
	}
	name = argv[1];
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
	memcpy(server, name, sl);
	server[sl] = '\0';
	tool = name + sl + 1;

	a = sl_policy_decide(p, server, tool, NULL, true, &rule);
	if (rule >= 0) {
		sl_policy_rule_text(&p->rules[rule], text, sizeof(text));
		printf("%s.%s: %s (rule %d: %s)\n", server, tool, sl_policy_action_name(a), rule + 1, text);
	} else {
		printf("%s.%s: %s (default)\n", server, tool, sl_policy_action_name(a));
	}
	/* Annotation rules before the deciding one would win if the tool has the hint. */
	for (size_t i = 0; i < p->nrules && (rule < 0 || i < (size_t)rule); i++) {
		const struct sl_policy_rule *r = &p->rules[i];
		if (!r->annotation || (r->match && !sl_policy_glob(r->match, name)))
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
	return 0;
}
