/* Allocation that aborts on out-of-memory, error messages, clocks, the
 * state directory. */
#include "core/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void sl_oom(void)
{
	static const char m[] = "sluice: out of memory\n";
	ssize_t r = write(2, m, sizeof(m) - 1);
	(void)r;
	abort();
}

void sl_random(void *buf, size_t n)
{
	static const char m[] = "sluice: the kernel gives no random bytes\n";
	if (getrandom(buf, n, 0) != (ssize_t)n) {
		ssize_t r = write(2, m, sizeof(m) - 1);
		(void)r;
		abort();
	}
}

void *sl_alloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p)
		sl_oom();
	return p;
}

void *sl_realloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		sl_oom();
	return p;
}

char *sl_strndup(const char *s, size_t n)
{
	char *d = sl_alloc(n + 1);
	memcpy(d, s, n);
	return d;
}

char *sl_strdup(const char *s)
{
	return sl_strndup(s, strlen(s));
}

char *sl_vprintf(const char *fmt, va_list ap)
{
	char *s;
	if (vasprintf(&s, fmt, ap) < 0)
		sl_oom();
	return s;
}

char *sl_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	s = sl_vprintf(fmt, ap);
	va_end(ap);
	return s;
}

void sl_err_set(struct sl_err *e, const char *fmt, ...)
{
	va_list ap;
	if (!e)
		return;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
}

uint64_t sl_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t sl_now_ms(void)
{
	return sl_now_us() / 1000u;
}

bool sl_rate_admit(struct sl_rate *r, uint64_t period_ms, uint32_t max)
{
	uint64_t now = sl_now_ms();
	if (r->n + r->refused == 0 || now - r->start_ms >= period_ms) {
		r->start_ms = now;
		r->n = 0;
		r->refused = 0;
	}
	if (r->n < max) {
		r->n++;
		return true;
	}
	r->refused++;
	return false;
}

uint64_t sl_hash64(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *b = p;
	uint64_t h = 14695981039346656037ull ^ seed;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h;
}

char *sl_state_dir(void)
{
	const char *home = getenv("HOME"), *xdg = getenv("XDG_STATE_HOME");

	if (xdg && xdg[0] == '/')
		return sl_printf("%s/sluice", xdg);
	if (home && home[0] == '/')
		return sl_printf("%s/.local/state/sluice", home);
	return NULL;
}

char *sl_data_dir(void)
{
	const char *home = getenv("HOME"), *xdg = getenv("XDG_DATA_HOME");

	if (xdg && xdg[0] == '/')
		return sl_printf("%s/sluice", xdg);
	if (home && home[0] == '/')
		return sl_printf("%s/.local/share/sluice", home);
	return NULL;
}

int sl_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int sl_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
			 struct sl_err *err)
{
	const char *slash = strrchr(path, '/'), *what = "create a temporary file in";
	char *dir = !slash ? sl_strdup(".") :
		    sl_strndup(path, slash == path ? 1 : (size_t)(slash - path));
	char *tmp = sl_printf("%s/.%s.tmp-XXXXXX", dir, slash ? slash + 1 : path);
	const char *where = dir;
	int fd, dfd, rc = SL_ERR_IO, e = 0;

	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		goto out;
	}
	where = path;
	what = "write";
	if (fchmod(fd, mode) < 0 || sl_write_all(fd, data, len) < 0) {
		e = errno;
		goto fail;
	}
	what = "flush";
	if (fsync(fd) < 0) {
		e = errno;
		goto fail;
	}
	what = "close";
	e = close(fd) < 0 ? errno : 0;
	fd = -1;
	if (e)
		goto fail;
	what = "rename a temporary file in";
	where = dir;
	if (rename(tmp, path) < 0) {
		e = errno;
		goto fail;
	}
	what = "flush";
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) < 0) {
		e = errno;
		if (dfd >= 0)
			close(dfd);
		goto out;
	}
	close(dfd);
	rc = SL_OK;
	goto out;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out:
	if (rc < 0)
		sl_err_set(err, "cannot %s %s: %s", what, where,
			   e == ENOSPC ? "the disk is full" : strerror(e));
	free(tmp);
	free(dir);
	return rc;
}

int sl_make_dirs(const char *path)
{
	char *p = sl_strdup(path);
	int rc = 0;
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(p, 0700) < 0 && errno != EEXIST) {
				rc = -1;
				break;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	free(p);
	return rc;
}

int sl_read_fd(int fd, const char *path, size_t max, const char *what, char **out, size_t *len,
	       struct sl_err *err)
{
	/* One byte more than the bound: reading it means the file is over. */
	char *buf = sl_alloc(max + 2);
	size_t n = 0;
	ssize_t r;

	do {
		r = read(fd, buf + n, max + 1 - n);
		if (r > 0)
			n += (size_t)r;
	} while ((r > 0 || (r < 0 && errno == EINTR)) && n <= max);
	if (r >= 0 && n <= max) {
		*out = buf;
		*len = n;
		return SL_OK;
	}
	if (r < 0)
		sl_err_set(err, "%s: %s", path, strerror(errno));
	else
		sl_err_set(err, "%s: over %zu bytes: not %s", path, max, what);
	explicit_bzero(buf, n);
	free(buf);
	return r < 0 ? SL_ERR_IO : SL_ERR_TOO_LARGE;
}
