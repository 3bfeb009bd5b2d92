/*
 * Subject tokens held for token exchange (subject.h is the contract). A map
 * by user key for the lookup, and a list in the order tokens were noted
 * (oldest first) for the bound and the sweep.
 */
#include "oauth/subject.h"
#include "core/map.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct held {
	struct held *prev, *next;  /* by when noted: oldest first */
	char user[65];
	char *token;
	char *issuer;              /* who issued it (the caller's "iss") */
	uint64_t expires_ms;       /* wall clock; 0: the token names no expiry */
};

static struct {
	bool on;
	struct sl_map by_user;
	struct held *oldest, *newest;
	size_t n;
} subjects;

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool expired(const struct held *e, uint64_t now)
{
	return e->expires_ms && e->expires_ms <= now;
}

void sl_oauth_subject_free(char *token)
{
	if (!token)
		return;
	explicit_bzero(token, strlen(token));
	free(token);
}

static void unlink_held(struct held *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		subjects.oldest = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		subjects.newest = e->prev;
	e->prev = e->next = NULL;
}

static void append_held(struct held *e)
{
	e->prev = subjects.newest;
	if (subjects.newest)
		subjects.newest->next = e;
	else
		subjects.oldest = e;
	subjects.newest = e;
}

static void drop(struct held *e)
{
	unlink_held(e);
	sl_map_del(&subjects.by_user, e->user);
	subjects.n--;
	sl_oauth_subject_free(e->token);
	free(e->issuer);
	free(e);
}

void sl_oauth_subjects_configure(const struct sl_config *cfg)
{
	bool want = false;

	for (size_t i = 0; cfg && i < cfg->nservers; i++)
		want |= cfg->servers[i].oauth.token_exchange;
	if (want && !subjects.on)
		sl_map_init(&subjects.by_user);
	if (!want && subjects.on) {
		while (subjects.oldest)
			drop(subjects.oldest);
		sl_map_dispose(&subjects.by_user);
	}
	subjects.on = want;
}

void sl_oauth_subject_note(const struct sl_caller *who, const char *authorization)
{
	const char *token;
	char user[65];
	struct held *e;
	uint64_t now;

	if (!subjects.on || !who || !authorization || !who->subject || !who->issuer ||
	    (strcmp(who->method, "jwt") && strcmp(who->method, "introspection")) ||
	    strncasecmp(authorization, "Bearer ", 7) || !sl_caller_user_key(who, user))
		return;
	token = authorization + 7;
	token += strspn(token, " ");
	now = wall_ms();
	/* The sweep: expired tokens from the oldest end, a few per note. */
	for (int i = 0; i < 4 && subjects.oldest && expired(subjects.oldest, now); i++)
		drop(subjects.oldest);
	if ((e = sl_map_get(&subjects.by_user, user))) {
		if (strcmp(e->token, token)) {
			sl_oauth_subject_free(e->token);
			e->token = sl_strdup(token);
		}
		free(e->issuer);
		e->issuer = sl_strdup(who->issuer);
		e->expires_ms = who->expires_ms;
		unlink_held(e);
		append_held(e);
		return;
	}
	if (subjects.n >= SL_OAUTH_SUBJECTS_MAX)
		drop(subjects.oldest);
	e = sl_alloc(sizeof(*e));
	memcpy(e->user, user, sizeof(e->user));
	e->token = sl_strdup(token);
	e->issuer = sl_strdup(who->issuer);
	e->expires_ms = who->expires_ms;
	append_held(e);
	sl_map_put(&subjects.by_user, e->user, e);
	subjects.n++;
}

char *sl_oauth_subject_get(const char *user, const char *issuer)
{
	struct held *e;

	if (!subjects.on || !(e = sl_map_get(&subjects.by_user, user)))
		return NULL;
	if (expired(e, wall_ms())) {
		drop(e);
		return NULL;
	}
	return issuer && !strcmp(issuer, e->issuer) ? sl_strdup(e->token) : NULL;
}

bool sl_oauth_subject_held(const char *user)
{
	const struct held *e = subjects.on ? sl_map_get(&subjects.by_user, user) : NULL;

	return e && !expired(e, wall_ms());
}

size_t sl_oauth_subjects_count(void)
{
	return subjects.n;
}
