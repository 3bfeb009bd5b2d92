// Fair shares between the callers of one gateway (issue 32): what one
// caller, or unauthenticated peers, can take from the others.
// - Finding 13: random opaque tokens fill introspection's maxInFlight; a
//   known token whose answer aged out is still served (its last active
//   answer serves while one re-check runs, and a part of maxInFlight is kept
//   for those re-checks), and a revocation still takes effect.
// - Finding 16: sessions left behind (no DELETE) at maxSessions no longer
//   lock every new client out: the least recently used idle one is closed
//   for the newcomer (and answers 404 after), and a caller over its share
//   (maxSessionsPerCaller) closes its own, never another caller's; with
//   replicas, the closed session ends on every one (as a DELETE would).
// (Finding 12, code-mode slots per caller, is in concurrency.test.mjs.)
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { randomBytes } from 'node:crypto';

import { catalog, closeAll, eventually, freePort, httpRequest, modernMeta, startHttp, writeConfig, LEGACY, MODERN } from './helpers.mjs';
import { startRedis } from './redis.mjs';

const started = [];
const fixtures = [];
const redises = [];
after(async () => {
	await closeAll();
	for (const f of fixtures) await new Promise((r) => f.close(r));
	for (const r of redises) await r.stop();
	// Under `make test SAN=...`, a sanitizer report fails the file.
	for (const g of started) assert.doesNotMatch(g.stderr(), /Sanitizer|runtime error/, g.stderr().slice(-3000));
});

const servers = { github: catalog('github') };

// An RFC 7662 introspection endpoint that answers after delayMs: active for
// the tokens in `active` (subject: their value), inactive for any other.
// asked counts the requests per token.
async function slowIntrospection(resource, delayMs) {
	const active = new Map();
	const asked = new Map();
	const server = http.createServer((req, res) => {
		let body = '';
		req.on('data', (c) => (body += c));
		req.on('end', () => {
			const token = new URLSearchParams(body).get('token') ?? '';
			asked.set(token, (asked.get(token) ?? 0) + 1);
			setTimeout(() => {
				const sub = active.get(token);
				const answer = sub
					? { active: true, sub, aud: resource, exp: Math.floor(Date.now() / 1000) + 3600, scope: 'mcp' }
					: { active: false };
				res.writeHead(200, { 'content-type': 'application/json' });
				res.end(JSON.stringify(answer));
			}, delayMs);
		});
	});
	await new Promise((r) => server.listen(0, '127.0.0.1', r));
	fixtures.push(server);
	return { active, asked, url: `http://127.0.0.1:${server.address().port}` };
}

// A 2026-07-28 tools/list with token: its HTTP status.
async function list(gw, token) {
	const r = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST',
		headers: { authorization: `Bearer ${token}`, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' } },
	{ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: modernMeta() } });
	return r.status;
}

describe('introspection: known tokens keep their capacity (finding 13)', () => {
	test('during a flood of random tokens against a slow endpoint, a known token whose answer aged out is served >= 90%', async () => {
		const port = await freePort();
		const resource = `http://127.0.0.1:${port}/mcp`;
		const as = await slowIntrospection(resource, 300);
		const known = `known-${randomBytes(16).toString('hex')}`;
		as.active.set(known, 'alice');
		const gw = await startHttp({
			listen: `127.0.0.1:${port}`,
			servers,
			sluice: { http: { auth: { resource, authorizationServers: [as.url],
				introspection: { endpoint: `${as.url}/introspect`, clientId: 'sluice', clientSecret: 'secret',
					cacheSeconds: 1, maxInFlight: 4 } } } },
		});
		started.push(gw);
		assert.equal(await list(gw, known), 200);

		// 16 peers send random tokens back to back for 4 s: every request
		// that can start an introspection does, so unknown tokens hold
		// the requests in flight all along.
		const until = Date.now() + 4000;
		const flood = { sent: 0, refused: 0 };
		const peer = async () => {
			for (let i = 0; i < 2000 && Date.now() < until; i++) {
				const s = await list(gw, `random-${randomBytes(12).toString('hex')}`);
				flood.sent++;
				if (s === 503) flood.refused++;
				else assert.equal(s, 401);
			}
		};
		// Meanwhile the known token, whose answer ages out every second.
		const statuses = [];
		const caller = async () => {
			for (let i = 0; i < 2000 && Date.now() < until; i++) statuses.push(await list(gw, known));
		};
		await Promise.all([...Array.from({ length: 16 }, peer), caller()]);
		const served = statuses.filter((s) => s === 200).length;
		assert.ok(flood.refused > 0, `the flood filled maxInFlight (${JSON.stringify(flood)})`);
		assert.ok(statuses.length >= 20, `only ${statuses.length} requests of the known token`);
		assert.ok(served / statuses.length >= 0.9,
			`the known token was served ${served} of ${statuses.length} times: ${JSON.stringify(statuses.filter((s) => s !== 200).slice(0, 10))}`);
		// Its answer was asked again during the flood, not served stale
		// all along.
		assert.ok(as.asked.get(known) >= 2, `the known token was introspected ${as.asked.get(known)} times`);

		// Revoked: refused once the re-check answers (its answer aged out
		// within cacheSeconds, the re-check takes delayMs).
		as.active.delete(known);
		await eventually(async () => (await list(gw, known)) === 401, 5000, 100, 'the revoked token refused');
		await gw.close();
	});
});

describe('sessions: abandoned ones do not lock new clients out (finding 16)', () => {
	const TOKENS = { alice: 'alice-token-61c0', bob: 'bob-token-d94e' };
	const sluice = {
		http: { maxSessions: 4, auth: { tokens: Object.entries(TOKENS).map(([subject, token]) => ({ token, subject })) } },
	};
	const post = (gw, who, body, headers = {}) =>
		httpRequest({ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST',
			headers: { authorization: `Bearer ${TOKENS[who]}`, ...headers } }, body);
	// A session-era session of who, left open (never DELETEd): its id.
	const open = async (gw, who) => {
		const r = await post(gw, who, { jsonrpc: '2.0', id: 0, method: 'initialize', params: {
			protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'fair-e2e', version: '1' } } });
		assert.equal(r.status, 200, r.text);
		const sid = r.headers['mcp-session-id'];
		assert.equal((await post(gw, who, { jsonrpc: '2.0', method: 'notifications/initialized' },
			{ 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY })).status, 202);
		return sid;
	};
	const ping = async (gw, who, sid) => (await post(gw, who, { jsonrpc: '2.0', id: 1, method: 'ping' },
		{ 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY })).status;
	const call = (gw, who, sid, ms) => post(gw, who, { jsonrpc: '2.0', id: 2, method: 'tools/call',
		params: { name: 'github__slow', arguments: { ms } } }, { 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY });

	test('at maxSessions, a new client of another caller and of the same one initializes; the idle session closed for it answers 404', async () => {
		const gw = await startHttp({ servers, sluice });
		started.push(gw);
		// Alice fills maxSessions and leaves them all behind.
		const a = [];
		for (let i = 0; i < 4; i++) a.push(await open(gw, 'alice'));
		await ping(gw, 'alice', a[0]); // a[0] is now the most recently used
		// Bob gets in: the least recently used idle session (a[1]) is closed.
		const b = await open(gw, 'bob');
		assert.equal(await ping(gw, 'alice', a[1]), 404);
		for (const sid of [a[0], a[2], a[3]]) assert.equal(await ping(gw, 'alice', sid), 200);
		assert.match(gw.stderr(), new RegExp(`session ${a[1].slice(0, 8)}… of alice .*closed: idle and least recently used`));
		// Alice again: over her share (2 of 4), she closes her own oldest
		// idle session (a[2]), never Bob's, though his is older.
		assert.equal(await ping(gw, 'alice', a[0]), 200);
		assert.equal(await ping(gw, 'alice', a[3]), 200);
		const a4 = await open(gw, 'alice');
		assert.equal(await ping(gw, 'alice', a[2]), 404);
		assert.equal(await ping(gw, 'bob', b), 200);
		assert.equal(await ping(gw, 'alice', a4), 200);
		await gw.close();
	});

	test('with replicas sharing sessions, the closed one ends everywhere: another replica does not adopt it (404)', async () => {
		const redis = await startRedis();
		redises.push(redis);
		const configPath = writeConfig(servers, {
			http: { maxSessions: 1, auth: sluice.http.auth },
			shared: { secret: '${E2E_SHARED_SECRET}', redis: { url: redis.url, keyPrefix: 'e2e-fair:' } },
		});
		const env = { E2E_SHARED_SECRET: 'e2e-fair-secret-0123456789abcdef-xyz' };
		const a = await startHttp({ configPath, env });
		const b = await startHttp({ configPath, env });
		started.push(a, b);
		const sid = await open(a, 'alice');
		// Replica B can take Alice's session over (its record is in Redis).
		assert.equal(await ping(b, 'alice', sid), 200);
		// B holds it now; Bob's session on B closes it there, as a DELETE.
		await open(b, 'bob');
		assert.match(b.stderr(), /closed: idle and least recently used/);
		assert.equal(await ping(b, 'alice', sid), 404);
		assert.equal(await ping(a, 'alice', sid), 404);
		await a.close();
		await b.close();
	});

	test('a busy session is never closed: with every one of a caller\'s sessions busy it gets 503 naming its share', async () => {
		const gw = await startHttp({ servers, sluice: { ...sluice, http: { ...sluice.http, maxSessions: 2 } } });
		started.push(gw);
		const a = [await open(gw, 'alice'), await open(gw, 'alice')];
		// Both of Alice's sessions have a call in flight.
		const slow = a.map((sid) => call(gw, 'alice', sid, 1500));
		await eventually(async () => (await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/status' })).json?.requestsInFlight >= 2,
			5000, 25, 'both calls in flight');
		const refused = await post(gw, 'alice', { jsonrpc: '2.0', id: 0, method: 'initialize', params: {
			protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'fair-e2e', version: '1' } } });
		assert.equal(refused.status, 503, refused.text);
		assert.match(refused.json.error.message, /too many sessions \(sluice\.http\.maxSessions\), and every one this caller holds .*sluice\.http\.maxSessionsPerCaller\) is busy/);
		const bob = await post(gw, 'bob', { jsonrpc: '2.0', id: 0, method: 'initialize', params: {
			protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'fair-e2e', version: '1' } } });
		assert.equal(bob.status, 503, bob.text);
		assert.match(bob.json.error.message, /none of them is idle/);
		for (const r of await Promise.all(slow)) assert.equal(r.status, 200, r.text);
		// Done, they are idle: Bob gets in, one of hers closed for him.
		await open(gw, 'bob');
		assert.deepEqual((await Promise.all(a.map((sid) => ping(gw, 'alice', sid)))).sort(), [200, 404]);
		await gw.close();
	});
});
