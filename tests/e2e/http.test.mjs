// The Streamable HTTP front end (`sluice serve --http`): the official SDK's
// StreamableHTTPClientTransport in the session era, raw requests for the
// status codes, the security checks and the 2026-07-28 headers.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { once } from 'node:events';

import { ToolListChangedNotificationSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { catalog, closeAll, startHttp as startHttpGateway, httpClient, httpRequest, writeConfig, textOf, execCode, runSluice, modernMeta, SLUICE, LEGACY, eventually, freePort } from './helpers.mjs';

const servers = { github: catalog('github') };
const started = [];

// Starts `sluice serve --http LISTEN` with this file's servers; the
// gateways are kept to check their stderr for sanitizer reports at the end.
async function startHttp(sluice = {}, listen = '127.0.0.1:0') {
	const gw = await startHttpGateway({ servers, sluice, listen });
	started.push(gw);
	return gw;
}

after(async () => {
	await closeAll();
	// Under `make test SAN=...`, a sanitizer report fails the file.
	for (const g of started) assert.doesNotMatch(g.stderr(), /Sanitizer|runtime error/, g.stderr().slice(-3000));
});

const sdkClient = (url, headers = {}, opts = {}) => httpClient(url, { ...opts, headers });

// One raw HTTP request (node:http, so Host can be set). Resolves
// { status, headers, text, json }.
function raw(url, { method = 'POST', headers = {}, body } = {}) {
	const u = new URL(url);
	return httpRequest({ host: u.hostname, port: u.port, path: u.pathname, method, headers }, body);
}

const initBody = (id = 1) => ({
	jsonrpc: '2.0',
	id,
	method: 'initialize',
	params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

const idOf = (text) => /read_result \{"result_id": "([^"]+)"\}/.exec(text)?.[1];

describe('session era over HTTP with the SDK', () => {
	let gw;
	before(async () => {
		gw = await startHttp({ codeMode: { enabled: true }, governor: { maxTokens: 300 } });
	});

	test('initialize, tools/list and tools/call', async () => {
		const { client, transport } = await sdkClient(gw.url);
		assert.match(transport.sessionId, /^[0-9a-f]{32}$/);
		const { tools } = await client.listTools();
		assert.ok(tools.some((t) => t.name === 'github__echo'));
		const r = await client.callTool({ name: 'github__echo', arguments: { a: 1 } });
		assert.deepEqual(JSON.parse(textOf(r)), { a: 1 });
		await client.close();
	});

	test('progress arrives over SSE before the result', async () => {
		const { client } = await sdkClient(gw.url);
		const seen = [];
		const r = await client.callTool({ name: 'github__progress', arguments: { steps: 3, interval_ms: 20 } }, undefined, {
			onprogress: (p) => seen.push(p.progress),
		});
		assert.equal(textOf(r), 'done 3');
		assert.deepEqual(seen, [1, 2, 3]);
		await client.close();
	});

	test('a program runs over HTTP', async () => {
		const { client } = await sdkClient(gw.url);
		const r = await execCode(client, 'const rs = await Promise.all([1, 2].map((n) => tools.github.echo({ n }))); return JSON.stringify(rs);');
		assert.equal(r.isError, false, r.text);
		assert.match(r.text, /"n":1.*"n":2/s);
		await client.close();
	});

	test('two sessions do not see each other', async () => {
		const a = await sdkClient(gw.url);
		const b = await sdkClient(gw.url);
		assert.notEqual(a.transport.sessionId, b.transport.sessionId);
		const big = await a.client.callTool({ name: 'github__list_issues', arguments: { owner: 'acme', repo: 'api' } });
		const id = idOf(textOf(big));
		assert.ok(id, textOf(big).slice(-200));
		const mine = await a.client.callTool({ name: 'read_result', arguments: { result_id: id } });
		assert.notEqual(mine.isError, true, textOf(mine));
		const theirs = await b.client.callTool({ name: 'read_result', arguments: { result_id: id } });
		assert.equal(theirs.isError, true, textOf(theirs));
		// The same request ids and progress tokens in both: each gets its own.
		const pa = [], pb = [];
		const [ra, rb] = await Promise.all([
			a.client.callTool({ name: 'github__progress', arguments: { steps: 2, interval_ms: 30 } }, undefined, { onprogress: (p) => pa.push(p.total) }),
			b.client.callTool({ name: 'github__progress', arguments: { steps: 4, interval_ms: 15 } }, undefined, { onprogress: (p) => pb.push(p.total) }),
		]);
		assert.equal(textOf(ra), 'done 2');
		assert.equal(textOf(rb), 'done 4');
		assert.deepEqual(pa, [2, 2]);
		assert.deepEqual(pb, [4, 4, 4, 4]);
		await a.client.close();
		await b.client.close();
	});

	test('a program of one session: the other cannot cancel it or see its answer', async () => {
		const sa = (await raw(gw.url, { body: initBody() })).headers['mcp-session-id'];
		const sb = (await raw(gw.url, { body: initBody() })).headers['mcp-session-id'];
		const code = 'const r = await tools.github.slow({ ms: 400 }); return "A: " + JSON.stringify(r);';
		const prog = raw(gw.url, {
			headers: { 'mcp-session-id': sa },
			body: { jsonrpc: '2.0', id: 'p1', method: 'tools/call', params: { name: 'execute_code', arguments: { code } } },
		});
		await new Promise((res) => setTimeout(res, 100));
		// B uses A's request id: a cancel in B's session names nothing of A's.
		const n = await raw(gw.url, {
			headers: { 'mcp-session-id': sb },
			body: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'p1', reason: 'not yours' } },
		});
		assert.equal(n.status, 202);
		// B's GET stream carries nothing of A's program.
		const bget = raw(gw.url, { method: 'GET', headers: { 'mcp-session-id': sb, accept: 'text/event-stream' } });
		const r = await prog;
		assert.equal(r.json.id, 'p1');
		assert.equal(r.json.result.isError, undefined, JSON.stringify(r.json));
		assert.match(r.json.result.content[0].text, /A: .*slept 400 ms/);
		await raw(gw.url, { method: 'DELETE', headers: { 'mcp-session-id': sb } });
		const g = await bget;
		assert.doesNotMatch(g.text, /p1|slept/);
	});

	test('a confirmation asked of one session is neither shown to nor answerable by another', async () => {
		const own = await startHttp({ policy: { rules: [{ annotation: 'destructiveHint', action: 'confirm' }] } });
		let askedA = 0, askedB = 0, forged;
		const a = await sdkClient(own.url, {}, {
			capabilities: { elicitation: {} },
			handlers: [[ElicitRequestSchema, async (req, extra) => {
				askedA++;
				// B answers A's question under A's relay id first: ignored.
				forged = await raw(own.url, {
					headers: { 'mcp-session-id': b.transport.sessionId },
					body: { jsonrpc: '2.0', id: extra.requestId, result: { action: 'decline' } },
				});
				await new Promise((res) => setTimeout(res, 100));
				return { action: 'accept', content: { approve: true } };
			}]],
		});
		const b = await sdkClient(own.url, {}, {
			capabilities: { elicitation: {} },
			handlers: [[ElicitRequestSchema, () => (askedB++, { action: 'accept', content: { approve: true } })]],
		});
		const r = await a.client.callTool({ name: 'github__merge_pull_request', arguments: { owner: 'acme', repo: 'api', pull_number: 401 } });
		// Approved by A: the call reached the server (which has its own opinion).
		assert.match(textOf(r), /Pull request #401/, textOf(r));
		assert.equal(askedA, 1);
		assert.equal(askedB, 0);
		assert.equal(forged.status, 202);
		await a.client.close();
		await b.client.close();
		await own.close();
	});

	test('a server\'s question goes to the session whose call it belongs to', async () => {
		const own = await startHttp({});
		const asked = { a: 0, b: 0 };
		const open = (who) => sdkClient(own.url, {}, {
			capabilities: { elicitation: {} },
			handlers: [[ElicitRequestSchema, () => (asked[who]++, { action: 'accept', content: { answer: who } })]],
		});
		const a = await open('a');
		const b = await open('b'); // the newer session, also able to answer
		const r = await a.client.callTool({ name: 'github__ask_user', arguments: { question: 'Who calls?' } });
		assert.deepEqual(JSON.parse(textOf(r)), { action: 'accept', content: { answer: 'a' } });
		assert.deepEqual(asked, { a: 1, b: 0 });
		await a.client.close();
		await b.client.close();
		await own.close();
	});

	test('an elicitation is relayed on the call stream and answered by POST', async () => {
		// Upstreams hear the first client's capabilities: a gateway of its own.
		const own = await startHttp({});
		const asked = [];
		const { client } = await sdkClient(own.url, {}, {
			capabilities: { elicitation: {} },
			handlers: [[ElicitRequestSchema, (req) => (asked.push(req.params.message), { action: 'accept', content: { answer: 'forty-two' } })]],
		});
		const r = await client.callTool({ name: 'github__ask_user', arguments: { question: 'What is the answer?' } });
		assert.deepEqual(JSON.parse(textOf(r)), { action: 'accept', content: { answer: 'forty-two' } });
		assert.deepEqual(asked, ['What is the answer?']);
		await client.close();
		await own.close();
	});

	test('list_changed arrives on the GET stream', async () => {
		const { client } = await sdkClient(gw.url);
		let changed = 0;
		client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
		await client.callTool({ name: 'github__add_tool', arguments: { name: 'fresh_http' } });
		for (let i = 0; i < 50 && !changed; i++) await new Promise((r) => setTimeout(r, 100));
		assert.ok(changed > 0, 'no list_changed');
		const { tools } = await client.listTools();
		assert.ok(tools.some((t) => t.name === 'github__fresh_http'));
		await client.close();
	});

	test('DELETE ends the session, then 404', async () => {
		const { client, transport } = await sdkClient(gw.url);
		const sid = transport.sessionId;
		await transport.terminateSession();
		const r = await raw(gw.url, {
			headers: { 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY },
			body: { jsonrpc: '2.0', id: 5, method: 'tools/list' },
		});
		assert.equal(r.status, 404);
		await client.close();
	});

	test('status codes: missing session 400, notification 202, bad Accept 406, bad version 400', async () => {
		let r = await raw(gw.url, { body: { jsonrpc: '2.0', id: 2, method: 'tools/list' } });
		assert.equal(r.status, 400);
		assert.equal(r.json.error.code, -32000);
		r = await raw(gw.url, { body: initBody() });
		assert.equal(r.status, 200);
		assert.equal(r.headers['content-type'], 'application/json');
		const sid = r.headers['mcp-session-id'];
		assert.match(sid, /^[0-9a-f]{32}$/);
		r = await raw(gw.url, { headers: { 'mcp-session-id': sid }, body: { jsonrpc: '2.0', method: 'notifications/initialized' } });
		assert.equal(r.status, 202);
		assert.equal(r.text, '');
		r = await raw(gw.url, { headers: { 'mcp-session-id': sid, accept: 'application/json' }, body: { jsonrpc: '2.0', id: 3, method: 'ping' } });
		assert.equal(r.status, 406);
		r = await raw(gw.url, { headers: { 'mcp-session-id': sid, 'mcp-protocol-version': '1999-01-01' }, body: { jsonrpc: '2.0', id: 3, method: 'ping' } });
		assert.equal(r.status, 400);
		r = await raw(gw.url, { headers: { 'mcp-session-id': 'f'.repeat(32) }, body: { jsonrpc: '2.0', id: 3, method: 'ping' } });
		assert.equal(r.status, 404);
		r = await raw(gw.url, { headers: { 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY }, body: { jsonrpc: '2.0', id: 3, method: 'ping' } });
		assert.equal(r.status, 200);
		assert.deepEqual(r.json, { jsonrpc: '2.0', id: 3, result: {} });
	});

	test('a quick tool call is answered as JSON, a slow one as SSE with a priming event', async () => {
		const sid = (await raw(gw.url, { body: initBody() })).headers['mcp-session-id'];
		const call = (id, name, args) => raw(gw.url, {
			headers: { 'mcp-session-id': sid },
			body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } },
		});
		let r = await call(1, 'github__echo', { message: 'hi' });
		assert.equal(r.status, 200);
		assert.equal(r.headers['content-type'], 'application/json');
		assert.equal(r.json.id, 1);
		assert.ok(r.json.result.content.length > 0);
		// Slower than sluice waits for an answer (50 ms): streamed.
		r = await call(2, 'github__slow', { ms: 300 });
		assert.equal(r.headers['content-type'], 'text/event-stream');
		assert.match(r.text, /^id: \d+-0\nretry: \d+\ndata: \n\n/);
		assert.match(r.text, /"id":2,"result"/);
	});

	test('a stream cut off resumes with GET and Last-Event-ID', async () => {
		const sid = (await raw(gw.url, { body: initBody() })).headers['mcp-session-id'];
		// Read the priming event of a slow call's SSE answer, then hang up.
		const primed = await new Promise((resolve, reject) => {
			const u = new URL(gw.url);
			const body = JSON.stringify({ jsonrpc: '2.0', id: 'r1', method: 'tools/call', params: { name: 'github__slow', arguments: { ms: 400 } } });
			const req = http.request(
				{ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sid } },
				(res) => {
					let text = '';
					res.setEncoding('utf8');
					res.on('data', (c) => {
						text += c;
						const m = /^id: (\d+-0)$/m.exec(text);
						if (m) {
							req.destroy();
							resolve(m[1]);
						}
					});
				},
			);
			req.on('error', () => {});
			req.setTimeout(5000, () => reject(new Error('no priming event')));
			req.end(body);
		});
		await new Promise((res) => setTimeout(res, 700)); // the answer comes while nobody reads
		const r = await raw(gw.url, { method: 'GET', headers: { 'mcp-session-id': sid, accept: 'text/event-stream', 'last-event-id': primed } });
		assert.equal(r.status, 200);
		assert.equal(r.json.id, 'r1');
		assert.equal(r.json.result.content[0].text, 'slept 400 ms');
		assert.match(r.text, new RegExp(`^id: ${primed.split('-')[0]}-1$`, 'm'));
		const again = await raw(gw.url, { method: 'GET', headers: { 'mcp-session-id': sid, accept: 'text/event-stream', 'last-event-id': primed } });
		assert.equal(again.status, 404);
	});

	test('a cancelled request: its stream ends at once, with no answer', async () => {
		const sid = (await raw(gw.url, { body: initBody() })).headers['mcp-session-id'];
		const t0 = Date.now();
		const slow = raw(gw.url, {
			headers: { 'mcp-session-id': sid },
			body: { jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'github__slow', arguments: { ms: 5000 } } },
		});
		await new Promise((res) => setTimeout(res, 200));
		const n = await raw(gw.url, {
			headers: { 'mcp-session-id': sid },
			body: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'c1', reason: 'test' } },
		});
		assert.equal(n.status, 202);
		const r = await slow;
		assert.ok(Date.now() - t0 < 2000, `${Date.now() - t0} ms`);
		assert.doesNotMatch(r.text, /"id":"c1"/);
	});

	test('Origin evil.example and Host evil are refused with 403', async () => {
		let r = await raw(gw.url, { headers: { origin: 'http://evil.example' }, body: initBody() });
		assert.equal(r.status, 403);
		r = await raw(gw.url, { headers: { origin: `http://localhost:${gw.port}` }, body: initBody() });
		assert.equal(r.status, 200);
		r = await raw(gw.url, { headers: { host: 'evil' }, body: initBody() });
		assert.equal(r.status, 403);
		r = await raw(gw.url, { headers: { host: `evil.example:${gw.port}` }, body: initBody() });
		assert.equal(r.status, 403);
		r = await raw(gw.url, { headers: { host: `localhost:${gw.port}` }, body: initBody() });
		assert.equal(r.status, 200);
		const cases = [
			[{ origin: 'http://localhost.evil.example:1234' }, 403],
			[{ origin: 'http://localhost:12ab' }, 403],
			[{ origin: 'http://localhost:' }, 403],
			[{ origin: 'https://localhost:8080' }, 403],
			[{ origin: 'null' }, 403],
			[{ origin: 'http://localhost' }, 200],
			[{ origin: 'http://127.0.0.1:9' }, 200],
			[{ host: 'localhost:1' }, 403],
			[{ host: `127.0.0.1:${gw.port}0` }, 403],
			[{ host: `127.0.0.1:${gw.port}x` }, 403],
			[{ host: '127.0.0.1' }, 200],
			[{ host: `[::1]:${gw.port}` }, 200],
			[{ host: `127.0.0.1.evil.example:${gw.port}` }, 403],
		];
		for (const [headers, status] of cases)
			assert.equal((await raw(gw.url, { headers, body: initBody() })).status, status, JSON.stringify(headers));
	});
});

describe('limits and credentials', () => {
	test('a body over sluice.http.maxBodyBytes gets 413 with a JSON-RPC error', async () => {
		const gw = await startHttp({ http: { maxBodyBytes: 2048 } });
		const r = await raw(gw.url, { body: { ...initBody(), pad: 'x'.repeat(5000) } });
		assert.equal(r.status, 413);
		assert.equal(r.json.error.code, -32600);
		assert.match(r.json.error.message, /maxBodyBytes/);
		await gw.close();
	});

	test('sluice.http.maxSessions: one more closes the idle one (404 after); with it busy, one more gets 503', async () => {
		const gw = await startHttp({ http: { maxSessions: 1 } });
		const first = (await raw(gw.url, { body: initBody() })).headers['mcp-session-id'];
		const second = (await raw(gw.url, { body: initBody() })).headers['mcp-session-id'];
		assert.ok(second && second !== first);
		const ping = (sid) => raw(gw.url, { headers: { 'mcp-session-id': sid }, body: { jsonrpc: '2.0', id: 9, method: 'ping' } });
		assert.equal((await ping(first)).status, 404);
		const busy = raw(gw.url, {
			headers: { 'mcp-session-id': second },
			body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'github__slow', arguments: { ms: 1500 } } },
		});
		await eventually(async () => (await raw(gw.url.replace('/mcp', '/status'), { method: 'GET' })).json?.requestsInFlight === 1, 5000, 25, 'the call in flight');
		const third = await raw(gw.url, { body: initBody() });
		assert.equal(third.status, 503);
		assert.match(third.json.error.message, /too many sessions \(sluice\.http\.maxSessions.*none of them is idle/);
		assert.equal((await busy).status, 200);
		await gw.close();
	});

	test('sluice.http.maxRequestsPerSession: one more in flight gets 429', async () => {
		const gw = await startHttp({ http: { maxRequestsPerSession: 1 } });
		const sid = (await raw(gw.url, { body: initBody() })).headers['mcp-session-id'];
		const call = (id, ms) =>
			raw(gw.url, {
				headers: { 'mcp-session-id': sid },
				body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'github__slow', arguments: { ms } } },
			});
		const first = call(1, 800);
		await new Promise((res) => setTimeout(res, 200));
		const second = await call(2, 0);
		assert.equal(second.status, 429);
		assert.equal(second.json.id, 2);
		assert.equal((await first).json.result.content[0].text, 'slept 800 ms');
		assert.equal((await call(3, 0)).status, 200);
		await gw.close();
	});

	test('2026-07-28 requests count against maxSessions and maxRequestsPerSession', async () => {
		const gw = await startHttp({ http: { maxSessions: 3, maxRequestsPerSession: 2 } });
		const slow = (id, ms) =>
			raw(gw.url, {
				headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'github__slow' },
				body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'github__slow', arguments: { ms }, _meta: modernMeta() } },
			});
		// Four at once with no credential configured: one credential, two
		// in flight at most.
		const first = [slow(1, 1500), slow(2, 1500)];
		await new Promise((res) => setTimeout(res, 200));
		const over = await Promise.all([slow(3, 0), slow(4, 0)]);
		for (const r of over) {
			assert.equal(r.status, 429, r.text);
			assert.match(r.json.error.message, /sluice\.http\.maxRequestsPerSession/);
		}
		// Each in flight is a live session: with one busy session open
		// too, there is no room for another (an idle one would be closed).
		const sid = (await raw(gw.url, { body: initBody() })).headers['mcp-session-id'];
		const busy = raw(gw.url, {
			headers: { 'mcp-session-id': sid },
			body: { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'github__slow', arguments: { ms: 600 } } },
		});
		await eventually(async () => (await raw(gw.url.replace('/mcp', '/status'), { method: 'GET' })).json?.requestsInFlight === 3, 5000, 25, 'three in flight');
		const init = await raw(gw.url, { body: initBody() });
		assert.equal(init.status, 503);
		assert.match(init.json.error.message, /sluice\.http\.maxSessions/);
		assert.equal((await busy).status, 200);
		for (const r of await Promise.all(first)) assert.equal(r.json.result.content[0].text, 'slept 1500 ms');
		// Done, they count no more.
		assert.equal((await slow(5, 0)).status, 200);
		assert.equal((await raw(gw.url, { body: initBody() })).status, 200);
		await gw.close();
	});

	test('bearer token: missing 401, wrong 401, right works', async () => {
		const gw = await startHttp({ http: { bearerToken: 'sekret-token-1' } });
		let r = await raw(gw.url, { body: initBody() });
		assert.equal(r.status, 401);
		assert.match(r.headers['www-authenticate'], /^Bearer/);
		r = await raw(gw.url, { headers: { authorization: 'Bearer sekret-token-2' }, body: initBody() });
		assert.equal(r.status, 401);
		const { client } = await sdkClient(gw.url, { Authorization: 'Bearer sekret-token-1' });
		const { tools } = await client.listTools();
		assert.ok(tools.length > 0);
		await client.close();
		await gw.close();
	});

	test('a non-loopback address without a bearer token is refused', async () => {
		const file = writeConfig(servers, {});
		const r = await runSluice(['serve', '--http', '0.0.0.0:0', '--config', file]);
		assert.equal(r.code, 2);
		assert.match(r.stderr, /refusing to serve HTTP on 0\.0\.0\.0:0 without authentication \(sluice\.http\.bearerToken or sluice\.http\.auth\)/);
	});
});

describe('2026-07-28 over HTTP: POST only, no sessions, header checks', () => {
	let gw;
	before(async () => {
		gw = await startHttp({});
	});
	const MODERN = '2026-07-28';
	const post = (method, params, headers = {}, id = 7) =>
		raw(gw.url, {
			headers: { 'mcp-protocol-version': MODERN, 'mcp-method': method, ...headers },
			body: { jsonrpc: '2.0', id, method, params: { ...params, _meta: modernMeta() } },
		});

	test('server/discover, tools/list and tools/call without a session', async () => {
		let r = await post('server/discover', {});
		assert.equal(r.status, 200, r.text);
		assert.equal(r.headers['mcp-session-id'], undefined);
		assert.equal(r.json.result.resultType, 'complete');
		r = await post('tools/list', {});
		assert.equal(r.status, 200, r.text);
		assert.ok(r.json.result.tools.some((t) => t.name === 'github__echo'));
		r = await post('tools/call', { name: 'github__echo', arguments: { b: 2 } }, { 'mcp-name': 'github__echo' });
		assert.equal(r.status, 200, r.text);
		assert.deepEqual(JSON.parse(r.json.result.content[0].text), { b: 2 });
	});

	test('progress comes as SSE before the result', async () => {
		const r = await raw(gw.url, {
			headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'github__progress' },
			body: {
				jsonrpc: '2.0',
				id: 'p1',
				method: 'tools/call',
				params: { name: 'github__progress', arguments: { steps: 2, interval_ms: 10 }, _meta: modernMeta({}, { progressToken: 'tok' }) },
			},
		});
		assert.equal(r.status, 200);
		assert.match(r.headers['content-type'], /^text\/event-stream/);
		const events = r.text
			.split('\n')
			.filter((l) => l.startsWith('data: '))
			.map((l) => JSON.parse(l.slice(6)));
		assert.deepEqual(events.map((e) => e.method ?? 'answer'), ['notifications/progress', 'notifications/progress', 'answer']);
		assert.equal(events[2].id, 'p1');
	});

	test('Mcp-Method or Mcp-Name not matching the body: 400 with -32020', async () => {
		let r = await raw(gw.url, {
			headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call' },
			body: { jsonrpc: '2.0', id: 8, method: 'tools/list', params: { _meta: modernMeta() } },
		});
		assert.equal(r.status, 400);
		assert.equal(r.json.error.code, -32020);
		assert.equal(r.json.id, 8);
		r = await post('tools/call', { name: 'github__echo', arguments: {} }, { 'mcp-name': 'github__fail' });
		assert.equal(r.status, 400);
		assert.equal(r.json.error.code, -32020);
		r = await post('tools/call', { name: 'github__echo', arguments: {} });
		assert.equal(r.status, 400);
		assert.equal(r.json.error.code, -32020);
		r = await raw(gw.url, {
			headers: { 'mcp-protocol-version': MODERN },
			body: { jsonrpc: '2.0', id: 9, method: 'tools/list', params: { _meta: modernMeta() } },
		});
		assert.equal(r.status, 400);
		assert.equal(r.json.error.code, -32020);
	});

	// MCP 2026-07-28 Streamable HTTP, "Protocol Version Header": each of
	// these is a 4xx with a JSON-RPC error naming it, never a 200.
	test('a version header that does not match the body _meta: 400 with -32020', async () => {
		let r = await raw(gw.url, {
			headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' },
			body: { jsonrpc: '2.0', id: 10, method: 'tools/list', params: { _meta: modernMeta({}, { 'io.modelcontextprotocol/protocolVersion': '2025-11-25' }) } },
		});
		assert.equal(r.status, 400, r.text);
		assert.equal(r.json.error.code, -32020);
		assert.equal(r.json.id, 10);
		r = await raw(gw.url, {
			headers: { 'mcp-method': 'tools/list' },
			body: { jsonrpc: '2.0', id: 11, method: 'tools/list', params: { _meta: modernMeta() } },
		});
		assert.equal(r.status, 400, r.text);
		assert.equal(r.json.error.code, -32020);
		assert.match(r.json.error.message, /MCP-Protocol-Version header is missing/);
	});

	test('an unsupported version: 400 with -32022 and the supported versions', async () => {
		const r = await raw(gw.url, {
			headers: { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
			body: { jsonrpc: '2.0', id: 12, method: 'tools/list', params: { _meta: modernMeta({}, { 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }) } },
		});
		assert.equal(r.status, 400, r.text);
		assert.equal(r.json.error.code, -32022);
		assert.equal(r.json.id, 12);
		assert.ok(r.json.error.data.supported.includes(MODERN), r.text);
		assert.ok(r.json.error.data.supported.includes(LEGACY), r.text);
		assert.equal(r.json.error.data.requested, '2099-01-01');
	});

	test('a 2026-07-28 request without _meta: 400 with -32602', async () => {
		const r = await raw(gw.url, {
			headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' },
			body: { jsonrpc: '2.0', id: 13, method: 'tools/list', params: {} },
		});
		assert.equal(r.status, 400, r.text);
		assert.equal(r.json.error.code, -32602);
		assert.equal(r.json.id, 13);
	});

	// Conformance server-stateless, sep-2575-http-server-meta-invalid-400.
	test('a 2026-07-28 request whose _meta has capabilities and no version: 400 with -32602', async () => {
		const meta = modernMeta();
		delete meta['io.modelcontextprotocol/protocolVersion'];
		const r = await raw(gw.url, {
			headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' },
			body: { jsonrpc: '2.0', id: 16, method: 'tools/list', params: { _meta: meta } },
		});
		assert.equal(r.status, 400, r.text);
		assert.equal(r.json.error.code, -32602);
		assert.match(r.json.error.message, /protocolVersion/);
		assert.equal(r.json.id, 16);
	});

	for (const method of ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe', 'no/such/method'])
		test(`${method} at 2026-07-28: 404 with -32601`, async () => {
			const r = await post(method, method.startsWith('resources/') ? { uri: 'x://y' } : {}, {}, 14);
			assert.equal(r.status, 404, r.text);
			assert.equal(r.json.error.code, -32601);
			assert.equal(r.json.id, 14);
		});

	test('GET and DELETE from that era: 405', async () => {
		let r = await raw(gw.url, { method: 'GET', headers: { 'mcp-protocol-version': MODERN, accept: 'text/event-stream' } });
		assert.equal(r.status, 405);
		r = await raw(gw.url, { method: 'DELETE', headers: { 'mcp-protocol-version': MODERN } });
		assert.equal(r.status, 405);
	});
});

describe('session lifetime', () => {
	test('an idle session ends after sluice.http.idleSessionTimeoutMs', async () => {
		const gw = await startHttp({ http: { idleSessionTimeoutMs: 300 } });
		const r = await raw(gw.url, { body: initBody() });
		const sid = r.headers['mcp-session-id'];
		const ping = () => raw(gw.url, { headers: { 'mcp-session-id': sid }, body: { jsonrpc: '2.0', id: 2, method: 'ping' } });
		assert.equal((await ping()).status, 200);
		await new Promise((res) => setTimeout(res, 1600));
		assert.equal((await ping()).status, 404);
		await gw.close();
	});

	test('SIGTERM ends the gateway promptly with a stream open', async () => {
		const gw = await startHttp({ http: { heartbeatMs: 200 } });
		const { client } = await sdkClient(gw.url);
		await client.listTools();
		const t0 = Date.now();
		const exited = new Promise((res) => gw.proc.once('exit', (code, sig) => res({ code, sig })));
		gw.proc.kill('SIGTERM');
		const { code } = await exited;
		assert.equal(code, 0);
		assert.ok(Date.now() - t0 < 2500);
		await client.close().catch(() => {});
	});
});

// libmicrohttpd's own messages (here: a Content-Length that is not a number)
// go through sluice's log. What a peer's bad request caused is debug, so no
// client can fill the log at warn; its HTML error page is cut to the status
// and title. At warn and error sluice does not say where it listens,
// so the test picks the port and waits until it accepts.
describe("libmicrohttpd's messages", () => {
	// Resolves when the connection closes; ok: it connected.
	const send = (port, data) =>
		new Promise((resolve) => {
			const s = net.connect(port, '127.0.0.1', () => s.end(data));
			s.on('data', () => {});
			s.on('close', () => resolve(true));
			s.on('error', () => resolve(false));
		});

	for (const [level, shown] of [['warn', false], ['error', false], ['debug', true]])
		test(`--log-level ${level}: ${shown ? 'a log line' : 'nothing'}`, async () => {
			const port = await freePort();
			const args = ['serve', '--http', `127.0.0.1:${port}`, '--config', writeConfig(servers), '--log-level', level];
			const proc = spawn(SLUICE, args, { stdio: ['ignore', 'ignore', 'pipe'] });
			const exited = once(proc, 'exit');
			let text = '';
			proc.stderr.on('data', (d) => (text += d));
			await eventually(() => send(port, ''), 10000, 50, 'sluice to listen');
			await send(port, `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: x\r\n\r\n`);
			proc.kill('SIGTERM'); // MHD logged before it closed the connection
			await exited;
			assert.equal(/Content-Length/.test(text), shown, text);
			for (const l of text.split('\n').filter(Boolean)) assert.match(l, /^sluice (error|warn|info|debug): /, text);
			assert.doesNotMatch(text, /<html|<title/i, text);
			if (shown) {
				assert.match(text, /^sluice debug: http: Failed to parse `Content-Length' header/m);
				assert.match(text, /^sluice debug: http: refused a request with 400 \(Request malformed\)$/m);
			}
		});
});
