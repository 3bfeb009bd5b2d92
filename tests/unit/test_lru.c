/* Unit tests of src/core/list.h and src/core/lru.c: order, bounds by count
 * and by bytes, replacement, expiry, the free callback for every way out. */
#include "unit.h"

#include "core/lru.h"

#include <stdio.h>
#include <stdlib.h>

struct item {
	int v;
	struct sl_lru_entry e;
};

static int freed;

static void item_free(struct sl_lru_entry *e, void *arg)
{
	(void)arg;
	freed++;
	free(sl_lru_item(e, struct item, e));
}

static struct sl_lru_entry *item(int v)
{
	struct item *it = sl_alloc(sizeof(*it));
	it->v = v;
	return &it->e;
}

static int value(struct sl_lru_entry *e)
{
	return e ? sl_lru_item(e, struct item, e)->v : -1;
}

TEST(list_push_remove_each)
{
	struct node { int v; struct sl_list link; } a = { 1, { 0 } }, b = { 2, { 0 } }, c = { 3, { 0 } };
	struct sl_list h, *n, *tmp;
	int sum = 0, order = 0;

	sl_list_init(&h);
	CHECK(sl_list_empty(&h) && !sl_list_first(&h) && !sl_list_last(&h));
	CHECK(!sl_list_linked(&a.link));
	sl_list_push_back(&h, &a.link);
	sl_list_push_back(&h, &b.link);
	sl_list_push_front(&h, &c.link);
	sl_list_each(n, &h)
		order = order * 10 + sl_list_entry(n, struct node, link)->v;
	CHECK_INT(order, 312);
	sl_list_remove(&a.link);
	sl_list_remove(&a.link); /* twice: nothing */
	CHECK(!sl_list_linked(&a.link));
	CHECK(sl_list_entry(sl_list_last(&h), struct node, link) == &b);
	sl_list_each_safe(n, tmp, &h) {
		sum += sl_list_entry(n, struct node, link)->v;
		sl_list_remove(n);
	}
	CHECK_INT(sum, 5);
	CHECK(sl_list_empty(&h));
}

TEST(lru_count_bound_evicts_least_recent)
{
	struct sl_lru l;

	freed = 0;
	sl_lru_init(&l, 3, 0, item_free, NULL);
	CHECK(sl_lru_put(&l, "a", item(1), 0, 0));
	CHECK(sl_lru_put(&l, "b", item(2), 0, 0));
	CHECK(sl_lru_put(&l, "c", item(3), 0, 0));
	sl_lru_touch(&l, sl_lru_get(&l, "a", 0)); /* b is now the least recent */
	CHECK(sl_lru_put(&l, "d", item(4), 0, 0));
	CHECK_INT(l.count, 3);
	CHECK_INT(freed, 1);
	CHECK(sl_lru_get(&l, "b", 0) == NULL);
	CHECK_INT(value(sl_lru_get(&l, "a", 0)), 1);
	CHECK_STR(sl_lru_oldest(&l)->key, "c");
	sl_lru_dispose(&l);
	CHECK_INT(freed, 4);
}

TEST(lru_byte_bound_and_oversize)
{
	struct sl_lru l;

	freed = 0;
	sl_lru_init(&l, 0, 100, item_free, NULL);
	CHECK(sl_lru_put(&l, "a", item(1), 40, 0));
	CHECK(sl_lru_put(&l, "b", item(2), 40, 0));
	CHECK(sl_lru_put(&l, "c", item(3), 40, 0)); /* a goes */
	CHECK_INT(l.bytes, 80);
	CHECK(sl_lru_get(&l, "a", 0) == NULL);
	CHECK(!sl_lru_put(&l, "big", item(9), 101, 0)); /* refused, freed, nothing evicted */
	CHECK_INT(freed, 2);
	CHECK_INT(l.count, 2);
	sl_lru_set_bounds(&l, 0, 50); /* b goes */
	CHECK_INT(l.count, 1);
	CHECK_INT(value(sl_lru_get(&l, "c", 0)), 3);
	sl_lru_dispose(&l);
	CHECK_INT(freed, 4);
}

TEST(lru_replace_delete_expire)
{
	struct sl_lru l;
	char key[16];

	freed = 0;
	sl_lru_init(&l, 0, 0, item_free, NULL);
	CHECK(sl_lru_put(&l, "k", item(1), 10, 0));
	CHECK(sl_lru_put(&l, "k", item(2), 20, 0)); /* the first is freed */
	CHECK_INT(freed, 1);
	CHECK_INT(l.count, 1);
	CHECK_INT(l.bytes, 20);
	CHECK_INT(value(sl_lru_get(&l, "k", 0)), 2);
	CHECK(sl_lru_del(&l, "k") && !sl_lru_del(&l, "k"));
	CHECK_INT(l.bytes, 0);
	for (int i = 0; i < 50; i++) { /* every other one expires at 1000 */
		snprintf(key, sizeof(key), "t%d", i);
		CHECK(sl_lru_put(&l, key, item(i), 1, i % 2 ? 1000 : 0));
	}
	CHECK_INT(value(sl_lru_get(&l, "t1", 999)), 1);
	CHECK_INT(value(sl_lru_peek(&l, "t1")), 1); /* expired or not: still there */
	CHECK(!sl_lru_peek(&l, "none"));
	CHECK_INT(l.count, 50);
	CHECK(sl_lru_get(&l, "t1", 1000) == NULL); /* dropped on sight */
	CHECK(!sl_lru_peek(&l, "t1"));
	CHECK_INT(l.count, 49);
	CHECK_INT(sl_lru_expire(&l, 5000), 24);
	CHECK_INT(l.count, 25);
	CHECK_INT(value(sl_lru_get(&l, "t48", 1u << 30)), 48);
	sl_lru_dispose(&l);
	CHECK_INT(freed, 2 + 50);
}

TEST(lru_set_is_bounded_and_says_first_time)
{
	struct sl_lru l;
	char key[16];

	sl_lru_init_set(&l, 3);
	CHECK(sl_lru_set_add(&l, "a"));
	CHECK(!sl_lru_set_add(&l, "a"));
	CHECK(sl_lru_set_add(&l, "b"));
	CHECK(sl_lru_set_add(&l, "c"));
	CHECK(!sl_lru_set_add(&l, "a")); /* found: now the most recent */
	CHECK(sl_lru_set_add(&l, "d"));  /* "b" is forgotten */
	CHECK_INT(l.count, 3);
	CHECK(!sl_lru_set_add(&l, "a"));
	CHECK(sl_lru_set_add(&l, "b"));
	/* Never more than its bound, however many keys come. */
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK(sl_lru_set_add(&l, key));
	}
	CHECK_INT(l.count, 3);
	sl_lru_dispose(&l);
}
