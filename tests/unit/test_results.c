/* The governor's result store and text cutting. */
#include "unit.h"
#include "stages/results.h"
#include "stages/governor.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TEST(results_put_get)
{
	struct sl_results *r = sl_results_new(60000, 1u << 20);
	const char *a = sl_results_put(r, strdup("alpha"), 5), *b;
	char id_a[24];
	size_t len = 0;

	strcpy(id_a, a);
	b = sl_results_put(r, strdup("beta!"), 5);
	CHECK(strcmp(id_a, b) != 0);
	CHECK(memcmp(sl_results_get(r, id_a, &len), "alpha", 5) == 0 && len == 5);
	CHECK(sl_results_get(r, "r999", &len) == NULL);
	sl_results_free(r);
}

TEST(results_cap_evicts_oldest)
{
	struct sl_results *r = sl_results_new(60000, 10);
	char first[24];
	size_t len;

	strcpy(first, sl_results_put(r, strdup("123456"), 6));
	CHECK(sl_results_put(r, strdup("abcdef"), 6) != NULL);
	CHECK(sl_results_get(r, first, &len) == NULL); /* pushed out by the cap */
	CHECK(sl_results_put(r, strdup("this is over the cap"), 20) == NULL);
	sl_results_free(r);
}

TEST(results_expire)
{
	struct sl_results *r = sl_results_new(1, 1u << 20);
	char id[24];
	size_t len;

	strcpy(id, sl_results_put(r, strdup("soon gone"), 9));
	usleep(5000);
	CHECK(sl_results_get(r, id, &len) == NULL);
	sl_results_free(r);
}

TEST(governor_cut_text_keeps_head_and_tail)
{
	char text[10001];
	char *cut;

	for (int i = 0; i < 10000; i++)
		text[i] = (char)('a' + i % 26);
	text[10000] = '\0';
	cut = sl_governor_cut_text(text, 10000, 900, "r7", NULL);
	CHECK(strncmp(cut, text, 600) == 0);
	CHECK(strstr(cut, "characters omitted here; read them with read_result {\"result_id\": \"r7\"}") != NULL);
	CHECK(strcmp(cut + strlen(cut) - 225, text + 10000 - 225) == 0);
	CHECK(strlen(cut) < 1200);
	free(cut);
}

TEST(governor_cut_text_never_splits_utf8)
{
	/* 3-byte characters: a cut must land on a boundary. */
	char text[3001];
	char *cut, *mark;

	for (int i = 0; i < 1000; i++)
		memcpy(text + 3 * i, "\xe2\x82\xac", 3);
	text[3000] = '\0';
	cut = sl_governor_cut_text(text, 3000, 100, NULL, NULL);
	mark = strstr(cut, "\n[sluice:");
	CHECK(mark != NULL && (mark - cut) % 3 == 0);
	free(cut);
}
