// Protocol 2024-11-05 on both faces (issue 14, points 1 and 2):
// - upstreams that answer 2024-11-05 over stdio (the real server-postgres
//   0.6.2 on a real PostgreSQL 15 started here), HTTP+SSE (SDK 1.0.4) and
//   Streamable HTTP work, and get nothing their version lacks;
// - a 2024-11-05 client (the real SDK 1.0.4) gets 2024-11-05, with what its
//   version lacks mapped (audio, resource links, structured content, tool
//   fields), validated by its own schemas; also over Streamable HTTP;
// - a server offering a version sluice does not speak fails once, for good,
//   with a message that says what to do.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, chownSync, readFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Client as OldClient } from 'sdk-1.0/client/index.js';
import { StdioClientTransport as OldStdio } from 'sdk-1.0/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import {
	REPO, SLUICE, connect, closeAll, everything, tinyServer, writeConfig, runSluice, startHttp,
	httpRequest, textOf, eventually, sleep, withTimeout, freePort,
} from './helpers.mjs';

after(closeAll);

const FIXTURE = path.join(REPO, 'tests', 'servers', 'legacy2024', 'server.mjs');
const PG_BIN = '/usr/lib/postgresql/15/bin';
const POSTGRES_MCP = path.join(REPO, 'node_modules', '.bin', 'mcp-server-postgres');

// Starts a fixture HTTP server of server.mjs; resolves { port, close() }.
function startFixture(mode) {
	const proc = spawn(process.execPath, [FIXTURE, mode], { stdio: ['ignore', 'pipe', 'inherit'] });
	const exited = new Promise((r) => proc.once('exit', r));
	return withTimeout(new Promise((resolve, reject) => {
		let out = '';
		proc.stdout.on('data', (b) => {
			out += b;
			const m = /PORT (\d+)/.exec(out);
			if (m) resolve({ port: Number(m[1]), close: () => (proc.kill('SIGTERM'), exited) });
		});
		proc.once('exit', (c) => reject(new Error(`fixture ${mode} exited ${c}`)));
	}), 10000, `the ${mode} fixture to listen`);
}

// ---- stdio: the real server-postgres 0.6.2 on PostgreSQL 15 -----------------------

// PostgreSQL from Debian in a temp dir, on loopback, on a port picked here;
// as the postgres user when the test runs as root (PostgreSQL refuses root).
async function startPostgres() {
	const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-pg-'));
	const data = path.join(dir, 'data');
	let as = [];
	if (process.getuid() === 0) {
		const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
		const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
		chownSync(dir, uid, gid);
		// setpriv execs in place: the PID spawned is the postmaster's.
		as = ['setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--'];
	}
	const run = (cmd, args) => (as.length ? [as[0], [...as.slice(1), cmd, ...args]] : [cmd, args]);
	const [ic, ia] = run(path.join(PG_BIN, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync']);
	execFileSync(ic, ia, { stdio: 'ignore', timeout: 60000 });
	const port = await freePort();
	const [pc, pa] = run(path.join(PG_BIN, 'postgres'), ['-D', data, '-h', '127.0.0.1', '-p', String(port), '-k', dir, '-F']);
	const proc = spawn(pc, pa, { stdio: ['ignore', 'ignore', 'pipe'] });
	let log = '';
	proc.stderr.on('data', (b) => (log += b));
	const exited = new Promise((r) => proc.once('exit', r));
	const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
	const psql = (sql) => execFileSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', url, '-c', sql], { timeout: 10000, stdio: ['ignore', 'pipe', 'pipe'] }).toString();
	const pg = {
		url,
		psql,
		async stop() {
			// The postmaster's PID (postmaster.pid's first line, else the child's).
			let pid = proc.pid;
			try { pid = Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]) || pid; } catch {}
			try { process.kill(pid, 'SIGINT'); } catch {} // fast shutdown
			await withTimeout(exited, 15000, 'PostgreSQL to stop').catch(() => {
				try { process.kill(pid, 'SIGKILL'); } catch {}
			});
			rmSync(dir, { recursive: true, force: true });
		},
	};
	try {
		await eventually(() => {
			try { psql('SELECT 1'); return true; } catch { return false; }
		}, 30000, 200, `PostgreSQL to accept connections (${log})`);
	} catch (e) {
		await pg.stop();
		throw e;
	}
	return pg;
}

describe('server-postgres 0.6.2 (SDK 1.0.1, 2024-11-05) on PostgreSQL 15, through sluice over stdio', () => {
	let pg, gw, cfg;

	before(async () => {
		pg = await startPostgres();
		pg.psql("CREATE TABLE fruits (id int PRIMARY KEY, name text NOT NULL); INSERT INTO fruits VALUES (1, 'apple'), (2, 'pear'), (3, 'plum')");
		cfg = writeConfig({ pg: { command: POSTGRES_MCP, args: [pg.url] } });
		gw = await connect({ configPath: cfg });
	});
	after(async () => {
		await gw?.close();
		await pg?.stop();
	});

	test('its query tool is listed and returns the rows', async () => {
		const { tools } = await gw.client.listTools();
		assert.ok(tools.some((t) => t.name === 'pg__query'), tools.map((t) => t.name).join());
		const r = await gw.client.callTool({ name: 'pg__query', arguments: { sql: 'SELECT id, name FROM fruits ORDER BY id' } });
		assert.notEqual(r.isError, true, textOf(r));
		assert.deepEqual(JSON.parse(textOf(r)), [{ id: 1, name: 'apple' }, { id: 2, name: 'pear' }, { id: 3, name: 'plum' }]);
	});

	test('its table schemas are listed as resources and read', async () => {
		const { resources } = await gw.client.listResources();
		const fruits = resources.find((r) => /fruits\/schema$/.test(r.uri));
		assert.ok(fruits, JSON.stringify(resources));
		assert.match(fruits.uri, /^sluice:\/\/pg\//);
		const { contents } = await gw.client.readResource({ uri: fruits.uri });
		const cols = JSON.parse(contents[0].text).map((c) => `${c.column_name}:${c.data_type}`).sort();
		assert.deepEqual(cols, ['id:integer', 'name:text']);
	});

	test('sluice check shows it ready in 2024-11-05', async () => {
		const r = await runSluice(['check', '--config', cfg]);
		assert.equal(r.code, 0, r.stdout + r.stderr);
		assert.match(r.stdout, /^pg\s+ready\s+2024-11-05\s+1\s+1\s/m);
	});
});

// ---- HTTP+SSE and Streamable HTTP servers of 2024-11-05 --------------------------------

for (const [mode, entry] of [
	['sse', (port) => ({ type: 'sse', url: `http://127.0.0.1:${port}/sse` })],
	['http', (port) => ({ url: `http://127.0.0.1:${port}/mcp` })],
]) {
	describe(`a 2024-11-05 server over ${mode === 'sse' ? 'HTTP+SSE (SDK 1.0.4)' : 'Streamable HTTP'}`, () => {
		let up, gw, cfg;
		const elicited = [];

		before(async () => {
			up = await startFixture(mode);
			cfg = writeConfig({ old: entry(up.port) });
			// The client declares elicitation: a 2024-11-05 server still gets none.
			gw = await connect({
				configPath: cfg,
				capabilities: { elicitation: {} },
				handlers: [[ElicitRequestSchema, (req) => (elicited.push(req), { action: 'accept', content: {} })]],
			});
		});
		after(async () => {
			await gw?.close();
			await up?.close();
		});

		test('its tools are listed and called', async () => {
			const { tools } = await gw.client.listTools();
			assert.deepEqual(tools.map((t) => t.name).filter((n) => n.startsWith('old__')).sort(), ['old__ask', 'old__echo']);
			const r = await gw.client.callTool({ name: 'old__echo', arguments: { text: mode } });
			assert.deepEqual(JSON.parse(textOf(r)), { text: mode });
		});

		test('an elicitation it asks for, which its version lacks, is refused and never reaches the client', async () => {
			const r = await gw.client.callTool({ name: 'old__ask', arguments: {} });
			assert.match(textOf(r), /^refused: .*elicitation\/create is not part of protocol 2024-11-05/);
			assert.equal(elicited.length, 0);
		});

		test('sluice check shows it ready in 2024-11-05', async () => {
			const r = await runSluice(['check', '--config', cfg]);
			assert.equal(r.code, 0, r.stdout + r.stderr);
			assert.match(r.stdout, /^old\s+ready\s+2024-11-05\s+2\s/m);
		});
	});
}

// ---- the client face: SDK 1.0.4 over stdio, raw 2024-11-05 over Streamable HTTP ----------

// A 2025-11-25 server whose results use what 2024-11-05 lacks.
const modernBits = () => tinyServer({
	name: 'bits',
	tools: `[
		{ name: 'audio', title: 'Audio', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } },
		{ name: 'structured', inputSchema: { type: 'object' }, outputSchema: { type: 'object', properties: { n: { type: 'number' } } } },
	]`,
	call: `(p, ok) => p.name === 'audio'
		? ok({ content: [{ type: 'text', text: 'hear this' }, { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' }] })
		: ok({ content: [], structuredContent: { n: 42 } })`,
});

describe('an SDK 1.0.4 client (2024-11-05) through sluice over stdio', () => {
	let client, wire = [];

	before(async () => {
		const cfg = writeConfig({ ev: everything(), bits: modernBits() });
		const transport = new OldStdio({ command: SLUICE, args: ['serve', '--config', cfg], stderr: 'inherit' });
		const start = transport.start.bind(transport);
		transport.start = async () => {
			await start();
			const on = transport.onmessage;
			transport.onmessage = (m) => (wire.push(m), on(m));
		};
		// It declares elicitation, which its version lacks: sluice must ignore it.
		client = new OldClient({ name: 'old-client', version: '1.0.4' }, { capabilities: { sampling: {}, elicitation: {} } });
		await withTimeout(client.connect(transport), 15000, 'the SDK 1.0.4 client to connect');
	});
	after(() => client?.close());

	test('initialize answers 2024-11-05 with no capability the version lacks', () => {
		const init = wire.find((m) => m.result?.protocolVersion);
		assert.equal(init.result.protocolVersion, '2024-11-05');
		assert.equal(init.result.capabilities.completions, undefined);
		assert.ok(init.result.capabilities.tools);
		assert.equal(client.getServerVersion().name, 'sluice');
	});

	test('tools/list: no fields 2024-11-05 lacks; no elicitation tools upstream', async () => {
		let tools;
		await eventually(async () => {
			({ tools } = await client.listTools());
			return tools.some((t) => t.name === 'ev__get-resource-links') && tools.some((t) => t.name === 'bits__audio');
		}, 15000, 200, 'the servers to be listed');
		for (const t of tools)
			for (const k of ['title', 'outputSchema', 'annotations', 'icons', 'execution'])
				assert.equal(t[k], undefined, `${t.name}.${k}`);
		assert.ok(!tools.some((t) => /elicitation/.test(t.name)), tools.map((t) => t.name).join());
		assert.ok(tools.some((t) => t.name === 'ev__trigger-sampling-request'), 'sampling was declared and passed on');
	});

	test('server-everything resource links become text the old client accepts', async () => {
		const r = await client.callTool({ name: 'ev__get-resource-links', arguments: { count: 2 } });
		assert.ok(r.content.every((b) => b.type === 'text'), JSON.stringify(r));
		assert.match(r.content.map((b) => b.text).join('\n'), /\[resource link: \w+ Resource 1 <sluice:\/\/ev\/demo:\/\/resource\/[^>]+>: Resource 1/);
	});

	test('server-everything structured content arrives as its text content only', async () => {
		const r = await client.callTool({ name: 'ev__get-structured-content', arguments: { location: 'New York' } });
		assert.equal(r.structuredContent, undefined);
		assert.ok(JSON.parse(r.content[0].text).temperature !== undefined, JSON.stringify(r));
	});

	test('audio becomes a text block saying what was left out; structured-only becomes text', async () => {
		const a = await client.callTool({ name: 'bits__audio', arguments: {} });
		assert.deepEqual(a.content, [{ type: 'text', text: 'hear this' }, { type: 'text', text: '[audio: audio/wav, 4 bytes omitted]' }]);
		const s = await client.callTool({ name: 'bits__structured', arguments: {} });
		assert.deepEqual(s.content, [{ type: 'text', text: '{"n":42}' }]);
		assert.equal(s.structuredContent, undefined);
	});

	test('prompts and resources lists pass the old schemas', async () => {
		const { prompts } = await client.listPrompts();
		assert.ok(prompts.length > 0);
		for (const p of prompts) assert.equal(p.title, undefined);
		const { resources } = await client.listResources();
		for (const r of resources) assert.equal(r.title, undefined);
	});
});

describe('a policy confirmation for a 2024-11-05 client', () => {
	test('is refused as for a client without elicitation, though it declared elicitation', async () => {
		const cfg = writeConfig({ bits: modernBits() }, { policy: { rules: [{ match: 'bits.audio', action: 'confirm' }] } });
		const transport = new OldStdio({ command: SLUICE, args: ['serve', '--config', cfg], stderr: 'ignore' });
		const client = new OldClient({ name: 'old-client', version: '1.0.4' }, { capabilities: { elicitation: {} } });
		let asked = 0;
		client.fallbackRequestHandler = async () => (asked++, { action: 'accept', content: {} });
		await withTimeout(client.connect(transport), 15000, 'the SDK 1.0.4 client to connect');
		try {
			const r = await client.callTool({ name: 'bits__audio', arguments: {} });
			assert.equal(r.isError, true);
			assert.match(r.content[0].text, /needs confirmation by .*but the client does not support elicitation/);
			assert.equal(asked, 0);
		} finally {
			await client.close();
		}
	});
});

describe('a 2024-11-05 client over Streamable HTTP', () => {
	let gw;
	before(async () => {
		gw = await startHttp({ servers: { bits: modernBits() } });
	});
	after(() => gw?.close());

	test('initialize answers 2024-11-05, and results are mapped for it', async () => {
		const at = { host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST' };
		const init = await httpRequest(at, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2024-11-05', capabilities: { elicitation: {} }, clientInfo: { name: 'raw', version: '1' } } });
		assert.equal(init.json?.result?.protocolVersion, '2024-11-05', init.text);
		assert.equal(init.json.result.capabilities.completions, undefined);
		const headers = { 'mcp-session-id': init.headers['mcp-session-id'], 'mcp-protocol-version': '2024-11-05' };
		assert.equal((await httpRequest({ ...at, headers }, { jsonrpc: '2.0', method: 'notifications/initialized' })).status, 202);
		const list = await httpRequest({ ...at, headers }, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
		const audio = list.json.result.tools.find((t) => t.name === 'bits__audio');
		assert.deepEqual(Object.keys(audio).sort(), ['inputSchema', 'name']);
		const r = await httpRequest({ ...at, headers }, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'bits__audio', arguments: {} } });
		assert.equal(r.json?.result?.content?.[1]?.text, '[audio: audio/wav, 4 bytes omitted]', r.text);
	});
});

// ---- a version sluice does not speak: a final error, no restart loop ----------------------

describe('a server that offers a protocol version sluice does not speak', () => {
	test('fails once with a message naming both sides and what to do; check shows it', async () => {
		const starts = path.join(path.dirname(writeConfig({})), 'starts.txt');
		const count = () => (existsSync(starts) ? readFileSync(starts, 'utf8').split('\n').filter(Boolean).length : 0);
		const cfg = writeConfig({
			future: { command: process.execPath, args: [FIXTURE, 'version', '2023-01-01', starts] },
			bits: modernBits(),
		});
		const gw = await connect({ configPath: cfg });
		try {
			const { tools } = await gw.client.listTools();
			assert.ok(tools.some((t) => t.name === 'bits__audio'), 'the other server still serves');
			// The old code restarted it after 250, 500, 1000 ms...
			await sleep(2500);
			assert.equal(count(), 1, 'spawned once');
			const err = gw.stderr();
			assert.match(err, /server 'future' offered protocol version 2023-01-01, which sluice does not speak \(sluice speaks 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05\); not restarting it: upgrade the server/);
			assert.doesNotMatch(err, /restarting in/);
		} finally {
			await gw.close();
		}
		const before = count();
		const r = await runSluice(['check', '--config', cfg]);
		assert.equal(r.code, 1);
		assert.match(r.stdout, /^future\s+failed\s/m);
		assert.match(r.stdout, /error: offered protocol version 2023-01-01, which sluice does not speak .*upgrade the server/);
		assert.equal(count(), before + 1, 'check started it once');
	});
});
