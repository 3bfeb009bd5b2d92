// TypeScript in code mode (issue 18): execute_code's `language`, types
// stripped by sucrase inside the sandbox, positions of errors in the
// TypeScript as sent, through the official SDK client.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

import { connect, catalog, everything, closeAll, eventually, textOf, tinyServer } from './helpers.mjs';

after(closeAll);

let code; // exposure "code": catalog (github back end), git-hub, everything, rpc (as codemode.test.mjs)

async function run(src, language) {
	const args = language === undefined ? { code: src } : { code: src, language };
	const t0 = process.hrtime.bigint();
	const result = await code.client.callTool({ name: 'execute_code', arguments: args });
	const ms = Number(process.hrtime.bigint() - t0) / 1e6;
	const text = textOf(result);
	const isError = result.isError === true;
	return { text, isError, kind: isError ? /^([a-z]+): /.exec(text)?.[1] : undefined, ms };
}

before(async () => {
	code = await connect({
		servers: {
			catalog: catalog('github'),
			'git-hub': catalog('github'),
			everything: everything(),
			rpc: tinyServer({
				name: 'rpcerr',
				tools: `[{ name: 'boom', description: 'Fails.', inputSchema: { type: 'object' } }]`,
				call: `(params, ok, fail) => fail(-32603, 'upstream exploded')`,
			}),
		},
		sluice: { exposure: 'code', codeMode: { timeoutMs: 5000 } },
	});
	await eventually(
		async () => (await run(`await tools.everything.get_sum({a: 0, b: 0}); await tools.catalog.echo({}); return 'ready'`)).text === 'ready',
		15000,
		200,
		'the upstreams, from a program',
	);
});
after(() => code?.close());

describe('execute_code in TypeScript', () => {
	test('the definition offers language js|ts, says TypeScript, and stays at most 150 tokens', async () => {
		const { tools } = await code.client.listTools();
		const def = tools.find((t) => t.name === 'execute_code');
		assert.deepEqual(def.inputSchema.properties.language, { enum: ['js', 'ts'] });
		assert.deepEqual(def.inputSchema.required, ['code']);
		assert.match(def.description, /\bJS or TS\b/);
		// _meta is the client's, never the model's (its anthropic/alwaysLoad mark).
		const { _meta, ...shown } = def;
		assert.equal(_meta?.['anthropic/alwaysLoad'], true);
		const json = JSON.stringify(shown);
		const bpe = countTokens(json);
		console.log(`execute_code: definition as the model sees it ${json.length} chars (~${Math.round(json.length / 4)}), ${bpe} o200k tokens`);
		assert.ok(json.length / 4 <= 150, `~${json.length / 4} tokens by chars/4`);
		assert.ok(bpe <= 150, `${bpe} o200k tokens`);
	});

	const program = `interface Repo { full_name: string; stars?: number; owner?: { login: string } }
enum Kind { Small = 1, Large = 10 }
type Sum = { result?: number } | string;
function pick<T, K extends keyof T>(xs: T[], k: K): T[K][] { return xs.map((x) => x[k]); }
const repos = (await tools.catalog.list_repos({ owner: "acme" })) as Repo[];
const first: Repo = repos[0]!;
const cfg = { limit: 2 } satisfies { limit: number };
const sum = (await tools.everything.get_sum({ a: 2, b: 3 })) as unknown as Sum;
const missing = (repos as Repo[])[99]?.owner?.login ?? "none";
class Box<T> { constructor(private readonly v: T) {} get(): T { return this.v; } }
return { names: pick<Repo, "full_name">(repos, "full_name").slice(0, cfg.limit), first: first.full_name,
  kind: Kind.Large + Kind.Small, kindName: Kind[Kind.Large], missing, box: new Box<number>(7).get(),
  sum: typeof sum === "string" ? sum : sum?.result ?? null };`;

	for (const language of [undefined, 'ts']) {
		test(`interfaces, generics, as, satisfies, enums, !, optional chaining on real tool results (language ${language ?? 'absent'})`, async () => {
			const r = await run(program, language);
			assert.equal(r.isError, false, r.text);
			const out = JSON.parse(r.text);
			assert.deepEqual(out.names, ['acme/api', 'acme/web']);
			assert.equal(out.first, 'acme/api');
			assert.equal(out.kind, 11);
			assert.equal(out.kindName, 'Large');
			assert.equal(out.missing, 'none');
			assert.equal(out.box, 7);
			// get_sum answers in text: "The sum of 2 and 3 is 5." (a string) or a structured {result}.
			assert.ok(out.sum === 5 || /\b5\b/.test(String(out.sum)), r.text);
		});
	}

	test('language "ts" runs plain JavaScript too; absent language runs JavaScript as before', async () => {
		assert.equal((await run('return [1, 2].map((x) => x * 2)', 'ts')).text, '[2,4]');
		assert.equal((await run('return 1', undefined)).text, '1');
		assert.equal((await run('return 1', 'js')).text, '1');
	});

	test('language "js" with TypeScript syntax fails as a syntax error that says to send "ts"', async () => {
		const r = await run('const n: number = 1;\nreturn n', 'js');
		assert.equal(r.kind, 'syntax', r.text);
		assert.match(r.text, /SyntaxError/);
		assert.match(r.text, /line 1\b/);
		assert.match(r.text, /TypeScript.*language "ts"/);
		// Genuinely broken JavaScript gets no such advice.
		const bad = await run('return (1 +;', 'js');
		assert.equal(bad.kind, 'syntax', bad.text);
		assert.doesNotMatch(bad.text, /TypeScript/);
	});

	test('an unknown language is refused before anything runs', async () => {
		const r = await run('return 1', 'python');
		assert.equal(r.isError, true);
		assert.match(r.text, /language "js".*"ts"/);
	});

	const broken = 'interface A { x: number }\nconst a: A = { x: 1 };\nconst b: number = a.x;\n// a comment\nconst c: = b;\nreturn c;';
	for (const language of [undefined, 'ts']) {
		test(`a TypeScript syntax error on line 5 says line 5 and its column (language ${language ?? 'absent'})`, async () => {
			const r = await run(broken, language);
			assert.equal(r.kind, 'syntax', r.text);
			assert.match(r.text, /SyntaxError: .*\(line 5, column 10\)/, r.text);
		});
	}

	test('a runtime error on line 5 of a TypeScript program says line 5 and the column in the TypeScript', async () => {
		const r = await run('type T = { deep?: { x: number } };\nconst t: T = {};\nconst n: number = 1;\n\nconst v: number = (t.deep as any).x;\nreturn v;');
		assert.equal(r.kind, 'error', r.text);
		// (t.deep as any).x: the engine points at `t`, column 20 of the TypeScript
		// (column 12 of the JavaScript it was stripped to).
		assert.match(r.text, /TypeError: .*\(line 5, column 20\)/, r.text);
		// The same program in JavaScript and in TypeScript: the position the engine
		// gives in the JavaScript, moved right by the 8 characters of `<number>`.
		const js = await run('const x = 1;\nfunction f(v) {\n  return v;\n}\nthrow new Error(`boom ${f(x)}`);', 'js');
		const ts = await run('const x: number = 1;\nfunction f<T>(v: T): T {\n  return v;\n}\nthrow new Error(`boom ${f<number>(x)}`);', 'ts');
		const at = (t) => /Error: boom 1 \(line (\d+), column (\d+)\)/.exec(t)?.slice(1).map(Number);
		assert.ok(at(js.text), js.text);
		assert.deepEqual(at(ts.text), [5, at(js.text)[1] + 8], ts.text);
	});

	test('a tool error caught in TypeScript with a typed catch', async () => {
		const r = await run(
			'try { await tools.rpc.boom({}); return "no"; } catch (e: unknown) { return (e as Error).message; }',
		);
		assert.equal(r.isError, false, r.text);
		assert.match(r.text, /upstream exploded/);
	});

	test('cost: p50 of return 1 in JavaScript against a small TypeScript program', async () => {
		const ts = 'interface P { n: number }\nconst p: P = { n: 1 };\nfunction id<T>(x: T): T { return x; }\nreturn id<number>(p.n as number);';
		const N = 25;
		const p50 = async (src, language) => {
			const ms = [];
			for (let i = 0; i < N; i++) {
				const r = await run(src, language);
				assert.equal(r.text, '1', r.text);
				ms.push(r.ms);
			}
			ms.sort((a, b) => a - b);
			return ms[Math.floor(N / 2)];
		};
		await p50('return 1'); // warm-up
		const js = await p50('return 1');
		const explicit = await p50(ts, 'ts');
		const auto = await p50(ts);
		console.log(`execute_code p50 over ${N}: JS return 1 ${js.toFixed(2)} ms; small TS ${auto.toFixed(2)} ms (language absent), ${explicit.toFixed(2)} ms (language "ts")`);
		// The stripper is loaded in the zygote: a worker pays only the transform, a few
		// ms of CPU (docs/internals/SANDBOX.md). Both p50s stretch together on a loaded
		// machine (measured: 40 against 13 ms idle, 108 against 36 ms beside a build),
		// so the bound is relative: it catches a gross regression (the stripper loaded
		// per program, a transform ten times slower), not noise.
		assert.ok(explicit < 4 * js + 30, `TS p50 ${explicit} ms vs JS ${js} ms`);
	});
});
