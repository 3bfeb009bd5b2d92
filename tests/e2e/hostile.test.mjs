// Hostile programs: each one is contained, and after each the same gateway
// answers ping and runs the next program. Also: a worker killed from outside,
// the gateway's environment, and a client that disconnects mid-program.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';

import {
	connect,
	startRaw,
	catalog,
	closeAll,
	eventually,
	execCode,
	withTimeout,
	zygoteOf,
	aliveWith,
	descendants,
} from './helpers.mjs';

after(closeAll);

const SECRET = `sluice-e2e-${randomBytes(12).toString('hex')}`;
// The wall clock is well above the CPU limit, so that on a loaded machine
// (or under the sanitizers) a program that burns CPU still ends as "cpu",
// and a slow but legitimate one (huge console output) still finishes.
// Under the sanitizers (make test SAN=...) the engine runs several times slower: a
// program meant to reach the heap or output limit first gets 3 s of CPU there, still
// far under the wall clock, so the burners below still end as "cpu".
const LIMITS = {
	timeoutMs: 10000,
	cpuMs: process.env.SAN ? 3000 : 1000,
	heapBytes: 128 << 20,
	maxCalls: 64,
	maxInFlight: 4,
	maxOutputBytes: 65536,
	maxConsoleBytes: 4096,
};

let gw; // the gateway every hostile program runs on (SECRET_TOKEN in its environment)
let patient; // a long wall clock and CPU limit, for the worker killed from outside
let native; // a short wall clock, a long CPU limit and a big heap: a native built-in runs into the wall clock

before(async () => {
	[gw, patient, native] = await Promise.all([
		connect({
			servers: { catalog: catalog('github') },
			sluice: { exposure: 'code', codeMode: LIMITS },
			env: { SECRET_TOKEN: SECRET },
		}),
		connect({
			servers: { catalog: catalog('github') },
			sluice: { exposure: 'code', codeMode: { timeoutMs: 20000, cpuMs: 20000 } },
		}),
		connect({
			servers: {},
			sluice: { exposure: 'code', codeMode: { timeoutMs: 2500, cpuMs: 10000, heapBytes: 1 << 30 } },
		}),
	]);
	for (const g of [gw, patient])
		await eventually(
			async () => (await execCode(g.client, 'return (await tools.catalog.echo({up: 1})).arguments.up')).text === '1',
			10000,
			100,
			'the catalog upstream',
		);
});
after(() => Promise.all([gw?.close(), patient?.close(), native?.close()]));

// Runs a hostile program, checks its result, then checks that the same gateway
// still answers ping and runs `return 1`.
async function contained(code, check, g = gw) {
	const r = await withTimeout(execCode(g.client, code), 15000, 'the hostile program');
	await check(r);
	await withTimeout(g.client.ping(), 3000, 'ping after a hostile program');
	const one = await withTimeout(execCode(g.client, 'return 1'), 5000, 'return 1 after a hostile program');
	assert.equal(one.isError, false, one.text);
	assert.equal(one.text, '1');
	return r;
}

const failsAs = (kinds, maxMs) => (r) => {
	assert.equal(r.isError, true, `expected a failure, got: ${r.text.slice(0, 300)}`);
	assert.ok(kinds.includes(r.kind), `kind ${r.kind} not in ${kinds}: ${r.text.slice(0, 300)}`);
	if (maxMs) assert.ok(r.ms < maxMs, `answered after ${r.ms} ms`);
};

describe('hostile programs', () => {
	test('no host APIs: os, std, require, process, fetch, WebAssembly, Atomics, SharedArrayBuffer', () =>
		contained(
			`return [typeof os, typeof std, typeof require, typeof process, typeof fetch, typeof WebAssembly,
			        typeof Atomics, typeof SharedArrayBuffer, typeof scriptArgs, typeof print, typeof bjson,
			        typeof Worker, typeof XMLHttpRequest, typeof WebSocket, typeof Deno]`,
			(r) => {
				assert.equal(r.isError, false, r.text);
				const types = JSON.parse(r.text);
				assert.equal(types.length, 15);
				for (const t of types) assert.equal(t, 'undefined', r.text);
			},
		));

	test('no modules: a dynamic import is refused', () =>
		contained(
			`const out = [];
			 for (const m of ["os", "std", "fs", "/etc/passwd", "node:child_process"])
			   try { await import(m); out.push(m + ": loaded"); } catch (e) { out.push(m + ": refused"); }
			 return out;`,
			(r) => {
				// A rejected import or a program failing outright are both fine;
				// a module actually loaded is not.
				assert.doesNotMatch(r.text, /: loaded/);
			},
		));

	test('"x".repeat(2**30)', () => contained('return "x".repeat(2 ** 30)', failsAs(['error', 'memory'])));

	test('growing arrays', () =>
		contained('const a = []; for (;;) a.push(new Array(100000).fill(1.5));', failsAs(['memory'], 10000)));

	test('growing strings', () =>
		contained('let s = "ab"; const keep = []; for (;;) { s = s + s.slice(0, 1 << 20) + "!"; keep.push(s); }', failsAs(['memory', 'error'], 10000)));

	test('deep recursion', () =>
		contained('function f(n) { return f(n + 1) + 1; } return f(0);', (r) => {
			failsAs(['error', 'memory'])(r);
			assert.match(r.text, /stack/i);
		}));

	test('deep recursion through a Proxy and JSON', () =>
		contained(
			'const o = {}; let p = o; for (let i = 0; i < 1e6; i++) { p.x = {}; p = p.x; } return JSON.stringify(o).length',
			failsAs(['error', 'memory', 'cpu', 'timeout']),
		));

	test('for(;;){}', () => contained('for (;;) {}', failsAs(['cpu'], 9000)));

	test('a catastrophic regex', async () => {
		const r = await contained('return /(a+)+$/.test("a".repeat(40) + "b")', failsAs(['cpu', 'timeout'], 6000));
		console.log(`catastrophic regex: ${r.text} (${r.ms} ms)`);
	});

	test('a long native sort', async () => {
		const r = await contained(
			'const a = Array.from({length: 3e6}, () => Math.random()); a.sort(); return a.length',
			failsAs(['cpu', 'timeout', 'memory'], 6000),
		);
		console.log(`long native sort: ${r.text} (${r.ms} ms)`);
	});

	// Building the array takes ~1.5 s of JavaScript, the sort ~3 s inside one
	// native call where no engine interrupt fires: only the gateway's kill at
	// the wall-clock deadline (through the worker's pidfd) stops it.
	test('a long native sort past the wall clock is killed at the deadline', async () => {
		const r = await contained(
			'const a = Array.from({length: 3e6}, () => Math.random()); a.sort(); return a.length',
			failsAs(['timeout'], 4000),
			native,
		);
		console.log(`long native sort, timeoutMs 2500 cpuMs 10000: ${r.text} (${r.ms} ms)`);
	});

	test('Atomics.wait', () =>
		contained(
			'Atomics.wait(new Int32Array(new SharedArrayBuffer(16)), 0, 0, 60000); return "waited"',
			(r) => {
				failsAs(['error'], 2000)(r);
				assert.match(r.text, /ReferenceError/);
			},
		));

	test('Atomics through another door (typed array constructors, globalThis lookups)', () =>
		contained(
			`const found = [];
			 for (const n of Object.getOwnPropertyNames(globalThis)) if (/atomic|shared|wasm|webassembly/i.test(n)) found.push(n);
			 const TA = Object.getPrototypeOf(Int32Array);
			 for (const n of Object.getOwnPropertyNames(TA)) if (/atomic|wait/i.test(n)) found.push("TA." + n);
			 return found;`,
			(r) => {
				assert.equal(r.isError, false, r.text);
				assert.deepEqual(JSON.parse(r.text), []);
			},
		));

	test('huge console output', () =>
		// 2 MB of console against a 4 KiB cap: enough to pass the cap 500 times over, and
		// small enough to stay far under the 1 s CPU limit under the sanitizers.
		contained('for (let i = 0; i < 20000; i++) console.log("z".repeat(100)); return "ok"', (r) => {
			assert.equal(r.isError, false, r.text.slice(0, 300));
			assert.match(r.text, /^ok\n\n\[console\]\n/);
			assert.match(r.text, /cut/i);
			assert.ok(r.text.length < LIMITS.maxConsoleBytes + 200, `${r.text.length} chars`);
		}));

	test('huge return value', () =>
		// 1 MB of JSON against a 64 KiB cap (its serialisation stays under the CPU
		// limit under the sanitizers).
		contained('return new Array(2e5).fill("ab")', (r) => {
			failsAs(['output', 'memory'])(r);
			assert.ok(r.text.length < 1000);
		}));

	test('10,000 tool calls, fired at once', () =>
		contained(
			'const ps = []; for (let i = 0; i < 10000; i++) ps.push(tools.catalog.echo({i})); await Promise.all(ps); return "all"',
			failsAs(['calls'], 10000),
		));

	test('10,000 tool calls, one at a time, the limit error swallowed', () =>
		contained(
			'let n = 0; for (let i = 0; i < 10000; i++) { try { await tools.catalog.echo({i}); n++; } catch (e) {} } return "survived " + n',
			failsAs(['calls'], 10000),
		));

	test('a call storm over the in-flight cap: 40 calls, maxInFlight 4, maxCalls 64, all resolve', () =>
		contained(
			`const rs = await Promise.all(Array.from({length: 40}, (_, i) => tools.catalog.slow({ms: 20 + (i % 3)})));
			 return {n: rs.length, distinct: new Set(rs).size, all: rs.every((x) => /^slept \\d+ ms$/.test(x))};`,
			(r) => {
				assert.equal(r.isError, false, r.text);
				assert.deepEqual(JSON.parse(r.text), { n: 40, distinct: 3, all: true });
				// 40 calls of ~20 ms, at most 4 at a time: at least 10 rounds.
				assert.ok(r.ms >= 200, `${r.ms} ms: the in-flight cap held`);
			},
		));

	test('prototype tampering of tools fails or is harmless; later calls still work', () =>
		contained(
			`const out = {};
			 const keysBefore = JSON.stringify(Object.keys(tools));
			 try { tools.x = 1; out.assign = typeof tools.x; } catch (e) { out.assign = 'threw'; }
			 try { tools.catalog = {echo: () => 'forged'}; } catch (e) {}
			 try { tools.catalog.echo = () => 'forged'; } catch (e) {}
			 try { Object.defineProperty(tools, 'y', {value: 1}); out.define = typeof tools.y; } catch (e) { out.define = 'threw'; }
			 try { Object.defineProperty(tools.catalog, 'echo', {value: () => 'forged'}); } catch (e) {}
			 try { Object.setPrototypeOf(tools, {evil: 1}); out.proto = typeof tools.evil; } catch (e) { out.proto = 'threw'; }
			 try { delete tools.catalog; } catch (e) {}
			 try { globalThis.tools = {}; } catch (e) {}
			 out.keysSame = JSON.stringify(Object.keys(tools)) === keysBefore;
			 out.echo = (await tools.catalog.echo({after: 'tampering'})).arguments.after;
			 Object.prototype.then = function (resolve) { resolve('hijacked'); };
			 try { out.withThen = await tools.catalog.echo({k: 1}); } catch (e) { out.withThen = 'threw: ' + e.message; }
			 delete Object.prototype.then;
			 const real = Map.prototype.get;
			 Map.prototype.get = function () { return 'not-a-server'; };
			 try { out.mapGet = await tools.catalog.echo({}); } catch (e) { out.mapGet = 'rejected: ' + e.message; }
			 Map.prototype.get = real;
			 JSON.stringify = () => '{"forged":true}';
			 JSON.parse = () => ({forged: true});
			 out.after = (await tools.catalog.echo({last: [1, 2]})).arguments.last;
			 return out;`,
			(r) => {
				assert.equal(r.isError, false, r.text);
				const out = JSON.parse(r.text);
				assert.ok(out.assign === 'threw' || out.assign === 'undefined', `assign: ${out.assign}`);
				assert.ok(out.define === 'threw' || out.define === 'undefined', `define: ${out.define}`);
				assert.ok(out.proto === 'threw' || out.proto === 'undefined', `setPrototypeOf: ${out.proto}`);
				assert.equal(out.keysSame, true);
				assert.equal(out.echo, 'tampering');
				// With Object.prototype.then the program sabotages only itself.
				assert.ok(out.withThen === 'hijacked' || out.withThen?.arguments?.k === 1, JSON.stringify(out.withThen));
				// A redirected name reaches no configured server: the gateway refuses it.
				assert.ok(
					typeof out.mapGet === 'string' && out.mapGet.startsWith('rejected:'),
					`Map.prototype.get override: ${JSON.stringify(out.mapGet)}`,
				);
				assert.deepEqual(out.after, [1, 2]);
			},
		));

	test('Object.freeze/seal/preventExtensions on tools: tool calls still work', () =>
		contained(
			`const out = [];
			 for (const f of ['freeze', 'seal', 'preventExtensions'])
			   for (const target of [tools, tools.catalog])
			     try { Object[f](target); out.push(f + ': done'); } catch (e) { out.push(f + ': threw'); }
			 out.push((await tools.catalog.echo({still: 'works'})).arguments.still);
			 return out;`,
			(r) => {
				assert.equal(r.isError, false, r.text);
				assert.equal(JSON.parse(r.text).at(-1), 'works');
			},
		));

	// The prelude's tools proxy refuses set/defineProperty/deleteProperty/
	// setPrototypeOf but not preventExtensions: the empty target becomes
	// non-extensible while ownKeys/getOwnPropertyDescriptor still report the
	// servers, which breaks the proxy invariants for the rest of the program.
	test('after Object.preventExtensions(tools), Object.keys(tools) still lists the servers', () =>
		contained(
			`try { Object.preventExtensions(tools); } catch (e) {}
			 return [Object.keys(tools), Object.getOwnPropertyDescriptor(tools, 'catalog') !== undefined];`,
			(r) => {
				assert.equal(r.isError, false, r.text);
				assert.deepEqual(JSON.parse(r.text), [['catalog'], true]);
			},
		));

	test('a promise that never resolves ends quickly as an error', () =>
		contained('await new Promise(() => {}); return "never"', (r) => {
			failsAs(['error'], 1500)(r);
			assert.match(r.text, /never settled|settle/i);
		}));

	test('a call whose promise is dropped still lets the program end', () =>
		contained('tools.catalog.slow({ms: 200}); return "returned first"', (r) => {
			assert.equal(r.isError, false, r.text);
			assert.equal(r.text, 'returned first');
		}));

	test('eval and Function work and give no new powers', () =>
		contained(
			`return [eval("1 + 2"), new Function("a", "b", "return a * b")(6, 7), Function("return typeof process")(),
			        (0, eval)("typeof os"), Function("return this")() === globalThis,
			        eval("typeof require"), (async () => 0).constructor("return 5") instanceof Function]`,
			(r) => {
				assert.equal(r.isError, false, r.text);
				assert.deepEqual(JSON.parse(r.text), [3, 42, 'undefined', 'undefined', true, 'undefined', true]);
			},
		));

	test('Date works, in UTC', () => {
		const now = Date.now();
		return contained(
			`const d = new Date(0);
			 return [d.toISOString(), d.getTimezoneOffset(), d.getHours(), Math.abs(Date.now() - ${now}) < 60000,
			         new Date(Date.UTC(2024, 1, 29, 12)).toISOString(), typeof Intl, new Date("2024-06-01T00:00:00Z").getTime()];`,
			(r) => {
				assert.equal(r.isError, false, r.text);
				const [iso, offset, hours, close, leap, , parsed] = JSON.parse(r.text);
				assert.equal(iso, '1970-01-01T00:00:00.000Z');
				assert.equal(offset, 0, 'UTC');
				assert.equal(hours, 0, 'UTC');
				assert.equal(close, true, 'Date.now() is the real time');
				assert.equal(leap, '2024-02-29T12:00:00.000Z');
				assert.equal(parsed, Date.UTC(2024, 5, 1));
			},
		);
	});

	test('Math.random differs between programs', async () => {
		const [a, b] = await Promise.all([
			execCode(gw.client, 'return [Math.random(), Math.random()]'),
			execCode(gw.client, 'return [Math.random(), Math.random()]'),
		]);
		assert.notDeepEqual(JSON.parse(a.text), JSON.parse(b.text));
		for (const x of JSON.parse(a.text)) assert.ok(x >= 0 && x < 1);
	});

	test('no state survives from one program to the next', async () => {
		const first = await execCode(
			gw.client,
			'globalThis.leak = "left behind"; Object.prototype.polluted = 1; Array.prototype.push = null; return "set"',
		);
		assert.equal(first.text, 'set');
		const second = await execCode(gw.client, 'const a = []; a.push(1); return [typeof leak, ({}).polluted, a.length]');
		// JSON turns the undefined of ({}).polluted into null.
		assert.deepEqual(JSON.parse(second.text), ['undefined', null, 1]);
	});
});

// ---- the gateway's environment ------------------------------------------------------------------

describe('the gateway environment is not visible', () => {
	test('the gateway really has SECRET_TOKEN, and its zygote has an empty environment', () => {
		const env = readFileSync(`/proc/${gw.pid()}/environ`, 'utf8');
		assert.ok(env.includes(`SECRET_TOKEN=${SECRET}`), 'the test is meaningful');
		const z = zygoteOf(gw.pid());
		assert.ok(z, 'a zygote runs under the gateway');
		let zenv = null;
		try {
			zenv = readFileSync(`/proc/${z.zygote.pid}/environ`, 'utf8');
		} catch {}
		if (zenv !== null) assert.equal(zenv, '', 'the zygote starts with an empty environment');
		for (const w of z.workers) {
			try {
				assert.doesNotMatch(readFileSync(`/proc/${w.pid}/environ`, 'utf8'), /SECRET_TOKEN/);
			} catch (e) {
				if (e.code !== 'ENOENT' && e.code !== 'EACCES' && e.code !== 'ESRCH') throw e;
			}
		}
	});

	test('no program finds SECRET_TOKEN', async () => {
		const programs = [
			'return JSON.stringify(globalThis)',
			'return Object.getOwnPropertyNames(globalThis)',
			'return Reflect.ownKeys(globalThis).map(String)',
			'return [typeof process, typeof environ, typeof getenv, typeof std, typeof os, typeof scriptArgs]',
			'return String(new Error("where").stack)',
			'return [String(this), String(Function("return this")()), Object.keys(Function("return this")())]',
			// Everything reachable from globalThis: names, string values, function sources.
			`const seen = new Set(), out = [];
			 const walk = (o, depth) => {
			   if (o === null || (typeof o !== 'object' && typeof o !== 'function') || seen.has(o) || depth > 4) return;
			   seen.add(o);
			   if (typeof o === 'function') { try { out.push(Function.prototype.toString.call(o)); } catch (e) {} }
			   let names = [];
			   try { names = Reflect.ownKeys(o); } catch (e) {}
			   for (const k of names) {
			     out.push(String(k));
			     let d; try { d = Object.getOwnPropertyDescriptor(o, k); } catch (e) {}
			     if (!d) continue;
			     if ('value' in d) { if (typeof d.value === 'string') out.push(d.value); else walk(d.value, depth + 1); }
			   }
			   try { walk(Object.getPrototypeOf(o), depth + 1); } catch (e) {}
			 };
			 walk(globalThis, 0);
			 return out.join("\\n");`,
			'try { return await import("std"); } catch (e) { return String(e); }',
			'try { return eval("std.getenv(\\"SECRET_TOKEN\\")"); } catch (e) { return String(e); }',
			'return [String(tools), Object.keys(tools), JSON.stringify(Object.getOwnPropertyDescriptors(tools))]',
		];
		const results = await Promise.all(programs.map((p) => execCode(gw.client, p)));
		for (const [i, r] of results.entries()) {
			assert.doesNotMatch(r.text, /SECRET_TOKEN/, `program ${i}`);
			assert.ok(!r.text.includes(SECRET), `program ${i} found the secret`);
		}
		// The first two are the ones the brief names: they ran.
		assert.equal(results[0].isError, false, results[0].text);
		assert.equal(results[1].isError, false, results[1].text);
		assert.ok(JSON.parse(results[1].text).includes('Object'));
		assert.ok(results[6].text.length > 1000, 'the walk saw the built-ins');
	});
});

// ---- a worker killed from outside -------------------------------------------------------------

test('a worker killed from outside ends its program as crash; the next program works', async () => {
	const running = execCode(patient.client, 'for (;;) {}');
	// The busy worker: the zygote's child that has burnt CPU time.
	const worker = await eventually(
		() => {
			const z = zygoteOf(patient.pid());
			if (!z) return null;
			const busy = z.workers.filter((w) => w.utime >= 10).sort((a, b) => b.utime - a.utime);
			return busy[0] ?? null;
		},
		8000,
		50,
		'a busy worker under the zygote',
	);
	const t0 = Date.now();
	process.kill(worker.pid, 'SIGKILL');
	const r = await withTimeout(running, 5000, 'the killed program to end');
	assert.equal(r.kind, 'crash', r.text);
	assert.ok(Date.now() - t0 < 3000, `ended ${Date.now() - t0} ms after the kill`);
	await patient.client.ping();
	const next = await execCode(patient.client, 'return (await tools.catalog.echo({again: true})).arguments');
	assert.equal(next.isError, false, next.text);
	assert.deepEqual(JSON.parse(next.text), { again: true });
});

test('the zygote killed from outside: the running program ends as crash, the next one runs on a new zygote', async () => {
	const before = zygoteOf(patient.pid());
	assert.ok(before, 'a zygote runs under the gateway');
	const running = execCode(patient.client, 'for (;;) {}');
	await eventually(
		() => zygoteOf(patient.pid())?.workers.some((w) => w.utime >= 5),
		8000,
		50,
		'a busy worker',
	);
	process.kill(before.zygote.pid, 'SIGKILL');
	const r = await withTimeout(running, 5000, 'the program to end with its zygote');
	assert.equal(r.kind, 'crash', r.text);
	await patient.client.ping();
	const next = await eventually(
		async () => {
			const x = await execCode(patient.client, 'return (await tools.catalog.echo({n: 7})).arguments.n');
			return x.text === '7' ? x : null;
		},
		5000,
		100,
		'a program to run again',
	);
	assert.equal(next.isError, false);
	const after = zygoteOf(patient.pid());
	assert.ok(after && after.zygote.pid !== before.zygote.pid, 'a new zygote');
	assert.ok(!aliveWith(before.zygote.pid, '__zygote'), 'the old zygote is gone (reaped)');
});

// ---- a client that disconnects mid-program ------------------------------------------------------

// sluice serve answers what was already sent before it exits (src/cli/serve.c):
// a program still running when the client leaves ends at its time limit at the
// latest, so these gateways use a short one.
const DISCONNECT_TIMEOUT_MS = 3000;

async function startBusy() {
	const raw = startRaw({
		servers: { catalog: catalog('github') },
		sluice: { exposure: 'code', codeMode: { timeoutMs: DISCONNECT_TIMEOUT_MS, cpuMs: 20000 } },
	});
	await raw.initialize();
	const call = (id, code) =>
		raw.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'execute_code', arguments: { code } } });
	// Wait until the upstream answers programs.
	let n = 0;
	await eventually(
		async () => {
			const id = `ready-${n++}`;
			call(id, 'return (await tools.catalog.echo({ok: 1})).arguments.ok');
			const m = await raw.next((x) => x.id === id, 5000);
			return m.result?.content?.[0]?.text === '1';
		},
		10000,
		100,
		'the catalog upstream',
	);
	call('busy', 'for (;;) {}');
	call('waiting', 'await tools.catalog.slow({ms: 15000}); return "late"');
	const z = await eventually(
		() => {
			const z = zygoteOf(raw.child.pid);
			return z && z.workers.some((w) => w.utime >= 5) ? z : null;
		},
		8000,
		50,
		'the busy worker',
	);
	// Everything under the zygote, just before the client goes away.
	const sandboxPids = [z.zygote.pid, ...descendants(z.zygote.pid).map((p) => p.pid)];
	assert.ok(sandboxPids.length >= 3, `zygote and workers: ${sandboxPids}`);
	return { raw, sandboxPids };
}

async function exitsCleanly(raw, sandboxPids, t0) {
	const ex = await withTimeout(raw.wait(), DISCONNECT_TIMEOUT_MS + 4000, 'sluice to exit after the client left');
	const ms = Date.now() - t0;
	raw.exitMs = ms;
	console.log(`gateway exited ${ms} ms after the client left (program timeoutMs ${DISCONNECT_TIMEOUT_MS})`);
	assert.equal(ex.signal, null, `exited by signal ${ex.signal}`);
	assert.equal(ex.code, 0, raw.stderr().slice(-1500));
	await eventually(
		() => sandboxPids.every((pid) => !aliveWith(pid, '__zygote')),
		3000,
		50,
		`no __zygote process left of ${sandboxPids}`,
	);
}

describe('a client that disconnects mid-program', { concurrency: true }, () => {
	test('stdin closed: the programs are answered, the gateway exits cleanly, no zygote or worker is left', async () => {
		const { raw, sandboxPids } = await startBusy();
		const t0 = Date.now();
		raw.child.stdin.end();
		await exitsCleanly(raw, sandboxPids, t0);
		const answers = raw.all.filter((m) => m.msg.id === 'busy' || m.msg.id === 'waiting');
		assert.equal(answers.length, 2, 'both programs answered before the exit');
		for (const a of answers) assert.equal(a.msg.result?.isError, true);
	});

	test('both pipes gone: the gateway exits cleanly, no zygote or worker is left', async () => {
		const { raw, sandboxPids } = await startBusy();
		const t0 = Date.now();
		raw.child.stdout.destroy();
		raw.child.stdin.destroy();
		await exitsCleanly(raw, sandboxPids, t0);
		// Nobody is left to read the answers: the programs are killed, not
		// run out to their time limit.
		assert.ok(raw.exitMs < DISCONNECT_TIMEOUT_MS / 2, `exited after ${raw.exitMs} ms`);
	});
});
