/*
 * data.c: deterministic data for the fake back ends.
 *
 * Every generated record is seeded from a stable string naming it ("github
 * issue acme/api 17"), so a record reads the same in every run and does not
 * depend on which other records were generated before it.  The generator is
 * splitmix64 over an FNV-1a hash of that string.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "catalog.h"

void cat_rng_seed(struct cat_rng *r, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	uint64_t h = 1469598103934665603ull;
	for (const unsigned char *p = (const unsigned char *)buf; *p; p++) {
		h ^= *p;
		h *= 1099511628211ull;
	}
	r->s = h;
}

uint64_t cat_rng_next(struct cat_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int64_t cat_rng_range(struct cat_rng *r, int64_t lo, int64_t hi)
{
	if (hi <= lo)
		return lo;
	return lo + (int64_t)(cat_rng_next(r) % (uint64_t)(hi - lo + 1));
}

const char *cat_rng_pick(struct cat_rng *r, const char *const *v, size_t n)
{
	return v[cat_rng_next(r) % n];
}

void cat_iso_date(char out[32], int64_t epoch)
{
	time_t t = (time_t)epoch;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void cat_hex(struct cat_rng *r, char *out, size_t digits)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < digits; i++)
		out[i] = hex[cat_rng_next(r) & 15];
	out[digits] = '\0';
}

/* Openers are split around the subject: no format string comes from data. */
static const char *const openers[][2] = {
	{ "We noticed that ", " behaves differently after the last deploy." },
	{ "Several users reported problems with ", " this week." },
	{ "This came up during the on-call handover and concerns ", "." },
	{ "While reviewing the dashboards we found an issue in ", "." },
	{ "The current behaviour of ", " does not match the documentation." },
	{ "A customer escalation pointed us at ", "." },
};

static const char *const middles[] = {
	"The error rate climbs to about two percent during peak hours and drops back overnight.",
	"Retrying the request usually succeeds, which suggests a race rather than a hard failure.",
	"Logs show a timeout from the upstream service after roughly thirty seconds.",
	"The regression seems to have started with the dependency upgrade two weeks ago.",
	"Memory usage grows steadily until the pod is restarted by the orchestrator.",
	"Only requests with large payloads are affected; small ones complete normally.",
	"The staging environment reproduces it reliably with the seeded test data.",
	"Metrics from the load balancer confirm that the slow requests cluster on one node.",
	"A quick bisect narrowed it down to a handful of commits in the data layer.",
	"The workaround documented in the runbook no longer applies to the new version.",
	"We should add an alert so that this is caught before customers notice it.",
	"The fix probably needs a schema change, so it should go through review first.",
};

static const char *const closers[] = {
	"Steps to reproduce are in the linked runbook.",
	"Happy to pair on this if anyone has context.",
	"Tagging the owning team for triage.",
	"Please prioritise this for the next sprint.",
	"A minimal reproduction is attached below.",
	"Let us discuss the approach at the next sync.",
};

void cat_prose(struct cat_rng *r, char *out, size_t cap, size_t min,
	       const char *subject)
{
	size_t len = strlen(out);
	char sentence[256];
	int part = 0;
	uint32_t used = 0;  /* middles already said: no sentence twice */
	while (len < min && len + 1 < cap && part <= 10) {
		if (part == 0) {
			size_t k = cat_rng_next(r) % (sizeof(openers) / sizeof(openers[0]));
			snprintf(sentence, sizeof(sentence), "%s%s%s", openers[k][0],
				 subject, openers[k][1]);
		} else {
			size_t n = sizeof(middles) / sizeof(middles[0]);
			size_t k = cat_rng_next(r) % n;
			while (used & (1u << k))
				k = (k + 1) % n;
			used |= 1u << k;
			snprintf(sentence, sizeof(sentence), "%s", middles[k]);
		}
		part++;
		int n = snprintf(out + len, cap - len, "%s%s", len ? " " : "", sentence);
		if (n < 0 || (size_t)n >= cap - len)
			break;
		len += (size_t)n;
	}
	int n = snprintf(out + len, cap - len, "%s%s", len ? " " : "", CAT_PICK(r, closers));
	if (n < 0 || (size_t)n >= cap - len)
		out[len] = '\0';
}
