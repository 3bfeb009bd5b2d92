/* Unit tests of src/stages/telemetry.c: the span and trace ids that tie a
 * program's call spans to its root span without stored state. */
#include "unit.h"

#include "fixture.h"
#include "stages/telemetry.h"

static bool all_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return false;
	for (; *s; s++)
		if (!(('0' <= *s && *s <= '9') || ('a' <= *s && *s <= 'f')))
			return false;
	return true;
}

TEST(telemetry_ids_shape_and_uniqueness)
{
	char t1[33], t2[33], p1[17], p2[17], c1[17], c2[17];
	struct sl_err err;
	/* Nothing listens on the discard port: the state is all this needs. */
	struct sl_gen *g = t_gen_sluice("{\"telemetry\": {\"endpoint\": \"http://127.0.0.1:9\"}}", &err);
	const struct sl_telemetry *t = g ? sl_gen_state(g, &sl_stage_telemetry) : NULL;

	CHECK(t != NULL);
	if (!t) {
		sl_gen_unref(g);
		return;
	}
	sl_telemetry_trace_id(t, 1, t1);
	sl_telemetry_trace_id(t, 2, t2);
	sl_telemetry_program_span_id(1, p1);
	sl_telemetry_program_span_id(2, p2);
	sl_telemetry_call_span_id(1, c1);
	sl_telemetry_call_span_id(2, c2);
	CHECK(all_hex(t1, 32) && all_hex(t2, 32));
	CHECK(all_hex(p1, 16) && all_hex(c1, 16));
	CHECK(strcmp(t1, t2) != 0);
	/* Same id, different kinds: a program span never equals a call span. */
	CHECK(strcmp(p1, c1) != 0);
	CHECK(strcmp(p1, p2) != 0 && strcmp(c1, c2) != 0);
	/* Stable: the child derives its parent's id later, without state. */
	sl_telemetry_program_span_id(1, p2);
	CHECK_STR(p1, p2);
	CHECK(strcmp(c1, "0000000000000000") != 0);
	sl_gen_unref(g);
}
