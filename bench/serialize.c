/*
 * serialize: the floor for producing a tools/list's bytes, what the scale
 * benchmark (bench/scale.mjs) holds the gateway's listing to.
 *
 *   serialize -n 20 FILE
 *   serialize -s FILE
 *
 * Reads FILE (JSON), builds it once as a mutable yyjson document, then
 * writes it n times with yyjson_mut_write and prints the median time in
 * microseconds.
 *
 * With -s it is the floor for delivering those bytes instead: it writes
 * the result once as a JSON-RPC response line, then answers every line it
 * reads on standard input with that line on standard output, with blocking
 * writes, as fast as a process holding the answer in memory can. The scale
 * benchmark times it through the same client as the gateway.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "yyjson.h"

/* -s: answers each line of standard input with the response line. */
static int serve(yyjson_mut_doc *m)
{
	size_t len, off;
	char *result = yyjson_mut_write(m, 0, &len);
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":";
	char *line = result ? malloc(sizeof(head) + len + 2) : NULL;
	char in[4096];

	if (!line)
		return 1;
	memcpy(line, head, sizeof(head) - 1);
	off = sizeof(head) - 1;
	memcpy(line + off, result, len);
	off += len;
	memcpy(line + off, "}\n", 2);
	len = off + 2;
	free(result);
	while (fgets(in, sizeof(in), stdin)) {
		if (!strchr(in, '\n'))
			continue;
		for (off = 0; off < len;) {
			ssize_t w = write(1, line + off, len - off);
			if (w <= 0)
				return 1;
			off += (size_t)w;
		}
	}
	free(line);
	return 0;
}

int main(int argc, char **argv)
{
	int n = 20;
	bool serving = false;
	const char *file = NULL;
	yyjson_doc *doc;
	yyjson_mut_doc *m;
	double *t;

	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "-n") && a + 1 < argc)
			n = atoi(argv[++a]);
		else if (!strcmp(argv[a], "-s"))
			serving = true;
		else
			file = argv[a];
	}
	if (!file || n < 1) {
		fprintf(stderr, "usage: serialize [-n N] FILE | -s FILE\n");
		return 2;
	}
	doc = yyjson_read_file(file, 0, NULL, NULL);
	if (!doc) {
		fprintf(stderr, "serialize: %s is not JSON\n", file);
		return 1;
	}
	m = yyjson_doc_mut_copy(doc, NULL);
	if (serving)
		return m ? serve(m) : 1;
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
