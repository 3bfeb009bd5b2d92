/* Frame headers of the gateway <-> worker protocol; see frame.h. */
#include "sandbox/frame.h"

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void sl_frame_header(unsigned char out[SL_FRAME_HEADER], uint32_t kind, uint32_t len)
{
	put32(out, kind);
	put32(out + 4, len);
}

bool sl_frame_parse_header(const unsigned char in[SL_FRAME_HEADER], uint32_t *kind,
			   uint32_t *len, uint32_t max)
{
	*kind = get32(in);
	*len = get32(in + 4);
	return *kind >= SL_FRAME_RUN && *kind <= SL_FRAME_READY && *len <= max;
}
