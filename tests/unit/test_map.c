/* Unit tests of src/core/map.c: put/get/del, overwrite, rehash, tombstones. */
#include "unit.h"

#include "core/map.h"

#include <stdio.h>

static int vals[5000];

TEST(map_put_get_del)
{
	struct sl_map m;
	sl_map_init(&m);
	CHECK(sl_map_get(&m, "missing") == NULL);
	CHECK(sl_map_del(&m, "missing") == NULL);
	sl_map_put(&m, "a", &vals[1]);
	sl_map_put(&m, "b", &vals[2]);
	CHECK(sl_map_get(&m, "a") == &vals[1]);
	CHECK(sl_map_get(&m, "b") == &vals[2]);
	CHECK(sl_map_get(&m, "c") == NULL);
	CHECK_INT(m.live, 2);
	CHECK(sl_map_del(&m, "a") == &vals[1]);
	CHECK(sl_map_get(&m, "a") == NULL);
	CHECK(sl_map_get(&m, "b") == &vals[2]);
	CHECK(sl_map_del(&m, "a") == NULL); /* twice: nothing */
	CHECK_INT(m.live, 1);
	sl_map_dispose(&m);
}

TEST(map_keys_are_copied)
{
	struct sl_map m;
	char key[8] = "key";
	sl_map_init(&m);
	sl_map_put(&m, key, &vals[0]);
	key[0] = 'X';
	CHECK(sl_map_get(&m, "key") == &vals[0]);
	CHECK(sl_map_get(&m, "Xey") == NULL);
	sl_map_dispose(&m);
}

TEST(map_overwrite)
{
	struct sl_map m;
	sl_map_init(&m);
	sl_map_put(&m, "k", &vals[1]);
	sl_map_put(&m, "k", &vals[2]);
	CHECK(sl_map_get(&m, "k") == &vals[2]);
	CHECK_INT(m.live, 1);
	CHECK(sl_map_del(&m, "k") == &vals[2]);
	CHECK(sl_map_get(&m, "k") == NULL);
	sl_map_dispose(&m);
}

TEST(map_many_keys_rehash)
{
	struct sl_map m;
	char k[32];
	int bad = 0;
	sl_map_init(&m);
	for (int i = 0; i < 5000; i++) {
		snprintf(k, sizeof(k), "key-%d", i);
		sl_map_put(&m, k, &vals[i]);
	}
	CHECK_INT(m.live, 5000);
	CHECK(m.cap > 5000);
	CHECK((m.cap & (m.cap - 1)) == 0);
	for (int i = 0; i < 5000; i++) {
		snprintf(k, sizeof(k), "key-%d", i);
		if (sl_map_get(&m, k) != &vals[i])
			bad++;
	}
	CHECK_INT(bad, 0);
	CHECK(sl_map_get(&m, "key-5000") == NULL);
	sl_map_dispose(&m);
}

TEST(map_delete_then_reinsert_and_tombstones)
{
	struct sl_map m;
	char k[32];
	int bad = 0;
	sl_map_init(&m);
	for (int i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "t%d", i);
		sl_map_put(&m, k, &vals[i]);
	}
	/* Delete the even keys: the odd ones must still be found past the
	 * tombstones on their probe paths. */
	for (int i = 0; i < 1000; i += 2) {
		snprintf(k, sizeof(k), "t%d", i);
		if (sl_map_del(&m, k) != &vals[i])
			bad++;
	}
	CHECK_INT(bad, 0);
	CHECK_INT(m.live, 500);
	for (int i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "t%d", i);
		void *want = (i % 2) ? &vals[i] : NULL;
		if (sl_map_get(&m, k) != want)
			bad++;
	}
	CHECK_INT(bad, 0);
	/* Re-insert with other values. */
	for (int i = 0; i < 1000; i += 2) {
		snprintf(k, sizeof(k), "t%d", i);
		sl_map_put(&m, k, &vals[i + 1]);
	}
	CHECK_INT(m.live, 1000);
	for (int i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "t%d", i);
		void *want = (i % 2) ? &vals[i] : &vals[i + 1];
		if (sl_map_get(&m, k) != want)
			bad++;
	}
	CHECK_INT(bad, 0);
	sl_map_dispose(&m);
}

TEST(map_churn_does_not_fill_with_tombstones)
{
	/* Insert and delete distinct keys for a long time with few live: the
	 * map must keep finding empty slots (a map full of tombstones would
	 * loop forever on a miss) and must not grow without bound. */
	struct sl_map m;
	char k[32];
	int bad = 0;
	sl_map_init(&m);
	for (int i = 0; i < 20000; i++) {
		snprintf(k, sizeof(k), "req-%d", i);
		sl_map_put(&m, k, &vals[i % 5000]);
		if (sl_map_get(&m, k) != &vals[i % 5000])
			bad++;
		if (sl_map_del(&m, k) != &vals[i % 5000])
			bad++;
		if (sl_map_get(&m, "never-there") != NULL)
			bad++;
	}
	CHECK_INT(bad, 0);
	CHECK_INT(m.live, 0);
	CHECK(m.used < m.cap);
	CHECK(m.cap <= 64);
	sl_map_dispose(&m);
}

TEST(map_empty_string_key)
{
	struct sl_map m;
	sl_map_init(&m);
	sl_map_put(&m, "", &vals[3]);
	CHECK(sl_map_get(&m, "") == &vals[3]);
	CHECK(sl_map_del(&m, "") == &vals[3]);
	CHECK(sl_map_get(&m, "") == NULL);
	sl_map_dispose(&m);
}

TEST(map_dispose_then_reuse)
{
	struct sl_map m;
	sl_map_init(&m);
	sl_map_put(&m, "x", &vals[0]);
	sl_map_dispose(&m);
	CHECK(sl_map_get(&m, "x") == NULL);
	sl_map_put(&m, "x", &vals[1]);
	CHECK(sl_map_get(&m, "x") == &vals[1]);
	sl_map_dispose(&m);
}

static bool is_val2(const void *v, const void *ctx)
{
	return v == ctx;
}

TEST(map_find)
{
	struct sl_map m;
	sl_map_init(&m);
	CHECK(sl_map_find(&m, is_val2, &vals[2]) == NULL);
	sl_map_put(&m, "a", &vals[0]);
	sl_map_put(&m, "b", &vals[2]);
	CHECK(sl_map_find(&m, is_val2, &vals[2]) == &vals[2]);
	CHECK(sl_map_find(&m, is_val2, &vals[1]) == NULL);
	/* Deleted entries are not found. */
	sl_map_del(&m, "b");
	CHECK(sl_map_find(&m, is_val2, &vals[2]) == NULL);
	sl_map_dispose(&m);
}

struct each_seen {
	struct sl_map *m;
	int n, sum;
};

/* Counts each entry and deletes the odd ones as it goes. */
static void count_and_drop_odd(const char *key, void *value, void *ctx)
{
	struct each_seen *e = ctx;
	int v = *(int *)value;
	e->n++;
	e->sum += v;
	if (v % 2)
		CHECK(sl_map_del(e->m, key) == value);
}

TEST(map_each)
{
	static int nums[100];
	struct sl_map m;
	struct each_seen e = { .m = &m };
	char key[16];

	sl_map_init(&m);
	sl_map_each(&m, count_and_drop_odd, &e); /* empty: never called */
	CHECK_INT(e.n, 0);
	for (int i = 0; i < 100; i++) {
		nums[i] = i;
		snprintf(key, sizeof(key), "k%d", i);
		sl_map_put(&m, key, &nums[i]);
	}
	sl_map_del(&m, "k0");
	sl_map_each(&m, count_and_drop_odd, &e);
	CHECK_INT(e.n, 99);         /* every live entry once, the deleted one not */
	CHECK_INT(e.sum, 4950);
	CHECK_INT(m.live, 49);      /* the odd ones went during the walk */
	CHECK(sl_map_get(&m, "k2") == &nums[2]);
	CHECK(sl_map_get(&m, "k3") == NULL);
	e = (struct each_seen){ .m = &m };
	sl_map_each(&m, count_and_drop_odd, &e);
	CHECK_INT(e.n, 49);
	sl_map_dispose(&m);
}
