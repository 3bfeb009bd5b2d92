/*
 * Subject tokens held for token exchange (subject.h is the contract). A
 * bounded map (core/lru.h) by user key, in the order tokens were noted
 * (oldest first: a token noted again moves to the newest end) for the
 * bound and the sweep; a token's deadline is its expiry on the wall clock.
 */
#include "oauth/subject.h"
#include "core/lru.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct held {
	struct sl_lru_entry e;     /* key: the user key; until_ms: the token's expiry */
	char *token;
	char *issuer;              /* who issued it (the caller's "iss") */
};

static struct {
	bool on;
	struct sl_lru held;
} subjects;

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* As sl_lru_get judges it: a token that names no expiry has none. */
static bool expired(const struct sl_lru_entry *e, uint64_t now)
{
	return e->until_ms && e->until_ms <= now;
}

void sl_oauth_subject_free(char *token)
{
	if (!token)
		return;
	explicit_bzero(token, strlen(token));
	free(token);
}

static void held_free(struct sl_lru_entry *le, void *arg)
{
	struct held *e = sl_lru_item(le, struct held, e);

	(void)arg;
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
		sl_lru_init(&subjects.held, SL_OAUTH_SUBJECTS_MAX, 0, held_free, NULL);
	if (!want && subjects.on)
		sl_lru_dispose(&subjects.held);
	subjects.on = want;
}

void sl_oauth_subject_note(const struct sl_caller *who, const char *authorization)
{
	const char *token;
	char user[65];
	struct sl_lru_entry *old;
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
	for (int i = 0; i < 4 && (old = sl_lru_oldest(&subjects.held)) && expired(old, now); i++)
		sl_lru_drop(&subjects.held, old);
	if ((old = sl_lru_peek(&subjects.held, user))) {
		e = sl_lru_item(old, struct held, e);
		if (strcmp(e->token, token)) {
			sl_oauth_subject_free(e->token);
			e->token = sl_strdup(token);
		}
		free(e->issuer);
		e->issuer = sl_strdup(who->issuer);
		e->e.until_ms = who->expires_ms;
		sl_lru_touch(&subjects.held, &e->e);
		return;
	}
	/* At the bound, the put drops the oldest. */
	e = sl_alloc(sizeof(*e));
	e->token = sl_strdup(token);
	e->issuer = sl_strdup(who->issuer);
	(void)sl_lru_put(&subjects.held, user, &e->e, 0, who->expires_ms);
}

char *sl_oauth_subject_get(const char *user, const char *issuer)
{
	struct sl_lru_entry *le;
	struct held *e;

	if (!subjects.on || !(le = sl_lru_get(&subjects.held, user, wall_ms())))
		return NULL;
	e = sl_lru_item(le, struct held, e);
	return issuer && !strcmp(issuer, e->issuer) ? sl_strdup(e->token) : NULL;
}

bool sl_oauth_subject_held(const char *user)
{
	const struct sl_lru_entry *e = subjects.on ? sl_lru_peek(&subjects.held, user) : NULL;

	return e && !expired(e, wall_ms());
}

size_t sl_oauth_subjects_count(void)
{
	return subjects.on ? subjects.held.count : 0;
}
