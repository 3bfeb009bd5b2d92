/*
 * The gateway <-> sandbox worker wire protocol. Each frame is
 *
 *   u32 kind | u32 length | length bytes of JSON      (little endian)
 *
 * Kinds are numbered once and never renumbered or reused. The RUN frame
 * carries the protocol version; a worker that does not speak it exits.
 * Both sides treat the other as hostile: a length is checked against the
 * cap before a byte of the payload is read, and a frame that is too large,
 * of an unknown kind or not valid JSON ends the worker.
 *
 *   5 READY   worker -> gateway  {"boundaries":n}   (prepared, kernel boundary up)
 *   1 RUN     gateway -> worker  {"v":1,"code":...,"servers":[[raw,ident,[tool,...]],...],
 *                                 "seed":[4 x u32],"clock"?:ms}
 *                                (the tools: what Object.keys(tools.<server>) lists, at most
 *                                SL_FRAME_KEYS_MAX bytes of JSON in all)
 *   2 CALL    worker -> gateway  {"id":n,"server":s,"tool":t,"args":{...}}
 *   3 RESULT  gateway -> worker  {"id":n,"ok":true,"value":v} | {"id":n,"ok":false,"error":msg}
 *                                (+ "pausedMs": time spent waiting for a person, added to the deadline)
 *   4 DONE    worker -> gateway  {"ok":true,"value":text,"console":text}
 *                                | {"ok":false,"kind":k,"error":msg,"console":text}
 */
#ifndef SL_SANDBOX_FRAME_H
#define SL_SANDBOX_FRAME_H

#include "core/common.h"

#define SL_FRAME_VERSION 1
#define SL_FRAME_HEADER 8
/* Bytes of JSON a RUN frame spends on the servers' tool names at most
 * (beyond: the names that fit); the worker's cap for RUN adds them. */
#define SL_FRAME_KEYS_MAX (256u << 10)

enum sl_frame_kind {
	SL_FRAME_RUN = 1,
	SL_FRAME_CALL = 2,
	SL_FRAME_RESULT = 3,
	SL_FRAME_DONE = 4,
	SL_FRAME_READY = 5,
};

/* Writes the 8-byte header for a payload of len bytes. */
void sl_frame_header(unsigned char out[SL_FRAME_HEADER], uint32_t kind, uint32_t len);
/* Reads a header; returns false if kind is unknown or len > max. */
bool sl_frame_parse_header(const unsigned char in[SL_FRAME_HEADER], uint32_t *kind,
			   uint32_t *len, uint32_t max);

#endif
