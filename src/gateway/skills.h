/*
 * Skills: programs saved as tools (docs/internals/SANDBOX.md, "Skills").
 *
 * A skill is a code-mode program with a name, a description and an
 * optional inputSchema, saved by the save_skill gateway tool (after the
 * person confirmed it). It runs as a program of its own (a fresh one-shot
 * worker) with the caller's arguments as the constant `args`.
 *
 * Shelves. Every skill is on one owner's shelf (docs/SECURITY.md, the
 * ownership table):
 *   - the operator's, published to every caller: <dataDir>/skills/<name>.json,
 *     pinned in <stateDir>/skill-pins.json (files the operator put there,
 *     approved with `sluice skills approve`, and what a request with no
 *     caller saved: stdio, HTTP without authentication on /mcp);
 *   - one caller identity's, seen and run by that identity alone:
 *     <dataDir>/skills/<owner>/<name>.json, pinned in
 *     <stateDir>/skill-pins/<owner>.json, where owner is the caller's key
 *     (sl_caller_identity_digest of method, issuer, subject and the profile
 *     it came through: auth/caller.h).
 * dataDir is $XDG_DATA_HOME/sluice, else ~/.local/share/sluice; files are
 * mode 0600, directories 0700. At most SL_SKILLS_MAX skills on a shelf and
 * SL_SKILL_OWNERS_MAX callers' shelves.
 *
 * Files on disk are untrusted: each is read with a size bound and checked
 * whole (name, types, sizes) before anything uses it; a bad one is skipped
 * with its reason. Each skill is pinned on its shelf: the SHA-256 of its
 * name, description, code and schema (save_skill pins what the person
 * confirmed; `sluice skills approve` pins what is on disk). A skill whose
 * file differs from its pin, or that has none, is hidden and cannot be
 * called.
 *
 * This file is the store alone: no sessions, no sandbox (unit-testable).
 *
 * API:
 *   if (!sl_skill_name_ok(name)) ...
 *   struct sl_skill_shelf sh;  char key[SL_SHA256_HEX];
 *   sl_skills_shelf(sl_skills_owner(who, key) ? key : NULL, &sh);
 *   sl_skill_make(name, desc, code, len, schema, &sk, &err);   checks save_skill's arguments
 *   sl_skill_save(&sh, &sk, &err);           write and pin (or sl_skill_write + sl_skill_pin)
 *   sl_skills_names(sh.dir, &names, &n, &err);  sl_skill_read(sh.dir, name, &sk, &err);
 *   if (sl_skill_approved(sh.pins, &sk)) ...
 *   sl_skill_dispose(&sk);  sl_skills_names_free(names, n);  sl_skills_shelf_dispose(&sh);
 *   sl_skills_owners(&owners, &n, &more, &err);   the callers' shelves (the CLI)
 */
#ifndef SL_GATEWAY_SKILLS_H
#define SL_GATEWAY_SKILLS_H

#include "core/common.h"
#include "core/digest.h"
#include "core/json.h"

struct sl_caller;

#define SL_SKILLS_SERVER "skills"     /* tools.skills.<name>, skills__<name> */
#define SL_SKILL_PREFIX "skills__"    /* a skill's name in tools/list */
#define SL_SAVE_SKILL "save_skill"
#define SL_SKILL_NAME_MAX 64          /* ^[a-z][a-z0-9_]{0,63}$ */
#define SL_SKILL_DESC_MAX 4096        /* description, bytes */
#define SL_SKILL_CODE_MAX (64u << 10) /* code, bytes */
#define SL_SKILL_SCHEMA_MAX (32u << 10) /* inputSchema, as compact JSON */
#define SL_SKILL_FILE_MAX (512u << 10) /* a skill file (JSON escapes included) */
#define SL_SKILLS_MAX 256             /* skills on one shelf */
#define SL_SKILL_OWNERS_MAX 1024      /* callers with a shelf of their own */
#define SL_SKILL_OWNER_LABEL_MAX 512  /* who saved it, as the file says (for the operator) */
#define SL_SKILL_DEPTH_MAX 4          /* a skill calling skills: nesting bound */
#define SL_SKILL_PINS_MAX (1u << 20)  /* the pins file */

struct sl_skill {
	char *name;
	char *description;
	char *code;
	size_t code_len;
	char *schema;               /* inputSchema as compact JSON, NULL if none */
	char *owner;                /* who saved it, for the operator's eyes (the file's
				     * "owner"; not pinned: the shelf says whose it is); NULL: none */
	char sha[SL_SHA256_HEX];    /* its pin */
};

/* True for ^[a-z][a-z0-9_]{0,63}$ but save_skill (the gateway tool's
 * name, which policy rules match as skills.save_skill). */
bool sl_skill_name_ok(const char *name);
/* Builds *out from save_skill's arguments (copied; schema may be NULL),
 * checked: name, sizes, an inputSchema that is an object. On failure err
 * says why (for the model) and *out is untouched. */
int sl_skill_make(const char *name, const char *desc, const char *code, size_t code_len,
		  yyjson_val *schema, struct sl_skill *out, struct sl_err *err) SL_MUST_USE;
/* Parses a skill file's bytes (untrusted) that should hold skill name. */
int sl_skill_parse(const char *json, size_t len, const char *name, struct sl_skill *out,
		   struct sl_err *err) SL_MUST_USE;
/* The file text of sk (JSON, one object). Caller frees. */
char *sl_skill_json(const struct sl_skill *sk, size_t *len);
void sl_skill_dispose(struct sl_skill *sk);

/* <dataDir>/skills (the operator's shelf, and the callers' below it), or
 * NULL without a data directory. Caller frees. */
char *sl_skills_dir(void);
/* <stateDir>/skill-pins.json (the operator's shelf's pins), or NULL
 * without a state directory. */
char *sl_skills_pins_file(void);

/* One owner's skills: where its files and pins are. */
struct sl_skill_shelf {
	char *dir;                 /* NULL: no data directory */
	char *pins;                /* NULL: no state directory */
	char owner[SL_SHA256_HEX]; /* "": the operator's, published */
};
/* The shelf of owner (a key, sl_skills_owner_ok), or of the operator for
 * NULL. Dispose it. */
void sl_skills_shelf(const char *owner, struct sl_skill_shelf *out);
void sl_skills_shelf_dispose(struct sl_skill_shelf *sh);
/* True for a key: 64 lower-case hex digits. */
bool sl_skills_owner_ok(const char *owner);
/* The key of who's shelf (who->key): false for no caller, whose skills
 * are the operator's (a single-user gateway: stdio, or HTTP without
 * authentication on /mcp). */
bool sl_skills_owner(const struct sl_caller *who, char out[SL_SHA256_HEX]);
/* "alice (token, issuer X, profile P)": who saved a skill, as its file
 * records it. NULL for no caller. Caller frees. */
char *sl_skills_owner_label(const struct sl_caller *who);
/* The keys of the callers' shelves (directories under sl_skills_dir named
 * like a key), sorted, at most SL_SKILL_OWNERS_MAX (*more set when there
 * were more). Free with sl_skills_names_free. */
int sl_skills_owners(char ***owners, size_t *n, bool *more, struct sl_err *err) SL_MUST_USE;
/* Whether name may be saved on sh: SL_ERR_TOO_LARGE (err says which bound)
 * when sh has SL_SKILLS_MAX skills and name is not one of them, or when sh
 * is a caller's that has no directory yet and there are
 * SL_SKILL_OWNERS_MAX callers' shelves already; SL_ERR_STATE without a
 * data directory. The check before the person is asked. */
int sl_skill_save_room(const struct sl_skill_shelf *sh, const char *name,
		       struct sl_err *err) SL_MUST_USE;
/* Checks room (as sl_skill_save_room), writes sk on sh (sl_skill_write,
 * which checks the count again) and pins it. */
int sl_skill_save(const struct sl_skill_shelf *sh, const struct sl_skill *sk,
		  struct sl_err *err) SL_MUST_USE;

/* Reads dir/<name>.json (a regular file, at most SL_SKILL_FILE_MAX bytes):
 * SL_ERR_NOT_FOUND when there is none (or name is not a skill name), else
 * 0 or an error saying what is wrong with the file. */
int sl_skill_read(const char *dir, const char *name, struct sl_skill *out,
		  struct sl_err *err) SL_MUST_USE;
/* Writes sk as dir/<name>.json, 0600, atomically (dir made 0700 if
 * missing). Refused when it is a new skill and dir has SL_SKILLS_MAX. */
int sl_skill_write(const char *dir, const struct sl_skill *sk, struct sl_err *err) SL_MUST_USE;
/* Removes dir/<name>.json: SL_ERR_NOT_FOUND when there is none. */
int sl_skill_remove(const char *dir, const char *name, struct sl_err *err) SL_MUST_USE;
/* The skill names in dir (files <name>.json with a valid name), sorted,
 * at most SL_SKILLS_MAX (*more set when there were more). No directory:
 * none. Free with sl_skills_names_free. */
int sl_skills_names(const char *dir, char ***names, size_t *n, bool *more,
		    struct sl_err *err) SL_MUST_USE;
void sl_skills_names_free(char **names, size_t n);
/* True if dir holds a file named like a skill (read no further: a
 * program's start asks it, for the operator's shelf and the caller's). The
 * answer is kept for each of the last SL_SKILLS_SEEN_MAX directories asked
 * as long as a stat finds its mtime unchanged (so a change by another
 * process is seen at the next call); sl_skill_write, sl_skill_remove and
 * sl_skill_pin in this process forget them. Not thread-safe: the gateway's
 * loop calls it. */
#define SL_SKILLS_SEEN_MAX 64
bool sl_skills_exist(const char *dir);

/* A shelf as sl_skills_read found it: every skill file's name (sorted, at
 * most SL_SKILLS_MAX) and the skills among them that are readable and
 * approved (in name order). */
struct sl_skills_read {
	char **names;
	size_t nnames;
	struct sl_skill *approved;
	size_t napproved;
};
/* sh's skills, read at most once per SL_SKILLS_RECHECK_MS for each of the
 * last SL_SKILLS_SEEN_MAX shelves asked (another process's change shows
 * within that), and at once after this process's sl_skill_write,
 * sl_skill_remove or sl_skill_pin. Borrowed: valid until one of those, or
 * until SL_SKILLS_SEEN_MAX other shelves were read. Not thread-safe: the
 * gateway's loop calls it. Never NULL (no directory: an empty shelf). */
#define SL_SKILLS_RECHECK_MS 1000
const struct sl_skills_read *sl_skills_read(const struct sl_skill_shelf *sh);

enum sl_skill_status {
	SL_SKILL_APPROVED, /* its pin is its current hash: it may run */
	SL_SKILL_CHANGED,  /* pinned, and the file differs: hidden */
	SL_SKILL_UNPINNED, /* never confirmed (a file put there by hand): hidden */
};
/* sk against the pins file (NULL: none). A pins file that is missing, too
 * large or malformed pins nothing. */
enum sl_skill_status sl_skill_status(const char *pins, const struct sl_skill *sk);
/* sl_skill_status(...) == SL_SKILL_APPROVED. */
bool sl_skill_approved(const char *pins, const struct sl_skill *sk);
/* The pins file's text (untrusted) as its object {name: sha256}: NULL when
 * it is missing (text NULL), over SL_SKILL_PINS_MAX or not a JSON object,
 * which pins nothing. The caller frees the document. */
yyjson_doc *sl_skill_pins_parse(const char *text, size_t len);
/* The pins file's next text: text's pins (malformed: none) with name's
 * pin set to sha (NULL: forgotten). Caller frees. */
char *sl_skill_pins_with(const char *text, size_t len, const char *name, const char *sha,
			 size_t *out_len);
/* Pins sha as name's pin (sha NULL: forgets it), atomically, 0600. */
int sl_skill_pin(const char *pins, const char *name, const char *sha,
		 struct sl_err *err) SL_MUST_USE;

#endif
