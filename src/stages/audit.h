/*
 * Audit: one JSON line per tool call (from the pipeline's finish hook, so
 * also for denied, failed and cancelled calls) and one per code-mode
 * program, to a file or stderr. A line never holds argument or result
 * values: only sizes and a SHA-256 of the canonical redacted arguments.
 *
 * API:
 *   sluice.audit: {"enabled": true, "file": "/var/log/sluice/audit.jsonl"}
 *   a program's line comes from the output hook (struct sl_output)
 *
 * The line formats are in docs/stages/audit.md.
 */
#ifndef SL_STAGES_AUDIT_H
#define SL_STAGES_AUDIT_H

#include "pipeline/call.h"

#include <time.h>

/* The audit lines themselves, ending in "\n" (malloc'd; for tests and the
 * writer). now: the wall-clock time to stamp. */
char *sl_audit_call_line(struct sl_call *c, const struct timespec *now, size_t *len);
char *sl_audit_program_line(uint64_t program_id, uint64_t session_id,
			    const struct sl_caller *who, const char *outcome,
			    uint32_t calls, double duration_ms, size_t output_bytes,
			    const struct timespec *now, size_t *len);

/* A skill's run inside a program (tools.skills.<name>): a line of type
 * "skill", whose "program" is the run's own id (its calls' "program"),
 * "parent" the calling program's id, "skill" its name and "owner" who
 * saved it (NULL: none recorded). outcome as a program's. */
char *sl_audit_skill_line(uint64_t run_id, uint64_t parent_id, uint64_t session_id,
			  const struct sl_caller *who, const char *skill, const char *owner,
			  const char *outcome, uint32_t calls, double duration_ms,
			  size_t output_bytes, const struct timespec *now, size_t *len);
/* Writes that line to gen's audit log, when the stage is on. */
void sl_audit_skill(const struct sl_gen *gen, uint64_t run_id, uint64_t parent_id,
		    uint64_t session_id, const struct sl_caller *who, const char *skill,
		    const char *owner, const char *outcome, uint32_t calls, double duration_ms,
		    size_t output_bytes);

/* An operator's action on the admin page (gateway/admin.c): a line of type
 * "admin" with the action ("pins.approve", "pins.reset"), its server and
 * tool (NULL: none), the peer it came from, the outcome and a detail (NULL:
 * none). */
char *sl_audit_admin_line(const char *action, const char *server, const char *tool,
			  const char *peer, const char *outcome, const char *detail,
			  const struct timespec *now, size_t *len);
/* Writes that line to gen's audit log (and says it in the log), when the
 * stage is on. */
void sl_audit_admin(const struct sl_gen *gen, const char *action, const char *server,
		    const char *tool, const char *peer, const char *outcome, const char *detail);
/* The newest lines of gen's audit file, each cut to max_bytes (no
 * newline): *lines (malloc'd, each line malloc'd) and *n; none when the
 * stage is off. Reads only the file's last max_lines * (max_bytes + 1)
 * bytes: the whole lines there, at most max_lines (fewer when longer lines
 * fill that window). SL_ERR_IO when the file cannot be read (err says
 * why). */
int sl_audit_tail(const struct sl_gen *gen, size_t max_lines, size_t max_bytes,
		  char ***lines, size_t *n, struct sl_err *err) SL_MUST_USE;

#endif
