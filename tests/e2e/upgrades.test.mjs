// Server upgrades a person can act on (docs/stages/pinning.md, "Upgrades"):
// a fixture server whose tool definitions come from a file named in its
// arguments is "upgraded" by rewriting the file, so its command and
// arguments (its identity) stay the same. After the upgrade: one warning
// for the server with the count and the commands, `sluice check` shows the
// tools as hidden, `pins diff` shows the change, `pins approve` brings them
// back; with askOnChange a client is asked once; pins are kept per server
// identity, and pin files keyed by name are migrated once.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdtempSync, mkdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { REPO, connect, closeAll, runSluice, eventually, startRaw, modernMeta, textOf, httpClient, httpRequest,
	startHttp, MODERN } from './helpers.mjs';

after(closeAll);

const FIXTURE = path.join(REPO, 'tests', 'servers', 'upgrade', 'server.mjs');
const work = mkdtempSync(path.join(os.tmpdir(), 'sluice-upgrade-'));
after(() => rmSync(work, { recursive: true, force: true }));

const tool = (name, description) => ({ name, description, inputSchema: { type: 'object' } });
const V1 = [tool('issues', 'Lists issues.'), tool('pulls', 'Lists pull requests.'), tool('repo', 'Shows a repo.')];
// The new release: two descriptions changed, one tool unchanged.
const V2 = [tool('issues', 'Lists issues (v2).'), tool('pulls', 'Lists pull requests (v2).'), tool('repo', 'Shows a repo.')];

let n = 0;
// A fresh setup: a tools file, a state dir and a config with one server
// called `name` running the fixture on that file.
function setup({ name = 'github', tools = V1, pinning = {}, state, toolsFile, sluice = {} } = {}) {
	const dir = path.join(work, `s${n++}`);
	toolsFile ??= path.join(dir, 'tools.json');
	state ??= path.join(dir, 'state');
	mkdirSync(dir, { recursive: true });
	if (tools) writeFileSync(toolsFile, JSON.stringify(tools));
	const configPath = path.join(dir, 'sluice.json');
	writeFileSync(
		configPath,
		JSON.stringify({
			mcpServers: { [name]: { command: process.execPath, args: [FIXTURE, toolsFile] } },
			sluice: { pinning: { stateDir: state, ...pinning }, ...sluice },
		}),
	);
	return { dir, toolsFile, state, configPath, upgrade: (t = V2) => writeFileSync(toolsFile, JSON.stringify(t)) };
}

const pinsOf = (s) => JSON.parse(readFileSync(path.join(s.state, 'pins.json'), 'utf8'));
const upstreamTools = async (client, prefix = 'github__') =>
	(await client.listTools()).tools.map((t) => t.name).filter((x) => x.startsWith(prefix)).sort();
const ALL = ['github__issues', 'github__pulls', 'github__repo'];
// Waits until the gateway has logged its server's ready line (stderr is read asynchronously).
const readyLogged = (gw) => eventually(() => /server '\w+' ready: /.test(gw.stderr()), 5000, 50, 'the ready line');
const warningsOf = (stderr) => stderr.match(/pinning: server 'github' offers .*/g) ?? [];

// Runs a gateway once so the server's tools are pinned at first sight.
async function pinFirst(s) {
	const gw = await connect({ configPath: s.configPath });
	assert.deepEqual(await upstreamTools(gw.client), ALL);
	await gw.close();
}

test('an upgrade: one warning with the count and the commands; check, diff and approve', async () => {
	const s = setup();
	await pinFirst(s);
	s.upgrade();

	const gw = await connect({ configPath: s.configPath });
	assert.deepEqual(await upstreamTools(gw.client), ['github__repo']);
	// More lists do not warn again: one warning per change.
	await upstreamTools(gw.client);
	await upstreamTools(gw.client);
	await eventually(() => /ready: 1 tools exposed/.test(gw.stderr()), 5000, 50, 'the ready line');
	const log = gw.stderr();
	const w = warningsOf(log);
	assert.equal(w.length, 1, log);
	assert.match(w[0], /offers 2 tools whose definitions changed since they were pinned/);
	assert.ok(w[0].includes(`sluice pins diff github --config ${s.configPath}`), w[0]);
	assert.ok(w[0].includes(`sluice pins approve github --config ${s.configPath}`), w[0]);
	assert.match(log, /server 'github' ready: 1 tools exposed, 2 hidden by pinning/);
	await gw.close();

	// sluice check applies pinning: the two are hidden, with the reason.
	const ck = await runSluice(['check', '--config', s.configPath]);
	assert.equal(ck.code, 0, ck.stderr);
	assert.match(ck.stdout, /^1 tools exposed in passthrough mode \(2 more hidden by pinning\)/m);
	assert.match(ck.stdout, /github__issues +\(hidden by pinning: changed since pinned\)/);
	assert.match(ck.stdout, /github__pulls +\(hidden by pinning: changed since pinned\)/);
	assert.match(ck.stdout, /^ {2}github__repo$/m);
	assert.match(ck.stdout, /pinning: 2 tools hidden \(2 changed since pinned, 0 new\)/);

	// pins diff SERVER shows the change.
	const diff = await runSluice(['pins', 'diff', 'github', '--config', s.configPath]);
	assert.equal(diff.code, 1, diff.stderr);
	assert.match(diff.stdout, /^--- github\.issues \(pinned /m);
	assert.match(diff.stdout, /^-  "description": "Lists issues\.",$/m);
	assert.match(diff.stdout, /^\+  "description": "Lists issues \(v2\)\.",$/m);
	assert.doesNotMatch(diff.stdout, /github\.repo/);

	// pins approve SERVER brings them back.
	const ok = await runSluice(['pins', 'approve', 'github', '--config', s.configPath]);
	assert.equal(ok.code, 0, ok.stderr);
	const again = await connect({ configPath: s.configPath });
	assert.deepEqual(await upstreamTools(again.client), ALL);
	assert.equal(warningsOf(again.stderr()).length, 0, again.stderr());
	await eventually(() => /server 'github' ready: 3 tools,/.test(again.stderr()), 5000, 50, 'the ready line');
	await again.close();
	const ck2 = await runSluice(['check', '--config', s.configPath]);
	assert.match(ck2.stdout, /^3 tools exposed in passthrough mode:/m);
});

test('new tools held back by new: "block" are counted apart in the warning and in check', async () => {
	const s = setup({ pinning: { new: 'block' } });
	await pinFirst(s);
	s.upgrade([...V2, tool('actions', 'Runs workflows.')]);
	const gw = await connect({ configPath: s.configPath });
	assert.deepEqual(await upstreamTools(gw.client), ['github__repo']);
	await readyLogged(gw);
	const w = warningsOf(gw.stderr());
	assert.equal(w.length, 1, gw.stderr());
	assert.match(w[0], /offers 2 tools whose definitions changed since they were pinned and 1 new tool/);
	await gw.close();
	const ck = await runSluice(['check', '--config', s.configPath]);
	assert.match(ck.stdout, /github__actions +\(hidden by pinning: new, not approved\)/);
	assert.match(ck.stdout, /pinning: 3 tools hidden \(2 changed since pinned, 1 new\)/);
});

// An SDK client that declares elicitation and answers with answer().
async function asking(s, answer) {
	const asked = [];
	const gw = await connect({
		configPath: s.configPath,
		capabilities: { elicitation: {} },
		handlers: [
			[
				ElicitRequestSchema,
				async (req) => {
					asked.push(req.params);
					return answer(req.params);
				},
			],
		],
	});
	return { gw, asked };
}

test('askOnChange: accept trusts the new definitions and the client hears list_changed', async () => {
	const s = setup({ pinning: { askOnChange: true } });
	await pinFirst(s);
	s.upgrade();
	const { gw, asked } = await asking(s, () => ({ action: 'accept', content: { trust: true } }));
	assert.deepEqual(await upstreamTools(gw.client), ['github__repo']);
	await eventually(() => asked.length === 1, 5000, 100, 'the client to be asked');
	const msg = asked[0].message;
	assert.match(msg, /the server "github" offers 2 tools whose definitions changed/);
	assert.match(msg, /Trust the new definitions of all 2\?/);
	assert.equal(asked[0].requestedSchema.properties.trust.type, 'boolean');
	await eventually(
		() => gw.wire.some((m) => m.method === 'notifications/tools/list_changed'),
		5000,
		50,
		'tools/list_changed',
	);
	assert.deepEqual(await upstreamTools(gw.client), ALL);
	assert.equal(asked.length, 1);
	// Pinned as `sluice pins approve` would: a new gateway shows them too.
	const key = Object.keys(pinsOf(s).servers).find((k) => k.startsWith('github#'));
	assert.equal(pinsOf(s).servers[key].issues.definition.description, 'Lists issues (v2).');
	assert.match(gw.stderr(), /a client's user trusted the new definitions of server 'github'/);
	await gw.close();
	const ck = await runSluice(['check', '--config', s.configPath]);
	assert.match(ck.stdout, /^3 tools exposed/m);
});

test('askOnChange: decline keeps them hidden and the same change is not asked again', async () => {
	const s = setup({ pinning: { askOnChange: true } });
	await pinFirst(s);
	s.upgrade();
	const { gw, asked } = await asking(s, () => ({ action: 'decline' }));
	assert.deepEqual(await upstreamTools(gw.client), ['github__repo']);
	await eventually(() => asked.length === 1, 5000, 100, 'the client to be asked');
	await eventually(() => /did not trust the new definitions of server 'github'/.test(gw.stderr()), 5000);
	for (let i = 0; i < 3; i++) assert.deepEqual(await upstreamTools(gw.client), ['github__repo']);
	await new Promise((r) => setTimeout(r, 300));
	assert.equal(asked.length, 1, 'asked once per change');
	assert.ok(!gw.wire.some((m) => m.method === 'notifications/tools/list_changed'));
	const r = await gw.client.callTool({ name: 'github__issues', arguments: {} });
	assert.equal(r.isError, true);
	await gw.close();
});

test('askOnChange: a call to a held-back tool is refused and asks; accepting brings the tools back', async () => {
	const s = setup({ pinning: { askOnChange: true } });
	await pinFirst(s);
	s.upgrade();
	let release;
	const answered = new Promise((r) => (release = r));
	const { gw, asked } = await asking(s, async () => {
		await answered; // the refusal comes first: the call is not held
		return { action: 'accept', content: { trust: true } };
	});
	// A client that remembered the tool from before the upgrade calls it.
	const r = await gw.client.callTool({ name: 'github__issues', arguments: {} });
	assert.equal(r.isError, true);
	assert.match(textOf(r), /definition changed since it was pinned.*sluice is asking the user whether to trust/s);
	await eventually(() => asked.length === 1, 5000, 50, 'the client to be asked');
	release();
	await eventually(() => gw.wire.some((m) => m.method === 'notifications/tools/list_changed'), 5000, 50, 'list_changed');
	assert.equal(textOf(await gw.client.callTool({ name: 'github__issues', arguments: {} })), 'issues called');
	assert.deepEqual(await upstreamTools(gw.client), ALL);
	assert.equal(asked.length, 1);
	await gw.close();
});

test('askOnChange for a 2026-07-28 client: input_required with a sealed state, once per change', async () => {
	const s = setup({ pinning: { askOnChange: true } });
	await pinFirst(s);
	s.upgrade();
	const raw = startRaw({ configPath: s.configPath });
	try {
		const call = (extra = {}, name = 'github__issues') =>
			raw.request('tools/call', { _meta: modernMeta({ elicitation: {} }), name, arguments: {}, ...extra });
		const first = (await call()).result;
		assert.equal(first.resultType, 'input_required', JSON.stringify(first));
		const q = first.inputRequests.pinning;
		assert.equal(q.method, 'elicitation/create');
		assert.match(q.params.message, /the server "github" offers 2 tools whose definitions changed/);
		assert.match(first.requestState, /^[0-9a-f]+\.[0-9a-f]{64}$/);
		// Not asked twice for the same change: another call is refused plainly.
		const second = (await call({}, 'github__pulls')).result;
		assert.equal(second.isError, true);
		assert.doesNotMatch(JSON.stringify(second), /input_required/);
		// A forged state is refused.
		const forged = first.requestState.replace(/.$/, (c) => (c === '0' ? '1' : '0'));
		const accept = { pinning: { action: 'accept', content: { trust: true } } };
		const f = (await call({ inputResponses: accept, requestState: forged })).result;
		assert.equal(f.isError, true);
		assert.match(f.content[0].text, /requestState that is not ours/);
		// The retry with the answer trusts the change and runs the tool.
		const ok = (await call({ inputResponses: accept, requestState: first.requestState })).result;
		assert.equal(ok.resultType, 'complete', JSON.stringify(ok));
		assert.equal(ok.content[0].text, 'issues called');
		const pulls = (await call({}, 'github__pulls')).result;
		assert.equal(pulls.content[0].text, 'pulls called');
	} finally {
		await raw.close();
	}
});

test('askOnChange off (the default): nobody is asked', async () => {
	const s = setup();
	await pinFirst(s);
	s.upgrade();
	const { gw, asked } = await asking(s, () => ({ action: 'accept', content: { trust: true } }));
	assert.deepEqual(await upstreamTools(gw.client), ['github__repo']);
	await new Promise((r) => setTimeout(r, 300));
	assert.equal(asked.length, 0);
	await gw.close();
});

// One 2026-07-28 tools/call over HTTP through path, as the holder of token
// (none: no Authorization), from a client that can be asked (elicitation).
let httpId = 1;
async function httpCall(gw, { path: p = '/mcp', token, name, extra = {} }) {
	const r = await httpRequest({ host: '127.0.0.1', port: gw.port, path: p, method: 'POST',
		headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), 'mcp-protocol-version': MODERN,
			'mcp-method': 'tools/call', 'mcp-name': name } },
	{ jsonrpc: '2.0', id: httpId++, method: 'tools/call',
		params: { _meta: modernMeta({ elicitation: {} }), name, arguments: {}, ...extra } });
	assert.ok(r.json?.result, r.text);
	return r.json.result;
}
const HELD = /definition changed since it was pinned/;

test('askOnChange with authenticated callers: nobody is asked, no answer trusts; the operator approves', async () => {
	const TOKENS = { alice: 'alice-token-pin-51c2', bob: 'bob-token-pin-0d9e' };
	const s = setup({ pinning: { askOnChange: true }, sluice: {
		http: { auth: { tokens: Object.entries(TOKENS).map(([subject, token]) => ({ token, subject })) } },
		// Policy hides issues from bob.
		policy: { rules: [{ match: 'github.issues', who: ['sub:bob'], action: 'deny' }] },
	} });
	await pinFirst(s);
	s.upgrade();
	const gw = await startHttp({ configPath: s.configPath });
	const call = (who, name, extra) => httpCall(gw, { token: TOKENS[who], name, extra });

	// A 2026-07-28 call to a held tool gets the refusal, not a question;
	// bob, to whom issues is hidden, learns nothing of it from pulls' refusal.
	for (const [who, name] of [['alice', 'github__issues'], ['bob', 'github__pulls'], ['alice', 'github__pulls']]) {
		const r = await call(who, name);
		assert.equal(r.isError, true, JSON.stringify(r));
		assert.equal(r.resultType ?? 'complete', 'complete');
		assert.match(r.content[0].text, HELD);
		assert.doesNotMatch(JSON.stringify(r), /input_required|asking the user|issues.*pulls|2 tools/);
	}
	// An answer nobody asked for (a state sealed for another purpose, or
	// forged) trusts nothing.
	const accept = { pinning: { action: 'accept', content: { trust: true } } };
	const forged = (await call('alice', 'github__issues', { inputResponses: accept, requestState: 'f'.repeat(8) + '.' + '0'.repeat(64) }));
	assert.equal(forged.isError, true);
	assert.match((await call('bob', 'github__pulls')).content[0].text, HELD);

	// A session-era client that can elicit: its call is refused without a
	// question (the refusal would say "sluice is asking the user").
	const asked = [];
	const sdk = await httpClient(gw.url, { headers: { authorization: `Bearer ${TOKENS.bob}` },
		capabilities: { elicitation: {} }, handlers: [[ElicitRequestSchema, async (req) => {
			asked.push(req.params);
			return { action: 'accept', content: { trust: true } };
		}]] });
	assert.deepEqual((await sdk.client.listTools()).tools.map((t) => t.name).filter((x) => x.startsWith('github__')), ['github__repo']);
	const r = await sdk.client.callTool({ name: 'github__pulls', arguments: {} });
	assert.equal(r.isError, true);
	assert.match(textOf(r), HELD);
	assert.doesNotMatch(textOf(r), /asking the user/);
	await sdk.client.close();
	assert.equal(asked.length, 0);

	// The operator trusts the change: the running gateway takes it.
	const ok = await runSluice(['pins', 'approve', 'github', '--config', s.configPath]);
	assert.equal(ok.code, 0, ok.stderr);
	assert.equal((await call('alice', 'github__issues')).content[0].text, 'issues called');
	assert.equal((await call('bob', 'github__pulls')).content[0].text, 'pulls called');
	assert.match((await call('bob', 'github__issues')).content[0].text, /denied/);
	assert.match(gw.stderr(), /pinning: askOnChange asks nobody on a gateway with authenticated callers/);
	await gw.close();
});

test('askOnChange without authentication: a caller is never asked about a tool hidden from it', async () => {
	// Two endpoints onto the same server; policy hides issues on /mcp/dev.
	const s = setup({ pinning: { askOnChange: true }, sluice: {
		profiles: { ops: { servers: ['github'] }, dev: { servers: ['github'] } },
		policy: { rules: [{ match: 'github.issues', who: ['profile:dev'], action: 'deny' }] },
	} });
	await pinFirst(s);
	s.upgrade();
	const gw = await startHttp({ configPath: s.configPath });
	// dev sees pulls, not issues: the held set is not all its to see, so it
	// is refused plainly, however often.
	for (let i = 0; i < 2; i++) {
		const r = await httpCall(gw, { path: '/mcp/dev', name: 'github__pulls' });
		assert.equal(r.isError, true, JSON.stringify(r));
		assert.match(r.content[0].text, HELD);
		assert.doesNotMatch(JSON.stringify(r), /input_required|2 tools|issues/);
	}
	// ops sees both: asked (the question was not used up by dev's calls).
	const first = await httpCall(gw, { path: '/mcp/ops', name: 'github__pulls' });
	assert.equal(first.resultType, 'input_required', JSON.stringify(first));
	assert.match(first.inputRequests.pinning.params.message, /offers 2 tools whose definitions changed/);
	// dev cannot use ops's question: the answer with its state is refused.
	const accept = { pinning: { action: 'accept', content: { trust: true } } };
	const stolen = await httpCall(gw, { path: '/mcp/dev', name: 'github__pulls',
		extra: { inputResponses: accept, requestState: first.requestState } });
	assert.equal(stolen.isError, true);
	assert.match(stolen.content[0].text, HELD);
	assert.match((await httpCall(gw, { path: '/mcp/ops', name: 'github__issues' })).content[0].text, HELD);
	// ops's yes (the one person this gateway serves) trusts the change.
	const ok = await httpCall(gw, { path: '/mcp/ops', name: 'github__pulls',
		extra: { inputResponses: accept, requestState: first.requestState } });
	assert.equal(ok.content[0].text, 'pulls called', JSON.stringify(ok));
	assert.equal((await httpCall(gw, { path: '/mcp/dev', name: 'github__pulls' })).content[0].text, 'pulls called');
	await gw.close();
});

test('two configs with a server called github but different commands keep separate pins', async () => {
	const state = path.join(work, 'shared-state');
	// Same tool names, different definitions: keyed by name they would fight.
	const a = setup({ state, tools: V1 });
	const b = setup({ state, tools: V2 });
	for (let round = 0; round < 2; round++)
		for (const s of [a, b]) {
			const gw = await connect({ configPath: s.configPath });
			assert.deepEqual(await upstreamTools(gw.client), ALL, gw.stderr());
			await readyLogged(gw);
			assert.equal(warningsOf(gw.stderr()).length, 0, gw.stderr());
			await gw.close();
		}
	const keys = Object.keys(pinsOf(a).servers).sort();
	assert.equal(keys.length, 2, keys.join(' '));
	for (const k of keys) assert.match(k, /^github#[0-9a-f]{16}$/);
	const descs = keys.map((k) => pinsOf(a).servers[k].issues.definition.description).sort();
	assert.deepEqual(descs, ['Lists issues (v2).', 'Lists issues.']);
	// Nothing an argument holds reaches the file in clear.
	assert.ok(!readFileSync(path.join(state, 'pins.json'), 'utf8').includes(a.toolsFile));
});

test('a pins file keyed by server name is migrated once to the identity key', async () => {
	const s = setup();
	await pinFirst(s);
	// Make it the file of an earlier sluice: the server's pins under its name.
	const old = pinsOf(s);
	const [key] = Object.keys(old.servers);
	old.servers = { github: old.servers[key], gone: old.servers[key] };
	writeFileSync(path.join(s.state, 'pins.json'), JSON.stringify(old, null, 2));

	s.upgrade();
	let gw = await connect({ configPath: s.configPath });
	// The migrated pins are in force: the upgrade is caught, not trusted at first sight.
	assert.deepEqual(await upstreamTools(gw.client), ['github__repo']);
	await readyLogged(gw);
	const log = gw.stderr();
	assert.equal((log.match(/moved the pins of 3 tools from 'github' to 'github#[0-9a-f]{16}'/g) ?? []).length, 1, log);
	assert.doesNotMatch(log, /first sight of server 'github'/);
	await gw.close();
	const after1 = pinsOf(s);
	assert.deepEqual(Object.keys(after1.servers).sort(), [key, 'gone'].sort(), 'a server the config lacks stays');
	const file = path.join(s.state, 'pins.json');
	const before = { text: readFileSync(file, 'utf8'), ino: statSync(file).ino };

	// A second load does nothing.
	gw = await connect({ configPath: s.configPath });
	await upstreamTools(gw.client);
	await readyLogged(gw);
	assert.doesNotMatch(gw.stderr(), /moved the pins/);
	await gw.close();
	assert.equal(readFileSync(file, 'utf8'), before.text);
	assert.equal(statSync(file).ino, before.ino, 'the file was not rewritten');
});

test('a renamed server keeps its pins (same command and arguments)', async () => {
	const s = setup({ name: 'github' });
	await pinFirst(s);
	s.upgrade();
	const cfg = JSON.parse(readFileSync(s.configPath, 'utf8'));
	cfg.mcpServers = { gh: cfg.mcpServers.github };
	writeFileSync(s.configPath, JSON.stringify(cfg));
	const gw = await connect({ configPath: s.configPath });
	assert.deepEqual(await upstreamTools(gw.client, 'gh__'), ['gh__repo']);
	await readyLogged(gw);
	assert.match(gw.stderr(), /moved the pins of 3 tools from 'github#[0-9a-f]{16}' to 'gh#[0-9a-f]{16}'/);
	await gw.close();
});
