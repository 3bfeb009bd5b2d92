/*
 * The Bearer challenge of a WWW-Authenticate header (RFC 7235 2.1, RFC
 * 6750 3, RFC 9728 5.1): see oauth.h. The header comes from a server sluice
 * calls, so it is read as hostile: bounded, every value checked, nothing
 * assumed about order or case.
 *
 *   challenge  = scheme [ 1*SP ( token68 / #auth-param ) ]
 *   auth-param = token BWS "=" BWS ( token / quoted-string )
 * Several challenges may share one header, separated by commas: a token
 * not followed by "=" starts the next one.
 */
#include "oauth/oauth.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

struct reader {
	const char *p, *end;
};

static void skip_ws(struct reader *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t'))
		r->p++;
}

/* Skips spaces and commas (empty list elements are allowed). */
static void skip_sep(struct reader *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == ','))
		r->p++;
}

/* After a scheme: a token68 credential (Negotiate's, Basic's), if that is
 * what follows, is skipped; auth-params are left to read. */
static void skip_token68(struct reader *r)
{
	const char *save;

	skip_ws(r);
	save = r->p;
	while (r->p < r->end && (tchar(*r->p) || *r->p == '/'))
		r->p++;
	if (r->p == save)
		return;
	while (r->p < r->end && *r->p == '=')
		r->p++;
	skip_ws(r);
	if (r->p < r->end && *r->p != ',')
		r->p = save; /* "name=value": a parameter */
}

static size_t token(struct reader *r, const char **start)
{
	*start = r->p;
	while (r->p < r->end && tchar(*r->p))
		r->p++;
	return (size_t)(r->p - *start);
}

/* A token or a quoted-string (its escapes undone); NULL if malformed or
 * over SL_OAUTH_VALUE_MAX. Control characters are refused in either. */
static char *value(struct reader *r)
{
	const char *s;
	size_t n;
	char *out, *o;

	if (r->p < r->end && *r->p != '"') {
		/* token, or token68 characters some servers put unquoted */
		s = r->p;
		while (r->p < r->end && (tchar(*r->p) || *r->p == '/' || *r->p == '=' ||
					 *r->p == ':' || *r->p == '?' || *r->p == '@'))
			r->p++;
		n = (size_t)(r->p - s);
		return n && n <= SL_OAUTH_VALUE_MAX ? sl_strndup(s, n) : NULL;
	}
	if (r->p >= r->end)
		return NULL;
	r->p++;
	out = o = sl_alloc(SL_OAUTH_VALUE_MAX + 1);
	while (r->p < r->end && *r->p != '"') {
		char c = *r->p++;
		if (c == '\\') {
			if (r->p >= r->end)
				break;
			c = *r->p++;
		}
		if ((unsigned char)c < 0x20 || c == 0x7f || o - out >= SL_OAUTH_VALUE_MAX) {
			free(out);
			return NULL;
		}
		*o++ = c;
	}
	if (r->p >= r->end) { /* no closing quote */
		free(out);
		return NULL;
	}
	r->p++;
	*o = '\0';
	return out;
}

static char **field(struct sl_oauth_challenge *c, const char *name, size_t n)
{
	static const struct { const char *name; size_t off; } known[] = {
		{ "resource_metadata", offsetof(struct sl_oauth_challenge, resource_metadata) },
		{ "scope", offsetof(struct sl_oauth_challenge, scope) },
		{ "error", offsetof(struct sl_oauth_challenge, error) },
		{ "error_description", offsetof(struct sl_oauth_challenge, error_description) },
	};
	for (size_t i = 0; i < SL_COUNT(known); i++)
		if (strlen(known[i].name) == n && strncasecmp(name, known[i].name, n) == 0)
			return (char **)((char *)c + known[i].off);
	return NULL;
}

int sl_oauth_challenge_parse(const char *h, size_t len, struct sl_oauth_challenge *out)
{
	struct reader r = { h, h + len };
	struct sl_oauth_challenge c = { 0 };
	bool bearer = false, found = false;

	if (len > 4 * SL_OAUTH_VALUE_MAX)
		return SL_ERR_INVALID;
	while (skip_sep(&r), r.p < r.end) {
		const char *name, *after;
		size_t n = token(&r, &name);
		char *v, **slot;

		if (!n)
			goto bad;
		after = r.p;
		skip_ws(&r);
		if (r.p >= r.end || *r.p != '=') {
			/* A scheme: the next challenge begins. */
			if (found)
				break; /* the Bearer one is over */
			r.p = after;
			bearer = n == 6 && strncasecmp(name, "Bearer", 6) == 0;
			found = bearer;
			skip_token68(&r);
			continue;
		}
		r.p++; /* '=' */
		skip_ws(&r);
		if (!(v = value(&r)))
			goto bad;
		skip_ws(&r);
		if (r.p < r.end && *r.p != ',') {
			free(v);
			goto bad;
		}
		if (!bearer || !*v || !(slot = field(&c, name, n)) || *slot) {
			/* another scheme's, empty (as good as absent), unknown, or
			 * given twice: the first counts */
			free(v);
			continue;
		}
		*slot = v;
	}
	if (!found) {
		sl_oauth_challenge_dispose(&c);
		return SL_ERR_NOT_FOUND;
	}
	*out = c;
	return SL_OK;
bad:
	sl_oauth_challenge_dispose(&c);
	return SL_ERR_INVALID;
}

void sl_oauth_challenge_dispose(struct sl_oauth_challenge *c)
{
	free(c->resource_metadata);
	free(c->scope);
	free(c->error);
	free(c->error_description);
	memset(c, 0, sizeof(*c));
}
