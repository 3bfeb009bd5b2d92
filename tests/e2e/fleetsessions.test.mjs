// Issue 17's list through the real fleet (tests/e2e/fleet.mjs: Redis, HAProxy
// running deploy/haproxy.cfg, three replicas started as deploy/sluice@.service
// starts them, the shared secret read from the unit's EnvironmentFile):
//  - a 2026-07-28 result shortened on one replica is read whole in the next
//    request, which HAProxy's round robin sends to another, which keeps it;
//  - a limit of 10 calls a minute lets exactly 10 through across the three;
//  - Redis SIGKILLed under 2026-07-28 load: no call fails, every replica says
//    degraded and why; Redis back on its port: connected, sharing again;
//  - official SDK 1.x clients, each with its GET stream and a subscription,
//    calling tools while the replica holding some of them is SIGKILLed: the
//    sessions go on elsewhere under the same id without a second initialize,
//    the SDK reopens its GET stream by itself, updates arrive again, and only
//    the calls in flight on the dead replica fail, each with a clear error.
// (A pin approval reaching the other replicas within 1 s is shared.test.mjs's.)
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { writeFileSync } from 'node:fs';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { catalog, everything, eventually, httpRequest, modernMeta, sleep, textOf, MODERN } from './helpers.mjs';
import { startRedis, redisCli } from './redis.mjs';
import { fleetPorts, renderHaproxy, startHaproxy, startReplica, haproxyCmd as haproxyCmd_, replicaStatus, stopFleet } from './fleet.mjs';

const SECRET = 'fleet-e2e-secret-5f0c2a9b71d84e36a0b1c2d3';
const TOKENS = { alice: 'alice-token-fleet-1', dave: 'dave-token-fleet-4' };
const RATE_LIMITED = -31429;

let redis, haproxy, ports, front;
const replicas = [];
after(() => stopFleet({ replicas, haproxy, redis, ports }));
const haproxyCmd = (cmd) => haproxyCmd_(ports.dir, cmd);
const status = replicaStatus;
// The servers HAProxy logged for POST /mcp since mark (it logs a request once it has ended).
const served = (mark) => [...haproxy.log().slice(mark).matchAll(/ sluice\/(r\d) .*"POST \/mcp/g)].map((m) => m[1]);

let nextId = 1;
// One 2026-07-28 tools/call through HAProxy: the raw response.
function call(who, name, args = {}) {
	return httpRequest({ host: '127.0.0.1', port: ports.front, path: '/mcp', method: 'POST',
		headers: { authorization: `Bearer ${TOKENS[who]}`, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name } },
	{ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args, _meta: modernMeta() } });
}
const text = (r) => r.json?.result?.content?.map((b) => b.text).join('') ?? '';
async function bigResult() {
	const r = await call('alice', 'cat__huge', { bytes: 20000 });
	assert.equal(r.status, 200, r.text);
	const m = /read_result \{"result_id": "([a-z0-9]+)"\}/.exec(text(r));
	assert.ok(m, `a read_result id in ${text(r).slice(-300)}`);
	return m[1];
}
// The first page of a read_result through HAProxy, and the replica that served it.
async function readFirst(id) {
	const r = await call('alice', 'read_result', { result_id: id, offset: 0, limit_tokens: 5000 });
	assert.equal(r.status, 200, r.text);
	return r;
}
// A result made in one request and read in the next: HAProxy's log says both
// replicas, which round robin makes different.
async function readAcross() {
	const mark = haproxy.log().length;
	const id = await bigResult();
	const r = await readFirst(id);
	await eventually(() => served(mark).length >= 2, 3000, 50, 'HAProxy logging both');
	const [made, read] = served(mark);
	return { id, r, made, read };
}

test('the fleet: Redis, HAProxy, three replicas from deploy/ with the shared secret', async () => {
	ports = await fleetPorts(3);
	front = `http://127.0.0.1:${ports.front}/mcp`;
	redis = await startRedis();
	const configPath = path.join(ports.dir, 'sluice.json');
	const envFile = path.join(ports.dir, 'sluice.env');
	writeFileSync(envFile, `SLUICE_SHARED_SECRET=${SECRET}\n`, { mode: 0o600 });
	writeFileSync(configPath, JSON.stringify({
		mcpServers: { cat: catalog('github'), everything: everything() },
		sluice: {
			exposure: 'passthrough',
			http: { auth: { tokens: Object.entries(TOKENS).map(([subject, token]) => ({ token, subject })) } },
			governor: { maxTokens: 100 },
			quotas: { subjects: { dave: { callsPerMinute: 10 } } },
			shared: { secret: '${SLUICE_SHARED_SECRET}', redis: { url: redis.url, keyPrefix: 'fleet2:', commandTimeoutMs: 500 } },
		},
	}));
	for (const port of ports.replicas)
		replicas.push(await startReplica(port, { configPath, envFile, stateRoot: path.join(ports.dir, 'state') }));
	assert.equal(replicas[0].env.SLUICE_SHARED_SECRET, SECRET, 'the unit\'s EnvironmentFile read');
	haproxy = await startHaproxy(renderHaproxy({
		listen: `127.0.0.1:${ports.front}`,
		replicas: ports.replicas.map((p) => `127.0.0.1:${p}`),
		statsSocket: path.join(ports.dir, 'haproxy.sock'),
	}), ports.dir, ports.front);
	for (const r of replicas) {
		assert.equal((await status(r)).shared.state, 'connected');
		assert.doesNotMatch(r.stderr(), /without sluice\.shared\.secret/);
		assert.doesNotMatch(r.stderr(), new RegExp(SECRET));
	}
});

test('2026-07-28 read_result across replicas: made on one, read whole on the next through round robin', async () => {
	for (let n = 0; n < 3; n++) {
		const { id, r, made, read } = await readAcross();
		assert.match(id, /^s/, 'kept in Redis');
		assert.notEqual(made, read, `made on ${made}, read on ${read}`);
		assert.notEqual(r.json.result.isError, true, text(r));
		assert.match(text(r), /^abcdefghijklmnopqrstuvwxyz0123456789/, 'the result\'s first page');
	}
	// The replica that read it from Redis keeps it: its next pages are not
	// fetched again. With the key gone from Redis, the maker and the reader
	// still have it, the third replica does not.
	const { id, made, read } = await readAcross();
	const keys = (await redisCli(redis, ['KEYS', `fleet2:result:*:${id}`])).trim().split('\n').filter(Boolean);
	assert.equal(keys.length, 1, keys.join(' '));
	assert.equal((await redisCli(redis, ['DEL', keys[0]])).trim(), '1');
	const mark = haproxy.log().length, outcome = [];
	for (let n = 0; n < 3; n++) {
		const r = await call('alice', 'read_result', { result_id: id, offset: 100, limit_tokens: 50 });
		outcome.push(r.json.result.isError ? text(r) : 'ok');
	}
	await eventually(() => served(mark).length >= 3, 3000, 50, 'HAProxy logging the reads');
	const by = Object.fromEntries(served(mark).map((rn, n) => [rn, outcome[n]]));
	assert.equal(by[made], 'ok', JSON.stringify(by));
	assert.equal(by[read], 'ok', JSON.stringify(by));
	const third = ['r1', 'r2', 'r3'].find((x) => x !== made && x !== read);
	assert.match(by[third], /no result .*expired/, JSON.stringify(by));
});

test('a limit of 10 calls a minute holds across the three replicas', async () => {
	const mark = haproxy.log().length;
	let passed = 0;
	const refused = [];
	for (let i = 0; i < 16; i++) {
		const r = await call('dave', 'cat__echo', { i });
		if (r.json?.error?.code === RATE_LIMITED) refused.push(r.json.error.message);
		else {
			assert.equal(r.json?.result?.isError, undefined, r.text);
			passed++;
		}
	}
	assert.equal(passed, 10);
	assert.equal(refused.length, 6);
	assert.match(refused[0], /limit|rate/i);
	await eventually(() => served(mark).length >= 16, 3000, 50, 'HAProxy logging the calls');
	assert.deepEqual([...new Set(served(mark))].sort(), ['r1', 'r2', 'r3'], 'every replica counted some');
});

test('Redis SIGKILLed under load: no call fails, degraded with the reason; back on its port: connected and shared again', async () => {
	const LOOPS = 3, CALLS = 30;
	let done = 0, killedAt = null;
	const failures = [];
	const loops = Array.from({ length: LOOPS }, async (_, i) => {
		for (let k = 0; k < CALLS; k++) {
			const r = await call('alice', 'cat__echo', { i, k });
			const ok = r.status === 200 && JSON.parse(text(r) || 'null')?.i === i;
			if (!ok) failures.push(`${i}/${k}: ${r.status} ${r.text.slice(0, 300)}`);
			if (++done === LOOPS * 8) {
				killedAt = Date.now();
				await redis.kill('SIGKILL');
			}
		}
	});
	await Promise.all(loops);
	assert.ok(killedAt, 'Redis killed mid-load');
	assert.deepEqual(failures, []);
	for (const r of replicas) {
		await eventually(async () => (await status(r)).shared.state === 'degraded', 3000, 50, 'degraded');
		const sh = (await status(r)).shared;
		assert.ok(sh.lastError && sh.lastError.length > 0, JSON.stringify(sh));
		assert.ok(sh.since);
	}
	// Meanwhile: results stay on their replica (r ids).
	assert.match(await bigResult(), /^r/);

	redis = await startRedis({ port: redis.port });
	for (const r of replicas)
		await eventually(async () => (await status(r)).shared.state === 'connected', 8000, 100, 'connected again');
	const { id, r, made, read } = await readAcross();
	assert.match(id, /^s/);
	assert.notEqual(made, read);
	assert.notEqual(r.json.result.isError, true, text(r));
});

// One official SDK 1.x client through HAProxy, with what it sent and got recorded.
async function sdk1Client(n) {
	const seen = { n, inits: 0, gets: [], updates: [], errors: [] };
	const fetchFn = async (url, init = {}) => {
		const method = init.method ?? 'GET';
		if (method === 'POST' && /"method":"initialize"/.test(String(init.body))) seen.inits++;
		const g = method === 'GET' ? { at: Date.now(), status: null, lastEventId: new Headers(init.headers).get('last-event-id') } : null;
		if (g) seen.gets.push(g);
		const res = await fetch(url, init);
		if (g) g.status = res.status;
		return res;
	};
	const transport = new StreamableHTTPClientTransport(new URL(front), {
		fetch: fetchFn, requestInit: { headers: { authorization: `Bearer ${TOKENS.alice}` } },
	});
	transport.onerror = (e) => seen.errors.push({ at: Date.now(), message: e.message });
	const client = new Client({ name: `fleet-sdk1-${n}`, version: '1.0.0' });
	client.setNotificationHandler(ResourceUpdatedNotificationSchema, (m) => seen.updates.push({ at: Date.now(), uri: m.params.uri }));
	await client.connect(transport); // the SDK chains our onerror
	return { client, transport, seen, sid: transport.sessionId };
}

test('SDK 1.x sessions through HAProxy go on across a SIGKILL: same id, no initialize, GET stream reopened, updates again', async (t) => {
	const CLIENTS = 4, CALLS = 30;
	// The catalog of mcp-server-everything: updates of subscribed resources every 5 s
	// once toggled on (one upstream per replica: toggled on each, directly).
	for (const r of replicas) {
		const res = await httpRequest({ host: '127.0.0.1', port: r.port, path: '/mcp', method: 'POST',
			headers: { authorization: `Bearer ${TOKENS.alice}`, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'everything__toggle-subscriber-updates' } },
		{ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'everything__toggle-subscriber-updates', arguments: {}, _meta: modernMeta() } });
		assert.match(text(res), /Started/, res.text);
	}
	const clients = [];
	for (let n = 0; n < CLIENTS; n++) clients.push(await sdk1Client(n));
	// Where each session sticks: HAProxy's stick table (runtime API).
	const table = await haproxyCmd('show table sluice');
	// The whole id (deploy/haproxy.cfg's key length fits a sealed id).
	const where = clients.map((c) => new RegExp(`key=${c.sid.replace('.', '\\.')} .*server_id=(\\d)`).exec(table)?.[1]);
	assert.ok(where.every(Boolean), table);
	for (const c of clients) assert.match(c.sid, /^[0-9a-f]{32}\.[0-9a-f]{32}$/);
	const resources = (await clients[0].client.listResources()).resources;
	const uri = resources.find((r) => /architecture\.md$/.test(r.uri))?.uri ?? resources[0].uri;
	for (const c of clients) await c.client.subscribeResource({ uri });
	await eventually(() => clients.every((c) => c.seen.updates.some((u) => u.uri === uri)), 8000, 50, 'an update on every client before the kill');
	// The replica of client 0 is killed; round robin spread the others.
	const victim = replicas[Number(where[0]) - 1];
	const onVictim = where.filter((w) => w === where[0]).length;
	assert.equal((await status(victim)).sessions, onVictim, `sessions on r${where[0]} (${where})`);
	assert.ok(new Set(where).size >= 2, `spread: ${where}`);

	const calls = [];
	let killAt = null, deadAt = null, atKill = new Set(), done = 0, long = null;
	const loops = clients.map(async (c) => {
		for (let k = 0; k < CALLS; k++) {
			const rec = { n: c.seen.n, k, start: Date.now(), end: null, ok: false, error: null };
			calls.push(rec);
			try {
				const r = await c.client.callTool({ name: 'everything__echo', arguments: { message: `${c.seen.n}/${k}` } }, undefined, { timeout: 5000 });
				assert.equal(textOf(r), `Echo: ${c.seen.n}/${k}`);
				rec.ok = true;
			} catch (e) {
				rec.error = e;
			}
			rec.end = Date.now();
			if (++done === CLIENTS * 6) {
				// A call surely in flight on the victim: 3 s long, made by client 0.
				const rec = { n: 0, k: 'long', start: Date.now(), end: null, ok: false, error: null };
				calls.push(rec);
				long = clients[0].client.callTool({ name: 'everything__trigger-long-running-operation', arguments: { duration: 3, steps: 3 } }, undefined, { timeout: 5000 })
					.then(() => (rec.ok = true), (e) => (rec.error = e)).finally(() => (rec.end = Date.now()));
				await sleep(200);
				atKill = new Set(calls.filter((x) => x.end === null));
				killAt = Date.now();
				await victim.kill('SIGKILL');
				deadAt = Date.now();
			}
			await sleep(20);
		}
	});
	await Promise.all(loops);
	await long;
	assert.ok(killAt, 'killed mid-load');
	const failed = calls.filter((x) => !x.ok);
	assert.equal(calls.find((x) => x.k === 'long').ok, false, 'the call in flight on the killed replica failed');
	t.diagnostic(`${calls.length} calls, ${failed.length} failed (${atKill.size} in flight at the kill): ${failed.map((f) => `[${f.start - killAt}..${f.end - killAt} ms] ${f.error?.message}`).join('; ')}`);
	for (const f of failed) {
		assert.match(String(f.error?.message), /502|Bad Gateway|terminated|fetch failed|ECONNRESET|socket|closed|Request timed out/i, String(f.error?.stack));
		assert.ok(f.start <= deadAt, `a call started ${f.start - deadAt} ms after the replica was gone failed: ${f.error?.message}`);
		assert.ok(f.end >= killAt, `a call failed before the kill: ${f.error?.message}`);
	}
	// Started while it died: after the count, so in the millisecond of the
	// kill too (Date.now() has no finer grain).
	const dying = calls.filter((x) => !atKill.has(x) && x.start >= killAt && x.start <= deadAt).length;
	assert.ok(failed.length <= atKill.size + dying, `${failed.length} failed; ${atKill.size} in flight, ${dying} started while it died`);
	assert.ok(calls.filter((x) => x.start > deadAt).every((x) => x.ok));

	// The same sessions, never initialized again.
	for (const c of clients) {
		assert.equal(c.transport.sessionId, c.sid);
		assert.equal(c.seen.inits, 1, `client ${c.seen.n} initialized ${c.seen.inits} times`);
	}
	const survivors = replicas.filter((r) => r !== victim);
	const adopted = survivors.map((r) => (r.stderr().match(/adopted from another replica \(1 subscriptions\)/g) ?? []).length);
	assert.equal(adopted.reduce((a, b) => a + b, 0), onVictim, `adoptions ${adopted}, ${onVictim} sessions were on the victim`);

	// Updates again on every client: the SDK reopened its GET stream by itself.
	await eventually(() => clients.every((c) => c.seen.updates.some((u) => u.at > deadAt)), 12000, 50,
		'an update on every client after the kill').catch((e) => {
		throw new Error(`${e.message}: ${JSON.stringify(clients.map((c) => c.seen))}`);
	});
	const reopened = [];
	for (const c of clients) {
		const after = c.seen.gets.filter((x) => x.at > killAt);
		if (!after.length) continue; // a client on a survivor kept its stream
		// The SDK may send two GETs at once on reconnecting (its standalone
		// stream's, with the dead replica's Last-Event-ID, and a response
		// stream's); the session has one GET stream, so one of them may be
		// refused with 409 while the other is open. One must be 200.
		const g = after.find((x) => x.status === 200);
		assert.ok(g, JSON.stringify(c.seen.gets));
		assert.ok(after.every((x) => x.status === 200 || x.status === 409), JSON.stringify(c.seen.gets));
		reopened.push(g.at - killAt);
	}
	assert.equal(reopened.length, onVictim, 'every client of the dead replica reopened its GET stream');
	t.diagnostic(`GET streams reopened ${reopened.join(', ')} ms after the kill; first update after it at ${clients.map((c) => c.seen.updates.find((u) => u.at > deadAt).at - killAt).join(', ')} ms`);
	for (const c of clients) await c.client.close();
	for (const r of replicas) assert.doesNotMatch(r.stderr(), /Sanitizer|runtime error/);
});
