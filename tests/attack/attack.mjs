// make attack: hostile peers against one `sluice serve --http` gateway.
//
// One gateway (bearer token, code mode on, sluice.limits.maxBufferedBytes
// set low) over the test catalog (github) and a hostile upstream
// (tests/attack/flood-server.mjs), then these attacks one after another,
// each for ATTACK_SECONDS (5), loopback only:
//
//   slowloris         2,000 sockets that trickle header bytes and never finish
//   body flood        64 connections with a wrong token, each sending a 4 MiB body slowly
//   detached streams  5 sessions x 32 progress-heavy requests (SSE), every connection
//                     cut at once, round after round
//   backlog           the upstream floods 4 MiB notifications/message while sessions
//                     have no GET stream, and one GET stream's client stops reading
//   deep JSON         arrays and objects nested ~300,000 deep (600 KB) in tool
//                     arguments (both eras), initialize capabilities and ping params
//   program flood     24 execute_code programs at once, each holding 100 MiB and
//                     sleeping, half over sessions, half in the 2026-07-28 era
//   token flood       64 connections sending forged OAuth access tokens as fast as
//                     they are answered: made-up key ids, a real key id with a
//                     forged signature, garbage, oversize; the gateway is an OAuth
//                     resource server whose issuer (a key set served here) counts
//                     its fetches, which must stay at one per minRefreshSeconds
//   token churn       64 connections sending random opaque tokens as fast as they
//                     are answered, against an introspection endpoint that takes
//                     200 ms (cacheSeconds 1, maxInFlight 4); a known token, whose
//                     answer ages out every second, asks back to back and must be
//                     served at least 90% of the time (issue 32, finding 13)
//   program slots     one caller (a static token) keeps 40 looping execute_code
//                     programs asked for; another caller's programs, one after
//                     another, must each be admitted and run (issue 32, finding 12)
//
// The last two need a team's gateway (static tokens with subjects, and
// introspection): each gets one of its own, started for the row and stopped
// after it, with the same budget rules.
//
// Throughout each attack a client holding the token pings over its own MCP
// session every 50 ms, each ping on a fresh connection (a client arriving
// during the attack must get in). A row passes when every ping was answered
// within PING_DEADLINE_MS (1000) and the gateway's peak RSS stayed under the
// budget: maxBufferedBytes + the RSS measured idle after warm-up +
// ATTACK_RSS_SLACK_MIB (32: per-connection state, parse buffers, allocator
// slack) + MESSAGE_FACTOR (10) x the largest single message the attack has
// relayed (the backlog's 4 MiB notifications: the upstream's read buffer,
// the parse, redaction's copy, one session's copy, its serialisation and SSE
// frame exist at once while one message is relayed; measured about 10x). The program flood also needs its workers' summed RSS under
// maxConcurrent x heapBytes + WORKER_SLACK, and at most maxConcurrent
// workers holding a program's memory at once. Peak RSS: VmHWM after resetting
// it (echo 5 > /proc/PID/clear_refs) before the attack, together with
// VmRSS sampled every 20 ms.
//
// One gateway serves every attack; one that dies, no longer answers a ping
// after the attack, or is left over the budget (that row fails) is replaced
// for the next attack, so each row measures its own attack. Every process
// started here is killed by PID on any exit the harness can catch (the
// gateway and every descendant of it, from a /proc walk). Prints a table
// and exits 1 if any row fails; ATTACK_REPORT=FILE writes it as Markdown
// too; ATTACK_ONLY=slowloris,deep-json runs only those.
//
//   SLUICE=build/sluice CATALOG=build/tests/catalog node tests/attack/attack.mjs
import { spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { catalog, writeConfig, closeAll, modernMeta, sleep, SLUICE, LEGACY, MODERN } from '../e2e/helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const SECONDS = Number(process.env.ATTACK_SECONDS ?? 5);
const ONLY = process.env.ATTACK_ONLY ? process.env.ATTACK_ONLY.split(',') : null;
const REPORT = process.env.ATTACK_REPORT;
const PING_EVERY_MS = 50;
const PING_DEADLINE_MS = Number(process.env.PING_DEADLINE_MS ?? 1000);
const MIB = 1 << 20;
const RSS_SLACK = Number(process.env.ATTACK_RSS_SLACK_MIB ?? 32) * MIB;
const MESSAGE_FACTOR = 10;
const WORKER_SLACK = 64 * MIB; // the zygote's prepared workers and each worker's own runtime
const TOKEN = `attack-${process.pid}-${Date.now().toString(36)}`;

// notificationsPerSecond lifted: the detached-stream and backlog attacks
// test the memory budget, not the rate cap in front of it (floods.test.mjs).
const LIMITS = { maxBufferedBytes: 64 * MIB, notificationsPerSecond: 1000000 };
const CODE = { enabled: true, maxConcurrent: 4, heapBytes: 128 * MIB, poolSize: 2, timeoutMs: 30000, cpuMs: 5000 };
const JWKS_REFRESH_S = 5; // sluice.http.auth.jwks.minRefreshSeconds of the gateway here

const RESOURCE = 'https://attack.invalid/mcp';
const INTROSPECTION_DELAY_MS = 200;
// The team's callers (static tokens with subjects) on the rows' own gateway.
const TEAM = { alice: `alice-${TOKEN}`, bob: `bob-${TOKEN}` };

// The OAuth issuer the gateway trusts (the token flood's target): a key set
// on a loopback port, counting the times it is fetched; and an RFC 7662
// introspection endpoint (the token churn's), answering after
// INTROSPECTION_DELAY_MS: active for the tokens in issuer.active.
const issuer = { fetches: 0, active: new Set() };
{
	const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
	const jwks = JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'attack-1', alg: 'RS256', use: 'sig' }] });
	issuer.server = http.createServer((req, res) => {
		res.setHeader('content-type', 'application/json');
		if (req.url !== '/introspect') {
			issuer.fetches++;
			res.end(jwks);
			return;
		}
		let body = '';
		req.on('data', (c) => {
			if (body.length < 64 * 1024) body += c;
		});
		req.on('end', () => {
			const token = new URLSearchParams(body).get('token') ?? '';
			const answer = issuer.active.has(token)
				? { active: true, sub: 'known-person', aud: RESOURCE, exp: Math.floor(Date.now() / 1000) + 3600 }
				: { active: false };
			setTimeout(() => res.end(JSON.stringify(answer)), INTROSPECTION_DELAY_MS);
		});
	});
}
const mib = (b) => (b / MIB).toFixed(1);
const fmtMs = (x) => (Number.isFinite(x) ? x.toFixed(1) : '-');

// ---- processes -----------------------------------------------------------------

function childrenOf(pid) {
	const out = [];
	try {
		for (const t of readdirSync(`/proc/${pid}/task`))
			for (const c of readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/))
				if (c) out.push(Number(c));
	} catch {}
	return out;
}

function descendantsOf(pid) {
	const out = [];
	const walk = (p) => {
		for (const c of childrenOf(p)) {
			out.push(c);
			walk(c);
		}
	};
	walk(pid);
	return out;
}

function statusField(pid, field) {
	try {
		const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
		return m ? Number(m[1]) * 1024 : 0;
	} catch {
		return 0;
	}
}

const cmdline = (pid) => {
	try {
		return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
	} catch {
		return '';
	}
};

// The workers: children of the gateway's zygote (`sluice __zygote`).
function workersOf(gwPid) {
	const zygote = childrenOf(gwPid).find((c) => cmdline(c).includes('__zygote'));
	return zygote ? childrenOf(zygote) : [];
}

// ---- the gateway ------------------------------------------------------------------

const gateways = new Set(); // every gateway started and not yet reaped
const TAIL = 64 * 1024;

// team: the gateway of a team (the rows that need callers with subjects
// and introspection), else the one the other rows share.
async function startGateway(team = false) {
	const auth = {
		resource: RESOURCE,
		authorizationServers: [issuer.url],
		jwksUri: `${issuer.url}/jwks`,
		jwks: { minRefreshSeconds: JWKS_REFRESH_S },
	};
	if (team) {
		auth.tokens = Object.entries(TEAM).map(([subject, token]) => ({ token, subject }));
		auth.introspection = { endpoint: `${issuer.url}/introspect`, clientId: 'sluice', clientSecret: 'attack-secret',
			cacheSeconds: 1, maxInFlight: 4 };
	}
	const configPath = writeConfig(
		{
			github: catalog('github'),
			flood: { command: process.execPath, args: [path.join(here, 'flood-server.mjs')] },
		},
		{
			audit: { file: '/dev/null' },
			http: { bearerToken: TOKEN, auth },
			// The shared gateway's programs are all the bearer token's, one
			// caller: given every slot, the program flood measures the global
			// bound; the team's gateway keeps the per-caller shares.
			codeMode: team ? CODE : { ...CODE, maxConcurrentPerCaller: CODE.maxConcurrent, maxQueuedPerCaller: 32 },
			limits: LIMITS,
		},
	);
	const proc = spawn(SLUICE, ['serve', '--http', '127.0.0.1:0', '--config', configPath], { stdio: ['ignore', 'ignore', 'pipe'] });
	const gw = { proc, pid: proc.pid, tail: '', known: new Set() };
	gw.exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
	gw.alive = () => proc.exitCode === null && proc.signalCode === null;
	gateways.add(gw);
	proc.stderr.setEncoding('utf8');
	await new Promise((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`sluice did not listen within 15 s: ${gw.tail}`)), 15000);
		proc.stderr.on('data', (d) => {
			gw.tail = (gw.tail + d).slice(-TAIL);
			const m = !gw.url && /listening on (http:\/\/[^\s]+)/.exec(gw.tail);
			if (m) {
				clearTimeout(timer);
				gw.url = new URL(m[1]);
				gw.port = Number(gw.url.port);
				resolve();
			}
		});
		proc.once('exit', (code, signal) => {
			clearTimeout(timer);
			reject(new Error(`sluice exited (${code ?? signal}) at start: ${gw.tail}`));
		});
	});
	return gw;
}

// Remembers the gateway's descendants (upstreams, zygote, workers) so they
// can be killed by PID even after the gateway is gone.
function noteDescendants(gw) {
	for (const p of descendantsOf(gw.pid)) gw.known.add(p);
}

function killKnown(gw) {
	for (const p of gw.known)
		try {
			process.kill(p, 'SIGKILL');
		} catch {}
}

async function stopGateway(gw) {
	if (!gateways.has(gw)) return;
	noteDescendants(gw);
	if (gw.alive()) {
		gw.proc.kill('SIGTERM');
		const t = setTimeout(() => gw.alive() && gw.proc.kill('SIGKILL'), 3000);
		await gw.exited;
		clearTimeout(t);
	}
	// Whatever outlived it (an orphaned upstream or worker) goes now.
	await sleep(200);
	killKnown(gw);
	gateways.delete(gw);
}

function killAllNow() {
	for (const gw of gateways) {
		noteDescendants(gw);
		try {
			gw.proc.kill('SIGKILL');
		} catch {}
		killKnown(gw);
	}
	gateways.clear();
}

// ---- HTTP ---------------------------------------------------------------------------

const sockets = new Set(); // every socket an attack opened, destroyed on exit

// One request on a fresh connection. Resolves { status, headers, text, json }
// (json: the JSON-RPC answer, from a JSON body or the last SSE event), or
// { error } on a network error or after timeoutMs.
function request(gw, { method = 'POST', headers = {}, body, timeoutMs = 10000 } = {}) {
	const h = { accept: 'application/json, text/event-stream', authorization: `Bearer ${TOKEN}`, ...headers };
	if (body !== undefined) h['content-type'] = 'application/json';
	return new Promise((resolve) => {
		let done = false;
		const finish = (v) => {
			if (done) return;
			done = true;
			clearTimeout(timer);
			resolve(v);
		};
		const req = http.request({ host: '127.0.0.1', port: gw.port, path: '/mcp', method, headers: h, agent: false }, (res) => {
			let text = '';
			res.setEncoding('utf8');
			res.on('data', (c) => {
				if (text.length < 1 << 20) text += c;
			});
			res.on('end', () => {
				let json;
				try {
					if (/event-stream/.test(res.headers['content-type'] ?? '')) {
						const events = text.split('\n').filter((l) => l.startsWith('data: '));
						json = events.map((l) => JSON.parse(l.slice(6))).findLast((m) => !('method' in m));
					} else if (text) json = JSON.parse(text);
				} catch {}
				finish({ status: res.statusCode, headers: res.headers, text, json });
			});
			res.on('error', (e) => finish({ error: e.message }));
		});
		const timer = setTimeout(() => {
			req.destroy();
			finish({ error: `no answer within ${timeoutMs} ms` });
		}, timeoutMs);
		req.on('error', (e) => finish({ error: e.message }));
		if (body !== undefined) req.write(typeof body === 'string' ? body : JSON.stringify(body));
		req.end();
	});
}

const rpc = (id, method, params) => ({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) });

// A session-era MCP session: initialize + notifications/initialized. Returns its id.
async function openSession(gw, name) {
	const r = await request(gw, {
		body: rpc(1, 'initialize', { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name, version: '1.0.0' } }),
	});
	const sid = r.headers?.['mcp-session-id'];
	if (r.status !== 200 || !sid) throw new Error(`initialize failed: ${r.error ?? `${r.status} ${r.text?.slice(0, 200)}`}`);
	await request(gw, { headers: { 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY }, body: { jsonrpc: '2.0', method: 'notifications/initialized' } });
	return sid;
}

const closeSession = (gw, sid) => request(gw, { method: 'DELETE', headers: { 'mcp-session-id': sid }, timeoutMs: 3000 });

const sessionPost = (gw, sid, body, opts = {}) =>
	request(gw, { ...opts, headers: { 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY, ...opts.headers }, body });

const modernCall = (gw, id, name, args, opts = {}) =>
	request(gw, {
		...opts,
		headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name },
		body: rpc(id, 'tools/call', { name, arguments: args, _meta: modernMeta() }),
	});

// ---- the pinging client ---------------------------------------------------------------

// Pings over its own session every PING_EVERY_MS until stop(); each ping on
// a fresh connection, each allowed PING_DEADLINE_MS.
function startPinger(gw, sid) {
	const lat = [];
	let failed = 0;
	let firstFailure;
	let running = true;
	let id = 100;
	const loop = (async () => {
		while (running) {
			const t0 = performance.now();
			const r = await sessionPost(gw, sid, rpc(++id, 'ping'), { timeoutMs: PING_DEADLINE_MS });
			const ms = performance.now() - t0;
			if (r.status === 200 && r.json?.id === id && r.json.result) lat.push(ms);
			else {
				failed++;
				firstFailure ??= r.error ?? `HTTP ${r.status}: ${r.text?.slice(0, 120)}`;
			}
			await sleep(Math.max(0, PING_EVERY_MS - ms));
		}
	})();
	return async () => {
		running = false;
		await loop;
		lat.sort((a, b) => a - b);
		const p99 = lat.length ? lat[Math.min(lat.length - 1, Math.floor(0.99 * lat.length))] : NaN;
		return { answered: lat.length, failed, p99, firstFailure };
	};
}

// ---- the attacks ------------------------------------------------------------------------

// Each: run(gw, until) resolves a short note once Date.now() >= until, with
// every socket it opened closed. ctx.workers is set by the program flood.

async function slowloris(gw, until) {
	const TARGET = Number(process.env.ATTACK_SLOWLORIS_SOCKETS ?? 2000);
	const MAX_OPENS = TARGET * 4; // bounded: loopback has about 28,000 ephemeral ports
	const open = new Set();
	let opens = 0, peak = 0, closedByServer = 0, refused = 0;
	const connect = () => {
		opens++;
		const s = net.connect({ host: '127.0.0.1', port: gw.port });
		sockets.add(s);
		open.add(s);
		s.setNoDelay(true);
		s.on('connect', () => s.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: '));
		s.on('data', () => {}); // whatever the gateway answers is read and dropped
		s.on('error', (e) => {
			if (e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET') refused++;
		});
		s.on('close', () => {
			if (open.delete(s) && Date.now() < until) closedByServer++;
			sockets.delete(s);
		});
	};
	// Keep TARGET sockets open: 200 new ones every 20 ms at most (closed ones are replaced).
	const opener = setInterval(() => {
		for (let i = 0; i < 200 && open.size < TARGET && opens < MAX_OPENS; i++) connect();
		peak = Math.max(peak, [...open].filter((s) => !s.connecting).length);
	}, 20);
	// One more header byte per socket every second: the line never ends.
	const trickle = setInterval(() => {
		for (const s of open) if (!s.connecting && s.writable) s.write('a');
	}, 1000);
	await sleep(until - Date.now());
	clearInterval(opener);
	clearInterval(trickle);
	for (const s of open) s.destroy();
	return `${opens} sockets opened, ${peak} at once; ${closedByServer} closed by the gateway, ${refused} refused or reset`;
}

async function bodyFlood(gw, until) {
	const CONNS = Number(process.env.ATTACK_BODY_CONNECTIONS ?? 64);
	const BODY = 4 * MIB;
	const CHUNK = 64 * 1024;
	// The whole body takes about 80% of the attack.
	const every = Math.max(5, Math.floor((SECONDS * 800) / (BODY / CHUNK)));
	const statuses = {};
	let sent = 0;
	const chunk = Buffer.alloc(CHUNK, 0x20);
	const one = () =>
		new Promise((resolve) => {
			const s = net.connect({ host: '127.0.0.1', port: gw.port });
			sockets.add(s);
			let answered = false;
			let timer;
			const end = () => {
				clearTimeout(timer);
				s.destroy();
				sockets.delete(s);
				resolve();
			};
			s.on('connect', () => {
				s.write(
					`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nAuthorization: Bearer wrong-${TOKEN}\r\n` +
						`Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${BODY}\r\n\r\n`,
				);
				let left = BODY;
				const next = () => {
					if (answered || Date.now() >= until || left <= 0 || s.destroyed) return;
					const n = Math.min(CHUNK, left);
					left -= n;
					sent += n;
					const ok = s.write(n === CHUNK ? chunk : chunk.subarray(0, n));
					if (ok) timer = setTimeout(next, every);
					else s.once('drain', () => (timer = setTimeout(next, every)));
				};
				next();
			});
			s.on('data', (d) => {
				if (answered) return;
				answered = true;
				const st = /^HTTP\/1\.\d (\d+)/.exec(d.toString('latin1'))?.[1] ?? '?';
				statuses[st] = (statuses[st] ?? 0) + 1;
				end();
			});
			s.on('error', () => {});
			s.on('close', end);
			setTimeout(end, Math.max(0, until - Date.now()));
		});
	await Promise.all(
		Array.from({ length: CONNS }, async () => {
			while (Date.now() < until) {
				await one();
				if (Date.now() < until) await sleep(50);
			}
		}),
	);
	const st = Object.entries(statuses).map(([k, v]) => `${v}x ${k}`).join(', ') || 'none';
	return `${CONNS} connections, ${mib(sent)} MiB of body sent; answers: ${st}`;
}

async function detachedStreams(gw, until) {
	const SESSIONS = 5, PER = 32, STEPS = 10000, MAX_REQUESTS = 480;
	const sids = [];
	for (let i = 0; i < SESSIONS; i++) sids.push(await openSession(gw, `detached-${i}`));
	const statuses = {};
	let sent = 0, rounds = 0, id = 1000;
	try {
		while (Date.now() < until && sent < MAX_REQUESTS) {
			rounds++;
			const reqs = [];
			const started = [];
			for (const sid of sids)
				for (let i = 0; i < PER && sent < MAX_REQUESTS; i++, sent++) {
					const body = JSON.stringify(
						rpc(++id, 'tools/call', { name: 'github__progress', arguments: { steps: STEPS, interval_ms: 0 }, _meta: { progressToken: `p${id}` } }),
					);
					const req = http.request({
						host: '127.0.0.1',
						port: gw.port,
						path: '/mcp',
						method: 'POST',
						agent: false,
						headers: {
							accept: 'application/json, text/event-stream',
							'content-type': 'application/json',
							authorization: `Bearer ${TOKEN}`,
							'mcp-session-id': sid,
							'mcp-protocol-version': LEGACY,
						},
					});
					req.on('error', () => {});
					started.push(
						new Promise((resolve) => {
							req.on('response', (res) => {
								statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
								res.once('data', resolve);
								res.on('error', () => {});
								res.on('end', resolve);
							});
							req.on('close', resolve);
						}),
					);
					req.on('socket', (s) => sockets.add(s));
					req.end(body);
					reqs.push(req);
				}
			// Every request answered (its stream under way, or refused), or 2 s
			// passed: hang up all at once.
			await Promise.race([Promise.all(started), sleep(2000)]);
			for (const r of reqs) r.destroy();
			await sleep(Math.min(500, Math.max(0, until - Date.now())));
		}
		await sleep(Math.max(0, until - Date.now()));
	} finally {
		await Promise.all(sids.map((sid) => closeSession(gw, sid)));
	}
	const answered = Object.values(statuses).reduce((a, n) => a + n, 0);
	const st = Object.entries(statuses).map(([k, v]) => `${v}x ${k}`).join(', ');
	return `${rounds} rounds, ${sent} requests of ${STEPS} progress steps, all cut; answers: ${st || 'none'}, ${sent - answered} cut before any`;
}

async function backlog(gw, until, ctx) {
	const QUIET = 3, COUNT = 16, BYTES = 4 * MIB, MAX_NOTES = 48;
	ctx.message = BYTES;
	const quiet = [];
	for (let i = 0; i < QUIET; i++) quiet.push(await openSession(gw, `quiet-${i}`));
	const caller = await openSession(gw, 'stalled-reader');
	// A GET stream whose client never reads: the socket is paused at once.
	const get = net.connect({ host: '127.0.0.1', port: gw.port });
	sockets.add(get);
	get.on('error', () => {});
	get.on('connect', () => {
		get.write(
			`GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nAuthorization: Bearer ${TOKEN}\r\nAccept: text/event-stream\r\n` +
				`Mcp-Session-Id: ${caller}\r\nMcp-Protocol-Version: ${LEGACY}\r\n\r\n`,
		);
		get.pause();
	});
	let asked = 0, id = 2000;
	const answers = {};
	try {
		while (Date.now() < until && asked < MAX_NOTES) {
			const r = await sessionPost(gw, caller, rpc(++id, 'tools/call', { name: 'flood__flood', arguments: { count: COUNT, bytes: BYTES } }), {
				timeoutMs: Math.max(1000, until - Date.now()),
			});
			const k = r.error ? 'no answer' : r.json?.error ? `error ${r.json.error.code}` : r.json?.result?.isError ? 'isError' : `${r.status}`;
			answers[k] = (answers[k] ?? 0) + 1;
			asked += COUNT;
			await sleep(Math.min(1000, Math.max(0, until - Date.now())));
		}
		await sleep(Math.max(0, until - Date.now()));
	} finally {
		get.destroy();
		sockets.delete(get);
		// A last, empty flood: its answer comes after every notification
		// before it, so the next attack does not meet this one's tail.
		await sessionPost(gw, caller, rpc(++id, 'tools/call', { name: 'flood__flood', arguments: { count: 0, bytes: 0 } }), { timeoutMs: 30000 });
		await Promise.all([...quiet, caller].map((sid) => closeSession(gw, sid)));
	}
	const st = Object.entries(answers).map(([k, v]) => `${v}x ${k}`).join(', ');
	return `${asked} notifications of ${mib(BYTES)} MiB asked for, ${QUIET + 1} sessions without a read GET stream; flood calls: ${st}`;
}

async function deepJson(gw, until) {
	const arrays = (n) => '['.repeat(n) + ']'.repeat(n);
	const objects = (n) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
	const DEEP_A = arrays(300000);
	const DEEP_O = objects(120000);
	const sid = await openSession(gw, 'deep');
	const legacyCall = (id, deep) =>
		`{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"github__echo","arguments":{"a":${deep}}}}`;
	const shapes = [
		['tools/call arguments, arrays', (id) => sessionPost(gw, sid, legacyCall(id, DEEP_A))],
		['tools/call arguments, objects', (id) => sessionPost(gw, sid, legacyCall(id, DEEP_O))],
		[
			'2026-07-28 tools/call arguments',
			(id) =>
				request(gw, {
					headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'github__echo' },
					body: `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"github__echo","arguments":{"a":${DEEP_A}},"_meta":${JSON.stringify(modernMeta())}}}`,
				}),
		],
		[
			'initialize capabilities',
			(id) =>
				request(gw, {
					body: `{"jsonrpc":"2.0","id":${id},"method":"initialize","params":{"protocolVersion":"${LEGACY}","capabilities":{"experimental":{"x":${DEEP_A}}},"clientInfo":{"name":"deep","version":"1"}}}`,
				}),
		],
		['ping params', (id) => sessionPost(gw, sid, `{"jsonrpc":"2.0","id":${id},"method":"ping","params":{"x":${DEEP_A}}}`)],
		['id', (id) => sessionPost(gw, sid, `{"jsonrpc":"2.0","id":${DEEP_A},"method":"ping"}`)],
	];
	const seen = {};
	let sent = 0, id = 3000;
	try {
		for (let round = 0; round < 5 && Date.now() < until && gw.alive(); round++)
			for (const [name, send] of shapes) {
				if (!gw.alive()) break;
				const r = await send(++id);
				sent++;
				const k = r.error ? 'no answer' : r.json?.error ? `${r.status}/${r.json.error.code}` : `${r.status}`;
				(seen[name] ??= new Set()).add(k);
			}
		await sleep(Math.max(0, until - Date.now()));
	} finally {
		if (gw.alive()) await closeSession(gw, sid);
	}
	return `${sent} requests; ` + Object.entries(seen).map(([k, v]) => `${k}: ${[...v].join('/')}`).join('; ');
}

async function programFlood(gw, until, ctx) {
	const N = Number(process.env.ATTACK_PROGRAMS ?? 24);
	const sleepMs = Math.max(1000, until - Date.now());
	const code = `const a = new Uint8Array(100 * 1048576); a.fill(7); await tools.github.slow({ ms: ${sleepMs} }); return a[12345];`;
	const args = { code };
	const sids = [await openSession(gw, 'programs-0'), await openSession(gw, 'programs-1')];
	// Workers' summed RSS, and how many hold a program's 100 MiB at once (over 64 MiB).
	let peakWorkers = 0, peakCount = 0, peakHolding = 0;
	const sampler = setInterval(() => {
		const rss = workersOf(gw.pid).map((p) => statusField(p, 'VmRSS'));
		peakCount = Math.max(peakCount, rss.length);
		peakHolding = Math.max(peakHolding, rss.filter((b) => b > 64 * MIB).length);
		peakWorkers = Math.max(peakWorkers, rss.reduce((a, b) => a + b, 0));
	}, 50);
	const answers = {};
	const count = (r) => {
		const k = r.error ? 'cut' : r.json?.error ? `error ${r.json.error.code}` : r.json?.result?.isError ? 'isError' : `${r.status}`;
		answers[k] = (answers[k] ?? 0) + 1;
	};
	let id = 4000;
	try {
		const timeoutMs = Math.max(500, until - Date.now());
		const all = [];
		for (let i = 0; i < N; i++) {
			if (i % 2 === 0) all.push(sessionPost(gw, sids[(i / 2) % 2], rpc(++id, 'tools/call', { name: 'execute_code', arguments: args }), { timeoutMs }));
			else all.push(modernCall(gw, ++id, 'execute_code', args, { timeoutMs }));
		}
		(await Promise.all(all)).forEach(count);
		// Ending the sessions kills their programs; the 2026 connections are cut
		// already. The workers are sampled until they are gone (10 s at most):
		// on a slow machine a program may fill its array only now.
		await Promise.all(sids.map((sid) => closeSession(gw, sid)));
		for (let i = 0; i < 100 && workersOf(gw.pid).length > CODE.poolSize; i++) await sleep(100);
	} finally {
		clearInterval(sampler);
	}
	ctx.workers = peakWorkers;
	ctx.holding = peakHolding;
	const st = Object.entries(answers).map(([k, v]) => `${v}x ${k}`).join(', ');
	return `${N} programs (${N / 2} over 2 sessions, ${N / 2} in the 2026 era); at most ${peakCount} workers at once, ${peakHolding} of them holding 100 MiB; answers: ${st}`;
}

// Forged access tokens on 64 connections, one request at a time each, as
// fast as answered. None may pass; the key set may be fetched at most once
// per JWKS_REFRESH_S (plus the first fetch) however many key ids are made up.
async function tokenFlood(gw, until, ctx) {
	const CONNS = 64;
	const b64u = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
	const claims = () => b64u({ iss: issuer.url, aud: 'https://attack.invalid/mcp', sub: `mallory-${randomBytes(4).toString('hex')}`,
		exp: Math.floor(Date.now() / 1000) + 600, groups: ['admin'] });
	const forge = [
		() => `${b64u({ alg: 'RS256', kid: randomBytes(8).toString('hex'), typ: 'at+jwt' })}.${claims()}.${randomBytes(256).toString('base64url')}`,
		() => `${b64u({ alg: 'RS256', kid: 'attack-1', typ: 'at+jwt' })}.${claims()}.${randomBytes(256).toString('base64url')}`,
		() => `${b64u({ alg: 'none', typ: 'at+jwt' })}.${claims()}.`,
		() => randomBytes(48).toString('base64'),
		() => `${b64u({ alg: 'RS256', kid: 'attack-1' })}.${'A'.repeat(9000)}.x`,
	];
	const fetchesBefore = issuer.fetches, t0 = Date.now();
	const statuses = {};
	let sent = 0;
	await Promise.all(Array.from({ length: CONNS }, async (_, c) => {
		for (let i = c; Date.now() < until; i++) {
			const r = await request(gw, {
				headers: { authorization: `Bearer ${forge[i % forge.length]()}` },
				body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'github__echo', arguments: {} } },
				timeoutMs: Math.max(1000, until - Date.now() + 2000),
			});
			const key = r.status ?? r.error;
			sent++;
			statuses[key] = (statuses[key] ?? 0) + 1;
		}
	}));
	const fetches = issuer.fetches - fetchesBefore;
	const allowed = 1 + Math.ceil((Date.now() - t0) / 1000 / JWKS_REFRESH_S);
	const st = Object.entries(statuses).map(([k, v]) => `${v}x ${k}`).join(', ');
	ctx.problems = [];
	if (Object.keys(statuses).some((k) => k !== '401'))
		ctx.problems.push(`forged tokens got other answers than 401: ${st}`);
	if (fetches > allowed) ctx.problems.push(`the key set was fetched ${fetches} times, over ${allowed}`);
	return `${sent} forged tokens on ${CONNS} connections; answers: ${st}; key set fetched ${fetches} times (at most ${allowed})`;
}

// A 2026-07-28 request of a caller holding token: tools/list, or
// execute_code of program.
const asCaller = (gw, token, { id = 1, program, timeoutMs = 10000 } = {}) =>
	request(gw, {
		timeoutMs,
		headers: { authorization: `Bearer ${token}`, 'mcp-protocol-version': MODERN,
			...(program ? { 'mcp-method': 'tools/call', 'mcp-name': 'execute_code' } : { 'mcp-method': 'tools/list' }) },
		body: program
			? rpc(id, 'tools/call', { name: 'execute_code', arguments: { code: program }, _meta: modernMeta() })
			: rpc(id, 'tools/list', { _meta: modernMeta() }),
	});

// Random opaque tokens on 64 connections, as fast as answered, each one an
// introspection request if it can start one; a known token (its answer
// aging out every second) asks back to back and must be served at least
// 90% of the time.
async function tokenChurn(gw, until, ctx) {
	const CONNS = 64;
	const known = `known-${randomBytes(24).toString('hex')}`;
	issuer.active.add(known);
	ctx.problems = [];
	const first = await asCaller(gw, known);
	if (first.status !== 200) ctx.problems.push(`the known token was refused before the flood: ${first.error ?? first.status}`);
	const statuses = {};
	let sent = 0;
	const flood = Promise.all(Array.from({ length: CONNS }, async () => {
		while (Date.now() < until) {
			const r = await asCaller(gw, randomBytes(24).toString('base64url'), { timeoutMs: Math.max(1000, until - Date.now() + 2000) });
			const key = r.status ?? r.error;
			sent++;
			statuses[key] = (statuses[key] ?? 0) + 1;
		}
	}));
	const mine = { served: 0, asked: 0, other: {} };
	while (Date.now() < until) {
		const r = await asCaller(gw, known, { timeoutMs: 2000 });
		mine.asked++;
		if (r.status === 200) mine.served++;
		else mine.other[r.status ?? r.error] = (mine.other[r.status ?? r.error] ?? 0) + 1;
	}
	await flood;
	issuer.active.delete(known);
	const st = Object.entries(statuses).map(([k, v]) => `${v}x ${k}`).join(', ');
	if (Object.keys(statuses).some((k) => k !== '401' && k !== '503'))
		ctx.problems.push(`random tokens got other answers than 401 or 503: ${st}`);
	if (!statuses['503']) ctx.problems.push(`the flood never filled maxInFlight (answers: ${st})`);
	const share = mine.asked ? mine.served / mine.asked : 0;
	if (share < 0.9)
		ctx.problems.push(`the known token was served ${mine.served} of ${mine.asked} times (${JSON.stringify(mine.other)}), under 90%`);
	return `${sent} random tokens on ${CONNS} connections; answers: ${st}; the known token served ${mine.served} of ${mine.asked} times (${(100 * share).toFixed(1)}%)`;
}

// One caller keeps 40 looping programs asked for (more than maxConcurrent
// and maxQueued together) (its refusals asked
// again at once); the other's programs, one after another, must all run.
async function programSlots(gw, until, ctx) {
	const FLOOD = 40;
	const answers = {};
	let started = 0;
	let id = 6000;
	ctx.problems = [];
	const flood = Promise.all(Array.from({ length: FLOOD }, async () => {
		while (Date.now() < until) {
			started++;
			const r = await asCaller(gw, TEAM.alice, { id: ++id, program: 'while (true) {}', timeoutMs: Math.max(1000, until - Date.now()) });
			const kind = r.json?.result ? (/^([a-z]+): /.exec(r.json.result.content?.[0]?.text ?? '')?.[1] ?? 'ok') : (r.status ?? 'cut');
			answers[kind] = (answers[kind] ?? 0) + 1;
			if (r.error) break; // cut at the row's end: still running
		}
	}));
	// Bob starts once Alice holds all she can: refused as busy, or 429
	// (maxRequestsPerSession: her requests in flight with one credential).
	while (!answers.busy && !answers[429] && Date.now() < until) await sleep(20);
	let ran = 0;
	const failures = [];
	while (Date.now() < until) {
		const r = await asCaller(gw, TEAM.bob, { id: ++id, program: 'return "bob ran"', timeoutMs: Math.max(2000, until - Date.now() + 5000) });
		const text = r.json?.result?.content?.[0]?.text;
		if (text === 'bob ran') ran++;
		else failures.push(text ?? r.error ?? `HTTP ${r.status}`);
	}
	await flood;
	const st = Object.entries(answers).map(([k, v]) => `${v}x ${k}`).join(', ');
	if (!answers.busy && !answers[429]) ctx.problems.push(`the flooding caller was never refused (answers: ${st})`);
	if (!ran || failures.length)
		ctx.problems.push(`the other caller's programs: ${ran} ran, ${failures.length} did not (first: ${failures[0]?.slice(0, 200)})`);
	return `${started} looping programs asked for by one caller (answers: ${st}); the other caller's programs: ${ran} ran, ${failures.length} did not`;
}

const ATTACKS = [
	['slowloris', 'slowloris', slowloris],
	['body-flood', 'body flood', bodyFlood],
	['detached-streams', 'detached streams', detachedStreams],
	['backlog', 'backlog', backlog],
	['deep-json', 'deep JSON', deepJson],
	['program-flood', 'program flood', programFlood],
	['token-flood', 'token flood', tokenFlood],
	['token-churn', 'token churn', tokenChurn, { team: true }],
	['program-slots', 'program slots', programSlots, { team: true }],
];
for (const key of ONLY ?? [])
	if (!ATTACKS.some(([k]) => k === key)) throw new Error(`ATTACK_ONLY: no attack "${key}" (${ATTACKS.map(([k]) => k).join(', ')})`);
const RUN = ATTACKS.filter(([key]) => !ONLY || ONLY.includes(key));

// ---- the run ------------------------------------------------------------------------------

function resetPeak(pid) {
	try {
		writeFileSync(`/proc/${pid}/clear_refs`, '5');
		return true;
	} catch {
		return false;
	}
}

async function runAttack(gw, sid, [, title, fn], budget) {
	const ctx = {};
	const before = statusField(gw.pid, 'VmRSS');
	const hwmReset = resetPeak(gw.pid);
	let sampled = before;
	const sampler = setInterval(() => {
		if (gw.alive()) sampled = Math.max(sampled, statusField(gw.pid, 'VmRSS'));
	}, 20);
	const stopPing = startPinger(gw, sid);
	const until = Date.now() + SECONDS * 1000;
	let note;
	const t0 = Date.now();
	try {
		note = await fn(gw, until, ctx);
	} catch (e) {
		note = `the attack itself failed: ${e.message}`;
	}
	const ping = await stopPing();
	// Half a second for the gateway to clean up after the attack (counted in the peak).
	await sleep(500);
	clearInterval(sampler);
	const alive = gw.alive();
	const after = alive ? statusField(gw.pid, 'VmRSS') : NaN;
	const peak = Math.max(sampled, alive ? after : 0, alive && hwmReset ? statusField(gw.pid, 'VmHWM') : 0);
	if (!alive) {
		const { code, signal } = await gw.exited;
		note = `gateway died (${signal ?? `exit ${code}`}); ${note}`;
	}
	noteDescendants(gw);
	const served = alive && ping.answered > 0 && ping.failed === 0;
	const problems = [];
	if (!served)
		problems.push(`not served: ${ping.failed} of ${ping.answered + ping.failed} pings failed${ping.firstFailure ? ` (first: ${ping.firstFailure})` : ''}`);
	const allowed = budget + MESSAGE_FACTOR * (ctx.message ?? 0);
	if (peak > allowed) problems.push(`RSS ${mib(peak)} MiB over the budget ${mib(allowed)} MiB`);
	problems.push(...(ctx.problems ?? []));
	let workersBudget;
	if (ctx.workers !== undefined) {
		workersBudget = CODE.maxConcurrent * CODE.heapBytes + WORKER_SLACK;
		if (ctx.workers > workersBudget) problems.push(`workers ${mib(ctx.workers)} MiB over ${mib(workersBudget)} MiB`);
		if (ctx.holding > CODE.maxConcurrent) problems.push(`${ctx.holding} programs held 100 MiB at once, over maxConcurrent ${CODE.maxConcurrent}`);
	}
	return {
		title,
		before,
		peak,
		allowed,
		after,
		served,
		ping,
		workers: ctx.workers,
		workersBudget,
		note,
		problems,
		pass: problems.length === 0,
		seconds: (Date.now() - t0) / 1000,
		alive,
	};
}

// Starts a gateway, opens the pinging session, warms up (a tool call and a
// program), and measures the idle RSS.
async function freshGateway(team = false) {
	const gw = await startGateway(team);
	const sid = await openSession(gw, 'pinger');
	const warm = await sessionPost(gw, sid, rpc(2, 'tools/call', { name: 'github__echo', arguments: { warm: 1 } }), { timeoutMs: 30000 });
	if (warm.status !== 200 || warm.json?.result?.isError) throw new Error(`warm-up call failed: ${warm.error ?? warm.text?.slice(0, 300)}`);
	const prog = await sessionPost(gw, sid, rpc(3, 'tools/call', { name: 'execute_code', arguments: { code: 'return 1 + 1' } }), { timeoutMs: 30000 });
	if (prog.status !== 200 || prog.json?.result?.isError) throw new Error(`warm-up program failed: ${prog.error ?? prog.text?.slice(0, 300)}`);
	await sleep(500);
	noteDescendants(gw);
	return { gw, sid, idle: statusField(gw.pid, 'VmRSS') };
}

// Whether the gateway answers a ping within 6 s of the attack's end.
async function answers(gw, sid) {
	for (let i = 0; i < 3; i++) {
		const r = await sessionPost(gw, sid, rpc(`probe-${i}`, 'ping'), { timeoutMs: 2000 });
		if (r.json?.result) return true;
	}
	return false;
}

// What a gateway that stopped answering is doing: state, open fds, CPU.
function diagnose(gw) {
	try {
		const stat = readFileSync(`/proc/${gw.pid}/stat`, 'utf8');
		const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
		const fds = readdirSync(`/proc/${gw.pid}/fd`).length;
		const wchan = readFileSync(`/proc/${gw.pid}/wchan`, 'utf8');
		return `state ${f[0]} in ${wchan || '-'}, ${fds} open fds, ${((Number(f[11]) + Number(f[12])) / 100).toFixed(1)} s of CPU in all`;
	} catch (e) {
		return e.message;
	}
}

function table(rows, budget, idle) {
	const out = [];
	out.push(`## sluice attacks: ${SECONDS} s each`);
	out.push('');
	out.push(
		`Budget: gateway RSS under ${mib(budget)} MiB (maxBufferedBytes ${mib(LIMITS.maxBufferedBytes)} MiB + idle RSS ${mib(idle)} MiB + slack ${mib(RSS_SLACK)} MiB, plus ${MESSAGE_FACTOR} x the largest message an attack relays: the budget column); ` +
			`program-flood workers under ${mib(CODE.maxConcurrent * CODE.heapBytes + WORKER_SLACK)} MiB (maxConcurrent ${CODE.maxConcurrent} x heapBytes ${mib(CODE.heapBytes)} MiB + ${mib(WORKER_SLACK)} MiB). ` +
			`Served: every ping (one every ${PING_EVERY_MS} ms over a session holding the token, each on a new connection) answered within ${PING_DEADLINE_MS} ms.`,
	);
	out.push('');
	out.push('| attack | RSS before MiB | peak gateway RSS MiB | budget MiB | RSS after MiB | workers RSS MiB | served | pings answered | ping p99 ms | result |');
	out.push('|---|---:|---:|---:|---:|---:|---|---:|---:|---|');
	for (const r of rows)
		out.push(
			`| ${r.title} | ${mib(r.before)} | ${mib(r.peak)} | ${mib(r.allowed)} | ${Number.isFinite(r.after) ? mib(r.after) : 'died'} | ` +
				`${r.workers === undefined ? '-' : mib(r.workers)} | ${r.served ? 'yes' : 'no'} | ` +
				`${r.ping.answered}/${r.ping.answered + r.ping.failed} | ${fmtMs(r.ping.p99)} | ${r.pass ? 'pass' : 'FAIL'} |`,
		);
	out.push('');
	for (const r of rows) {
		out.push(`- ${r.title}: ${r.note}`);
		for (const p of r.problems) out.push(`  - FAIL: ${p}`);
	}
	return out.join('\n');
}

let cleaning;
async function cleanup() {
	cleaning ??= (async () => {
		for (const s of sockets) s.destroy();
		sockets.clear();
		await Promise.all([...gateways].map(stopGateway));
		await closeAll();
		issuer.server.close();
		issuer.server.closeAllConnections();
	})();
	return cleaning;
}

for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'])
	process.on(sig, () => {
		console.error(`attack: ${sig}, stopping everything`);
		const hard = setTimeout(() => {
			killAllNow();
			process.exit(130);
		}, 5000);
		cleanup().finally(() => {
			clearTimeout(hard);
			process.exit(130);
		});
	});
process.on('exit', killAllNow);

// The slowloris needs its sockets, and the gateway (which inherits this
// limit) as many: `make attack` raises the soft limit first.
function checkFdLimit() {
	const need = Number(process.env.ATTACK_SLOWLORIS_SOCKETS ?? 2000) + 512;
	const soft = Number(/^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? Infinity);
	if (soft < need) throw new Error(`the open-file limit is ${soft}, the attacks need ${need}: raise it (ulimit -n ${need}) or run make attack`);
}

async function main() {
	checkFdLimit();
	await new Promise((resolve) => issuer.server.listen(0, '127.0.0.1', resolve));
	issuer.url = `http://127.0.0.1:${issuer.server.address().port}`;
	const rows = [];
	let { gw, sid, idle } = await freshGateway();
	const firstIdle = idle;
	const budget = LIMITS.maxBufferedBytes + firstIdle + RSS_SLACK;
	console.error(`attack: gateway pid ${gw.pid} on ${gw.url}, idle RSS ${mib(idle)} MiB, budget ${mib(budget)} MiB, ${SECONDS} s per attack`);
	try {
		for (const attack of RUN) {
			if (attack[3]?.team) {
				// A gateway of its own, for this row only.
				const t = await freshGateway(true);
				const row = await runAttack(t.gw, t.sid, attack, LIMITS.maxBufferedBytes + t.idle + RSS_SLACK);
				rows.push(row);
				console.error(`attack: ${row.title}: peak ${mib(row.peak)} MiB, served ${row.served ? 'yes' : 'no'}, ` +
					`p99 ${fmtMs(row.ping.p99)} ms, ${row.pass ? 'pass' : 'FAIL'} (${row.seconds.toFixed(1)} s)`);
				await stopGateway(t.gw);
				continue;
			}
			if (!gateways.has(gw) || !gw.alive()) {
				await stopGateway(gw);
				({ gw, sid } = await freshGateway());
				console.error(`attack: started a new gateway, pid ${gw.pid}`);
			}
			const row = await runAttack(gw, sid, attack, budget);
			rows.push(row);
			console.error(
				`attack: ${row.title}: peak ${mib(row.peak)} MiB, after ${mib(row.after)} MiB, served ${row.served ? 'yes' : 'no'}, ` +
					`p99 ${fmtMs(row.ping.p99)} ms, ${row.pass ? 'pass' : 'FAIL'} (${row.seconds.toFixed(1)} s)`,
			);
			// What an attack left behind is charged to it, not to the next one: a
			// gateway left over the budget (its peak was at least that) or no
			// longer answering is replaced.
			if (gw.alive() && row.after > budget) {
				row.note += `; left at ${mib(row.after)} MiB after the attack, so the next attack gets a new gateway`;
				await stopGateway(gw);
			} else if (gw.alive() && !(await answers(gw, sid))) {
				row.note += `; the gateway stopped answering (${diagnose(gw)}), so the next attack gets a new gateway`;
				row.problems.push('the gateway no longer answers after the attack');
				row.pass = false;
				await stopGateway(gw);
			}
		}
	} finally {
		if (gateways.size && /Sanitizer|runtime error/.test(gw.tail)) console.error(gw.tail.slice(-3000));
		await cleanup();
	}
	const md = table(rows, budget, firstIdle);
	console.log(md);
	if (REPORT) writeFileSync(REPORT, md + '\n');
	const failed = rows.filter((r) => !r.pass).length;
	console.log(failed ? `\n**FAIL**: ${failed} of ${rows.length} rows` : `\n**PASS**: every row (${rows.length})`);
	process.exitCode = failed ? 1 : 0;
}

main().catch(async (e) => {
	console.error(`attack: ${e.stack ?? e}`);
	await cleanup();
	process.exitCode = 2;
});
