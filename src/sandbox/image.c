/* The sandbox's executable, as bytes of sluice's; see image.h. Not part of
 * libsluice.a, which the image itself is linked from (Makefile). */
#include "sandbox/image.h"

#ifdef SL_SANDBOX_IMAGE
__asm__(".section .rodata.sl_sandbox_image, \"a\"\n"
	".balign 4096\n"
	"sl_image_start:\n"
	".incbin \"" SL_SANDBOX_IMAGE "\"\n"
	"sl_image_end:\n"
	".previous\n");

extern const unsigned char sl_image_start[] __attribute__((visibility("hidden")));
extern const unsigned char sl_image_end[] __attribute__((visibility("hidden")));

const unsigned char *sl_sandbox_image(size_t *len)
{
	*len = (size_t)(sl_image_end - sl_image_start);
	return sl_image_start;
}
#else
const unsigned char *sl_sandbox_image(size_t *len)
{
	*len = 0;
	return NULL;
}
#endif
