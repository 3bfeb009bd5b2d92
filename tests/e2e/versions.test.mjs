// README "Versions and features": the tables between the `versions` markers
// are rendered from TRANSPORTS and FEATURES below, and every cell is proven
// here against real peers: "yes" (or a description of how) by doing it, "no"
// by seeing it refused; "—" means the protocol version has no such thing. A
// table in the README that differs from the rendering fails the test, so the
// table cannot drift from what sluice does.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import { Client as OldClient } from 'sdk-1.0/client/index.js';
import { StdioClientTransport as OldStdio } from 'sdk-1.0/client/stdio.js';
import { SSEClientTransport as OldSSE } from 'sdk-1.0/client/sse.js';
import { Client as SdkClient } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { EventSource } from 'eventsource';
import { CreateMessageRequestSchema as OldSampling, ListRootsRequestSchema as OldRoots, ToolListChangedNotificationSchema as OldListChanged } from 'sdk-1.0/types.js';
import { Client as Sdk2Client, StreamableHTTPClientTransport as Sdk2Http } from '@modelcontextprotocol/client';
import { StdioClientTransport as Sdk2Stdio } from '@modelcontextprotocol/client/stdio';
import { RESOURCE_MIME_TYPE, getToolUiResourceUri } from '@modelcontextprotocol/ext-apps/app-bridge';
import {
	CallToolResultSchema, CreateMessageRequestSchema, CreateTaskResultSchema, ElicitRequestSchema, GetTaskResultSchema,
	ListRootsRequestSchema, ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import {
	EVERYTHING, LEGACY, MODERN, REPO, SLUICE, catalog, closeAll, connect, everything, eventually, httpClient,
	httpRequest, modernMeta, runSluice, startHttp, startRaw, textOf, tinyServer, withTimeout, writeConfig,
} from './helpers.mjs';

const OLD = '2024-11-05';
// The SDK 1.0.x SSE client uses the global EventSource; Node 20 has none.
globalThis.EventSource ??= EventSource;
const SESSION_ERA = '2025-03-26 – 2025-11-25';

// ---- the tables ---------------------------------------------------------------------------

const TRANSPORT_COLS = [
	'Client → sluice, stdio', 'Client → sluice, Streamable HTTP', 'Client → sluice, HTTP+SSE',
	'sluice → server, stdio', 'sluice → server, Streamable HTTP', 'sluice → server, HTTP+SSE',
];
const TRANSPORTS = [
	[OLD, ['yes', 'yes', 'yes', 'yes', 'yes', 'yes']],
	[SESSION_ERA, ['yes', 'yes', 'yes', 'yes', 'yes', 'yes']],
	[MODERN, ['yes', 'yes', '—', 'yes', 'yes', '—']],
];

const FEATURE_COLS = [OLD, SESSION_ERA, MODERN];
const FEATURES = [
	['Tools, resources, prompts', ['yes', 'yes', 'yes']],
	['Structured tool results', ['as text', 'yes (as text before 2025-06-18)', 'yes']],
	['A server asks for sampling or roots', ['yes', 'yes', 'as `input_required`']],
	['A server asks for elicitation', ['—', 'yes (2025-06-18 on)', 'as `input_required`']],
	['Tasks (`execution.taskSupport`)', ['awaited by sluice', 'yes (2025-11-25)', 'the `io.modelcontextprotocol/tasks` extension']],
	['Tool list changes reach the client', ['notification', 'notification', '`subscriptions/listen`']],
	['MCP Apps (`io.modelcontextprotocol/ui`): a tool\'s `ui://` View', ['yes', 'yes', 'yes']],
	// Proven in files of their own, with the peers they need: tracecontext.test.mjs (an SDK
	// client, an upstream echoing its _meta, an OTLP receiver), mcpparam.test.mjs (an HTTP
	// upstream logging its headers, raw 2026-07-28 POSTs), alwaysload.test.mjs (SDK clients).
	['W3C trace context in `_meta` (SEP-414): continued in sluice\'s spans, passed to servers', ['yes', 'yes', 'yes']],
	['Tool parameters in `Mcp-Param-*` headers (`x-mcp-header`, SEP-2243)', ['mirrored toward HTTP servers', 'mirrored toward HTTP servers', 'mirrored; checked from HTTP clients']],
	['`_meta["anthropic/alwaysLoad"]` on sluice\'s own tools (`sluice.alwaysLoad`)', ['yes', 'yes', 'yes']],
];

function render() {
	const row = (cells) => `| ${cells.join(' | ')} |`;
	const sep = (n) => row(Array(n).fill('---'));
	return [
		row(['Protocol version', ...TRANSPORT_COLS]), sep(TRANSPORT_COLS.length + 1),
		...TRANSPORTS.map(([era, cells]) => row([era, ...cells])),
		'',
		row(['Feature (client face)', ...FEATURE_COLS]), sep(FEATURE_COLS.length + 1),
		...FEATURES.map(([f, cells]) => row([f, ...cells])),
	].join('\n');
}

test('the README table is the one this file proves', () => {
	const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
	const m = /<!-- versions:begin -->\n([\s\S]*?)\n<!-- versions:end -->/.exec(readme);
	assert.ok(m, 'README.md has the versions markers');
	assert.equal(m[1], render(), `README.md's table must read:\n${render()}`);
});

const cell = (table, row, col) => {
	const [rows, cols] = table === 'transports' ? [TRANSPORTS, TRANSPORT_COLS] : [FEATURES, FEATURE_COLS];
	return rows.find((r) => r[0] === row)[1][cols.indexOf(col)];
};

after(closeAll);

// ---- peers ----------------------------------------------------------------------------------

const LEGACY_FIXTURE = path.join(REPO, 'tests', 'servers', 'legacy2024', 'server.mjs');
const MODERN_STDIO = path.join(REPO, 'tests', 'servers', 'modern', 'server.mjs');
const MODERN_HTTP = path.join(REPO, 'tests', 'servers', 'modern', 'http.mjs');
const procs = [];
after(() => {
	for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
});

// A fixture that prints "PORT n" once it listens.
function startPrinting(args) {
	const p = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
	procs.push(p);
	let out = '';
	return withTimeout(new Promise((resolve, reject) => {
		p.stdout.on('data', (d) => {
			out += d;
			const m = /PORT (\d+)/.exec(out);
			if (m) resolve(Number(m[1]));
		});
		p.on('exit', (c) => reject(new Error(`${args.join(' ')} exited ${c}`)));
	}), 15000, `${args.join(' ')} to listen`);
}

const freePort = () => new Promise((resolve) => {
	const s = net.createServer();
	s.listen(0, '127.0.0.1', () => {
		const { port } = s.address();
		s.close(() => resolve(port));
	});
});
const accepts = (port) => new Promise((resolve) => {
	const s = net.connect(port, '127.0.0.1', () => { s.destroy(); resolve(true); });
	s.on('error', () => resolve(false));
});

// server-everything over HTTP (mode streamableHttp or sse), on PORT.
async function startEverything(mode) {
	const port = await freePort();
	const p = spawn(EVERYTHING, [mode], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'ignore'] });
	procs.push(p);
	await eventually(() => accepts(port), 15000, 100, `server-everything ${mode} to listen`);
	return port;
}

// Through sluice to one server: `check` reports the version it speaks, and a
// program calls one of its tools.
async function throughSluice(server, era, program, expect) {
	const cfg = writeConfig({ s: server });
	const c = await runSluice(['check', '--config', cfg], 30000);
	assert.equal(c.code, 0, c.stdout + c.stderr);
	assert.match(c.stdout, new RegExp(`^s\\s+ready\\s+${era}\\s`, 'm'), c.stdout);
	const r = await runSluice(['exec', '--config', cfg, program], 30000);
	assert.equal(r.code, 0, r.stdout + r.stderr);
	assert.match(r.stdout, expect);
}

const ECHO_2024 = ['return await tools.s.echo({ text: "hi-2024" })', /hi-2024/];
const SUM_2025 = ['return await tools.s["get-sum"]({ a: 20, b: 22 })', /42/];
const ADD_2026 = ['return await tools.s.add({ a: 20, b: 22 })', /"sum":42/];

// ---- transports: the server face ------------------------------------------------------------

const serverCases = {
	[OLD]: {
		stdio: async () => throughSluice({ command: process.execPath, args: [LEGACY_FIXTURE, 'stdio'] }, OLD, ...ECHO_2024),
		http: async () => throughSluice({ url: `http://127.0.0.1:${await startPrinting([LEGACY_FIXTURE, 'http'])}/mcp` }, OLD, ...ECHO_2024),
		sse: async () => throughSluice({ type: 'sse', url: `http://127.0.0.1:${await startPrinting([LEGACY_FIXTURE, 'sse'])}/sse` }, OLD, ...ECHO_2024),
	},
	[SESSION_ERA]: {
		stdio: async () => throughSluice(everything(), LEGACY, ...SUM_2025),
		http: async () => throughSluice({ url: `http://127.0.0.1:${await startEverything('streamableHttp')}/mcp` }, LEGACY, ...SUM_2025),
		sse: async () => throughSluice({ type: 'sse', url: `http://127.0.0.1:${await startEverything('sse')}/sse` }, LEGACY, ...SUM_2025),
	},
	[MODERN]: {
		stdio: async () => throughSluice({ command: process.execPath, args: [MODERN_STDIO] }, MODERN, ...ADD_2026),
		http: async () => throughSluice({ url: `http://127.0.0.1:${await startPrinting([MODERN_HTTP])}/mcp` }, MODERN, ...ADD_2026),
	},
};
for (const [era, cases] of Object.entries(serverCases))
	for (const [t, col] of [['stdio', 3], ['http', 4], ['sse', 5]]) {
		const want = cell('transports', era, TRANSPORT_COLS[col]);
		if (want === '—') continue;
		test(`${era} server over ${t}: ${want}`, async () => {
			assert.equal(want, 'yes', 'every transport of a version is spoken toward servers');
			await cases[t]();
		});
	}

// ---- transports: the client face ------------------------------------------------------------

const github = () => ({ github: catalog('github') });

// The protocol versions a transport's initialize answers carried (the
// Protocol sets onmessage after this wraps it).
function agreed(transport) {
	const versions = [];
	let fn;
	Object.defineProperty(transport, 'onmessage', {
		configurable: true,
		get: () => fn && ((m, extra) => {
			if (m.result?.protocolVersion) versions.push(m.result.protocolVersion);
			return fn(m, extra);
		}),
		set: (f) => (fn = f),
	});
	return versions;
}

// One raw JSON-RPC exchange over sluice's HTTP front.
const post = (gw, body, headers = {}) => httpRequest(
	{ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST', headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json', ...headers } },
	body, 15000);

async function sdk2(transport) {
	const client = new Sdk2Client({ name: 'versions-e2e', version: '1.0.0' }, { capabilities: {}, versionNegotiation: { mode: { pin: MODERN } } });
	await withTimeout(client.connect(transport), 15000, 'the SDK 2.x client to connect');
	try {
		assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
		const { tools } = await client.listTools();
		assert.ok(tools.some((t) => t.name === 'github__echo'));
		const r = await client.callTool({ name: 'github__echo', arguments: { era: 'modern' } });
		assert.deepEqual(JSON.parse(textOf(r)), { era: 'modern' });
	} finally {
		await client.close().catch(() => {});
	}
}

const clientCases = {
	[OLD]: {
		async stdio() {
			// The SDK 1.0.4 client refuses any version but its own two.
			const client = new OldClient({ name: 'old', version: '1.0.4' }, { capabilities: {} });
			await withTimeout(client.connect(new OldStdio({ command: SLUICE, args: ['serve', '--config', writeConfig(github())], stderr: 'ignore' })), 15000, 'connect');
			try {
				const { tools } = await client.listTools();
				assert.ok(tools.some((t) => t.name === 'github__echo'));
				const r = await client.callTool({ name: 'github__echo', arguments: { era: OLD } });
				assert.deepEqual(JSON.parse(r.content[0].text), { era: OLD });
			} finally {
				await client.close();
			}
		},
		async http() {
			const gw = await startHttp({ servers: github() });
			const init = await post(gw, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: OLD, capabilities: {}, clientInfo: { name: 'old-http', version: '1' } } });
			assert.equal(init.status, 200, init.text);
			assert.equal(init.json.result.protocolVersion, OLD);
			const h = { 'mcp-session-id': init.headers['mcp-session-id'], 'mcp-protocol-version': OLD };
			assert.equal((await post(gw, { jsonrpc: '2.0', method: 'notifications/initialized' }, h)).status, 202);
			const call = await post(gw, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'github__echo', arguments: { era: OLD } } }, h);
			assert.equal(call.status, 200, call.text);
			assert.deepEqual(JSON.parse(call.json.result.content[0].text), { era: OLD });
		},
		async sse() {
			// The SDK 1.0.4 client over its SSEClientTransport (GET /sse).
			const gw = await startHttp({ servers: github() });
			const transport = new OldSSE(new URL(`http://127.0.0.1:${gw.port}/sse`));
			const client = new OldClient({ name: 'old-sse', version: '1.0.4' }, { capabilities: {} });
			const seen = agreed(transport);
			await withTimeout(client.connect(transport), 15000, 'connect over HTTP+SSE');
			try {
				assert.deepEqual(seen, [OLD]);
				const r = await client.callTool({ name: 'github__echo', arguments: { era: OLD } });
				assert.deepEqual(JSON.parse(r.content[0].text), { era: OLD });
			} finally {
				await client.close();
			}
		},
	},
	[SESSION_ERA]: {
		async stdio() {
			const gw = await connect({ servers: github() });
			assert.equal(gw.wire[0].result.protocolVersion, LEGACY);
			const r = await gw.client.callTool({ name: 'github__echo', arguments: { era: LEGACY } });
			assert.deepEqual(JSON.parse(textOf(r)), { era: LEGACY });
			await gw.close();
		},
		async http() {
			const gw = await startHttp({ servers: github() });
			const { client, transport } = await httpClient(gw.url);
			assert.equal(transport.protocolVersion, LEGACY);
			const r = await client.callTool({ name: 'github__echo', arguments: { era: LEGACY } });
			assert.deepEqual(JSON.parse(textOf(r)), { era: LEGACY });
			await client.close();
		},
		async sse() {
			// The SDK 1.x SSEClientTransport (GET /sse).
			const gw = await startHttp({ servers: github() });
			const transport = new SSEClientTransport(new URL(`http://127.0.0.1:${gw.port}/sse`));
			const client = new SdkClient({ name: 'sse-1x', version: '1.0.0' }, { capabilities: {} });
			const seen = agreed(transport);
			await withTimeout(client.connect(transport), 15000, 'connect over HTTP+SSE');
			try {
				assert.deepEqual(seen, [LEGACY]);
				const r = await client.callTool({ name: 'github__echo', arguments: { era: LEGACY } });
				assert.deepEqual(JSON.parse(textOf(r)), { era: LEGACY });
			} finally {
				await client.close();
			}
		},
	},
	[MODERN]: {
		stdio: () => sdk2(new Sdk2Stdio({ command: SLUICE, args: ['serve', '--config', writeConfig(github())], stderr: 'ignore' })),
		http: async () => sdk2(new Sdk2Http(new URL((await startHttp({ servers: github() })).url))),
	},
};
for (const [era, cases] of Object.entries(clientCases))
	for (const [t, col] of [['stdio', 0], ['http', 1], ['sse', 2]]) {
		const want = cell('transports', era, TRANSPORT_COLS[col]);
		if (want === '—') continue;
		test(`${era} client over ${t}: ${want}`, async () => {
			assert.equal(want, 'yes', 'every version is served on stdio and Streamable HTTP, and the session era on HTTP+SSE');
			await cases[t]();
		});
	}

// ---- features, on the client face -----------------------------------------------------------

// Every client below declares what it can answer, and answers with words of
// its own, which must come back in the tool's result.
const ANSWERS = {
	sampling: { role: 'assistant', content: { type: 'text', text: 'words-of-the-clients-model' }, model: 'e2e', stopReason: 'endTurn' },
	roots: { roots: [{ uri: 'file:///the-clients-root', name: 'root' }] },
	elicitation: { action: 'accept', content: { name: 'Grace Hopper', check: true, email: 'grace@example.com' } },
};
// An HTTP server whose tool declares x-mcp-header (it answers with the
// Mcp-Param headers it got), and one answering with the _meta it got.
const PARAMS_PORT = await startPrinting([path.join(REPO, 'tests', 'servers', 'params', 'server.mjs')]);
const META_ECHO = tinyServer({
	name: 'metaecho',
	tools: `[{ name: 'meta', description: 'Echo the request _meta', inputSchema: { type: 'object', properties: {} } }]`,
	call: `(params, ok) => ok({ content: [{ type: 'text', text: JSON.stringify(params._meta ?? {}) }] })`,
});
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const features = () => ({
	everything: everything(),
	github: catalog('github'),
	db: { type: 'http', url: `http://127.0.0.1:${PARAMS_PORT}/mcp` },
	metaecho: META_ECHO,
	// The ext-apps example server: a tool with a View.
	basic: { command: path.join(REPO, 'node_modules', '.bin', 'mcp-server-basic-vanillajs'), args: ['--stdio'] },
});

// The checks of one client, whatever its SDK: c has listTools, callTool,
// listResources, listPrompts; changed() resolves at the next tools
// list_changed the client hears.
async function toolsOf(c, want, ms = 10000) {
	let names = [];
	await eventually(async () => {
		names = (await c.listTools()).tools.map((t) => t.name);
		return want.every((n) => names.includes(n));
	}, ms, 150, `${want.join(', ')} listed`).catch((e) => {
		e.message += `: ${names.join(' ')}`;
		throw e;
	});
}

const checks = {
	async 'Tools, resources, prompts'(c, want) {
		assert.equal(want, 'yes');
		await toolsOf(c, ['everything__get-sum']);
		assert.ok((await c.listResources()).resources.length > 0);
		assert.ok((await c.listPrompts()).prompts.length > 0);
		const r = await c.callTool({ name: 'everything__get-sum', arguments: { a: 40, b: 2 } });
		assert.match(r.content[0].text, /42/);
	},
	async 'Structured tool results'(c, want) {
		const r = await c.callTool({ name: 'everything__get-structured-content', arguments: { location: 'Chicago' } });
		if (want === 'as text') {
			assert.equal(r.structuredContent, undefined);
			assert.ok(r.content.some((b) => b.type === 'text' && /Light rain/.test(b.text)), JSON.stringify(r));
		} else {
			assert.match(want, /^yes/);
			assert.equal(r.structuredContent?.conditions, 'Light rain / drizzle', JSON.stringify(r));
		}
	},
	async 'A server asks for sampling or roots'(c, want) {
		assert.ok(want === 'yes' || want === 'as `input_required`');
		await toolsOf(c, ['everything__trigger-sampling-request', 'everything__get-roots-list']);
		const s = await c.callTool({ name: 'everything__trigger-sampling-request', arguments: { prompt: 'hello', maxTokens: 5 } });
		assert.match(JSON.stringify(s.content), /words-of-the-clients-model/);
		const r = await c.callTool({ name: 'everything__get-roots-list', arguments: {} });
		assert.match(JSON.stringify(r.content), /the-clients-root/);
	},
	async 'A server asks for elicitation'(c, want) {
		assert.ok(want.startsWith('yes') || want === 'as `input_required`');
		await toolsOf(c, ['everything__trigger-elicitation-request']);
		const r = await c.callTool({ name: 'everything__trigger-elicitation-request', arguments: {} });
		assert.match(JSON.stringify(r.content), /Grace Hopper/);
	},
	async 'Tasks (`execution.taskSupport`)'(c, want) {
		const TOOL = 'everything__simulate-research-query';
		const report = /Research Report: tides/;
		if (want === 'awaited by sluice') {
			// The version has no tasks: sluice runs the task and answers the call.
			const r = await c.callTool({ name: TOOL, arguments: { topic: 'tides' } }, undefined, { timeout: 30000 });
			assert.match(JSON.stringify(r.content), report);
		} else if (want === 'yes (2025-11-25)') {
			const created = await c.request({ method: 'tools/call', params: { name: TOOL, arguments: { topic: 'tides' }, task: { ttl: 60000 } } }, CreateTaskResultSchema);
			const id = created.task.taskId;
			await eventually(async () => (await c.request({ method: 'tasks/get', params: { taskId: id } }, GetTaskResultSchema)).status === 'completed', 20000, 250, 'the task to complete');
			const r = await c.request({ method: 'tasks/result', params: { taskId: id } }, CallToolResultSchema);
			assert.match(textOf(r), report);
		} else {
			assert.equal(want, 'the `io.modelcontextprotocol/tasks` extension');
			// A 2026-07-28 client that declares the extension gets a handle and polls it.
			const gw = await startHttp({ servers: features() });
			const post = (method, params, name) => httpRequest(
				{ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST', headers: { 'mcp-protocol-version': MODERN, 'mcp-method': method, 'mcp-name': name } },
				{ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: modernMeta({ extensions: { 'io.modelcontextprotocol/tasks': {} } }) } }, 20000);
			let created;
			await eventually(async () => {
				created = (await post('tools/call', { name: TOOL, arguments: { topic: 'tides' } }, TOOL)).json?.result;
				return created?.resultType === 'task';
			}, 15000, 250, 'a task handle');
			let task;
			await eventually(async () => {
				task = (await post('tasks/get', { taskId: created.taskId }, created.taskId)).json?.result;
				return task?.status === 'completed';
			}, 20000, 250, 'the task to complete');
			assert.match(textOf(task.result), report);
		}
	},
	async 'MCP Apps (`io.modelcontextprotocol/ui`): a tool\'s `ui://` View'(c, want) {
		assert.equal(want, 'yes');
		await toolsOf(c, ['basic__get-time']);
		const tool = (await c.listTools()).tools.find((t) => t.name === 'basic__get-time');
		// The host SDK's own pairing: it refuses a View URI that is not ui://.
		const uri = getToolUiResourceUri(tool);
		assert.equal(uri, 'ui://basic/get-time/mcp-app.html');
		const r = await c.readResource({ uri });
		assert.equal(r.contents[0].mimeType, RESOURCE_MIME_TYPE);
		assert.match(r.contents[0].text, /<html/i);
	},
	async 'W3C trace context in `_meta` (SEP-414): continued in sluice\'s spans, passed to servers'(c, want) {
		// Without telemetry the context reaches the server as the client sent it
		// (tracecontext.test.mjs proves the spans).
		assert.equal(want, 'yes');
		await toolsOf(c, ['metaecho__meta']);
		const r = await c.callTool({ name: 'metaecho__meta', arguments: {}, _meta: { traceparent: TRACEPARENT, baggage: 'era=any' } });
		const got = JSON.parse(textOf(r));
		assert.equal(got.traceparent, TRACEPARENT);
		assert.equal(got.baggage, 'era=any');
	},
	async 'Tool parameters in `Mcp-Param-*` headers (`x-mcp-header`, SEP-2243)'(c, want) {
		await toolsOf(c, ['db__query']);
		const r = await c.callTool({ name: 'db__query', arguments: { region: 'eu-north', sql: 'x' } });
		assert.equal(JSON.parse(textOf(r))['mcp-param-region'], 'eu-north');
		if (want === 'mirrored toward HTTP servers') return;
		assert.equal(want, 'mirrored; checked from HTTP clients');
		const gw = await startHttp({ servers: features() });
		try {
			const post = (headers) => httpRequest(
				{ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST',
				  headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'db__query', ...headers } },
				{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'db__query', arguments: { region: 'eu', sql: 'x' }, _meta: modernMeta() } },
				20000,
			);
			let ok;
			await eventually(async () => (ok = await post({ 'mcp-param-region': 'eu' })).status === 200, 15000, 250, 'the HTTP face to serve db__query');
			const bad = await post({ 'mcp-param-region': 'us' });
			assert.equal(bad.status, 400);
			assert.equal(bad.json.error.code, -32020);
		} finally {
			await gw.close();
		}
	},
	async '`_meta["anthropic/alwaysLoad"]` on sluice\'s own tools (`sluice.alwaysLoad`)'(c, want) {
		assert.equal(want, 'yes');
		await toolsOf(c, ['read_result', 'github__echo']);
		const tools = (await c.listTools()).tools;
		assert.equal(tools.find((t) => t.name === 'read_result')._meta?.['anthropic/alwaysLoad'], true);
		assert.equal(tools.find((t) => t.name === 'github__echo')._meta?.['anthropic/alwaysLoad'], undefined);
	},
	async 'Tool list changes reach the client'(c, want) {
		if (want === '`subscriptions/listen`') {
			// 2026-07-28: only on a listen the client opened.
			const sub = await c.listen({ toolsListChanged: true });
			assert.deepEqual(sub.honoredFilter, { toolsListChanged: true });
		} else {
			assert.equal(want, 'notification');
		}
		const heard = c.changed();
		await c.callTool({ name: 'github__add_tool', arguments: { name: 'fresh_tool' } });
		await withTimeout(heard, 10000, 'tools/list_changed');
		await toolsOf(c, ['github__fresh_tool']);
	},
};

function featureTests(era, open) {
	describe(`features for a ${era} client`, () => {
		let c;
		before(async () => {
			c = await open();
		});
		after(async () => c?.close());
		for (const [feature, cells] of FEATURES) {
			const want = cells[FEATURE_COLS.indexOf(era)];
			if (want === '—') continue;
			// A failure carries sluice's log, to tell a sluice fault from a peer's.
			test(`${feature}: ${want}`, () => checks[feature](c, want).catch((e) => {
				e.message += `\nsluice stderr (tail):\n${c.stderr?.().slice(-3000) ?? '(not kept)'}`;
				throw e;
			}));
		}
	});
}

// 2024-11-05: the SDK 1.0.4 client over stdio; it has no elicitation.
featureTests(OLD, async () => {
	const client = new OldClient({ name: 'old', version: '1.0.4' }, { capabilities: { sampling: {}, roots: { listChanged: true } } });
	client.setRequestHandler(OldSampling, async () => ANSWERS.sampling);
	client.setRequestHandler(OldRoots, async () => ANSWERS.roots);
	let wake;
	client.setNotificationHandler(OldListChanged, async () => wake?.());
	await withTimeout(client.connect(new OldStdio({ command: SLUICE, args: ['serve', '--config', writeConfig(features())], stderr: 'ignore' })), 15000, 'connect');
	return Object.assign(client, { changed: () => new Promise((r) => (wake = r)) });
});

// 2025-11-25: the SDK 1.x client over stdio.
featureTests(SESSION_ERA, async () => {
	const gw = await connect({
		servers: features(),
		capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } },
		handlers: [[CreateMessageRequestSchema, async () => ANSWERS.sampling], [ListRootsRequestSchema, async () => ANSWERS.roots], [ElicitRequestSchema, async () => ANSWERS.elicitation]],
	});
	let wake;
	gw.client.setNotificationHandler(ToolListChangedNotificationSchema, async () => wake?.());
	// close() ends the whole gateway; gw.close() calls the SDK's own close,
	// put back first so the two do not call each other.
	const own = gw.client.close;
	return Object.assign(gw.client, {
		changed: () => new Promise((r) => (wake = r)),
		close: () => ((gw.client.close = own), gw.close()),
		stderr: gw.stderr,
	});
});

test('a 2025-03-26 client gets structured results as text', async () => {
	assert.equal(cell('features', 'Structured tool results', SESSION_ERA), 'yes (as text before 2025-06-18)');
	const raw = startRaw({ servers: features() });
	try {
		const init = await raw.initialize('2025-03-26');
		assert.equal(init.result.protocolVersion, '2025-03-26');
		const r = await raw.request('tools/call', { name: 'everything__get-structured-content', arguments: { location: 'Chicago' } }, { ms: 15000 });
		assert.equal(r.result.structuredContent, undefined);
		assert.match(JSON.stringify(r.result.content), /Light rain/);
	} finally {
		await raw.close();
	}
});

// 2026-07-28: the SDK 2.x client, pinned to it, over stdio.
featureTests(MODERN, async () => {
	const client = new Sdk2Client({ name: 'versions-2026', version: '1.0.0' }, {
		capabilities: { sampling: {}, elicitation: { form: {} }, roots: {} },
		versionNegotiation: { mode: { pin: MODERN } },
	});
	client.setRequestHandler('sampling/createMessage', async () => ANSWERS.sampling);
	client.setRequestHandler('roots/list', async () => ANSWERS.roots);
	client.setRequestHandler('elicitation/create', async () => ANSWERS.elicitation);
	let wake;
	client.setNotificationHandler('notifications/tools/list_changed', () => wake?.());
	client.changed = () => new Promise((r) => (wake = r));
	const transport = new Sdk2Stdio({ command: SLUICE, args: ['serve', '--config', writeConfig(features())], stderr: 'pipe' });
	let err = '';
	transport.stderr.on('data', (d) => (err += d));
	await withTimeout(client.connect(transport), 15000, 'connect');
	assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
	return Object.assign(client, { stderr: () => err });
});
