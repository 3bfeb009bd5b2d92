// Global concurrency caps (issue 13, finding 4): programs running at once
// across every session and both eras (sluice.codeMode.maxConcurrent, with a
// queue of maxQueued, then "busy"), and requests in flight across every
// session, transport and era (sluice.limits.maxRequestsInFlight).
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import {
	catalog,
	closeAll,
	connect,
	eventually,
	execCode,
	httpClient,
	modernMeta,
	startHttp,
	startRaw,
	textOf,
	zygoteOf,
	MODERN,
} from './helpers.mjs';

const started = [];
after(async () => {
	await closeAll();
	// Under `make test SAN=...`, a sanitizer report fails the file.
	for (const g of started) assert.doesNotMatch(g.stderr(), /Sanitizer|runtime error/, g.stderr().slice(-3000));
});

const servers = { github: catalog('github') };

// Code mode starts with the gateway by running a probe program of its own,
// which takes a slot like any other: wait until it has ended.
const probeDone = (gw) => eventually(() => /code mode (ready|failed)/.test(gw.stderr()), 15000, 50, 'the code-mode probe');
const code = { maxConcurrent: 2, maxQueued: 2, timeoutMs: 20000 };

// Allocates and touches 100 MiB, then waits 1.5 s in a tool call.
const HOG = `const a = new Uint8Array(100 * 1024 * 1024);
for (let i = 0; i < a.length; i += 4096) a[i] = 1;
await tools.github.slow({ ms: 1500 });
return a.length;`;

// Samples, every 25 ms until stop(), how many of the gateway's sandbox
// workers hold 50 MiB more than the zygote (a worker of HOG past its
// allocation). A prepared worker holds about what the zygote holds: a few
// MiB, or about 50 MiB in a sanitizer build, so the bar is relative.
function watchWorkers(gatewayPid) {
	let max = 0;
	let samples = 0;
	const rss = (pid) => {
		try {
			return Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
		} catch {
			return 0;
		}
	};
	const timer = setInterval(() => {
		const z = zygoteOf(gatewayPid);
		if (!z) return;
		samples++;
		const bar = rss(z.zygote.pid) + (50 << 20);
		max = Math.max(max, z.workers.filter((w) => rss(w.pid) > bar).length);
	}, 25);
	return {
		stop() {
			clearInterval(timer);
			return { max, samples };
		},
	};
}

// 20 outcomes of HOG: 2 run, 2 wait, 16 are refused at once.
function checkOutcomes(outcomes, peak) {
	const ok = outcomes.filter((o) => !o.isError);
	const busy = outcomes.filter((o) => o.kind === 'busy');
	assert.equal(ok.length, 4, JSON.stringify(outcomes.filter((o) => o.kind !== "busy").map((o) => o.text.slice(0, 300))));
	for (const o of ok) assert.equal(o.text, String(100 * 1024 * 1024));
	assert.equal(busy.length, 16, JSON.stringify(outcomes.map((o) => o.text.slice(0, 120))));
	for (const o of busy) {
		assert.match(o.text, /^busy: code mode is full: 2 programs running \(sluice\.codeMode\.maxConcurrent\) and 2 waiting \(sluice\.codeMode\.maxQueued\)/);
		assert.ok(o.ms < 1500, `refused after ${o.ms} ms`);
	}
	assert.ok(peak.samples > 20, `only ${peak.samples} samples of the workers`);
	assert.ok(peak.max >= 1 && peak.max <= 2, `${peak.max} workers held 100 MiB at once`);
}

describe('codeMode.maxConcurrent and maxQueued', () => {
	test('stdio: 20 programs of 100 MiB at once: at most 2 run, 2 wait, 16 are busy at once', async () => {
		const gw = await connect({ servers, sluice: { exposure: 'code', codeMode: code } });
		started.push(gw);
		await probeDone(gw);
		const watch = watchWorkers(gw.pid());
		const outcomes = await Promise.all(Array.from({ length: 20 }, () => execCode(gw.client, HOG, { timeout: 60000 })));
		checkOutcomes(outcomes, watch.stop());
		// The queue is empty again: the next program runs.
		const r = await execCode(gw.client, 'return 7');
		assert.equal(r.text, '7');
		await gw.close();
	});

	test('HTTP, 2026-07-28 requests (a session each) count against the same slots', async () => {
		const gw = await startHttp({ servers, sluice: { exposure: 'code', codeMode: code } });
		started.push(gw);
		const one = async (i, program = HOG) => {
			const t0 = Date.now();
			const res = await fetch(gw.url, {
				method: 'POST',
				headers: {
					'content-type': 'application/json',
					accept: 'application/json, text/event-stream',
					'mcp-protocol-version': MODERN,
					'mcp-method': 'tools/call',
					'mcp-name': 'execute_code',
				},
				body: JSON.stringify({
					jsonrpc: '2.0',
					id: i,
					method: 'tools/call',
					params: { name: 'execute_code', arguments: { code: program }, _meta: modernMeta() },
				}),
			});
			const body = await res.text();
			assert.equal(res.status, 200, body);
			const line = body.startsWith('{') ? body : body.split('\n').filter((l) => l.startsWith('data: ')).pop().slice(6);
			const result = JSON.parse(line).result;
			const text = textOf(result);
			return { text, isError: result.isError === true, kind: /^([a-z]+): /.exec(text)?.[1], ms: Date.now() - t0 };
		};
		// The first request starts the gateway, and with it code mode.
		assert.equal((await one(0, 'return 1')).text, '1');
		await probeDone(gw);
		const watch = watchWorkers(gw.pid);
		const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => one(i + 1)));
		checkOutcomes(outcomes, watch.stop());
		await gw.close();
	});

	test('a queued program whose request is cancelled leaves the queue', async () => {
		const gw = await connect({ servers, sluice: { exposure: 'code', codeMode: { maxConcurrent: 1, maxQueued: 1, timeoutMs: 20000 } } });
		started.push(gw);
		await probeDone(gw);
		const running = execCode(gw.client, 'await tools.github.slow({ ms: 1500 }); return "first"');
		await new Promise((r) => setTimeout(r, 200));
		const ac = new AbortController();
		const queued = execCode(gw.client, 'return "never"', { signal: ac.signal }).catch((e) => e);
		await new Promise((r) => setTimeout(r, 200));
		// The queue is full: one more is busy.
		assert.equal((await execCode(gw.client, 'return 1')).kind, 'busy');
		ac.abort();
		assert.ok((await queued) instanceof Error);
		// Its place is free again: this one waits, then runs.
		const next = execCode(gw.client, 'return "next"');
		assert.equal((await running).text, 'first');
		assert.equal((await next).text, 'next');
		await gw.close();
	});
});

describe('sluice.limits.maxRequestsInFlight', () => {
	test('stdio: the 4th and 5th slow calls get -32000 naming the key; ping and lists still answer', async () => {
		const raw = startRaw({ servers, sluice: { limits: { maxRequestsInFlight: 3 } } });
		started.push(raw);
		await raw.initialize();
		const slow = (id) => raw.request('tools/call', { name: 'github__slow', arguments: { ms: 1500 } }, { id });
		const calls = [1, 2, 3].map((i) => slow(`s${i}`));
		let slowDone = false;
		Promise.allSettled(calls).then(() => (slowDone = true));
		await new Promise((r) => setTimeout(r, 100));
		const over = await Promise.all([slow('s4'), slow('s5')]);
		for (const m of over) {
			assert.equal(m.error?.code, -32000, JSON.stringify(m));
			assert.match(m.error.message, /3 requests are in flight.*sluice\.limits\.maxRequestsInFlight/);
		}
		// At once: while the three are still in flight, not when a slot frees.
		assert.equal(slowDone, false, 'the refusals came at once');
		// Methods answered from what the gateway holds are not refused.
		assert.deepEqual((await raw.request('ping')).result, {});
		assert.ok((await raw.request('tools/list')).result.tools.length > 0);
		for (const m of await Promise.all(calls)) assert.equal(textOf(m.result), 'slept 1500 ms');
		// The slots are free again.
		assert.equal(textOf((await slow('s6')).result), 'slept 1500 ms');
		await raw.close();
	});

	test('HTTP: a legacy session and 2026-07-28 requests share the count', async () => {
		const gw = await startHttp({ servers, sluice: { limits: { maxRequestsInFlight: 2 } } });
		started.push(gw);
		const { client } = await httpClient(gw.url);
		const legacy = client.callTool({ name: 'github__slow', arguments: { ms: 1500 } });
		const post = (id) =>
			fetch(gw.url, {
				method: 'POST',
				headers: {
					'content-type': 'application/json',
					accept: 'application/json, text/event-stream',
					'mcp-protocol-version': MODERN,
					'mcp-method': 'tools/call',
					'mcp-name': 'github__slow',
				},
				body: JSON.stringify({
					jsonrpc: '2.0',
					id,
					method: 'tools/call',
					params: { name: 'github__slow', arguments: { ms: 1500 }, _meta: modernMeta() },
				}),
			}).then(async (r) => {
				const body = await r.text();
				return JSON.parse(body.startsWith('{') ? body : body.split('\n').filter((l) => l.startsWith('data: ')).pop().slice(6));
			});
		await new Promise((r) => setTimeout(r, 200));
		const modern = post(1);
		await new Promise((r) => setTimeout(r, 200));
		const third = await post(2);
		assert.equal(third.error?.code, -32000, JSON.stringify(third));
		assert.match(third.error.message, /sluice\.limits\.maxRequestsInFlight/);
		assert.equal(textOf((await modern).result), 'slept 1500 ms');
		assert.equal(textOf(await legacy), 'slept 1500 ms');
		assert.equal(textOf((await post(3)).result), 'slept 1500 ms');
		await client.close();
		await gw.close();
	});
});

// Issue 32, finding 12: one caller (its requests' identity) holds at most its
// share of the slots and of the queue (codeMode.maxConcurrentPerCaller,
// maxQueuedPerCaller: half of each by default); its flood of looping programs
// leaves another caller's program a slot.
describe('codeMode per-caller shares', () => {
	const TOKENS = { alice: 'alice-token-3f1e', bob: 'bob-token-8c2d' };
	const sluice = {
		http: { auth: { tokens: Object.entries(TOKENS).map(([subject, token]) => ({ token, subject })) } },
		// No quota: a quota bounds a caller's programs too (quotas.test.mjs),
		// so the shares are shown without one.
		codeMode: { enabled: true, maxConcurrent: 2, maxQueued: 4, timeoutMs: 20000 },
	};
	// One 2026-07-28 execute_code request as who: { text, kind, ms }.
	const run = async (gw, who, id, program) => {
		const t0 = Date.now();
		const res = await fetch(gw.url, {
			method: 'POST',
			headers: {
				authorization: `Bearer ${TOKENS[who]}`,
				'content-type': 'application/json',
				accept: 'application/json, text/event-stream',
				'mcp-protocol-version': MODERN,
				'mcp-method': 'tools/call',
				'mcp-name': 'execute_code',
			},
			body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call',
				params: { name: 'execute_code', arguments: { code: program }, _meta: modernMeta() } }),
		});
		const body = await res.text();
		assert.equal(res.status, 200, body);
		const line = body.startsWith('{') ? body : body.split('\n').filter((l) => l.startsWith('data: ')).pop()?.slice(6);
		assert.ok(line, `no answer: ${body}`);
		const text = textOf(JSON.parse(line).result);
		return { text, kind: /^([a-z]+): /.exec(text)?.[1], ms: Date.now() - t0 };
	};

	test('a caller flooding with loops fills only its share: another caller\'s program is admitted and runs', async () => {
		const gw = await startHttp({ servers, sluice });
		started.push(gw);
		assert.equal((await run(gw, 'bob', 0, 'return 1')).text, '1');
		await probeDone(gw);
		// Alice floods: 8 programs that loop until their timeout.
		const busy = [];
		const flood = Array.from({ length: 8 }, (_, i) =>
			// Those still waiting end unanswered when the gateway stops.
			run(gw, 'alice', i + 1, 'while (true) {}').then((o) => (o.kind === 'busy' && busy.push(o), o), () => null));
		// Her share is 1 running and 2 waiting: 5 are refused at once (on a
		// first-come gateway, 2 run, 4 wait and 2 are refused).
		await eventually(() => busy.length >= 2, 10000, 25, 'alice\'s refusals');
		await eventually(() => busy.length >= 5, 3000, 25, 'alice refused past her share').catch(() => {});
		for (const o of busy)
			assert.match(o.text, /^busy: code mode is full for this caller: 1 of its programs running \(sluice\.codeMode\.maxConcurrentPerCaller\) and 2 waiting \(sluice\.codeMode\.maxQueuedPerCaller\)/);
		assert.equal(busy.length, 5);
		// Bob's program gets the slot Alice may not take, and ends long
		// before any of hers could.
		const bob = await run(gw, 'bob', 100, 'return "bob ran"');
		assert.equal(bob.text, 'bob ran', JSON.stringify(bob));
		assert.ok(bob.ms < 10000, `bob waited ${bob.ms} ms`);
		await gw.close();
		await Promise.allSettled(flood);
	});
});
