/*
 * Claims to a caller: see claims.h. Every value that becomes part of the
 * caller is checked here (type, NUL byte, length, count), since a token's
 * claims are written by whoever holds the issuer's key, and a login page
 * may let users choose some of them.
 */
#include "auth/claims.h"

#include <stdio.h>
#include <string.h>

static const char *const default_group_claims[] = { "groups", "roles", NULL };

/* A claim's string s may go into a caller: no NUL byte (it would cut a
 * name short). */
static int no_nul(const char *claim, yyjson_val *s, struct sl_err *err)
{
	if (!memchr(yyjson_get_str(s), '\0', yyjson_get_len(s)))
		return SL_OK;
	sl_err_set(err, "claim \"%.100s\": a value has a NUL byte", claim);
	return SL_ERR_INVALID;
}

/* A name of len bytes from claim is not too long. */
static int short_enough(const char *claim, size_t len, struct sl_err *err)
{
	if (len <= SL_CLAIMS_NAME_MAX)
		return SL_OK;
	sl_err_set(err, "claim \"%.100s\": a value is longer than %d bytes", claim,
		   SL_CLAIMS_NAME_MAX);
	return SL_ERR_INVALID;
}

/* The string claim key of claims, or NULL when absent; SL_ERR_INVALID for
 * another type. */
static int string_claim(yyjson_val *claims, const char *key, const char **out,
			struct sl_err *err)
{
	yyjson_val *v = yyjson_obj_get(claims, key);

	*out = NULL;
	if (!v)
		return SL_OK;
	if (!yyjson_is_str(v)) {
		sl_err_set(err, "claim \"%s\": must be a string", key);
		return SL_ERR_INVALID;
	}
	if (no_nul(key, v, err) < 0 || short_enough(key, yyjson_get_len(v), err) < 0)
		return SL_ERR_INVALID;
	*out = yyjson_get_str(v);
	return SL_OK;
}

/* The claim named by a dotted path ("realm_access.roles"), or NULL. */
static yyjson_val *claim_at(yyjson_val *claims, const char *path)
{
	yyjson_val *v = claims;
	const char *p = path, *dot;

	while (v && (dot = strchr(p, '.'))) {
		v = yyjson_is_obj(v) ? yyjson_obj_getn(v, p, (size_t)(dot - p)) : NULL;
		p = dot + 1;
	}
	return yyjson_is_obj(v) ? yyjson_obj_get(v, p) : NULL;
}

typedef void add_fn(struct sl_caller *c, const char *name);

/* Adds the words of a space-separated string (split) or the string itself. */
static int add_string(struct sl_caller *c, const char *claim, yyjson_val *s, bool split,
		      add_fn *add, size_t *count, struct sl_err *err)
{
	const char *p = yyjson_get_str(s);
	char word[SL_CLAIMS_NAME_MAX + 1];

	if (no_nul(claim, s, err) < 0)
		return SL_ERR_INVALID;
	while (*p) {
		size_t n = split ? strcspn(p, " ") : strlen(p);
		if (short_enough(claim, n, err) < 0)
			return SL_ERR_INVALID;
		if (n && ++*count > SL_CLAIMS_NAMES_MAX) {
			sl_err_set(err, "claim \"%.100s\": more than %d values", claim,
				   SL_CLAIMS_NAMES_MAX);
			return SL_ERR_INVALID;
		}
		if (n) {
			memcpy(word, p, n);
			word[n] = '\0';
			add(c, word);
		}
		p += n;
		while (*p == ' ')
			p++;
	}
	return SL_OK;
}

/* A claim that is a string (split on spaces when split) or an array of
 * strings: each value goes to add. */
static int add_values(struct sl_caller *c, const char *claim, yyjson_val *v, bool split,
		      add_fn *add, size_t *count, struct sl_err *err)
{
	yyjson_val *it;
	size_t i, n;

	if (!v)
		return SL_OK;
	if (yyjson_is_str(v))
		return add_string(c, claim, v, split, add, count, err);
	if (!yyjson_is_arr(v)) {
		sl_err_set(err, "claim \"%.100s\": must be a string or an array of strings", claim);
		return SL_ERR_INVALID;
	}
	yyjson_arr_foreach(v, i, n, it) {
		if (!yyjson_is_str(it)) {
			sl_err_set(err, "claim \"%.100s\": must be a string or an array of strings",
				   claim);
			return SL_ERR_INVALID;
		}
		if (add_string(c, claim, it, false, add, count, err) < 0)
			return SL_ERR_INVALID;
	}
	return SL_OK;
}

int sl_caller_from_claims(const char *method, yyjson_val *claims,
			  const char *const *group_claims, struct sl_caller **out,
			  struct sl_err *err)
{
	struct sl_caller *c = NULL;
	const char *sub, *iss, *client, *azp;
	yyjson_val *exp;
	size_t groups = 0, scopes = 0;
	int rc;

	if (!yyjson_is_obj(claims)) {
		sl_err_set(err, "the claims must be a JSON object");
		return SL_ERR_INVALID;
	}
	if ((rc = string_claim(claims, "sub", &sub, err)) < 0 ||
	    (rc = string_claim(claims, "iss", &iss, err)) < 0 ||
	    (rc = string_claim(claims, "client_id", &client, err)) < 0 ||
	    (rc = string_claim(claims, "azp", &azp, err)) < 0)
		goto out;
	c = sl_caller_new(method);
	sl_caller_set_subject(c, iss, sub);
	if (client || azp)
		c->client_id = sl_strdup(client ? client : azp);
	if ((rc = add_values(c, "scope", yyjson_obj_get(claims, "scope"), true,
			     sl_caller_add_scope, &scopes, err)) < 0 ||
	    (rc = add_values(c, "scp", yyjson_obj_get(claims, "scp"), true, sl_caller_add_scope,
			     &scopes, err)) < 0)
		goto out;
	for (const char *const *g = group_claims ? group_claims : default_group_claims; *g; g++)
		if ((rc = add_values(c, *g, claim_at(claims, *g), false, sl_caller_add_group,
				     &groups, err)) < 0)
			goto out;
	exp = yyjson_obj_get(claims, "exp");
	if (exp && (!yyjson_is_num(exp) || yyjson_get_num(exp) < 0)) {
		sl_err_set(err, "claim \"exp\": must be a non-negative number of seconds");
		rc = SL_ERR_INVALID;
		goto out;
	}
	/* Beyond the year 9999 is "never", not an overflow. */
	if (exp && yyjson_get_num(exp) < 253402300800.0)
		c->expires_ms = (uint64_t)(yyjson_get_num(exp) * 1000.0);
	rc = SL_OK;
out:
	if (rc < 0) {
		sl_caller_unref(c);
		return rc;
	}
	*out = c;
	return SL_OK;
}
