/*
 * serialize: the floor for producing a tools/list's bytes, what the scale
 * benchmark (bench/scale.mjs) holds the gateway's listing to.
 *
 *   serialize -n 20 FILE
 *
 * Reads FILE (JSON), builds it once as a mutable yyjson document, then
 * writes it n times with yyjson_mut_write and prints the median time in
 * microseconds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "yyjson.h"

int main(int argc, char **argv)
{
	int n = 20;
	const char *file = NULL;
	yyjson_doc *doc;
	yyjson_mut_doc *m;
	double *t;

	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "-n") && a + 1 < argc)
			n = atoi(argv[++a]);
		else
			file = argv[a];
	}
	if (!file || n < 1) {
		fprintf(stderr, "usage: serialize [-n N] FILE\n");
		return 2;
	}
	doc = yyjson_read_file(file, 0, NULL, NULL);
	if (!doc) {
		fprintf(stderr, "serialize: %s is not JSON\n", file);
		return 1;
	}
	m = yyjson_doc_mut_copy(doc, NULL);
	t = calloc((size_t)n, sizeof(*t));
	if (!m || !t)
		return 1;
	for (int i = 0; i < n; i++) {
		size_t len;
		double t0 = now_us();
		char *s = yyjson_mut_write(m, 0, &len);
		t[i] = now_us() - t0;
		free(s);
	}
	sort_latencies(t, (size_t)n);
	printf("%.0f\n", t[n / 2]);
	free(t);
	yyjson_mut_doc_free(m);
	yyjson_doc_free(doc);
	return 0;
}
