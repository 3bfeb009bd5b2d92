// Code mode end to end: execute_code's definition, results, names, arguments,
// errors, every limit, progress, cancellation and the top-3 task, through the
// official SDK client.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

import {
	connect,
	catalog,
	everything,
	closeAll,
	toolsWhen,
	eventually,
	execCode,
	runSluice,
	writeConfig,
	textOf,
	CATALOG,
	tinyServer,
} from './helpers.mjs';

after(closeAll);

// A tiny MCP server whose only tool answers every call with a JSON-RPC error.
const rpcErrorServer = () =>
	tinyServer({
		name: 'rpcerr',
		tools: `[{ name: 'boom', description: 'Answers with a JSON-RPC error.', inputSchema: { type: 'object' } }]`,
		call: `(params, ok, fail) => fail(-32603, 'upstream exploded')`,
	});

// Small limits, so every limit test is fast.
const LIMITS = {
	timeoutMs: 1500,
	cpuMs: 1000,
	heapBytes: 32 << 20,
	maxOutputBytes: 4096,
	maxConsoleBytes: 256,
	maxSourceBytes: 2048,
	maxArgsBytes: 8192,
	maxCalls: 32,
	maxResultBytes: 65536,
};

let code; // exposure "code": catalog (github back end), git-hub, everything, rpc
let pass; // passthrough + codeMode.enabled (cpuMs 1000): github (--large-results), catalog (jira)
let passTools;

before(async () => {
	[code, pass] = await Promise.all([
		connect({
			servers: {
				catalog: catalog('github'),
				'git-hub': catalog('github'),
				everything: everything(),
				rpc: rpcErrorServer(),
			},
			sluice: { exposure: 'code', codeMode: LIMITS },
		}),
		connect({
			servers: {
				github: { command: CATALOG, args: ['--backend', 'github', '--large-results'] },
				catalog: catalog('jira'),
			},
			sluice: { exposure: 'passthrough', codeMode: { enabled: true, timeoutMs: 20000, cpuMs: 1000 } },
		}),
	]);
	// Upstreams come up asynchronously: wait until every one answers from a program.
	await eventually(
		async () => {
			const r = await execCode(
				code.client,
				`await tools.everything.get_sum({a: 0, b: 0}); await tools.git_hub.echo({}); await tools.catalog.echo({});
				 try { await tools.rpc.boom({}); } catch (e) { if (/has no tool/.test(e.message)) throw e; }
				 return 'ready';`,
			);
			return r.text === 'ready';
		},
		15000,
		200,
		'every upstream of the code-mode gateway',
	);
	passTools = await toolsWhen(pass.client, (t) =>
		['github__list_issues', 'catalog__echo', 'execute_code'].every((n) => t.some((x) => x.name === n)),
	);
});
after(() => Promise.all([code?.close(), pass?.close()]));

// ---- 1. the definition -------------------------------------------------------------------

describe('execute_code definition', () => {
	test('code mode lists exactly search_tools, describe_tools, execute_code, save_skill and read_result', async () => {
		const { tools } = await code.client.listTools();
		assert.deepEqual(tools.map((t) => t.name).sort(), ['describe_tools', 'execute_code', 'read_result', 'save_skill', 'search_tools']);
	});

	test('annotated destructive and open-world, names the servers as identifiers, at most 150 tokens whole', async () => {
		const { tools } = await code.client.listTools();
		const def = tools.find((t) => t.name === 'execute_code');
		assert.equal(def.annotations?.destructiveHint, true);
		assert.equal(def.annotations?.openWorldHint, true);
		assert.equal(def.inputSchema?.type, 'object');
		assert.deepEqual(def.inputSchema.required, ['code']);
		assert.equal(def.inputSchema.properties.code.type, 'string');
		for (const ident of ['catalog', 'git_hub', 'everything', 'rpc'])
			assert.match(def.description, new RegExp(`\\b${ident}\\b`), `description names ${ident}`);
		assert.doesNotMatch(def.description, /git-hub/, 'the raw hyphenated name is not what a program uses');
		// The whole definition, as it enters every session's context, counted both ways
		// the benchmarks count (docs/BENCHMARKS.md): chars / 4 and the o200k_base BPE.
		// _meta is the client's, never the model's (its anthropic/alwaysLoad mark).
		assert.equal(def._meta?.['anthropic/alwaysLoad'], true);
		const { _meta, ...shown } = def;
		const json = JSON.stringify(shown);
		const defTokens = json.length / 4;
		const bpe = countTokens(json);
		console.log(`execute_code: whole definition ${json.length} chars (~${Math.round(defTokens)} tokens), ${bpe} o200k tokens`);
		assert.ok(defTokens <= 150, `definition ~${defTokens} tokens by chars/4`);
		assert.ok(bpe <= 150, `definition ${bpe} o200k tokens`);
	});

	test('passthrough with codeMode.enabled lists execute_code beside server__tool tools', () => {
		const names = passTools.map((t) => t.name);
		assert.ok(names.includes('execute_code'));
		assert.ok(names.includes('github__list_issues'));
		assert.ok(names.includes('catalog__echo'));
		assert.ok(!names.includes('search_tools'), 'no router tools in passthrough');
		const def = passTools.find((t) => t.name === 'execute_code');
		assert.equal(def.annotations?.destructiveHint, true);
		assert.match(def.description, /\bgithub\b/);
	});
});

// ---- 2. results and console --------------------------------------------------------------

describe('results', { concurrency: true }, () => {
	test('return 1 + 1 gives "2"', async () => {
		const r = await execCode(code.client, 'return 1 + 1');
		assert.equal(r.isError, false, r.text);
		assert.equal(r.text, '2');
		assert.equal(r.result.content.length, 1);
		assert.equal(r.result.content[0].type, 'text');
	});

	test('a string is returned as is, an object as JSON, undefined as "undefined"', async () => {
		const [s, o, u] = await Promise.all([
			execCode(code.client, 'return "plain \\"text\\"\\nline 2"'),
			execCode(code.client, 'return {a: [1, "two", null], b: {c: true}}'),
			execCode(code.client, 'const x = 1;'),
		]);
		assert.equal(s.text, 'plain "text"\nline 2');
		assert.deepEqual(JSON.parse(o.text), { a: [1, 'two', null], b: { c: true } });
		assert.equal(u.isError, false, u.text);
		assert.equal(u.text, 'undefined (the program returned nothing: end it with `return <value>`)');
	});

	test('console.log/info/warn/error appear under [console]', async () => {
		const r = await execCode(
			code.client,
			'console.log("log", 1, {a: 1}); console.info("info"); console.warn("careful"); console.error("bad"); return "ok"',
		);
		assert.equal(r.isError, false, r.text);
		const [value, con] = r.text.split('\n\n[console]\n');
		assert.equal(value, 'ok');
		assert.ok(con, r.text);
		assert.match(con, /^log 1 \{"a":1\}$/m);
		assert.match(con, /^info$/m);
		assert.match(con, /^warn: careful$/m);
		assert.match(con, /^error: bad$/m);
	});

	test('no console output, no [console] section', async () => {
		const r = await execCode(code.client, 'return "quiet"');
		assert.equal(r.text, 'quiet');
	});

	test('console output is capped at maxConsoleBytes with a marker', async () => {
		const r = await execCode(
			code.client,
			'for (let i = 0; i < 1000; i++) console.log("line " + i + " " + "x".repeat(40)); return "done"',
		);
		assert.equal(r.isError, false, r.text);
		const [value, con] = r.text.split('\n\n[console]\n');
		assert.equal(value, 'done');
		assert.match(con, /^line 0 x+$/m);
		assert.match(con, /cut/i, 'a marker says the output was cut');
		assert.ok(con.length <= LIMITS.maxConsoleBytes + 100, `console section is ${con.length} chars`);
		assert.doesNotMatch(con, /line 999/);
	});

	test('console output is kept on failure too', async () => {
		const r = await execCode(code.client, 'console.log("before"); throw new Error("after")');
		assert.equal(r.kind, 'error');
		assert.match(r.text, /^error: Error: after/);
		assert.match(r.text, /\[console\]\nbefore/);
	});
});

// ---- 3. names ----------------------------------------------------------------------------------

describe('server and tool names', { concurrency: true }, () => {
	test('a hyphenated server is callable as tools.git_hub and tools["git-hub"]', async () => {
		const r = await execCode(
			code.client,
			'return [await tools.git_hub.echo({via: "ident"}), await tools["git-hub"]["echo"]({via: "raw"})]',
		);
		assert.equal(r.isError, false, r.text);
		assert.deepEqual(JSON.parse(r.text), [{ arguments: { via: 'ident' } }, { arguments: { via: 'raw' } }]);
	});

	test('Object.keys(tools) lists the servers as identifiers', async () => {
		const r = await execCode(code.client, 'return Object.keys(tools)');
		assert.deepEqual(JSON.parse(r.text).sort(), ['catalog', 'everything', 'git_hub', 'rpc']);
	});

	test('"get-sum" works as tools.everything["get-sum"] and tools.everything.get_sum', async () => {
		const r = await execCode(
			code.client,
			'return [await tools.everything["get-sum"]({a: 1, b: 2}), await tools.everything.get_sum({a: 20, b: 22})]',
		);
		assert.equal(r.isError, false, r.text);
		const [raw, ident] = JSON.parse(r.text);
		assert.match(raw, /\b3\b/);
		assert.match(ident, /\b42\b/);
	});

	test('.then on a namespace is not a tool call; awaiting tools is harmless', async () => {
		const r = await execCode(
			code.client,
			'const ns = await tools.catalog; const t = await tools; return [typeof tools.catalog.then, typeof ns, t === tools]',
		);
		assert.equal(r.isError, false, r.text);
		assert.deepEqual(JSON.parse(r.text), ['undefined', 'object', true]);
	});

	test('Object.keys(tools.<server>) lists the tools a program may call there', async () => {
		const r = await execCode(
			code.client,
			`const k = Object.keys(tools.git_hub);
			 return { n: k.length, echo: k.includes('echo'), issues: k.includes('list_issues'), same: Object.keys(tools['git-hub']).length,
			          sum: Object.keys(tools.everything).includes('get_sum'), first: await tools.git_hub[k.find((x) => x === 'echo')]({ a: 1 }),
			          entries: Object.entries(tools.catalog).every(([, f]) => typeof f === 'function') };`,
		);
		assert.equal(r.isError, false, r.text);
		const v = JSON.parse(r.text);
		const dts = textOf(await code.client.callTool({ name: 'describe_tools', arguments: { server: 'git-hub' } }));
		assert.equal(v.n, Number(/^\/\/ (\d+) tools? of server/.exec(dts)[1]));
		assert.deepEqual(v, { n: v.n, echo: true, issues: true, same: v.n, sum: true, first: { arguments: { a: 1 } }, entries: true });
	});

	test('an unknown server is undefined', async () => {
		const r = await execCode(code.client, 'return [typeof tools.nope, "nope" in tools, "git-hub" in tools]');
		assert.deepEqual(JSON.parse(r.text), ['undefined', false, true]);
	});

	for (const cmd of ['check', 'serve']) {
		test(`two servers that sanitise alike: sluice ${cmd} exits non-zero naming both`, async () => {
			const cfg = writeConfig({ 'a-b': catalog('github'), a_b: catalog('jira') }, { exposure: 'code' });
			const r = await runSluice([cmd, '--config', cfg], 10000);
			assert.equal(typeof r.code, 'number', `exited by itself (got ${r.code})`);
			assert.notEqual(r.code, 0);
			assert.match(r.stderr, /a-b/);
			assert.match(r.stderr, /a_b/);
		});
	}
});

// ---- 4. arguments and results of calls -----------------------------------------------------------

describe('tool calls from a program', { concurrency: true }, () => {
	test('arguments reach the upstream exactly; echo resolves to its structuredContent', async () => {
		const args = {
			nested: { deep: { deeper: [{ x: 1 }, [], {}, [null, true, false]] } },
			unicode: 'é ü 漢字 😀 \u2028 "quoted" \\ back',
			control: 'tab\tnl\ncr\r nul\u0000 end',
			numbers: [0, -1, 1.5, 3.141592653589793, 1e300, -2.5e-300, 9007199254740991, 123456789012],
			empty: '',
		};
		const r = await execCode(
			code.client,
			`const r = await tools.catalog.echo(${JSON.stringify(args)}); return {keys: Object.keys(r), r};`,
		);
		assert.equal(r.isError, false, r.text);
		const out = JSON.parse(r.text);
		assert.deepEqual(out.keys, ['arguments'], 'structuredContent, not the text');
		assert.deepEqual(out.r.arguments, args);
	});

	test('a JSON text result resolves to the parsed value (list_repos)', async () => {
		const r = await execCode(
			code.client,
			'const repos = await tools.catalog.list_repos({owner: "acme"}); return [Array.isArray(repos), repos.map((x) => x.full_name)]',
		);
		assert.equal(r.isError, false, r.text);
		const [isArray, names] = JSON.parse(r.text);
		assert.equal(isArray, true);
		assert.deepEqual(names, ['acme/api', 'acme/web', 'acme/infra', 'acme/mobile', 'acme/docs']);
	});

	test('plain text stays a string', async () => {
		const r = await execCode(code.client, 'const t = await tools.catalog.slow({ms: 1}); return [typeof t, t]');
		assert.deepEqual(JSON.parse(r.text), ['string', 'slept 1 ms']);
	});

	test('an image comes as a {type, mimeType, data} object', async () => {
		const r = await execCode(
			code.client,
			`const r = await tools.everything["get-tiny-image"]({});
			 const blocks = Array.isArray(r) ? r : [r];
			 return blocks.filter((b) => typeof b === 'object' && b && b.type === 'image')
			   .map((b) => [b.type, b.mimeType, typeof b.data, b.data.length > 0]);`,
		);
		assert.equal(r.isError, false, r.text);
		const images = JSON.parse(r.text);
		assert.ok(images.length >= 1, r.text);
		assert.deepEqual(images[0], ['image', 'image/png', 'string', true]);
	});
});

// ---- 5. errors -----------------------------------------------------------------------------------

describe('errors', { concurrency: true }, () => {
	test('a tool isError rejects with an Error carrying the tool text; the program catches it', async () => {
		const r = await execCode(
			code.client,
			`try { await tools.catalog.fail({message: "disk on fire"}); return "not rejected"; }
			 catch (e) { return {isError: e instanceof Error, message: e.message, next: await tools.catalog.echo({n: 1})}; }`,
		);
		assert.equal(r.isError, false, r.text);
		assert.deepEqual(JSON.parse(r.text), { isError: true, message: 'disk on fire', next: { arguments: { n: 1 } } });
	});

	test('an unknown tool rejects ("has no tool")', async () => {
		const r = await execCode(code.client, 'try { await tools.catalog.no_such_tool({}); } catch (e) { return e.message; }');
		assert.equal(r.isError, false, r.text);
		assert.match(r.text, /has no tool/);
		assert.match(r.text, /no_such_tool/);
	});

	test('an unknown tool close to a known one: "did you mean" names it', async () => {
		const r = await execCode(code.client, 'try { await tools.catalog.list_isues({}); } catch (e) { return e.message; }');
		assert.equal(r.isError, false, r.text);
		assert.equal(r.text, "server 'catalog' has no tool 'list_isues'; did you mean 'list_issues'?");
		const far = await execCode(code.client, 'try { await tools.catalog.no_such_tool({}); } catch (e) { return e.message; }');
		assert.equal(far.text, "server 'catalog' has no tool 'no_such_tool'");
	});

	test('an upstream JSON-RPC error rejects with its code and message', async () => {
		const r = await execCode(code.client, 'try { await tools.rpc.boom({}); return "resolved"; } catch (e) { return e.message; }');
		assert.equal(r.isError, false, r.text);
		assert.match(r.text, /-32603/);
		assert.match(r.text, /upstream exploded/);
	});

	test('an uncaught throw gives "error: Error: ... (line L, column C)" with the right line', async () => {
		const r = await execCode(code.client, 'const a = 1;\nconst b = 2;\n\nthrow new Error("on line four");');
		assert.equal(r.isError, true);
		assert.equal(r.kind, 'error');
		assert.match(r.text, /^error: Error: on line four \(line 4, column \d+\)/);
	});

	test('an uncaught tool rejection fails the program with the tool, where it was called, and the tool text', async () => {
		const r = await execCode(code.client, 'await tools.catalog.fail({message: "nope"});');
		assert.equal(r.kind, 'error');
		assert.equal(r.text, 'error: Error: tools.catalog.fail failed (line 1, column 7): nope');
	});

	test('a syntax error gives kind syntax with a line', async () => {
		const r = await execCode(code.client, 'const ok = 1;\nconst x = ;\nreturn x');
		assert.equal(r.isError, true);
		assert.equal(r.kind, 'syntax');
		assert.match(r.text, /^syntax: SyntaxError: .*\(line 2, column \d+\)/);
	});

	test('a syntax error on the first line counts columns from the program, not the wrapper', async () => {
		const r = await execCode(code.client, 'const x = ;');
		assert.equal(r.kind, 'syntax');
		assert.match(r.text, /\(line 1, column 11\)/);
	});

	test('a program that ends early is told so, at its own last line, not the wrapper\'s', async () => {
		for (const [src, pos] of [['return (1 +\n  2', 'line 2, column 4'], ['if (true) {\n  return 1;', 'line 2, column 12'], ['return 1;\n}', 'line 2, column 2']]) {
			const r = await execCode(code.client, src);
			assert.equal(r.kind, 'syntax', src);
			assert.match(r.text, /the program ends too early/, src);
			assert.ok(r.text.includes(`(at the end of the program: ${pos})`), `${src}: ${r.text}`);
			assert.doesNotMatch(r.text, /line 3/, src);
		}
	});

	test('tools.nosuch.x() fails naming the servers there are', async () => {
		for (const src of ['await tools.nosuch.x({});', 'const t = tools["no-such"];\nawait t.x();']) {
			const r = await execCode(code.client, src);
			assert.equal(r.kind, 'error', src);
			assert.match(r.text, /^error: TypeError: .*\(line \d+, column \d+\): there is no server '(nosuch|no-such)' in tools: the servers are [a-z_, ]*\bcatalog\b/, r.text);
		}
		// A TypeError of the program's own names no server.
		const own = await execCode(code.client, 'const o = undefined; return o.x;');
		assert.doesNotMatch(own.text, /there is no server/);
		// JSON.stringify(tools) lists the servers; toJSON is never a tool.
		const j = await execCode(code.client, 'return JSON.stringify(tools)');
		assert.equal(j.isError, false, j.text);
		assert.ok('catalog' in JSON.parse(j.text), j.text);
	});

	test('a result over maxResultBytes rejects with too_large; the program catches it and goes on', async () => {
		const r = await execCode(
			code.client,
			`let msg = "resolved";
			 try { await tools.catalog.huge({bytes: ${LIMITS.maxResultBytes * 2}}); } catch (e) { msg = e.message; }
			 const small = await tools.catalog.huge({bytes: 100});
			 return {msg, small: small.length};`,
		);
		assert.equal(r.isError, false, r.text);
		const out = JSON.parse(r.text);
		assert.match(out.msg, /too_large/);
		assert.equal(out.small, 100);
	});

	test('arguments over maxArgsBytes throw, and the program can catch it', async () => {
		const r = await execCode(
			code.client,
			`try { await tools.catalog.echo({s: "x".repeat(${LIMITS.maxArgsBytes * 2})}); return "sent"; }
			 catch (e) { return e.message + " | " + (await tools.catalog.echo({s: "small"})).arguments.s; }`,
		);
		assert.equal(r.isError, false, r.text);
		assert.match(r.text, /over the limit/);
		assert.match(r.text, /\| small$/);
	});

	test('arguments that are not an object are refused', async () => {
		const r = await execCode(code.client, 'try { await tools.catalog.echo([1, 2]); } catch (e) { return e.message; }');
		assert.match(r.text, /object/);
	});

	test('a program cannot call execute_code', async () => {
		const r = await execCode(
			code.client,
			`const out = [];
			 for (const s of Object.keys(tools))
			   try { await tools[s].execute_code({code: "return 1"}); out.push(s + ": resolved"); }
			   catch (e) { out.push(s + ": rejected"); }
			 return out;`,
		);
		assert.equal(r.isError, false, r.text);
		for (const line of JSON.parse(r.text)) assert.match(line, /: rejected$/);
	});
});

// ---- 6. limits -------------------------------------------------------------------------------------

// One at a time: the CPU and wall-clock limits must not race each other on 2 cores.
describe('limits', () => {
	test('timeout: awaiting a slow call past timeoutMs', async () => {
		const r = await execCode(code.client, 'await tools.catalog.slow({ms: 5000}); return "late"');
		assert.equal(r.kind, 'timeout', r.text);
		assert.ok(r.ms < 2600, `answered after ${r.ms} ms (timeoutMs ${LIMITS.timeoutMs})`);
		assert.ok(r.ms >= LIMITS.timeoutMs - 100, `not before the limit (${r.ms} ms)`);
	});

	test('cpu: for(;;){} with cpuMs 1000', async () => {
		// On the passthrough gateway: cpuMs 1000 with a wall clock far away, so
		// a busy machine cannot turn the CPU limit into a timeout.
		const r = await execCode(pass.client, 'for (;;) {}');
		assert.equal(r.kind, 'cpu', r.text);
		assert.ok(r.ms < 6000, `${r.ms} ms`);
	});

	test('memory: growing arrays past heapBytes', async () => {
		const r = await execCode(code.client, 'const a = []; for (;;) a.push(new Array(100000).fill(1.5));');
		assert.equal(r.kind, 'memory', r.text);
	});

	test('output: a return value over maxOutputBytes', async () => {
		const r = await execCode(code.client, `return "y".repeat(${LIMITS.maxOutputBytes + 1})`);
		assert.equal(r.kind, 'output', r.text);
		assert.ok(r.text.length < 1000, 'the value itself is not returned');
		const ok = await execCode(code.client, `return "y".repeat(${LIMITS.maxOutputBytes - 10})`);
		assert.equal(ok.isError, false, ok.text.slice(0, 200));
	});

	test('calls: 40 awaited calls with maxCalls 32', async () => {
		const r = await execCode(
			code.client,
			'let n = 0; for (let i = 0; i < 40; i++) { await tools.catalog.echo({i}); n++; } return n',
		);
		assert.equal(r.kind, 'calls', r.text);
		assert.match(r.text, /32/);
		const ok = await execCode(
			code.client,
			`let n = 0; for (let i = 0; i < ${LIMITS.maxCalls}; i++) { await tools.catalog.echo({i}); n++; } return n`,
		);
		assert.equal(ok.text, String(LIMITS.maxCalls));
	});

	test('source: a program over maxSourceBytes is refused as too large', async () => {
		const src = `return 1;${' '.repeat(LIMITS.maxSourceBytes)}`;
		const r = await execCode(code.client, src);
		assert.equal(r.isError, true);
		assert.match(r.text, /program/i);
		assert.match(r.text, /too large|over the limit/i);
	});

	test('stack: deep recursion is an error mentioning the stack, not a crash', async () => {
		const r = await execCode(code.client, 'function f(n) { return f(n + 1) + 1; } return f(0);');
		assert.equal(r.isError, true);
		assert.notEqual(r.kind, 'crash', r.text);
		assert.match(r.text, /stack/i);
	});
});

// ---- 7. progress -----------------------------------------------------------------------------------

test('progress: 3 tool calls give 3 progress notifications before the result', async () => {
	const seen = [];
	const before = pass.wire.length;
	// The busy wait after the last call keeps the response out of the chunk of
	// the last notification: SDK 1.x drops a progress that arrives together
	// with its response (see the catalog's progress tool).
	const r = await execCode(
		pass.client,
		`await tools.catalog.echo({i: 1}); await tools.catalog.echo({i: 2}); await tools.github.echo({i: 3});
		 const t = Date.now(); while (Date.now() - t < 50) {}
		 return "three"`,
		{ onprogress: (p) => seen.push(p) },
	);
	assert.equal(r.text, 'three');
	assert.equal(seen.length, 3, JSON.stringify(seen));
	assert.deepEqual(
		seen.map((p) => p.progress),
		[1, 2, 3],
	);
	// On the wire, too: every notification came before the response.
	const msgs = pass.wire.slice(before);
	const resp = msgs.findIndex((m) => 'result' in m && textOf(m.result) === 'three');
	const progress = msgs.filter((m, i) => m.method === 'notifications/progress' && i < resp);
	assert.equal(progress.length, 3);
	assert.match(progress[2].params.message ?? '', /github\.echo/);
});

// ---- 8. cancellation -------------------------------------------------------------------------------

test('cancellation: an aborted execute_code is killed and the gateway goes on', async () => {
	const ac = new AbortController();
	const t0 = Date.now();
	setTimeout(() => ac.abort('test'), 300);
	await assert.rejects(execCode(pass.client, 'await tools.catalog.slow({ms: 10000}); return "late"', { signal: ac.signal }));
	assert.ok(Date.now() - t0 < 2000);
	// The program's call is cancelled upstream too (the catalog logs it on stderr).
	await eventually(() => /\[catalog\].*cancelled request/.test(pass.stderr()), 3000, 50, 'the upstream call to be cancelled');
	await pass.client.ping();
	const r = await execCode(pass.client, 'return 1 + 1');
	assert.equal(r.text, '2');
	assert.ok(r.ms < 1000, `next program answered in ${r.ms} ms`);
	// The cancelled request is never answered.
	const late = await new Promise((res) => setTimeout(() => res(pass.wire.filter((m) => textOf(m.result) === 'late')), 300));
	assert.equal(late.length, 0);
});

// ---- 9. the top-3 task -----------------------------------------------------------------------------

test('top 3 issues by comments across 5 repositories: code mode equals the plain calls', async () => {
	const program = `
		const repos = await tools.github.list_repos({owner: "acme"});
		const lists = await Promise.all(repos.map((r) => tools.github.list_issues({owner: "acme", repo: r.name})));
		const all = lists.flatMap((issues, i) => issues.map((x) => ({repo: repos[i].name, number: x.number, title: x.title, comments: x.comments})));
		all.sort((a, b) => b.comments - a.comments || a.repo.localeCompare(b.repo) || a.number - b.number);
		return all.slice(0, 3);`;
	const r = await execCode(pass.client, program);
	assert.equal(r.isError, false, r.text);
	const fromCode = JSON.parse(r.text);

	// The same from plain calls, computed here. The governor (on, with its
	// default 4000-token budget) shortens each listing that enters the
	// context; the whole of it is read back with read_result.
	const repoRes = await pass.client.callTool({ name: 'github__list_repos', arguments: { owner: 'acme' } });
	const repos = JSON.parse(textOf(repoRes));
	assert.equal(repos.length, 5);
	let plainChars = textOf(repoRes).length;
	let governedChars = plainChars;
	const all = [];
	for (const repo of repos) {
		const res = await pass.client.callTool({ name: 'github__list_issues', arguments: { owner: 'acme', repo: repo.name } });
		assert.ok(!res.isError, textOf(res).slice(0, 200));
		const shown = res.content.map((b) => b.text ?? '').join('\n');
		governedChars += shown.length;
		const id = /read_result \{"result_id": "([^"]+)"\}/.exec(shown)?.[1];
		assert.ok(id, 'a 300-issue listing is shortened and names its result id');
		const whole = await pass.client.callTool({ name: 'read_result', arguments: { result_id: id, limit_tokens: 10000000 } });
		const text = textOf(whole);
		plainChars += text.length;
		const issues = JSON.parse(text);
		assert.equal(issues.length, 300, '--large-results: 300 issues per repository');
		for (const x of issues) all.push({ repo: repo.name, number: x.number, title: x.title, comments: x.comments });
	}
	all.sort((a, b) => b.comments - a.comments || a.repo.localeCompare(b.repo) || a.number - b.number);
	const expected = all.slice(0, 3);
	assert.ok(governedChars < plainChars / 10, `governed ${governedChars} of ${plainChars}`);
	console.log(
		`top-3 task: plain results ${plainChars} chars (~${Math.round(plainChars / 4)} tokens; ` +
			`${governedChars} chars after the governor), ` +
			`code-mode answer ${r.text.length} chars (~${Math.round(r.text.length / 4)} tokens), program ${r.ms} ms`,
	);
	assert.deepEqual(fromCode, expected);
	assert.equal(fromCode.length, 3);
	assert.ok(fromCode[0].comments >= fromCode[1].comments && fromCode[1].comments >= fromCode[2].comments);
});
