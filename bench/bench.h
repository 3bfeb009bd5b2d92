/*
 * What the bench programs share: a monotonic clock in microseconds and the
 * sort their percentiles are read from.
 */
#ifndef SL_BENCH_H
#define SL_BENCH_H

#include <stdlib.h>
#include <time.h>

static inline double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static inline int bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts n latencies in place, for v[n / 2] (p50) and v[n * 99 / 100] (p99). */
static inline void sort_latencies(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), bench_cmp);
}

#endif
