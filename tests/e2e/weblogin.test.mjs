// Logging in through the gateway (src/oauth/weblogin.c, docs/internals/AUTH.md
// "Logging in through the gateway"): the two pages on the HTTP face,
// /oauth/login/<id> and /oauth/callback. What a browser gets without a
// pending login: the routes answer without an MCP credential but after the
// Host check, with headers that keep the pages out of caches, frames and
// Referer; an unknown id is 404, a callback with an unknown state 400, and
// nothing of the query is reflected. And a whole login: a caller of an
// oauth.perUser server is told where to log in, a person does (oidc-provider,
// tests/servers/oidc), and that caller's next call reaches the server as
// that person, another caller still being asked for its own. Bound to the
// browser (issue 32, finding 1): the authorization URL handed to another
// browser completes nothing (its callback saves nothing, the caller still
// needs a login), and the browser that opened the gateway's page does.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { catalog, closeAll, startHttp, httpClient, httpRequest, freePort, textOf, writeConfig } from './helpers.mjs';
import { cliLoggedIn, gatewayBrowser, startAS, startProtected, stopFixtures, webLogin } from './oidc.mjs';

const servers = { github: catalog('github') };
const started = [];

after(async () => {
	await closeAll();
	await stopFixtures();
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

describe('a whole web login for a perUser server', () => {
	const ALICE = 'static-token-of-alice-0123456789', BOB = 'static-token-of-bob-0123456789';
	const CAROL = 'static-token-of-carol-0123456789';
	let gw, cfg, port;
	before(async () => {
		const as = await startAS({});
		const prot = await startProtected({ ISSUER: as.issuer });
		port = await freePort();
		const config = writeConfig({ up: { url: prot.url, oauth: { perUser: true } } }, {
			exposure: 'passthrough',
			startupTimeoutMs: 5000,
			http: { publicUrl: `http://127.0.0.1:${port}`, auth: { tokens: [{ token: ALICE, subject: 'alice' }, { token: BOB, subject: 'bob' }, { token: CAROL, subject: 'carol' }] } },
		});
		const state = path.join(path.dirname(config), 'xdg');
		cfg = { config, dir: path.join(state, 'sluice', 'oauth'), env: { XDG_STATE_HOME: state } };
		await cliLoggedIn(cfg, 'up'); // the server's catalog comes through the gateway's own login
		gw = await startHttp({ configPath: config, listen: `127.0.0.1:${port}`, env: cfg.env });
		started.push(gw);
	});

	const whoami = async (c) => {
		const r = await c.client.callTool({ name: 'up__whoami', arguments: {} });
		return { ok: !r.isError, text: textOf(r) };
	};

	const linkOf = (text) => new RegExp(`open (http://127\\.0\\.0\\.1:${port}/oauth/login/[A-Za-z0-9_-]{22}) `).exec(text)?.[1];
	const perUserRecords = () => fs.readdirSync(cfg.dir).filter((f) => f.endsWith('.json'))
		.map((f) => JSON.parse(fs.readFileSync(path.join(cfg.dir, f), 'utf8'))).filter((x) => x.user !== '');

	test("the authorization URL completed in another browser saves nothing; the caller's own browser logs in", async () => {
		const carol = await httpClient(`http://127.0.0.1:${port}/mcp`, { headers: { authorization: `Bearer ${CAROL}` } });
		const first = await whoami(carol);
		const link = linkOf(first.text);
		assert.ok(!first.ok && link, first.text);
		// Carol's browser opens the gateway's page (its binder cookie set);
		// the "Continue" link goes to a colleague signed in at the
		// authorization server (consent given), whose browser comes back.
		const { page, callback, back } = await webLogin(link, { user: 'colleague-at-the-as', callbackBrowser: gatewayBrowser() });
		assert.equal(callback.status, 403, callback.html);
		for (const [k, v] of new URL(back).searchParams)
			assert.ok(!callback.html.includes(v), `the page shows nothing of the query (${k})`);
		assert.match(page.headers.get('set-cookie') ?? '', /^sluice_login_[A-Za-z0-9_-]{22}=[A-Za-z0-9_-]{22}; Path=\/oauth\/callback; Max-Age=600; HttpOnly; SameSite=Lax$/);
		assert.match(callback.html, /This login was for <strong>carol \(token/);
		assert.match(callback.html, /this browser did not open its page on the gateway \(or did not keep its cookie\)\. Nothing was saved/);
		assert.equal(callback.headers.get('referrer-policy'), 'no-referrer');
		// Nothing saved: carol's next call still needs a login (a new link:
		// the refused one ended), and reaches nobody.
		assert.deepEqual(perUserRecords(), []);
		const again = await whoami(carol);
		const link2 = linkOf(again.text);
		assert.ok(!again.ok && link2 && link2 !== link, again.text);
		assert.doesNotMatch(again.text, /colleague-at-the-as/);
		assert.equal((await fetch(link)).status, 404);
		// The browser that opened the page completes it.
		const own = await webLogin(link2, { user: 'carol-at-the-as' });
		assert.equal(own.callback.status, 200, own.callback.html);
		assert.match(own.callback.headers.get('set-cookie'), /^sluice_login_[A-Za-z0-9_-]{22}=; Path=\/oauth\/callback; Max-Age=0;/);
		const r = await whoami(carol);
		assert.ok(r.ok, r.text);
		assert.equal(JSON.parse(r.text).sub, 'carol-at-the-as');
	});

	test("the caller gets a link, the person logs in there, the caller's next call is theirs", async () => {
		const alice = await httpClient(`http://127.0.0.1:${port}/mcp`, { headers: { authorization: `Bearer ${ALICE}` } });
		const first = await whoami(alice);
		assert.ok(!first.ok, first.text);
		const link = new RegExp(`open (http://127\\.0\\.0\\.1:${port}/oauth/login/[A-Za-z0-9_-]{22}) `).exec(first.text)?.[1];
		assert.ok(link, first.text);
		// Asked again while pending: the same link.
		assert.ok((await whoami(alice)).text.includes(link));

		const { page, callback } = await webLogin(link, { user: 'alice-at-the-as' });
		assert.match(page.html, /This login is for <strong>alice \(token/);
		assert.match(page.html, /If you are not <strong>alice \(token/);
		assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
		assert.equal(callback.status, 200, callback.html);
		assert.match(callback.html, /Logged in to <strong>up<\/strong> as <strong>alice \(token/);

		// At once: the gateway restarts alice's link when the record is
		// saved (not at its next look at the store, 2 s later).
		const r = await whoami(alice);
		assert.ok(r.ok, r.text);
		assert.equal(JSON.parse(r.text).sub, 'alice-at-the-as');
		// Saved under alice's key, with the gateway's redirect URI; the
		// gateway's own record keeps the CLI's loopback one.
		const recs = fs.readdirSync(cfg.dir).filter((f) => f.endsWith('.json'))
			.map((f) => JSON.parse(fs.readFileSync(path.join(cfg.dir, f), 'utf8')));
		const mine = recs.filter((x) => x.user !== ''); // carol's (the test before) and alice's
		assert.equal(mine.length, 2);
		for (const x of mine) assert.equal(x.reg.redirect_uri, `http://127.0.0.1:${port}/oauth/callback`);
		assert.match(recs.find((x) => x.user === '').reg.redirect_uri, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
		// Used: the link is gone.
		assert.equal((await fetch(link)).status, 404);
		// Bob is still asked for his own login, with a link of his own.
		const bob = await httpClient(`http://127.0.0.1:${port}/mcp`, { headers: { authorization: `Bearer ${BOB}` } });
		const b = await whoami(bob);
		assert.ok(!b.ok && /oauth\/login\//.test(b.text) && !b.text.includes(link), b.text);
	});
});
