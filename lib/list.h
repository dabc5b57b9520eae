/* SPDX-License-Identifier: MIT
 *
 * Intrusive circular doubly linked lists. A `struct list` is both the head and the
 * link embedded in each element. Invariant: an initialised node is never NULL-linked;
 * an unlinked node points to itself (so list_unlink is idempotent).
 */
#ifndef LIB_LIST_H
#define LIB_LIST_H

#include "lib/compiler.h"

struct list {
	struct list *next, *prev;
};

static inline void list_init(struct list *l) { l->next = l->prev = l; }
static inline bool list_empty(const struct list *l) { return l->next == l; }
static inline bool list_linked(const struct list *n) { return n->next != n; }

static inline void list_insert_after(struct list *pos, struct list *n)
{
	n->next = pos->next;
	n->prev = pos;
	pos->next->prev = n;
	pos->next = n;
}
static inline void list_push_back(struct list *head, struct list *n)
{
	list_insert_after(head->prev, n);
}
static inline void list_push_front(struct list *head, struct list *n)
{
	list_insert_after(head, n);
}
static inline void list_unlink(struct list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}
static inline struct list *list_pop_front(struct list *head)
{
	struct list *n = head->next;
	if (n == head)
		return NULL;
	list_unlink(n);
	return n;
}

#define LIST_ENTRY(ptr, type, member) CONTAINER_OF(ptr, type, member)
#define LIST_FOR_EACH(it, head) for ((it) = (head)->next; (it) != (head); (it) = (it)->next)
/* Safe against unlinking `it` inside the body. */
#define LIST_FOR_EACH_SAFE(it, tmp, head) \
	for ((it) = (head)->next, (tmp) = (it)->next; (it) != (head); (it) = (tmp), (tmp) = (it)->next)

#endif
