// Shared state, results, cache and limits (docs/internals/REPLICAS.md): two
// HTTP replicas and one Redis, with 2026-07-28 requests (each a session of
// its own). A large result shortened on replica A gives a read_result id
// that replica B reads, and no other caller can; a cached tool called on A
// is a hit on B; a limit of 10 a minute holds across A and B together.
// With Redis SIGKILLed calls go on with local state (limits per replica,
// an id kept in Redis is said to be unreachable); with Redis back, shared
// again.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { createHash } from 'node:crypto';
import path from 'node:path';

import { catalog, closeAll, eventually, httpRequest, modernMeta, startHttp, writeConfig, MODERN } from './helpers.mjs';
import { startRedis, redisCli } from './redis.mjs';

const work = mkdtempSync(path.join(os.tmpdir(), 'sluice-sharedstate-'));
let redis;
after(async () => {
	await closeAll();
	await redis?.stop();
	rmSync(work, { recursive: true, force: true });
});

const TOKENS = { alice: 'alice-token-4b1e', bob: 'bob-token-77c0', carol: 'carol-token-19fa', dave: 'dave-token-c3d2' };
const RATE_LIMITED = -31429;
const BIG = 20000; // bytes of cat__huge: over the governor's 100 tokens

function config(name, r) {
	return writeConfig({ cat: catalog('github') }, {
		exposure: 'passthrough',
		http: { auth: { tokens: Object.entries(TOKENS).map(([subject, token]) => ({ token, subject })) } },
		governor: { maxTokens: 100 },
		cache: { tools: ['cat.slow'] },
		// Only dave and carol are limited: the other callers' calls stay free.
		quotas: { subjects: { dave: { callsPerMinute: 10 }, carol: { callsPerMinute: 10 } } },
		audit: { file: path.join(work, `${name}.audit.jsonl`) },
		shared: { redis: { url: r.url, keyPrefix: 'e2e:', commandTimeoutMs: 2000 } },
	});
}

let nextId = 1;
// One 2026-07-28 tools/call as who: the raw response.
function call(gw, who, name, args = {}) {
	return httpRequest({ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST',
		headers: { authorization: `Bearer ${TOKENS[who]}`, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name } },
	{ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args, _meta: modernMeta() } });
}
const text = (r) => r.json?.result?.content?.map((b) => b.text).join('') ?? '';
async function bigResult(gw, who) {
	const r = await call(gw, who, 'cat__huge', { bytes: BIG });
	assert.equal(r.status, 200, r.text);
	const m = /read_result \{"result_id": "([a-z0-9]+)"\}/.exec(text(r));
	assert.ok(m, `a read_result id in ${text(r).slice(-300)}`);
	return m[1];
}
// The whole result, read back page after page (at most 10 pages).
async function readAll(gw, who, id) {
	let out = '';
	for (let offset = 0, i = 0; i < 10; i++) {
		const r = await call(gw, who, 'read_result', { result_id: id, offset, limit_tokens: 5000 });
		assert.equal(r.json?.result?.isError, undefined, text(r));
		const t = text(r), m = /\n\[sluice: characters \d+-(\d+) of (\d+); continue with offset \d+\]$/.exec(t);
		if (!m) return out + t;
		out += t.slice(0, m.index);
		offset = Number(m[1]);
	}
	throw new Error('too many pages');
}
const status = async (gw) => (await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/status', method: 'GET' })).json;
const hits = (name) => readFileSync(path.join(work, `${name}.audit.jsonl`), 'utf8').trim().split('\n')
	.map((l) => JSON.parse(l)).filter((e) => e.cache_hit === true).length;
// n calls of echo as who alternating A, B: how many passed, and the refusals.
async function burst(gws, who, n) {
	const refused = [];
	let passed = 0;
	for (let i = 0; i < n; i++) {
		const r = await call(gws[i % gws.length], who, 'cat__echo', { i });
		if (r.json?.error) refused.push(r.json.error);
		else if (r.json?.result && !r.json.result.isError) passed++;
		else throw new Error(r.text);
	}
	return { passed, refused };
}

test('results, cache and limits across two replicas; Redis down and back', async () => {
	redis = await startRedis();
	const [a, b] = await Promise.all([startHttp({ configPath: config('a', redis) }), startHttp({ configPath: config('b', redis) })]);
	for (const gw of [a, b])
		await eventually(async () => (await status(gw)).shared.state === 'connected', 5000, 50, 'connected');

	// read_result: the id from a request on A is read on B (and on A by a
	// later request), whole; it is in Redis under the caller's key with a TTL.
	const id = await bigResult(a, 'alice');
	assert.match(id, /^s[0-9a-f]{24}$/);
	const whole = await readAll(b, 'alice', id);
	assert.equal(whole.length, BIG);
	assert.equal(await readAll(a, 'alice', id), whole);
	const keys = (await redisCli(redis, ['KEYS', 'e2e:result:*'])).trim().split('\n');
	assert.equal(keys.length, 1);
	assert.match(keys[0], new RegExp(`^e2e:result:[0-9a-f]{64}:${id}$`));
	const ttl = Number((await redisCli(redis, ['PTTL', keys[0]])).trim());
	assert.ok(ttl > 25 * 60 * 1000 && ttl <= 30 * 60 * 1000, `PTTL ${ttl}`);
	// A hostile entry under alice's key (not a string): refused with a reason, once logged.
	const forged = keys[0].replace(id, 's' + 'ab'.repeat(12));
	await redisCli(redis, ['HSET', forged, 'x', 'y']);
	let r = await call(b, 'alice', 'read_result', { result_id: 's' + 'ab'.repeat(12) });
	assert.equal(r.json.result.isError, true);
	assert.match(text(r), /the shared store holds something else under its key/);
	await eventually(() => /read_result: the shared store's entry for s(ab){12} is not a string/.test(b.stderr()), 2000, 25, 'logged');
	// Another caller cannot read it, on either replica.
	for (const gw of [a, b]) {
		const r = await call(gw, 'bob', 'read_result', { result_id: id });
		assert.equal(r.json.result.isError, true);
		assert.match(text(r), /it expired .*or it belongs to another caller/);
	}

	// The cache: slow on A fills it, the same call on B is a hit from Redis.
	const t0 = performance.now();
	assert.equal(text(await call(a, 'alice', 'cat__slow', { ms: 600 })), 'slept 600 ms');
	assert.ok(performance.now() - t0 >= 590);
	assert.equal(text(await call(b, 'alice', 'cat__slow', { ms: 600 })), 'slept 600 ms');
	// A hit, as B's audit says (not a time, which a loaded machine stretches).
	await eventually(() => hits('b') === 1, 3000, 50, 'the hit in B\'s audit');
	assert.equal(hits('a'), 0);
	assert.equal((await redisCli(redis, ['KEYS', 'e2e:cache:*'])).trim().split('\n').length, 1);

	// A limit of 10 a minute, calls alternating A and B: exactly 10 pass.
	r = await burst([a, b], 'dave', 11);
	assert.equal(r.passed, 10);
	assert.equal(r.refused.length, 1);
	assert.equal(r.refused[0].code, RATE_LIMITED);
	assert.match(r.refused[0].message, /^rate limit: subject 'dave' is over its 10 calls per minute \(burst 10\); retry after \d+ s$/);
	assert.equal(r.refused[0].data.window, 'minute');
	const qkeys = (await redisCli(redis, ['KEYS', 'e2e:quota:subject:*'])).trim().split('\n');
	assert.equal(qkeys.length, 1);
	assert.equal((await redisCli(redis, ['HGET', qkeys[0], 'n'])).trim(), '10');
	assert.ok(Number((await redisCli(redis, ['PTTL', qkeys[0]])).trim()) > 0, 'the bucket expires');

	// Hostile values in Redis: a cache entry that is not a JSON object is a
	// miss (the call reaches the server), logged once.
	// The key as cache.c makes it: SHA-256 of the server, the tool, no user
	// (not a perUser server) and the canonical arguments.
	const ckey = 'e2e:cache:' + createHash('sha256').update('3:cat\n4:slow\n\n{"ms":600}').digest('hex');
	assert.equal((await redisCli(redis, ['EXISTS', ckey])).trim(), '1', 'the key of the call above');
	const hostile = 'e2e:cache:' + createHash('sha256').update('3:cat\n4:slow\n\n{"ms":650}').digest('hex');
	await redisCli(redis, ['SET', hostile, '[1,2,3]', 'PX', '60000']);
	const t2 = performance.now();
	assert.equal(text(await call(a, 'bob', 'cat__slow', { ms: 650 })), 'slept 650 ms');
	assert.ok(performance.now() - t2 >= 590, 'a miss');
	await eventually(() => /cache: an entry in the shared store \(Redis\) was ignored: it is not a JSON object/.test(a.stderr()), 2000, 50, 'logged');

	// Redis SIGKILLed: calls go on with local state.
	const unread = await bigResult(a, 'alice'); // in Redis, never read on B
	const killed = redis;
	await killed.kill('SIGKILL');
	for (const gw of [a, b])
		await eventually(async () => (await status(gw)).shared.state === 'degraded', 4000, 50, 'degraded');
	// An id kept in Redis that B never read: B says it cannot reach it; A
	// still has it here. The one B read before, B kept.
	r = await call(b, 'alice', 'read_result', { result_id: unread });
	assert.equal(r.json.result.isError, true);
	assert.match(text(r), new RegExp(`no result with id '${unread}' here: it is kept in the shared store \\(Redis\\), which this replica cannot reach now`));
	assert.equal(await readAll(a, 'alice', id), whole);
	assert.equal(await readAll(b, 'alice', id), whole);
	// A result made now is local ('r'), read on its replica, explained on the other.
	const local = await bigResult(a, 'alice');
	assert.match(local, /^r[0-9a-f]{24}$/);
	assert.equal((await readAll(a, 'alice', local)).length, BIG);
	r = await call(b, 'alice', 'read_result', { result_id: local });
	assert.match(text(r), /it was kept by another replica only/);
	// Limits per replica: carol gets 10 on A and 10 more on B.
	r = await burst([a], 'carol', 11);
	assert.deepEqual([r.passed, r.refused.length], [10, 1]);
	r = await burst([b], 'carol', 10);
	assert.equal(r.passed, 10, 'B counts alone while Redis is down');

	// Redis back on the same port (empty): shared again.
	redis = await startRedis({ port: killed.port });
	await killed.stop();
	for (const gw of [a, b])
		await eventually(async () => (await status(gw)).shared.state === 'connected', 8000, 100, 'connected again');
	const id2 = await bigResult(b, 'bob');
	assert.match(id2, /^s[0-9a-f]{24}$/);
	assert.equal((await readAll(a, 'bob', id2)).length, BIG);
	r = await burst([b, a], 'carol', 11); // a fresh bucket in the empty Redis, for both
	assert.deepEqual([r.passed, r.refused.length], [10, 1]);

	// Redis hung (SIGSTOP): a lookup on A waits at most commandTimeoutMs (2 s), then says why.
	const id3 = await bigResult(b, 'bob');
	process.kill(redis.pid, 'SIGSTOP');
	try {
		const t3 = performance.now();
		r = await call(a, 'bob', 'read_result', { result_id: id3 });
		const took = performance.now() - t3;
		assert.ok(took >= 1500 && took < 4000, `answered after ${took} ms`);
		assert.equal(r.json.result.isError, true);
		assert.match(text(r), new RegExp(`no result '${id3}' could be read: the shared store \\(Redis\\) failed \\(.*commandTimeoutMs`));
	} finally {
		process.kill(redis.pid, 'SIGCONT');
	}
});

test('one replica, no Redis: a 2026-07-28 caller reads its result in a later request; another caller cannot', async () => {
	const gw = await startHttp({ servers: { cat: catalog('github') }, sluice: {
		exposure: 'passthrough', governor: { maxTokens: 100 },
		http: { auth: { tokens: Object.entries(TOKENS).map(([subject, token]) => ({ token, subject })) } } } });
	const id = await bigResult(gw, 'alice');
	assert.match(id, /^r\d+$/);
	assert.equal((await readAll(gw, 'alice', id)).length, BIG);
	const r = await call(gw, 'bob', 'read_result', { result_id: id });
	assert.equal(r.json.result.isError, true);
	assert.match(text(r), /belong to the caller that received them/);
});

// Issue 33, finding 9: Redis restarts empty while replica A holds sessions
// (more than one batch of 256); A writes their records again once it is back
// (REPLICAS.md, "Redis back"), so when A dies later a session goes on on
// replica B under the same id.
test('Redis restarted empty: a replica writes its sessions again; after it dies another adopts them', async () => {
	const MANY = 300;
	const r1 = await startRedis();
	let r2;
	const cfg = (name) => writeConfig({ cat: catalog('github') }, {
		exposure: 'passthrough',
		http: { auth: { tokens: [{ token: TOKENS.alice, subject: 'alice' }] }, maxSessions: 1000, maxSessionsPerCaller: 1000 },
		audit: { file: path.join(work, `resync-${name}.audit.jsonl`) },
		shared: { secret: 'resync-e2e-secret-0123456789abcdef0123', redis: { url: r1.url, keyPrefix: 'rs:', commandTimeoutMs: 2000 } },
	});
	const [a, b] = await Promise.all([startHttp({ configPath: cfg('a') }), startHttp({ configPath: cfg('b') })]);
	const post = (gw, body, sid) => httpRequest({ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST',
		headers: { authorization: `Bearer ${TOKENS.alice}`, ...(sid ? { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } : {}) } }, body);
	try {
		const init = await post(a, { jsonrpc: '2.0', id: 1, method: 'initialize',
			params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'resync', version: '1' } } });
		const sid = init.headers['mcp-session-id'];
		assert.ok(sid, init.text);
		await post(a, { jsonrpc: '2.0', method: 'notifications/initialized' }, sid);
		const key = `rs:session:${sid}`;
		// More sessions on A, 20 at a time: the rewrite takes several batches.
		for (let i = 1; i < MANY; i += 20)
			await Promise.all(Array.from({ length: Math.min(20, MANY - i) }, (_, j) => post(a, { jsonrpc: '2.0', id: 1, method: 'initialize',
				params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: `resync-${i + j}`, version: '1' } } })
				.then((r) => assert.ok(r.headers['mcp-session-id'], r.text))));
		const sessions = async (r) => (await redisCli(r, ['--scan', '--pattern', 'rs:session:*'])).trim().split('\n').filter(Boolean).length;
		await eventually(async () => (await sessions(r1)) === MANY, 10000, 100, 'the records in Redis');
		// Redis restarts empty on the same port: a new process (another run_id)
		// without persistence. Its DBSIZE is not read: the replicas may have
		// reconnected and written again before any check here could run.
		const runId = async (r) => /run_id:(\w+)/.exec(await redisCli(r, ['INFO', 'server']))?.[1];
		const before = await runId(r1);
		await r1.kill('SIGKILL');
		r2 = await startRedis({ port: r1.port });
		assert.notEqual(await runId(r2), before);
		// A finds Redis back and writes every session's record again, unasked.
		await eventually(async () => (await sessions(r2)) === MANY, 20000, 100, 'replica A to write its sessions again');
		assert.equal((await redisCli(r2, ['EXISTS', key])).trim(), '1');
		// A dies; B serves the same session id, adopted from the record.
		a.proc.kill('SIGKILL');
		await a.exited;
		const list = await post(b, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, sid);
		assert.equal(list.status, 200, list.text);
		assert.ok(list.json?.result?.tools?.some((t) => t.name === 'cat__echo'), list.text);
		assert.match(b.stderr(), /adopted from another replica/);
	} finally {
		await Promise.all([a.close(), b.close()]);
		await r2?.stop();
		await r1.stop();
	}
});
