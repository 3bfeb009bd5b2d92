/*
 * slack.c: the fake Slack back end.
 *
 * Data: six channels (general, engineering, incidents, releases, random,
 * design), nine users (one a bot), 30 messages per channel, one every half
 * hour, some with thread replies and reactions.  Channels are named by id
 * (C0100000001) or by name, with or without '#'.
 *
 * Writes (post_message, add_reaction, set_topic, upload_file) answer as Slack
 * would but change nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"

#define NMESSAGES 30
#define TS_BASE   (CAT_EPOCH_2024 + 530LL * 86400)

static const struct channel {
	const char *name, *topic, *purpose;
	bool is_private;
	const char *const lines[8];
} channels[] = {
	{ "general", "Company-wide announcements", "Announcements and work-based matters", false,
	  { "Reminder: the all-hands is on Thursday at 16:00.",
	    "Welcome to the new folks joining this week!",
	    "The office wifi is back to normal.",
	    "Lunch and learn on observability tomorrow, bring questions.",
	    "Please fill in the engagement survey before Friday.",
	    "Parking garage is closed on Monday for maintenance.",
	    "Thanks everyone for a great quarter.",
	    "Holiday calendar for next year is in the handbook." } },
	{ "engineering", "Ship it, carefully", "Engineering discussion", false,
	  { "Has anyone seen the flaky test in the api repo?",
	    "Staging deploy is green again.",
	    "Reviewing the pull request for the rate limiter now.",
	    "We should bump the Go version before the release.",
	    "Who owns the ingress controller config?",
	    "The new CI runners cut build time by a third.",
	    "Heads up: the database migration runs tonight.",
	    "Can someone pair with me on the offline sync bug?" } },
	{ "incidents", "Current incident: none", "Incident coordination", false,
	  { "Paging: elevated 5xx on the checkout page.",
	    "Mitigated by rolling back the last deploy.",
	    "Postmortem doc is up, please add your notes.",
	    "Database failover completed in 42 seconds.",
	    "Kafka consumer lag is back under the alert threshold.",
	    "TLS certificate for the status page renewed.",
	    "Closing the incident, monitoring for another hour.",
	    "Customer support reports login failures in the EU region." } },
	{ "releases", "Release train: Tuesdays", "Release announcements", false,
	  { "Release 2.14.0 is rolling out to 10 percent of users.",
	    "Release 2.14.0 is at 100 percent.",
	    "Mobile build 512 submitted for review.",
	    "Release notes for this week are in the docs site.",
	    "Hotfix 2.13.2 shipped for the billing endpoint.",
	    "Code freeze starts Monday at noon.",
	    "Feature flag for dark mode enabled for all tenants.",
	    "Rollback complete, release paused until tomorrow." } },
	{ "random", "Non-work banter", "Everything else", false,
	  { "Who wants to join the Friday board game night?",
	    "The coffee machine on the third floor is fixed.",
	    "Photo of the office dog attached.",
	    "Recommendations for a good mechanical keyboard?",
	    "The running club meets at 7 tomorrow.",
	    "Cake in the kitchen, first come first served.",
	    "Anyone watching the match tonight?",
	    "Book club pick for next month is up." } },
	{ "design", "Design reviews on Wednesdays", "Product design", true,
	  { "New mockups for the onboarding flow are in Figma.",
	    "Feedback on the dashboard charts color palette?",
	    "Accessibility audit found three contrast issues.",
	    "The icon set is updated to version 3.",
	    "User interviews are scheduled for next week.",
	    "Settings panel redesign is ready for review.",
	    "Dark mode tokens merged into the design system.",
	    "Please keep comments on the spec, not in DMs." } },
};
#define NCHANNELS (int)(sizeof(channels) / sizeof(channels[0]))

static const struct user {
	const char *name, *real_name, *title, *tz;
	bool bot;
} users[] = {
	{ "alice", "Alice Ng", "Staff Engineer", "Europe/Berlin", false },
	{ "bob", "Bob Okafor", "Engineering Manager", "Europe/London", false },
	{ "carol", "Carol Diaz", "SRE", "America/New_York", false },
	{ "dave", "Dave Kim", "Backend Engineer", "Asia/Seoul", false },
	{ "erin", "Erin Walsh", "Product Designer", "Europe/Dublin", false },
	{ "frank", "Frank Moreau", "Frontend Engineer", "Europe/Paris", false },
	{ "grace", "Grace Liu", "Product Manager", "America/Los_Angeles", false },
	{ "heidi", "Heidi Berg", "Support Lead", "Europe/Oslo", false },
	{ "deploybot", "Deploy Bot", "Automation", "UTC", true },
};
#define NUSERS (int)(sizeof(users) / sizeof(users[0]))

static const char *const emoji[] = { "thumbsup", "eyes", "tada", "white_check_mark", "fire", "pray" };

static void channel_id(char out[16], int c)
{
	snprintf(out, 16, "C01000000%02u", (unsigned)(c + 1) % 100u);
}

static void user_id(char out[16], int u)
{
	snprintf(out, 16, "U0200000%02u", (unsigned)(u + 1) % 100u);
}

static void make_ts(char out[32], int64_t secs, int frac)
{
	snprintf(out, 32, "%lld.%06d", (long long)secs, frac);
}

struct msg {
	int64_t secs;
	int user;
	const char *text;
	int replies;
	unsigned reactions;   /* bit set over emoji */
};

static void make_msg(int c, int i, struct msg *m)
{
	struct cat_rng rng;
	cat_rng_seed(&rng, "slack msg %s %d", channels[c].name, i);
	m->secs = TS_BASE + i * 1800LL + c * 7;
	/* Releases are mostly announced by the bot. */
	m->user = (c == 3 && cat_rng_range(&rng, 0, 2)) ? NUSERS - 1
						       : (int)cat_rng_range(&rng, 0, NUSERS - 2);
	m->text = channels[c].lines[cat_rng_next(&rng) % 8];
	m->replies = cat_rng_range(&rng, 0, 4) == 0 ? (int)cat_rng_range(&rng, 1, 6) : 0;
	m->reactions = 0;
	for (int k = (int)cat_rng_range(&rng, -1, 2); k > 0; k--)
		m->reactions |= 1u << cat_rng_range(&rng, 0, 5);
}

static int find_channel(struct cat_req *rq)
{
	const char *s = cat_arg_str(rq, "channel", "");
	const char *name = *s == '#' ? s + 1 : s;
	for (int c = 0; c < NCHANNELS; c++) {
		char id[16];
		channel_id(id, c);
		if (!strcmp(name, channels[c].name) || !strcmp(s, id))
			return c;
	}
	cat_fail(rq, "channel_not_found: %.100s", s);
	return -1;
}

static int find_user(const char *s)
{
	const char *name = *s == '@' ? s + 1 : s;
	for (int u = 0; u < NUSERS; u++) {
		char id[16];
		user_id(id, u);
		if (!strcasecmp(name, users[u].name) || !strcmp(s, id))
			return u;
	}
	return -1;
}

static yyjson_mut_val *msg_json(yyjson_mut_doc *doc, int c, int i, const struct msg *m)
{
	char ts[32], uid[16];
	make_ts(ts, m->secs, 100 + i);
	user_id(uid, m->user);
	yyjson_mut_val *o = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_str(doc, o, "type", "message");
	yyjson_mut_obj_add_strcpy(doc, o, "user", uid);
	yyjson_mut_obj_add_str(doc, o, "username", users[m->user].name);
	yyjson_mut_obj_add_str(doc, o, "text", m->text);
	yyjson_mut_obj_add_strcpy(doc, o, "ts", ts);
	if (m->replies) {
		yyjson_mut_obj_add_strcpy(doc, o, "thread_ts", ts);
		yyjson_mut_obj_add_int(doc, o, "reply_count", m->replies);
	}
	if (m->reactions) {
		yyjson_mut_val *rs = yyjson_mut_obj_add_arr(doc, o, "reactions");
		for (int k = 0; k < 6; k++) {
			if (!(m->reactions & (1u << k)))
				continue;
			yyjson_mut_val *r = yyjson_mut_arr_add_obj(doc, rs);
			yyjson_mut_obj_add_str(doc, r, "name", emoji[k]);
			yyjson_mut_obj_add_int(doc, r, "count", 1 + (i + k) % 4);
		}
	}
	return o;
}

static yyjson_mut_val *channel_json(yyjson_mut_doc *doc, int c)
{
	char id[16];
	channel_id(id, c);
	yyjson_mut_val *o = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_strcpy(doc, o, "id", id);
	yyjson_mut_obj_add_str(doc, o, "name", channels[c].name);
	yyjson_mut_obj_add_bool(doc, o, "is_private", channels[c].is_private);
	yyjson_mut_obj_add_bool(doc, o, "is_archived", false);
	yyjson_mut_obj_add_int(doc, o, "num_members", c == 0 ? NUSERS : 3 + (c * 5) % 6);
	yyjson_mut_obj_add_int(doc, o, "created", CAT_EPOCH_2024 - (6 - c) * 86400LL * 30);
	yyjson_mut_val *t = yyjson_mut_obj_add_obj(doc, o, "topic");
	yyjson_mut_obj_add_str(doc, t, "value", channels[c].topic);
	yyjson_mut_val *p = yyjson_mut_obj_add_obj(doc, o, "purpose");
	yyjson_mut_obj_add_str(doc, p, "value", channels[c].purpose);
	return o;
}

static yyjson_mut_val *user_json(yyjson_mut_doc *doc, int u)
{
	char id[16], email[64];
	user_id(id, u);
	snprintf(email, sizeof(email), "%s@acme.example", users[u].name);
	yyjson_mut_val *o = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_strcpy(doc, o, "id", id);
	yyjson_mut_obj_add_str(doc, o, "name", users[u].name);
	yyjson_mut_obj_add_str(doc, o, "real_name", users[u].real_name);
	yyjson_mut_obj_add_bool(doc, o, "is_bot", users[u].bot);
	yyjson_mut_obj_add_str(doc, o, "tz", users[u].tz);
	yyjson_mut_val *p = yyjson_mut_obj_add_obj(doc, o, "profile");
	yyjson_mut_obj_add_str(doc, p, "title", users[u].title);
	yyjson_mut_obj_add_str(doc, p, "display_name", users[u].name);
	if (!users[u].bot)
		yyjson_mut_obj_add_strcpy(doc, p, "email", email);
	return o;
}

/* ---- handlers --------------------------------------------------------------- */

static int list_channels(struct cat_req *rq)
{
	const char *types = cat_arg_str(rq, "types", "public_channel,private_channel");
	int64_t limit = cat_arg_int(rq, "limit", 100);
	bool pub = strstr(types, "public_channel") != NULL;
	bool priv = strstr(types, "private_channel") != NULL;
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_bool(doc, rq->data, "ok", true);
	yyjson_mut_val *list = yyjson_mut_obj_add_arr(doc, rq->data, "channels");
	int64_t n = 0;
	for (int c = 0; c < NCHANNELS && n < limit; c++) {
		if (channels[c].is_private ? !priv : !pub)
			continue;
		yyjson_mut_arr_append(list, channel_json(doc, c));
		n++;
	}
	return CAT_OK;
}

static int get_channel_info(struct cat_req *rq)
{
	int c = find_channel(rq);
	if (c >= 0)
		rq->data = channel_json(rq->doc, c);
	return CAT_OK;
}

static int get_channel_history(struct cat_req *rq)
{
	int c = find_channel(rq);
	if (c < 0)
		return CAT_OK;
	int64_t limit = cat_arg_int(rq, "limit", 20);
	double oldest = atof(cat_arg_str(rq, "oldest", "0"));
	const char *latest_s = cat_arg_str(rq, "latest", NULL);
	double latest = latest_s ? atof(latest_s) : 1e18;
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_bool(doc, rq->data, "ok", true);
	yyjson_mut_val *list = yyjson_mut_obj_add_arr(doc, rq->data, "messages");
	int64_t n = 0;
	bool more = false;
	/* Newest first, as Slack does. */
	for (int i = NMESSAGES - 1; i >= 0; i--) {
		struct msg m;
		make_msg(c, i, &m);
		if ((double)m.secs < oldest || (double)m.secs > latest)
			continue;
		if (n == limit) {
			more = true;
			break;
		}
		yyjson_mut_arr_append(list, msg_json(doc, c, i, &m));
		n++;
	}
	yyjson_mut_obj_add_bool(doc, rq->data, "has_more", more);
	return CAT_OK;
}

static int get_thread_replies(struct cat_req *rq)
{
	int c = find_channel(rq);
	if (c < 0)
		return CAT_OK;
	const char *want = cat_arg_str(rq, "thread_ts", "");
	yyjson_mut_doc *doc = rq->doc;
	for (int i = 0; i < NMESSAGES; i++) {
		struct msg m;
		char ts[32];
		make_msg(c, i, &m);
		make_ts(ts, m.secs, 100 + i);
		if (strcmp(ts, want))
			continue;
		rq->data = yyjson_mut_obj(doc);
		yyjson_mut_obj_add_bool(doc, rq->data, "ok", true);
		yyjson_mut_val *list = yyjson_mut_obj_add_arr(doc, rq->data, "messages");
		yyjson_mut_arr_append(list, msg_json(doc, c, i, &m));
		struct cat_rng rng;
		cat_rng_seed(&rng, "slack thread %s %d", channels[c].name, i);
		for (int k = 1; k <= m.replies; k++) {
			char rts[32], uid[16];
			int u = (int)cat_rng_range(&rng, 0, NUSERS - 2);
			make_ts(rts, m.secs + k * 60, 100 + i);
			user_id(uid, u);
			yyjson_mut_val *o = yyjson_mut_arr_add_obj(doc, list);
			yyjson_mut_obj_add_str(doc, o, "type", "message");
			yyjson_mut_obj_add_strcpy(doc, o, "user", uid);
			yyjson_mut_obj_add_str(doc, o, "username", users[u].name);
			yyjson_mut_obj_add_str(doc, o, "text", channels[c].lines[cat_rng_next(&rng) % 8]);
			yyjson_mut_obj_add_strcpy(doc, o, "ts", rts);
			yyjson_mut_obj_add_strcpy(doc, o, "thread_ts", ts);
		}
		return CAT_OK;
	}
	cat_fail(rq, "thread_not_found: no message with ts %.40s in #%s", want, channels[c].name);
	return CAT_OK;
}

static int post_message(struct cat_req *rq)
{
	int c = find_channel(rq);
	if (c < 0)
		return CAT_OK;
	char id[16], ts[32];
	channel_id(id, c);
	make_ts(ts, TS_BASE + NMESSAGES * 1800LL, 1);
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_bool(doc, rq->data, "ok", true);
	yyjson_mut_obj_add_strcpy(doc, rq->data, "channel", id);
	yyjson_mut_obj_add_strcpy(doc, rq->data, "ts", ts);
	yyjson_mut_val *m = yyjson_mut_obj_add_obj(doc, rq->data, "message");
	yyjson_mut_obj_add_str(doc, m, "type", "message");
	yyjson_mut_obj_add_str(doc, m, "user", "U0200000099");
	yyjson_mut_obj_add_strcpy(doc, m, "text", cat_arg_str(rq, "text", ""));
	yyjson_mut_obj_add_strcpy(doc, m, "ts", ts);
	const char *thread = cat_arg_str(rq, "thread_ts", NULL);
	if (thread)
		yyjson_mut_obj_add_strcpy(doc, m, "thread_ts", thread);
	return CAT_OK;
}

struct hit {
	int c, i;
	int64_t secs;
};

static int cmp_hit_desc(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;
	return x->secs < y->secs ? 1 : x->secs > y->secs ? -1 : 0;
}

static int search_messages(struct cat_req *rq)
{
	char q[400];
	snprintf(q, sizeof(q), "%s", cat_arg_str(rq, "query", ""));
	int64_t count = cat_arg_int(rq, "count", 20);
	bool asc = !strcmp(cat_arg_str(rq, "sort_dir", "desc"), "asc");
	/* Words must all appear; in:#channel and from:@user narrow the search. */
	char *words[16], *save = NULL;
	int nwords = 0, only_c = -1, only_u = -1;
	for (char *t = strtok_r(q, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (!strncmp(t, "in:", 3)) {
			const char *n = t[3] == '#' ? t + 4 : t + 3;
			only_c = -2;
			for (int c = 0; c < NCHANNELS; c++)
				if (!strcmp(n, channels[c].name))
					only_c = c;
		} else if (!strncmp(t, "from:", 5)) {
			only_u = find_user(t + 5);
			if (only_u < 0)
				only_u = -2;
		} else if (nwords < 16) {
			words[nwords++] = t;
		}
	}
	struct hit hits[NCHANNELS * NMESSAGES];
	int n = 0;
	for (int c = 0; c < NCHANNELS; c++) {
		if (only_c != -1 && only_c != c)
			continue;
		for (int i = 0; i < NMESSAGES; i++) {
			struct msg m;
			make_msg(c, i, &m);
			bool ok = only_u == -1 || only_u == m.user;
			for (int k = 0; ok && k < nwords; k++)
				ok = strcasestr(m.text, words[k]) != NULL;
			if (ok)
				hits[n++] = (struct hit){ c, i, m.secs };
		}
	}
	qsort(hits, (size_t)n, sizeof(*hits), cmp_hit_desc);
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_bool(doc, rq->data, "ok", true);
	yyjson_mut_obj_add_strcpy(doc, rq->data, "query", cat_arg_str(rq, "query", ""));
	yyjson_mut_obj_add_int(doc, rq->data, "total", n);
	yyjson_mut_val *list = yyjson_mut_obj_add_arr(doc, rq->data, "matches");
	for (int k = 0; k < n && k < count; k++) {
		const struct hit *h = &hits[asc ? n - 1 - k : k];
		struct msg m;
		char id[16], ts[32], link[128];
		make_msg(h->c, h->i, &m);
		yyjson_mut_val *o = msg_json(doc, h->c, h->i, &m);
		channel_id(id, h->c);
		make_ts(ts, m.secs, 100 + h->i);
		snprintf(link, sizeof(link), "https://acme.slack.com/archives/%s/p%lld%06d",
			 id, (long long)m.secs, 100 + h->i);
		yyjson_mut_val *ch = yyjson_mut_obj_add_obj(doc, o, "channel");
		yyjson_mut_obj_add_strcpy(doc, ch, "id", id);
		yyjson_mut_obj_add_str(doc, ch, "name", channels[h->c].name);
		yyjson_mut_obj_add_strcpy(doc, o, "permalink", link);
		yyjson_mut_arr_append(list, o);
	}
	return CAT_OK;
}

static int list_users(struct cat_req *rq)
{
	bool bots = cat_arg_bool(rq, "include_bots", true);
	int64_t limit = cat_arg_int(rq, "limit", 100);
	rq->data = yyjson_mut_obj(rq->doc);
	yyjson_mut_obj_add_bool(rq->doc, rq->data, "ok", true);
	yyjson_mut_val *list = yyjson_mut_obj_add_arr(rq->doc, rq->data, "members");
	int64_t n = 0;
	for (int u = 0; u < NUSERS && n < limit; u++) {
		if (users[u].bot && !bots)
			continue;
		yyjson_mut_arr_append(list, user_json(rq->doc, u));
		n++;
	}
	return CAT_OK;
}

static int get_user(struct cat_req *rq)
{
	const char *s = cat_arg_str(rq, "user", "");
	int u = find_user(s);
	if (u < 0) {
		cat_fail(rq, "user_not_found: %.100s", s);
		return CAT_OK;
	}
	rq->data = user_json(rq->doc, u);
	return CAT_OK;
}

static int add_reaction(struct cat_req *rq)
{
	int c = find_channel(rq);
	if (c < 0)
		return CAT_OK;
	const char *want = cat_arg_str(rq, "timestamp", "");
	for (int i = 0; i < NMESSAGES; i++) {
		struct msg m;
		char ts[32];
		make_msg(c, i, &m);
		make_ts(ts, m.secs, 100 + i);
		if (strcmp(ts, want))
			continue;
		const char *name = cat_arg_str(rq, "name", "");
		for (int k = 0; k < 6; k++)
			if ((m.reactions & (1u << k)) && !strcmp(name, emoji[k])) {
				cat_fail(rq, "already_reacted: :%s: on %s", name, ts);
				return CAT_OK;
			}
		rq->data = yyjson_mut_obj(rq->doc);
		yyjson_mut_obj_add_bool(rq->doc, rq->data, "ok", true);
		return CAT_OK;
	}
	cat_fail(rq, "message_not_found: no message with ts %.40s", want);
	return CAT_OK;
}

static int set_topic(struct cat_req *rq)
{
	int c = find_channel(rq);
	if (c < 0)
		return CAT_OK;
	yyjson_mut_val *ch = channel_json(rq->doc, c);
	yyjson_mut_val *t = yyjson_mut_obj_get(ch, "topic");
	yyjson_mut_obj_remove_key(t, "value");
	yyjson_mut_obj_add_strcpy(rq->doc, t, "value", cat_arg_str(rq, "topic", ""));
	rq->data = yyjson_mut_obj(rq->doc);
	yyjson_mut_obj_add_bool(rq->doc, rq->data, "ok", true);
	yyjson_mut_obj_add_val(rq->doc, rq->data, "channel", ch);
	return CAT_OK;
}

static int upload_file(struct cat_req *rq)
{
	yyjson_val *chans = yyjson_obj_get(rq->args, "channels");
	size_t i, n;
	yyjson_val *v;
	yyjson_arr_foreach(chans, i, n, v) {
		const char *s = yyjson_get_str(v);
		const char *name = *s == '#' ? s + 1 : s;
		bool found = false;
		for (int c = 0; c < NCHANNELS; c++) {
			char id[16];
			channel_id(id, c);
			found |= !strcmp(name, channels[c].name) || !strcmp(s, id);
		}
		if (!found) {
			cat_fail(rq, "channel_not_found: %.100s", s);
			return CAT_OK;
		}
	}
	const char *filename = cat_arg_str(rq, "filename", "file.txt");
	const char *content = cat_arg_str(rq, "content", "");
	struct cat_rng rng;
	char fid[16], url[200];
	cat_rng_seed(&rng, "slack file %s %zu", filename, strlen(content));
	snprintf(fid, sizeof(fid), "F%010llu",
		 (unsigned long long)(cat_rng_next(&rng) % 10000000000ull));
	snprintf(url, sizeof(url), "https://files.slack.com/files-pri/T000/%s/%.100s", fid, filename);
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_bool(doc, rq->data, "ok", true);
	yyjson_mut_val *f = yyjson_mut_obj_add_obj(doc, rq->data, "file");
	yyjson_mut_obj_add_strcpy(doc, f, "id", fid);
	yyjson_mut_obj_add_strcpy(doc, f, "name", filename);
	yyjson_mut_obj_add_strcpy(doc, f, "title", cat_arg_str(rq, "title", filename));
	yyjson_mut_obj_add_strcpy(doc, f, "filetype", cat_arg_str(rq, "filetype", "text"));
	yyjson_mut_obj_add_uint(doc, f, "size", strlen(content));
	yyjson_mut_obj_add_strcpy(doc, f, "url_private", url);
	return CAT_OK;
}

static void stats(const struct cat_server *srv, yyjson_mut_doc *doc, yyjson_mut_val *o)
{
	yyjson_mut_obj_add_int(doc, o, "channels", NCHANNELS);
	yyjson_mut_obj_add_int(doc, o, "users", NUSERS);
	yyjson_mut_obj_add_int(doc, o, "messages_per_channel", NMESSAGES);
}

/* ---- the table -------------------------------------------------------------- */

#define P_CHANNEL "'channel':{'type':'string','description':'Channel id (C0100000001) or name (general or #general).'}"
#define S_MESSAGE "{'type':'object','properties':{'type':{'type':'string'},'user':{'type':'string'}," \
	"'username':{'type':'string'},'text':{'type':'string'},'ts':{'type':'string'}," \
	"'thread_ts':{'type':'string'},'reply_count':{'type':'integer'}," \
	"'reactions':{'type':'array','items':{'type':'object','properties':{'name':{'type':'string'},'count':{'type':'integer'}}}}}," \
	"'required':['type','user','text','ts']}"

static const struct cat_tool tools[] = {
	{ "list_channels", "List channels",
	  "List the channels of the workspace.",
	  "{'type':'object','properties':{"
	  "'types':{'type':'string','description':'Comma-separated channel types: public_channel, private_channel.'},"
	  "'limit':{'type':'integer','minimum':1,'maximum':1000,'description':'Maximum number of channels. Default 100.'},"
	  "'exclude_archived':{'type':'boolean','description':'Leave out archived channels.'}}}",
	  NULL, CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, list_channels },
	{ "get_channel_info", "Get channel info",
	  "Get the details of one channel: topic, purpose, member count.",
	  "{'type':'object','properties':{" P_CHANNEL "},'required':['channel']}",
	  NULL, CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, get_channel_info },
	{ "get_channel_history", "Get channel history",
	  "Get the messages of a channel, newest first.",
	  "{'type':'object','properties':{" P_CHANNEL ","
	  "'limit':{'type':'integer','minimum':1,'maximum':1000,'description':'Maximum number of messages. Default 20.'},"
	  "'oldest':{'type':'string','description':'Only messages after this ts.'},"
	  "'latest':{'type':'string','description':'Only messages before this ts.'}},"
	  "'required':['channel']}",
	  "{'type':'object','properties':{'ok':{'type':'boolean'},'messages':{'type':'array','items':" S_MESSAGE "},"
	  "'has_more':{'type':'boolean'}},'required':['ok','messages','has_more']}",
	  CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, get_channel_history },
	{ "get_thread_replies", "Get thread replies",
	  "Get a thread: the parent message, then its replies.",
	  "{'type':'object','properties':{" P_CHANNEL ","
	  "'thread_ts':{'type':'string','description':'ts of the parent message.'}},"
	  "'required':['channel','thread_ts']}",
	  NULL, CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, get_thread_replies },
	{ "post_message", "Post a message",
	  "Post a message to a channel, or reply in a thread.",
	  "{'type':'object','properties':{" P_CHANNEL ","
	  "'text':{'type':'string','minLength':1,'description':'Message text (mrkdwn).'},"
	  "'thread_ts':{'type':'string','description':'Reply in the thread of this message.'},"
	  "'blocks':{'type':'array','items':{'type':'object','properties':{"
	  "'type':{'type':'string','description':'Block kind, e.g. section.'},"
	  "'text':{'type':'object','properties':{'type':{'type':'string','enum':['mrkdwn','plain_text'],"
	  "'description':'Text format.'},'text':{'type':'string','description':'The text.'}},"
	  "'description':'Text of the block.'}},'required':['type']},'description':'Block Kit layout blocks.'},"
	  "'unfurl_links':{'type':'boolean','description':'Show link previews.'}},"
	  "'required':['channel','text']}",
	  "{'type':'object','properties':{'ok':{'type':'boolean'},'channel':{'type':'string'},'ts':{'type':'string'},"
	  "'message':" S_MESSAGE "},'required':['ok','channel','ts','message']}",
	  CAT_OPEN_WORLD, post_message },
	{ "search_messages", "Search messages",
	  "Search messages in all channels. Every word must match; in:#channel and from:@user narrow the search.",
	  "{'type':'object','properties':{"
	  "'query':{'type':'string','description':'Search query, e.g. deploy in:#engineering'},"
	  "'count':{'type':'integer','minimum':1,'maximum':100,'description':'Results to return. Default 20.'},"
	  "'sort':{'type':'string','enum':['score','timestamp'],'description':'Sort field.'},"
	  "'sort_dir':{'type':'string','enum':['asc','desc'],'description':'Sort direction. Default desc.'}},"
	  "'required':['query']}",
	  NULL, CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, search_messages },
	{ "list_users", "List users",
	  "List the members of the workspace.",
	  "{'type':'object','properties':{"
	  "'limit':{'type':'integer','minimum':1,'maximum':1000,'description':'Maximum number of users. Default 100.'},"
	  "'include_bots':{'type':'boolean','description':'Include bot users. Default true.'}}}",
	  NULL, CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, list_users },
	{ "get_user", "Get a user",
	  "Get the profile of a user by id (U0200000001) or name (alice or @alice).",
	  "{'type':'object','properties':{'user':{'type':'string','description':'User id or name.'}},"
	  "'required':['user']}",
	  "{'type':'object','properties':{'id':{'type':'string'},'name':{'type':'string'},'real_name':{'type':'string'},"
	  "'is_bot':{'type':'boolean'},'tz':{'type':'string'},'profile':{'type':'object','properties':{"
	  "'title':{'type':'string'},'display_name':{'type':'string'},'email':{'type':'string'}}}},"
	  "'required':['id','name','real_name','is_bot']}",
	  CAT_RO | CAT_IDEMPOTENT | CAT_OPEN_WORLD, get_user },
	{ "add_reaction", "Add a reaction",
	  "Add an emoji reaction to a message.",
	  "{'type':'object','properties':{" P_CHANNEL ","
	  "'timestamp':{'type':'string','description':'ts of the message.'},"
	  "'name':{'type':'string','description':'Emoji name without colons, e.g. thumbsup.'}},"
	  "'required':['channel','timestamp','name']}",
	  NULL, CAT_OPEN_WORLD, add_reaction },
	{ "set_topic", "Set the topic",
	  "Set the topic of a channel.",
	  "{'type':'object','properties':{" P_CHANNEL ","
	  "'topic':{'type':'string','maxLength':250,'description':'The new topic.'}},"
	  "'required':['channel','topic']}",
	  NULL, CAT_IDEMPOTENT | CAT_OPEN_WORLD, set_topic },
	{ "upload_file", "Upload a file",
	  "Upload a text file and share it in channels.",
	  "{'type':'object','properties':{"
	  "'channels':{'type':'array','items':{'type':'string'},'description':'Channels to share the file in.'},"
	  "'filename':{'type':'string','description':'File name, e.g. report.csv'},"
	  "'content':{'type':'string','description':'File contents.'},"
	  "'title':{'type':'string','description':'Title shown in Slack.'},"
	  "'filetype':{'type':'string','description':'File type, e.g. csv or text.'},"
	  "'initial_comment':{'type':'string','description':'Message posted with the file.'}},"
	  "'required':['channels','filename','content']}",
	  "{'type':'object','properties':{'ok':{'type':'boolean'},'file':{'type':'object','properties':{"
	  "'id':{'type':'string'},'name':{'type':'string'},'title':{'type':'string'},'filetype':{'type':'string'},"
	  "'size':{'type':'integer'},'url_private':{'type':'string'}},'required':['id','name','size']}},"
	  "'required':['ok','file']}",
	  CAT_OPEN_WORLD, upload_file },
};

static const struct cat_prompt prompt = {
	"channel_digest", "Channel digest",
	"Ask for a digest of a channel.",
	"channel", "Channel name, e.g. incidents.",
	"Write a digest of #{}: read the history with get_channel_history, follow threads "
	"with get_thread_replies, and list decisions and open questions.",
};

const struct cat_backend cat_slack = {
	.name = "slack",
	.title = "Slack (fake)",
	.tools = tools,
	.ntools = sizeof(tools) / sizeof(tools[0]),
	.readme = "# Fake Slack\n\nChannels general, engineering, incidents, releases, random, design; "
		  "nine users; 30 messages per channel with threads and reactions.\n",
	.stats = stats,
	.prompt = &prompt,
};
