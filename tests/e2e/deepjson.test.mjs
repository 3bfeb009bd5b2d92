// The depth gate (src/core/json.h) and request ids: JSON nested past 128
// levels from a client, an upstream or over HTTP is refused with an error
// naming the limit, the gateway keeps serving, and a request whose id is an
// object or an array is answered -32600 at once.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startRaw, startHttp, catalog, tinyServer, closeAll, LEGACY } from './helpers.mjs';

after(closeAll);

const DEPTH = 300000; // 600 KB of brackets, under the 4 MiB request cap
const deep = (n = DEPTH) => '['.repeat(n) + ']'.repeat(n);
const LIMIT = /nested deeper than 128 levels/;

// The session still answers a ping with a fresh id.
async function alive(raw) {
	const r = await raw.request('ping', undefined, { ms: 3000 });
	assert.deepEqual(r.result, {}, raw.stderr().slice(-2000));
}

describe('a client over stdio', () => {
	let raw;
	before(() => {
		raw = startRaw({ servers: { github: catalog('github') } });
	});
	after(() => raw?.close());

	test('initialize capabilities nested 300,000 deep -> -32600; a sane initialize then works', async () => {
		raw.sendLine(`{"jsonrpc":"2.0","id":"i0","method":"initialize","params":{"protocolVersion":"${LEGACY}",` +
			`"clientInfo":{"name":"deep","version":"1"},"capabilities":{"experimental":{"x":${deep()}}}}}`);
		const r = await raw.next((m) => m.id === 'i0', 5000);
		assert.equal(r.error?.code, -32600, JSON.stringify(r));
		assert.match(r.error.message, LIMIT);
		const init = await raw.initialize();
		assert.ok(init.result, JSON.stringify(init));
		const tools = await raw.request('tools/list', {});
		assert.ok(tools.result.tools.some((t) => t.name === 'github__echo'), JSON.stringify(tools));
	});

	test('tools/call whose arguments nest 300,000 arrays -> -32600 with its id; the gateway keeps serving', async () => {
		raw.sendLine(`{"jsonrpc":"2.0","id":"d1","method":"tools/call","params":{"name":"github__echo","arguments":{"text":${deep()}}}}`);
		const r = await raw.next((m) => m.id === 'd1', 5000);
		assert.equal(r.error?.code, -32600, JSON.stringify(r));
		assert.match(r.error.message, LIMIT);
		await alive(raw);
		const ok = await raw.request('tools/call', { name: 'github__echo', arguments: { text: 'still here' } });
		assert.match(JSON.stringify(ok.result), /still here/);
		assert.equal(raw.exited(), null);
	});

	test('exactly 128 levels is accepted', async () => {
		// root, params, arguments: 3 levels around 125 arrays.
		raw.sendLine(`{"jsonrpc":"2.0","id":"d2","method":"tools/call","params":{"name":"github__echo","arguments":{"text":${deep(125)}}}}`);
		const r = await raw.next((m) => m.id === 'd2', 5000);
		assert.equal(r.error, undefined, JSON.stringify(r).slice(0, 500));
		raw.sendLine(`{"jsonrpc":"2.0","id":"d3","method":"tools/call","params":{"name":"github__echo","arguments":{"text":${deep(126)}}}}`);
		const r2 = await raw.next((m) => m.id === 'd3', 5000);
		assert.equal(r2.error?.code, -32600, JSON.stringify(r2).slice(0, 500));
	});

	test('a request whose id is an object or an array is answered -32600 at once', async () => {
		for (const id of ['{"a":1}', '[1]']) {
			raw.sendLine(`{"jsonrpc":"2.0","id":${id},"method":"ping"}`);
			const r = await raw.next((m) => 'error' in m && m.id === null, 3000);
			assert.equal(r.error.code, -32600, JSON.stringify(r));
			assert.match(r.error.message, /id must be a string or an integer/);
		}
		await alive(raw);
	});
});

describe('a hostile upstream', () => {
	let raw;
	before(async () => {
		const tiny = tinyServer({
			name: 'tiny',
			// JSON.stringify recurses: the deep parts go in as text.
			prelude: `const deep = '['.repeat(${DEPTH}) + ']'.repeat(${DEPTH});
const stringify = JSON.stringify;
JSON.stringify = (v) => stringify(v).replaceAll('"@DEEP@"', deep);`,
			tools: `[
				{ name: 'fine', inputSchema: { type: 'object' } },
				{ name: 'deep_in', inputSchema: { type: 'object', properties: { x: '@DEEP@' } } },
				{ name: 'deep_out', inputSchema: { type: 'object' }, outputSchema: { type: 'object', properties: { x: '@DEEP@' } } },
				{ name: 'deep_result', inputSchema: { type: 'object' } },
			]`,
			call: `(p, ok) => ok(p.name === 'deep_result'
				? { content: [{ type: 'text', text: 'x' }], structuredContent: { x: '@DEEP@' } }
				: { content: [{ type: 'text', text: 'fine' }] })`,
		});
		raw = startRaw({ servers: { tiny } });
		const init = await raw.initialize();
		assert.ok(init.result, JSON.stringify(init));
	});
	after(() => raw?.close());

	test('a tool whose inputSchema or outputSchema is too deep is left out, with a warning naming it', async () => {
		const r = await raw.request('tools/list', {}, { ms: 15000 });
		const names = r.result.tools.map((t) => t.name).filter((n) => n.startsWith('tiny__')).sort();
		assert.deepEqual(names, ['tiny__deep_result', 'tiny__fine'], raw.stderr().slice(-2000));
		assert.match(raw.stderr(), /server 'tiny': tool 'deep_in' left out: its definition is JSON nested deeper than 128/);
		assert.match(raw.stderr(), /server 'tiny': tool 'deep_out' left out/);
	});

	test('a response over the limit fails its call with the reason; the gateway keeps serving', async () => {
		const r = await raw.request('tools/call', { name: 'tiny__deep_result', arguments: {} }, { ms: 10000 });
		assert.match(JSON.stringify(r.error ?? r.result), /server 'tiny' sent a message JSON nested deeper than 128/);
		const ok = await raw.request('tools/call', { name: 'tiny__fine', arguments: {} });
		assert.match(JSON.stringify(ok.result), /fine/);
		await alive(raw);
	});
});

describe('a client over HTTP', () => {
	let gw, sid;
	// One POST with a bounded wait: a request never answered fails the test.
	const post = (body, headers = {}) =>
		fetch(gw.url, {
			method: 'POST',
			headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
			body,
			signal: AbortSignal.timeout(3000),
		}).then(async (res) => ({ status: res.status, headers: res.headers, text: await res.text() }));
	const json = (text) => JSON.parse(text.startsWith('{') ? text : text.split('\n').filter((l) => l.startsWith('data: ')).at(-1).slice(6));

	before(async () => {
		gw = await startHttp({ servers: { github: catalog('github') }, sluice: { http: { maxRequestsPerSession: 2 } } });
		const init = await post(JSON.stringify({
			jsonrpc: '2.0', id: 1, method: 'initialize',
			params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'deep', version: '1' } },
		}));
		sid = init.headers.get('mcp-session-id');
		assert.ok(sid, init.text);
		await post('{"jsonrpc":"2.0","method":"notifications/initialized"}', { 'mcp-session-id': sid });
	});
	after(() => gw?.close());

	test('a POST whose id is an object or an array is answered -32600 at once and holds no slot', async () => {
		// More of them than the session's requests in flight.
		for (let i = 0; i < 4; i++) {
			const r = await post(`{"jsonrpc":"2.0","id":${i % 2 ? '[1]' : '{"a":1}'},"method":"ping"}`, { 'mcp-session-id': sid });
			assert.equal(r.status, 400, r.text);
			assert.equal(json(r.text).error.code, -32600, r.text);
		}
		const ok = await post('{"jsonrpc":"2.0","id":"p","method":"ping"}', { 'mcp-session-id': sid });
		assert.deepEqual(json(ok.text).result, {}, ok.text);
	});

	test('a tools/call nested 300,000 deep -> -32600 naming the limit; the gateway keeps serving', async () => {
		const r = await post(`{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"github__echo","arguments":{"text":${deep()}}}}`,
			{ 'mcp-session-id': sid });
		assert.equal(r.status, 400, r.text);
		const e = json(r.text);
		assert.equal(e.error.code, -32600, r.text);
		assert.equal(e.id, 'd');
		assert.match(e.error.message, LIMIT);
		const ok = await post('{"jsonrpc":"2.0","id":"p2","method":"tools/call","params":{"name":"github__echo","arguments":{"text":"hi"}}}',
			{ 'mcp-session-id': sid });
		assert.match(ok.text, /hi/);
	});
});
