// Skills belong to their author (issue 32, finding 2; docs/internals/SANDBOX.md,
// "Skills"), end to end over HTTP with static tokens: a skill alice saves is
// hers alone: bob does not see it (tools/list, search_tools, describe_tools, a
// program's tools.skills) and calling it is answered as for a skill that does
// not exist; each may have a skill of the same name. A skill the operator
// publishes (a file in the skills directory, approved) runs for anyone with the
// runner's rights. save_skill is a policy target (skills.save_skill), and is
// off on a gateway whose callers authenticate unless codeMode.saveSkills is on.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readdirSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { catalog, closeAll, eventually, execCode, httpClient, runSluice, searchHits, startHttp, textOf } from './helpers.mjs';

after(closeAll);

const data = mkdtempSync(path.join(tmpdir(), 'sluice-skillowners-data-'));
const state = mkdtempSync(path.join(tmpdir(), 'sluice-skillowners-state-'));
const ENV = { XDG_DATA_HOME: data, XDG_STATE_HOME: state };
const DIR = path.join(data, 'sluice', 'skills');

const TOKENS = [
	{ token: 'alice-token-3e1a', subject: 'alice' },
	{ token: 'bob-token-77c0', subject: 'bob' },
	{ token: 'carol-token-d41f', subject: 'carol' },
];
const POLICY = {
	rules: [
		// carol may not save skills, as any tool is denied by its name.
		{ match: 'skills.save_skill', who: ['sub:carol'], action: 'deny' },
		// bob may not call github.echo, whoever's code calls it.
		{ match: 'github.echo', who: ['sub:bob'], action: 'deny' },
	],
};
const SERVERS = { github: catalog('github') };

// Every save is confirmed by the person.
const elicit = {
	capabilities: { elicitation: {} },
	handlers: [[ElicitRequestSchema, async () => ({ action: 'accept', content: { approve: true } })]],
};

const skill = (name, tag) => ({
	name,
	description: `Echoes a word with the tag ${tag} (a skill for tests).`,
	code: `const r = await tools.github.echo({ word: args.word }); return '${tag}:' + r.arguments.word;`,
	inputSchema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
});

let open; // opt-in gateway: saveSkills true, hybrid; /mcp/lab in code exposure
let shut; // authenticated gateway without the opt-in, in code exposure (describe_tools)
const as = {};
const plain = {};
const lab = {};
const changed = {}; // notifications/tools/list_changed heard by each caller's session on `open`

before(async () => {
	const codeMode = { enabled: true, timeoutMs: 8000, maxConcurrent: 8 };
	const http = { auth: { tokens: TOKENS } };
	[open, shut] = await Promise.all([
		startHttp({
			servers: SERVERS,
			sluice: { exposure: 'hybrid', codeMode: { ...codeMode, saveSkills: true }, policy: POLICY, http, profiles: { lab: { exposure: 'code' } } },
			env: ENV,
		}),
		startHttp({ servers: SERVERS, sluice: { exposure: 'code', codeMode, policy: POLICY, http }, env: ENV }),
	]);
	for (const t of TOKENS) {
		const headers = { Authorization: `Bearer ${t.token}` };
		as[t.subject] = (await httpClient(open.url, { headers, ...elicit })).client;
		changed[t.subject] = 0;
		as[t.subject].setNotificationHandler(ToolListChangedNotificationSchema, () => void changed[t.subject]++);
		plain[t.subject] = (await httpClient(shut.url, { headers, ...elicit })).client;
		lab[t.subject] = (await httpClient(`${open.url}/lab`, { headers, ...elicit })).client;
	}
	for (const c of [as.alice, plain.alice])
		await eventually(async () => (await execCode(c, 'await tools.github.echo({}); return "ok"')).text === 'ok', 10000, 100, 'upstream and code mode ready');
});

after(async () => {
	for (const c of [...Object.values(as), ...Object.values(plain), ...Object.values(lab)]) await c.close();
});

const names = async (client) => (await client.listTools()).tools.map((t) => t.name);
const save = async (client, args) => {
	const r = await client.callTool({ name: 'save_skill', arguments: args });
	return { text: textOf(r), isError: r.isError === true };
};
const describeSkills = (client, tools) => client.callTool({ name: 'describe_tools', arguments: { server: 'skills', ...(tools ? { tools } : {}) } });
const search = async (client, query) => textOf(await client.callTool({ name: 'search_tools', arguments: { query, k: 20 } }));

describe("a caller's skill", () => {
	test('alice saves a skill: hers to list, search, describe and run', async () => {
		const r = await save(as.alice, skill('tagged_echo', 'alice'));
		assert.equal(r.isError, false, r.text);
		await eventually(async () => (await names(as.alice)).includes('skills__tagged_echo'), 5000, 100, 'listed to alice');
		assert.match(await search(as.alice, 'echoes a word with the tag'), /tools\.skills\.tagged_echo\(/);
		// describe_tools (code exposure: the other gateway, the same data directory).
		const d = await describeSkills(plain.alice, ['tagged_echo']);
		assert.ok(!d.isError, textOf(d));
		assert.match(textOf(d), /tagged_echo\(args: /);
		const direct = await as.alice.callTool({ name: 'skills__tagged_echo', arguments: { word: 'a1' } });
		assert.ok(!direct.isError, textOf(direct));
		assert.equal(textOf(direct), 'alice:a1');
		const prog = await execCode(as.alice, `return await tools.skills.tagged_echo({ word: 'a2' })`);
		assert.equal(prog.text, 'alice:a2');
		// On disk: under a directory of her own (a 64-digit key), 0700, not among the published files.
		const owners = readdirSync(DIR).filter((f) => /^[0-9a-f]{64}$/.test(f));
		assert.equal(owners.length, 1);
		assert.equal(statSync(path.join(DIR, owners[0])).mode & 0o777, 0o700);
		assert.ok(existsSync(path.join(DIR, owners[0], 'tagged_echo.json')));
		assert.ok(!existsSync(path.join(DIR, 'tagged_echo.json')));
	});

	test('bob neither sees nor runs it: every answer is the one for a skill that does not exist', async () => {
		assert.ok(!(await names(as.bob)).includes('skills__tagged_echo'));
		assert.doesNotMatch(await search(as.bob, 'echoes a word with the tag'), /tagged_echo/);
		const d = await describeSkills(plain.bob, ['tagged_echo']);
		const none = await describeSkills(plain.bob, ['nothing_here']);
		assert.equal(d.isError, true);
		assert.equal(textOf(d), textOf(none).replace('nothing_here', 'tagged_echo'));
		assert.doesNotMatch(textOf(await describeSkills(plain.bob)), /tagged_echo/);
		assert.doesNotMatch(await search(plain.bob, 'echoes a word with the tag'), /tagged_echo/);
		// tools/call: the error of an unknown tool, word for word.
		const err = async (name) => {
			try {
				await as.bob.callTool({ name, arguments: { word: 'b' } });
			} catch (e) {
				return e.message;
			}
			return 'no error';
		};
		const theirs = await err('skills__tagged_echo'), missing = await err('skills__nothing_here');
		assert.match(theirs, /Unknown tool: skills__tagged_echo/);
		assert.equal(theirs, missing.replace('nothing_here', 'tagged_echo'));
		// A program: no tools.skills at all (bob has none, none is published).
		const keys = await execCode(as.bob, 'return Object.keys(tools)');
		assert.deepEqual(JSON.parse(keys.text), ['github']);
		const called = await execCode(as.bob, `try { return await tools.skills.tagged_echo({ word: 'b' }); } catch (e) { return e.message; }`);
		assert.doesNotMatch(called.text, /alice/);
	});

	test('a skill belongs to the profile it was saved through: alice at /mcp/lab does not have it', async () => {
		assert.doesNotMatch(textOf(await describeSkills(lab.alice)), /tagged_echo/);
		const keys = await execCode(lab.alice, 'return Object.keys(tools)');
		assert.deepEqual(JSON.parse(keys.text), ['github']);
	});

	test('bob saves a skill of the same name: each runs their own, and only the saver hears of it', async () => {
		// alice's save told alice's session, not bob's: bob's first notification is
		// for his own save (the gateway writes a session's notifications in order).
		await eventually(() => changed.alice >= 1, 5000, 50, "alice's list_changed");
		const before_ = { alice: changed.alice, bob: changed.bob };
		const r = await save(as.bob, { ...skill('tagged_echo', 'bob'), code: `return 'bob:' + args.word;` });
		assert.equal(r.isError, false, r.text);
		await eventually(() => changed.bob >= 1, 5000, 50, "bob's list_changed");
		assert.deepEqual(before_, { alice: changed.alice, bob: 0 });
		assert.equal(changed.bob, 1);
		const bob = await as.bob.callTool({ name: 'skills__tagged_echo', arguments: { word: 'x' } });
		assert.equal(textOf(bob), 'bob:x');
		const alice = await as.alice.callTool({ name: 'skills__tagged_echo', arguments: { word: 'x' } });
		assert.equal(textOf(alice), 'alice:x');
		assert.equal(readdirSync(DIR).filter((f) => /^[0-9a-f]{64}$/.test(f)).length, 2);
	});
});

describe('published skills run with the rights of whoever runs them', () => {
	test("a skill the operator placed (and approved) is everyone's; its calls pass policy as the runner", async () => {
		mkdirSync(DIR, { recursive: true });
		writeFileSync(path.join(DIR, 'house_echo.json'), JSON.stringify(skill('house_echo', 'house')));
		const ok = await runSluice(['skills', 'approve', 'house_echo'], 10000, ENV);
		assert.equal(ok.code, 0, ok.stderr);
		await eventually(async () => (await names(as.bob)).includes('skills__house_echo'), 5000, 100, 'published to bob');
		assert.ok((await names(as.alice)).includes('skills__house_echo'));
		const alice = await as.alice.callTool({ name: 'skills__house_echo', arguments: { word: 'h' } });
		assert.equal(textOf(alice), 'house:h');
		// bob may not call github.echo: the skill's call is refused for him.
		const bob = await as.bob.callTool({ name: 'skills__house_echo', arguments: { word: 'h' } });
		assert.equal(bob.isError, true);
		assert.match(textOf(bob), /server 'github' has no tool 'echo'/);
	});
});

describe('save_skill is governed', () => {
	test('a policy rule denying skills.save_skill refuses it (and hides it) for that caller', async () => {
		assert.ok(!(await names(as.carol)).includes('save_skill'));
		assert.ok((await names(as.alice)).includes('save_skill'));
		const r = await save(as.carol, skill('carols', 'carol'));
		assert.equal(r.isError, true);
		assert.match(r.text, /policy: skills\.save_skill is denied by rule 1 \(match "skills\.save_skill", who sub:carol\)/);
		assert.ok(!readdirSync(DIR).some((f) => f === 'carols.json'));
	});

	test('on an authenticated gateway without codeMode.saveSkills, saving is off', async () => {
		const list = await names(plain.alice);
		assert.ok(list.includes('execute_code'));
		assert.ok(!list.includes('save_skill'));
		const r = await save(plain.alice, skill('not_saved', 'x'));
		assert.equal(r.isError, true);
		assert.match(r.text, /saving skills is off on this gateway \(sluice\.codeMode\.saveSkills/);
		// Skills saved elsewhere still run there for their owner.
		const mine = await execCode(plain.alice, `return await tools.skills.tagged_echo({ word: 'p' })`);
		assert.equal(mine.text, 'alice:p');
	});
});

describe('the operator and callers\' shelves', () => {
	test('`sluice skills list` shows each shelf; show names the owner; publish makes a skill everyone\'s', async () => {
		const list = await runSluice(['skills', 'list'], 10000, ENV);
		assert.equal(list.code, 0, list.stderr);
		assert.match(list.stdout, /^house_echo\s+ok\s+\d+/m);
		const rows = [...list.stdout.matchAll(/^([0-9a-f]{12})\/tagged_echo\s+ok\s+\d+/gm)].map((m) => m[1]);
		assert.equal(rows.length, 2, list.stdout);
		assert.match(list.stdout, /saved by alice \(token\)/);
		assert.match(list.stdout, /saved by bob \(token\)/);
		const owners = readdirSync(DIR).filter((f) => /^[0-9a-f]{64}$/.test(f));
		const show = async (ref) => runSluice(['skills', 'show', ref], 10000, ENV);
		const shown = await Promise.all(rows.map((r) => show(`${r}/tagged_echo`)));
		const aliceRef = rows[shown.findIndex((s) => /owner:\s+[0-9a-f]{64}, for that caller alone: alice \(token\)/.test(s.stdout))];
		assert.ok(aliceRef, shown.map((s) => s.stdout).join('\n'));
		assert.ok(owners.some((o) => o.startsWith(aliceRef)));
		assert.equal((await show('abc/tagged_echo')).code, 2);
		assert.match((await show('abc/tagged_echo')).stderr, /too short/);
		assert.equal((await show('0000000000/tagged_echo')).code, 2);
		// Publishing alice's skill: it leaves her shelf and becomes everyone's.
		const pub = await runSluice(['skills', 'publish', `${aliceRef}/tagged_echo`], 10000, ENV);
		assert.equal(pub.code, 0, pub.stderr);
		assert.match(pub.stdout, /published skill/);
		// Her shelf, left empty, went with its pins: it no longer counts among the callers'.
		const aliceKey = owners.find((o) => o.startsWith(aliceRef));
		assert.ok(!existsSync(path.join(DIR, aliceKey)));
		assert.ok(!existsSync(path.join(state, 'sluice', 'skill-pins', `${aliceKey}.json`)));
		assert.ok(existsSync(path.join(DIR, 'tagged_echo.json')));
		// bob's own skill of that name still decides for him; carol now has alice's.
		await eventually(async () => (await names(as.carol)).includes('skills__tagged_echo'), 5000, 100, 'published to carol');
		assert.equal(textOf(await as.carol.callTool({ name: 'skills__tagged_echo', arguments: { word: 'c' } })), 'alice:c');
		assert.equal(textOf(await as.bob.callTool({ name: 'skills__tagged_echo', arguments: { word: 'c' } })), 'bob:c');
	});
});
