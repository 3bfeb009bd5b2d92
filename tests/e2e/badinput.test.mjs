// Bad input on the client side, sent as raw JSON lines: the gateway answers
// with the right JSON-RPC error and the session goes on.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

import { connect, startRaw, catalog, closeAll, sleep } from './helpers.mjs';

after(closeAll);

let raw;
before(async () => {
	raw = startRaw({ servers: { github: catalog('github') }, sluice: { maxRequestBytes: 4096 } });
	const init = await raw.initialize();
	assert.ok(init.result, JSON.stringify(init));
});
after(() => raw?.close());

// Sends a line and returns the next message (any).
async function answer(line, ms = 3000) {
	raw.sendLine(line);
	return raw.next(() => true, ms);
}

// The session still answers a ping with a fresh id.
async function alive() {
	const r = await raw.request('ping', undefined, { ms: 3000 });
	assert.deepEqual(r.result, {});
}

describe('JSON-RPC errors', () => {
	test('malformed JSON -> -32700 with id null; the session goes on', async () => {
		for (const line of ['{"jsonrpc":"2.0","id":', 'not json at all', '{"a":1,}', '{"jsonrpc":"2.0","id":1,"method":"ping"']) {
			const r = await answer(line);
			assert.equal(r.error?.code, -32700, `${line} -> ${JSON.stringify(r)}`);
			assert.equal(r.id, null);
			assert.equal(r.jsonrpc, '2.0');
		}
		await alive();
	});

	test('invalid UTF-8 -> -32700', async () => {
		raw.child.stdin.write(Buffer.from('{"jsonrpc":"2.0","id":"u","method":"ping","params":{"x":"\xff\xfe"}}\n', 'latin1'));
		const r = await raw.next(() => true, 3000);
		assert.equal(r.error?.code, -32700, JSON.stringify(r));
		await alive();
	});

	test('unknown method -> -32601', async () => {
		const r = await raw.request('tools/frobnicate', {});
		assert.equal(r.error?.code, -32601, JSON.stringify(r));
		assert.match(r.error.message, /tools\/frobnicate/);
		await alive();
	});

	test('tools/call without name -> -32602', async () => {
		const r = await raw.request('tools/call', { arguments: {} });
		assert.equal(r.error?.code, -32602, JSON.stringify(r));
		const r2 = await raw.request('tools/call', { name: 'github__echo', arguments: [1, 2] });
		assert.equal(r2.error?.code, -32602, JSON.stringify(r2));
		const r3 = await raw.request('tools/call', { name: 42 });
		assert.equal(r3.error?.code, -32602, JSON.stringify(r3));
		await alive();
	});

	test('a batch (JSON array) -> -32600', async () => {
		const r = await answer('[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","id":"b2","method":"ping"}]');
		assert.equal(r.error?.code, -32600, JSON.stringify(r));
		assert.ok(await raw.none((m) => m.id === 'b1' || m.id === 'b2', 300), 'batch members not answered');
		const e = await answer('[]');
		assert.equal(e.error?.code, -32600, JSON.stringify(e));
		await alive();
	});

	test('not a request object -> -32600', async () => {
		for (const line of ['"hello"', '42', 'null', '{}', '{"id":"nv","method":"ping"}', '{"jsonrpc":"1.0","id":"v1","method":"ping"}', '{"jsonrpc":"2.0","id":"m","method":7}']) {
			const r = await answer(line);
			assert.equal(r.error?.code, -32600, `${line} -> ${JSON.stringify(r)}`);
		}
		await alive();
	});

	test('params that are not an object -> -32602', async () => {
		const r = await answer('{"jsonrpc":"2.0","id":"pa","method":"tools/list","params":[1]}');
		assert.equal(r.id, 'pa');
		assert.equal(r.error?.code, -32602, JSON.stringify(r));
		await alive();
	});

	test('unknown notifications and stray responses are ignored silently', async () => {
		raw.notify('notifications/whatever', { x: 1 });
		raw.send({ jsonrpc: '2.0', id: 'nobody-asked', result: {} });
		raw.send({ jsonrpc: '2.0', id: 'nobody-asked-2', error: { code: -1, message: 'x' } });
		assert.ok(await raw.none(() => true, 300), 'nothing answered');
		await alive();
	});
});

describe('framing', () => {
	test('two messages in one write, one message over two writes, CRLF', async () => {
		raw.child.stdin.write('{"jsonrpc":"2.0","id":"f1","method":"ping"}\n{"jsonrpc":"2.0","id":"f2","method":"ping"}\n');
		assert.deepEqual((await raw.next((m) => m.id === 'f1')).result, {});
		assert.deepEqual((await raw.next((m) => m.id === 'f2')).result, {});
		raw.child.stdin.write('{"jsonrpc":"2.0","id":"f3",');
		await sleep(50);
		raw.child.stdin.write('"method":"ping"}\n');
		assert.deepEqual((await raw.next((m) => m.id === 'f3')).result, {});
		raw.child.stdin.write('{"jsonrpc":"2.0","id":"f4","method":"ping"}\r\n');
		assert.deepEqual((await raw.next((m) => m.id === 'f4')).result, {});
	});

	test('empty lines are ignored; whitespace-only lines do no harm', async () => {
		raw.child.stdin.write('\n\n');
		assert.ok(await raw.none(() => true, 200), 'no answer to empty lines');
		// A line of blanks is not JSON: ignoring it or a -32700 are both fine.
		raw.child.stdin.write('   \n');
		const m = await raw.next(() => true, 200).catch(() => null);
		if (m) assert.equal(m.error?.code, -32700, JSON.stringify(m));
		await alive();
	});

	test('every output line is one JSON object', () => {
		for (const { msg, line } of raw.all) {
			assert.ok(!msg.__unparsable, `unparsable output: ${line.slice(0, 200)}`);
			assert.equal(msg.jsonrpc, '2.0');
		}
	});
});

describe('sluice.maxRequestBytes 4096', () => {
	test('a 100 KB line -> -32600 mentioning the limit; the next request is answered', async () => {
		raw.send({ jsonrpc: '2.0', id: 'huge-in', method: 'tools/call', params: { name: 'github__echo', arguments: { pad: 'z'.repeat(100 * 1024) } } });
		const r = await raw.next(() => true, 3000);
		assert.equal(r.error?.code, -32600, JSON.stringify(r));
		assert.match(r.error.message, /4096|maxRequestBytes|limit/);
		const echo = await raw.request('tools/call', { name: 'github__echo', arguments: { small: true } });
		assert.deepEqual(echo.result?.structuredContent, { arguments: { small: true } });
		assert.ok(await raw.none((m) => m.id === 'huge-in' && 'result' in m, 200), 'the oversized call never ran');
	});

	test('exactly at the limit is accepted, one byte over is not', async () => {
		const make = (id, size) => {
			const head = `{"jsonrpc":"2.0","id":"${id}","method":"ping","params":{"pad":"`;
			return head + 'y'.repeat(size - head.length - 3) + '"}}';
		};
		const at = make('at', 4096);
		assert.equal(Buffer.byteLength(at), 4096);
		assert.deepEqual((await answer(at)).result, {});
		const over = make('over', 4097);
		const r = await answer(over);
		assert.equal(r.error?.code, -32600, JSON.stringify(r));
		await alive();
	});

	test('an SDK client sending an oversized request gets an answer to it (not a hang)', async () => {
		// The SDK writes "id" last; without the id in the error the request
		// can only time out.
		const gw = await connect({ servers: { github: catalog('github') }, sluice: { maxRequestBytes: 4096 } });
		try {
			const t0 = Date.now();
			await assert.rejects(
				gw.client.callTool({ name: 'github__echo', arguments: { pad: 'q'.repeat(10000) } }, undefined, { timeout: 3000 }),
				(e) => {
					assert.ok(e instanceof McpError, String(e));
					assert.equal(e.code, -32600, `got ${e.code} ${e.message} after ${Date.now() - t0} ms`);
					return true;
				},
			);
			const ok = await gw.client.callTool({ name: 'github__echo', arguments: { after: 'oversize' } });
			assert.deepEqual(ok.structuredContent, { arguments: { after: 'oversize' } });
		} finally {
			await gw.close();
		}
	});
});

describe('duplicate ids in flight', () => {
	test('two requests with the same id each get one answer', async () => {
		raw.sendLine('{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"github__slow","arguments":{"ms":200}}}');
		raw.sendLine('{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"github__slow","arguments":{"ms":50}}}');
		const a = await raw.next((m) => m.id === 'dup', 3000);
		const b = await raw.next((m) => m.id === 'dup', 3000);
		assert.deepEqual([a, b].map((m) => m.result?.content?.[0]?.text).sort(), ['slept 200 ms', 'slept 50 ms']);
		await alive();
	});
});
