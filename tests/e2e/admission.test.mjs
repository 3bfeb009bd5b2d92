// HTTP admission before work (issue 13, finding 2): a request is checked
// (Host, Origin, token, endpoint, method) when its headers are whole and
// before any byte of its body is read; connections that have not been
// admitted are capped per address and in all and must send their headers
// within sluice.limits.headerTimeoutMs; a kept-alive connection waits at
// most idleConnectionTimeoutMs for its next request. Attack sockets come
// from 127.0.0.2, the token-holding client from 127.0.0.1 (both loopback).
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { readFileSync } from 'node:fs';

import { catalog, closeAll, startHttp, httpRequest, sleep, LEGACY } from './helpers.mjs';

const TOKEN = 'admission-token-1';
const started = [];

async function gateway(sluice = {}) {
	const gw = await startHttp({ servers: { github: catalog('github') }, sluice: { ...sluice, http: { bearerToken: TOKEN, ...sluice.http } } });
	started.push(gw);
	return gw;
}

after(async () => {
	await closeAll();
	for (const g of started) assert.doesNotMatch(g.stderr(), /Sanitizer|runtime error/, g.stderr().slice(-3000));
});

// kB of the gateway's resident memory now (VmRSS) and at its peak (VmHWM).
function memory(pid) {
	const status = readFileSync(`/proc/${pid}/status`, 'utf8');
	const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)[1]);
	return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

// One request on a connection of its own (no keep-alive pool), from
// 127.0.0.1; resolves { status, headers, json, ms }.
function request(gw, { method = 'POST', headers = {}, body } = {}) {
	return httpRequest(
		{ host: '127.0.0.1', port: gw.port, path: '/mcp', method, localAddress: '127.0.0.1', headers: { authorization: `Bearer ${TOKEN}`, ...headers } },
		body,
		3000,
	);
}

const initialize = (gw) =>
	request(gw, {
		body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'admission', version: '1' } } },
	});

// A raw socket from 127.0.0.2; closed() resolves with the ms it lived.
function attacker(port, localAddress = '127.0.0.2') {
	const s = net.connect({ port, host: '127.0.0.1', localAddress });
	const t0 = performance.now();
	s.closedIn = new Promise((resolve) => s.on('close', () => resolve(performance.now() - t0)));
	s.on('error', () => {});
	// Bounded, whatever the gateway does (an idle timeout would never
	// fire on a socket that trickles).
	const limit = setTimeout(() => s.destroy(), 15000);
	s.on('close', () => clearTimeout(limit));
	return s;
}

describe('admission before work', () => {
	test('2,000 sockets trickling their headers: a token-holding client is answered within 1 s throughout', async () => {
		const gw = await gateway();
		const sid = (await initialize(gw)).headers['mcp-session-id'];
		assert.match(sid, /^[0-9a-f]{32}$/);
		const socks = [];
		let stop = false;
		// Open 2,000 sockets (in bursts of 100), each sending a header
		// byte every 500 ms; bounded to about 5 s.
		const attack = (async () => {
			for (let i = 0; i < 2000; i++) {
				const s = attacker(gw.port);
				s.write('P');
				socks.push(s);
				if (i % 100 === 99) await sleep(50);
			}
			const header = `OST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nX-Slow: `;
			for (let k = 0; k < 8 && !stop; k++) {
				await sleep(500);
				for (const s of socks) if (!s.destroyed) s.write(header[k % header.length]);
			}
		})();
		const pings = [];
		const t0 = Date.now();
		let open;
		try {
			while (Date.now() - t0 < 5000) {
				const r = await request(gw, { headers: { 'mcp-session-id': sid }, body: { jsonrpc: '2.0', id: pings.length + 2, method: 'ping' } });
				assert.equal(r.status, 200, r.text);
				assert.deepEqual(r.json.result, {});
				pings.push(r.ms);
				await sleep(50);
			}
		} finally {
			stop = true;
			await attack;
			open = socks.filter((s) => !s.destroyed && s.readyState === 'open').length;
			for (const s of socks) s.destroy();
		}
		pings.sort((a, b) => a - b);
		const worst = pings.at(-1);
		console.log(`# ${pings.length} pings during the attack: p50 ${pings[pings.length >> 1].toFixed(1)} ms, max ${worst.toFixed(1)} ms; attack sockets still open ${open}`);
		assert.ok(pings.length >= 20, `${pings.length} pings`);
		assert.ok(worst < 1000, `a ping took ${worst} ms`);
		assert.match(gw.stderr(), /maxPendingPerAddress: closing the oldest \(logged once\)/);
		await gw.close();
	});

	test('50 bodies of 4 MiB with a wrong token: each 401 before its body is read, RSS stays put', async () => {
		const gw = await gateway();
		await initialize(gw); // the gateway's own start-up allocations happen first
		const before = memory(gw.pid);
		const body = Buffer.alloc(4 << 20, 'x');
		// From 50 addresses, so that maxPendingPerAddress does not close
		// any before its headers are read.
		const one = (_, i) =>
			new Promise((resolve) => {
				const s = attacker(gw.port, `127.0.1.${i + 1}`);
				let text = '';
				let sent = 0;
				s.on('data', (d) => (text += d));
				s.on('close', () => resolve({ text, sent }));
				s.write(
					`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nAuthorization: Bearer wrong\r\n` +
						`Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${body.length}\r\n\r\n`,
				);
				// 64 KiB of the body, then a wait for an answer: an answer
				// must not need the rest (and a write after the gateway
				// closed would lose it to EPIPE). Only without one, the rest.
				s.write(body.subarray(0, 65536));
				sent = 65536;
				setTimeout(() => {
					if (text || s.destroyed) return;
					s.write(body.subarray(sent));
					sent = body.length;
				}, 1000);
			});
		const results = await Promise.all(Array.from({ length: 50 }, one));
		const afterwards = memory(gw.pid);
		for (const { text, sent } of results) {
			assert.match(text, /^HTTP\/1\.1 401 /, text.slice(0, 200));
			assert.match(text, /Unauthorized: the bearer token is not valid/);
			assert.ok(sent < body.length, `answered only after all ${sent} bytes of the body`);
		}
		const grew = (afterwards.hwm - before.rss) / 1024;
		console.log(`# RSS before ${before.rss} kB, peak after ${afterwards.hwm} kB: +${grew.toFixed(1)} MB for 50 x 4 MiB bodies`);
		assert.ok(grew < 8, `the gateway's peak RSS grew by ${grew} MB`);
		await gw.close();
	});

	test('sluice.limits.headerTimeoutMs closes a connection trickling its headers; a stream waiting for events is not cut by idleConnectionTimeoutMs', async () => {
		const gw = await gateway({ limits: { headerTimeoutMs: 1000, idleConnectionTimeoutMs: 1000 } });
		const sid = (await initialize(gw)).headers['mcp-session-id'];
		// The session's GET stream: it waits, suspended, with no event for
		// longer than the idle timeout (heartbeats every 15 s).
		const stream = await new Promise((resolve, reject) => {
			const req = http.request(
				{ host: '127.0.0.1', port: gw.port, path: '/mcp', agent: false, headers: { accept: 'text/event-stream', authorization: `Bearer ${TOKEN}`, 'mcp-session-id': sid } },
				resolve,
			);
			req.on('error', reject);
			req.end();
		});
		assert.equal(stream.statusCode, 200);
		let streamClosed = false;
		stream.on('close', () => (streamClosed = true));
		stream.resume();
		// A slowloris: one header byte every 200 ms, never done.
		const slow = attacker(gw.port);
		const trickle = setInterval(() => slow.write('X'), 200);
		// A kept-alive connection that made one request and then trickles
		// the next one's headers.
		const kept = attacker(gw.port, '127.0.0.1');
		const ping = '{"jsonrpc":"2.0","id":5,"method":"ping"}';
		kept.write(
			`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nAuthorization: Bearer ${TOKEN}\r\nMcp-Session-Id: ${sid}\r\n` +
				`Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${ping.length}\r\n\r\n${ping}`,
		);
		let keptText = '';
		kept.on('data', (d) => (keptText += d));
		const keptTrickle = setInterval(() => kept.write('Y'), 200);
		try {
			const lived = await slow.closedIn;
			assert.ok(lived > 900 && lived < 2500, `the slow connection lived ${lived} ms`);
			const keptLived = await kept.closedIn;
			assert.match(keptText, /^HTTP\/1\.1 200 /);
			assert.ok(keptLived > 900 && keptLived < 3000, `the kept-alive connection lived ${keptLived} ms`);
			await sleep(1500);
			assert.equal(streamClosed, false, 'the waiting stream was cut');
			assert.match(gw.stderr(), /headerTimeoutMs: closed \(logged once\)/);
		} finally {
			clearInterval(trickle);
			clearInterval(keptTrickle);
			for (const s of [slow, kept, stream]) s.destroy();
		}
		await gw.close();
	});

	test('sluice.limits.maxPendingPerAddress and maxPendingConnections close the oldest pending connection', async () => {
		const gw = await gateway({ limits: { maxPendingPerAddress: 4, maxPendingConnections: 6 } });
		const from2 = [];
		for (let i = 0; i < 6; i++) {
			from2.push(attacker(gw.port, '127.0.0.2'));
			await sleep(30);
		}
		// Pending for less than a second, none is closed (a client opening
		// many connections at once writes their headers a little later).
		await sleep(1100);
		assert.deepEqual(from2.map((s) => s.destroyed), [false, false, false, false, false, false]);
		// One more from that address: its oldest go, down to 4.
		from2.push(attacker(gw.port, '127.0.0.2'));
		const lived = await Promise.all(from2.slice(0, 3).map((s) => s.closedIn));
		assert.ok(lived.every((ms) => ms < 2000), JSON.stringify(lived));
		await sleep(100);
		assert.deepEqual(from2.slice(3).map((s) => s.destroyed), [false, false, false, false]);
		// 4 pending from .2 and 3 from .3: one over the bound of all; the
		// oldest of all (from .2) gives way, .3's stay.
		const from3 = [];
		for (let i = 0; i < 3; i++) {
			from3.push(attacker(gw.port, '127.0.0.3'));
			await sleep(30);
		}
		await from2[3].closedIn;
		await sleep(100);
		assert.deepEqual(from3.map((s) => s.destroyed), [false, false, false]);
		assert.deepEqual(from2.slice(4).map((s) => s.destroyed), [false, false, false]);
		// Admitted connections are not pending: a client is served.
		assert.equal((await initialize(gw)).status, 200);
		for (const s of [...from2, ...from3]) s.destroy();
		await gw.close();
	});
});
