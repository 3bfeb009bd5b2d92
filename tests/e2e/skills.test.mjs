// Skills end to end (docs/internals/SANDBOX.md, "Skills"): save_skill asks the
// person (elicitation) and stores the program; the skill is then a tool
// (skills__<name> in passthrough, search_tools and describe_tools in code
// mode), callable directly and from programs as tools.skills.<name>(args),
// its calls audited; a file changed on disk is hidden until approved; the
// CLI lists, shows (escaped) and removes; bad names and sizes are refused.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, statSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { connect, catalog, closeAll, toolsWhen, eventually, execCode, runSluice, textOf, sha, sleep } from './helpers.mjs';

after(closeAll);

const data = mkdtempSync(path.join(tmpdir(), 'sluice-skills-data-'));
const state = mkdtempSync(path.join(tmpdir(), 'sluice-skills-state-'));
const ENV = { XDG_DATA_HOME: data, XDG_STATE_HOME: state };
const DIR = path.join(data, 'sluice', 'skills');
const PINS = path.join(state, 'sluice', 'skill-pins.json');
const audit = path.join(state, 'audit.jsonl');

const asked = [];
let answer = { action: 'accept', content: { approve: true } };
const elicit = {
	capabilities: { elicitation: {} },
	handlers: [
		[
			ElicitRequestSchema,
			async (req) => {
				asked.push(req.params);
				return typeof answer === 'function' ? answer() : answer;
			},
		],
	],
};

let pass; // passthrough with code mode: skills__<name> in tools/list
let code; // exposure code: search_tools and describe_tools

const ECHO_TWICE = {
	name: 'echo_twice',
	description: 'Echoes a word twice through the github echo tool and joins the two answers.',
	code: `const a = await tools.github.echo({ word: args.word, n: 1 });
const b = await tools.github.echo({ word: args.word, n: 2 });
return { joined: a.arguments.word + '-' + b.arguments.word, depth: 1 };`,
	inputSchema: { type: 'object', properties: { word: { type: 'string', description: 'The word' } }, required: ['word'] },
};

async function save(client, args) {
	const r = await client.callTool({ name: 'save_skill', arguments: args });
	return { text: textOf(r), isError: r.isError === true };
}

function auditLines() {
	if (!existsSync(audit)) return [];
	return readFileSync(audit, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

before(async () => {
	[pass, code] = await Promise.all([
		connect({
			servers: { github: catalog('github') },
			sluice: {
				exposure: 'passthrough',
				codeMode: { enabled: true, timeoutMs: 8000, maxConcurrent: 8 },
				audit: { file: audit },
				policy: { confirmTimeoutMs: 1500 },
			},
			env: ENV,
			...elicit,
		}),
		connect({
			servers: { github: catalog('github') },
			sluice: { exposure: 'code', codeMode: { timeoutMs: 8000, maxConcurrent: 2 } },
			env: ENV,
			...elicit,
		}),
	]);
	await toolsWhen(pass.client, (t) => t.some((x) => x.name === 'github__echo'));
	await eventually(async () => (await execCode(code.client, 'await tools.github.echo({}); return "ok"')).text === 'ok', 10000);
});

describe('save_skill', () => {
	test('is offered with execute_code; the person is asked, and the skill is stored 0600 and pinned', async () => {
		const list = (await pass.client.listTools()).tools.map((t) => t.name);
		assert.ok(list.includes('save_skill') && list.includes('execute_code'));
		const r = await save(pass.client, ECHO_TWICE);
		assert.equal(r.isError, false, r.text);
		assert.match(r.text, /saved skill 'echo_twice'.*tools\.skills\.echo_twice/);
		const q = asked.at(-1);
		assert.match(q.message, /Save the skill "echo_twice"/);
		assert.match(q.message, /tools\.github\.echo\(\{ word: args\.word, n: 2 \}\)/);
		const file = path.join(DIR, 'echo_twice.json');
		assert.equal(statSync(file).mode & 0o777, 0o600);
		assert.equal(statSync(PINS).mode & 0o777, 0o600);
		assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')).inputSchema, ECHO_TWICE.inputSchema);
		// Passthrough lists it as a tool, with its schema.
		await toolsWhen(pass.client, (t) => t.some((x) => x.name === 'skills__echo_twice'));
		const def = (await pass.client.listTools()).tools.find((x) => x.name === 'skills__echo_twice');
		assert.equal(def.description, ECHO_TWICE.description);
		assert.deepEqual(def.inputSchema, ECHO_TWICE.inputSchema);
		// Code mode lists gateway tools only.
		const codeList = (await code.client.listTools()).tools.map((t) => t.name);
		assert.ok(codeList.includes('save_skill') && !codeList.some((n) => n.startsWith('skills__')));
	});

	test('declined: nothing is stored', async () => {
		answer = { action: 'decline' };
		try {
			const r = await save(pass.client, { ...ECHO_TWICE, name: 'declined_one' });
			assert.equal(r.isError, true);
			assert.match(r.text, /declined/);
		} finally {
			answer = { action: 'accept', content: { approve: true } };
		}
		assert.equal(existsSync(path.join(DIR, 'declined_one.json')), false);
	});

	test('no answer within policy.confirmTimeoutMs: refused, and a late yes saves nothing', async () => {
		let release;
		answer = () => new Promise((r) => (release = r));
		try {
			const t0 = Date.now();
			const r = await save(pass.client, { ...ECHO_TWICE, name: 'too_late' });
			assert.equal(r.isError, true);
			assert.match(r.text, /did not answer in time/);
			assert.ok(Date.now() - t0 >= 1400 && Date.now() - t0 < 5000);
			release({ action: 'accept', content: { approve: true } });
			// The gateway still serves, and the late answer saved nothing.
			assert.equal((await execCode(pass.client, 'return 2')).text, '2');
		} finally {
			answer = { action: 'accept', content: { approve: true } };
		}
		assert.equal(existsSync(path.join(DIR, 'too_late.json')), false);
	});

	test('bad names, oversized code and hidden characters are refused before anyone is asked', async () => {
		const n = asked.length;
		for (const name of ['Bad', '1abc', 'a-b', '../x', 'a'.repeat(65), '']) {
			const r = await save(pass.client, { ...ECHO_TWICE, name });
			assert.equal(r.isError, true, name);
			assert.match(r.text, /a skill's name is 1 to 64 characters/);
		}
		const big = await save(pass.client, { ...ECHO_TWICE, name: 'big', code: 'return 1;' + ' '.repeat(64 << 10) });
		assert.equal(big.isError, true);
		assert.match(big.text, /over the limit of 65536/);
		const bidi = await save(pass.client, { ...ECHO_TWICE, name: 'bidi', code: 'return "a\u202eb";' });
		assert.match(bidi.text, /invisible or bidirectional/);
		const schema = await save(pass.client, { ...ECHO_TWICE, name: 'schema', inputSchema: 'nope' });
		assert.match(schema.text, /inputSchema is a JSON Schema object/);
		assert.equal(asked.length, n, 'nobody was asked');
		assert.deepEqual(readdirSync(DIR).filter((f) => !f.startsWith('.')), ['echo_twice.json']);
	});
});

describe('save_skill checks the syntax first', () => {
	test('code that does not parse is refused with its line, and nobody is asked', async () => {
		const n = asked.length;
		const r = await save(pass.client, { ...ECHO_TWICE, name: 'broken', code: 'const a = 1;\nconst b = (a +;\nreturn b;' });
		assert.equal(r.isError, true, r.text);
		assert.match(r.text, /^save_skill: the code does not parse: SyntaxError: .*\(line 2, column \d+\); nobody was asked, and the skill was not saved$/);
		// On the first line, the column is the skill's own.
		const first = await save(pass.client, { ...ECHO_TWICE, name: 'broken', code: 'return );' });
		assert.match(first.text, /\(line 1, column 8\)/, first.text);
		// TypeScript that does not parse either way is refused too; TypeScript that does is asked.
		const ts = await save(pass.client, { ...ECHO_TWICE, name: 'broken', code: 'const x: number = 1;\n\nreturn x +* 2;' });
		assert.match(ts.text, /does not parse: .*\(line 3, column \d+\)/);
		assert.equal(asked.length, n, 'nobody was asked');
		assert.equal(existsSync(path.join(DIR, 'broken.json')), false);
		// Code that parses (here TypeScript) goes on to the person (who declines: nothing kept).
		answer = { action: 'decline' };
		try {
			const good = await save(pass.client, { ...ECHO_TWICE, name: 'typed', code: 'const n: number = 2;\nreturn n * 2;' });
			assert.match(good.text, /the person declined/);
		} finally {
			answer = { action: 'accept', content: { approve: true } };
		}
		assert.equal(asked.length, n + 1);
		assert.match(asked.at(-1).message, /Save the skill "typed"/);
	});
});

describe('calling skills', () => {
	test('directly, as skills__<name>: its upstream calls are audited as a program', async () => {
		const word = `w${Date.now()}`;
		const r = await pass.client.callTool({ name: 'skills__echo_twice', arguments: { word } });
		assert.ok(!r.isError, textOf(r));
		assert.deepEqual(JSON.parse(textOf(r)), { joined: `${word}-${word}`, depth: 1 });
		const lines = await eventually(() => {
			const l = auditLines().filter((x) => x.type === 'call' && x.args_sha256 === sha({ word, n: 2 }));
			return l.length ? l : null;
		}, 5000);
		assert.equal(lines[0].origin, 'code');
		assert.equal(typeof lines[0].program, 'number');
	});

	test('from a program, as tools.skills.<name>(args): the value comes back as a value', async () => {
		const r = await execCode(pass.client, `const v = await tools.skills.echo_twice({ word: 'x' }); return [typeof v + ':' + v.joined, Object.keys(tools)];`);
		assert.deepEqual(JSON.parse(r.text), ['object:x-x', ['github', 'skills']]);
		const missing = await execCode(pass.client, `return await tools.skills.nope({})`);
		assert.equal(missing.isError, true);
		assert.match(missing.text, /there is no skill 'nope'/);
	});

	test('a skill that calls itself stops at the depth bound', async () => {
		const r = await save(pass.client, {
			name: 'again',
			description: 'Calls itself.',
			code: 'return 1 + await tools.skills.again({});',
		});
		assert.equal(r.isError, false, r.text);
		const t0 = Date.now();
		const x = await execCode(pass.client, `try { await tools.skills.again({}); } catch (e) { return e.message; }`);
		assert.match(x.text, /skills may call skills 4 levels deep at most/);
		// With two slots, the second level finds none free: refused at once
		// rather than queued behind its own caller.
		const y = await execCode(code.client, `try { await tools.skills.again({}); } catch (e) { return e.message; }`);
		assert.match(y.text, /skill 'again' failed: error: Error: tools\.skills\.again failed \(line 1, column 18\): skill 'again' was not run: every code-mode slot is taken/);
		assert.ok(Date.now() - t0 < 6000);
	});

	test('code mode: search_tools finds skills with TypeScript signatures; describe_tools declares them', async () => {
		const s = await code.client.callTool({ name: 'search_tools', arguments: { query: 'echo word twice' } });
		assert.match(textOf(s), /tools\.skills\.echo_twice\(args: \{word: string\}\): Promise<unknown>/);
		const only = await code.client.callTool({ name: 'search_tools', arguments: { query: 'word twice', server: 'skills' } });
		assert.match(textOf(only), /^tools\.skills\.echo_twice/);
		const d = await code.client.callTool({ name: 'describe_tools', arguments: { server: 'skills', tools: ['echo_twice'] } });
		assert.match(textOf(d), /echo_twice\(args: EchoTwiceArgs\): Promise<unknown>;/);
		assert.match(textOf(d), /word: string;/);
		const r = await execCode(code.client, `return (await tools.skills.echo_twice({ word: 'y' })).joined`);
		assert.equal(r.text, 'y-y');
	});
});

describe('pins and the CLI', () => {
	test('a skill changed on disk is hidden until approved (`sluice pins approve skills.NAME`)', async () => {
		const file = path.join(DIR, 'echo_twice.json');
		const sk = JSON.parse(readFileSync(file, 'utf8'));
		sk.code = `return 'tampered';`;
		writeFileSync(file, JSON.stringify(sk));
		await toolsWhen(pass.client, (t) => !t.some((x) => x.name === 'skills__echo_twice'));
		const r = await execCode(pass.client, `return await tools.skills.echo_twice({ word: 'z' })`);
		assert.match(r.text, /there is no skill 'echo_twice'/);
		await assert.rejects(pass.client.callTool({ name: 'skills__echo_twice', arguments: {} }), /Unknown tool/);
		// The code gateway is another process: it reads a shelf again at most
		// once a second (gateway/skills.h, SL_SKILLS_RECHECK_MS).
		await eventually(async () => !/tools\.skills\.echo_twice/.test(
			textOf(await code.client.callTool({ name: 'search_tools', arguments: { query: 'echo word twice' } }))),
			5000, 100, 'the changed skill hidden from search');
		assert.match(pass.stderr(), /differs from what was approved: it is hidden until `sluice skills approve echo_twice`/);
		const list = await runSluice(['skills', 'list'], 10000, ENV);
		assert.equal(list.code, 0, list.stderr);
		assert.match(list.stdout, /echo_twice\s+changed\s+\d+/);
		assert.match(list.stdout, /again\s+ok\s+/);
		// As for tools: `sluice pins approve skills.NAME` (= `sluice skills approve NAME`).
		const ok = await runSluice(['pins', 'approve', 'skills.echo_twice', '--config', pass.configPath], 10000, ENV);
		assert.equal(ok.code, 0, ok.stderr);
		assert.match(ok.stdout, /approved skill 'echo_twice'/);
		const after_ = await execCode(pass.client, `return await tools.skills.echo_twice({})`);
		assert.equal(after_.text, 'tampered');
	});

	test('a file put there by hand is not trusted; malformed and huge files are skipped', async () => {
		writeFileSync(path.join(DIR, 'dropped.json'), JSON.stringify({ name: 'dropped', description: 'd', code: 'return 1' }));
		writeFileSync(path.join(DIR, 'broken.json'), '{"name": "broken", "code": ');
		writeFileSync(path.join(DIR, 'huge.json'), JSON.stringify({ name: 'huge', description: 'h', code: 'x'.repeat(600 << 10) }));
		const r = await execCode(pass.client, `return await tools.skills.dropped({})`);
		assert.match(r.text, /there is no skill 'dropped'/);
		const list = await runSluice(['skills', 'list'], 10000, ENV);
		assert.match(list.stdout, /dropped\s+unpinned/);
		assert.match(list.stdout, /broken\s+bad\s+-\s+.*not a JSON object/);
		assert.match(list.stdout, /huge\s+bad\s+-\s+.*over the limit/);
		// The approval before was another process's (the CLI): listed within a
		// second (SL_SKILLS_RECHECK_MS).
		const names = async () => (await pass.client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith('skills__')).sort();
		await eventually(async () => (await names()).includes('skills__echo_twice'), 5000, 100, 'the approved skill listed');
		assert.deepEqual(await names(), ['skills__again', 'skills__echo_twice']);
	});

	test('show escapes control characters; rm removes the file and its pin', async () => {
		const r = await save(pass.client, {
			name: 'shady',
			description: 'Looks harmless\u001b[2K',
			code: 'return "\u001b[31mred";\n\tconsole.log(1);',
		});
		assert.equal(r.isError, false, r.text);
		const show = await runSluice(['skills', 'show', 'shady'], 10000, ENV);
		assert.equal(show.code, 0, show.stderr);
		assert.ok(!show.stdout.includes('\u001b'), 'no raw escape reaches the terminal');
		assert.match(show.stdout, /Looks harmless\\x1b\[2K/);
		assert.match(show.stdout, /return "\\x1b\[31mred";\n\tconsole\.log\(1\);/);
		assert.match(show.stdout, /status:\s+ok/);
		const bad = await runSluice(['skills', 'show', '../etc'], 10000, ENV);
		assert.equal(bad.code, 2);
		const rm = await runSluice(['skills', 'rm', 'shady'], 10000, ENV);
		assert.equal(rm.code, 0, rm.stderr);
		assert.equal(existsSync(path.join(DIR, 'shady.json')), false);
		assert.equal(JSON.parse(readFileSync(PINS, 'utf8')).shady, undefined);
		const again = await runSluice(['skills', 'rm', 'shady'], 10000, ENV);
		assert.equal(again.code, 1);
		assert.match(again.stderr, /no such skill/);
	});

	test('the last skill removed by `sluice skills rm` (another process): the next program has no tools.skills', async () => {
		// A second after the last change, the gateway keeps its answer to
		// "is there a skill file?" and checks only the directory's mtime.
		await sleep(1100);
		const before_ = await execCode(pass.client, 'return Object.keys(tools)');
		assert.deepEqual(JSON.parse(before_.text), ['github', 'skills']);
		assert.deepEqual(JSON.parse((await execCode(pass.client, 'return Object.keys(tools)')).text), ['github', 'skills']);
		const names = readdirSync(DIR).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5));
		assert.ok(names.length > 0);
		for (const name of names) {
			const rm = await runSluice(['skills', 'rm', name], 10000, ENV);
			assert.equal(rm.code, 0, rm.stderr);
		}
		const after_ = await execCode(pass.client, 'return Object.keys(tools)');
		assert.deepEqual(JSON.parse(after_.text), ['github']);
	});
});
