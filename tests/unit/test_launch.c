/* Unit tests of the sandbox's image (src/sandbox/launch.c, sl_zygote_image):
 * the memfd the zygote is run from holds exactly the embedded executable,
 * is close-on-exec, and is sealed so that no one, the gateway included,
 * can change, grow, shrink or unseal it (docs/SECURITY.md, "fresh image").
 * Sanitizer builds embed no image: there it is -1, and the zygote is sluice
 * itself (docs/internals/SANDBOX.md, "Processes"). */
#include "unit.h"

#include "sandbox/image.h"
#include "sandbox/zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* vm.memfd_noexec=2 refuses an executable memfd: then there is no image
 * either, and the zygote falls back to /proc/self/exe. */
static bool memfd_noexec_strict(void)
{
	FILE *f = fopen("/proc/sys/vm/memfd_noexec", "r");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v == 2;
}

TEST(launch_image_is_the_executable_sealed)
{
	size_t len, at = 0;
	const unsigned char *img = sl_sandbox_image(&len);
	int fd = sl_zygote_image(), seals;
	unsigned char *buf;
	struct stat st;
	void *m;

	if (!len) {
		CHECK_INT(fd, -1);
		printf("  (no image in sanitizer builds: the fallback)\n");
		return;
	}
	if (fd < 0 && memfd_noexec_strict()) {
		printf("  (vm.memfd_noexec=2: no image, the fallback)\n");
		return;
	}
	CHECK(fd > SL_ZYGOTE_CTL_FD + 1); /* never where the launcher puts its own */
	if (fd < 0)
		return;
	CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	seals = fcntl(fd, F_GET_SEALS);
	CHECK_INT(seals, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);

	/* Its bytes are the image's, the holes between segments included. */
	CHECK(fstat(fd, &st) == 0 && (size_t)st.st_size == len);
	buf = malloc(len);
	CHECK(buf != NULL);
	while (buf && at < len) {
		ssize_t n = pread(fd, buf + at, len - at, (off_t)at);
		if (n <= 0)
			break;
		at += (size_t)n;
	}
	CHECK(at == len);
	CHECK(buf && at == len && memcmp(buf, img, len) == 0);
	free(buf);

	/* Nothing changes it, nor its seals. */
	errno = 0;
	CHECK(pwrite(fd, "x", 1, 0) == -1 && errno == EPERM);
	errno = 0;
	CHECK(ftruncate(fd, (off_t)len + 4096) == -1 && errno == EPERM);
	errno = 0;
	CHECK(ftruncate(fd, 4096) == -1 && errno == EPERM);
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m == MAP_FAILED);
	if (m != MAP_FAILED)
		munmap(m, 4096);
	errno = 0;
	CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) == -1 && errno == EPERM);
	close(fd);
}
