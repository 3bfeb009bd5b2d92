// x-mcp-header / Mcp-Param-* (MCP 2026-07-28 Streamable HTTP, SEP-2243)
// through sluice. Toward an HTTP upstream (tests/servers/params), a call
// mirrors the declared arguments into Mcp-Param-<Name> headers, encoded as
// the spec says; a tool whose declarations break the rules is left out.
// On sluice's HTTP face, a 2026-07-28 tools/call whose headers are missing
// or differ from its arguments is refused with 400 and -32020
// (HeaderMismatch); a prefixed tool keeps its declarations.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';

import { REPO, MODERN, closeAll, connect, startHttp, httpClient, httpRequest, modernMeta, toolsWhen, withTimeout, jsonOf, eventually } from './helpers.mjs';

const SERVER = path.join(REPO, 'tests', 'servers', 'params', 'server.mjs');
const procs = [];
after(async () => {
	for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
	await closeAll();
});

// The fixture: its URL once it prints "PORT n", and every HEADERS line it logs.
function startServer(...args) {
	const p = spawn(process.execPath, [SERVER, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
	procs.push(p);
	const logged = [];
	let out = '';
	const url = withTimeout(new Promise((resolve, reject) => {
		p.stdout.on('data', (d) => {
			out += d;
			const m = /PORT (\d+)/.exec(out);
			if (m) resolve(`http://127.0.0.1:${m[1]}/mcp`);
			for (const l of out.split('\n').slice(logged.length, -1)) logged.push(l.startsWith('HEADERS ') ? JSON.parse(l.slice(8)) : null);
		});
		p.on('exit', (c) => reject(new Error(`the params server exited ${c}`)));
	}), 15000, 'the params server to listen');
	return { url, logged: () => logged.filter(Boolean) };
}

// One raw 2026-07-28 tools/call to sluice's HTTP face (at endpoint, default /mcp).
function rawCall(gw, name, args, headers = {}, endpoint = '/mcp') {
	return httpRequest(
		{ host: '127.0.0.1', port: gw.port, path: endpoint, method: 'POST',
		  headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name, ...headers } },
		{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args, _meta: modernMeta() } },
		20000,
	);
}

let up, gw, sdk;

before(async () => {
	up = startServer();
	gw = await startHttp({ servers: { db: { type: 'http', url: await up.url } }, sluice: { audit: { enabled: false } } });
	sdk = await httpClient(gw.url);
	await toolsWhen(sdk.client, (t) => t.some((x) => x.name === 'db__query'));
});
after(() => sdk?.client.close());

describe('toward an HTTP upstream', () => {
	test('declared arguments are mirrored into Mcp-Param headers, encoded as the spec says', async () => {
		const r = await sdk.client.callTool({ name: 'db__query', arguments: { region: 'us-west1', where: { shard: 42 }, dry: false, sql: 'select 1' } });
		const got = jsonOf(r);
		assert.equal(got['mcp-param-region'], 'us-west1');
		assert.equal(got['mcp-param-shard'], '42');
		assert.equal(got['mcp-param-dry'], 'false');
		await eventually(() => JSON.stringify(up.logged().at(-1)) === JSON.stringify(got), 5000, 20, 'the server to log what it answered');
		// Not header-safe: base64 of the UTF-8, in the sentinel.
		for (const [region, enc] of [
			['Hello, 世界', '=?base64?SGVsbG8sIOS4lueVjA==?='],
			[' padded ', '=?base64?IHBhZGRlZCA=?='],
			['line1\nline2', '=?base64?bGluZTEKbGluZTI=?='],
			['line1\r\nX-Forged: 1', `=?base64?${Buffer.from('line1\r\nX-Forged: 1').toString('base64')}?=`],
			['=?base64?literal?=', '=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?='],
		]) {
			const h = jsonOf(await sdk.client.callTool({ name: 'db__query', arguments: { region, sql: 'x' } }));
			assert.equal(h['mcp-param-region'], enc, JSON.stringify(region));
			assert.equal(h['x-forged'], undefined);
			assert.equal(h['mcp-param-shard'], undefined, 'an absent argument has no header');
		}
	});

	test('a tool whose x-mcp-header breaks the rules is left out, with a warning', async () => {
		const tools = (await sdk.client.listTools()).tools;
		assert.ok(tools.some((t) => t.name === 'db__query'));
		assert.ok(!tools.some((t) => t.name === 'db__broken'));
		assert.match(gw.stderr(), /tool 'broken' left out: x-mcp-header 'Ratio' is on a property that is not a string, integer or boolean/);
	});

	test('toward a 2026-07-28 server too; a name outside ASCII goes as base64 in Mcp-Name', async () => {
		const modern = startServer('--modern');
		const g = await connect({ servers: { db: { type: 'http', url: await modern.url } }, sluice: { audit: { enabled: false } } });
		const tools = await toolsWhen(g.client, (t) => t.some((x) => x.name === 'db__query') && t.some((x) => x.description === 'A name outside ASCII'));
		let got = jsonOf(await g.client.callTool({ name: 'db__query', arguments: { region: 'eu', dry: true, sql: 'x' } }));
		assert.deepEqual(got, { 'mcp-method': 'tools/call', 'mcp-name': 'query', 'mcp-param-region': 'eu', 'mcp-param-dry': 'true' });
		const cafe = tools.find((x) => x.description === 'A name outside ASCII').name;
		got = jsonOf(await g.client.callTool({ name: cafe, arguments: {} }));
		assert.equal(got['mcp-name'], `=?base64?${Buffer.from('caf\u00e9').toString('base64')}?=`);
		await g.close();
	});

	test('the served listing keeps the declarations under the prefixed name', async () => {
		const q = (await sdk.client.listTools()).tools.find((t) => t.name === 'db__query');
		assert.equal(q.inputSchema.properties.region['x-mcp-header'], 'Region');
		assert.equal(q.inputSchema.properties.where.properties.shard['x-mcp-header'], 'Shard');
	});
});

describe("on sluice's HTTP face (2026-07-28)", () => {
	test('matching headers pass; plain and base64 values, integers compared as numbers', async () => {
		let r = await rawCall(gw, 'db__query', { region: 'eu', where: { shard: 7 }, sql: 'x' }, { 'mcp-param-region': 'eu', 'mcp-param-shard': '7.0' });
		assert.equal(r.status, 200, r.text);
		assert.equal(jsonOf(r.json.result)['mcp-param-region'], 'eu');
		r = await rawCall(gw, 'db__query', { region: 'Hello, 世界', sql: 'x' }, { 'mcp-param-region': '=?base64?SGVsbG8sIOS4lueVjA==?=' });
		assert.equal(r.status, 200, r.text);
	});

	test('a mismatching, missing or malformed header is 400 with -32020 HeaderMismatch', async () => {
		// A call that passes, and the count of calls the server logged once its line is in
		// (the server's lines arrive in the order it served them).
		const mark = async (tag) => {
			const r = await rawCall(gw, 'db__query', { region: tag, sql: 'x' }, { 'mcp-param-region': tag });
			assert.equal(r.status, 200, r.text);
			return eventually(() => {
				const l = up.logged();
				return l.some((h) => h['mcp-param-region'] === tag) ? l.length : null;
			}, 5000, 20, `the server to log ${tag}`);
		};
		const start = await mark('before-refusals');
		for (const [args, headers, what] of [
			[{ region: 'eu', sql: 'x' }, { 'mcp-param-region': 'us' }, 'does not match'],
			[{ region: 'eu', sql: 'x' }, {}, 'is missing'],
			[{ sql: 'x' }, { 'mcp-param-region': 'eu' }, 'without its argument'],
			[{ region: 'eu', sql: 'x' }, { 'mcp-param-region': '=?base64?not base64!?=' }, 'not valid base64'],
			[{ region: 'eu', where: { shard: 7 }, sql: 'x' }, { 'mcp-param-region': 'eu', 'mcp-param-shard': '8' }, 'Mcp-Param-Shard'],
		]) {
			const r = await rawCall(gw, 'db__query', args, headers);
			assert.equal(r.status, 400, `${JSON.stringify(headers)}: ${r.text}`);
			assert.equal(r.json?.error?.code, -32020);
			assert.match(r.json.error.message, new RegExp(what));
		}
		assert.equal(await mark('after-refusals'), start + 1, 'the server saw none of the refused calls');
	});

	test('a tool the caller is not shown answers as unknown, its declarations unrevealed', async () => {
		const hidden = await startHttp({
			servers: { db: { type: 'http', url: await up.url } },
			sluice: { audit: { enabled: false }, policy: { rules: [{ match: 'db.query', action: 'deny' }] } },
		});
		const c = await httpClient(hidden.url);
		await toolsWhen(c.client, (t) => t.length > 0 && !t.some((x) => x.name === 'db__query'));
		const r = await rawCall(hidden, 'db__query', { region: 'eu', sql: 'x' }, { 'mcp-param-region': 'us' });
		assert.notEqual(r.json?.error?.code, -32020, r.text);
		assert.match(r.text, /denied|unknown|not found/i, r.text); // the answer any call of it gets
		assert.doesNotMatch(r.text, /Mcp-Param/);
		await c.client.close();
	});

	test('a profile that renames the tool checks the same declarations under its new name', async () => {
		const renamed = await startHttp({
			servers: { db: { type: 'http', url: await up.url } },
			sluice: { audit: { enabled: false }, profiles: { ops: { rename: { 'db.query': 'run_query' } } } },
		});
		const c = await httpClient(`${renamed.url}/ops`);
		const tools = await toolsWhen(c.client, (t) => t.some((x) => x.name === 'run_query'));
		assert.equal(tools.find((t) => t.name === 'run_query').inputSchema.properties.region['x-mcp-header'], 'Region');
		let r = await rawCall(renamed, 'run_query', { region: 'eu', sql: 'x' }, { 'mcp-param-region': 'eu' }, '/mcp/ops');
		assert.equal(r.status, 200, r.text);
		assert.equal(jsonOf(r.json.result)['mcp-param-region'], 'eu', 'the server gets the header under its own tool name');
		r = await rawCall(renamed, 'run_query', { region: 'eu', sql: 'x' }, { 'mcp-param-region': 'us' }, '/mcp/ops');
		assert.equal(r.status, 400, r.text);
		assert.equal(r.json.error.code, -32020);
		await c.client.close();
	});

	test('Mcp-Name in the base64 sentinel is decoded before it is compared', async () => {
		const uri = 'sluice://db/caf\u00e9 menu';
		const read = (name) => httpRequest(
			{ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST',
			  headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'resources/read', 'mcp-name': name } },
			{ jsonrpc: '2.0', id: 2, method: 'resources/read', params: { uri, _meta: modernMeta() } },
			20000,
		);
		const ok = await read(`=?base64?${Buffer.from(uri).toString('base64')}?=`);
		assert.notEqual(ok.json?.error?.code, -32020, ok.text); // past the headers: an unknown resource
		assert.notEqual(ok.status, 400, ok.text);
		const bad = await read(`=?base64?${Buffer.from('sluice://db/other').toString('base64')}?=`);
		assert.equal(bad.status, 400);
		assert.equal(bad.json.error.code, -32020);
	});
});
