// Sessions across replicas (docs/internals/REPLICAS.md, "Sessions"): two
// HTTP replicas sharing sluice.shared.secret and one Redis. A session opened
// on replica A goes on on replica B after A is SIGKILLed, without a new
// initialize: B adopts it from its record in Redis, with its resource
// subscription (whose updates reach B's GET stream). A tampered id, another
// caller's token, a Redis down or hung: 404 Session not found at once, never
// a hang. A 2026-07-28 policy confirmation asked on A is answered on B; a
// server's question parked on A, retried on B, gets a clear error. The
// official SDK 1.x client, given its session id, goes on on B.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { startHttp, writeConfig, everything, closeAll, eventually, httpClient, textOf, LEGACY, MODERN, modernMeta } from './helpers.mjs';
import { startRedis, redisCli } from './redis.mjs';

const ALICE = 'alice-token-0123456789', BOB = 'bob-token-0123456789';
const SECRET = 'e2e-shared-secret-0123456789abcdef-xyz';
// Every Redis started, stopped at the end whatever failed (a Redis left
// running would keep the test process alive).
let redis;
const redises = [];
const newRedis = async () => {
	redis = await startRedis();
	redises.push(redis);
	return redis;
};
after(async () => {
	await closeAll();
	for (const r of redises) {
		try {
			process.kill(r.pid, 'SIGCONT');
		} catch {}
		await r.stop();
	}
});

function config(more = {}) {
	return writeConfig({ everything: everything() }, {
		exposure: 'passthrough',
		http: { auth: { tokens: [{ token: ALICE, subject: 'alice' }, { token: BOB, subject: 'bob' }] } },
		policy: { rules: [{ match: 'everything.get-sum', action: 'confirm' }] },
		shared: { secret: '${E2E_SHARED_SECRET}', redis: { url: redis.url, keyPrefix: 'e2e-adopt:', commandTimeoutMs: 300, ...more } },
	});
}
const start = (cfg) => startHttp({ configPath: cfg, env: { E2E_SHARED_SECRET: SECRET } });

// One POST; resolves { status, json (the last SSE event's data, or the body), ms, sid }.
async function post(gw, body, { sid, token = ALICE, headers = {} } = {}) {
	const t0 = Date.now();
	const res = await fetch(gw.url, {
		method: 'POST',
		headers: {
			authorization: `Bearer ${token}`,
			'content-type': 'application/json',
			accept: 'application/json, text/event-stream',
			...(sid ? { 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY } : {}),
			...headers,
		},
		body: JSON.stringify(body),
		signal: AbortSignal.timeout(10000),
	});
	const text = await res.text();
	let json;
	try {
		json = /event-stream/.test(res.headers.get('content-type')) ?
			JSON.parse(text.split('\n').filter((l) => l.startsWith('data: ')).at(-1).slice(6)) : JSON.parse(text);
	} catch {}
	return { status: res.status, json, text, ms: Date.now() - t0, sid: res.headers.get('mcp-session-id') };
}
let nextId = 1;
const rpc = (gw, method, params, opts) => post(gw, { jsonrpc: '2.0', id: nextId++, method, params }, opts);

async function initialize(gw, token = ALICE) {
	const r = await rpc(gw, 'initialize', { protocolVersion: LEGACY, capabilities: { roots: {} }, clientInfo: { name: 'adopt-e2e', version: '1.2.3' } }, { token });
	assert.equal(r.status, 200, r.text);
	assert.ok(r.sid, 'a session id');
	const n = await post(gw, { jsonrpc: '2.0', method: 'notifications/initialized' }, { sid: r.sid, token });
	assert.equal(n.status, 202);
	return r.sid;
}

// A GET stream: collects the JSON-RPC messages it carries; close() ends it.
async function openStream(gw, sid, token = ALICE) {
	const ac = new AbortController();
	const res = await fetch(gw.url, {
		headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY },
		signal: ac.signal,
	});
	const s = { status: res.status, heard: [], close: () => ac.abort() };
	if (res.status !== 200) return s;
	(async () => {
		let buf = '';
		const dec = new TextDecoder();
		try {
			for await (const chunk of res.body) {
				buf += dec.decode(chunk, { stream: true });
				let i;
				while ((i = buf.indexOf('\n\n')) >= 0) {
					const ev = buf.slice(0, i);
					buf = buf.slice(i + 2);
					for (const l of ev.split('\n'))
						if (l.startsWith('data: ') && l.length > 6) s.heard.push(JSON.parse(l.slice(6)));
				}
			}
		} catch {}
	})();
	return s;
}

const tamper = (sid) => sid.replace(/.$/, (c) => (c === '0' ? '1' : '0'));
const record = async (sid) => JSON.parse((await redisCli(redis, ['GET', `e2e-adopt:session:${sid}`])).trim() || 'null');

test('a session of replica A goes on on replica B after A dies; seals, callers, Redis down', async () => {
	await newRedis();
	const cfg = config();
	const a = await start(cfg), b = await start(cfg);
	assert.doesNotMatch(a.stderr(), new RegExp(SECRET), 'the secret is never logged');

	// Sessions opened on A: sealed ids, their records in Redis.
	const sid = await initialize(a);
	assert.match(sid, /^[0-9a-f]{32}\.[0-9a-f]{32}$/);
	const sidGet = await initialize(a); // adopted through a GET stream first
	const sidDel = await initialize(a); // ended by a DELETE on B
	const sidLate = await initialize(a); // asked for while Redis is down
	const resources = (await rpc(a, 'resources/list', {}, { sid })).json.result.resources;
	const uri = resources.find((r) => /architecture\.md$/.test(r.uri))?.uri ?? resources[0].uri;
	assert.equal((await rpc(a, 'resources/subscribe', { uri }, { sid })).json.result !== undefined, true);
	const setLevel = await rpc(a, 'logging/setLevel', { level: 'warning' }, { sid });
	assert.ok(setLevel.json.result, setLevel.text);
	await eventually(async () => (await record(sid))?.subscriptions?.includes(uri), 3000, 50, 'the subscription in the record');
	const rec = await record(sid);
	assert.equal(rec.protocolVersion, LEGACY);
	assert.deepEqual(rec.clientInfo, { name: 'adopt-e2e', version: '1.2.3' });
	assert.equal(rec.logLevel, 'warning');
	const ttl = Number(await redisCli(redis, ['PTTL', `e2e-adopt:session:${sid}`]));
	assert.ok(ttl > 60000 && ttl <= 30 * 60000, `TTL ${ttl} ms: the session idle timeout`);

	a.proc.kill('SIGKILL');
	await a.exited;

	// B: the same id works without initialize (tools/list, tools/call).
	const list = await rpc(b, 'tools/list', {}, { sid });
	assert.equal(list.status, 200, list.text);
	assert.ok(list.json.result.tools.some((t) => t.name === 'everything__echo'));
	assert.match(b.stderr(), /http: session [0-9a-f]{8}… adopted from another replica \(1 subscriptions\)/);
	const echo = await rpc(b, 'tools/call', { name: 'everything__echo', arguments: { message: 'on B' } }, { sid });
	assert.equal(echo.status, 200, echo.text);
	assert.match(echo.json.result.content[0].text, /on B/);

	// The subscription made on A reaches B's GET stream.
	const stream = await openStream(b, sid);
	assert.equal(stream.status, 200);
	const tog = await rpc(b, 'tools/call', { name: 'everything__toggle-subscriber-updates', arguments: {} }, { sid });
	await eventually(() => stream.heard.some((m) => m.method === 'notifications/resources/updated' && m.params.uri === uri),
		12000, 50, 'the update on B\'s stream').catch((e) => { throw new Error(e.message + '\n' + b.stderr() + tog.text + JSON.stringify(stream.heard)); });
	stream.close();

	// A GET stream adopts as well.
	const g = await openStream(b, sidGet);
	assert.equal(g.status, 200);
	g.close();
	assert.equal((await rpc(b, 'ping', {}, { sid: sidGet })).status, 200);

	// Tampered, another caller's token, a forged id of the right shape: 404.
	for (const [id, token] of [[tamper(sid), ALICE], [sidLate, BOB], ['0'.repeat(32) + '.' + '0'.repeat(32), ALICE]]) {
		const r = await rpc(b, 'tools/list', {}, { sid: id, token });
		assert.equal(r.status, 404, r.text);
		assert.match(r.json.error.message, /Session not found/);
	}
	const other = await openStream(b, tamper(sidGet));
	assert.equal(other.status, 404);

	// A DELETE ends the session everywhere: its record is gone.
	const del = await fetch(b.url, { method: 'DELETE', headers: { authorization: `Bearer ${ALICE}`, 'mcp-session-id': sidDel } });
	assert.equal(del.status, 200);
	assert.equal(await record(sidDel), null);
	assert.equal((await rpc(b, 'ping', {}, { sid: sidDel })).status, 404);

	// A malformed record (Redis is untrusted): 404, and a warning.
	const bad = await initialize(b);
	const c = await start(cfg);
	await redisCli(redis, ['SET', `e2e-adopt:session:${bad}`, '{"v":1,"caller":7}']);
	const rb = await rpc(c, 'ping', {}, { sid: bad });
	assert.equal(rb.status, 404);
	await eventually(() => /not adopted: the session record in Redis is for another caller/.test(c.stderr()), 3000, 25, 'the warning');

	// A DELETE on C of a session B holds ends it on B too (announced).
	const delC = await fetch(c.url, { method: 'DELETE', headers: { authorization: `Bearer ${ALICE}`, 'mcp-session-id': sidGet } });
	assert.equal(delC.status, 200);
	await eventually(() => /http: session [0-9a-f]{8}… ended: deleted on another replica/.test(b.stderr()), 3000, 25, 'the end on B');
	assert.equal((await rpc(b, 'ping', {}, { sid: sidGet })).status, 404);

	// Redis hung (SIGSTOP): 404 within commandTimeoutMs, no hang.
	process.kill(redis.pid, 'SIGSTOP');
	try {
		const hung = await rpc(c, 'ping', {}, { sid: sidLate });
		assert.equal(hung.status, 404, hung.text);
		assert.ok(hung.ms < 3000, `took ${hung.ms} ms`);
	} finally {
		process.kill(redis.pid, 'SIGCONT');
	}
	// Redis down (SIGKILL): 404 at once.
	await redis.kill('SIGKILL');
	const down = await rpc(b, 'ping', {}, { sid: sidLate });
	assert.equal(down.status, 404, down.text);
	assert.ok(down.ms < 3000, `took ${down.ms} ms`);
	// The sessions B holds go on.
	assert.equal((await rpc(b, 'ping', {}, { sid })).status, 200);
});

test('the official SDK 1.x client reconnects to replica B with its session id, without initialize', async () => {
	await newRedis();
	const cfg = config();
	const a = await start(cfg), b = await start(cfg);
	const headers = { authorization: `Bearer ${ALICE}` };
	const { client, transport } = await httpClient(a.url, { headers, name: 'sdk1-adopt' });
	const sessionId = transport.sessionId;
	assert.match(sessionId, /^[0-9a-f]{32}\.[0-9a-f]{32}$/);
	assert.equal(textOf(await client.callTool({ name: 'everything__echo', arguments: { message: 'on A' } })), 'Echo: on A');
	a.proc.kill('SIGKILL');
	await a.exited;
	await client.close().catch(() => {});

	// SDK 1.x: a transport given a sessionId reconnects, it does not initialize.
	const onB = new StreamableHTTPClientTransport(new URL(b.url), { sessionId, requestInit: { headers } });
	const c2 = new Client({ name: 'sdk1-adopt', version: '1.0.0' });
	await c2.connect(onB);
	assert.ok((await c2.listTools()).tools.some((t) => t.name === 'everything__echo'));
	assert.equal(textOf(await c2.callTool({ name: 'everything__echo', arguments: { message: 'on B' } })), 'Echo: on B');
	assert.match(b.stderr(), /session [0-9a-f]{8}… adopted from another replica/);
	await c2.close();
	await b.close();
});

test('a 2026-07-28 confirmation asked on replica A is answered on replica B', async () => {
	await newRedis();
	// A Redis whose data began a minute ago: a brand-new one refuses the
	// approvals of its first 30 s (shared/once.h; approvals.test.mjs).
	await redisCli(redis, ['SET', 'e2e-adopt:once:epoch', String(Math.floor(Date.now() / 1000) - 60)]);
	const cfg = config();
	const a = await start(cfg), b = await start(cfg);
	const call = (gw, extra = {}, name = 'everything__get-sum', args = { a: 2, b: 3 }) => post(gw, {
		jsonrpc: '2.0', id: nextId++, method: 'tools/call',
		params: { _meta: modernMeta({ elicitation: {} }), name, arguments: args, ...extra },
	}, { headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name } });
	const first = (await call(a)).json.result;
	assert.equal(first.resultType, 'input_required', JSON.stringify(first));
	const answer = { confirm: { action: 'accept', content: { approve: true } } };
	const onB = (await call(b, { inputResponses: answer, requestState: first.requestState })).json.result;
	assert.equal(onB.resultType, 'complete', JSON.stringify(onB));
	assert.doesNotMatch(onB.content[0].text, /policy:/);
	assert.match(onB.content[0].text, /5/);
	// A state sealed under another secret is refused.
	const forged = first.requestState.replace(/.$/, (ch) => (ch === '0' ? '1' : '0'));
	const f = (await call(b, { inputResponses: answer, requestState: forged })).json.result;
	assert.equal(f.isError, true);
	assert.match(f.content[0].text, /requestState that is not ours/);

	// A server's question held on A (a parked call) cannot be answered on
	// B: the retry is told so, clearly, and that the call must be made again.
	const ELICIT = 'everything__trigger-elicitation-request';
	const parked = (await call(a, {}, ELICIT, {})).json.result;
	assert.equal(parked.resultType, 'input_required', JSON.stringify(parked));
	assert.match(parked.requestState, /^sluice-park\./);
	const key = Object.keys(parked.inputRequests)[0];
	const elsewhere = (await call(b, { inputResponses: { [key]: { action: 'decline' } }, requestState: parked.requestState }, ELICIT, {})).json;
	assert.equal(elsewhere.error?.code, -32602, JSON.stringify(elsewhere));
	assert.match(elsewhere.error.message, /requestState: the question was asked on another replica.*call the tool again/);
	await a.close();
	await b.close();
});

test('Redis without a secret: one warning at start, ids are not sealed', async () => {
	await newRedis();
	const cfg = writeConfig({ everything: everything() }, { shared: { redis: { url: redis.url, keyPrefix: 'e2e-adopt2:' } } });
	const gw = await startHttp({ configPath: cfg });
	await eventually(() => /sluice\.shared\.redis without sluice\.shared\.secret/.test(gw.stderr()), 3000, 50, 'the warning');
	assert.equal(gw.stderr().match(/without sluice\.shared\.secret/g).length, 1);
	const r = await rpc(gw, 'initialize', { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'x', version: '1' } });
	assert.match(r.sid, /^[0-9a-f]{32}$/);
	assert.equal(await redisCli(redis, ['EXISTS', `e2e-adopt2:session:${r.sid}`]).then((x) => x.trim()), '0');
	await gw.close();
});
