/* Runs the registered unit tests; see unit.h. */
#include "unit.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static struct sl_test *tests, **tail = &tests;
static int current_failed;

void sl_test_register(struct sl_test *t)
{
	*tail = t;
	tail = &t->next;
}

void sl_test_fail(const char *file, int line, const char *what)
{
	printf("  %s:%d: CHECK(%s) failed\n", file, line, what);
	current_failed = 1;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;
	char state[] = "/tmp/sluice-unit-state-XXXXXX";

	/* What stages keep in the state directory by default (the audit
	 * file) goes to a directory of this run, never the user's home. */
	if (!mkdtemp(state)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("XDG_STATE_HOME", state, 1);
	for (struct sl_test *t = tests; t; t = t->next) {
		if (argc > 1 && !strstr(t->name, argv[1]))
			continue;
		current_failed = 0;
		t->fn();
		printf("%s %s\n", current_failed ? "FAIL" : "ok  ", t->name);
		if (current_failed)
			failed++;
		else
			passed++;
	}
	nftw(state, remove_one, 8, FTW_DEPTH | FTW_PHYS);
	printf("unit: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
