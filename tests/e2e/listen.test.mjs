// subscriptions/listen (MCP 2026-07-28 basic/patterns/subscriptions): a
// 2026-07-28 client listening through sluice hears list changes and resource
// updates of session-era and 2026-07-28 upstreams, tagged with its
// subscription id; the bounds (sluice.limits.maxListens*, maxListenUris);
// the stream outlives idle timeouts and frees its slot when closed; over
// stdio too; and toward a 2026-07-28 upstream over HTTP (a second sluice).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { catalog, everything, closeAll, startHttp, startRaw, modernMeta, eventually, sleep, textOf, REPO, MODERN } from './helpers.mjs';

const SUB = 'io.modelcontextprotocol/subscriptionId';
const modernFixture = () => ({ command: process.execPath, args: [path.join(REPO, 'tests', 'servers', 'modern', 'server.mjs')] });

// A 2026-07-28 client of the official SDK 2.x; heard: every change
// notification it received, in order.
async function sdkClient(url) {
	const client = new Client({ name: 'listen-e2e', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
	await client.connect(new StreamableHTTPClientTransport(new URL(url)));
	const heard = [];
	for (const m of ['notifications/tools/list_changed', 'notifications/prompts/list_changed',
		'notifications/resources/list_changed', 'notifications/resources/updated'])
		client.setNotificationHandler(m, (n) => heard.push(n));
	return { client, heard };
}

// A raw listen: POST subscriptions/listen and read its SSE stream as it
// comes. Resolves { status, events (parsed messages), text, close() }
// once the response headers are in.
function rawListen(url, id, notifications, headers = {}) {
	const u = new URL(url);
	const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { _meta: modernMeta(), notifications } });
	return new Promise((resolve, reject) => {
		const req = http.request({
			host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent: false,
			headers: {
				accept: 'application/json, text/event-stream', 'content-type': 'application/json',
				'mcp-protocol-version': MODERN, 'mcp-method': 'subscriptions/listen', ...headers,
			},
		}, (res) => {
			const l = { status: res.statusCode, headers: res.headers, events: [], text: '', ended: false };
			let buf = '';
			res.setEncoding('utf8');
			res.on('data', (c) => {
				l.text += c;
				buf += c;
				let i;
				while ((i = buf.indexOf('\n\n')) >= 0) {
					const ev = buf.slice(0, i);
					buf = buf.slice(i + 2);
					const data = ev.split('\n').filter((x) => x.startsWith('data: ')).map((x) => x.slice(6)).join('');
					if (data) l.events.push(JSON.parse(data));
				}
			});
			res.on('end', () => (l.ended = true));
			res.on('error', () => (l.ended = true));
			l.close = () => req.destroy();
			resolve(l);
		});
		req.on('error', (e) => (e.code === 'ECONNRESET' ? null : reject(e)));
		req.end(body);
	});
}

const changes = (heard, method) => heard.filter((n) => n.method === method);

describe('over Streamable HTTP, with the SDK 2.x client', () => {
	let gw;
	before(async () => {
		gw = await startHttp({
			servers: { github: catalog('github'), sdk2: modernFixture(), everything: everything() },
			sluice: { limits: { maxListensPerSession: 3 } },
		});
	});
	after(async () => {
		await closeAll();
		assert.doesNotMatch(gw?.stderr() ?? '', /Sanitizer|runtime error/);
	});

	test('a listener hears tools list_changed once per change, from a session-era and a 2026-07-28 upstream', async () => {
		const a = await sdkClient(gw.url);
		const b = await sdkClient(gw.url);
		const sub = await a.client.listen({ toolsListChanged: true });
		assert.deepEqual(sub.honoredFilter, { toolsListChanged: true });
		// b opted in to resource list changes only: it must not hear tools'.
		const subB = await b.client.listen({ resourcesListChanged: true });
		assert.deepEqual(subB.honoredFilter, { resourcesListChanged: true });

		// The session-era catalog server adds a tool (notifications/tools/list_changed upstream).
		const r = await a.client.callTool({ name: 'github__add_tool', arguments: { name: 'fresh_one' } });
		assert.ok(!r.isError, textOf(r));
		await eventually(() => changes(a.heard, 'notifications/tools/list_changed').length >= 1, 8000, 50, 'list_changed (session-era upstream)');
		await sleep(400);
		assert.equal(changes(a.heard, 'notifications/tools/list_changed').length, 1, 'exactly once per change');
		const n = changes(a.heard, 'notifications/tools/list_changed')[0];
		assert.equal(n.params._meta[SUB], 'listen:0', 'tagged with the listen request id');
		assert.ok((await a.client.listTools()).tools.some((t) => t.name === 'github__fresh_one'));

		// The 2026-07-28 fixture grows a tool: sluice hears it on its own listen upstream.
		const g = await a.client.callTool({ name: 'sdk2__grow', arguments: {} });
		assert.ok(!g.isError, textOf(g));
		await eventually(() => changes(a.heard, 'notifications/tools/list_changed').length >= 2, 8000, 50, 'list_changed (2026-07-28 upstream)');
		await eventually(async () => (await a.client.listTools()).tools.some((t) => t.name === 'sdk2__extra_1'), 5000, 100, 'the new tool listed');
		await sleep(400);
		assert.equal(changes(a.heard, 'notifications/tools/list_changed').length, 2);

		assert.deepEqual(changes(b.heard, 'notifications/tools/list_changed'), [], 'b did not opt in to tool changes');
		await sub.close();
		await subB.close();
		await a.client.close();
		await b.client.close();
	});

	test('a resource update reaches the listen that subscribed to its URI (2026-07-28 and session-era servers)', async () => {
		const a = await sdkClient(gw.url);
		const other = await sdkClient(gw.url);
		const uris = ['sluice://sdk2/memo://note', 'sluice://everything/demo://resource/static/document/architecture.md', 'sluice://nobody/x'];
		const sub = await a.client.listen({ resourceSubscriptions: uris });
		// A URI no server of the gateway owns is not honored.
		assert.deepEqual(sub.honoredFilter, { resourceSubscriptions: uris.slice(0, 2) });
		const subO = await other.client.listen({ toolsListChanged: true, resourceSubscriptions: ['sluice://sdk2/memo://other'] });

		await a.client.callTool({ name: 'sdk2__touch', arguments: { text: 'new' } });
		await eventually(() => a.heard.some((n) => n.params?.uri === uris[0]), 8000, 50, 'the 2026-07-28 server\'s update');
		const up = a.heard.find((n) => n.params?.uri === uris[0]);
		assert.equal(up.method, 'notifications/resources/updated');
		assert.equal(up.params._meta[SUB], 'listen:0');
		assert.equal((await a.client.readResource({ uri: uris[0] })).contents[0].text, 'new');

		// server-everything sends an update for what was subscribed (sluice
		// sent resources/subscribe for the listen) once its updates are on.
		await a.client.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} });
		await eventually(() => a.heard.some((n) => n.params?.uri === uris[1]), 12000, 50, 'the session-era server\'s update');

		assert.deepEqual(other.heard.filter((n) => n.method === 'notifications/resources/updated'), [], 'not subscribed: nothing');
		await sub.close();
		await subO.close();
		await a.client.close();
		await other.client.close();
	});

	test('a listen over maxListenUris, and one with no notifications object, are refused clearly', async () => {
		const uris = Array.from({ length: 65 }, (_, i) => `sluice://sdk2/memo://n${i}`);
		const l = await rawListen(gw.url, 7, { resourceSubscriptions: uris });
		await eventually(() => l.ended, 5000, 20, 'the refusal');
		const e = l.events.at(-1) ?? JSON.parse(l.text);
		assert.equal(e.id, 7);
		assert.equal(e.error.code, -32602);
		assert.match(e.error.message, /sluice\.limits\.maxListenUris/);
		const bad = await rawListen(gw.url, 8, undefined);
		await eventually(() => bad.ended, 5000, 20, 'the refusal');
		assert.equal((bad.events.at(-1) ?? JSON.parse(bad.text)).error.code, -32602);
	});

	test('a listen is refused on the era that has none', async () => {
		const r = await new Promise((resolve) => {
			const c = http.request(gw.url, { method: 'POST', headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json' } }, (res) => {
				let t = '';
				res.on('data', (d) => (t += d));
				res.on('end', () => resolve({ status: res.statusCode, text: t }));
			});
			c.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: { notifications: {} } }));
		});
		// No session: the session era's rules answer first (400, initialize first).
		assert.equal(r.status, 400);
	});
});

describe('bounds and lifetime over HTTP', () => {
	let gw;
	before(async () => {
		gw = await startHttp({
			servers: { github: catalog('github') },
			sluice: {
				limits: { maxListensPerSession: 1, idleConnectionTimeoutMs: 1000 },
				http: { heartbeatMs: 60000, idleSessionTimeoutMs: 200 },
			},
		});
	});
	after(async () => {
		await closeAll();
		assert.doesNotMatch(gw?.stderr() ?? '', /Sanitizer|runtime error/);
	});

	test('over the bound a clear error; the stream outlives idle timeouts; closing it frees the slot', async () => {
		const first = await rawListen(gw.url, 'one', { toolsListChanged: true });
		assert.equal(first.status, 200);
		assert.match(first.headers['content-type'], /text\/event-stream/);
		await eventually(() => first.events.length >= 1, 5000, 20, 'the acknowledgement');
		assert.deepEqual(first.events[0], {
			jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged',
			params: { _meta: { [SUB]: 'one' }, notifications: { toolsListChanged: true } },
		});

		// A second listen with the same credential: over maxListensPerSession.
		const second = await rawListen(gw.url, 'two', { toolsListChanged: true });
		await eventually(() => second.ended, 5000, 20, 'the refusal');
		assert.equal(second.status, 429);
		const e = JSON.parse(second.text);
		assert.equal(e.id, 'two');
		assert.match(e.error.message, /sluice\.limits\.maxListensPerSession/);
		// The SDK client hears it as an error too.
		const c = await sdkClient(gw.url);
		await assert.rejects(c.client.listen({ toolsListChanged: true }), /maxListensPerSession|429/);
		// A listen is not a request in flight: other requests go on.
		assert.ok((await c.client.listTools()).tools.length > 0);

		// Well past idleConnectionTimeoutMs and idleSessionTimeoutMs, with no
		// heartbeat in between: the stream is still open and delivers.
		await sleep(3500);
		assert.equal(first.ended, false, 'the listen stream was cut while idle');
		await c.client.callTool({ name: 'github__add_tool', arguments: { name: 'late_one' } });
		await eventually(() => first.events.some((x) => x.method === 'notifications/tools/list_changed'), 8000, 50, 'list_changed after idling');
		const lc = first.events.filter((x) => x.method === 'notifications/tools/list_changed');
		assert.equal(lc.length, 1);
		assert.equal(lc[0].params._meta[SUB], 'one');

		// Closing it frees the listener: a new listen under the bound of 1 is acknowledged.
		first.close();
		let again;
		await eventually(async () => {
			again?.close();
			again = await rawListen(gw.url, 'three', { promptsListChanged: true });
			await eventually(() => again.events.length >= 1 || again.ended, 3000, 20, 'an answer');
			return again.status === 200 && again.events[0]?.method === 'notifications/subscriptions/acknowledged';
		}, 5000, 100, 'the slot to be freed');
		again.close();
		await c.client.close();
	});

	test('a shutdown ends a listen gracefully, with its completion response', async () => {
		const c = await sdkClient(gw.url);
		let sub;
		await eventually(async () => {
			try {
				sub = await c.client.listen({ toolsListChanged: true });
				return true;
			} catch {
				return false; // the previous test's listen is still being freed
			}
		}, 5000, 100, 'a listen');
		gw.proc.kill('SIGTERM');
		assert.equal(await Promise.race([sub.closed, sleep(5000).then(() => 'timeout')]), 'graceful');
	});
});

describe('over stdio', () => {
	test('acknowledged, tagged, several at once, cancelled by notifications/cancelled, bounded', async () => {
		const raw = startRaw({ servers: { github: catalog('github') }, sluice: { limits: { maxListensPerSession: 2 } } });
		try {
			raw.send({ jsonrpc: '2.0', id: 'L1', method: 'subscriptions/listen', params: { _meta: modernMeta(), notifications: { toolsListChanged: true } } });
			const ack = await raw.next((m) => m.method === 'notifications/subscriptions/acknowledged' && m.params._meta[SUB] === 'L1', 15000);
			assert.deepEqual(ack.params.notifications, { toolsListChanged: true });
			raw.send({ jsonrpc: '2.0', id: 2, method: 'subscriptions/listen', params: { _meta: modernMeta(), notifications: { toolsListChanged: true, promptsListChanged: false } } });
			await raw.next((m) => m.method === 'notifications/subscriptions/acknowledged' && m.params._meta[SUB] === 2);
			// A third: over maxListensPerSession.
			const over = await raw.request('subscriptions/listen', { _meta: modernMeta(), notifications: { toolsListChanged: true } });
			assert.match(over.error.message, /sluice\.limits\.maxListensPerSession/);

			await raw.request('tools/call', { _meta: modernMeta(), name: 'github__add_tool', arguments: { name: 'via_stdio' } });
			const seen = [];
			for (let i = 0; i < 2; i++)
				seen.push((await raw.next((m) => m.method === 'notifications/tools/list_changed', 8000)).params._meta[SUB]);
			assert.deepEqual(seen.sort(), [2, 'L1'].sort());

			// The client ends L1: the next change reaches listen 2 only.
			raw.notify('notifications/cancelled', { requestId: 'L1' });
			await raw.request('tools/call', { _meta: modernMeta(), name: 'github__add_tool', arguments: { name: 'via_stdio_2' } });
			const n = await raw.next((m) => m.method === 'notifications/tools/list_changed', 8000);
			assert.equal(n.params._meta[SUB], 2);
			assert.ok(await raw.none((m) => m.method === 'notifications/tools/list_changed', 500), 'L1 was cancelled');
			// Its slot is free again.
			raw.send({ jsonrpc: '2.0', id: 'L3', method: 'subscriptions/listen', params: { _meta: modernMeta(), notifications: { resourcesListChanged: true } } });
			await raw.next((m) => m.method === 'notifications/subscriptions/acknowledged' && m.params._meta[SUB] === 'L3');

			// A session-era client has no listen.
			const legacy = startRaw({ servers: { github: catalog('github') } });
			await legacy.initialize();
			const r = await legacy.request('subscriptions/listen', { notifications: { toolsListChanged: true } });
			assert.equal(r.error.code, -32601);
			assert.match(r.error.message, /2026-07-28/);
			await legacy.close();
		} finally {
			await raw.close();
			assert.doesNotMatch(raw.stderr(), /Sanitizer|runtime error/);
		}
	});
});

test('over stdio: sluice.limits.maxListens bounds the listens of all clients', async () => {
	const raw = startRaw({ servers: { github: catalog('github') }, sluice: { limits: { maxListens: 1 } } });
	try {
		raw.send({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: { _meta: modernMeta(), notifications: { toolsListChanged: true } } });
		await raw.next((m) => m.method === 'notifications/subscriptions/acknowledged', 15000);
		const over = await raw.request('subscriptions/listen', { _meta: modernMeta(), notifications: { toolsListChanged: true } });
		assert.equal(over.error.code, -32000);
		assert.match(over.error.message, /sluice\.limits\.maxListens\b/);
	} finally {
		await raw.close();
	}
});

test('over stdio: a reload that adds a server reaches the listen', async () => {
	const raw = startRaw({ servers: { github: catalog('github') } });
	try {
		raw.send({ jsonrpc: '2.0', id: 'R', method: 'subscriptions/listen', params: { _meta: modernMeta(), notifications: { toolsListChanged: true } } });
		await raw.next((m) => m.method === 'notifications/subscriptions/acknowledged', 15000);
		const cfg = JSON.parse(readFileSync(raw.configPath, 'utf8'));
		cfg.mcpServers.jira = catalog('jira');
		writeFileSync(raw.configPath, JSON.stringify(cfg));
		raw.child.kill('SIGHUP');
		const n = await raw.next((m) => m.method === 'notifications/tools/list_changed', 15000);
		assert.equal(n.params._meta[SUB], 'R');
		await eventually(async () => (await raw.request('tools/list', { _meta: modernMeta() })).result.tools.some((t) => t.name === 'jira__get_ticket'),
			10000, 100, 'the new server\'s tools');
	} finally {
		await raw.close();
		assert.doesNotMatch(raw.stderr(), /Sanitizer|runtime error/);
	}
});

describe('toward a 2026-07-28 upstream over HTTP', () => {
	test('sluice listens to it, and hears its list changes and resource updates', async () => {
		// A second sluice serves the 2026-07-28 fixture over HTTP: a strict
		// 2026-07-28 server whose own listens are what this change adds.
		const inner = await startHttp({ servers: { sdk2: modernFixture() } });
		const outer = await startHttp({ servers: { inner: { url: inner.url } } });
		const a = await sdkClient(outer.url);
		const sub = await a.client.listen({ toolsListChanged: true, resourceSubscriptions: ['sluice://inner/sluice://sdk2/memo://note'] });
		assert.deepEqual(sub.honoredFilter.resourceSubscriptions, ['sluice://inner/sluice://sdk2/memo://note']);
		await a.client.callTool({ name: 'inner__sdk2__grow', arguments: {} });
		await eventually(() => changes(a.heard, 'notifications/tools/list_changed').length >= 1, 10000, 50, 'list_changed through two gateways');
		await eventually(async () => (await a.client.listTools()).tools.some((t) => t.name === 'inner__sdk2__extra_1'), 5000, 100, 'the new tool');
		await a.client.callTool({ name: 'inner__sdk2__touch', arguments: { text: 'deep' } });
		await eventually(() => a.heard.some((n) => n.method === 'notifications/resources/updated'), 10000, 50, 'the update through two gateways');
		assert.equal(a.heard.find((n) => n.method === 'notifications/resources/updated').params.uri, 'sluice://inner/sluice://sdk2/memo://note');
		await sub.close();
		await a.client.close();
		await closeAll();
		assert.doesNotMatch(inner.stderr() + outer.stderr(), /Sanitizer|runtime error/);
	});
});
