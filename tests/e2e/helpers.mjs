// Shared helpers for sluice's end-to-end tests (Node's built-in test runner).
//
//   const gw = await connect({ servers: { github: catalog('github') }, sluice: { exposure: 'router' } });
//   const r = await gw.client.callTool({ name: 'github__echo', arguments: { a: 1 } });
//   await gw.close();
//
//   const raw = await startRaw({ servers, sluice });     // JSON lines, no SDK
//   raw.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
//   const msg = await raw.next((m) => m.id === 1, 5000);
//   await raw.close();
//
// Every wait has a timeout; every child is killed in close(), and
// closeAll() (registered by the test files in after()) kills whatever a
// failing test left behind.
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { mkdtempSync, writeFileSync, rmSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(here, '..', '..');
export const SLUICE = process.env.SLUICE || path.join(REPO, 'build', 'sluice');
export const CATALOG = process.env.CATALOG || path.join(REPO, 'build', 'tests', 'catalog');
export const EVERYTHING =
	process.env.EVERYTHING || path.join(REPO, 'node_modules', '.bin', 'mcp-server-everything');

export const MODERN = '2026-07-28';
export const LEGACY = '2025-11-25';
export const NAME_RE = /^[A-Za-z0-9_-]{1,64}$/;

// ---- config -----------------------------------------------------------------

// Under make test SAN=... the sanitizer options (tests/run.sh sends every
// report to a file) must reach sluice and the catalog, which the SDK and
// the gateway otherwise start with an allowlisted environment only.
const SAN_ENV = Object.fromEntries(
	['ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS'].filter((k) => process.env[k]).map((k) => [k, process.env[k]]),
);
const withSanEnv = (env) => (env || Object.keys(SAN_ENV).length ? { env: { ...SAN_ENV, ...env } } : {});

// What sluice keeps in its state directory by default (the audit file) goes
// to this run's own directory, never the user's: runSluice and startRaw
// inherit process.env, connect passes it on.
const STATE_HOME = mkdtempSync(path.join(os.tmpdir(), 'sluice-e2e-state-'));
process.env.XDG_STATE_HOME = STATE_HOME;
process.on('exit', () => rmSync(STATE_HOME, { recursive: true, force: true }));

export function catalog(backend, extra = {}) {
	return { command: CATALOG, args: ['--backend', backend], ...extra, ...withSanEnv(extra.env) };
}

// The conformance suite's fixture back end (tests/servers/conformance).
export function conformanceFixture(extra = {}) {
	return { command: process.execPath, args: [path.join(REPO, 'tests', 'servers', 'conformance', 'server.mjs')], ...extra };
}

export function everything(extra = {}) {
	return { command: EVERYTHING, args: ['stdio'], ...extra };
}

const tempDirs = [];

// Writes {"mcpServers": servers, "sluice": sluice} to a fresh temp dir and
// returns the file's path.
export function writeConfig(servers, sluice = {}) {
	const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-e2e-'));
	tempDirs.push(dir);
	const file = path.join(dir, 'sluice.json');
	// Tool pins go to this test's own state directory, never the user's.
	if (sluice && typeof sluice === 'object' && !Array.isArray(sluice))
		sluice = { ...sluice, pinning: { stateDir: path.join(dir, 'state'), ...(sluice.pinning ?? {}) } };
	writeFileSync(file, JSON.stringify({ mcpServers: servers, sluice }, null, 2));
	return file;
}

// A tiny MCP stdio server for a test, written to a temp file. `tools` is
// the source of an expression giving the tools list (evaluated at each
// tools/list), `call` the source of a function (params, ok, fail) for
// tools/call, `prelude` code run first (process.argv[2] is args[0]).
// Returns a server entry for writeConfig.
export function tinyServer({ name, prelude = '', tools, call, args = [] }) {
	const src = `${prelude}
const rl = require('node:readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
const listTools = () => (${tools});
const callTool = ${call};
rl.on('line', (line) => {
	let m;
	try { m = JSON.parse(line); } catch { return; }
	if (m.id === undefined || !m.method) return;
	const ok = (result) => send({ jsonrpc: '2.0', id: m.id, result });
	const fail = (code, message) => send({ jsonrpc: '2.0', id: m.id, error: { code, message } });
	if (m.method === 'initialize')
		ok({ protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: ${JSON.stringify(name)}, version: '1.0.0' } });
	else if (m.method === 'tools/list') ok({ tools: listTools() });
	else if (m.method === 'tools/call') callTool(m.params, ok, fail);
	else if (m.method === 'ping') ok({});
	else fail(-32601, 'Method not found');
});
`;
	const file = path.join(path.dirname(writeConfig({})), `${name}.cjs`);
	writeFileSync(file, src);
	return { command: process.execPath, args: [file, ...args] };
}

// ---- small utilities ------------------------------------------------------------

// Canonical JSON as the audit stage makes it: keys sorted, no whitespace;
// sha: its SHA-256 (hex), the arguments' hash of audit lines and confirmations.
export function canonical(v) {
	if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
	if (v && typeof v === 'object')
		return `{${Object.keys(v)
			.sort()
			.map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
			.join(',')}}`;
	return JSON.stringify(v);
}
export const sha = (v) => createHash('sha256').update(canonical(v)).digest('hex');

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A loopback port free a moment ago, for a fixture that must be told its
// port (another process may take it meanwhile: the tests run alone enough).
export function freePort() {
	return new Promise((resolve, reject) => {
		const s = net.createServer();
		s.once('error', reject);
		s.listen(0, '127.0.0.1', () => {
			const { port } = s.address();
			s.close(() => resolve(port));
		});
	});
}

// Rejects after ms with a message naming what was awaited.
export function withTimeout(promise, ms, what = 'operation') {
	let timer;
	return Promise.race([
		promise,
		new Promise((_, reject) => {
			timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
		}),
	]).finally(() => clearTimeout(timer));
}

// Polls fn until it returns a truthy value (returned) or ms pass (throws).
export async function eventually(fn, ms = 5000, step = 100, what = 'condition') {
	const end = Date.now() + ms;
	let last;
	for (;;) {
		try {
			const v = await fn();
			if (v) return v;
		} catch (e) {
			last = e;
		}
		if (Date.now() > end)
			throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? ': ' + last.message : ''}`);
		await sleep(step);
	}
}

export function textOf(result) {
	return (result?.content ?? [])
		.filter((c) => c.type === 'text')
		.map((c) => c.text)
		.join('\n');
}

// The JSON inside a router tool's single text block.
export function jsonOf(result) {
	return JSON.parse(textOf(result));
}

// search_tools' answer as hits, one per line:
// `tools.<server>.<tool>(args: {...}): Promise<Result>  // summary`, or
// `tools.<server>["raw-name"](...)` when two tools share an identifier.
export function searchHits(result) {
	return textOf(result)
		.split('\n')
		.filter((line) => line.startsWith('tools.'))
		.map((line) => {
			const m = /^tools\.([A-Za-z0-9_$]+)(?:\.([A-Za-z0-9_$]+)|\[("(?:[^"\\]|\\.)*")\])\(args: /.exec(line);
			assert.ok(m, `not a signature line: ${line}`);
			const c = line.indexOf('  // ');
			return { server: m[1], tool: m[2] ?? JSON.parse(m[3]), line, summary: c >= 0 ? line.slice(c + 5) : '' };
		});
}

// ---- live processes, for cleanup ------------------------------------------------

const live = new Set();

export async function closeAll() {
	await Promise.allSettled([...live, ...httpGateways].map((x) => x.close()));
	for (const d of tempDirs.splice(0)) rmSync(d, { recursive: true, force: true });
	rmSync(STATE_HOME, { recursive: true, force: true }); // made again if a later test needs it
}

// ---- SDK client ------------------------------------------------------------------

// Starts sluice with the config and connects an SDK Client over stdio.
// opts: servers, sluice, capabilities (client), handlers [[schema, fn]],
// clientInfo, configPath (use an existing file), env (extra environment),
// wrap (a command line in front of sluice's).
// Returns { client, transport, wire, stderr(), notifications, close() }.
// wire: every message received from sluice, in order.
export async function connect(opts = {}) {
	const configPath = opts.configPath ?? writeConfig(opts.servers ?? {}, opts.sluice ?? {});
	// opts.wrap: a command line that runs sluice as its last arguments
	// (e.g. a script that mounts something first).
	const wrap = opts.wrap ?? [];
	const transport = new StdioClientTransport({
		command: wrap.length ? wrap[0] : SLUICE,
		args: [...wrap.slice(1), ...(wrap.length ? [SLUICE] : []), 'serve', '--config', configPath],
		stderr: 'pipe',
		// opts.env: extra variables for sluice (the SDK adds its safe defaults).
		...withSanEnv({ XDG_STATE_HOME: STATE_HOME, ...opts.env }),
	});
	let err = '';
	transport.stderr.on('data', (b) => {
		err += b.toString();
	});
	const wire = [];
	// Record every incoming message before the SDK sees it.
	let handler;
	Object.defineProperty(transport, 'onmessage', {
		configurable: true,
		get: () => handler,
		set: (fn) => {
			handler = fn
				? (msg, extra) => {
						wire.push(msg);
						fn(msg, extra);
					}
				: fn;
		},
	});
	const client = new Client(opts.clientInfo ?? { name: 'sluice-e2e', version: '1.0.0' }, {
		capabilities: opts.capabilities ?? {},
	});
	for (const [schema, fn] of opts.handlers ?? []) client.setRequestHandler(schema, fn);
	const notifications = [];
	client.fallbackNotificationHandler = async (n) => {
		notifications.push(n);
	};
	const gw = {
		client,
		transport,
		wire,
		notifications,
		configPath,
		stderr: () => err,
		pid: () => transport.pid,
		async close() {
			live.delete(gw);
			await withTimeout(client.close(), 6000, 'client close').catch(() => {
				try {
					process.kill(transport.pid, 'SIGKILL');
				} catch {}
			});
		},
	};
	live.add(gw);
	try {
		await withTimeout(client.connect(transport), 15000, 'the SDK client to connect');
	} catch (e) {
		await gw.close();
		e.message += `\nsluice stderr:\n${err}`;
		throw e;
	}
	return gw;
}

// Waits until the gateway's tools/list satisfies pred (upstreams start
// asynchronously and may announce tools late).
export async function toolsWhen(client, pred, ms = 8000) {
	let last;
	await eventually(
		async () => {
			last = (await client.listTools()).tools;
			return pred(last);
		},
		ms,
		150,
		'tools/list to match',
	).catch((e) => {
		e.message += `; last names: ${last?.map((t) => t.name).join(', ')}`;
		throw e;
	});
	return last;
}

// The progress notifications (params, without the token) that came on the
// wire before the response whose result satisfies pred, for that request
// (the SDK's progress token is its request id). A test asserts these, not
// what an SDK's onprogress saw: SDK clients handle a notification a
// microtask after reading it but a response at once, so one read in the
// same chunk as its response is lost to onprogress (sluice spaces them by
// 5 ms, which a loaded machine can fold into one read).
export function progressBefore(wire, pred) {
	const i = wire.findIndex((m) => 'id' in m && 'result' in m && pred(m.result));
	if (i < 0) throw new Error('no such response on the wire');
	return wire.slice(0, i)
		.filter((m) => m.method === 'notifications/progress' && m.params.progressToken === wire[i].id)
		.map(({ params: { progressToken, ...rest } }) => rest);
}

// ---- raw JSON lines ----------------------------------------------------------------

// Starts `sluice serve --config` with a JSON-lines driver.
// opts: servers, sluice, configPath, args (extra), env (extra environment).
export function startRaw(opts = {}) {
	const configPath = opts.configPath ?? writeConfig(opts.servers ?? {}, opts.sluice ?? {});
	const child = spawn(SLUICE, ['serve', '--config', configPath, ...(opts.args ?? [])], {
		stdio: ['pipe', 'pipe', 'pipe'],
		...(opts.env ? { env: { ...process.env, ...opts.env } } : {}),
	});
	let err = '';
	let partial = '';
	const queue = []; // { msg, line } not yet consumed
	const all = []; // every message received, in order
	const waiters = [];
	let exited = null;
	const exitPromise = new Promise((resolve) => {
		child.on('exit', (code, signal) => {
			exited = { code, signal };
			resolve(exited);
			for (const w of waiters.splice(0)) w.fail(new Error(`sluice exited (${code ?? signal}) while waiting`));
		});
	});
	child.on('error', (e) => {
		err += `spawn error: ${e.message}\n`;
	});
	child.stderr.on('data', (b) => {
		err += b.toString();
	});
	child.stdin.on('error', () => {});
	child.stdout.on('data', (b) => {
		partial += b.toString('utf8');
		let nl;
		while ((nl = partial.indexOf('\n')) >= 0) {
			const line = partial.slice(0, nl);
			partial = partial.slice(nl + 1);
			if (!line.trim()) continue;
			let msg;
			try {
				msg = JSON.parse(line);
			} catch {
				msg = { __unparsable: line };
			}
			const item = { msg, line };
			all.push(item);
			const w = waiters.find((x) => x.pred(msg, line));
			if (w) {
				waiters.splice(waiters.indexOf(w), 1);
				w.ok(item);
			} else queue.push(item);
		}
	});

	let nextId = 1;
	const raw = {
		child,
		configPath,
		all,
		stderr: () => err,
		exited: () => exited,
		sendLine(line) {
			child.stdin.write(line.endsWith('\n') ? line : line + '\n');
		},
		send(obj) {
			raw.sendLine(JSON.stringify(obj));
		},
		// The next unconsumed message matching pred (msg, rawLine) => bool.
		nextItem(pred, ms = 5000) {
			const i = queue.findIndex((x) => pred(x.msg, x.line));
			if (i >= 0) return Promise.resolve(queue.splice(i, 1)[0]);
			if (exited) return Promise.reject(new Error(`sluice has exited (${exited.code ?? exited.signal})`));
			return new Promise((resolve, reject) => {
				const w = {
					pred,
					ok: (x) => {
						clearTimeout(w.timer);
						resolve(x);
					},
					fail: (e) => {
						clearTimeout(w.timer);
						reject(e);
					},
				};
				w.timer = setTimeout(() => {
					waiters.splice(waiters.indexOf(w), 1);
					reject(new Error(`no matching message within ${ms} ms; stderr:\n${err.slice(-2000)}`));
				}, ms);
				waiters.push(w);
			});
		},
		async next(pred, ms = 5000) {
			return (await raw.nextItem(pred, ms)).msg;
		},
		// Resolves true if no message matching pred arrives within ms.
		async none(pred, ms) {
			try {
				await raw.nextItem(pred, ms);
				return false;
			} catch (e) {
				if (/no matching message/.test(e.message)) return true;
				throw e;
			}
		},
		// Sends a request and returns its response message.
		async request(method, params, { id, ms = 8000 } = {}) {
			const rid = id ?? `r${nextId++}`;
			const msg = { jsonrpc: '2.0', id: rid, method };
			if (params !== undefined) msg.params = params;
			raw.send(msg);
			return raw.next((m) => m.id === rid && !('method' in m), ms);
		},
		notify(method, params) {
			const msg = { jsonrpc: '2.0', method };
			if (params !== undefined) msg.params = params;
			raw.send(msg);
		},
		// Legacy handshake: initialize + notifications/initialized.
		async initialize(protocolVersion = LEGACY, capabilities = {}) {
			const r = await raw.request(
				'initialize',
				{ protocolVersion, capabilities, clientInfo: { name: 'raw-e2e', version: '1.0.0' } },
				{ ms: 15000 },
			);
			raw.notify('notifications/initialized');
			return r;
		},
		async close() {
			live.delete(raw);
			if (exited) return;
			try {
				child.stdin.end();
			} catch {}
			const t = setTimeout(() => child.kill('SIGTERM'), 3000);
			const k = setTimeout(() => child.kill('SIGKILL'), 6000);
			await exitPromise;
			clearTimeout(t);
			clearTimeout(k);
		},
		wait: () => exitPromise,
	};
	live.add(raw);
	return raw;
}

// The 2026-07-28 request _meta.
export function modernMeta(caps = {}, extra = {}) {
	return {
		'io.modelcontextprotocol/protocolVersion': MODERN,
		'io.modelcontextprotocol/clientCapabilities': caps,
		'io.modelcontextprotocol/clientInfo': { name: 'raw-e2e', version: '1.0.0' },
		...extra,
	};
}

// ---- HTTP ------------------------------------------------------------------------------

const httpGateways = new Set();

// Starts `sluice serve --http LISTEN --config FILE` and resolves once it logs
// the address it listens on: { proc, pid, url, port, configPath, stderr(), close() }.
// opts: servers, sluice, configPath (use an existing file), listen
// (127.0.0.1:0), env (extra environment), args (extra).
// One raw HTTP request (node:http: any header, Host included) on a
// connection of its own; opts are http.request's, body a string or a value
// sent as JSON. Resolves { status, headers, text, json, ms }: json is the
// body parsed, or for an SSE answer its last event's data.
export function httpRequest(opts, body, timeoutMs = 10000) {
	const t0 = performance.now();
	const headers = { accept: 'application/json, text/event-stream', ...opts.headers };
	if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
	const data = body === undefined || typeof body === 'string' ? body : JSON.stringify(body);
	return new Promise((resolve, reject) => {
		const req = http.request({ agent: false, ...opts, headers }, (res) => {
			let text = '';
			res.setEncoding('utf8');
			res.on('data', (c) => (text += c));
			res.on('end', () => {
				let json;
				try {
					const events = text.split('\n').filter((l) => l.startsWith('data: '));
					json = JSON.parse(/event-stream/.test(res.headers['content-type']) ? events.at(-1).slice(6) : text);
				} catch {}
				resolve({ status: res.statusCode, headers: res.headers, text, json, ms: performance.now() - t0 });
			});
		});
		req.on('error', reject);
		req.setTimeout(timeoutMs, () => req.destroy(new Error('timeout')));
		req.end(data);
	});
}

export function startHttp(opts = {}) {
	const configPath = opts.configPath ?? writeConfig(opts.servers ?? {}, opts.sluice ?? {});
	const proc = spawn(SLUICE, ['serve', '--http', opts.listen ?? '127.0.0.1:0', '--config', configPath, ...(opts.args ?? [])], {
		stdio: ['ignore', 'ignore', 'pipe'],
		...(opts.env ? { env: { ...process.env, ...opts.env } } : {}),
	});
	let err = '';
	const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
	const gw = {
		proc,
		pid: proc.pid,
		configPath,
		exited,
		stderr: () => err,
		close: () => {
			httpGateways.delete(gw);
			if (proc.exitCode === null && proc.signalCode === null) {
				proc.kill('SIGTERM');
				setTimeout(() => proc.kill('SIGKILL'), 3000).unref();
			}
			return exited;
		},
	};
	httpGateways.add(gw);
	return new Promise((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`sluice did not listen: ${err}`)), 15000);
		proc.stderr.on('data', (d) => {
			err += d;
			const m = /listening on (https?:\/\/[^\s]+)/.exec(err);
			if (m && !gw.url) {
				clearTimeout(timer);
				gw.url = m[1];
				gw.port = Number(new URL(gw.url).port);
				resolve(gw);
			}
		});
		proc.on('exit', (code) => {
			clearTimeout(timer);
			reject(new Error(`sluice exited ${code}: ${err}`));
		});
	});
}

// An SDK 1.x client over Streamable HTTP: { client, transport }.
export async function httpClient(url, { headers = {}, capabilities = {}, handlers = [], name = 'http-e2e' } = {}) {
	const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
	const client = new Client({ name, version: '1.0.0' }, { capabilities });
	for (const [schema, fn] of handlers) client.setRequestHandler(schema, fn);
	await client.connect(transport);
	return { client, transport };
}

// ---- the CLI ---------------------------------------------------------------------------

// Runs sluice with args; resolves { code, stdout, stderr }.
// env: extra environment.
export function runSluice(args, ms = 20000, env = {}) {
	return new Promise((resolve) => {
		const opts = { timeout: ms, maxBuffer: 16 << 20, env: { ...process.env, ...env } };
		execFile(SLUICE, args, opts, (error, stdout, stderr) => {
			resolve({ code: error ? (error.code ?? error.signal) : 0, stdout, stderr, killed: error?.killed });
		});
	});
}

// ---- processes (Linux /proc) -------------------------------------------------------------

// Every process visible in /proc: { pid, ppid, state, cmdline, utime } (utime in clock ticks).
// Processes that end while being read are skipped.
export function listProcs() {
	const out = [];
	for (const d of readdirSync('/proc')) {
		if (!/^\d+$/.test(d)) continue;
		try {
			const status = readFileSync(`/proc/${d}/status`, 'utf8');
			const cmdline = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').join(' ').trim();
			const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
			// Fields after the command name "(...)": state is field 3, utime field 14.
			const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
			out.push({
				pid: Number(d),
				ppid: Number(/^PPid:\s+(\d+)/m.exec(status)?.[1] ?? -1),
				state: rest[0],
				utime: Number(rest[11]),
				cmdline,
			});
		} catch {}
	}
	return out;
}

// The processes descending from pid (children first), from one snapshot.
export function descendants(pid, procs = listProcs()) {
	const out = [];
	const walk = (p) => {
		for (const c of procs.filter((x) => x.ppid === p)) {
			out.push(c);
			walk(c.pid);
		}
	};
	walk(pid);
	return out;
}

// The code-mode zygote of the gateway with this pid (`sluice __zygote ...`, a child of
// the gateway) and its workers (the zygote's children), or null.
export function zygoteOf(gatewayPid) {
	const procs = listProcs();
	const zygote = procs.find((p) => p.ppid === gatewayPid && p.cmdline.includes('__zygote'));
	if (!zygote) return null;
	return { zygote, workers: procs.filter((p) => p.ppid === zygote.pid) };
}

// True if pid is a live (not zombie) process whose cmdline contains what.
export function aliveWith(pid, what) {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
		if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return false;
		return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(what);
	} catch {
		return false;
	}
}

// ---- code mode --------------------------------------------------------------------------------

// Runs an execute_code program through an SDK client.
// Resolves { result, text, isError, kind, ms }: kind is the failure's kind ("timeout", ...).
export async function execCode(client, code, options) {
	const t0 = Date.now();
	const result = await client.callTool({ name: 'execute_code', arguments: { code } }, undefined, options);
	const text = textOf(result);
	const isError = result.isError === true;
	const kind = isError ? /^([a-z]+): /.exec(text)?.[1] : undefined;
	return { result, text, isError, kind, ms: Date.now() - t0 };
}
