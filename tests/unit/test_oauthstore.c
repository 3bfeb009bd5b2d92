/* The OAuth token store (src/oauth/store.c): files, modes, encryption,
 * refusals. Each test works in a state directory of its own. */
#include "unit.h"

#include "auth/caller.h"
#include "config/config.h"
#include "core/digest.h"
#include "oauth/store.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define URL "https://mcp.example.com/mcp"

struct env {
	char dir[64];      /* the test's XDG_STATE_HOME */
	char *saved;       /* the run's */
	char *oauth;       /* dir/sluice/oauth */
};

static void env_enter(struct env *e)
{
	const char *xdg = getenv("XDG_STATE_HOME");

	e->saved = xdg ? sl_strdup(xdg) : NULL;
	snprintf(e->dir, sizeof(e->dir), "/tmp/sluice-unit-oauth-XXXXXX");
	CHECK(mkdtemp(e->dir) != NULL);
	setenv("XDG_STATE_HOME", e->dir, 1);
	unsetenv("SLUICE_TOKEN_KEY");
	e->oauth = sl_printf("%s/sluice/oauth", e->dir);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void env_leave(struct env *e)
{
	nftw(e->dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	if (e->saved)
		setenv("XDG_STATE_HOME", e->saved, 1);
	else
		unsetenv("XDG_STATE_HOME");
	unsetenv("SLUICE_TOKEN_KEY");
	free(e->saved);
	free(e->oauth);
}

static struct sl_oauth_store *open_store(const struct sl_config *cfg)
{
	struct sl_oauth_store *st = NULL;
	struct sl_err err;

	CHECK_INT(sl_oauth_store_open(cfg, &st, &err), 0);
	return st;
}

/* A record with every field set (strings point at literals: never disposed). */
static struct sl_oauth_record sample(const char *url, const char *user)
{
	struct sl_oauth_record r = {
		.url = (char *)url,
		.user = (char *)user,
		.server = "github",
		.subject = "alice@example.com",
		.as = { .resource = (char *)url,
			.issuer = "https://login.example.com",
			.authorization_endpoint = "https://login.example.com/authorize",
			.token_endpoint = "https://login.example.com/token",
			.registration_endpoint = "https://login.example.com/register",
			.revocation_endpoint = "https://login.example.com/revoke",
			.scope = "repo read:org",
			.auth_methods = SL_OAUTH_AUTH_NONE | SL_OAUTH_AUTH_POST,
			.cimd = true,
			.offline_access = true,
			.legacy = false },
		.reg = { .issuer = "https://login.example.com", .client_id = "client-123",
			 .client_secret = "shh-client-secret", .auth_method = "client_secret_post",
			 .redirect_uri = "http://127.0.0.1:0/callback", .how = "dynamic" },
		.tokens = { .access_token = "at-SECRET-access-0123456789",
			    .refresh_token = "rt-SECRET-refresh-9876543210", .scope = "repo",
			    .expires_at = 1900000000 },
		.needs_scope = "admin:org",
	};
	return r;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_record(const struct sl_oauth_record *a, const struct sl_oauth_record *b)
{
	return same_str(a->url, b->url) && same_str(a->user, b->user) &&
	       same_str(a->server, b->server) && same_str(a->subject, b->subject) &&
	       same_str(a->as.resource, b->as.resource) && same_str(a->as.issuer, b->as.issuer) &&
	       same_str(a->as.authorization_endpoint, b->as.authorization_endpoint) &&
	       same_str(a->as.token_endpoint, b->as.token_endpoint) &&
	       same_str(a->as.registration_endpoint, b->as.registration_endpoint) &&
	       same_str(a->as.revocation_endpoint, b->as.revocation_endpoint) &&
	       same_str(a->as.scope, b->as.scope) && a->as.auth_methods == b->as.auth_methods &&
	       a->as.cimd == b->as.cimd && a->as.offline_access == b->as.offline_access &&
	       a->as.legacy == b->as.legacy && same_str(a->reg.issuer, b->reg.issuer) &&
	       same_str(a->reg.client_id, b->reg.client_id) &&
	       same_str(a->reg.client_secret, b->reg.client_secret) &&
	       same_str(a->reg.auth_method, b->reg.auth_method) &&
	       same_str(a->reg.redirect_uri, b->reg.redirect_uri) &&
	       same_str(a->reg.how, b->reg.how) &&
	       same_str(a->tokens.access_token, b->tokens.access_token) &&
	       same_str(a->tokens.refresh_token, b->tokens.refresh_token) &&
	       same_str(a->tokens.scope, b->tokens.scope) &&
	       a->tokens.expires_at == b->tokens.expires_at &&
	       same_str(a->needs_scope, b->needs_scope);
}

/* The names in dir, sorted, joined by spaces. */
static char *list_dir(const char *dir)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	char *out = sl_strdup("");

	for (int i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, "..")) {
			char *next = sl_printf("%s%s%s", out, out[0] ? " " : "", names[i]->d_name);
			free(out);
			out = next;
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	return out;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = sl_alloc(SL_OAUTH_RECORD_MAX * 2);

	*len = f ? fread(buf, 1, SL_OAUTH_RECORD_MAX * 2 - 1, f) : 0;
	if (f)
		fclose(f);
	return buf;
}

static void spit(const char *path, const char *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	CHECK(fd >= 0);
	CHECK(write(fd, data, len) == (ssize_t)len);
	close(fd);
	chmod(path, mode);
}

TEST(oauthstore_round_trip)
{
	struct env e;
	struct sl_oauth_store *st;
	struct sl_oauth_record r = sample(URL, ""), got = { 0 }, copy = { 0 };
	struct sl_err err;
	struct stat sb;
	char hex[SL_SHA256_HEX], *path, *want, *names, *text;
	size_t len;
	time_t before = time(NULL);

	env_enter(&e);
	st = open_store(NULL);
	/* Nothing made until the first save. */
	CHECK(stat(e.oauth, &sb) < 0);
	CHECK_INT(sl_oauth_store_load(st, URL, "", &got, &err), SL_ERR_NOT_FOUND);

	CHECK_INT(sl_oauth_store_save(st, &r, &err), 0);
	CHECK_INT(sl_oauth_store_load(st, URL, "", &got, &err), 0);
	CHECK(same_record(&r, &got));
	CHECK(got.saved_at >= before && got.saved_at <= time(NULL));

	/* The file's name is the digest of "URL\nUSER"; 0700 and 0600. */
	sl_sha256_hex(URL "\n", strlen(URL "\n"), hex);
	want = sl_printf("%s/%s.json", e.oauth, hex);
	path = sl_oauth_store_path(st, URL, "");
	CHECK_STR(path, want);
	CHECK(stat(e.oauth, &sb) == 0 && (sb.st_mode & 0777) == 0700);
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);

	/* The plain file is readable JSON with a version. */
	text = slurp(path, &len);
	CHECK(strstr(text, "\"version\": 1") != NULL);
	free(text);

	/* Saved again over it, for another user too: no temporary file left. */
	got.tokens.expires_at = 1950000000;
	CHECK_INT(sl_oauth_store_save(st, &got, &err), 0);
	r.user = "bob";
	CHECK_INT(sl_oauth_store_save(st, &r, &err), 0);
	names = list_dir(e.oauth);
	CHECK_INT(strlen(names), 2 * (SL_SHA256_HEX - 1 + 5) + 1);
	CHECK(strchr(names, '.') != names); /* no dot file (temporary) */
	CHECK(strstr(names, " .") == NULL);
	free(names);
	sl_oauth_record_dispose(&got);
	CHECK_INT(sl_oauth_store_load(st, URL, "", &got, &err), 0);
	CHECK_INT(got.tokens.expires_at, 1950000000);

	/* A deep copy of each part survives the original's disposal. */
	sl_oauth_server_copy(&copy.as, &got.as);
	sl_oauth_registration_copy(&copy.reg, &got.reg);
	sl_oauth_tokens_copy(&copy.tokens, &got.tokens);
	copy.url = sl_strdup(got.url);
	copy.user = sl_strdup(got.user);
	copy.server = sl_strdup(got.server);
	copy.subject = sl_strdup(got.subject);
	copy.needs_scope = sl_strdup(got.needs_scope);
	r.user = "";
	r.tokens.expires_at = 1950000000;
	sl_oauth_record_dispose(&got);
	CHECK(same_record(&r, &copy));
	sl_oauth_record_dispose(&copy);

	/* A record with only the keys: every other field absent. */
	struct sl_oauth_record bare = { .url = URL "/bare", .user = "" };
	CHECK_INT(sl_oauth_store_save(st, &bare, &err), 0);
	CHECK_INT(sl_oauth_store_load(st, URL "/bare", "", &got, &err), 0);
	CHECK(same_record(&bare, &got));
	sl_oauth_record_dispose(&got);

	/* Text that is not UTF-8 is refused, not written as something else. */
	bare.url = URL "/bare";
	bare.subject = "caf\xe9";
	CHECK_INT(sl_oauth_store_save(st, &bare, &err), SL_ERR_INVALID);
	CHECK(strstr(err.msg, "not UTF-8") != NULL);
	bare.subject = NULL;

	/* The store refuses a record without its keys. */
	bare.url = NULL;
	CHECK_INT(sl_oauth_store_save(st, &bare, &err), SL_ERR_INVALID);

	free(path);
	free(want);
	sl_oauth_store_free(st);
	env_leave(&e);
}

TEST(oauthstore_sealed)
{
	struct env e;
	struct sl_oauth_store *st, *other;
	struct sl_oauth_record r = sample(URL, ""), got = { 0 };
	struct sl_err err;
	char *path, *text;
	size_t len;

	env_enter(&e);
	setenv("SLUICE_TOKEN_KEY", "correct horse battery staple", 1);
	st = open_store(NULL);
	CHECK_INT(sl_oauth_store_save(st, &r, &err), 0);
	path = sl_oauth_store_path(st, URL, "");
	text = slurp(path, &len);
	CHECK(strncmp(text, "sluice-sealed-v1:", 17) == 0);
	CHECK(memmem(text, len, "SECRET", 6) == NULL);
	CHECK(memmem(text, len, "login.example.com", 17) == NULL);
	CHECK_INT(sl_oauth_store_load(st, URL, "", &got, &err), 0);
	CHECK(same_record(&r, &got));
	sl_oauth_record_dispose(&got);

	/* Another key: refused, saying so. */
	setenv("SLUICE_TOKEN_KEY", "another key", 1);
	other = open_store(NULL);
	CHECK_INT(sl_oauth_store_load(other, URL, "", &got, &err), SL_ERR_INVALID);
	CHECK(strstr(err.msg, "encrypted with another key") != NULL);
	CHECK(strstr(err.msg, path) != NULL);
	CHECK(got.url == NULL);
	sl_oauth_store_free(other);

	/* No key: refused, naming both ways to give one. */
	unsetenv("SLUICE_TOKEN_KEY");
	other = open_store(NULL);
	CHECK_INT(sl_oauth_store_load(other, URL, "", &got, &err), SL_ERR_INVALID);
	CHECK(strstr(err.msg, "set SLUICE_TOKEN_KEY or sluice.oauth.keyFile") != NULL);

	/* The same key in a file (with a line end) opens it. */
	struct sl_config cfg = { 0 };
	char *kf = sl_printf("%s/key", e.dir);
	spit(kf, "correct horse battery staple\n", 29, 0600);
	cfg.oauth.key_file = kf;
	sl_oauth_store_free(other);
	other = open_store(&cfg);
	CHECK_INT(sl_oauth_store_load(other, URL, "", &got, &err), 0);
	CHECK(same_record(&r, &got));
	sl_oauth_record_dispose(&got);
	sl_oauth_store_free(other);

	/* Each save has a fresh nonce: the same record seals differently. */
	char *first = sl_strndup(text, len), *second;
	size_t len2;
	CHECK_INT(sl_oauth_store_save(st, &r, &err), 0);
	second = slurp(path, &len2);
	CHECK(len2 == len && memcmp(first, second, len) != 0);
	free(second);

	/* Tampered: one character of the sealed text changed (not in the
	 * last group of four, whose spare bits may not count). */
	for (size_t at = 17; at < len - 4; at += (len - 21) / 7) {
		char *bad = sl_strndup(first, len);
		bad[at] = bad[at] == 'A' ? 'B' : 'A';
		spit(path, bad, len, 0600);
		CHECK(sl_oauth_store_load(st, URL, "", &got, &err) == SL_ERR_INVALID);
		CHECK(got.url == NULL);
		free(bad);
	}
	/* Cut short. */
	spit(path, first, 40, 0600);
	CHECK_INT(sl_oauth_store_load(st, URL, "", &got, &err), SL_ERR_INVALID);
	CHECK(strstr(err.msg, "damaged") != NULL);

	/* A plain record is read with the key set, and sealed when saved. */
	size_t plen;
	char *plain = sl_oauth_record_encode(&r, NULL, &plen);
	spit(path, plain, plen, 0600);
	CHECK_INT(sl_oauth_store_load(st, URL, "", &got, &err), 0);
	CHECK_INT(sl_oauth_store_save(st, &got, &err), 0);
	sl_oauth_record_dispose(&got);
	second = slurp(path, &len2);
	CHECK(strncmp(second, "sluice-sealed-v1:", 17) == 0);
	free(second);
	free(plain);

	free(first);
	free(kf);
	free(text);
	free(path);
	sl_oauth_store_free(st);
	env_leave(&e);
}

TEST(oauthstore_key_refused)
{
	struct env e;
	struct sl_config cfg = { 0 };
	struct sl_oauth_store *st = NULL;
	struct sl_err err;
	char *kf, *big;

	env_enter(&e);
	kf = sl_printf("%s/key", e.dir);
	cfg.oauth.key_file = kf;
	spit(kf, "\n", 1, 0600);
	CHECK_INT(sl_oauth_store_open(&cfg, &st, &err), SL_ERR_INVALID);
	CHECK(strstr(err.msg, "empty") != NULL && strstr(err.msg, kf) != NULL);
	big = sl_alloc(4097);
	memset(big, 'k', 4097);
	spit(kf, big, 4097, 0600);
	CHECK_INT(sl_oauth_store_open(&cfg, &st, &err), SL_ERR_TOO_LARGE);
	CHECK(strstr(err.msg, "over 4096 bytes") != NULL);
	spit(kf, big, 4096, 0600); /* at the bound: fine */
	CHECK_INT(sl_oauth_store_open(&cfg, &st, &err), 0);
	sl_oauth_store_free(st);
	unlink(kf);
	CHECK_INT(sl_oauth_store_open(&cfg, &st, &err), SL_ERR_IO);
	CHECK(strstr(err.msg, "sluice.oauth.keyFile") != NULL);
	setenv("SLUICE_TOKEN_KEY", "", 1);
	CHECK_INT(sl_oauth_store_open(NULL, &st, &err), SL_ERR_INVALID);
	CHECK(strstr(err.msg, "SLUICE_TOKEN_KEY is empty") != NULL);
	free(big);
	free(kf);
	env_leave(&e);
}

/* Files that are not records, or not safe ones: an error naming the file. */
TEST(oauthstore_bad_files)
{
	static const struct {
		const char *text;
		int rc;
		const char *msg;
	} cases[] = {
		{ "", SL_ERR_INVALID, "not JSON" },
		{ "{\"version\": 1, \"url\": \"" URL "\", \"us", SL_ERR_INVALID, "not JSON" },
		{ "[1]", SL_ERR_INVALID, "not a JSON object" },
		{ "{\"url\": \"" URL "\", \"user\": \"\"}", SL_ERR_INVALID, "no \"version\"" },
		{ "{\"version\": 2, \"url\": \"" URL "\", \"user\": \"\"}", SL_ERR_INVALID,
		  "version of a newer sluice" },
		{ "{\"version\": 1, \"user\": \"\"}", SL_ERR_INVALID, "no \"url\"" },
		{ "{\"version\": 1, \"url\": 7, \"user\": \"\"}", SL_ERR_INVALID,
		  "\"url\" is not a string" },
		{ "{\"version\": 1, \"url\": \"" URL "\", \"user\": \"\", \"tokens\": "
		  "{\"expires_at\": \"soon\"}}", SL_ERR_INVALID, "\"tokens.expires_at\" is not a time" },
		{ "{\"version\": 1, \"url\": \"" URL "\", \"user\": \"\", \"tokens\": "
		  "{\"expires_at\": -5}}", SL_ERR_INVALID, "\"tokens.expires_at\" is not a time" },
		{ "{\"version\": 1, \"url\": \"" URL "\", \"user\": \"\", \"reg\": []}",
		  SL_ERR_INVALID, "\"reg\" is not an object" },
		{ "{\"version\": 1, \"url\": \"" URL "\", \"user\": \"\", \"as\": {\"cimd\": 1}}",
		  SL_ERR_INVALID, "\"as.cimd\" is not true or false" },
		{ "{\"version\": 1, \"url\": \"" URL "\", \"user\": \"\", \"as\": "
		  "{\"auth_methods\": [3]}}", SL_ERR_INVALID, "\"as.auth_methods\" is not a list" },
		{ "{\"version\": 1, \"url\": \"" URL "\", \"user\": \"\", \"tokens\": "
		  "{\"access_token\": \"a\\u0000b\"}}", SL_ERR_INVALID,
		  "\"tokens.access_token\" is not a string" },
		{ "{\"version\": 1, \"url\": \"https://other.example/mcp\", \"user\": \"\"}",
		  SL_ERR_INVALID, "another server" },
		/* A token goes into a header as it is: CR LF would add one. */
		{ "{\"version\": 1, \"url\": \"" URL "\", \"user\": \"\", \"tokens\": "
		  "{\"access_token\": \"at\\r\\nX-Injected: yes\"}}", SL_ERR_INVALID,
		  "\"tokens.access_token\" holds a control character" },
		{ "{\"version\": 1, \"url\": \"" URL "\", \"user\": \"\", \"tokens\": "
		  "{\"access_token\": \"at\", \"refresh_token\": \"r t\"}}", SL_ERR_INVALID,
		  "\"tokens.refresh_token\" holds a control character, a space" },
		/* Unknown fields and methods are ignored, nulls are absent. */
		{ "{\"version\": 1, \"url\": \"" URL "\", \"user\": \"\", \"later\": {\"x\": [1]}, "
		  "\"subject\": null, \"as\": {\"auth_methods\": [\"private_key_jwt\", \"none\"]}}",
		  0, NULL },
	};
	struct env e;
	struct sl_oauth_store *st;
	struct sl_oauth_record got = { 0 };
	struct sl_err err;
	char *path, *big, *link;
	struct sl_oauth_record r = sample(URL, "");

	env_enter(&e);
	st = open_store(NULL);
	CHECK_INT(sl_oauth_store_save(st, &r, &err), 0);
	path = sl_oauth_store_path(st, URL, "");
	for (size_t i = 0; i < SL_COUNT(cases); i++) {
		spit(path, cases[i].text, strlen(cases[i].text), 0600);
		err.msg[0] = '\0';
		int rc = sl_oauth_store_load(st, URL, "", &got, &err);
		CHECK_INT(rc, cases[i].rc);
		if (cases[i].msg) {
			CHECK(strstr(err.msg, cases[i].msg) != NULL);
			CHECK(strstr(err.msg, path) != NULL);
			if (!strstr(err.msg, cases[i].msg))
				printf("  case %zu: %s\n", i, err.msg);
			CHECK(got.url == NULL);
		} else {
			CHECK_INT(got.as.auth_methods, SL_OAUTH_AUTH_NONE);
			CHECK(got.subject == NULL);
			sl_oauth_record_dispose(&got);
		}
	}

	/* Over the bound on disk: refused before it is read. */
	big = sl_alloc(SL_OAUTH_RECORD_MAX + 1);
	memset(big, ' ', SL_OAUTH_RECORD_MAX + 1);
	spit(path, big, SL_OAUTH_RECORD_MAX + 1, 0600);
	CHECK_INT(sl_oauth_store_load(st, URL, "", &got, &err), SL_ERR_TOO_LARGE);
	CHECK(strstr(err.msg, "over 262144 bytes") != NULL);
	CHECK_INT(sl_oauth_record_decode("x", big, SL_OAUTH_RECORD_MAX + 1, NULL, &got, &err),
		  SL_ERR_TOO_LARGE);
	/* And a record that would not fit is not saved. */
	big[SL_OAUTH_RECORD_MAX] = '\0';
	r.tokens.access_token = big;
	CHECK_INT(sl_oauth_store_save(st, &r, &err), SL_ERR_TOO_LARGE);
	r.tokens.access_token = "at";

	/* Others may read it: refused, saying how to mend it. */
	CHECK_INT(sl_oauth_store_save(st, &r, &err), 0);
	chmod(path, 0644);
	CHECK_INT(sl_oauth_store_load(st, URL, "", &got, &err), SL_ERR_INVALID);
	CHECK(strstr(err.msg, "mode 0644") != NULL && strstr(err.msg, "chmod 600") != NULL);
	chmod(path, 0600);
	CHECK_INT(sl_oauth_store_load(st, URL, "", &got, &err), 0);
	sl_oauth_record_dispose(&got);

	/* A symbolic link is not followed. */
	link = sl_printf("%s/elsewhere.json", e.dir);
	CHECK(rename(path, link) == 0);
	CHECK(symlink(link, path) == 0);
	CHECK_INT(sl_oauth_store_load(st, URL, "", &got, &err), SL_ERR_IO);
	CHECK(strstr(err.msg, "symbolic link") != NULL);

	free(link);
	free(big);
	free(path);
	sl_oauth_store_free(st);
	env_leave(&e);
}

TEST(oauthstore_remove)
{
	struct env e;
	struct sl_oauth_store *st;
	struct sl_oauth_record r = sample(URL, ""), got = { 0 };
	struct sl_err err;

	env_enter(&e);
	st = open_store(NULL);
	CHECK_INT(sl_oauth_store_remove(st, URL, "", &err), SL_ERR_NOT_FOUND);
	CHECK_INT(sl_oauth_store_save(st, &r, &err), 0);
	r.user = "bob";
	CHECK_INT(sl_oauth_store_save(st, &r, &err), 0);
	CHECK_INT(sl_oauth_store_remove(st, URL, "", &err), 0);
	CHECK_INT(sl_oauth_store_load(st, URL, "", &got, &err), SL_ERR_NOT_FOUND);
	CHECK_INT(sl_oauth_store_remove(st, URL, "", &err), SL_ERR_NOT_FOUND);
	/* Bob's record is another file. */
	CHECK_INT(sl_oauth_store_load(st, URL, "bob", &got, &err), 0);
	sl_oauth_record_dispose(&got);
	sl_oauth_store_free(st);
	env_leave(&e);
}

TEST(oauthstore_migrate_user_key)
{
	struct env e;
	struct sl_oauth_store *st;
	struct sl_caller *alice = sl_caller_new("jwt"), *sam = sl_caller_new("token");
	struct sl_caller *bare = sl_caller_new("jwt");
	char old[SL_SHA256_HEX], key[SL_SHA256_HEX];
	struct sl_oauth_record r, got = { 0 };
	struct sl_err err;
	char *path;

	env_enter(&e);
	st = open_store(NULL);
	sl_caller_set_subject(alice, "https://idp", "alice");
	sl_caller_set_subject(sam, NULL, "sam");
	sl_caller_set_subject(bare, NULL, "sam");
	CHECK(sl_caller_user_key(alice, key));
	/* Nothing saved under the old key: nothing to do. */
	CHECK_INT(sl_oauth_store_migrate(st, URL, alice, key, &err), 0);
	CHECK_INT(sl_oauth_store_load(st, URL, key, &got, &err), SL_ERR_NOT_FOUND);
	/* A record under the key of before moves, once, and the old file goes. */
	sl_sha256_hex("https://idp\nalice", strlen("https://idp\nalice"), old);
	r = sample(URL, old);
	CHECK_INT(sl_oauth_store_save(st, &r, &err), 0);
	CHECK_INT(sl_oauth_store_migrate(st, URL, alice, key, &err), 0);
	CHECK_INT(sl_oauth_store_load(st, URL, key, &got, &err), 0);
	CHECK_STR(got.user, key);
	CHECK_STR(got.tokens.access_token, "at-SECRET-access-0123456789");
	sl_oauth_record_dispose(&got);
	path = sl_oauth_store_path(st, URL, old);
	CHECK(access(path, F_OK) != 0);
	free(path);
	CHECK_INT(sl_oauth_store_migrate(st, URL, alice, key, &err), 0);
	/* A static token's record was under "sluice:token"; an issued token
	 * without an issuer had that same old key: it takes nothing. */
	sl_sha256_hex("sluice:token\nsam", strlen("sluice:token\nsam"), old);
	r = sample(URL, old);
	CHECK_INT(sl_oauth_store_save(st, &r, &err), 0);
	CHECK(sl_caller_user_key(bare, key));
	CHECK_INT(sl_oauth_store_migrate(st, URL, bare, key, &err), 0);
	CHECK_INT(sl_oauth_store_load(st, URL, key, &got, &err), SL_ERR_NOT_FOUND);
	CHECK(sl_caller_user_key(sam, key));
	CHECK_INT(sl_oauth_store_migrate(st, URL, sam, key, &err), 0);
	CHECK_INT(sl_oauth_store_load(st, URL, key, &got, &err), 0);
	sl_oauth_record_dispose(&got);
	/* An introspected sam without an issuer: identity digest 1 keyed him
	 * by his subject alone; his record moves to his method and realm. The
	 * static sam's record stays the static sam's. */
	{
		struct sl_caller *in = sl_caller_new("introspection");
		char sams[SL_SHA256_HEX];
		sl_caller_set_subject(in, NULL, "sam");
		sl_caller_set_realm(in, "https://idp/introspect");
		sl_caller_identity_digest(NULL, NULL, "sam", NULL, old);
		r = sample(URL, old);
		CHECK_INT(sl_oauth_store_save(st, &r, &err), 0);
		CHECK(sl_caller_user_key(in, key));
		CHECK(sl_caller_user_key(sam, sams));
		CHECK(strcmp(key, sams) != 0);
		CHECK_INT(sl_oauth_store_migrate(st, URL, in, key, &err), 0);
		CHECK_INT(sl_oauth_store_load(st, URL, key, &got, &err), 0);
		CHECK_STR(got.user, key);
		sl_oauth_record_dispose(&got);
		CHECK_INT(sl_oauth_store_load(st, URL, old, &got, &err), SL_ERR_NOT_FOUND);
		CHECK_INT(sl_oauth_store_load(st, URL, sams, &got, &err), 0);
		sl_oauth_record_dispose(&got);
		sl_caller_unref(in);
	}
	sl_caller_unref(alice);
	sl_caller_unref(sam);
	sl_caller_unref(bare);
	sl_oauth_store_free(st);
	env_leave(&e);
}

struct seen {
	unsigned n;
	bool alice, bob, carol;
};

static void on_record(void *arg, const struct sl_oauth_record *r)
{
	struct seen *s = arg;

	s->n++;
	s->alice |= !strcmp(r->user, "alice");
	s->bob |= !strcmp(r->user, "bob");
	s->carol |= !strcmp(r->user, "carol");
}

TEST(oauthstore_each)
{
	struct env e;
	struct sl_oauth_store *st;
	struct sl_oauth_record r = sample(URL, "");
	struct sl_err err, warn;
	struct seen s = { 0 };
	char *p;

	env_enter(&e);
	st = open_store(NULL);
	/* No directory yet: no records, no warning. */
	CHECK_INT(sl_oauth_store_each(st, on_record, &s, &warn), 0);
	CHECK_INT(s.n, 0);
	CHECK_STR(warn.msg, "");

	r.user = "alice";
	CHECK_INT(sl_oauth_store_save(st, &r, &err), 0);
	r.user = "bob";
	CHECK_INT(sl_oauth_store_save(st, &r, &err), 0);
	r.user = "carol";
	CHECK_INT(sl_oauth_store_save(st, &r, &err), 0);
	/* A temporary file and other names are not records; a broken record
	 * is a warning, the others are still read. */
	p = sl_printf("%s/.%064d.tmp-0011223344556677", e.oauth, 0);
	spit(p, "{", 1, 0600);
	free(p);
	p = sl_printf("%s/notes.json", e.oauth);
	spit(p, "{", 1, 0600);
	free(p);
	p = sl_printf("%s/%064d.json", e.oauth, 0);
	spit(p, "{", 1, 0600);
	CHECK_INT(sl_oauth_store_each(st, on_record, &s, &warn), 0);
	CHECK_INT(s.n, 3);
	CHECK(s.alice && s.bob && s.carol);
	CHECK(strstr(warn.msg, p) != NULL && strstr(warn.msg, "not JSON") != NULL);
	CHECK(strstr(warn.msg, "more") == NULL);
	free(p);
	sl_oauth_store_free(st);
	env_leave(&e);
}

static void count(void *arg, const struct sl_oauth_record *r)
{
	(*(unsigned *)arg)++;
}

/* At most 10000 files are read; the rest are named in the warning. */
TEST(oauthstore_each_bound)
{
	struct env e;
	struct sl_oauth_store *st;
	struct sl_oauth_record r = sample(URL, "");
	struct sl_err err, warn;
	unsigned n = 0;
	char user[16], *text, *path;
	size_t len;

	env_enter(&e);
	st = open_store(NULL);
	CHECK_INT(sl_oauth_store_save(st, &r, &err), 0);
	for (int i = 1; i <= 10000; i++) {
		snprintf(user, sizeof(user), "u%d", i);
		r.user = user;
		text = sl_oauth_record_encode(&r, NULL, &len);
		path = sl_oauth_store_path(st, URL, user);
		spit(path, text, len, 0600);
		free(path);
		free(text);
	}
	CHECK_INT(sl_oauth_store_each(st, count, &n, &warn), 0);
	CHECK_INT(n, 10000);
	CHECK(strstr(warn.msg, "more than 10000 records") != NULL);
	sl_oauth_store_free(st);
	env_leave(&e);
}

/* No state directory at all: a clear error. */
TEST(oauthstore_no_state_dir)
{
	char *xdg = getenv("XDG_STATE_HOME") ? sl_strdup(getenv("XDG_STATE_HOME")) : NULL;
	char *home = getenv("HOME") ? sl_strdup(getenv("HOME")) : NULL;
	struct sl_oauth_store *st = NULL;
	struct sl_err err;

	unsetenv("XDG_STATE_HOME");
	unsetenv("HOME");
	CHECK_INT(sl_oauth_store_open(NULL, &st, &err), SL_ERR_STATE);
	CHECK(strstr(err.msg, "XDG_STATE_HOME or HOME") != NULL);
	CHECK(st == NULL);
	if (xdg)
		setenv("XDG_STATE_HOME", xdg, 1);
	if (home)
		setenv("HOME", home, 1);
	free(xdg);
	free(home);
}
