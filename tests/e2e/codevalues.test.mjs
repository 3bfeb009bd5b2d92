// Code mode's worker against the program's own code and data: tool calls made
// from inside the serialisation of another call's arguments (getters, toJSON,
// Proxy traps), and strings a program computes on exactly (U+0000 kept, lone
// surrogates turned into U+FFFD, console cut on a character boundary).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { connect, catalog, closeAll, eventually, execCode, tinyServer } from './helpers.mjs';

after(closeAll);

const LIMITS = { timeoutMs: 5000, maxCalls: 32, maxInFlight: 4, maxConsoleBytes: 256 };

// A server whose tool answers with the text it is given: as a text block
// (kind "text"), as an isError text (kind "error") or as a JSON-RPC error
// message (kind "rpc").
const textServer = () =>
	tinyServer({
		name: 'texts',
		tools: `[{ name: 'say', description: 'Answers with the given text.', inputSchema: { type: 'object' } }]`,
		call: `(params, ok, fail) => {
			const { kind, text } = params.arguments;
			if (kind === 'rpc') fail(-32000, text);
			else ok({ content: [{ type: 'text', text }], isError: kind === 'error' });
		}`,
	});

let gw;

before(async () => {
	gw = await connect({
		servers: { catalog: catalog('github'), texts: textServer() },
		sluice: { exposure: 'code', codeMode: LIMITS },
	});
	await eventually(
		async () => (await execCode(gw.client, 'return (await tools.catalog.echo({})).arguments + await tools.texts.say({text: "!"})')).text === '[object Object]!',
		15000,
		100,
		'the servers',
	);
});

// ---- tool calls made while another call's arguments are serialised --------------------

describe('reentrant tool calls', { concurrency: true }, () => {
	test('calls nested in toJSON each get their own slot and the right result', async () => {
		const r = await execCode(
			gw.client,
			`const ps = [];
			 const arg = (n) => ({ toJSON() { if (n > 0) ps.push(tools.catalog.echo(arg(n - 1))); return { n }; } });
			 ps.push(tools.catalog.echo(arg(5)));
			 return (await Promise.all(ps)).map((r) => r.arguments.n);`,
		);
		assert.equal(r.isError, false, r.text);
		assert.deepEqual(JSON.parse(r.text), [0, 1, 2, 3, 4, 5]);
	});

	test('40 calls nested in getters end the program with kind calls, not a crash', async () => {
		const r = await execCode(
			gw.client,
			`const arg = (n) => ({ get x() { if (n > 0) tools.catalog.echo(arg(n - 1)).catch(() => {}); return n; } });
			 await tools.catalog.echo(arg(40));
			 return 'survived';`,
		);
		assert.equal(r.kind, 'calls', r.text);
		assert.match(r.text, /more than 32 tool calls/);
	});

	test('40 calls nested in Proxy traps end the program with kind calls, not a crash', async () => {
		const r = await execCode(
			gw.client,
			`const arg = (n) => new Proxy({ n }, { ownKeys(t) { if (n > 0) tools.catalog.echo(arg(n - 1)).catch(() => {}); return Reflect.ownKeys(t); } });
			 await tools.catalog.echo(arg(40));
			 return 'survived';`,
		);
		assert.equal(r.kind, 'calls', r.text);
	});

	test('the same gateway runs the next program', async () => {
		const r = await execCode(gw.client, 'return (await tools.catalog.echo({ok: 1})).arguments.ok');
		assert.equal(r.text, '1');
	});
});

// ---- U+0000: kept on every path between a tool, the program and the model -------------------------

describe('NUL', { concurrency: true }, () => {
	// The program reports each string as its code units, so that a cut shows.
	const units = 'const u = (s) => [...s].map((c) => c.charCodeAt(0));';

	test('a text result, an isError text and a JSON-RPC error message reach the program whole', async () => {
		const r = await execCode(
			gw.client,
			`${units}
			 const text = await tools.texts.say({ text: 'a\\u0000b' });
			 const json = await tools.texts.say({ text: '[1]\\u0000' });
			 let error, rpc;
			 try { await tools.texts.say({ kind: 'error', text: 'c\\u0000d' }); } catch (e) { error = e.message; }
			 try { await tools.texts.say({ kind: 'rpc', text: 'e\\u0000f' }); } catch (e) { rpc = e.message; }
			 return { text: u(text), json: u(json), error: u(error), rpc: u(rpc.slice(-3)) };`,
		);
		assert.equal(r.isError, false, r.text);
		assert.deepEqual(JSON.parse(r.text), {
			text: [97, 0, 98],
			json: [91, 49, 93, 0],
			error: [99, 0, 100],
			rpc: [101, 0, 102],
		});
	});

	test('a return value, console output and an error message reach the model whole', async () => {
		const ok = await execCode(gw.client, 'console.log("c\\u0000d"); return "a\\u0000b"');
		assert.equal(ok.isError, false, ok.text);
		assert.equal(ok.text, 'a\u0000b\n\n[console]\nc\u0000d\n');
		const obj = await execCode(gw.client, 'return { s: "a\\u0000b" }');
		assert.deepEqual(JSON.parse(obj.text), { s: 'a\u0000b' });
		const thrown = await execCode(gw.client, 'console.log("x\\u0000y"); throw new Error("e\\u0000f")');
		assert.equal(thrown.kind, 'error', thrown.text);
		assert.match(thrown.text, /^error: Error: e\u0000f \(line 1, column \d+\)\n\n\[console\]\nx\u0000y\n$/);
	});
});

// ---- UTF-8: what the engine cannot encode becomes U+FFFD, never a killed worker -------------------

describe('UTF-8', { concurrency: true }, () => {
	test('console output cut at its limit ends on a character boundary', async () => {
		const r = await execCode(gw.client, 'console.log("é".repeat(300)); return "done"');
		assert.equal(r.isError, false, r.text);
		const [value, con] = r.text.split('\n\n[console]\n');
		assert.equal(value, 'done');
		assert.match(con, /^é+\n\[console output cut at its limit\]$/);
		assert.ok(Buffer.byteLength(con) <= LIMITS.maxConsoleBytes + 40, con);
	});

	test('a lone surrogate in a return value, console output or an error becomes U+FFFD; pairs stay', async () => {
		const s = await execCode(gw.client, 'console.log("c\\udc00d 😀"); return "a\\ud800b 😀"');
		assert.equal(s.isError, false, s.text);
		assert.equal(s.text, 'a\ufffdb 😀\n\n[console]\nc\ufffdd 😀\n');
		const o = await execCode(gw.client, 'return { "k\\ud800": ["\\udfff", "😀", "\\\\ud800"] }');
		assert.equal(o.isError, false, o.text);
		assert.deepEqual(JSON.parse(o.text), { 'k\ufffd': ['\ufffd', '😀', '\\ud800'] });
		const e = await execCode(gw.client, 'throw new Error("bad \\ud800")');
		assert.equal(e.kind, 'error', e.text);
		assert.match(e.text, /^error: Error: bad \ufffd/);
	});

	test('a lone surrogate in a tool call\'s arguments becomes U+FFFD', async () => {
		const r = await execCode(gw.client, 'return (await tools.catalog.echo({ "k\\udbff": "a\\udc00b", pair: "😀" })).arguments');
		assert.equal(r.isError, false, r.text);
		assert.deepEqual(JSON.parse(r.text), { 'k\ufffd': 'a\ufffdb', pair: '😀' });
	});
});
