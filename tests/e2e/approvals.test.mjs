// Single-use approvals across replicas (docs/internals/REPLICAS.md,
// "Single-use approvals"; issue 32, finding 11): two HTTP replicas sharing
// sluice.shared.secret and one Redis, a counter server behind each (one
// log file, so the test counts the writes both made). An approved retry of
// a 2026-07-28 confirmation, and of a program that asked, runs once
// whichever replica it reaches and however often it is sent; with Redis
// down an approval cannot be shown unused and is refused, nothing runs. A
// program's state presented by another caller is refused.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { startHttp, writeConfig, closeAll, MODERN, REPO, modernMeta } from './helpers.mjs';
import { startRedis } from './redis.mjs';

const ALICE = 'alice-token-approvals-3e9d1c', BOB = 'bob-token-approvals-7a20f4';
const SECRET = 'e2e-approvals-secret-0123456789abcdef';
const COUNTER = path.join(REPO, 'tests', 'servers', 'counter', 'server.cjs');
const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-approvals-'));
const LOG = path.join(dir, 'calls.log');
const writes = () => readFileSync(LOG, 'utf8').split('\n').filter((l) => l.startsWith('write_item ')).length;
const APPROVE = { confirm: { action: 'accept', content: { approve: true } } };
const WRITE = 'await tools.store.read_item({ id: 1 }); return await tools.store.write_item({ id: 1, value: 5 });';

let redis;
after(async () => {
	await closeAll();
	await redis?.stop();
	rmSync(dir, { recursive: true, force: true });
});

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
