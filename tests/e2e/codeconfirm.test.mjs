// Confirmations inside programs (execute_code). A 2026-07-28 client: the
// program ends with input_required and a sealed requestState; the retry
// replays it (recorded results, same seed and clock) and makes the pending
// call with the person's answer; nothing is called twice (the fixture
// server logs every call it gets). A session-era client (SDK 1.x) is asked
// through elicitation while the program waits. A skill a program calls
// before its confirmation is recorded like a tool call: the retry replays
// its answer and never runs it (or its side effect) again. A question a
// server asks during a program's call (elicitation, sampling) is refused
// on a 2026-07-28 client with a reason the server gets.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { startRaw, startHttp, closeAll, modernMeta, connect, textOf, runSluice, eventually, MODERN, REPO } from './helpers.mjs';

const SERVER = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'servers', 'counter', 'server.cjs');
const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-codeconfirm-'));
const LOG = path.join(dir, 'calls.log');
const ELICIT = { elicitation: {} };
const SLUICE = {
	exposure: 'code',
	codeMode: { timeoutMs: 5000 },
	policy: { rules: [{ annotation: 'destructiveHint', action: 'confirm' }] },
};
const servers = { store: { command: process.execPath, args: [SERVER], env: { COUNTER_LOG: LOG } } };
// Skills of the raw gateway: one, approved before it starts.
const DATA = path.join(dir, 'data');
const SKILL = {
	name: 'bump_once',
	description: 'Bumps the store once and says how many bumps it has made.',
	code: 'const b = await tools.store.bump({ tag: args.tag }); return { bumps: b.bumps, tag: b.tag };',
};

// The calls the server got since the last reset, as "name args" lines.
const calls = () => {
	try {
		return readFileSync(LOG, 'utf8').split('\n').filter(Boolean);
	} catch {
		return [];
	}
};
const resetCalls = () => writeFileSync(LOG, '');
const count = (name) => calls().filter((l) => l.startsWith(name + ' ')).length;

const APPROVE = { confirm: { action: 'accept', content: { approve: true } } };
const DECLINE = { confirm: { action: 'decline' } };

let raw;
before(async () => {
	resetCalls();
	mkdirSync(path.join(DATA, 'sluice', 'skills'), { recursive: true });
	writeFileSync(path.join(DATA, 'sluice', 'skills', 'bump_once.json'), JSON.stringify(SKILL));
	const ok = await runSluice(['skills', 'approve', 'bump_once'], 10000, { XDG_DATA_HOME: DATA });
	assert.equal(ok.code, 0, ok.stderr);
	raw = startRaw({ servers, sluice: SLUICE, env: { XDG_DATA_HOME: DATA } });
});
after(async () => {
	await raw?.close();
	await closeAll();
	rmSync(dir, { recursive: true, force: true });
});

const exec = async (code, extra = {}, caps = ELICIT) =>
	raw.request('tools/call', { _meta: modernMeta(caps), name: 'execute_code', arguments: { code }, ...extra }, { ms: 15000 });

// Reads, then writes what it read plus values from Math.random and the
// clock: a replay with another seed or time would change the write's
// arguments, and diverge.
const READ_THEN_WRITE = `
const a = await tools.store.read_item({ id: 2 });
const r = Math.floor(Math.random() * 1e9), t = Date.now(), d = new Date().getTime();
const w = await tools.store.write_item({ id: a.id, value: a.value + 1, r, t: t === d ? t : -1 });
return { a, w, r, t };`;

describe('2026-07-28: a program asks through input_required and is replayed', () => {
	test('approved: the write is made once, the read is not repeated, the answer is right', async () => {
		resetCalls();
		const first = (await exec(READ_THEN_WRITE)).result;
		assert.equal(first.resultType, 'input_required', JSON.stringify(first));
		assert.equal(first.inputRequests.confirm.method, 'elicitation/create');
		assert.match(first.inputRequests.confirm.params.message, /write_item/);
		assert.match(first.requestState, /^sluice-code\.[0-9a-f]+\.[A-Za-z0-9_-]+$/);
		assert.deepEqual([count('read_item'), count('write_item')], [1, 0]);

		const done = (await exec(READ_THEN_WRITE, { requestState: first.requestState, inputResponses: APPROVE })).result;
		assert.notEqual(done.isError, true, JSON.stringify(done));
		const v = JSON.parse(done.content[0].text);
		assert.deepEqual(v.a, { id: 2, value: 20 });
		assert.equal(v.w.written, 2);
		assert.equal(v.w.value, 21);
		assert.ok(v.t > 1.7e12, 'a real clock time');
		assert.deepEqual([count('read_item'), count('write_item')], [1, 1], calls().join('\n'));
		// The write the server got carries the first run's random value and time.
		assert.match(calls().find((l) => l.startsWith('write_item')), new RegExp(`"r":${v.r},"t":${v.t}`));
	});

	test('two confirmations: two rounds, each call made once', async () => {
		resetCalls();
		const code = `
const a = await tools.store.read_item({ id: 1 });
const w1 = await tools.store.write_item({ id: 1, value: a.value });
const b = await tools.store.read_item({ id: 3 });
const w2 = await tools.store.write_item({ id: 3, value: b.value });
return [w1.written, w2.written];`;
		const r1 = (await exec(code)).result;
		assert.equal(r1.resultType, 'input_required');
		const r2 = (await exec(code, { requestState: r1.requestState, inputResponses: APPROVE })).result;
		assert.equal(r2.resultType, 'input_required', JSON.stringify(r2));
		assert.notEqual(r2.requestState, r1.requestState);
		assert.deepEqual([count('read_item'), count('write_item')], [2, 1]);
		const r3 = (await exec(code, { requestState: r2.requestState, inputResponses: APPROVE })).result;
		assert.equal(r3.content[0].text, '[1,3]', JSON.stringify(r3));
		assert.deepEqual(calls().map((l) => l.split(' ')[0]), ['read_item', 'write_item', 'read_item', 'write_item']);
	});

	test('declined: the write is never made and the program catches the refusal', async () => {
		resetCalls();
		const code = `
await tools.store.read_item({ id: 5 });
try { await tools.store.write_item({ id: 5, value: 1 }); return 'written'; }
catch (e) { return 'refused: ' + e.message; }`;
		const first = (await exec(code)).result;
		assert.equal(first.resultType, 'input_required');
		const done = (await exec(code, { requestState: first.requestState, inputResponses: DECLINE })).result;
		assert.notEqual(done.isError, true, JSON.stringify(done));
		assert.match(done.content[0].text, /^refused: policy: store\.write_item needs confirmation .*decline/);
		assert.deepEqual([count('read_item'), count('write_item')], [1, 0]);
	});

	test('a replay that diverges (results in another order) fails clearly and makes no call', async () => {
		resetCalls();
		// Live, the fast call wins the race; replayed, results come back in
		// issue order, so the other one wins and the write differs.
		const code = `
const a = tools.store.slow({ ms: 400, tag: 'a' }), b = tools.store.slow({ ms: 5, tag: 'b' });
const first = await Promise.race([a.then(() => 'a'), b.then(() => 'b')]);
await Promise.all([a, b]);
return await tools.store.write_item({ id: first === 'a' ? 1 : 2, value: 0 });`;
		const first = (await exec(code)).result;
		assert.equal(first.resultType, 'input_required', JSON.stringify(first));
		assert.equal(count('slow'), 2);
		const resp = await exec(code, { requestState: first.requestState, inputResponses: APPROVE });
		const done = resp.result;
		assert.equal(done?.isError, true, JSON.stringify(resp));
		assert.match(done.content[0].text, /replay diverged: the program's call 3 is store\.write_item/);
		assert.deepEqual([count('slow'), count('write_item')], [2, 0], calls().join('\n'));
	});

	test('a skill called before the confirmation: its side effect is made once, its answer replayed', async () => {
		resetCalls();
		const code = `
const s = await tools.skills.bump_once({ tag: 'k' });
const w = await tools.store.write_item({ id: 7, value: s.bumps });
return { s, w };`;
		const first = (await exec(code)).result;
		assert.equal(first.resultType, 'input_required', JSON.stringify(first));
		assert.match(first.inputRequests.confirm.params.message, /write_item/);
		assert.deepEqual([count('bump'), count('write_item')], [1, 0], calls().join('\n'));
		const done = (await exec(code, { requestState: first.requestState, inputResponses: APPROVE })).result;
		assert.notEqual(done.isError, true, JSON.stringify(done));
		const v = JSON.parse(done.content[0].text);
		// The answer the first run's skill got is the one the write carries:
		// a second bump would have answered one more.
		assert.equal(v.s.tag, 'k');
		assert.deepEqual(v.w, { written: 7, value: v.s.bumps });
		assert.deepEqual([count('bump'), count('write_item')], [1, 1], calls().join('\n'));
		assert.deepEqual(calls().map((l) => l.split(' ')[0]), ['bump', 'write_item']);
	});

	test('a retry with other code, or a tampered or foreign state, is refused before anything runs', async () => {
		resetCalls();
		const first = (await exec(READ_THEN_WRITE)).result;
		assert.equal(first.resultType, 'input_required');
		resetCalls();
		const other = await exec(READ_THEN_WRITE + '\n', { requestState: first.requestState, inputResponses: APPROVE });
		assert.match(other.error.message, /requestState: forged, .*issued for another program/);
		// One character of the payload changed (the seal no longer verifies),
		// and the expiry in another spelling (upper-case hex): both refused.
		const s = first.requestState;
		const i = s.lastIndexOf('.') + 5;
		const tampered = s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
		const t = await exec(READ_THEN_WRITE, { requestState: tampered, inputResponses: APPROVE });
		assert.match(t.error.message, /requestState: forged, tampered with/);
		const expiry = /^sluice-code\.([0-9a-f]+)\./.exec(s)[1];
		const respelled = s.replace(`sluice-code.${expiry}.`, `sluice-code.${expiry.toUpperCase()}.`);
		if (respelled !== s) {
			const u = await exec(READ_THEN_WRITE, { requestState: respelled, inputResponses: APPROVE });
			assert.match(u.error.message, /requestState: forged, tampered with/);
		}
		const junk = await exec(READ_THEN_WRITE, { requestState: 'sluice-code.nodot', inputResponses: APPROVE });
		assert.match(junk.error.message, /requestState: malformed/);
		assert.deepEqual(calls(), []);
	});

	// Issue 32, finding 10: the state carries every recorded result; it is
	// encrypted, so a client (and whoever it shows the state to) reads none
	// of them, personal data included.
	test('the requestState holds no recorded result in clear: every part of it, decoded, is ciphertext', async () => {
		resetCalls();
		const SECRET = 'personal-7f3a-result@example.com';
		const code = `
const s = await tools.store.slow({ ms: 0, tag: ${JSON.stringify(SECRET)} });
const r = await tools.store.read_item({ id: 4 });
return await tools.store.write_item({ id: r.id, value: s.tag.length });`;
		const first = (await exec(code)).result;
		assert.equal(first.resultType, 'input_required', JSON.stringify(first));
		const state = first.requestState;
		assert.ok(!state.includes(SECRET));
		// Whatever the format, no part decodes (base64url or plain) to
		// anything holding the recorded results.
		for (const part of state.split('.')) {
			const bytes = Buffer.from(part, 'base64url');
			for (const text of [part, bytes.toString('utf8'), bytes.toString('latin1')]) {
				assert.ok(!text.includes(SECRET), `a result in clear in the state: ${text.slice(0, 200)}`);
				assert.ok(!text.includes('"value":40'), `a result in clear in the state: ${text.slice(0, 200)}`);
				assert.ok(!text.includes('"calls"'), `the record in clear in the state: ${text.slice(0, 200)}`);
			}
		}
		// One character of the ciphertext changed: refused, nothing runs.
		const mid = state.length - 40;
		const tampered = state.slice(0, mid) + (state[mid] === 'A' ? 'B' : 'A') + state.slice(mid + 1);
		const t = await exec(code, { requestState: tampered, inputResponses: APPROVE });
		assert.match(t.error?.message ?? '', /requestState: forged, tampered with/);
		assert.deepEqual([count('slow'), count('read_item'), count('write_item')], [1, 1, 0]);
		// It still replays: the retry gets the recorded results.
		const done = (await exec(code, { requestState: state, inputResponses: APPROVE })).result;
		assert.notEqual(done.isError, true, JSON.stringify(done));
		assert.deepEqual(JSON.parse(done.content[0].text), { written: 4, value: SECRET.length });
		assert.deepEqual([count('slow'), count('read_item'), count('write_item')], [1, 1, 1]);
	});

	// Issue 32, finding 11: an approval is good once. The same approved
	// retry sent three times writes once; the others are refused, and
	// nothing of the program (its reads included) runs again.
	test('the same approved retry sent three times: the write is made once, the repeats are refused', async () => {
		resetCalls();
		const first = (await exec(READ_THEN_WRITE)).result;
		assert.equal(first.resultType, 'input_required');
		const retry = { requestState: first.requestState, inputResponses: APPROVE };
		const once = (await exec(READ_THEN_WRITE, retry)).result;
		assert.notEqual(once.isError, true, JSON.stringify(once));
		assert.equal(JSON.parse(once.content[0].text).w.value, 21);
		for (let i = 0; i < 2; i++) {
			const again = await exec(READ_THEN_WRITE, retry);
			assert.equal(again.error?.code, -32602, JSON.stringify(again));
			assert.match(again.error.message, /requestState: already used \(a retry carries each requestState once/);
		}
		assert.deepEqual([count('read_item'), count('write_item')], [1, 1], calls().join('\n'));
	});

	test('results past the state bound (256 KiB) end the program with advice, and nothing is written', async () => {
		resetCalls();
		const code = `
const big = 'x'.repeat(100000);
for (let i = 0; i < 3; i++) await tools.store.slow({ ms: 0, tag: big + i });
return await tools.store.write_item({ id: 9, value: 9 });`;
		const r = (await exec(code)).result;
		assert.notEqual(r.resultType, 'input_required');
		assert.equal(r.isError, true);
		assert.match(r.content[0].text, /would exceed 256 KiB\. Make fewer or smaller calls before the call that needs confirmation/);
		assert.deepEqual([count('slow'), count('write_item')], [3, 0]);
	});

	test('a request that cannot be asked (no elicitation) is refused as before, never suspended', async () => {
		resetCalls();
		const r = (await exec(READ_THEN_WRITE, {}, {})).result;
		assert.notEqual(r.resultType, 'input_required');
		assert.equal(r.isError, true);
		assert.match(r.content[0].text, /needs confirmation .*the client does not support elicitation/);
		assert.deepEqual([count('read_item'), count('write_item')], [1, 0]);
	});
});

// A retry refused admission (code mode full) never ran: its state is given
// back, and the same retry is accepted once a slot is free.
describe('2026-07-28: a retry refused as busy may come again', () => {
	let g;
	before(() => {
		g = startRaw({ servers, sluice: { ...SLUICE, codeMode: { timeoutMs: 5000, maxConcurrent: 1, maxQueued: 0 } } });
	});
	after(() => g?.close());
	const run = (code, extra = {}) =>
		g.request('tools/call', { _meta: modernMeta(ELICIT), name: 'execute_code', arguments: { code }, ...extra }, { ms: 15000 });

	test('busy, then run: the write is made once', async () => {
		// The start's probe program holds the one slot for a moment (longer
		// in a sanitizer build): it must be done before the first run.
		await eventually(async () => !/^busy/.test(textOf((await run('return 1')).result) ?? ''),
			15000, 50, 'the code-mode probe');
		resetCalls();
		const first = (await run(READ_THEN_WRITE)).result;
		assert.equal(first.resultType, 'input_required', JSON.stringify(first));
		const blocker = run('await tools.store.slow({ ms: 1500, tag: "block" }); return 1;');
		await eventually(() => count('slow') === 1, 5000, 20, 'the blocker running');
		const retry = { requestState: first.requestState, inputResponses: APPROVE };
		const busy = (await run(READ_THEN_WRITE, retry)).result;
		assert.equal(busy?.isError, true, JSON.stringify(busy));
		assert.match(busy.content[0].text, /code mode is full/);
		await blocker;
		const done = (await run(READ_THEN_WRITE, retry)).result;
		assert.notEqual(done?.isError, true, JSON.stringify(done));
		assert.equal(JSON.parse(done.content[0].text).w.value, 21);
		assert.deepEqual([count('read_item'), count('write_item')], [1, 1], calls().join('\n'));
		const again = await run(READ_THEN_WRITE, retry);
		assert.match(again.error?.message ?? '', /requestState: already used/);
	});
});

describe('2026-07-28: a server that asks during a program\'s call', () => {
	const PEER = path.join(REPO, 'tests', 'servers', 'peer', 'server.mjs');
	const REC = path.join(dir, 'peer.jsonl');
	let g;
	before(() => {
		g = startRaw({
			servers: { peer: { command: process.execPath, args: [PEER], env: { RECORD: REC } } },
			sluice: { exposure: 'code', codeMode: { timeoutMs: 5000 } },
		});
	});
	after(() => g?.close());

	test('is refused with the reason, at once; the program goes on and nothing is suspended', async () => {
		const caps = { elicitation: {}, sampling: {} };
		const run = (code) =>
			g.request('tools/call', { _meta: modernMeta(caps), name: 'execute_code', arguments: { code } }, { ms: 15000 });
		// The server's tools are listed once it is up.
		await eventually(async () => !(await run('return await tools.peer.record({ ready: 1 })')).result?.isError, 10000, 200, 'peer up');
		const t0 = Date.now();
		const r = (await run('return await tools.peer.ask({});')).result;
		assert.ok(Date.now() - t0 < 4000, 'answered without waiting for the program\'s timeout');
		assert.notEqual(r.resultType, 'input_required', JSON.stringify(r));
		assert.notEqual(r.isError, true, JSON.stringify(r));
		// The fixture answers with how each of its questions went.
		assert.equal(r.content[0].text, 'elicitation/create: error; sampling/createMessage: error');
		const got = readFileSync(REC, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
		const asked = got.filter((x) => x.what !== 'tools/call');
		assert.deepEqual(asked.map((x) => x.what), ['elicitation/create', 'sampling/createMessage']);
		for (const x of asked)
			assert.match(x.value.error, /no client that can answer it is waiting on server 'peer': it was called from a program \(execute_code\), and a 2026-07-28 client is asked only through its own tools\/call's input_required result/);
	});
});

describe('session era (SDK 1.x): the program waits while the client is asked', () => {
	let g;
	let answer = { action: 'accept', content: { approve: true } };
	const asked = [];
	before(async () => {
		g = await connect({
			servers,
			sluice: SLUICE,
			capabilities: { elicitation: {} },
			handlers: [[ElicitRequestSchema, async (req) => (asked.push(req.params), answer)]],
		});
	});
	after(() => g?.close());

	test('approved through elicitation: one read, one write, the answer', async () => {
		resetCalls();
		answer = { action: 'accept', content: { approve: true } };
		const r = await g.client.callTool({ name: 'execute_code', arguments: { code: READ_THEN_WRITE } });
		assert.notEqual(r.isError, true, textOf(r));
		assert.equal(JSON.parse(textOf(r)).w.value, 21);
		assert.equal(asked.length, 1);
		assert.deepEqual([count('read_item'), count('write_item')], [1, 1]);
	});

	test('declined through elicitation: no write', async () => {
		resetCalls();
		answer = { action: 'decline' };
		const r = await g.client.callTool({ name: 'execute_code', arguments: { code: READ_THEN_WRITE } });
		assert.equal(r.isError, true);
		assert.match(textOf(r), /decline/);
		assert.deepEqual([count('read_item'), count('write_item')], [1, 0]);
	});
});

describe('the SDK 2.x client (2026-07-28 over HTTP) answers the program\'s input_required itself', () => {
	let gw, client;
	let approve = true;
	const asked = [];
	before(async () => {
		gw = await startHttp({ servers, sluice: SLUICE });
		client = new Client({ name: 'codeconfirm-e2e', version: '1.0.0' }, { capabilities: ELICIT, versionNegotiation: { mode: { pin: MODERN } } });
		client.setRequestHandler('elicitation/create', async (req) => {
			asked.push(req.params.message);
			return approve ? { action: 'accept', content: { approve: true } } : { action: 'decline' };
		});
		await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
	});
	after(async () => {
		await client?.close().catch(() => {});
		await gw?.close();
		assert.doesNotMatch(gw?.stderr() ?? '', /Sanitizer|runtime error/);
	});

	test('approved: asked once, the read made once, the write once, the answer', async () => {
		resetCalls();
		approve = true;
		asked.length = 0;
		assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
		const r = await client.callTool({ name: 'execute_code', arguments: { code: READ_THEN_WRITE } });
		assert.notEqual(r.isError, true, textOf(r));
		assert.equal(JSON.parse(textOf(r)).w.value, 21);
		assert.equal(asked.length, 1);
		assert.match(asked[0], /Allow the tool "write_item" of server "store"/);
		assert.deepEqual([count('read_item'), count('write_item')], [1, 1], calls().join('\n'));
	});

	test('declined: the program gets the refusal, nothing is written', async () => {
		resetCalls();
		approve = false;
		const r = await client.callTool({ name: 'execute_code', arguments: { code: READ_THEN_WRITE } });
		assert.equal(r.isError, true);
		assert.match(textOf(r), /needs confirmation .*decline/);
		assert.deepEqual([count('read_item'), count('write_item')], [1, 0]);
	});
});
