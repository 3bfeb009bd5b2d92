// Skills for 2026-07-28 clients (issue 34, finding 4), with the SDK 2.x
// client speaking 2026-07-28 over HTTP, which answers input_required itself:
// a skill whose call needs the person's confirmation, called from a program
// and directly, asks once and makes its call once; save_skill asks the
// person by input_required and saves. The fixture server logs every call.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, existsSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { startHttp, startRaw, closeAll, textOf, runSluice, modernMeta, MODERN } from './helpers.mjs';

const SERVER = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'servers', 'counter', 'server.cjs');
const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-skills2026-'));
const LOG = path.join(dir, 'calls.log');
const DATA = path.join(dir, 'data');
const SKILLS = path.join(DATA, 'sluice', 'skills');
const servers = { store: { command: process.execPath, args: [SERVER], env: { COUNTER_LOG: LOG } } };
const SLUICE = {
	exposure: 'code',
	codeMode: { timeoutMs: 8000, maxConcurrent: 4 },
	policy: { rules: [{ annotation: 'destructiveHint', action: 'confirm' }] },
};
// A skill whose second call needs confirmation (write_item is destructive).
const WRITE_ONCE = {
	name: 'write_once',
	description: 'Reads an item, then writes it with one more.',
	code: `const a = await tools.store.read_item({ id: args.id });
const w = await tools.store.write_item({ id: args.id, value: a.value + 1 });
return { read: a.value, written: w.value };`,
};

const calls = () => (existsSync(LOG) ? readFileSync(LOG, 'utf8').split('\n').filter(Boolean) : []);
const resetCalls = () => writeFileSync(LOG, '');
const count = (name) => calls().filter((l) => l.startsWith(name + ' ')).length;

let gw, client;
const asked = [];
let answer = () => ({ action: 'accept', content: { approve: true } });

before(async () => {
	resetCalls();
	mkdirSync(SKILLS, { recursive: true });
	writeFileSync(path.join(SKILLS, 'write_once.json'), JSON.stringify(WRITE_ONCE));
	const ok = await runSluice(['skills', 'approve', 'write_once'], 10000, { XDG_DATA_HOME: DATA });
	assert.equal(ok.code, 0, ok.stderr);
	gw = await startHttp({ servers, sluice: SLUICE, env: { XDG_DATA_HOME: DATA } });
	client = new Client({ name: 'skills2026-e2e', version: '1.0.0' }, { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: MODERN } } });
	client.setRequestHandler('elicitation/create', async (req) => {
		asked.push(req.params.message);
		return answer();
	});
	await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
	assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
});
after(async () => {
	await client?.close().catch(() => {});
	await gw?.close();
	await closeAll();
	assert.doesNotMatch(gw?.stderr() ?? '', /Sanitizer|runtime error/);
	rmSync(dir, { recursive: true, force: true });
});

describe('2026-07-28: a skill whose call needs confirmation', () => {
	test('called from a program: asked once, the read and the write made once, the answer', async () => {
		resetCalls();
		asked.length = 0;
		const r = await client.callTool({
			name: 'execute_code',
			arguments: { code: 'const before = await tools.store.read_item({ id: 1 });\nconst s = await tools.skills.write_once({ id: 2 });\nreturn { before: before.value, s };' },
		});
		assert.notEqual(r.isError, true, textOf(r));
		assert.deepEqual(JSON.parse(textOf(r)), { before: 10, s: { read: 20, written: 21 } });
		assert.equal(asked.length, 1, asked.join('\n'));
		assert.match(asked[0], /Allow the tool "write_item" of server "store"/);
		assert.deepEqual(calls().map((l) => l.split(' ')[0]), ['read_item', 'read_item', 'write_item']);
	});

	test('declined inside the skill: the program catches the skill\'s failure, nothing is written', async () => {
		resetCalls();
		asked.length = 0;
		answer = () => ({ action: 'decline' });
		try {
			const r = await client.callTool({
				name: 'execute_code',
				arguments: { code: 'try { return await tools.skills.write_once({ id: 3 }); } catch (e) { return [e.tool, e.message]; }' },
			});
			const [tool, message] = JSON.parse(textOf(r));
			assert.equal(tool, 'write_once');
			assert.match(message, /^skill 'write_once' failed: error: Error: tools\.store\.write_item failed \(line 2, column 17\): .*needs confirmation .*declined/);
			assert.equal(asked.length, 1);
			assert.deepEqual([count('read_item'), count('write_item')], [1, 0], calls().join('\n'));
		} finally {
			answer = () => ({ action: 'accept', content: { approve: true } });
		}
	});

	test('called directly as skills__write_once: asked once, written once', async () => {
		resetCalls();
		asked.length = 0;
		const r = await client.callTool({ name: 'skills__write_once', arguments: { id: 4 } });
		assert.notEqual(r.isError, true, textOf(r));
		assert.deepEqual(JSON.parse(textOf(r)), { read: 40, written: 41 });
		assert.equal(asked.length, 1);
		assert.deepEqual([count('read_item'), count('write_item')], [1, 1], calls().join('\n'));
	});
});

describe('2026-07-28: save_skill', () => {
	test('asks the person by input_required, saves on approval; the skill then runs', async () => {
		asked.length = 0;
		const r = await client.callTool({
			name: 'save_skill',
			arguments: { name: 'double_it', description: 'Doubles a number.', code: 'return args.n * 2;' },
		});
		assert.notEqual(r.isError, true, textOf(r));
		assert.equal(textOf(r), "saved skill 'double_it': programs call it as await tools.skills.double_it(args)");
		assert.equal(asked.length, 1);
		assert.match(asked[0], /^Save the skill "double_it"\?/);
		assert.ok(existsSync(path.join(SKILLS, 'double_it.json')));
		const run = await client.callTool({ name: 'execute_code', arguments: { code: 'return await tools.skills.double_it({ n: 21 });' } });
		assert.equal(textOf(run), '42');
	});

	test('declined: nothing is saved', async () => {
		asked.length = 0;
		answer = () => ({ action: 'decline' });
		try {
			const r = await client.callTool({
				name: 'save_skill',
				arguments: { name: 'never_saved', description: 'Not saved.', code: 'return 1;' },
			});
			assert.equal(r.isError, true);
			assert.equal(textOf(r), 'save_skill: the person declined; the skill was not saved');
			assert.equal(asked.length, 1);
			assert.ok(!existsSync(path.join(SKILLS, 'never_saved.json')));
		} finally {
			answer = () => ({ action: 'accept', content: { approve: true } });
		}
	});
});

describe('2026-07-28: save_skill\'s requestState', () => {
	let raw;
	before(() => {
		raw = startRaw({ servers, sluice: SLUICE, env: { XDG_DATA_HOME: DATA } });
	});
	after(() => raw?.close());
	const ARGS = { name: 'triple_it', description: 'Triples a number.', code: 'return args.n * 3;' };
	const save = (args, extra = {}) =>
		raw.request('tools/call', { _meta: modernMeta({ elicitation: {} }), name: 'save_skill', arguments: args, ...extra }, { ms: 15000 });
	const APPROVE = { confirm: { action: 'accept', content: { approve: true } } };

	test('binds this skill: another code with it is refused; approved, it saves once', async () => {
		const first = (await save(ARGS)).result;
		assert.equal(first.resultType, 'input_required', JSON.stringify(first));
		assert.match(first.inputRequests.confirm.params.message, /^Save the skill "triple_it"\?/);
		assert.match(first.requestState, /^sluice-skill\.[0-9a-f]{24}\.[0-9a-f]+\.[0-9a-f]{64}$/);
		const other = (await save({ ...ARGS, code: 'return args.n * 4;' }, { requestState: first.requestState, inputResponses: APPROVE })).result;
		assert.equal(other.isError, true);
		assert.match(other.content[0].text, /requestState that is not ours, is for another skill or another caller/);
		assert.ok(!existsSync(path.join(SKILLS, 'triple_it.json')));
		const ok = (await save(ARGS, { requestState: first.requestState, inputResponses: APPROVE })).result;
		assert.equal(ok.content[0].text, "saved skill 'triple_it': programs call it as await tools.skills.triple_it(args)");
		assert.equal(JSON.parse(readFileSync(path.join(SKILLS, 'triple_it.json'), 'utf8')).code, ARGS.code);
		const again = (await save(ARGS, { requestState: first.requestState, inputResponses: APPROVE })).result;
		assert.equal(again.isError, true);
		assert.match(again.content[0].text, /this approval was used already/);
	});

	test('a request that does not declare elicitation is refused, as a session-era client is', async () => {
		const r = (await raw.request('tools/call', { _meta: modernMeta({}), name: 'save_skill', arguments: { ...ARGS, name: 'no_caps' } }, { ms: 15000 })).result;
		assert.equal(r.isError, true);
		assert.equal(r.content[0].text, "save_skill needs the person's confirmation, and this client cannot be asked (it did not declare elicitation); the skill was not saved");
	});
});
