/*
 * Fuzz target: the config loader (src/config/config.c) from bytes, with
 * ${VAR} expansion, the child environment it builds, and the config
 * sections of the stages that only parse (policy, redaction, cache, guard,
 * governor: no files, no sockets).
 *
 * Invariants checked:
 *   - a config that loads has valid server names (non-empty, at most
 *     SL_SERVER_NAME_MAX) and a NULL-terminated argv, and every string the
 *     loader expanded holds no "${" (the variables set here have no "$");
 *   - a child environment is NULL-terminated "NAME=value" strings;
 *   - sl_config_expand of the whole input with a fake environment never
 *     leaves a "${" behind, and fails only with a message;
 *   - a failure always comes with a message.
 *
 * fuzz-flags: -max_len=16384 -dict=tests/fuzz/config.dict
 */
#include "fuzz.h"

#include "config/config.h"
#include "core/log.h"
#include "pipeline/call.h"

#include <string.h>

extern const struct sl_stage sl_stage_policy;
extern const struct sl_stage sl_stage_redaction;
extern const struct sl_stage sl_stage_cache;
extern const struct sl_stage sl_stage_guard;
extern const struct sl_stage sl_stage_governor;

static const struct sl_stage *const parsing_stages[] = {
	&sl_stage_policy, &sl_stage_redaction, &sl_stage_cache, &sl_stage_guard,
	&sl_stage_governor,
};

/* Variables named with an 'x' are unset; the rest expand to [length of
 * the name] (never the name: it may hold "${"). */
static char fake_val[32];
static const char *fake_getenv(const char *name)
{
	if (strchr(name, 'x'))
		return NULL;
	snprintf(fake_val, sizeof(fake_val), "[%zu]", strlen(name));
	return fake_val;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	setenv("FUZZ_TOKEN", "t0ken", 1);
	setenv("FUZZ_EMPTY", "", 1);
	setenv("HOME", "/nonexistent", 1);
	sl_log_set_level(SL_LOG_ERROR);
	return 0;
}

static void check_env(const struct sl_server_config *s)
{
	static char *const envp[] = { "PATH=/usr/bin", "HOME=/h", "SECRET=s", "LANG=C", "odd",
				      NULL };
	char **env = sl_config_child_env(s, envp);
	for (char **e = env; *e; e++)
		ASSERT(strchr(*e, '=') && *e[0] != '=');
	sl_config_env_free(env);
}

static void check_config(const struct sl_config *c)
{
	for (size_t i = 0; i < c->nservers; i++) {
		const struct sl_server_config *s = &c->servers[i];
		ASSERT(s->name && s->name[0] && strlen(s->name) <= SL_SERVER_NAME_MAX);
		if (s->error)
			continue;
		ASSERT(s->command || s->nargs == 0);
		for (size_t a = 0; a < s->nargs; a++)
			ASSERT(s->args[a] && !strstr(s->args[a], "${"));
		ASSERT(!s->args || !s->args[s->nargs]);
		for (size_t k = 0; k < s->nenv; k++)
			ASSERT(!strstr(s->env[k].value, "${"));
		check_env(s);
	}
	if (c->http.bearer_token)
		ASSERT(!strstr(c->http.bearer_token, "${"));
	for (size_t i = 0; i < SL_COUNT(parsing_stages); i++) {
		const struct sl_stage *st = parsing_stages[i];
		yyjson_val *sec = c->sluice ? yyjson_obj_get(c->sluice, st->name) : NULL;
		struct sl_err e = { { 0 } };
		void *state = NULL;
		if (st->init(c, NULL, sec, &state, &e) < 0)
			ASSERT(e.msg[0] && !state);
		else if (state && st->fini)
			st->fini(state);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_config *c = NULL;
	struct sl_err e = { { 0 } };
	char *text = sl_strndup((const char *)data, size), *x;

	if (sl_config_parse("fuzz.json", (const char *)data, size, &c, &e) == SL_OK) {
		ASSERT(c);
		check_config(c);
		sl_config_unref(c);
	} else {
		ASSERT(e.msg[0]);
	}

	e.msg[0] = '\0';
	x = sl_config_expand(text, fake_getenv, &e);
	if (x)
		ASSERT(!strstr(x, "${"));
	else
		ASSERT(e.msg[0]);
	free(x);
	free(text);
	return 0;
}
