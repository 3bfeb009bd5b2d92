// sluice's HTTP front end serves the 2024-11-05 HTTP+SSE transport too
// (docs/internals/HTTP.md, "HTTP+SSE"): GET /sse opens a session and its
// stream, whose first event names POST /messages?sessionId=<id>; every
// message the session sends is an event of that stream. Real clients: the
// SDK 1.0.4 client (sdk-1.0) and the SDK 1.x SSEClientTransport.
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';

import { EventSource } from 'eventsource';
import { Client as OldClient } from 'sdk-1.0/client/index.js';
import { SSEClientTransport as OldSSE } from 'sdk-1.0/client/sse.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { LEGACY, MODERN, catalog, closeAll, eventually, httpRequest, modernMeta, startHttp, textOf, withTimeout } from './helpers.mjs';

// The SDK 1.0.x client uses the global EventSource (a browser's); Node 20 has none.
globalThis.EventSource ??= EventSource;

const OLD = '2024-11-05';
const TOKEN = 'sse-front-token-0123456789';
const github = () => ({ github: catalog('github') });
const started = [];
async function gateway(sluice = {}) {
	const gw = await startHttp({ servers: github(), sluice });
	started.push(gw);
	return gw;
}
after(async () => {
	await closeAll();
	for (const g of started) assert.doesNotMatch(g.stderr(), /Sanitizer|runtime error/, g.stderr().slice(-3000));
});

// Records every message a transport delivers (the Protocol sets onmessage).
function spy(transport) {
	const seen = [];
	let fn;
	Object.defineProperty(transport, 'onmessage', {
		configurable: true,
		get: () => fn && ((m, extra) => (seen.push(m), fn(m, extra))),
		set: (f) => (fn = f),
	});
	return seen;
}

const initialize = (id = 0, version = OLD) => ({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw-sse', version: '1' } } });

// POST one message to an HTTP+SSE session's endpoint (path with its query).
const postTo = (gw, endpoint, body, headers = {}) => httpRequest(
	{ host: '127.0.0.1', port: gw.port, path: endpoint, method: 'POST', headers: { 'content-type': 'application/json', accept: '*/*', ...headers } },
	body, 15000);

// GET /sse on a raw socket: resolves once the endpoint event is in, with
// { socket, endpoint, text(), events() (the message events' data, parsed),
// closed }.
function openSse(gw, headers = {}) {
	const s = net.connect({ port: gw.port, host: '127.0.0.1' });
	let text = '';
	const closed = new Promise((resolve) => s.on('close', resolve));
	const events = () => [...text.matchAll(/event: message\ndata: (.*)\n\n/g)].map((m) => JSON.parse(m[1]));
	const opened = new Promise((resolve, reject) => {
		s.setEncoding('utf8');
		s.on('data', (d) => {
			text += d;
			const m = /event: endpoint\ndata: (\S+)\n\n/.exec(text);
			if (m) resolve({ socket: s, endpoint: m[1], text: () => text, events, closed });
			else if (/^HTTP\/1\.1 (?!200)/.test(text)) reject(new Error(text));
		});
		s.on('error', reject);
		s.on('close', () => reject(new Error(`closed: ${text}`)));
	});
	const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
	s.write(`GET /sse HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nAccept: text/event-stream\r\n${extra}\r\n`);
	return withTimeout(opened, 5000, 'the endpoint event').catch((e) => {
		s.destroy();
		throw e;
	});
}

// A raw session, initialized: { ...openSse(), post(body) }.
async function rawSession(gw) {
	const g = await openSse(gw);
	const post = (body, headers) => postTo(gw, g.endpoint, body, headers);
	assert.equal((await post(initialize())).status, 202);
	await eventually(() => g.events().some((m) => m.id === 0), 5000, 20, 'the initialize answer');
	assert.equal((await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).status, 202);
	return { ...g, post };
}

describe('HTTP+SSE clients', () => {
	test('the SDK 1.0.4 client lists and calls a tool over SSEClientTransport, and 2024-11-05 is agreed', async () => {
		const gw = await gateway();
		const transport = new OldSSE(new URL(`http://127.0.0.1:${gw.port}/sse`));
		const seen = spy(transport);
		const client = new OldClient({ name: 'old-sse', version: '1.0.4' }, { capabilities: {} });
		await withTimeout(client.connect(transport), 15000, 'the SDK 1.0.4 client to connect');
		assert.equal(seen.find((m) => m.result?.protocolVersion).result.protocolVersion, OLD);
		assert.match(transport._endpoint.href, new RegExp(`^http://127\\.0\\.0\\.1:${gw.port}/messages\\?sessionId=[0-9a-f]{32}$`));
		const { tools } = await client.listTools();
		assert.ok(tools.some((t) => t.name === 'github__echo'), tools.map((t) => t.name).join(' '));
		const r = await client.callTool({ name: 'github__echo', arguments: { era: OLD } });
		assert.deepEqual(JSON.parse(r.content[0].text), { era: OLD });

		// Closing the stream ends the session: a later POST is not found.
		const endpoint = transport._endpoint.pathname + transport._endpoint.search;
		await client.close();
		await eventually(async () => (await postTo(gw, endpoint, { jsonrpc: '2.0', id: 9, method: 'ping' })).status === 404, 5000, 50, 'the session to end with its stream');
	});

	test('the SDK 1.x SSEClientTransport: 2025-11-25, an elicitation relayed on the stream, progress', async () => {
		// Upstreams hear the first client's capabilities: a gateway of its own.
		const gw = await gateway();
		const transport = new SSEClientTransport(new URL(`http://127.0.0.1:${gw.port}/sse`));
		const seen = spy(transport);
		const asked = [];
		const client = new Client({ name: 'sse-1x', version: '1.0.0' }, { capabilities: { elicitation: {} } });
		client.setRequestHandler(ElicitRequestSchema, (req) => (asked.push(req.params.message), { action: 'accept', content: { answer: 'over-sse' } }));
		await withTimeout(client.connect(transport), 15000, 'the SDK 1.x client to connect');
		// Closed whatever happens: an open SSE client would keep the file from ending.
		try {
			assert.equal(seen.find((m) => m.result?.protocolVersion).result.protocolVersion, LEGACY);
			const r = await client.callTool({ name: 'github__ask_user', arguments: { question: 'Which transport?' } });
			assert.deepEqual(JSON.parse(textOf(r)), { action: 'accept', content: { answer: 'over-sse' } });
			assert.deepEqual(asked, ['Which transport?']);
			assert.ok(seen.some((m) => m.method === 'elicitation/create'), 'the request came on the stream');

			const progress = [];
			const p = await client.callTool({ name: 'github__progress', arguments: { steps: 3, interval_ms: 10 } }, undefined, { onprogress: (e) => progress.push(e.progress) });
			assert.match(textOf(p), /done 3/);
			// Every progress went out on the stream, in order (the spy sees the
			// wire). The SDK 1.x client itself drops the progress that reaches
			// it in the same read as the response (tests/servers/catalog/
			// testtools.c), which a loaded machine can make happen for the last
			// two of three (CI saw [1]): its handler sees the first at least,
			// and what it sees is in order.
			const wire = seen.filter((m) => m.method === 'notifications/progress').map((m) => m.params.progress);
			assert.deepEqual(wire.slice(-3), [1, 2, 3]);
			assert.equal(progress[0], 1, JSON.stringify(progress));
			assert.ok(progress.length <= 3 && progress.every((v, i) => v === i + 1), JSON.stringify(progress));
		} finally {
			await client.close();
		}
	});

	test('with a bearer token: GET /sse and POST /messages need it', async () => {
		const gw = await gateway({ http: { bearerToken: TOKEN } });
		const sse = (headers) => httpRequest({ host: '127.0.0.1', port: gw.port, path: '/sse', method: 'GET', headers: { accept: 'text/event-stream', ...headers } }, undefined, 5000);
		const r = await sse({});
		assert.equal(r.status, 401, r.text);
		assert.equal((await sse({ authorization: 'Bearer wrong' })).status, 401);

		const auth = { authorization: `Bearer ${TOKEN}` };
		const g = await openSse(gw, auth);
		assert.equal((await postTo(gw, g.endpoint, initialize())).status, 401, 'a POST without the token');
		assert.equal((await postTo(gw, g.endpoint, initialize(), auth)).status, 202);

		// A real client with the token.
		const transport = new SSEClientTransport(new URL(`http://127.0.0.1:${gw.port}/sse`), { requestInit: { headers: auth } });
		const client = new Client({ name: 'sse-token', version: '1.0.0' }, { capabilities: {} });
		await withTimeout(client.connect(transport), 15000, 'connect with the token');
		const c = await client.callTool({ name: 'github__echo', arguments: { token: 'yes' } });
		assert.deepEqual(JSON.parse(textOf(c)), { token: 'yes' });
		await client.close();
		g.socket.destroy();
	});
});

describe('HTTP+SSE: bounds and hostile input', () => {
	test('a sessionId that does not exist, none, or one of /mcp: 404 or 400', async () => {
		const gw = await gateway();
		const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
		const bad = await postTo(gw, '/messages?sessionId=00000000000000000000000000000000', ping);
		assert.equal(bad.status, 404, bad.text);
		assert.equal(bad.json.error.message, 'Session not found');
		assert.equal((await postTo(gw, '/messages', ping)).status, 400);
		// A Streamable HTTP session is not reachable here, nor an SSE one on /mcp.
		const init = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST' }, initialize(0, LEGACY));
		assert.equal(init.status, 200, init.text);
		assert.equal((await postTo(gw, `/messages?sessionId=${init.headers['mcp-session-id']}`, ping)).status, 404);
		const g = await openSse(gw);
		const sid = /sessionId=(\w+)/.exec(g.endpoint)[1];
		const viaMcp = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST', headers: { 'mcp-session-id': sid } }, ping);
		assert.equal(viaMcp.status, 404, viaMcp.text);
		g.socket.destroy();
	});

	test('the wrong method, Accept or Content-Type, and a 2026-07-28 request: refused clearly', async () => {
		const gw = await gateway();
		const req = (path, method, headers, body) => httpRequest({ host: '127.0.0.1', port: gw.port, path, method, headers }, body, 5000);
		const wrong = await req('/sse', 'POST', {}, initialize());
		assert.equal(wrong.status, 405);
		assert.equal(wrong.headers.allow, 'GET');
		assert.equal((await req('/messages', 'GET', {})).headers.allow, 'POST');
		assert.equal((await req('/sse', 'GET', { accept: 'application/json' })).status, 406);
		const g = await rawSession(gw);
		assert.equal((await postTo(gw, g.endpoint, 'x', { 'content-type': 'text/plain' })).status, 415);
		assert.equal((await postTo(gw, g.endpoint, '{"jsonrpc":')).status, 400);
		// 2026-07-28 is not served on this transport: by header or by _meta.
		const modern = await postTo(gw, g.endpoint, { jsonrpc: '2.0', id: 5, method: 'tools/list', params: { _meta: modernMeta() } });
		assert.equal(modern.status, 400, modern.text);
		assert.match(modern.json.error.message, /HTTP\+SSE transport .* serves the session era only.*2026-07-28 client uses POST \/mcp/);
		const byHeader = await postTo(gw, g.endpoint, { jsonrpc: '2.0', id: 6, method: 'tools/list' }, { 'mcp-protocol-version': MODERN });
		assert.equal(byHeader.status, 400, byHeader.text);
		const get = await req('/sse', 'GET', { accept: 'text/event-stream', 'mcp-protocol-version': MODERN });
		assert.equal(get.status, 400, get.text);
		// The session is served still.
		assert.equal((await g.post({ jsonrpc: '2.0', id: 7, method: 'tools/list' })).status, 202);
		await eventually(() => g.events().some((m) => m.id === 7 && m.result?.tools), 5000, 20, 'the list');
		g.socket.destroy();
	});

	test('an oversized message: 413; a flood of requests: 429 past maxRequestsPerSession', async () => {
		const gw = await gateway({ http: { maxBodyBytes: 4096, maxRequestsPerSession: 2 } });
		const g = await rawSession(gw);
		const big = await g.post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'github__echo', arguments: { x: 'x'.repeat(8192) } } });
		assert.equal(big.status, 413, big.text);
		const slow = (id) => g.post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'github__slow', arguments: { ms: 400 } } });
		assert.equal((await slow(2)).status, 202);
		assert.equal((await slow(3)).status, 202);
		const third = await slow(4);
		assert.equal(third.status, 429, third.text);
		assert.match(third.json.error.message, /maxRequestsPerSession/);
		// Once answered, they are no longer in flight.
		await eventually(() => [2, 3].every((id) => g.events().some((m) => m.id === id && m.result)), 5000, 20, 'both answers');
		assert.equal((await slow(5)).status, 202);
		// A cancelled request is never answered: its slot is free at once.
		assert.equal((await slow(6)).status, 202);
		assert.equal((await g.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 6 } })).status, 202);
		assert.equal((await slow(7)).status, 202);
		g.socket.destroy();
	});

	test('HTTP+SSE sessions count against maxSessions; a closed stream frees its slot', async () => {
		const gw = await gateway({ http: { maxSessions: 1 } });
		const a = await openSse(gw);
		const r = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/sse', method: 'GET', headers: { accept: 'text/event-stream' } }, undefined, 5000);
		assert.equal(r.status, 503, r.text);
		assert.match(r.json.error.message, /maxSessions/);
		const init = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST' }, initialize(0, LEGACY));
		assert.equal(init.status, 503, init.text);
		a.socket.destroy(); // the client goes: its session ends at once
		const b = await eventually(() => openSse(gw).catch(() => false), 5000, 50, 'a slot free again');
		assert.ok(b.endpoint);
		b.socket.destroy();
	});

	test('a client that never reads its stream: ended at the budget, its session with it', async () => {
		const MiB = 1 << 20;
		const gw = await gateway({ limits: { maxSessionBytes: 2 * MiB }, governor: { maxTokens: 1000000 } });
		const g = await rawSession(gw);
		g.socket.pause(); // reads nothing more: the kernel's buffers fill, then the gateway's
		let i = 10;
		await eventually(async () => {
			const r = await g.post({ jsonrpc: '2.0', id: i++, method: 'tools/call', params: { name: 'github__huge', arguments: { bytes: MiB } } });
			if (r.status === 404) return true;
			assert.ok(r.status === 202 || r.status === 429, `${r.status} ${r.text}`);
			return /the client of stream \d+ is not reading; ended \(busy: sluice\.limits\.maxSessionBytes/.test(gw.stderr());
		}, 20000, 50, 'the stream ended at the budget');
		await eventually(async () => (await g.post({ jsonrpc: '2.0', id: 1000, method: 'ping' })).status === 404, 5000, 50, 'its session gone');
	});

	test('an answer alone over the budget, for a client that reads: a JSON-RPC error on the stream', async () => {
		const gw = await gateway({ limits: { maxSessionBytes: 64 << 10 }, governor: { maxTokens: 1000000 } });
		const g = await rawSession(gw);
		assert.equal((await g.post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'github__huge', arguments: { bytes: 200000 } } })).status, 202);
		await eventually(() => g.events().some((m) => m.id === 3), 10000, 20, 'the answer');
		assert.equal(g.events().find((m) => m.id === 3).error.message, 'busy: sluice.limits.maxSessionBytes (65536 bytes) reached');
		assert.equal((await g.post({ jsonrpc: '2.0', id: 4, method: 'ping' })).status, 202);
		await eventually(() => g.events().some((m) => m.id === 4 && m.result), 5000, 20, 'the session is served still');
		g.socket.destroy();
	});
});
