/*
 * A tiny unit-test harness: TEST(name) { CHECK(...); } registers itself;
 * tests/unit/main.c runs every test (or those whose name contains argv[1])
 * and ends with "N passed, N failed".
 */
#ifndef SL_TESTS_UNIT_H
#define SL_TESTS_UNIT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct sl_test {
	const char *name;
	void (*fn)(void);
	struct sl_test *next;
};

void sl_test_register(struct sl_test *t);
void sl_test_fail(const char *file, int line, const char *what);

#define TEST(name)                                                              \
	static void test_##name(void);                                          \
	static struct sl_test t_##name = { #name, test_##name, NULL };          \
	__attribute__((constructor)) static void reg_##name(void)               \
	{                                                                       \
		sl_test_register(&t_##name);                                    \
	}                                                                       \
	static void test_##name(void)

#define CHECK(c) ((c) ? (void)0 : sl_test_fail(__FILE__, __LINE__, #c))
#define CHECK_INT(a, b) CHECK((long long)(a) == (long long)(b))
#define CHECK_STR(a, b) CHECK((a) != NULL && (b) != NULL && strcmp((a), (b)) == 0)

#endif
