/* Runs the registered unit tests; see unit.h. */
#include "unit.h"

#include <stdio.h>

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

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;
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
	printf("unit: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
