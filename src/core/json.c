/* Typed access and serialisation helpers over yyjson. */
#include "core/json.h"

#include <string.h>

yyjson_val *sl_json_obj(yyjson_val *o, const char *key)
{
	yyjson_val *v = yyjson_obj_get(o, key);
	return yyjson_is_obj(v) ? v : NULL;
}

yyjson_val *sl_json_arr(yyjson_val *o, const char *key)
{
	yyjson_val *v = yyjson_obj_get(o, key);
	return yyjson_is_arr(v) ? v : NULL;
}

const char *sl_json_str(yyjson_val *o, const char *key)
{
	yyjson_val *v = yyjson_obj_get(o, key);
	return yyjson_is_str(v) ? yyjson_get_str(v) : NULL;
}

bool sl_json_int(yyjson_val *o, const char *key, int64_t *out)
{
	yyjson_val *v = yyjson_obj_get(o, key);
	if (yyjson_is_sint(v) || (yyjson_is_uint(v) && yyjson_get_uint(v) <= INT64_MAX)) {
		*out = yyjson_get_sint(v);
		return true;
	}
	return false;
}

bool sl_json_true(yyjson_val *o, const char *key)
{
	return yyjson_is_true(yyjson_obj_get(o, key));
}

static char *with_newline(char *s, size_t *len)
{
	size_t n;
	if (!s)
		sl_oom();
	n = strlen(s);
	s = sl_realloc(s, n + 2);
	s[n] = '\n';
	s[n + 1] = '\0';
	if (len)
		*len = n + 1;
	return s;
}

char *sl_json_write_line(yyjson_mut_doc *d, size_t *len)
{
	return with_newline(yyjson_mut_write(d, 0, NULL), len);
}

char *sl_json_write_val(yyjson_val *v, size_t *len)
{
	char *s = yyjson_val_write(v, 0, len);
	if (!s)
		sl_oom();
	return s;
}

char *sl_json_write_mut_val(yyjson_mut_val *v, size_t *len)
{
	char *s = yyjson_mut_val_write(v, 0, len);
	if (!s)
		sl_oom();
	return s;
}

void sl_json_position(const char *s, size_t n, size_t pos, size_t *line, size_t *col)
{
	size_t l = 1, c = 1;
	for (size_t i = 0; i < pos && i < n; i++) {
		if (s[i] == '\n') {
			l++;
			c = 1;
		} else if (((unsigned char)s[i] & 0xC0) != 0x80) {
			c++;
		}
	}
	*line = l;
	*col = c;
}
