// The HTTP transport's memory budget (issue 13, findings 3 and 10): every
// byte held for a peer (queued SSE events, histories kept for resumption,
// backlogs, request bodies) counts against sluice.limits.maxSessionBytes
// per session and maxBufferedBytes in all; at a bound the oldest detached
// history goes first, then the oldest backlog lines, a GET stream whose
// client stopped reading ends, and an answer that cannot be held becomes
// an error naming the bound.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { readFileSync } from 'node:fs';

import { catalog, closeAll, startHttp, httpRequest, sleep, eventually, LEGACY } from './helpers.mjs';

const MiB = 1 << 20;
const started = [];

async function gateway(sluice = {}) {
	const gw = await startHttp({ servers: { github: catalog('github') }, sluice });
	started.push(gw);
	return gw;
}

after(async () => {
	await closeAll();
	for (const g of started) assert.doesNotMatch(g.stderr(), /Sanitizer|runtime error/, g.stderr().slice(-3000));
});

// MB of the gateway's resident memory. Under the sanitizers (make test
// SAN=...) freed memory sits in ASan's quarantine: RSS says nothing there,
// and only what the gateway does at the bounds is checked.
const RSS = !process.env.SAN;
const rssMB = (pid) => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;

// One POST; resolves { status, headers, json, text }.
function post(gw, body, headers = {}) {
	return httpRequest({ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST', headers }, body, 20000);
}

async function session(gw) {
	const r = await post(gw, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'budget', version: '1' } } });
	assert.equal(r.status, 200, r.text);
	return r.headers['mcp-session-id'];
}

const call = (gw, sid, id, name, args, meta) =>
	post(gw, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) } }, { 'mcp-session-id': sid });

// A GET on a raw socket: resolves once the response headers are in, with
// { socket, text() } (what arrived so far) and closed (resolves on close).
function openGet(gw, sid, lastEventId) {
	const s = net.connect({ port: gw.port, host: '127.0.0.1' });
	let text = '';
	s.on('data', (d) => (text += d));
	s.on('error', () => {});
	const closed = new Promise((resolve) => s.on('close', resolve));
	s.write(`GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nConnection: close\r\nAccept: text/event-stream\r\nMcp-Session-Id: ${sid}\r\n${lastEventId ? `Last-Event-ID: ${lastEventId}\r\n` : ''}\r\n`);
	return eventually(() => /\r\n\r\n/.test(text), 5000, 20, 'GET headers').then(() => ({ socket: s, text: () => text, closed }));
}

describe('the memory budget', () => {
	test('160 progress-heavy requests that hang up at once: RSS stays bounded and the session is still served', async () => {
		// The rate cap on notifications lifted: this is the budget's test.
		const gw = await gateway({ limits: { maxSessionBytes: 4 * MiB, notificationsPerSecond: 1000000 }, http: { maxRequestsPerSession: 200 } });
		const sid = await session(gw);
		const before = rssMB(gw.pid);
		// Each request reads its priming event's id, then hangs up; the
		// call runs on (4,000 progress events of about 200 bytes each).
		const primed = await Promise.all(
			Array.from(
				{ length: 160 },
				(_, i) =>
					new Promise((resolve, reject) => {
						const req = http.request(
							{
								host: '127.0.0.1',
								port: gw.port,
								path: '/mcp',
								method: 'POST',
								agent: false,
								headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json', 'mcp-session-id': sid },
							},
							(res) => {
								let text = '';
								res.on('data', (c) => {
									text += c;
									const m = /^id: (\d+-0)$/m.exec(text);
									if (m) {
										req.destroy();
										resolve(m[1]);
									}
								});
							},
						);
						req.on('error', () => {});
						req.setTimeout(10000, () => reject(new Error('no priming event')));
						req.end(JSON.stringify({ jsonrpc: '2.0', id: `p${i}`, method: 'tools/call', params: { name: 'github__progress', arguments: { steps: 4000, interval_ms: 0 }, _meta: { progressToken: `t${i}` } } }));
					}),
			),
		);
		// Until every call is answered: the RSS stops moving.
		let last = 0;
		let now = rssMB(gw.pid);
		for (let i = 0; i < 40 && Math.abs(now - last) > 0.2; i++) {
			await sleep(500);
			[last, now] = [now, rssMB(gw.pid)];
		}
		console.log(`# RSS before ${before.toFixed(1)} MB, after 160 detached progress streams ${now.toFixed(1)} MB (maxSessionBytes 4 MiB)`);
		if (RSS) assert.ok(now - before < 4 + 16, `RSS grew ${(now - before).toFixed(1)} MB`);
		// Served still, and the oldest stream's history was given up: its
		// resumption fails cleanly.
		const r = await call(gw, sid, 'after', 'github__echo', { ok: 1 });
		assert.equal(r.status, 200, r.text);
		assert.deepEqual(JSON.parse(r.json.result.content[0].text), { ok: 1 });
		const oldest = primed.map((p) => Number(p.split('-')[0])).sort((a, b) => a - b)[0];
		const g = await openGet(gw, sid, `${oldest}-0`);
		await g.closed;
		assert.match(g.text(), /^HTTP\/1\.1 404 /);
		assert.match(g.text(), /no longer kept|no stream to resume/);
		await gw.close();
	});

	test('a session with no GET stream and an upstream flooding big notifications/message stays under its budget', async () => {
		const gw = await gateway({ limits: { maxSessionBytes: 4 * MiB } });
		const quiet = await session(gw);
		const loud = await session(gw);
		const before = rssMB(gw.pid);
		const message = 'm'.repeat(MiB);
		for (let i = 0; i < 40; i++) {
			const r = await call(gw, loud, i + 1, 'github__log', { level: 'info', message: `${i} ${message}` });
			assert.equal(r.status, 200, r.text);
		}
		await sleep(300);
		const grew = rssMB(gw.pid) - before;
		console.log(`# RSS grew ${grew.toFixed(1)} MB for 40 x 1 MiB notifications to 2 sessions without a GET stream (maxSessionBytes 4 MiB)`);
		if (RSS) assert.ok(grew < 2 * 4 + 12, `RSS grew ${grew.toFixed(1)} MB`);
		// The quiet session's backlog kept the newest messages, within its
		// budget: the oldest were given up.
		const g = await openGet(gw, quiet);
		await eventually(() => /"data":"39 m/.test(g.text()), 5000, 50, 'the newest message');
		const kept = [...g.text().matchAll(/"data":"(\d+) m/g)].map((m) => Number(m[1]));
		assert.ok(kept.length >= 1 && kept.length <= 4, JSON.stringify(kept));
		assert.equal(kept.at(-1), 39);
		g.socket.destroy();
		await gw.close();
	});

	test('a GET stream whose client stops reading is ended at the budget', async () => {
		const gw = await gateway({ limits: { maxSessionBytes: 4 * MiB } });
		const reader = await session(gw);
		const loud = await session(gw);
		const g = await openGet(gw, reader);
		g.socket.pause(); // reads nothing more: the kernel's buffers fill, then the gateway's
		const before = rssMB(gw.pid);
		const message = 'm'.repeat(MiB);
		for (let i = 0; i < 40; i++) await call(gw, loud, i + 1, 'github__log', { level: 'info', message });
		await eventually(() => /the client of stream \d+ is not reading; ended \(busy: sluice\.limits\.maxSessionBytes/.test(gw.stderr()), 5000, 50, 'the stream ended');
		const grew = rssMB(gw.pid) - before;
		console.log(`# RSS grew ${grew.toFixed(1)} MB with a GET stream not read and 40 x 1 MiB notifications`);
		// Two sessions of 4 MiB, and what the allocator keeps of 1 MiB
		// blocks freed (without the bound: the 40 MiB queued, and more).
		if (RSS) assert.ok(grew < 2 * 4 + 20, `RSS grew ${grew.toFixed(1)} MB`);
		g.socket.resume();
		await g.closed; // what the kernel held, then the end
		// The session is served still.
		const r = await call(gw, reader, 'after', 'github__echo', { ok: 1 });
		assert.equal(r.status, 200, r.text);
		await gw.close();
	});

	test('an answer too big for the budget becomes a JSON-RPC error naming the bound', async () => {
		// (The governor would cut the result to its token budget first.)
		const gw = await gateway({ limits: { maxSessionBytes: 64 << 10 }, governor: { maxTokens: 1000000 } });
		const sid = await session(gw);
		let r = await call(gw, sid, 'big', 'github__huge', { bytes: 100000 });
		assert.equal(r.status, 200, r.text);
		assert.equal(r.json.id, 'big');
		assert.equal(r.json.error.code, -32000);
		assert.equal(r.json.error.message, 'busy: sluice.limits.maxSessionBytes (65536 bytes) reached');
		assert.match(gw.stderr(), /an answer became an error \(busy: sluice\.limits\.maxSessionBytes/);
		r = await call(gw, sid, 'small', 'github__huge', { bytes: 1000 });
		assert.equal(r.json.result.content[0].text.length, 1000);
		await gw.close();
	});
});
