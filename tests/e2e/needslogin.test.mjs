// OAuth at run time, without an authorization server: a tiny Streamable
// HTTP server in this process that wants a bearer token it decides on, and
// a tiny token endpoint. "Needs login" (no restart loop, the message a
// person and a model see, a login picked up without restarting sluice)
// and the single-flight refresh (50 concurrent calls, one refresh).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdirSync, writeFileSync, renameSync } from 'node:fs';
import path from 'node:path';

import { connect, closeAll, textOf, writeConfig, runSluice, sleep, toolsWhen } from './helpers.mjs';

after(closeAll);

// A Streamable HTTP server with one tool, echo, that accepts only
// `Bearer <accepted>`; everything else gets 401 with a Bearer challenge.
// Its token endpoint (/token) trades refresh token `refresh` for `next`,
// slowly, so that callers pile up meanwhile.
async function tinyServer() {
	const st = { accepted: null, requests: 0, refused: 0, refreshes: 0, next: null, seen: new Set() };
	const srv = http.createServer((req, res) => {
		let body = '';
		req.on('data', (b) => (body += b));
		req.on('end', () => {
			const url = new URL(req.url, 'http://x');
			if (url.pathname === '/token') {
				const form = new URLSearchParams(body);
				st.refreshes++;
				setTimeout(() => {
					res.setHeader('Content-Type', 'application/json');
					if (form.get('grant_type') !== 'refresh_token' || form.get('refresh_token') !== 'refresh') {
						res.statusCode = 400;
						res.end(JSON.stringify({ error: 'invalid_grant' }));
						return;
					}
					st.accepted = st.next;
					res.end(JSON.stringify({ access_token: st.next, token_type: 'Bearer', expires_in: 3600 }));
				}, 300);
				return;
			}
			st.requests++;
			const auth = req.headers.authorization ?? '';
			if (!st.accepted || auth !== `Bearer ${st.accepted}`) {
				st.refused++;
				res.statusCode = 401;
				res.setHeader('WWW-Authenticate', `Bearer error="invalid_token", resource_metadata="${st.url}/.well-known/oauth-protected-resource"`);
				res.end();
				return;
			}
			st.seen.add(auth);
			if (req.method === 'GET') {
				res.statusCode = 405;
				res.end();
				return;
			}
			if (req.method === 'DELETE') {
				res.end();
				return;
			}
			let m;
			try {
				m = JSON.parse(body);
			} catch {
				res.statusCode = 400;
				res.end();
				return;
			}
			if (m.id === undefined) {
				res.statusCode = 202;
				res.end();
				return;
			}
			const send = (o) => {
				res.setHeader('Content-Type', 'application/json');
				res.setHeader('Mcp-Session-Id', 'sess-1');
				res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, ...o }));
			};
			if (m.method === 'initialize')
				send({ result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'tiny', version: '1' } } });
			else if (m.method === 'tools/list')
				send({ result: { tools: [{ name: 'echo', description: 'Echoes', inputSchema: { type: 'object' } }] } });
			else if (m.method === 'tools/call') send({ result: { content: [{ type: 'text', text: JSON.stringify(m.params.arguments ?? {}) }] } });
			else send({ error: { code: -32601, message: 'Method not found' } });
		});
	});
	await new Promise((r) => srv.listen(0, '127.0.0.1', r));
	st.url = `http://127.0.0.1:${srv.address().port}`;
	st.close = () => new Promise((r) => srv.close(r));
	after(() => srv.closeAllConnections?.());
	after(st.close);
	return st;
}

// The record's file, as `sluice check` names it.
function recordPath(stdout) {
	const m = /its login is kept in (\S+)/.exec(stdout);
	assert.ok(m, `check names the record's file:\n${stdout}`);
	return m[1];
}

// What `sluice auth login` would save (src/oauth/store.c's format, version 1),
// written whole as the store writes it.
function writeRecord(file, url, tokens, as = {}) {
	mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
	const rec = { version: 1, url, user: '', server: 's', saved_at: Math.floor(Date.now() / 1000), as, reg: { client_id: 'sluice-test', how: 'dynamic' }, tokens };
	writeFileSync(`${file}.tmp`, JSON.stringify(rec), { mode: 0o600 });
	renameSync(`${file}.tmp`, file);
}

test('a server that wants a login: check says which command, serve waits without a restart loop and connects once a login is saved', async () => {
	const srv = await tinyServer();
	const config = writeConfig({ s: { url: `${srv.url}/mcp` } }, { exposure: 'passthrough', startupTimeoutMs: 3000 });

	const ck = await runSluice(['check', '--config', config]);
	assert.equal(ck.code, 1, ck.stdout + ck.stderr);
	assert.match(ck.stdout, /needs login/);
	assert.match(ck.stdout, /needs login: run `sluice auth login s`/);
	const file = recordPath(ck.stdout);

	const before = srv.requests;
	const gw = await connect({ configPath: config });
	const tools = await gw.client.listTools();
	assert.equal(tools.tools.filter((t) => t.name.startsWith('s__')).length, 0, 'its tools are absent');
	const r = await gw.client.callTool({ name: 's__echo', arguments: {} }).catch((e) => e);
	assert.match(String(r.message ?? textOf(r)), /server 's' needs login: run `sluice auth login s`/);

	// No restart loop: one warning, and the server is not hammered.
	await sleep(10000);
	const warnings = gw.stderr().split('\n').filter((l) => /needs login/.test(l));
	assert.equal(warnings.length, 1, gw.stderr());
	assert.ok(srv.requests - before <= 4, `${srv.requests - before} requests in 10 s`);

	// A login saves a token the server accepts: picked up without a restart.
	srv.accepted = 'tok-1';
	writeRecord(file, `${srv.url}/mcp`, { access_token: 'tok-1' });
	await toolsWhen(gw.client, (t) => t.some((x) => x.name === 's__echo'), 8000);
	const ok = await gw.client.callTool({ name: 's__echo', arguments: { a: 1 } });
	assert.equal(textOf(ok), '{"a":1}');
	await gw.close();
	assert.doesNotMatch(gw.stderr(), /Sanitizer|runtime error/);
});

test('50 concurrent calls refused for an expired token cause exactly one refresh, and all succeed', async () => {
	const srv = await tinyServer();
	const url = `${srv.url}/mcp`;
	const config = writeConfig({ s: { url } }, { exposure: 'passthrough' });
	const ck = await runSluice(['check', '--config', config]);
	const file = recordPath(ck.stdout);
	srv.accepted = 'tok-1';
	writeRecord(file, url, { access_token: 'tok-1', refresh_token: 'refresh' }, { token_endpoint: `${srv.url}/token` });

	const gw = await connect({ configPath: config });
	await toolsWhen(gw.client, (t) => t.some((x) => x.name === 's__echo'), 8000);
	assert.equal(srv.refreshes, 0);

	// The server stops taking tok-1 (revoked, expired early): every call
	// is refused once, and waits for the one refresh.
	srv.accepted = 'tok-2';
	srv.next = 'tok-2';
	const calls = Array.from({ length: 50 }, (_, i) => gw.client.callTool({ name: 's__echo', arguments: { i } }));
	const res = await Promise.all(calls);
	res.forEach((r, i) => assert.equal(textOf(r), JSON.stringify({ i }), `call ${i}`));
	assert.equal(srv.refreshes, 1, 'one refresh for 50 calls');

	// The refreshed token was saved: a second gateway uses it at once.
	const again = await runSluice(['check', '--config', config]);
	assert.equal(again.code, 0, again.stdout + again.stderr);
	assert.equal(srv.refreshes, 1, 'the saved token needed no refresh');
	await gw.close();
	assert.doesNotMatch(gw.stderr(), /Sanitizer|runtime error/);
});
