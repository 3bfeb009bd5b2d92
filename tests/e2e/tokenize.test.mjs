// The tokenize stage end to end (docs/stages/tokenize.md): personal data in
// tool results reaches the client as per-session placeholders; placeholders
// in arguments are restored toward the servers restoreTo allows and pass
// as they are elsewhere; a program computes on real values and its answer
// is tokenised; the audit log holds no clear value. Session era through
// the official SDK (stdio), and 2026-07-28 stateless requests (raw stdio,
// which the SDK does not speak). Resources and prompts read through the
// gateway get the same placeholders as tool results (the peer fixture
// plants personal data in their text, descriptions and _meta keys).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';

import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { connect, closeAll, execCode, startRaw, startHttp, httpClient, writeConfig, textOf, tinyServer, modernMeta, eventually, REPO } from './helpers.mjs';

const ALICE = 'alice@example.com';
const BOB = 'bob.smith@example.org';
const CAROL = 'carol@example.net';
const CARD = '4111 1111 1111 1111';
const CLEAR = [ALICE, BOB, CAROL, CARD, '4111111111111111'];

// A directory server: its "people" answers with e-mails and a card in text,
// an embedded resource and structuredContent. A recorder's "record" writes
// its arguments to a file (what an upstream really received).
function people() {
	return tinyServer({
		name: 'crm',
		tools: `[{ name: 'people', description: 'People.', inputSchema: { type: 'object' } }]`,
		call: `(params, ok) => ok({
			content: [
				{ type: 'text', text: 'write to ${ALICE}, card ${CARD}' },
				{ type: 'resource', resource: { uri: 'file:///p', mimeType: 'text/plain', text: 'cc ${BOB}' } },
			],
			structuredContent: { emails: ['${ALICE}', '${BOB}', '${CAROL}'], note: 'plain', byEmail: { '${CAROL}': 3 } },
		})`,
	});
}

function recorder(name) {
	const file = path.join(path.dirname(writeConfig({})), `${name}.jsonl`);
	const entry = tinyServer({
		name,
		args: [file],
		prelude: `const fs = require('node:fs'); const out = process.argv[2];`,
		tools: `[{ name: 'record', description: 'Records its arguments.', inputSchema: { type: 'object' } }]`,
		call: `(params, ok) => { fs.appendFileSync(out, JSON.stringify(params.arguments) + '\\n'); ok({ content: [{ type: 'text', text: 'recorded' }] }); }`,
	});
	return { entry, last: () => readFileSync(file, 'utf8').trim().split('\n').at(-1) };
}

const allowed = recorder('allowed');
const other = recorder('other');
const SERVERS = { crm: people(), allowed: allowed.entry, other: other.entry };
const auditFile = path.join(path.dirname(writeConfig({})), 'audit.jsonl');
const SLUICE = {
	exposure: 'passthrough',
	codeMode: { enabled: true, timeoutMs: 10000 },
	tokenize: { enabled: true, restoreTo: ['allowed.rec*'] },
	audit: { file: auditFile },
};

let gw;
before(async () => {
	gw = await connect({ servers: SERVERS, sluice: SLUICE });
});
after(closeAll);

const noClear = (s) => {
	for (const v of CLEAR) assert.ok(!s.includes(v), `clear value ${v} in: ${s.slice(0, 400)}`);
};

describe('session era (SDK)', () => {
	test('a result shows placeholders, the same ones every time', async () => {
		const r = await gw.client.callTool({ name: 'crm__people', arguments: {} });
		assert.ok(!r.isError, textOf(r));
		noClear(JSON.stringify(r));
		assert.equal(r.content[0].text, 'write to <EMAIL_1>, card <CARD_1>');
		assert.equal(r.content[1].resource.text, 'cc <EMAIL_2>');
		assert.deepEqual(r.structuredContent, { emails: ['<EMAIL_1>', '<EMAIL_2>', '<EMAIL_3>'], note: 'plain', byEmail: { '<EMAIL_3>': 3 } });
		const again = await gw.client.callTool({ name: 'crm__people', arguments: {} });
		assert.deepEqual(again, r);
	});

	test('a placeholder in arguments reaches an allowed server as the real value', async () => {
		const r = await gw.client.callTool({ name: 'allowed__record', arguments: { to: '<EMAIL_2>', cc: ['x <EMAIL_1>'], unknown: '<EMAIL_99>', by: { '<EMAIL_3>': 1 } } });
		assert.ok(!r.isError, textOf(r));
		assert.deepEqual(JSON.parse(allowed.last()), { to: BOB, cc: [`x ${ALICE}`], unknown: '<EMAIL_99>', by: { [CAROL]: 1 } });
	});

	test('and any other server as the placeholder', async () => {
		const r = await gw.client.callTool({ name: 'other__record', arguments: { to: '<EMAIL_2>' } });
		assert.ok(!r.isError, textOf(r));
		assert.deepEqual(JSON.parse(other.last()), { to: '<EMAIL_2>' });
	});

	test('a program computes on real values; its answer is tokenised', async () => {
		const r = await execCode(
			gw.client,
			`const v = await tools.crm.people({});
			 const real = v.emails.filter((e) => e.endsWith('.org') || e.endsWith('.net'));
			 return { count: real.length, pick: real.find((e) => e.startsWith('bob')) };`,
		);
		assert.ok(!r.isError, r.text);
		noClear(r.text);
		// Two real addresses matched: the program saw values, not placeholders.
		assert.deepEqual(JSON.parse(r.text), { count: 2, pick: '<EMAIL_2>' });
	});

	// Issue 32, finding 9: a program holds real values; what it sends a
	// server outside restoreTo is tokenised as a result would be, so a
	// value never reaches a server the operator did not trust with it.
	test('a program passing real values on: a server outside restoreTo gets placeholders, an allowed one the values', async () => {
		const r = await execCode(
			gw.client,
			`const v = await tools.crm.people({});
			 await tools.other.record({ to: v.emails[1], note: 'cc ' + v.emails[0], [v.emails[2]]: 1 });
			 await tools.allowed.record({ to: v.emails[1] });
			 return { sent: v.emails[1] };`,
		);
		assert.ok(!r.isError, r.text);
		assert.deepEqual(JSON.parse(other.last()), { to: '<EMAIL_2>', note: 'cc <EMAIL_1>', '<EMAIL_3>': 1 });
		assert.deepEqual(JSON.parse(allowed.last()), { to: BOB });
		noClear(r.text);
		assert.deepEqual(JSON.parse(r.text), { sent: '<EMAIL_2>' });
	});

	test('a value the model writes itself reaches a server outside restoreTo as a placeholder too', async () => {
		const r = await gw.client.callTool({ name: 'other__record', arguments: { to: CAROL, card: CARD } });
		assert.ok(!r.isError, textOf(r));
		assert.deepEqual(JSON.parse(other.last()), { to: '<EMAIL_3>', card: '<CARD_1>' });
	});

	test('the audit log holds no clear value', async () => {
		await eventually(() => existsSync(auditFile) && readFileSync(auditFile, 'utf8').split('\n').length > 5, 5000, 50, 'audit lines');
		const text = readFileSync(auditFile, 'utf8');
		assert.match(text, /"tool":"people"/);
		noClear(text);
		noClear(gw.stderr());
	});
});

describe('2026-07-28 stateless requests', () => {
	let raw;
	before(() => {
		raw = startRaw({ servers: SERVERS, sluice: SLUICE });
	});
	after(async () => {
		await raw?.close();
	});
	const call = (name, args) => raw.request('tools/call', { _meta: modernMeta(), name, arguments: args });

	test("one caller's map across requests: placeholders out, real values to the allowed server", async () => {
		const r = (await call('crm__people', {})).result;
		noClear(JSON.stringify(r));
		assert.equal(r.content[0].text, 'write to <EMAIL_1>, card <CARD_1>');
		// A later request of the same caller restores what the first one made.
		const rec = (await call('allowed__record', { card: '<CARD_1>', to: '<EMAIL_3>' })).result;
		assert.notEqual(rec.isError, true, JSON.stringify(rec));
		assert.deepEqual(JSON.parse(allowed.last()), { card: CARD, to: CAROL });
		await call('other__record', { card: '<CARD_1>' });
		assert.deepEqual(JSON.parse(other.last()), { card: '<CARD_1>' });
	});
});

// A program's call that needs a confirmation shows its arguments in the
// question: they are real values inside a program, and reach the client
// as placeholders (and the requestState, encrypted, shows none).
describe('a confirmation inside a program (2026-07-28)', () => {
	let raw;
	before(() => {
		raw = startRaw({
			servers: SERVERS,
			sluice: { ...SLUICE, exposure: 'code', policy: { rules: [{ match: 'other.record', action: 'confirm' }] } },
		});
	});
	after(async () => {
		await raw?.close();
	});

	test('the question and the state hold no clear value; the approved call gets placeholders', async () => {
		const code = `const v = await tools.crm.people({});
			return await tools.other.record({ to: v.emails[0], card: '${CARD}' });`;
		const run = (extra = {}) => raw.request('tools/call', { _meta: modernMeta({ elicitation: {} }), name: 'execute_code', arguments: { code }, ...extra }, { ms: 15000 });
		const first = (await eventually(async () => {
			const r = (await run()).result;
			return r?.resultType === 'input_required' ? r : null;
		}, 10000, 200, 'the question')) ;
		const message = first.inputRequests.confirm.params.message;
		assert.match(message, /record/);
		noClear(JSON.stringify(first.inputRequests));
		assert.match(message, /<EMAIL_1>/);
		for (const part of first.requestState.split('.')) noClear(Buffer.from(part, 'base64url').toString('latin1'));
		const done = (await run({ requestState: first.requestState, inputResponses: { confirm: { action: 'accept', content: { approve: true } } } })).result;
		assert.notEqual(done.isError, true, JSON.stringify(done));
		noClear(JSON.stringify(done));
		assert.deepEqual(JSON.parse(other.last()), { to: '<EMAIL_1>', card: '<CARD_1>' });
	});
});

describe('a confirmation inside a program (session era, SDK: elicitation)', () => {
	const asked = [];
	let g;
	before(async () => {
		g = await connect({
			servers: SERVERS,
			sluice: { ...SLUICE, policy: { rules: [{ match: 'other.record', action: 'confirm' }] } },
			capabilities: { elicitation: {} },
			handlers: [[ElicitRequestSchema, async (req) => (asked.push(req.params.message), { action: 'accept', content: { approve: true } })]],
		});
	});
	after(() => g?.close());

	test("the elicitation's message shows placeholders, never the program's real values", async () => {
		const r = await execCode(g.client, `const v = await tools.crm.people({});
			return await tools.other.record({ to: v.emails[1] });`);
		assert.ok(!r.isError, r.text);
		assert.equal(asked.length, 1);
		// A new session: Bob is its first value, in the question and in what
		// the server got alike.
		assert.match(asked[0], /"to": "<EMAIL_1>"/);
		noClear(asked[0]);
		assert.deepEqual(JSON.parse(other.last()), { to: '<EMAIL_1>' });
	});
});

// resources/read, prompts/get and completion/complete answers reach the
// model as much as tool results do: the same session map, the same
// placeholders. PEER plants its text in a resource (text and a _meta key),
// a prompt (description and message) and a completion value.
describe('resources and prompts', () => {
	const PEER = path.join(REPO, 'tests', 'servers', 'peer', 'server.mjs');
	const PLANT = `${ALICE} card ${CARD}`;
	const peer = { command: process.execPath, args: [PEER], env: { PLANT } };
	const sluice = { exposure: 'passthrough', tokenize: { enabled: true } };

	test('session era (SDK): placeholders in contents, keys, messages and completions, stable across them', async () => {
		const g = await connect({ servers: { peer }, sluice });
		const uri = (await g.client.listResources()).resources.find((r) => r.name === 'doc').uri;
		const r = await g.client.readResource({ uri });
		noClear(JSON.stringify(r));
		assert.equal(r.contents[0].text, 'doc <EMAIL_1> card <CARD_1>');
		assert.deepEqual(Object.keys(r.contents[0]._meta), ['<EMAIL_1> card <CARD_1>']);
		const p = await g.client.getPrompt({ name: 'peer__greet', arguments: { who: 'x' } });
		noClear(JSON.stringify(p));
		assert.equal(p.description, 'greets <EMAIL_1> card <CARD_1>');
		assert.equal(p.messages[0].content.text, 'hello; <EMAIL_1> card <CARD_1>');
		const c = await g.client.complete({ ref: { type: 'ref/prompt', name: 'peer__greet' }, argument: { name: 'who', value: 'a' } });
		assert.deepEqual(c.completion.values, ['a <EMAIL_1> card <CARD_1>']);
		noClear(g.stderr());
	});

	test('2026-07-28 (raw): resources/read and prompts/get answers are tokenised', async () => {
		const raw = startRaw({ servers: { peer }, sluice });
		try {
			const list = await eventually(async () => {
				const l = (await raw.request('resources/list', { _meta: modernMeta() })).result;
				return l?.resources?.length ? l : null;
			}, 10000, 100, 'resources listed');
			const uri = list.resources.find((x) => x.name === 'doc').uri;
			const r = (await raw.request('resources/read', { _meta: modernMeta(), uri })).result;
			noClear(JSON.stringify(r));
			assert.equal(r.contents[0].text, 'doc <EMAIL_1> card <CARD_1>');
			const p = (await raw.request('prompts/get', { _meta: modernMeta(), name: 'peer__greet', arguments: { who: 'x' } })).result;
			noClear(JSON.stringify(p));
			assert.equal(p.messages[0].content.text, 'hello; <EMAIL_1> card <CARD_1>');
		} finally {
			await raw.close();
		}
	});
});

// Two sessions of one gateway sharing the cache: the cache keys on the
// restored arguments and stores the real result; each session sees it
// through its own placeholders.
describe('the cache between two sessions (HTTP, SDK)', () => {
	// lookup answers with an address and how many times it really ran.
	const dir = tinyServer({
		name: 'dir',
		prelude: 'let n = 0;',
		tools: `[{ name: 'lookup', description: 'Looks up.', inputSchema: { type: 'object' } }]`,
		call: `(params, ok) => { n++; const who = params.arguments.who; ok({ content: [{ type: 'text', text: (who === 'bob' ? '${BOB}' : who) + ' #' + n }] }); }`,
	});
	let a, b;
	before(async () => {
		const gw2 = await startHttp({
			servers: { crm: people(), dir },
			sluice: { exposure: 'passthrough', cache: { tools: ['dir.lookup'] }, tokenize: { enabled: true, restoreTo: ['dir'] } },
		});
		a = (await httpClient(gw2.url)).client;
		b = (await httpClient(gw2.url)).client;
	});
	after(async () => {
		await a?.close();
		await b?.close();
	});
	const lookup = async (c, who) => textOf(await c.callTool({ name: 'dir__lookup', arguments: { who } }));

	test('a cached real result, tokenised per session; keys on real arguments', async () => {
		await a.callTool({ name: 'crm__people', arguments: {} }); // A: alice 1, bob 2, carol 3
		assert.equal(await lookup(a, 'bob'), '<EMAIL_2> #1');
		// B's hit on the same entry: its own first placeholder for Bob.
		assert.equal(await lookup(b, 'bob'), '<EMAIL_1> #1');
		// <EMAIL_1> is Alice for A and Bob for B: two keys, two real runs.
		assert.equal(await lookup(a, '<EMAIL_1>'), '<EMAIL_1> #2');
		assert.equal(await lookup(b, '<EMAIL_1>'), '<EMAIL_1> #3');
		// And each one's repeat is a hit.
		assert.equal(await lookup(b, '<EMAIL_1>'), '<EMAIL_1> #3');
	});
});
