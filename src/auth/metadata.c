/*
 * Protected Resource Metadata: see metadata.h.
 */
#include "auth/metadata.h"
#include "auth/jwks.h"

#include <stdlib.h>
#include <string.h>
#include <yyjson.h>

#define PRM_SUFFIX "oauth-protected-resource"

char *sl_prm_url(const char *resource)
{
	return sl_well_known_url(resource, PRM_SUFFIX);
}

bool sl_prm_path(const char *resource, const char *path)
{
	static const char bare[] = "/.well-known/" PRM_SUFFIX;
	char *url = sl_prm_url(resource);
	const char *host = strstr(url, "://") + 3;
	bool hit = !strcmp(path, bare) || !strcmp(path, host + strcspn(host, "/"));

	free(url);
	return hit;
}

static void add_strings(yyjson_mut_doc *d, yyjson_mut_val *o, const char *key, char *const *l)
{
	yyjson_mut_val *a = yyjson_mut_obj_add_arr(d, o, key);
	for (size_t i = 0; l && l[i]; i++)
		yyjson_mut_arr_add_str(d, a, l[i]);
}

char *sl_prm_document(const struct sl_auth_config *a, size_t *len)
{
	static char *const header_only[] = { "header", NULL };
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o = yyjson_mut_obj(d);
	char *out;

	yyjson_mut_doc_set_root(d, o);
	yyjson_mut_obj_add_str(d, o, "resource", a->resource);
	add_strings(d, o, "authorization_servers", a->authorization_servers);
	if (a->scopes_supported && a->scopes_supported[0])
		add_strings(d, o, "scopes_supported", a->scopes_supported);
	/* MCP: the token goes in the Authorization header, never the URI. */
	add_strings(d, o, "bearer_methods_supported", header_only);
	yyjson_mut_obj_add_str(d, o, "resource_name", a->resource_name ? a->resource_name : "sluice");
	out = yyjson_mut_write(d, 0, len);
	yyjson_mut_doc_free(d);
	if (!out)
		abort();
	return out;
}
