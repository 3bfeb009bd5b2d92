/* The sandbox's own executable (image.h): only ever started by sluice's
 * launcher (launch.c) as `sluice __zygote LIMITS...`. */
#include "sandbox/zygote.h"

#include <string.h>

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "__zygote") == 0)
		sl_zygote_main(argc, argv);
	return 2;
}
