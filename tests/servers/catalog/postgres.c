/*
 * postgres.c: the fake PostgreSQL back end.
 *
 * Data: database "acme" with fixed tables and fixed row counts:
 *   public.users 1200, public.products 250, public.orders 5400,
 *   public.order_items 13100, public.events 48000, analytics.daily_revenue 365.
 * Row n of a table is generated from the seed "pg <table> <n>", so any row can
 * be produced without the others.
 *
 * query recognises a few fixed forms (keywords in any case, a trailing ';'
 * allowed, table with or without its schema):
 *   SELECT count(*) FROM <table>
 *   SELECT * | <col>, ... FROM <table> [WHERE id = <n>] [LIMIT <n>] [OFFSET <n>]
 * Without LIMIT at most 1000 rows come back, flagged truncated.  A write is
 * refused as in a read-only transaction; anything else is an isError result
 * that lists the forms understood.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"

#define DEFAULT_ROWS 1000
#define MAX_LIMIT    10000

enum kind {
	K_ID, K_FK_USER, K_FK_PRODUCT, K_FK_ORDER, K_EMAIL, K_NAME, K_COUNTRY, K_TS,
	K_BOOL, K_STATUS, K_MONEY, K_CURRENCY, K_SKU, K_PRODUCT, K_STOCK, K_QTY,
	K_EVENT, K_PAYLOAD, K_DAY, K_REVENUE, K_COUNT,
};

struct column {
	const char *name, *type;
	bool nullable;
	const char *dflt;
	enum kind kind;
};

static const struct table {
	const char *schema, *name, *comment;
	int64_t rows;
	struct column cols[8];
} tables[] = {
	{ "public", "users", "Registered customers", 1200, {
		{ "id", "bigint", false, "nextval('users_id_seq')", K_ID },
		{ "email", "text", false, NULL, K_EMAIL },
		{ "name", "text", false, NULL, K_NAME },
		{ "country", "character(2)", true, NULL, K_COUNTRY },
		{ "created_at", "timestamp with time zone", false, "now()", K_TS },
		{ "is_active", "boolean", false, "true", K_BOOL },
	} },
	{ "public", "products", "Sellable products", 250, {
		{ "id", "bigint", false, "nextval('products_id_seq')", K_ID },
		{ "sku", "text", false, NULL, K_SKU },
		{ "name", "text", false, NULL, K_PRODUCT },
		{ "price_cents", "integer", false, NULL, K_MONEY },
		{ "stock", "integer", false, "0", K_STOCK },
	} },
	{ "public", "orders", "Customer orders", 5400, {
		{ "id", "bigint", false, "nextval('orders_id_seq')", K_ID },
		{ "user_id", "bigint", false, NULL, K_FK_USER },
		{ "status", "text", false, "'pending'::text", K_STATUS },
		{ "total_cents", "integer", false, NULL, K_MONEY },
		{ "currency", "character(3)", false, "'EUR'::bpchar", K_CURRENCY },
		{ "created_at", "timestamp with time zone", false, "now()", K_TS },
	} },
	{ "public", "order_items", "Lines of an order", 13100, {
		{ "id", "bigint", false, "nextval('order_items_id_seq')", K_ID },
		{ "order_id", "bigint", false, NULL, K_FK_ORDER },
		{ "product_id", "bigint", false, NULL, K_FK_PRODUCT },
		{ "quantity", "integer", false, "1", K_QTY },
		{ "unit_price_cents", "integer", false, NULL, K_MONEY },
	} },
	{ "public", "events", "Product analytics events", 48000, {
		{ "id", "bigint", false, "nextval('events_id_seq')", K_ID },
		{ "user_id", "bigint", true, NULL, K_FK_USER },
		{ "kind", "text", false, NULL, K_EVENT },
		{ "occurred_at", "timestamp with time zone", false, "now()", K_TS },
		{ "payload", "jsonb", false, "'{}'::jsonb", K_PAYLOAD },
	} },
	{ "analytics", "daily_revenue", "Revenue per day, refreshed nightly", 365, {
		{ "day", "date", false, NULL, K_DAY },
		{ "revenue_cents", "bigint", false, NULL, K_REVENUE },
		{ "orders", "integer", false, NULL, K_COUNT },
	} },
};
#define NTABLES (int)(sizeof(tables) / sizeof(tables[0]))

static int ncols(const struct table *t)
{
	int n = 0;
	while (n < 8 && t->cols[n].name)
		n++;
	return n;
}

static const char *const first_names[] = {
	"Ada", "Ben", "Chloe", "Diego", "Emma", "Farah", "Gus", "Hana", "Ines", "Jonas",
	"Kira", "Liam", "Mia", "Noah", "Olga", "Pablo",
};
static const char *const last_names[] = {
	"Smith", "Garcia", "Muller", "Rossi", "Novak", "Silva", "Tanaka", "Dubois",
	"Jensen", "Kowalski",
};
static const char *const countries[] = { "DE", "FR", "US", "GB", "ES", "IT", "NL", "PL", "SE", "JP" };
static const char *const order_statuses[] = { "pending", "paid", "shipped", "delivered", "refunded" };
static const char *const currencies[] = { "EUR", "EUR", "EUR", "USD", "GBP" };
static const char *const adjectives[] = { "Classic", "Compact", "Deluxe", "Eco", "Smart", "Ultra" };
static const char *const nouns[] = { "Mug", "Backpack", "Lamp", "Notebook", "Headphones", "Bottle", "Chair" };
static const char *const url_paths[] = { "home", "search", "cart", "checkout", "product" };
static const char *const event_kinds[] = { "page_view", "click", "signup", "add_to_cart", "checkout", "search" };

static yyjson_mut_val *gen_value(yyjson_mut_doc *doc, const struct table *t,
				 const struct column *c, int64_t id,
				 struct cat_rng *r)
{
	char buf[128];
	const char *first, *last;
	switch (c->kind) {
	case K_ID:
		return yyjson_mut_sint(doc, id);
	case K_FK_USER:
		return yyjson_mut_sint(doc, cat_rng_range(r, 1, tables[0].rows));
	case K_FK_PRODUCT:
		return yyjson_mut_sint(doc, cat_rng_range(r, 1, tables[1].rows));
	case K_FK_ORDER:
		return yyjson_mut_sint(doc, (id - 1) * tables[2].rows / t->rows + 1);
	case K_EMAIL:
	case K_NAME: {
		struct cat_rng nr;
		/* Name and email of a user agree: both come from this seed. */
		cat_rng_seed(&nr, "pg person %lld", (long long)id);
		first = CAT_PICK(&nr, first_names);
		last = CAT_PICK(&nr, last_names);
		if (c->kind == K_NAME) {
			snprintf(buf, sizeof(buf), "%s %s", first, last);
		} else {
			snprintf(buf, sizeof(buf), "%s.%s.%lld@example.com", first, last,
				 (long long)id);
			for (char *p = buf; *p; p++)
				*p = (char)tolower((unsigned char)*p);
		}
		return yyjson_mut_strcpy(doc, buf);
	}
	case K_COUNTRY:
		return yyjson_mut_str(doc, CAT_PICK(r, countries));
	case K_TS:
		cat_iso_date(buf, CAT_EPOCH_2024 + id * (500LL * 86400 / t->rows) +
				  cat_rng_range(r, 0, 3600));
		return yyjson_mut_strcpy(doc, buf);
	case K_BOOL:
		return yyjson_mut_bool(doc, cat_rng_range(r, 0, 9) != 0);
	case K_STATUS:
		return yyjson_mut_str(doc, CAT_PICK(r, order_statuses));
	case K_MONEY:
		return yyjson_mut_sint(doc, cat_rng_range(r, 199, 25000));
	case K_CURRENCY:
		return yyjson_mut_str(doc, CAT_PICK(r, currencies));
	case K_SKU:
		snprintf(buf, sizeof(buf), "SKU-%05lld", (long long)id * 7 + 10000);
		return yyjson_mut_strcpy(doc, buf);
	case K_PRODUCT:
		snprintf(buf, sizeof(buf), "%s %s", CAT_PICK(r, adjectives), CAT_PICK(r, nouns));
		return yyjson_mut_strcpy(doc, buf);
	case K_STOCK:
		return yyjson_mut_sint(doc, cat_rng_range(r, 0, 500));
	case K_QTY:
		return yyjson_mut_sint(doc, cat_rng_range(r, 1, 5));
	case K_EVENT:
		return yyjson_mut_str(doc, CAT_PICK(r, event_kinds));
	case K_PAYLOAD: {
		yyjson_mut_val *o = yyjson_mut_obj(doc);
		snprintf(buf, sizeof(buf), "/%s", CAT_PICK(r, url_paths));
		yyjson_mut_obj_add_strcpy(doc, o, "path", buf);
		yyjson_mut_obj_add_int(doc, o, "duration_ms", cat_rng_range(r, 5, 3000));
		return o;
	}
	case K_DAY:
		cat_iso_date(buf, CAT_EPOCH_2024 + (id - 1) * 86400);
		buf[10] = '\0';
		return yyjson_mut_strcpy(doc, buf);
	case K_REVENUE:
		return yyjson_mut_sint(doc, cat_rng_range(r, 500000, 2500000));
	case K_COUNT:
		return yyjson_mut_sint(doc, cat_rng_range(r, 5, 40));
	}
	return yyjson_mut_null(doc);
}

static yyjson_mut_val *gen_row(yyjson_mut_doc *doc, const struct table *t,
			       int64_t id, const int *pick, int npick)
{
	struct cat_rng r;
	cat_rng_seed(&r, "pg %s.%s %lld", t->schema, t->name, (long long)id);
	yyjson_mut_val *vals[8];
	/* Every column is drawn, so a projection sees the same values as *. */
	for (int k = 0; k < ncols(t); k++)
		vals[k] = gen_value(doc, t, &t->cols[k], id, &r);
	yyjson_mut_val *row = yyjson_mut_obj(doc);
	for (int k = 0; k < npick; k++)
		yyjson_mut_obj_add_val(doc, row, t->cols[pick[k]].name, vals[pick[k]]);
	return row;
}

/* ---- the SQL forms ---------------------------------------------------------- */

struct select {
	const struct table *table;
	bool count;
	int pick[8], npick;
	int64_t where_id;      /* -1: no WHERE */
	int64_t limit;         /* -1: no LIMIT */
	int64_t offset;
};

static const struct table *find_table(const char *name)
{
	const char *dot = strchr(name, '.');
	for (int i = 0; i < NTABLES; i++) {
		const struct table *t = &tables[i];
		if (dot) {
			size_t n = (size_t)(dot - name);
			if (strlen(t->schema) == n && !strncasecmp(name, t->schema, n) &&
			    !strcasecmp(dot + 1, t->name))
				return t;
		} else if (!strcasecmp(name, t->name)) {
			return t;
		}
	}
	return NULL;
}

/* Splits SQL into words: identifiers, numbers, and the punctuation * , ( ) = ;
 * as words of their own. */
static int split_sql(const char *sql, char words[][64], int max)
{
	int n = 0;
	const char *s = sql;
	while (*s && n < max) {
		if (isspace((unsigned char)*s)) {
			s++;
			continue;
		}
		size_t k = 0;
		if (strchr("*,()=;", *s)) {
			words[n][k++] = *s++;
		} else {
			while (*s && !isspace((unsigned char)*s) && !strchr("*,()=;", *s)) {
				if (k + 1 < 64)
					words[n][k++] = *s;
				s++;
			}
		}
		words[n++][k] = '\0';
	}
	return *s ? -1 : n;
}

static bool kw(const char *w, const char *k)
{
	return !strcasecmp(w, k);
}

static bool parse_int(const char *s, int64_t *out)
{
	char *end = NULL;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || v < 0)
		return false;
	*out = v;
	return true;
}

#define FORMS "SELECT count(*) FROM <table>; SELECT * | <columns> FROM <table> " \
	      "[WHERE id = <n>] [LIMIT <n>] [OFFSET <n>]"

static int parse_select(const char *sql, struct select *q, char *err, size_t cap)
{
	static const char *const writes[] = {
		"INSERT", "UPDATE", "DELETE", "DROP", "CREATE", "ALTER", "TRUNCATE",
		"GRANT", "REVOKE", "COPY",
	};
	char w[64][64];
	int n = split_sql(sql, w, 64);
	memset(q, 0, sizeof(*q));
	q->where_id = q->limit = -1;
	if (n > 0 && !strcmp(w[n - 1], ";"))
		n--;
	if (n <= 0) {
		snprintf(err, cap, n < 0 ? "query too long" : "empty query");
		return -1;
	}
	for (size_t k = 0; k < sizeof(writes) / sizeof(*writes); k++)
		if (kw(w[0], writes[k])) {
			snprintf(err, cap, "ERROR: cannot execute %s in a read-only transaction",
				 writes[k]);
			return -1;
		}
	int i = 1;
	if (!kw(w[0], "SELECT"))
		goto unsupported;
	if (i + 3 < n && kw(w[i], "count") && !strcmp(w[i + 1], "(") &&
	    !strcmp(w[i + 2], "*") && !strcmp(w[i + 3], ")")) {
		q->count = true;
		i += 4;
	} else if (i < n && !strcmp(w[i], "*")) {
		i++;
	} else {
		int first = i;
		while (i < n && !kw(w[i], "FROM"))
			i++;
		if (i >= n)
			goto unsupported;
		/* Columns are resolved once the table is known. */
		q->npick = -(i - first);
	}
	int cols_end = i;
	if (i + 1 >= n || !kw(w[i], "FROM"))
		goto unsupported;
	q->table = find_table(w[i + 1]);
	if (!q->table) {
		snprintf(err, cap, "ERROR: relation \"%s\" does not exist", w[i + 1]);
		return -1;
	}
	i += 2;
	const struct table *t = q->table;
	if (q->npick < 0) {
		int first = cols_end + q->npick;
		q->npick = 0;
		for (int k = first; k < cols_end; k++) {
			if (!strcmp(w[k], ","))
				continue;
			int found = -1;
			for (int c = 0; c < ncols(t); c++)
				if (kw(w[k], t->cols[c].name))
					found = c;
			if (found < 0) {
				snprintf(err, cap, "ERROR: column \"%s\" does not exist", w[k]);
				return -1;
			}
			if (q->npick < 8)
				q->pick[q->npick++] = found;
		}
		if (!q->npick)
			goto unsupported;
	} else if (!q->count) {
		for (int c = 0; c < ncols(t); c++)
			q->pick[q->npick++] = c;
	}
	if (i < n && kw(w[i], "WHERE")) {
		if (q->count || i + 3 >= n || !kw(w[i + 1], "id") || strcmp(w[i + 2], "=") ||
		    !parse_int(w[i + 3], &q->where_id))
			goto unsupported;
		if (strcmp(t->cols[0].name, "id")) {
			snprintf(err, cap, "ERROR: column \"id\" does not exist");
			return -1;
		}
		i += 4;
	}
	if (i < n && kw(w[i], "LIMIT")) {
		if (q->count || i + 1 >= n || !parse_int(w[i + 1], &q->limit))
			goto unsupported;
		if (q->limit > MAX_LIMIT) {
			snprintf(err, cap, "LIMIT %lld is above the %d rows this server returns",
				 (long long)q->limit, MAX_LIMIT);
			return -1;
		}
		i += 2;
	}
	if (i < n && kw(w[i], "OFFSET")) {
		if (q->count || i + 1 >= n || !parse_int(w[i + 1], &q->offset))
			goto unsupported;
		i += 2;
	}
	if (i == n)
		return 0;
unsupported:
	snprintf(err, cap, "unsupported query: this server understands only " FORMS);
	return -1;
}

static void add_fields(yyjson_mut_doc *doc, yyjson_mut_val *o, const struct select *q)
{
	yyjson_mut_val *fields = yyjson_mut_obj_add_arr(doc, o, "fields");
	if (q->count) {
		yyjson_mut_val *f = yyjson_mut_arr_add_obj(doc, fields);
		yyjson_mut_obj_add_str(doc, f, "name", "count");
		yyjson_mut_obj_add_str(doc, f, "dataType", "bigint");
		return;
	}
	for (int k = 0; k < q->npick; k++) {
		yyjson_mut_val *f = yyjson_mut_arr_add_obj(doc, fields);
		yyjson_mut_obj_add_str(doc, f, "name", q->table->cols[q->pick[k]].name);
		yyjson_mut_obj_add_str(doc, f, "dataType", q->table->cols[q->pick[k]].type);
	}
}

/* ---- handlers --------------------------------------------------------------- */

static int query(struct cat_req *rq)
{
	struct select q;
	char err[400];
	if (parse_select(cat_arg_str(rq, "sql", ""), &q, err, sizeof(err))) {
		cat_fail(rq, "%s", err);
		return CAT_OK;
	}
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_str(doc, rq->data, "command", "SELECT");
	yyjson_mut_val *rows = yyjson_mut_obj_add_arr(doc, rq->data, "rows");
	int64_t n = 0;
	bool truncated = false;
	if (q.count) {
		yyjson_mut_val *row = yyjson_mut_arr_add_obj(doc, rows);
		yyjson_mut_obj_add_int(doc, row, "count", q.table->rows);
		n = 1;
	} else if (q.where_id >= 0) {
		if (q.where_id >= 1 && q.where_id <= q.table->rows && q.offset == 0 && q.limit != 0) {
			yyjson_mut_arr_append(rows, gen_row(doc, q.table, q.where_id, q.pick, q.npick));
			n = 1;
		}
	} else {
		int64_t limit = q.limit >= 0 ? q.limit : DEFAULT_ROWS;
		for (int64_t id = q.offset + 1; id <= q.table->rows && n < limit; id++, n++)
			yyjson_mut_arr_append(rows, gen_row(doc, q.table, id, q.pick, q.npick));
		truncated = q.limit < 0 && q.table->rows - q.offset > DEFAULT_ROWS;
	}
	yyjson_mut_obj_add_int(doc, rq->data, "rowCount", n);
	add_fields(doc, rq->data, &q);
	yyjson_mut_obj_add_bool(doc, rq->data, "truncated", truncated);
	return CAT_OK;
}

static int list_schemas(struct cat_req *rq)
{
	static const char *const schemas[][3] = {
		{ "public", "app", "Application tables" },
		{ "analytics", "analyst", "Derived reporting tables" },
	};
	rq->data = yyjson_mut_arr(rq->doc);
	for (int k = 0; k < 2; k++) {
		yyjson_mut_val *o = yyjson_mut_arr_add_obj(rq->doc, rq->data);
		yyjson_mut_obj_add_str(rq->doc, o, "name", schemas[k][0]);
		yyjson_mut_obj_add_str(rq->doc, o, "owner", schemas[k][1]);
		yyjson_mut_obj_add_str(rq->doc, o, "description", schemas[k][2]);
	}
	return CAT_OK;
}

static int list_tables(struct cat_req *rq)
{
	const char *schema = cat_arg_str(rq, "schema", NULL);
	rq->data = yyjson_mut_arr(rq->doc);
	for (int i = 0; i < NTABLES; i++) {
		if (schema && strcmp(schema, tables[i].schema))
			continue;
		yyjson_mut_val *o = yyjson_mut_arr_add_obj(rq->doc, rq->data);
		yyjson_mut_obj_add_str(rq->doc, o, "schema", tables[i].schema);
		yyjson_mut_obj_add_str(rq->doc, o, "name", tables[i].name);
		yyjson_mut_obj_add_str(rq->doc, o, "type", "table");
		yyjson_mut_obj_add_str(rq->doc, o, "comment", tables[i].comment);
		yyjson_mut_obj_add_int(rq->doc, o, "estimated_rows", tables[i].rows);
	}
	return CAT_OK;
}

static const struct table *table_arg(struct cat_req *rq)
{
	char name[160];
	const char *schema = cat_arg_str(rq, "schema", NULL);
	const char *table = cat_arg_str(rq, "table", "");
	if (schema && !strchr(table, '.'))
		snprintf(name, sizeof(name), "%.60s.%.90s", schema, table);
	else
		snprintf(name, sizeof(name), "%.150s", table);
	const struct table *t = find_table(name);
	if (!t)
		cat_fail(rq, "ERROR: relation \"%s\" does not exist", name);
	return t;
}

static const char *fk_target(enum kind k)
{
	return k == K_FK_USER ? "users" : k == K_FK_PRODUCT ? "products"
	     : k == K_FK_ORDER ? "orders" : NULL;
}

static int describe_table(struct cat_req *rq)
{
	const struct table *t = table_arg(rq);
	if (!t)
		return CAT_OK;
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_str(doc, rq->data, "schema", t->schema);
	yyjson_mut_obj_add_str(doc, rq->data, "name", t->name);
	yyjson_mut_obj_add_str(doc, rq->data, "comment", t->comment);
	yyjson_mut_obj_add_int(doc, rq->data, "row_count", t->rows);
	yyjson_mut_val *cols = yyjson_mut_obj_add_arr(doc, rq->data, "columns");
	yyjson_mut_val *fks = yyjson_mut_arr(doc);
	for (int k = 0; k < ncols(t); k++) {
		const struct column *c = &t->cols[k];
		yyjson_mut_val *o = yyjson_mut_arr_add_obj(doc, cols);
		yyjson_mut_obj_add_str(doc, o, "name", c->name);
		yyjson_mut_obj_add_str(doc, o, "type", c->type);
		yyjson_mut_obj_add_bool(doc, o, "nullable", c->nullable);
		if (c->dflt)
			yyjson_mut_obj_add_str(doc, o, "default", c->dflt);
		else
			yyjson_mut_obj_add_null(doc, o, "default");
		if (fk_target(c->kind)) {
			yyjson_mut_val *fk = yyjson_mut_arr_add_obj(doc, fks);
			yyjson_mut_obj_add_str(doc, fk, "column", c->name);
			yyjson_mut_obj_add_str(doc, fk, "references_table", fk_target(c->kind));
			yyjson_mut_obj_add_str(doc, fk, "references_column", "id");
		}
	}
	yyjson_mut_val *pk = yyjson_mut_obj_add_arr(doc, rq->data, "primary_key");
	yyjson_mut_arr_add_str(doc, pk, t->cols[0].name);
	yyjson_mut_obj_add_val(doc, rq->data, "foreign_keys", fks);
	return CAT_OK;
}

static void add_index(yyjson_mut_doc *doc, yyjson_mut_val *list, const struct table *t,
		      const char *column, bool primary)
{
	char name[96], def[256];
	if (primary)
		snprintf(name, sizeof(name), "%s_pkey", t->name);
	else
		snprintf(name, sizeof(name), "%s_%s_idx", t->name, column);
	snprintf(def, sizeof(def), "CREATE %sINDEX %s ON %s.%s USING btree (%s)",
		 primary ? "UNIQUE " : "", name, t->schema, t->name, column);
	yyjson_mut_val *o = yyjson_mut_arr_add_obj(doc, list);
	yyjson_mut_obj_add_str(doc, o, "schema", t->schema);
	yyjson_mut_obj_add_str(doc, o, "table", t->name);
	yyjson_mut_obj_add_strcpy(doc, o, "name", name);
	yyjson_mut_obj_add_strcpy(doc, o, "definition", def);
	yyjson_mut_obj_add_bool(doc, o, "unique", primary);
	yyjson_mut_obj_add_bool(doc, o, "primary", primary);
}

static int list_indexes(struct cat_req *rq)
{
	const struct table *only = NULL;
	if (cat_arg_str(rq, "table", NULL) && !(only = table_arg(rq)))
		return CAT_OK;
	rq->data = yyjson_mut_arr(rq->doc);
	for (int i = 0; i < NTABLES; i++) {
		const struct table *t = &tables[i];
		if (only && only != t)
			continue;
		add_index(rq->doc, rq->data, t, t->cols[0].name, true);
		for (int k = 0; k < ncols(t); k++)
			if (fk_target(t->cols[k].kind))
				add_index(rq->doc, rq->data, t, t->cols[k].name, false);
	}
	return CAT_OK;
}

static int get_table_stats(struct cat_req *rq)
{
	const struct table *t = table_arg(rq);
	if (!t)
		return CAT_OK;
	struct cat_rng r;
	char vac[32], ana[32];
	cat_rng_seed(&r, "pg stats %s.%s", t->schema, t->name);
	int64_t width = 40 + ncols(t) * 12;
	int64_t table_bytes = (t->rows * width / 8192 + 1) * 8192;
	int64_t index_bytes = (t->rows * 24 / 8192 + 1) * 8192;
	cat_iso_date(vac, CAT_EPOCH_2024 + 545LL * 86400 + cat_rng_range(&r, 0, 86400));
	cat_iso_date(ana, CAT_EPOCH_2024 + 546LL * 86400 + cat_rng_range(&r, 0, 86400));
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_str(doc, rq->data, "schema", t->schema);
	yyjson_mut_obj_add_str(doc, rq->data, "table", t->name);
	yyjson_mut_obj_add_int(doc, rq->data, "row_count", t->rows);
	yyjson_mut_obj_add_int(doc, rq->data, "table_bytes", table_bytes);
	yyjson_mut_obj_add_int(doc, rq->data, "index_bytes", index_bytes);
	yyjson_mut_obj_add_int(doc, rq->data, "total_bytes", table_bytes + index_bytes);
	yyjson_mut_obj_add_int(doc, rq->data, "seq_scans", cat_rng_range(&r, 10, 5000));
	yyjson_mut_obj_add_int(doc, rq->data, "idx_scans", cat_rng_range(&r, 1000, 900000));
	yyjson_mut_obj_add_int(doc, rq->data, "dead_tuples", cat_rng_range(&r, 0, t->rows / 20 + 1));
	yyjson_mut_obj_add_strcpy(doc, rq->data, "last_vacuum", vac);
	yyjson_mut_obj_add_strcpy(doc, rq->data, "last_analyze", ana);
	return CAT_OK;
}

static int explain(struct cat_req *rq)
{
	struct select q;
	char err[400], plan[800];
	if (parse_select(cat_arg_str(rq, "sql", ""), &q, err, sizeof(err))) {
		cat_fail(rq, "%s", err);
		return CAT_OK;
	}
	const struct table *t = q.table;
	double pages = (double)(t->rows / 80 + 1);
	double scan = pages + (double)t->rows * 0.01;
	double total;
	int64_t rows;
	if (q.where_id >= 0) {
		total = 8.29;
		rows = 1;
		snprintf(plan, sizeof(plan),
			 "Index Scan using %s_pkey on %s  (cost=0.28..8.29 rows=1 width=64)\n"
			 "  Index Cond: (id = %lld)", t->name, t->name, (long long)q.where_id);
	} else if (q.count) {
		total = scan + (double)t->rows * 0.0025;
		rows = 1;
		snprintf(plan, sizeof(plan),
			 "Aggregate  (cost=%.2f..%.2f rows=1 width=8)\n"
			 "  ->  Seq Scan on %s  (cost=0.00..%.2f rows=%lld width=0)",
			 total, total + 0.01, t->name, scan, (long long)t->rows);
	} else {
		rows = q.limit >= 0 && q.limit < t->rows ? q.limit : t->rows;
		total = scan * (double)rows / (double)t->rows;
		if (q.limit >= 0)
			snprintf(plan, sizeof(plan),
				 "Limit  (cost=0.00..%.2f rows=%lld width=64)\n"
				 "  ->  Seq Scan on %s  (cost=0.00..%.2f rows=%lld width=64)",
				 total, (long long)rows, t->name, scan, (long long)t->rows);
		else
			snprintf(plan, sizeof(plan), "Seq Scan on %s  (cost=0.00..%.2f rows=%lld width=64)",
				 t->name, scan, (long long)t->rows);
	}
	if (cat_arg_bool(rq, "analyze", false)) {
		size_t len = strlen(plan);
		snprintf(plan + len, sizeof(plan) - len,
			 "\nPlanning Time: 0.120 ms\nExecution Time: %.3f ms", total / 10.0 + 0.05);
	}
	rq->data = yyjson_mut_obj(rq->doc);
	yyjson_mut_obj_add_strcpy(rq->doc, rq->data, "plan", plan);
	yyjson_mut_obj_add_real(rq->doc, rq->data, "total_cost", total);
	yyjson_mut_obj_add_int(rq->doc, rq->data, "estimated_rows", rows);
	return CAT_OK;
}

static int list_extensions(struct cat_req *rq)
{
	static const char *const ext[][3] = {
		{ "plpgsql", "1.0", "pg_catalog" },
		{ "pg_stat_statements", "1.10", "public" },
		{ "pgcrypto", "1.3", "public" },
		{ "uuid-ossp", "1.1", "public" },
	};
	rq->data = yyjson_mut_arr(rq->doc);
	for (int k = 0; k < 4; k++) {
		yyjson_mut_val *o = yyjson_mut_arr_add_obj(rq->doc, rq->data);
		yyjson_mut_obj_add_str(rq->doc, o, "name", ext[k][0]);
		yyjson_mut_obj_add_str(rq->doc, o, "version", ext[k][1]);
		yyjson_mut_obj_add_str(rq->doc, o, "schema", ext[k][2]);
	}
	return CAT_OK;
}

static int get_database_info(struct cat_req *rq)
{
	int64_t rows = 0;
	for (int i = 0; i < NTABLES; i++)
		rows += tables[i].rows;
	yyjson_mut_doc *doc = rq->doc;
	rq->data = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_str(doc, rq->data, "database", "acme");
	yyjson_mut_obj_add_str(doc, rq->data, "version", "PostgreSQL 16.3 on x86_64-pc-linux-gnu");
	yyjson_mut_obj_add_str(doc, rq->data, "encoding", "UTF8");
	yyjson_mut_obj_add_str(doc, rq->data, "timezone", "UTC");
	yyjson_mut_obj_add_int(doc, rq->data, "tables", NTABLES);
	yyjson_mut_obj_add_int(doc, rq->data, "total_rows", rows);
	yyjson_mut_obj_add_int(doc, rq->data, "size_bytes", rows * 120 + 8 * 1024 * 1024);
	yyjson_mut_obj_add_bool(doc, rq->data, "read_only", true);
	return CAT_OK;
}

static int list_active_queries(struct cat_req *rq)
{
	static const char *const active[][3] = {
		{ "app", "active", "SELECT * FROM orders WHERE user_id = $1 ORDER BY created_at DESC LIMIT 20" },
		{ "analyst", "active", "REFRESH MATERIALIZED VIEW analytics.daily_revenue" },
		{ "app", "idle in transaction", "UPDATE products SET stock = stock - $1 WHERE id = $2" },
	};
	bool include_idle = cat_arg_bool(rq, "include_idle", false);
	rq->data = yyjson_mut_arr(rq->doc);
	for (int k = 0; k < 3; k++) {
		if (!include_idle && strcmp(active[k][1], "active"))
			continue;
		yyjson_mut_val *o = yyjson_mut_arr_add_obj(rq->doc, rq->data);
		yyjson_mut_obj_add_int(rq->doc, o, "pid", 41200 + k * 37);
		yyjson_mut_obj_add_str(rq->doc, o, "usename", active[k][0]);
		yyjson_mut_obj_add_str(rq->doc, o, "state", active[k][1]);
		yyjson_mut_obj_add_str(rq->doc, o, "query", active[k][2]);
		yyjson_mut_obj_add_int(rq->doc, o, "duration_ms", 12 + k * 4100);
	}
	return CAT_OK;
}

static void stats(const struct cat_server *srv, yyjson_mut_doc *doc, yyjson_mut_val *o)
{
	yyjson_mut_val *t = yyjson_mut_obj_add_obj(doc, o, "row_counts");
	for (int i = 0; i < NTABLES; i++)
		yyjson_mut_obj_add_int(doc, t, tables[i].name, tables[i].rows);
}

/* ---- the table -------------------------------------------------------------- */

#define P_TABLE "'table':{'type':'string','description':'Table name, optionally schema-qualified, e.g. users or analytics.daily_revenue.'}," \
	"'schema':{'type':'string','description':'Schema of the table. Default: searched in public, then analytics.'}"

static const struct cat_tool tools[] = {
	{ "query", "Run a read-only query",
	  "Run a read-only SQL query. Understood forms: " FORMS ". Returns rows, rowCount and fields.",
	  "{'type':'object','properties':{"
	  "'sql':{'type':'string','description':'The SQL statement, e.g. SELECT count(*) FROM users'}},"
	  "'required':['sql']}",
	  "{'type':'object','properties':{'command':{'type':'string'},"
	  "'rows':{'type':'array','items':{'type':'object'},'description':'One object per row, keyed by column.'},"
	  "'rowCount':{'type':'integer'},"
	  "'fields':{'type':'array','items':{'type':'object','properties':{'name':{'type':'string'},'dataType':{'type':'string'}}}},"
	  "'truncated':{'type':'boolean','description':'True when rows were cut at 1000 for want of a LIMIT.'}},"
	  "'required':['rows','rowCount','fields']}",
	  CAT_RO | CAT_IDEMPOTENT, query },
	{ "list_schemas", "List schemas",
	  "List the user schemas of the database.",
	  "{'type':'object','properties':{}}",
	  NULL, CAT_RO | CAT_IDEMPOTENT, list_schemas },
	{ "list_tables", "List tables",
	  "List tables with their estimated row counts.",
	  "{'type':'object','properties':{'schema':{'type':'string','description':'Only tables of this schema.'}}}",
	  NULL, CAT_RO | CAT_IDEMPOTENT, list_tables },
	{ "describe_table", "Describe a table",
	  "Describe the columns, primary key and foreign keys of a table.",
	  "{'type':'object','properties':{" P_TABLE "},'required':['table']}",
	  "{'type':'object','properties':{'schema':{'type':'string'},'name':{'type':'string'},"
	  "'comment':{'type':'string'},'row_count':{'type':'integer'},"
	  "'columns':{'type':'array','items':{'type':'object','properties':{'name':{'type':'string'},"
	  "'type':{'type':'string'},'nullable':{'type':'boolean'},'default':{'type':['string','null']}},"
	  "'required':['name','type','nullable']}},"
	  "'primary_key':{'type':'array','items':{'type':'string'}},"
	  "'foreign_keys':{'type':'array','items':{'type':'object','properties':{'column':{'type':'string'},"
	  "'references_table':{'type':'string'},'references_column':{'type':'string'}}}}},"
	  "'required':['schema','name','columns']}",
	  CAT_RO | CAT_IDEMPOTENT, describe_table },
	{ "list_indexes", "List indexes",
	  "List the indexes of one table or of all tables.",
	  "{'type':'object','properties':{" P_TABLE "}}",
	  NULL, CAT_RO | CAT_IDEMPOTENT, list_indexes },
	{ "get_table_stats", "Get table statistics",
	  "Get size and activity statistics of a table.",
	  "{'type':'object','properties':{" P_TABLE "},'required':['table']}",
	  "{'type':'object','properties':{'schema':{'type':'string'},'table':{'type':'string'},"
	  "'row_count':{'type':'integer'},'table_bytes':{'type':'integer'},'index_bytes':{'type':'integer'},"
	  "'total_bytes':{'type':'integer'},'seq_scans':{'type':'integer'},'idx_scans':{'type':'integer'},"
	  "'dead_tuples':{'type':'integer'},'last_vacuum':{'type':'string'},'last_analyze':{'type':'string'}},"
	  "'required':['table','row_count','total_bytes']}",
	  CAT_RO | CAT_IDEMPOTENT, get_table_stats },
	{ "explain", "Explain a query",
	  "Show the query plan of a query in one of the forms query understands.",
	  "{'type':'object','properties':{"
	  "'sql':{'type':'string','description':'The SQL statement to explain.'},"
	  "'analyze':{'type':'boolean','description':'Also report timings, as EXPLAIN ANALYZE.'}},"
	  "'required':['sql']}",
	  "{'type':'object','properties':{'plan':{'type':'string'},'total_cost':{'type':'number'},"
	  "'estimated_rows':{'type':'integer'}},'required':['plan','total_cost','estimated_rows']}",
	  CAT_RO | CAT_IDEMPOTENT, explain },
	{ "list_extensions", "List extensions",
	  "List the installed extensions.",
	  "{'type':'object','properties':{}}",
	  NULL, CAT_RO | CAT_IDEMPOTENT, list_extensions },
	{ "get_database_info", "Get database info",
	  "Get the server version, encoding and size of the database.",
	  "{'type':'object','properties':{}}",
	  NULL, CAT_RO | CAT_IDEMPOTENT, get_database_info },
	{ "list_active_queries", "List active queries",
	  "List the queries running now, as in pg_stat_activity.",
	  "{'type':'object','properties':{'include_idle':{'type':'boolean',"
	  "'description':'Also list idle-in-transaction sessions.'}}}",
	  NULL, CAT_RO, list_active_queries },
};

static const struct cat_prompt prompt = {
	"explain_query", "Explain a query",
	"Ask for an explanation of a query and its plan.",
	"sql", "The SQL statement.",
	"Explain what this query does and whether it is efficient, using explain and "
	"describe_table: {}",
};

const struct cat_backend cat_postgres = {
	.name = "postgres",
	.title = "PostgreSQL (fake)",
	.tools = tools,
	.ntools = sizeof(tools) / sizeof(tools[0]),
	.readme = "# Fake PostgreSQL\n\nDatabase **acme**: users (1200 rows), products (250), orders (5400), "
		  "order_items (13100), events (48000), analytics.daily_revenue (365).\n\n"
		  "query understands `SELECT count(*) FROM t` and `SELECT * FROM t [WHERE id = n] LIMIT n`.\n",
	.stats = stats,
	.prompt = &prompt,
};
