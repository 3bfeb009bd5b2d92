// Errors a model can act on (issue 34, findings 1, 2, 3 and 5): programs
// written as models write them, TypeScript and JavaScript, ASCII and not,
// with their exact answers and the exact line and column of each failure.
// A failed tool call names the tool and where the program called it (the
// start of tools.<server>.<tool>), and
// stays catchable with err.server and err.tool; positions are in characters
// of the source as sent, in programs and in skills (a skill's own source);
// a skill run from a program has an audit line of its own, which its calls
// name; JavaScript that fails on a type's name says to send language "ts".
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { connect, catalog, tinyServer, closeAll, eventually, textOf, runSluice, sha } from './helpers.mjs';

const dir = mkdtempSync(path.join(tmpdir(), 'sluice-codeerrors-'));
const ENV = { XDG_DATA_HOME: path.join(dir, 'data'), XDG_STATE_HOME: path.join(dir, 'state') };
const SKILLS = path.join(dir, 'data', 'sluice', 'skills');
const AUDIT = path.join(dir, 'audit.jsonl');

// Skills dropped on the operator's shelf and approved before the gateway starts.
const SKILL_FILES = {
	// An error on the skill's first line: column 8 is `boom`.
	first_line: 'return boom();',
	// Accents and an emoji before the error, on the same line.
	accents: 'const s = "café 🎉"; return s + boom();',
	// A file dropped by hand that does not parse (save_skill would refuse it).
	bad_syntax: 'const ok = 1; return (ok + ;',
	left_open: 'const list = [1, 2',
	// TypeScript, with a runtime error on line 2.
	typed: 'const n: number = args.n as number;\nconst r: { v: number } | undefined = undefined; return r!.v + n;',
	// Over maxSourceBytes (4 KiB here): put on the shelf by hand, it cannot run.
	huge: `return 1; /* ${'x'.repeat(5000)} */`,
	// Two calls of its own, for the audit.
	echo_twice: `const a = await tools.github.echo({ word: args.word, n: 1 });
const b = await tools.github.echo({ word: args.word, n: 2 });
return a.arguments.word + '-' + b.arguments.word;`,
};

let code;

async function run(src, language) {
	const args = language === undefined ? { code: src } : { code: src, language };
	const r = await code.client.callTool({ name: 'execute_code', arguments: args });
	return { text: textOf(r), isError: r.isError === true };
}

const auditLines = () =>
	existsSync(AUDIT) ? readFileSync(AUDIT, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];

before(async () => {
	mkdirSync(SKILLS, { recursive: true });
	for (const [name, src] of Object.entries(SKILL_FILES)) {
		writeFileSync(path.join(SKILLS, `${name}.json`), JSON.stringify({ name, description: `The ${name} skill.`, code: src }));
		const ok = await runSluice(['skills', 'approve', name], 10000, ENV);
		assert.equal(ok.code, 0, ok.stderr);
	}
	code = await connect({
		servers: {
			github: catalog('github'),
			rpc: tinyServer({
				name: 'rpcerr',
				tools: `[{ name: 'boom', description: 'Fails.', inputSchema: { type: 'object' } }]`,
				call: `(params, ok, fail) => fail(-32603, 'upstream exploded')`,
			}),
		},
		sluice: { exposure: 'code', codeMode: { timeoutMs: 8000, maxConcurrent: 4, maxArgsBytes: 100000, maxSourceBytes: 4096 }, audit: { file: AUDIT } },
		env: ENV,
	});
	await eventually(async () => (await run('await tools.rpc.boom({}).catch(() => 0); return (await tools.github.list_issues({ owner: "acme", repo: "api" })).length')).text === '20', 15000, 200, 'the upstreams');
});
after(closeAll);

// A program as a model writes it: several calls, the failing one on line 3.
const THREE_CALLS = `const issues = await tools.github.list_issues({ owner: "acme", repo: "api" });
const open = issues.filter((i) => i.state === "open");
const pr = await tools.github.get_pull_request({ owner: "acme", repo: "api", pull_number: 999999 });
return { open: open.length, pr };`;

describe('a failed tool call says which tool and where', () => {
	test('uncaught, in JavaScript: the line and column of the call, the server and tool, the upstream message', async () => {
		const r = await run(THREE_CALLS);
		assert.equal(r.isError, true);
		assert.equal(r.text, 'error: Error: tools.github.get_pull_request failed (line 3, column 18): Not Found: pull request #999999 does not exist in acme/api');
	});

	test('uncaught, in TypeScript with accents and an emoji before the call on its line', async () => {
		const src = `interface Issue { number: number; title: string }
const issues: Issue[] = await tools.github.list_issues({ owner: "acme", repo: "api" });
const note: string = "résumé 🎉"; const pr = await tools.github.get_pull_request({ owner: "acme", repo: "api", pull_number: 999999 });
return issues.length;`;
		for (const language of [undefined, 'ts']) {
			const r = await run(src, language);
			assert.equal(r.text, 'error: Error: tools.github.get_pull_request failed (line 3, column 51): Not Found: pull request #999999 does not exist in acme/api', `language ${language}`);
		}
	});

	test('a JSON-RPC error from the server, inside Promise.all, on line 2', async () => {
		const r = await run(`const [a, b] = await Promise.all([tools.github.list_issues({ owner: "acme", repo: "api" }),
  tools.rpc.boom({ why: "ü" })]);
return a.length;`);
		assert.equal(r.text, "error: Error: tools.rpc.boom failed (line 2, column 3): server 'rpc' answered with error -32603: upstream exploded");
	});

	test('caught: err.server, err.tool, err.message (the upstream\'s), err.line and err.column; the program goes on', async () => {
		const r = await run(`let first;
try {
  await tools.github.get_pull_request({ owner: "acme", repo: "api", pull_number: 999999 });
} catch (err) {
  first = { isError: err instanceof Error, server: err.server, tool: err.tool, message: err.message, line: err.line, column: err.column };
}
const issues = await tools.github.list_issues({ owner: "acme", repo: "api" });
return { first, issues: issues.length };`);
		assert.equal(r.isError, false, r.text);
		assert.deepEqual(JSON.parse(r.text), {
			first: { isError: true, server: 'github', tool: 'get_pull_request', message: 'Not Found: pull request #999999 does not exist in acme/api', line: 3, column: 9 },
			issues: 20,
		});
	});

	test('a caught error rethrown keeps where the call was', async () => {
		const r = await run(`try {
  await tools.rpc.boom({});
} catch (e) {
  console.log("retrying later");
  throw e;
}`);
		assert.match(r.text, /^error: Error: tools\.rpc\.boom failed \(line 2, column 9\): server 'rpc' answered with error -32603: upstream exploded\n\n\[console\]\nretrying later/);
	});
});

describe('positions are characters of the source as sent', () => {
	test('JavaScript: accents and an emoji before a runtime error on its line', async () => {
		const r = await run(`const label = "naïve ☕ 🎉"; const n = label.length;
const x = null; return x.field + n;`);
		assert.equal(r.text.split(':')[0], 'error');
		assert.match(r.text, /\(line 2, column 24\)/, r.text);
		const one = await run('const s = "héllo 🎉"; const o = undefined; return o.k;');
		assert.equal(one.text, "error: TypeError: cannot read property 'k' of undefined (line 1, column 50)");
	});

	test('TypeScript: a syntax error after an emoji is at its column in characters', async () => {
		const r = await run('const s: string = "é🎉"; let x: number = 1; x = ;', 'ts');
		assert.equal(r.text, 'syntax: SyntaxError: Unexpected token (line 1, column 48)');
	});

	test('TypeScript: a runtime error after accents, with types removed before it on the line', async () => {
		const r = await run(`type Row = { name: string };
const rows: Row[] = [{ name: "Zoë" }]; const first = (rows[1] as Row).name;
return first;`, 'ts');
		assert.equal(r.text, "error: TypeError: cannot read property 'name' of undefined (line 2, column 55)");
	});

	test('a correct program with non-ASCII text gives its exact answer', async () => {
		const r = await run(`interface Tally { word: string; n: number }
const words = ["café", "naïve", "café", "🎉"];
const counts = new Map<string, number>();
for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
const out: Tally[] = [...counts].map(([word, n]) => ({ word, n }));
return out.sort((a, b) => b.n - a.n || a.word.localeCompare(b.word));`, 'ts');
		assert.deepEqual(JSON.parse(r.text), [{ word: 'café', n: 2 }, { word: 'naïve', n: 1 }, { word: '🎉', n: 1 }]);
	});
});

describe('skills report positions in their own source', () => {
	test('called directly: an error on the skill\'s first line is at column 8', async () => {
		const r = await code.client.callTool({ name: 'skills__first_line', arguments: {} });
		assert.equal(textOf(r), 'error: ReferenceError: boom is not defined (line 1, column 8)');
	});

	test('called from a program: the skill is named, its position is its own, the call\'s is the program\'s', async () => {
		const r = await run('const v = 1;\nreturn await tools.skills.first_line({ x: "a long argument, which is not the skill\'s source" });');
		assert.equal(r.text, "error: Error: tools.skills.first_line failed (line 2, column 14): skill 'first_line' failed: error: ReferenceError: boom is not defined (line 1, column 8)");
	});

	test('accents and an emoji in a skill, directly and from a program', async () => {
		const direct = await code.client.callTool({ name: 'skills__accents', arguments: { note: 'ü' } });
		assert.equal(textOf(direct), 'error: ReferenceError: boom is not defined (line 1, column 32)');
		const nested = await run('try { await tools.skills.accents({}); } catch (e) { return e.message; }');
		assert.equal(nested.text, "skill 'accents' failed: error: ReferenceError: boom is not defined (line 1, column 32)");
	});
});

describe('skills: syntax errors and TypeScript in their own source', () => {
	test('a syntax error on the first line, directly and from a program', async () => {
		const direct = await code.client.callTool({ name: 'skills__bad_syntax', arguments: {} });
		assert.equal(textOf(direct), "syntax: SyntaxError: unexpected token in expression: ';' (line 1, column 28)");
		const nested = await run('try { await tools.skills.bad_syntax({}); } catch (e) { return e.message; }');
		assert.equal(nested.text, "skill 'bad_syntax' failed: syntax: SyntaxError: unexpected token in expression: ';' (line 1, column 28)");
	});

	test('a bracket left open: the end of the skill, not its wrapping', async () => {
		const want = 'SyntaxError: the program ends too early: an expression, bracket, parenthesis or string is left open, or a bracket is closed that was never opened (at the end of the program: line 1, column 19)';
		const direct = await code.client.callTool({ name: 'skills__left_open', arguments: {} });
		assert.equal(textOf(direct), `syntax: ${want}`);
		const nested = await run('try { await tools.skills.left_open({}); } catch (e) { return e.message; }');
		assert.equal(nested.text, `skill 'left_open' failed: syntax: ${want}`);
	});

	test('a TypeScript skill: its runtime error at the column in its TypeScript', async () => {
		const nested = await run('try { await tools.skills.typed({ n: 1 }); } catch (e) { return e.message; }');
		assert.equal(nested.text, "skill 'typed' failed: error: TypeError: cannot read property 'v' of undefined (line 2, column 56)");
	});
});

describe('a skill\'s arguments', () => {
	test('larger than the program\'s source limit run; over codeMode.maxArgsBytes are refused with the bound', async () => {
		// 70,000 bytes: over maxSourceBytes (64 KiB), which bounds the skill's code, not its arguments.
		const ok = await code.client.callTool({ name: 'skills__first_line', arguments: { blob: 'x'.repeat(70000) } });
		assert.equal(textOf(ok), 'error: ReferenceError: boom is not defined (line 1, column 8)');
		const big = await code.client.callTool({ name: 'skills__first_line', arguments: { blob: 'x'.repeat(100001) } });
		assert.equal(big.isError, true);
		assert.equal(textOf(big), 'the arguments are 100012 bytes of JSON, over the limit of 100000 (codeMode.maxArgsBytes)');
	});
});

describe('a skill file over codeMode.maxSourceBytes', () => {
	test('is refused with the bound, directly and from a program', async () => {
		const want = "skill 'huge' cannot run: its code is 5016 bytes, over codeMode.maxSourceBytes (4096)";
		const direct = await code.client.callTool({ name: 'skills__huge', arguments: {} });
		assert.equal(direct.isError, true);
		assert.equal(textOf(direct), want);
		const nested = await run('try { await tools.skills.huge({}); } catch (e) { return e.message; }');
		assert.equal(nested.text, want);
	});
});

describe('audit: a skill run from a program has a line of its own', () => {
	test('its calls name the skill run, whose line names the program and the skill', async () => {
		const word = `w${Date.now()}`;
		const r = await run(`return await tools.skills.echo_twice({ word: "${word}" });`);
		assert.equal(r.text, `${word}-${word}`);
		const lines = await eventually(() => {
			const all = auditLines();
			const calls = all.filter((l) => l.type === 'call' && (l.args_sha256 === sha({ word, n: 1 }) || l.args_sha256 === sha({ word, n: 2 })));
			const skill = calls.length === 2 && all.find((l) => l.type === 'skill' && l.program === calls[0].program);
			const program = skill && all.find((l) => l.type === 'program' && l.program === skill.parent);
			return program ? { calls, skill, program } : null;
		}, 5000, 100, 'the audit lines of the skill run');
		assert.equal(lines.calls[1].program, lines.skill.program);
		assert.notEqual(lines.skill.program, lines.program.program);
		assert.equal(lines.skill.skill, 'echo_twice');
		assert.equal(lines.skill.outcome, 'ok');
		assert.equal(lines.skill.calls, 2);
		assert.equal(lines.skill.session, lines.program.session);
		assert.ok('owner' in lines.skill);
		// The program's own line counts its one call: the skill.
		assert.equal(lines.program.calls, 1);
	});
});

describe('JavaScript that reads TypeScript as comparisons', () => {
	test('f<number>(x) with no language: the ReferenceError says to send language "ts"; with it, the answer', async () => {
		const src = `const parse = (s) => Number(s);
const n = parse<number>("42");
return n + 1;`;
		const r = await run(src);
		assert.equal(r.text, 'error: ReferenceError: number is not defined (line 2, column 17): if the program is TypeScript, send language "ts" (without one, code that parses as JavaScript runs as JavaScript: f<number>(x) is two comparisons)');
		assert.equal((await run(src, 'ts')).text, '43');
	});

	test('a type of the program\'s own after "<", and a plain undefined name (no hint)', async () => {
		const own = await run('const id = (x) => x;\nreturn id<Item>({ a: 1 });');
		assert.match(own.text, /^error: ReferenceError: Item is not defined \(line 2, column 11\): if the program is TypeScript, send language "ts"/);
		const plain = await run('return total + 1;');
		assert.equal(plain.text, 'error: ReferenceError: total is not defined (line 1, column 8)');
		const js = await run('const f = (x) => x; return f<number>(1);', 'js');
		assert.doesNotMatch(js.text, /language "ts"/);
	});
});
