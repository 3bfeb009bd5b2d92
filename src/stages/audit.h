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

#endif
