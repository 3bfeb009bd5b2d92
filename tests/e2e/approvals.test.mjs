// Single-use approvals across replicas (docs/internals/REPLICAS.md,
// "Single-use approvals"; issue 32, finding 11): two HTTP replicas sharing
// sluice.shared.secret and one Redis, a counter server behind each (one
// log file, so the test counts the writes both made). An approved retry of
// a 2026-07-28 confirmation, and of a program that asked, runs once
// whichever replica it reaches and however often it is sent; with Redis
// down an approval cannot be shown unused and is refused, nothing runs. A
// program's state presented by another caller is refused. Redis restarted
// empty: an approval used before it is not used again on another replica
// (issue 35).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { startHttp, writeConfig, closeAll, eventually, httpRequest, sleep, MODERN, REPO, modernMeta } from './helpers.mjs';
import { startRedis, redisCli } from './redis.mjs';

const ALICE = 'alice-token-approvals-3e9d1c', BOB = 'bob-token-approvals-7a20f4';
const SECRET = 'e2e-approvals-secret-0123456789abcdef';
const COUNTER = path.join(REPO, 'tests', 'servers', 'counter', 'server.cjs');
const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-approvals-'));
const LOG = path.join(dir, 'calls.log');
const writes = () => readFileSync(LOG, 'utf8').split('\n').filter((l) => l.startsWith('write_item ')).length;
const APPROVE = { confirm: { action: 'accept', content: { approve: true } } };
const WRITE = 'await tools.store.read_item({ id: 1 }); return await tools.store.write_item({ id: 1, value: 5 });';

let redis;
const redises = [];
after(async () => {
	await closeAll();
	await redis?.stop();
	for (const r of redises)
		await r.stop();
	rmSync(dir, { recursive: true, force: true });
});

const nowS = () => Math.floor(Date.now() / 1000);
// The data of a Redis began a minute ago: a brand-new one refuses the
// approvals of its first 30 s (its epoch is their start; shared/once.h).
const aged = (r, prefix) => redisCli(r, ['SET', `${prefix}once:epoch`, String(nowS() - 60)]);
const status = async (gw) => (await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/status', method: 'GET' })).json;

// One 2026-07-28 tools/call; resolves its JSON-RPC answer.
async function call(gw, name, args, extra = {}, token = ALICE) {
	const res = await fetch(gw.url, {
		method: 'POST',
		headers: {
			authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream',
			'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name,
		},
		body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { _meta: modernMeta({ elicitation: {} }), name, arguments: args, ...extra } }),
		signal: AbortSignal.timeout(15000),
	});
	const text = await res.text();
	const data = text.split('\n').filter((l) => l.startsWith('data: ')).at(-1);
	return JSON.parse(data ? data.slice(6) : text);
}
const direct = (gw, extra) => call(gw, 'store__write_item', { id: 2, value: 9 }, extra);
const program = (gw, extra, token) => call(gw, 'execute_code', { code: WRITE }, extra, token);

test('an approved retry runs once across two replicas; with Redis down it is refused', async () => {
	writeFileSync(LOG, '');
	redis = await startRedis();
	await aged(redis, 'e2e-approvals:');
	const cfg = writeConfig({ store: { command: process.execPath, args: [COUNTER], env: { COUNTER_LOG: LOG } } }, {
		exposure: 'passthrough',
		codeMode: { enabled: true, timeoutMs: 10000 },
		http: { auth: { tokens: [{ token: ALICE, subject: 'alice' }, { token: BOB, subject: 'bob' }] } },
		policy: { rules: [{ annotation: 'destructiveHint', action: 'confirm' }] },
		shared: { secret: '${E2E_SHARED_SECRET}', redis: { url: redis.url, keyPrefix: 'e2e-approvals:', commandTimeoutMs: 500 } },
	});
	const start = () => startHttp({ configPath: cfg, env: { E2E_SHARED_SECRET: SECRET } });
	const a = await start(), b = await start();

	// A direct call: asked on A, approved on B, then sent again to A and B.
	const q = (await direct(a)).result;
	assert.equal(q.resultType, 'input_required', JSON.stringify(q));
	const retry = { requestState: q.requestState, inputResponses: APPROVE };
	const onB = (await direct(b, retry)).result;
	assert.notEqual(onB.isError, true, JSON.stringify(onB));
	assert.deepEqual(onB.structuredContent, { written: 2, value: 9 });
	for (const gw of [a, b]) {
		const again = (await direct(gw, retry)).result;
		assert.equal(again.isError, true, JSON.stringify(again));
		assert.match(again.content[0].text, /was used already/);
	}
	assert.equal(writes(), 1);

	// A program: asked on B, its retry run on A, then sent again to B and A.
	const p = (await program(b)).result;
	assert.equal(p.resultType, 'input_required', JSON.stringify(p));
	const pretry = { requestState: p.requestState, inputResponses: APPROVE };
	// Alice's state is hers: Bob's retry with it is refused, and burns nothing.
	const asBob = await program(a, pretry, BOB);
	assert.equal(asBob.error?.code, -32602, JSON.stringify(asBob));
	assert.match(asBob.error.message, /requestState: forged, tampered with, issued to another client/);
	const ran = (await program(a, pretry)).result;
	assert.notEqual(ran?.isError, true, JSON.stringify(ran));
	assert.deepEqual(JSON.parse(ran.content[0].text), { written: 1, value: 5 });
	for (const gw of [b, a]) {
		const again = await program(gw, pretry);
		assert.equal(again.error?.code, -32602, JSON.stringify(again));
		assert.match(again.error.message, /requestState: already used/);
	}
	assert.equal(writes(), 2);

	// Redis gone: a fresh approval cannot be shown unused on the other
	// replica, so it is refused (and can be asked again later).
	const q2 = (await direct(a)).result;
	assert.equal(q2.resultType, 'input_required');
	await redis.kill('SIGKILL');
	const down = (await direct(a, { requestState: q2.requestState, inputResponses: APPROVE })).result;
	assert.equal(down.isError, true, JSON.stringify(down));
	assert.match(down.content[0].text, /was not used: the shared store \(Redis\) (is unreachable|did not answer).*call the tool again/);
	assert.equal(writes(), 2);
	await a.close();
	await b.close();
});

// Issue 35: Redis restarts empty (no persistence) and forgets the marks it
// held. An approval used on A before that (a confirmation's, a program's)
// must not run again on B (A's own marks refuse it on A); one asked before
// the restart is refused once (its mark may be lost too: fail closed); one
// asked 30 s (SL_ONCE_SLACK_MS) after the data began runs. A FLUSHALL is a
// restart, too.
test('an approval used before Redis restarts empty is not used again on another replica', async () => {
	const PREFIX = 'e2e-once-epoch:';
	const log = path.join(dir, 'restart.log');
	const count = () => readFileSync(log, 'utf8').split('\n').filter((l) => l.startsWith('write_item ')).length;
	writeFileSync(log, '');
	const r1 = await startRedis();
	redises.push(r1);
	await aged(r1, PREFIX);
	const cfg = writeConfig({ store: { command: process.execPath, args: [COUNTER], env: { COUNTER_LOG: log } } }, {
		exposure: 'passthrough',
		codeMode: { enabled: true, timeoutMs: 10000 },
		policy: { rules: [{ annotation: 'destructiveHint', action: 'confirm' }] },
		http: { auth: { tokens: [{ token: ALICE, subject: 'alice' }] } },
		shared: { secret: '${E2E_SHARED_SECRET}', redis: { url: r1.url, keyPrefix: PREFIX, commandTimeoutMs: 500 } },
	});
	const a = await startHttp({ configPath: cfg, env: { E2E_SHARED_SECRET: SECRET } });
	const b = await startHttp({ configPath: cfg, env: { E2E_SHARED_SECRET: SECRET } });
	const approve = (q) => ({ requestState: q.requestState, inputResponses: APPROVE });
	const ask = async (gw) => {
		const q = (await direct(gw)).result;
		assert.equal(q.resultType, 'input_required', JSON.stringify(q));
		return q;
	};

	// Used on A; pending (asked, not answered) on B.
	const used = await ask(a), pending = await ask(b);
	const ran = (await direct(a, approve(used))).result;
	assert.notEqual(ran.isError, true, JSON.stringify(ran));
	assert.equal(count(), 1);
	// A program's approved retry, run on A.
	const p = (await program(a)).result;
	assert.equal(p.resultType, 'input_required', JSON.stringify(p));
	const pran = (await program(a, approve(p))).result;
	assert.notEqual(pran?.isError, true, JSON.stringify(pran));
	assert.equal(count(), 2);

	// Redis SIGKILLed, and back empty on the same port.
	await r1.kill('SIGKILL');
	for (const gw of [a, b])
		await eventually(async () => (await status(gw)).shared.state === 'degraded', 5000, 50, 'degraded');
	const restartedAt = nowS();
	const r2 = await startRedis({ port: r1.port });
	redises.push(r2);
	for (const gw of [a, b])
		await eventually(async () => (await status(gw)).shared.state === 'connected', 10000, 100, 'connected again');
	// The replicas set the new data's epoch as they reconnect, before any claim.
	const epoch = await eventually(async () => Number(await redisCli(r2, ['GET', `${PREFIX}once:epoch`])), 3000, 50, 'the epoch');
	assert.ok(epoch >= restartedAt && epoch <= nowS(), `epoch ${epoch}, restarted at ${restartedAt}`);

	// The used approval, on B and on A: refused, nothing written again.
	const onB = (await direct(b, approve(used))).result;
	assert.equal(onB.isError, true, JSON.stringify(onB));
	assert.match(onB.content[0].text, /was not used: the shared store \(Redis\) restarted empty .*call the tool again/);
	const onA = (await direct(a, approve(used))).result;
	assert.equal(onA.isError, true, JSON.stringify(onA));
	const pOnB = await program(b, approve(p));
	assert.equal(pOnB.error?.code, -32602, JSON.stringify(pOnB));
	assert.match(pOnB.error.message, /requestState: not used: the shared store \(Redis\) restarted empty/);
	assert.equal(count(), 2);
	// The pending one: refused once, nothing written.
	const late = (await direct(b, approve(pending))).result;
	assert.equal(late.isError, true, JSON.stringify(late));
	assert.match(late.content[0].text, /restarted empty/);
	assert.equal(count(), 2);

	assert.equal(Number(await redisCli(r2, ['GET', `${PREFIX}once:epoch`])), epoch);
	// A fresh approval, asked 30 s after the epoch, runs (bounded wait).
	for (let i = 0; i < 50 && nowS() < epoch + 31; i++)
		await sleep(1000);
	const fresh = await ask(b);
	const ok = (await direct(b, approve(fresh))).result;
	assert.notEqual(ok.isError, true, JSON.stringify(ok));
	assert.deepEqual(ok.structuredContent, { written: 2, value: 9 });
	assert.equal(count(), 3);

	// FLUSHALL takes the epoch with the marks: the next claim finds it
	// missing, is refused, and sets it.
	const before = await ask(a);
	await redisCli(r2, ['FLUSHALL']);
	const flushed = (await direct(b, approve(before))).result;
	assert.equal(flushed.isError, true, JSON.stringify(flushed));
	assert.match(flushed.content[0].text, /restarted empty \(or was emptied\)/);
	assert.ok(Number(await redisCli(r2, ['GET', `${PREFIX}once:epoch`])) >= epoch);
	assert.equal(count(), 3);
	await a.close();
	await b.close();
});

// A Redis that restarts with its data (AOF) keeps its epoch: an approval
// asked before the restart runs after it, once.
test('a Redis restarted with its data keeps its epoch: nothing is refused', async () => {
	const PREFIX = 'e2e-once-kept:';
	const log = path.join(dir, 'kept.log'), data = mkdtempSync(path.join(os.tmpdir(), 'sluice-redis-aof-'));
	const count = () => readFileSync(log, 'utf8').split('\n').filter((l) => l.startsWith('write_item ')).length;
	const persistent = (port) => startRedis({ port, args: ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', data] });
	let r2;
	writeFileSync(log, '');
	try {
		const r1 = await persistent();
		redises.push(r1);
		await aged(r1, PREFIX);
		const cfg = writeConfig({ store: { command: process.execPath, args: [COUNTER], env: { COUNTER_LOG: log } } }, {
			exposure: 'passthrough',
			policy: { rules: [{ annotation: 'destructiveHint', action: 'confirm' }] },
			http: { auth: { tokens: [{ token: ALICE, subject: 'alice' }] } },
			shared: { secret: '${E2E_SHARED_SECRET}', redis: { url: r1.url, keyPrefix: PREFIX, commandTimeoutMs: 500 } },
		});
		const a = await startHttp({ configPath: cfg, env: { E2E_SHARED_SECRET: SECRET } });
		const b = await startHttp({ configPath: cfg, env: { E2E_SHARED_SECRET: SECRET } });
		const q = (await direct(a)).result;
		assert.equal(q.resultType, 'input_required', JSON.stringify(q));
		const epoch = await redisCli(r1, ['GET', `${PREFIX}once:epoch`]);

		await r1.kill('SIGTERM'); // written to its AOF
		for (const gw of [a, b])
			await eventually(async () => (await status(gw)).shared.state === 'degraded', 5000, 50, 'degraded');
		r2 = await persistent(r1.port);
		for (const gw of [a, b])
			await eventually(async () => (await status(gw)).shared.state === 'connected', 10000, 100, 'connected again');
		assert.equal(await redisCli(r2, ['GET', `${PREFIX}once:epoch`]), epoch);

		const retry = { requestState: q.requestState, inputResponses: APPROVE };
		const ran = (await direct(b, retry)).result;
		assert.notEqual(ran.isError, true, JSON.stringify(ran));
		assert.equal(count(), 1);
		const again = (await direct(a, retry)).result;
		assert.match(again.content[0].text, /was used already/);
		assert.equal(count(), 1);
		await a.close();
		await b.close();
	} finally {
		await r2?.stop(); // before its directory goes
		rmSync(data, { recursive: true, force: true });
	}
});
