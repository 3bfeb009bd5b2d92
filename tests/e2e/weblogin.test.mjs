// Logging in through the gateway (src/oauth/weblogin.c, docs/internals/AUTH.md
// "Logging in through the gateway"): the two pages on the HTTP face,
// /oauth/login/<id> and /oauth/callback. What a browser gets without a
// pending login: the routes answer without an MCP credential but after the
// Host check, with headers that keep the pages out of caches, frames and
// Referer; an unknown id is 404, a callback with an unknown state 400, and
// nothing of the query is reflected. (A whole login, page to saved tokens,
// needs a per-user upstream to make the link: tests/e2e/oidc.mjs webLogin.)
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { catalog, closeAll, startHttp, httpRequest, freePort } from './helpers.mjs';

const servers = { github: catalog('github') };
const started = [];

after(async () => {
	await closeAll();
	for (const g of started) assert.doesNotMatch(g.stderr(), /Sanitizer|runtime error/, g.stderr().slice(-3000));
});

function get(gw, path, headers = {}, method = 'GET') {
	return httpRequest({ host: '127.0.0.1', port: gw.port, path, method, headers: { accept: 'text/html', ...headers } });
}

function assertPageHeaders(r) {
	assert.match(r.headers['content-type'], /^text\/html; charset=utf-8/);
	assert.equal(r.headers['cache-control'], 'no-store');
	assert.equal(r.headers['content-security-policy'], "default-src 'none'");
	assert.equal(r.headers['x-frame-options'], 'DENY');
	assert.equal(r.headers['referrer-policy'], 'no-referrer');
}

describe('web login pages', () => {
	let gw;
	before(async () => {
		const port = await freePort();
		gw = await startHttp({
			servers,
			listen: `127.0.0.1:${port}`,
			sluice: { http: { bearerToken: 'secret-token', publicUrl: `http://127.0.0.1:${port}/` } },
		});
		started.push(gw);
	});

	test('an unknown login id is 404, as a page with the protective headers, without an MCP credential', async () => {
		const r = await get(gw, '/oauth/login/AAAAAAAAAAAAAAAAAAAAAA');
		assert.equal(r.status, 404, r.text);
		assertPageHeaders(r);
		assert.match(r.text, /<!doctype html>/);
		assert.match(r.text, /unknown or has expired/);
		// The MCP endpoint still wants the credential.
		const mcp = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST' },
			{ jsonrpc: '2.0', id: 1, method: 'ping' });
		assert.equal(mcp.status, 401);
	});

	test('a callback whose state names no pending login is 400, and reflects nothing of the query', async () => {
		const hostile = '<script>alert(document.cookie)</script>';
		const q = new URLSearchParams({ state: 'x'.repeat(32), error: 'access_denied"><img src=x>', error_description: hostile, code: 'c<b>' });
		const r = await get(gw, `/oauth/callback?${q}`);
		assert.equal(r.status, 400, r.text);
		assertPageHeaders(r);
		assert.match(r.text, /unknown, already used or expired/);
		for (const bit of ['<script', 'alert(', '<img', 'access_denied', 'c<b>'])
			assert.ok(!r.text.includes(bit), `"${bit}" is not in the page`);
		const none = await get(gw, '/oauth/callback');
		assert.equal(none.status, 400);
		assert.match(none.text, /has no state/);
	});

	test('only GET; the Host check comes first', async () => {
		const post = await get(gw, '/oauth/callback?state=x', {}, 'POST');
		assert.equal(post.status, 405);
		assert.equal(post.headers.allow, 'GET');
		const host = await get(gw, '/oauth/login/AAAAAAAAAAAAAAAAAAAAAA', { host: 'evil.example' });
		assert.equal(host.status, 403);
		assert.match(host.text, /Host not allowed/);
	});

	test('many requests for unknown logins leave the gateway answering', async () => {
		const rs = await Promise.all(Array.from({ length: 40 }, (_, i) => get(gw, `/oauth/login/id${i}`)));
		assert.deepEqual([...new Set(rs.map((r) => r.status))], [404]);
		assert.equal((await get(gw, '/oauth/callback?state=y')).status, 400);
	});
});

test('without a publicUrl there are no web login pages: /oauth/... is an MCP path like any other', async () => {
	const gw = await startHttp({ servers, sluice: { http: { bearerToken: 'secret-token' } } });
	started.push(gw);
	const r = await get(gw, '/oauth/login/AAAAAAAAAAAAAAAAAAAAAA');
	assert.equal(r.status, 401);
	assert.doesNotMatch(r.headers['content-type'] ?? '', /text\/html/);
});
