/*
 * One intrusive doubly-linked list (libuv's queue.h, curl's llist): a node
 * is embedded in the element it links, and a list is a head node of the
 * same type, circular, so that linking and unlinking never branch and an
 * element can leave its list in O(1) without knowing which list it is in.
 * Nothing is allocated: the element owns its node, the owner of the list
 * owns the elements.
 *
 * API:
 *   struct sl_list waiting;  sl_list_init(&waiting);     an empty list
 *   struct item { struct sl_list link; ... } *it;
 *   sl_list_push_back(&waiting, &it->link);               oldest first
 *   struct sl_list *n = sl_list_first(&waiting);          NULL: empty
 *   it = sl_list_entry(n, struct item, link);
 *   sl_list_remove(&it->link);                            unlinked, may be removed again
 *   sl_list_each_safe(n, next, &waiting) { ... may remove n ... }
 */
#ifndef SL_CORE_LIST_H
#define SL_CORE_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct sl_list {
	struct sl_list *prev, *next;
};

/* The element that holds node ptr as its member. */
#define sl_list_entry(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* Every node of head, first to last; the body must not remove n (use
 * sl_list_each_safe for that). */
#define sl_list_each(n, head) for ((n) = (head)->next; (n) != (head); (n) = (n)->next)
/* The same; the body may remove n (and only n). */
#define sl_list_each_safe(n, tmp, head)                                          \
	for ((n) = (head)->next, (tmp) = (n)->next; (n) != (head); (n) = (tmp), (tmp) = (n)->next)

/* An empty list, or a node linked nowhere (sl_list_linked is false). */
static inline void sl_list_init(struct sl_list *h)
{
	h->prev = h->next = h;
}

static inline bool sl_list_empty(const struct sl_list *h)
{
	return h->next == h;
}

/* A node is in some list (a node from sl_list_init or sl_list_remove is not;
 * a zeroed one is not either). */
static inline bool sl_list_linked(const struct sl_list *n)
{
	return n->next && n->next != n;
}

static inline void sl_list_insert_after(struct sl_list *at, struct sl_list *n)
{
	n->prev = at;
	n->next = at->next;
	at->next->prev = n;
	at->next = n;
}

static inline void sl_list_push_back(struct sl_list *h, struct sl_list *n)
{
	sl_list_insert_after(h->prev, n);
}

static inline void sl_list_push_front(struct sl_list *h, struct sl_list *n)
{
	sl_list_insert_after(h, n);
}

/* Unlinks n from its list; n is then linked nowhere, and removing it again
 * does nothing. A zeroed node (never linked) may be removed too. */
static inline void sl_list_remove(struct sl_list *n)
{
	if (!sl_list_linked(n)) {
		sl_list_init(n);
		return;
	}
	n->prev->next = n->next;
	n->next->prev = n->prev;
	sl_list_init(n);
}

/* The first and last nodes, or NULL for an empty list. */
static inline struct sl_list *sl_list_first(const struct sl_list *h)
{
	return h->next == h ? NULL : h->next;
}

static inline struct sl_list *sl_list_last(const struct sl_list *h)
{
	return h->prev == h ? NULL : h->prev;
}

#endif
