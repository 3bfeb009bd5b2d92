/* Unit tests of the stage table's config sections (src/pipeline/stages.c):
 * every stage's sluice.<name> is a key table (config/conf.h) that its init
 * applies, with messages that name the key. */
#include "unit.h"

#include "config/conf.h"
#include "config/config.h"
#include "pipeline/call.h"

#include <stdio.h>
#include <stdlib.h>

static const struct sl_stage *stage(const char *name)
{
	for (size_t i = 0; i < sl_nstages; i++)
		if (strcmp(sl_stages[i]->name, name) == 0)
			return sl_stages[i];
	return NULL;
}

/* Runs the stage's init on json; returns its result, the message in err. */
static int init_with(const char *name, const char *json, void **state, struct sl_err *err)
{
	const struct sl_stage *st = stage(name);
	yyjson_doc *doc = yyjson_read(json, strlen(json), 0);
	int rc;

	*state = NULL;
	err->msg[0] = '\0';
	rc = st->init(NULL, NULL, yyjson_doc_get_root(doc), state, err);
	yyjson_doc_free(doc);
	return rc;
}

TEST(stages_conf_sections_name_their_stage)
{
	for (size_t i = 0; i < sl_nstages; i++) {
		const struct sl_stage *st = sl_stages[i];
		char path[64];
		if (!st->conf) {
			/* The one stage without settings, and tokenize's response
			 * half (its settings are the request half's). */
			CHECK(strcmp(st->name, "discovery") == 0 || st == &sl_stage_tokenize_result);
			continue;
		}
		snprintf(path, sizeof(path), "sluice.%s", st->name);
		CHECK_STR(st->conf->path, path);
		CHECK(st->init != NULL);
		/* Every stage refuses an unknown key, but guard, which logs it. */
		CHECK((st->conf->flags & SL_CONF_STRICT) != 0 || strcmp(st->name, "guard") == 0);
		for (size_t k = 0; k < st->conf->nkeys; k++)
			CHECK(st->conf->keys[k].doc != NULL);
	}
}

TEST(stages_conf_reference_lists_every_section)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	sl_config_reference(f);
	fclose(f);
	for (size_t i = 0; i < sl_nstages; i++) {
		char heading[80];
		if (!sl_stages[i]->conf)
			continue;
		snprintf(heading, sizeof(heading), "## `sluice.%s`\n", sl_stages[i]->name);
		CHECK(strstr(text, heading) != NULL);
	}
	CHECK(strstr(text, "## `sluice.policy.rules[]`\n") != NULL);
	free(text);
}

TEST(stages_conf_messages_name_the_key)
{
	static const struct {
		const char *stage, *json, *want;
	} cases[] = {
		{ "governor", "{\"maxTokens\":50}",
		  "sluice.governor.maxTokens: must be a whole number from 100 to 1000000" },
		{ "governor", "{\"maxTokns\":5000}",
		  "sluice.governor: unknown key \"maxTokns\" (known: enabled, maxTokens, ttlMs, "
		  "maxStoreBytes, maxSharedBytes)" },
		{ "governor", "{\"enabled\":true,\"enabled\":false}",
		  "sluice.governor: \"enabled\" is given twice" },
		{ "governor", "[]", "sluice.governor: must be an object" },
		{ "cache", "{\"ttlMs\":0}", "sluice.cache.ttlMs: must be a whole number from 1 to 604800000" },
		{ "cache", "{\"tools\":[\"a.*\",\"\"]}",
		  "sluice.cache.tools: every entry must be a non-empty \"server.tool\" glob" },
		{ "cache", "{\"tools\":\"a.*\"}", "sluice.cache.tools: must be an array of \"server.tool\" globs" },
		{ "audit", "{\"file\":\"\"}", "sluice.audit.file: must be a non-empty path" },
		{ "audit", "{\"enabled\":1}", "sluice.audit.enabled: must be true or false" },
		{ "guard", "{\"threshold\":0}", "sluice.guard.threshold: must be a number from 1 to 100000" },
		{ "guard", "{\"action\":\"block\"}", "sluice.guard.action: must be \"warn\" or \"withhold\"" },
		{ "guard", "{\"patterns\":[{\"regex\":\"x\",\"weight\":2000}]}",
		  "sluice.guard.patterns[0].weight: must be a number from -1000 to 1000" },
		{ "pinning", "{\"new\":\"maybe\"}", "sluice.pinning.new: must be \"block\", \"warn\" or \"off\"" },
		{ "pinning", "{\"stateDir\":\"${SLUICE_TEST_UNSET_VAR}/p\"}",
		  "sluice.pinning.stateDir: environment variable SLUICE_TEST_UNSET_VAR is not set" },
		{ "redaction", "{\"maxDepth\":0}", "sluice.redaction.maxDepth: must be a whole number from 1 to 1000" },
		{ "redaction", "{\"disable\":[\"jwt\",\"nope\"]}",
		  "sluice.redaction.disable[1]: not a built-in pattern kind (see docs/stages/redaction.md)" },
		{ "telemetry", "{\"endpoint\":\"ftp://x\"}",
		  "sluice.telemetry.endpoint: must be an http:// or https:// URL (the OTLP/HTTP base, e.g. "
		  "http://127.0.0.1:4318)" },
		{ "telemetry", "{\"intervalMs\":5}", "sluice.telemetry.intervalMs: must be a whole number from 10 to 600000" },
		{ "policy", "{\"rules\":[{\"match\":\"a.*\"}]}", "sluice.policy.rules[0].action: missing" },
		{ "policy", "{\"rules\":[{\"action\":\"deny\",\"match\":\"a\",\"match\":\"b\"}]}",
		  "sluice.policy.rules[0]: \"match\" is given twice" },
	};
	for (size_t i = 0; i < SL_COUNT(cases); i++) {
		struct sl_err err;
		void *state;
		CHECK_INT(init_with(cases[i].stage, cases[i].json, &state, &err), SL_ERR_INVALID);
		CHECK(state == NULL);
		if (strcmp(err.msg, cases[i].want) != 0) {
			printf("  %s: got \"%s\"\n  not \"%s\"\n", cases[i].stage, err.msg, cases[i].want);
			CHECK(0);
		}
	}
}

/* What every stage accepts: an empty section, and guard's unknown keys. */
TEST(stages_conf_accepted)
{
	static const struct {
		const char *stage, *json;
	} cases[] = {
		{ "governor", "{}" },
		{ "governor", "{\"enabled\":false,\"maxTokens\":100,\"ttlMs\":1000,\"maxStoreBytes\":1048576}" },
		{ "cache", "{\"tools\":[\"a.*\"],\"readOnly\":true,\"ttlMs\":604800000,\"maxBytes\":1024}" },
		{ "audit", "{\"enabled\":false,\"file\":\"/nonexistent/a.jsonl\"}" },
		{ "guard", "{\"threshold\":2.5,\"action\":\"withhold\",\"scanDescriptions\":false,"
			   "\"patterns\":[{\"regex\":\"x+\",\"weight\":-3,\"name\":\"x\"}],\"unknown\":1}" },
		{ "redaction", "{\"enabled\":false,\"patterns\":[{\"bad\":1}],\"maxDepth\":1000}" },
		{ "telemetry", "{\"intervalMs\":10,\"serviceName\":\"s\"}" },
		{ "policy", "{\"default\":\"confirm\",\"confirmTimeoutMs\":86400000,"
			    "\"rules\":[{\"annotation\":\"readOnlyHint\",\"action\":\"allow\"}]}" },
	};
	for (size_t i = 0; i < SL_COUNT(cases); i++) {
		const struct sl_stage *st = stage(cases[i].stage);
		struct sl_err err;
		void *state;
		int rc = init_with(cases[i].stage, cases[i].json, &state, &err);
		if (rc != SL_OK)
			printf("  %s %s: %s\n", cases[i].stage, cases[i].json, err.msg);
		CHECK_INT(rc, SL_OK);
		if (state && st->fini)
			st->fini(state);
	}
}
