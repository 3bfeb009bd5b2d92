/* Unit-test fixtures; see fixture.h. */
#include "fixture.h"
#include "unit.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *t_logged(void (*fn)(void))
{
	char path[] = "/tmp/sluice-unit-log-XXXXXX";
	int fd = mkstemp(path);
	char *text = calloc(1, 1 << 16);
	FILE *f;

	CHECK(fd >= 0);
	close(fd);
	CHECK_INT(sl_log_init(SL_LOG_INFO, path), 0);
	fn();
	CHECK_INT(sl_log_init(SL_LOG_INFO, NULL), 0); /* back to stderr */
	if ((f = fopen(path, "r"))) {
		(void)!fread(text, 1, (1 << 16) - 1, f);
		fclose(f);
	}
	unlink(path);
	return text;
}

struct sl_gen *t_gen(const char *config_json, struct sl_err *err)
{
	struct sl_config *c;
	struct sl_gen *g = NULL;

	err->msg[0] = '\0';
	if (sl_config_parse("test.json", config_json, strlen(config_json), &c, err) != SL_OK)
		return NULL;
	if (sl_gen_new(c, NULL, sl_stages, sl_nstages, &g, err) != SL_OK)
		g = NULL;
	sl_config_unref(c);
	return g;
}

struct sl_gen *t_gen_sluice(const char *sluice_json, struct sl_err *err)
{
	char *text = sl_printf("{\"mcpServers\": {}, \"sluice\": %s}", sluice_json);
	struct sl_gen *g = t_gen(text, err);
	free(text);
	return g;
}

struct sl_gen *t_gen_bare(void)
{
	static struct sl_gen *bare;
	static const char empty[] = "{\"mcpServers\": {}}";
	struct sl_config *c;
	struct sl_err err;

	if (bare)
		return bare;
	if (sl_config_parse("bare.json", empty, sizeof(empty) - 1, &c, &err) != SL_OK ||
	    sl_gen_new(c, NULL, NULL, 0, &bare, &err) != SL_OK)
		abort();
	sl_config_unref(c);
	return bare;
}
