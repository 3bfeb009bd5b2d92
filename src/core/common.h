/*
 * Common definitions for every sluice module: error codes, attributes,
 * allocation that never fails, and the monotonic clock.
 *
 * API:
 *   int rc = sl_something(...);        0 or a negative SL_ERR_*
 *   p = sl_alloc(n);                   aborts with a message on OOM
 *   t = sl_now_ms();                   monotonic milliseconds
 *   if (sl_rate_admit(&r, 1000, max))  at most max events a second
 */
#ifndef SL_CORE_COMMON_H
#define SL_CORE_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/types.h>

#define SL_MUST_USE   __attribute__((warn_unused_result))
#define SL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define SL_NORETURN   __attribute__((noreturn))
#define SL_COUNT(a)   (sizeof(a) / sizeof((a)[0]))

/* The commit this build was made from (the Makefile's COMMIT: a hash, with
 * "-dirty" for a tree with changes, or "unknown"); SL_VERSION its version. */
extern const char sl_build_commit[];

enum {
	SL_OK = 0,
	SL_ERR_INVALID = -1,   /* bad input: a clear message is in the sl_err */
	SL_ERR_TOO_LARGE = -2, /* input over a configured cap */
	SL_ERR_IO = -3,        /* a system call failed */
	SL_ERR_NOT_FOUND = -4,
	SL_ERR_STATE = -5,     /* not possible in the current state */
};

/* Error detail for a fallible call: a message fit to show a user. */
struct sl_err {
	char msg[512];
};

void sl_err_set(struct sl_err *e, const char *fmt, ...) SL_PRINTF(2, 3);

void *sl_alloc(size_t n);        /* zeroed */
void *sl_realloc(void *p, size_t n);
char *sl_strdup(const char *s);
char *sl_strndup(const char *s, size_t n);
char *sl_printf(const char *fmt, ...) SL_PRINTF(1, 2);
char *sl_vprintf(const char *fmt, va_list ap) SL_PRINTF(1, 0);
SL_NORETURN void sl_oom(void);
/* Fills buf with n (at most 256) random bytes from the kernel; aborts with
 * a message if it has none (as out of memory: nothing safe to do). */
void sl_random(void *buf, size_t n);

uint64_t sl_now_ms(void);
uint64_t sl_now_us(void);

/* A rate bound over fixed windows (sluice.limits' rates): a window opens
 * with the first event after the last one closed and lasts period_ms. */
struct sl_rate {
	uint64_t start_ms;
	uint32_t n;        /* events admitted in the window */
	uint32_t refused;  /* events refused in it */
};
/* Counts one event: true if it is among the window's first max, else it
 * counts as refused (r->refused == 1: the window's first refusal). */
bool sl_rate_admit(struct sl_rate *r, uint64_t period_ms, uint32_t max);

/* sluice's state directory by default (pins, the audit file):
 * $XDG_STATE_HOME/sluice, else ~/.local/state/sluice; NULL when neither
 * variable holds an absolute path. Caller frees. */
char *sl_state_dir(void);
/* sluice's data directory (saved skills): $XDG_DATA_HOME/sluice, else
 * ~/.local/share/sluice; NULL as for sl_state_dir. Caller frees. */
char *sl_data_dir(void);
/* Creates path and each missing parent, mode 0700. 0, or -1 with errno. */
int sl_make_dirs(const char *path);
/* Writes all n bytes to fd (again after EINTR and short writes): 0, or -1
 * with errno set. */
int sl_write_all(int fd, const void *p, size_t n);
/* The one atomic file writer: path holds data whole, or what it held
 * before. A temporary file ".NAME.tmp-XXXXXX" in path's directory (a dot
 * file, so a reader of the directory skips it), mode set with fchmod (the
 * umask does not apply), written, synced, renamed over path, then the
 * directory synced so the rename survives a crash. On failure no temporary
 * file is left and err says what failed ("cannot write PATH: the disk is
 * full"); a failure of the last sync leaves the new content in place, not
 * yet durable. */
int sl_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
			 struct sl_err *err) SL_MUST_USE;
/* Reads the file open as fd (path names it in messages) to its end, at
 * most max bytes, into *out (malloc'd, NUL terminated) and *len.
 * SL_ERR_TOO_LARGE past max (a file that grew since its fstat: "PATH: over
 * MAX bytes: not WHAT"), SL_ERR_IO on a failed read; on failure what was
 * read is wiped (secrets pass here) and nothing is returned. */
int sl_read_fd(int fd, const char *path, size_t max, const char *what, char **out, size_t *len,
	       struct sl_err *err) SL_MUST_USE;

/* 64-bit FNV-1a, for short stable name suffixes (not for security). */
uint64_t sl_hash64(const void *p, size_t n, uint64_t seed);

#endif
