#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_sandbox.c: worker byte streams of
little-endian frames (u32 kind, u32 length, JSON), see src/sandbox/frame.h.
The first byte of each seed picks how the worker exits (0..3).
Run from the repository root: python3 tests/fuzz/seeds-sandbox.py"""
import json, struct, os

READY, CALL, DONE = 5, 2, 4
out = "tests/fuzz/corpus/sandbox"
os.makedirs(out, exist_ok=True)

def frame(kind, obj):
    b = obj.encode() if isinstance(obj, str) else json.dumps(obj).encode()
    return struct.pack("<II", kind, len(b)) + b

ready = frame(READY, {"boundaries": 0})
seeds = {
    "ok": b"\0" + ready + frame(DONE, {"ok": True, "value": "42", "console": "log\n"}),
    "error": b"\0" + ready + frame(DONE, {"ok": False, "kind": "error", "error": "TypeError: x", "console": ""}),
    "calls": b"\0" + ready
        + frame(CALL, {"id": 0, "server": "github", "tool": "list", "args": {"q": 1}})
        + frame(CALL, {"id": 1, "server": "x", "tool": "y", "args": {}})
        + frame(DONE, {"ok": True, "value": "[]", "console": ""}),
    "bad_order": b"\0" + frame(DONE, {"ok": True, "value": "1", "console": ""}),
    "bad_json": b"\1" + ready + frame(CALL, '{"id":0,"server":'),
    "huge_header": b"\2" + ready + struct.pack("<II", DONE, 0xFFFFFFF0),
    "unknown_kind": b"\3" + ready + struct.pack("<II", 9, 2) + b"{}",
    "split_exit": b"\2" + ready + frame(CALL, {"id": 0, "server": "s", "tool": "t", "args": {}})[:11],
}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
