// sluice as a 2026-07-28 client of its upstreams (issue 33, findings 1, 2
// and 8), against a hand-written stateless server (tests/servers/stateless)
// over stdio and over HTTP:
// - a multi-round trip whose server keeps its state only in requestState
//   completes (the state is echoed from the result, exactly);
// - each request tells the server its own caller's capabilities (less what
//   sluice cannot relay), and the server's -32021 reaches the client;
// - a -32022 answer to server/discover is retried with a shared version,
//   not taken for a session-era server.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { MODERN, REPO, eventually, httpClient, httpRequest, modernMeta, runSluice, startHttp, startRaw, textOf, withTimeout, writeConfig } from './helpers.mjs';

const SERVER = path.join(REPO, 'tests', 'servers', 'stateless', 'server.mjs');
const stdio = (...args) => ({ command: process.execPath, args: [SERVER, ...args] });

const procs = [];
after(() => {
	for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
});

// The server over HTTP: its URL once it prints "PORT n".
function startServerHttp(...args) {
	const p = spawn(process.execPath, [SERVER, '--http', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
	procs.push(p);
	let out = '';
	return withTimeout(new Promise((resolve, reject) => {
		p.stdout.on('data', (d) => {
			out += d;
			const m = /PORT (\d+)/.exec(out);
			if (m) resolve(`http://127.0.0.1:${m[1]}/mcp`);
		});
		p.on('exit', (c) => reject(new Error(`the stateless server exited ${c}`)));
	}), 15000, 'the stateless server to listen');
}

const logOf = (file) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));

// One raw 2026-07-28 tools/call to the gateway over HTTP.
function rawPost(gw, id, name, caps, extra = {}) {
	return httpRequest(
		{ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST', headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name } },
		{ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {}, ...extra, _meta: modernMeta(caps) } },
		20000,
	);
}

async function rawCall(gw, id, name, caps, extra = {}) {
	return (await rawPost(gw, id, name, caps, extra)).json;
}

for (const transport of ['stdio', 'http']) {
	describe(`a stateless 2026-07-28 server over ${transport}`, () => {
		let gw, client, log;
		const asked = [];

		before(async () => {
			log = path.join(mkdtempSync(path.join(os.tmpdir(), 'sluice-up2026-')), 'requests.jsonl');
			const entry = transport === 'stdio' ? stdio('--log', log) : { url: await startServerHttp('--log', log) };
			gw = await startHttp({ servers: { st: entry }, sluice: { codeMode: { enabled: true }, exposure: 'hybrid' } });
			client = new Client({ name: 'up2026-e2e', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: MODERN } } });
			client.setRequestHandler('elicitation/create', async (req) => {
				asked.push(req.params.message);
				return { action: 'accept', content: { name: 'Ada' } };
			});
			await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
		});
		after(async () => {
			await client?.close().catch(() => {});
			await gw?.close();
			assert.doesNotMatch(gw?.stderr() ?? '', /Sanitizer|runtime error/);
		});

		test('finding 1: a server keeping its state only in requestState completes in 2 rounds', async () => {
			const n = asked.length;
			const r = await client.callTool({ name: 'st__two_rounds', arguments: {} });
			assert.notEqual(r.isError, true, textOf(r));
			assert.equal(textOf(r), 'hello Ada after 2 rounds');
			assert.deepEqual(asked.slice(n), ['Your name?']);
			const calls = logOf(log).filter((m) => m.method === 'tools/call' && m.params.name === 'two_rounds');
			assert.equal(calls.length, 2);
			assert.equal(calls[0].params.requestState, undefined);
			// Echoed exactly, under a new id.
			assert.equal(calls[1].params.requestState, Buffer.from(JSON.stringify({ round: 1 })).toString('base64url'));
			assert.notEqual(calls[1].id, calls[0].id);
		});

		test('finding 1: input_required with only a requestState is retried at once with it', async () => {
			const r = await client.callTool({ name: 'st__state_only', arguments: {} });
			assert.equal(textOf(r), 'state came back');
		});

		test('a server that answers input_required with a state forever is given up after 8 retries', async () => {
			const r = await client.callTool({ name: 'st__state_forever', arguments: {} });
			assert.equal(r.isError, true);
			assert.match(textOf(r), /too many rounds/);
			assert.equal(logOf(log).filter((m) => m.method === 'tools/call' && m.params.name === 'state_forever').length, 9);
		});

		test('finding 2: the upstream is told the caller\'s capabilities, per request', async () => {
			const sampling = await rawCall(gw, 1, 'st__caps', { sampling: {} });
			assert.deepEqual(JSON.parse(sampling.result.content[0].text), { sampling: {} });
			const none = await rawCall(gw, 2, 'st__caps', {});
			assert.deepEqual(JSON.parse(none.result.content[0].text), {});
			// What sluice cannot relay is not claimed: an extension it does not know.
			const ext = await rawCall(gw, 3, 'st__caps', { elicitation: { form: {} }, extensions: { 'x.example/zzz': {} } });
			assert.deepEqual(JSON.parse(ext.result.content[0].text), { elicitation: { form: {} } });
		});

		test('finding 2: a client declaring only sampling is not asked an elicitation; it gets -32021', async () => {
			const r = await rawCall(gw, 4, 'st__needs_elicit', { sampling: {} });
			assert.equal(r.error?.code, -32021, JSON.stringify(r));
			assert.deepEqual(r.error.data, { requiredCapabilities: { elicitation: {} } });
		});

		test('finding 2: a client declaring nothing gets -32021', async () => {
			const r = await rawCall(gw, 5, 'st__needs_elicit', {});
			assert.equal(r.error?.code, -32021, JSON.stringify(r));
		});

		// MCP 2026-07-28 HTTP (conformance server-stateless,
		// sep-2575-missing-capability-http-400): the server's -32021 is a 400.
		test('a -32021 answer comes with HTTP status 400', async () => {
			const r = await rawPost(gw, 15, 'st__needs_elicit', {});
			assert.equal(r.status, 400, r.text);
			assert.equal(r.json.error.code, -32021, r.text);
			assert.equal(r.json.id, 15);
		});

		test('finding 2: a program\'s call (which cannot ask a 2026-07-28 client) declares nothing: -32021 in the program', async () => {
			const n = asked.length;
			const r = await client.callTool({
				name: 'execute_code',
				arguments: { code: "try { await tools.st.needs_elicit({}); return 'no error'; } catch (e) { return 'caught: ' + e.message; }" },
			});
			assert.match(textOf(r), /caught: .*(-32021|elicitation capability)/);
			assert.equal(asked.length, n);
			const last = logOf(log).filter((m) => m.method === 'tools/call' && m.params.name === 'needs_elicit').at(-1);
			assert.deepEqual(last.params._meta['io.modelcontextprotocol/clientCapabilities'], {});
		});

		test('finding 2: a client declaring elicitation is asked, and the call completes', async () => {
			const r = await client.callTool({ name: 'st__needs_elicit', arguments: {} });
			assert.equal(textOf(r), 'hello Ada');
		});

		test('finding 2: a session-era client over HTTP is declared its own initialize capabilities', async () => {
			const { client: old } = await httpClient(gw.url, { capabilities: { roots: {} } });
			try {
				const r = await old.callTool({ name: 'st__caps', arguments: {} });
				assert.deepEqual(JSON.parse(textOf(r)), { roots: {} });
			} finally {
				await old.close();
			}
		});
	});
}

test('an HTTP error answer whose body is over maxUpstreamMessageBytes fails its call at once, with the status', async () => {
	const gw = await startHttp({ servers: { st: { url: await startServerHttp() } }, sluice: { maxUpstreamMessageBytes: 4096, callTimeoutMs: 20000 } });
	try {
		const t0 = Date.now();
		const r = await rawCall(gw, 1, 'st__huge_error', {});
		assert.ok(Date.now() - t0 < 10000, 'not held until the call timeout');
		assert.match(JSON.stringify(r), /answered HTTP 400: \{/);
	} finally {
		await gw.close();
	}
});

describe('finding 8: -32022 to server/discover is retried with a version both speak', () => {
	for (const transport of ['stdio', 'http']) {
		test(`over ${transport}: the server stays a 2026-07-28 one and its tools work`, async () => {
			const log = path.join(mkdtempSync(path.join(os.tmpdir(), 'sluice-up2026-')), 'requests.jsonl');
			const args = ['--reject-discover', '1', '--supported', `2099-01-01,${MODERN},2025-11-25`, '--log', log];
			const entry = transport === 'stdio' ? stdio(...args) : { url: await startServerHttp(...args) };
			const raw = startRaw({ servers: { st: entry } });
			try {
				await raw.initialize(undefined, {});
				const r = await raw.request('tools/call', { name: 'st__caps', arguments: {} }, { ms: 15000 });
				assert.equal(r.result?.isError, undefined, JSON.stringify(r));
				assert.deepEqual(JSON.parse(r.result.content[0].text), {});
				const methods = logOf(log).map((m) => m.method);
				assert.deepEqual(methods.slice(0, 2), ['server/discover', 'server/discover']);
				assert.ok(!methods.includes('initialize'), methods.join(' '));
			} finally {
				await raw.close();
			}
		});
	}

	test('a -32022 listing only session-era versions sluice speaks falls back to initialize', async () => {
		const log = path.join(mkdtempSync(path.join(os.tmpdir(), 'sluice-up2026-')), 'requests.jsonl');
		const raw = startRaw({ servers: { st: stdio('--reject-discover', '9', '--supported', '2025-11-25', '--log', log) } });
		try {
			await raw.initialize(undefined, {});
			const r = await raw.request('tools/call', { name: 'st__caps', arguments: {} }, { ms: 15000 });
			// This server refuses initialize (it is 2026-only): the point is the order.
			assert.ok(r.error || r.result?.isError, JSON.stringify(r));
			const methods = logOf(log).map((m) => m.method);
			assert.deepEqual(methods.slice(0, 2), ['server/discover', 'initialize']);
		} finally {
			await raw.close();
		}
	});

	test('a -32022 sharing no version with sluice fails the server for good, saying why', async () => {
		const log = path.join(mkdtempSync(path.join(os.tmpdir(), 'sluice-up2026-')), 'requests.jsonl');
		const raw = startRaw({ servers: { st: stdio('--reject-discover', '9', '--supported', '2099-01-01', '--log', log) } });
		try {
			await raw.initialize(undefined, {});
			await eventually(() => /2099-01-01/.test(raw.stderr()), 10000, 50, 'the failure in the log');
			assert.match(raw.stderr(), /server 'st'.*2099-01-01.*not restarting/);
			const methods = logOf(log).map((m) => m.method);
			assert.deepEqual(methods, ['server/discover']);
		} finally {
			await raw.close();
		}
	});
});

// Finding 5: a server speaking both eras whose 2026-07-28 face lacks
// resources.subscribe (tests/servers/dual). Its "protocol" pin, and auto's
// rule (UPSTREAMS.md, "Choosing the era"), let a session-era client
// subscribe through sluice.
describe('finding 5: the era of a server that speaks both', () => {
	const DUAL = path.join(REPO, 'tests', 'servers', 'dual', 'server.mjs');
	const dual = (extra = {}, ...args) => ({ command: process.execPath, args: [DUAL, ...args], ...extra });
	const NOTE = 'sluice://dual/memo://note';

	// A session-era client subscribes to the note and hears its update.
	async function subscribes(raw) {
		await raw.initialize(undefined, {});
		const era = await raw.request('tools/call', { name: 'dual__era', arguments: {} }, { ms: 15000 });
		assert.equal(textOf(era.result), 'session', JSON.stringify(era));
		const sub = await raw.request('resources/subscribe', { uri: NOTE });
		assert.deepEqual(sub.result, {}, JSON.stringify(sub));
		await raw.request('tools/call', { name: 'dual__touch', arguments: {} });
		const upd = await raw.next((m) => m.method === 'notifications/resources/updated');
		assert.equal(upd.params.uri, NOTE);
	}

	for (const protocol of [undefined, 'auto', '2025-11-25']) {
		test(`"protocol": ${protocol ?? '(default)'}: a session-era client subscribes`, async () => {
			const raw = startRaw({ servers: { dual: dual(protocol ? { protocol } : {}) } });
			try {
				await subscribes(raw);
			} finally {
				await raw.close();
			}
		});
	}

	test('"protocol": "2026-07-28" speaks that era, whose face has no subscriptions', async () => {
		const raw = startRaw({ servers: { dual: dual({ protocol: MODERN }) } });
		try {
			await raw.initialize(undefined, {});
			const era = await raw.request('tools/call', { name: 'dual__era', arguments: {} }, { ms: 15000 });
			assert.equal(textOf(era.result), MODERN, JSON.stringify(era));
			const sub = await raw.request('resources/subscribe', { uri: NOTE });
			assert.equal(sub.error?.code, -32601, JSON.stringify(sub));
		} finally {
			await raw.close();
		}
	});

	for (const mode of ['refuse-session', 'ignore-session']) {
		test(`auto: a server that ${mode === 'refuse-session' ? 'refuses' : 'ignores'} initialize after all is spoken to in 2026-07-28`, async () => {
			const raw = startRaw({ servers: { dual: dual({}, mode) } });
			try {
				await raw.initialize(undefined, {});
				const era = await raw.request('tools/call', { name: 'dual__era', arguments: {} }, { ms: 20000 });
				assert.equal(textOf(era.result), MODERN, JSON.stringify(era));
				assert.doesNotMatch(raw.stderr(), /restarting/);
			} finally {
				await raw.close();
			}
		});
	}

	for (const [protocol, arg, said] of [
		['2025-11-25', 'refuse-session', /refused initialize with protocol version 2025-11-25/],
		['2025-11-25', 'old-session', /answered initialize with protocol version 2025-06-18/],
	]) {
		test(`a pinned ${protocol} the server refuses (${arg}) fails it for good, naming the server and the pin`, async () => {
			const raw = startRaw({ servers: { dual: dual({ protocol }, arg) } });
			try {
				await raw.initialize(undefined, {});
				const r = await raw.request('tools/call', { name: 'dual__era', arguments: {} }, { ms: 15000 });
				assert.ok(r.error || r.result?.isError, JSON.stringify(r));
				await eventually(() => /server 'dual'.*pins "protocol"/.test(raw.stderr()), 10000, 50, 'the failure in the log');
				assert.match(raw.stderr(), said);
				assert.match(raw.stderr(), new RegExp(`server 'dual' .*pins "protocol": "${protocol}"; not restarting`));
			} finally {
				await raw.close();
			}
		});
	}

	test('a pinned 2026-07-28 that a session-era server refuses fails it for good, naming the server', async () => {
		const raw = startRaw({ servers: { old: { command: process.execPath, args: [path.join(REPO, 'tests', 'servers', 'upgrade', 'server.mjs'), '/nonexistent'], protocol: MODERN } } });
		try {
			await raw.initialize(undefined, {});
			await eventually(() => /server 'old'.*pins "protocol"/.test(raw.stderr()), 10000, 50, 'the failure in the log');
			assert.match(raw.stderr(), /server 'old' did not answer server\/discover with 2026-07-28 \(Method not found\), but its entry pins "protocol": "2026-07-28"; not restarting/);
		} finally {
			await raw.close();
		}
	});

	test('a bad "protocol" is a config error naming its values', async () => {
		const file = writeConfig({ dual: dual({ protocol: '2023-01-01' }) });
		const r = await runSluice(['check', '--config', file]);
		assert.notEqual(r.code, 0);
		assert.match(r.stderr + r.stdout, /protocol.*"auto", "2026-07-28", "2025-11-25"/);
	});
});
