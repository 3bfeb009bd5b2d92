// Fair shares between the callers of one gateway (issue 32): what one
// caller, or unauthenticated peers, can take from the others.
// - Finding 13: random opaque tokens fill introspection's maxInFlight; a
//   known token whose answer aged out is still served (its last active
//   answer serves while one re-check runs, and a part of maxInFlight is kept
//   for those re-checks), and a revocation still takes effect.
// (Finding 12, code-mode slots per caller, is in concurrency.test.mjs.)
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { randomBytes } from 'node:crypto';

import { catalog, closeAll, eventually, freePort, httpRequest, modernMeta, startHttp, MODERN } from './helpers.mjs';

const started = [];
const fixtures = [];
after(async () => {
	await closeAll();
	for (const f of fixtures) await new Promise((r) => f.close(r));
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
		assert.ok(as.asked.get(known) >= 3, `the known token was introspected ${as.asked.get(known)} times`);

		// Revoked: refused once the re-check answers (its answer aged out
		// within cacheSeconds, the re-check takes delayMs).
		as.active.delete(known);
		await eventually(async () => (await list(gw, known)) === 401, 5000, 100, 'the revoked token refused');
		await gw.close();
	});
});
