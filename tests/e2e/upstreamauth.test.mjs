// sluice as an OAuth 2.1 client of an upstream MCP server (docs/internals/
// AUTH.md, "Toward upstreams"), against a real authorization server
// (oidc-provider, tests/servers/oidc) and an official-SDK server that checks
// its JWTs (tests/servers/protected): login with a scripted browser and with
// a pasted redirect, status, calls through `sluice serve`, one refresh for 50
// callers, a revoked grant ("needs login"), step-up, a client registered
// beforehand, client credentials, private_key_jwt; and the failures: a token
// endpoint that answers 500, Protected Resource Metadata naming another
// resource, the authorization server gone, a token holding CR LF, a crowded
// login listener; a server that lists its tools only to a wider token, picked
// up without a restart once logged in; a 2026-07-28-only server.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { closeAll, connect, eventually, runSluice, sleep, textOf, toolsWhen, withTimeout, writeConfig } from './helpers.mjs';
import { cliLogin, startAS, startProtected, stopFixtures } from './oidc.mjs';

const NAME = 'up';
let as, prot;

before(async () => {
	as = await startAS({ SCOPES: 'mcp:tools mcp:admin' });
	prot = await startProtected({ ISSUER: as.issuer });
});

after(async () => {
	await closeAll();
	await stopFixtures();
});

// A config with one remote server, `up`, and a state directory of its own
// (the token store is $XDG_STATE_HOME/sluice/oauth).
function setup(entry = {}, sluice = {}, url = prot.url) {
	const config = writeConfig({ [NAME]: { url, ...entry } }, { exposure: 'passthrough', startupTimeoutMs: 5000, ...sluice });
	const state = path.join(path.dirname(config), 'xdg');
	return { config, state, dir: path.join(state, 'sluice', 'oauth'), env: { XDG_STATE_HOME: state } };
}

function records(cfg) {
	if (!fs.existsSync(cfg.dir)) return [];
	return fs.readdirSync(cfg.dir).filter((f) => f.endsWith('.json')).map((f) => path.join(cfg.dir, f));
}

function record(cfg) {
	const files = records(cfg);
	assert.equal(files.length, 1, `one record in ${cfg.dir}`);
	return { file: files[0], rec: JSON.parse(fs.readFileSync(files[0], 'utf8')) };
}

// `sluice auth login up` (oidc.mjs, cliLogin).
const login = (cfg, opts) => cliLogin(cfg, NAME, opts);

async function loggedIn(cfg, opts) {
	const r = await login(cfg, opts);
	assert.equal(r.code, 0, r.stderr());
	return r;
}

async function status(cfg) {
	const r = await runSluice(['auth', 'status', NAME, '--json', '--config', cfg.config], 10000, cfg.env);
	assert.equal(r.code, 0, r.stderr);
	const all = JSON.parse(r.stdout);
	return Array.isArray(all) ? all[0] : all;
}

// `sluice serve` over stdio, once the upstream's tools are listed.
async function serve(cfg) {
	const gw = await connect({ configPath: cfg.config, env: cfg.env });
	await toolsWhen(gw.client, (t) => t.some((x) => x.name === `${NAME}__whoami`), 5000);
	return gw;
}

// A tool through the gateway: { ok, text } (a refused call is an error
// result or a JSON-RPC error, both with the gateway's words).
async function call(gw, tool, args = {}) {
	try {
		const r = await gw.client.callTool({ name: `${NAME}__${tool}`, arguments: args });
		return { ok: !r.isError, text: textOf(r) };
	} catch (e) {
		return { ok: false, text: String(e.message) };
	}
}

async function whoami(gw) {
	const r = await call(gw, 'whoami');
	assert.ok(r.ok, r.text);
	return JSON.parse(r.text);
}

const tokenRequests = async () => (await as.counts())['/token'] || 0;

// Waits until the stored access token has expired (by its expires_at).
async function untilExpired(cfg) {
	const { rec } = record(cfg);
	const ms = (rec.tokens.expires_at + 1) * 1000 - Date.now();
	if (ms > 0) await sleep(ms);
}

describe('sluice as an OAuth client of an upstream', () => {
	test('(a) login with a browser, status names the subject and scopes, a call through serve carries the token', async () => {
		const cfg = setup();
		const r = await loggedIn(cfg);
		const u = new URL(r.authUrl);
		assert.equal(u.origin, as.issuer);
		assert.equal(u.searchParams.get('code_challenge_method'), 'S256');
		assert.equal(u.searchParams.get('resource'), prot.url, 'RFC 8707 resource');
		const asked = u.searchParams.get('scope').split(' ');
		assert.ok(asked.includes('mcp:tools') && asked.includes('offline_access'), asked.join(' '));
		// oidc-provider (OpenID Connect Core 11) drops offline_access unless consent is prompted.
		assert.equal(u.searchParams.get('prompt'), 'consent');
		assert.match(u.searchParams.get('redirect_uri'), /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
		// The listener's page is whole: its Content-Length is its length.
		assert.equal(r.page.status, 200);
		assert.equal(Number(r.page.length), Buffer.byteLength(r.page.text), 'Content-Length');
		assert.match(r.page.text, /sluice received the login/);
		assert.match(r.stderr(), /logged in to up \(scopes: [^)]*mcp:tools/);

		const { rec } = record(cfg);
		assert.ok(rec.tokens.refresh_token, 'a refresh token was issued');
		assert.equal(rec.reg.how, 'dynamic');
		const st = await status(cfg);
		assert.equal(st.loggedIn, true);
		assert.equal(st.subject, 'alice', JSON.stringify(st));
		assert.match(st.scope, /\bmcp:tools\b/);
		assert.equal(st.refreshToken, true);
		const text = await runSluice(['auth', 'status', NAME, '--config', cfg.config], 10000, cfg.env);
		assert.ok(!text.stdout.includes(rec.tokens.access_token) && !text.stdout.includes(rec.tokens.refresh_token), 'no token shown');

		const gw = await serve(cfg);
		const who = await whoami(gw);
		assert.equal(who.sub, 'alice');
		assert.equal(who.client_id, rec.reg.client_id);
		await gw.close();
	});

	test('(o) a 2026-07-28-only server (initialize refused with 400, discovery open): login, then calls', async () => {
		const modern = await startProtected({ ISSUER: as.issuer, MODERN: '1' });
		const cfg = setup({}, {}, modern.url);
		const r = await loggedIn(cfg);
		assert.equal(new URL(r.authUrl).origin, as.issuer);
		assert.equal(new URL(r.authUrl).searchParams.get('resource'), modern.url, 'RFC 8707 resource');
		assert.match(r.stderr(), /logged in to up \(scopes: [^)]*mcp:tools/);
		const gw = await serve(cfg);
		const who = await whoami(gw);
		assert.equal(who.sub, 'alice');
		assert.equal(who.client_id, record(cfg).rec.reg.client_id);
		await gw.close();
		await modern.stop();
	});

	test('(b) an expired access token and 50 concurrent calls: exactly one refresh, every call succeeds', async () => {
		const cfg = setup({}, { oauth: { refreshBeforeSeconds: 0 } });
		await as.knob('/_ttl?s=2');
		try {
			await loggedIn(cfg);
		} finally {
			await as.knob('/_ttl?s=600');
		}
		const gw = await serve(cfg);
		assert.equal((await whoami(gw)).sub, 'alice');
		await untilExpired(cfg);
		const before = await tokenRequests();
		const res = await Promise.all(Array.from({ length: 50 }, () => call(gw, 'whoami')));
		res.forEach((r, i) => assert.ok(r.ok && JSON.parse(r.text).sub === 'alice', `call ${i}: ${r.text}`));
		assert.equal((await tokenRequests()) - before, 1, 'one refresh for 50 calls');
		const { rec } = record(cfg);
		assert.ok(rec.tokens.expires_at > Date.now() / 1000 + 60, 'the new token was saved');
		await gw.close();
	});

	test('(c) a revoked refresh token: calls say "needs login" with the command, and so does check', async () => {
		const cfg = setup({}, { oauth: { refreshBeforeSeconds: 0 } });
		await as.knob('/_ttl?s=1');
		try {
			await loggedIn(cfg);
		} finally {
			await as.knob('/_ttl?s=600');
		}
		const { rec } = record(cfg);
		const rv = await fetch(`${as.issuer}/token/revocation`, { method: 'POST',
			headers: { 'content-type': 'application/x-www-form-urlencoded' },
			body: new URLSearchParams({ token: rec.tokens.refresh_token, client_id: rec.reg.client_id }).toString() });
		assert.equal(rv.status, 200, await rv.text());
		// Not serve(): the token lives 1 s, and a slow start (a sanitizer
		// build) may find it expired and the refresh refused before any list.
		const gw = await connect({ configPath: cfg.config, env: cfg.env });
		await untilExpired(cfg);
		const r = await call(gw, 'whoami');
		assert.equal(r.ok, false);
		assert.match(r.text, /needs login: run `sluice auth login up`/);
		const ck = await runSluice(['check', '--config', cfg.config], 15000, cfg.env);
		assert.equal(ck.code, 1, ck.stdout + ck.stderr);
		assert.match(ck.stdout, /needs login: run `sluice auth login up`/);
		await gw.close();
	});

	test('(d) step-up: 403 insufficient_scope names the scope and the command; the next login asks for it', async () => {
		const cfg = setup();
		await loggedIn(cfg);
		let gw = await serve(cfg);
		const r = await call(gw, 'admin_op');
		assert.equal(r.ok, false);
		assert.match(r.text, /needs the scope "mcp:tools mcp:admin": run `sluice auth login up`/);
		await gw.close();
		const st = await status(cfg);
		assert.match(st.needsScope, /\bmcp:admin\b/);

		const again = await loggedIn(cfg);
		assert.ok(new URL(again.authUrl).searchParams.get('scope').split(' ').includes('mcp:admin'), again.authUrl);
		assert.match(record(cfg).rec.tokens.scope, /\bmcp:admin\b/);
		gw = await serve(cfg);
		const ok = await call(gw, 'admin_op');
		assert.ok(ok.ok, ok.text);
		assert.match(JSON.parse(ok.text).scope, /\bmcp:admin\b/);
		await gw.close();
	});

	test('(e) headless: the pasted redirect logs in; a wrong state or iss is refused and nothing is saved', async () => {
		const bad = setup();
		const state = await login(bad, { headless: true, paste: (u) => u.replace(/([?&]state=)[^&]+/, '$1forged') });
		assert.equal(state.code, 1, state.stderr());
		assert.match(state.stderr(), /state/);
		const iss = await login(bad, { headless: true,
			paste: (u) => u.replace(/([?&]iss=)[^&]+/, `$1${encodeURIComponent('http://127.0.0.1:9')}`) });
		assert.match(new URL(iss.back).searchParams.get('iss'), /^http:\/\/127\.0\.0\.1:\d+$/, 'the AS sends iss (RFC 9207)');
		assert.equal(iss.code, 1, iss.stderr());
		assert.match(iss.stderr(), /iss/);
		assert.equal(records(bad).length, 0, 'nothing saved');

		const cfg = setup();
		const r = await loggedIn(cfg, { headless: true, user: 'bob' });
		assert.equal(new URL(r.authUrl).searchParams.get('redirect_uri'), 'http://127.0.0.1/callback');
		const gw = await serve(cfg);
		assert.equal((await whoami(gw)).sub, 'bob');
		await gw.close();
	});

	test('(f) a client registered beforehand (oauth.clientId, clientSecret): no dynamic registration', async () => {
		const cfg = setup({ oauth: { clientId: 'upstream-client', clientSecret: 'upstream-secret' } });
		const regs = (await as.counts())['/reg'] || 0;
		const r = await loggedIn(cfg);
		assert.equal(new URL(r.authUrl).searchParams.get('client_id'), 'upstream-client');
		assert.equal((await as.counts())['/reg'] || 0, regs, 'no registration request');
		const st = await status(cfg);
		assert.equal(st.clientId, 'upstream-client');
		assert.equal(st.registration, 'config');
		const { rec } = record(cfg);
		assert.ok(!JSON.stringify(rec).includes('upstream-secret'), 'the secret stays in the config');
		const gw = await serve(cfg);
		const who = await whoami(gw);
		assert.equal(who.client_id, 'upstream-client');
		assert.equal(who.sub, 'alice');
		await gw.close();
	});

	test('(g) client credentials (cc-client): login checks them, serve gets its own token', async () => {
		const cfg = setup({ oauth: { grant: 'client_credentials', clientId: 'cc-client', clientSecret: 'cc-secret' } });
		const r = await runSluice(['auth', 'login', NAME, '--config', cfg.config], 10000, cfg.env);
		assert.equal(r.code, 0, r.stderr);
		assert.equal(r.stdout, '', 'no URL: no person');
		assert.match(r.stderr, /logged in to up/);
		const gw = await serve(cfg);
		const who = await whoami(gw);
		assert.equal(who.client_id, 'cc-client');
		await gw.close();
	});

	test('(h) the token endpoint answers 500 during login: a clear error, nothing saved', async () => {
		const cfg = setup();
		await as.knob('/_fail?path=/token&n=1');
		const r = await login(cfg);
		assert.equal(r.code, 1, r.stderr());
		assert.match(r.stderr(), /login to up failed: the authorization server failed on the token request \(HTTP 500: server_error\)/);
		assert.equal(records(cfg).length, 0, 'nothing saved');
	});

	test('(i) Protected Resource Metadata naming another resource is refused before the AS is asked', async () => {
		const bad = await startProtected({ ISSUER: as.issuer, BAD_PRM: '1' });
		const cfg = setup({}, {}, bad.url);
		const sum = (c) => Object.entries(c).filter(([k]) => !k.startsWith('/_')).reduce((a, [, n]) => a + n, 0);
		const before = sum(await as.counts());
		const t0 = Date.now();
		const r = await login(cfg);
		assert.equal(r.code, 1, r.stderr());
		assert.equal(r.authUrl, null, 'no URL printed');
		assert.match(r.stderr(), /login to up failed: .*127\.0\.0\.1:9/);
		assert.ok(Date.now() - t0 < 5000);
		assert.equal(sum(await as.counts()), before, 'nothing sent to any authorization server');
		assert.equal(records(cfg).length, 0);
		await bad.stop();
	});

	test('(j) the authorization server gone: calls fail at once saying why, login fails fast', async () => {
		const as2 = await startAS({ ACCESS_TTL: '2' });
		const prot2 = await startProtected({ ISSUER: as2.issuer });
		const cfg = setup({}, { oauth: { refreshBeforeSeconds: 0 } }, prot2.url);
		await loggedIn(cfg);
		const gw = await serve(cfg);
		await as2.stop();
		await untilExpired(cfg);
		const t0 = Date.now();
		const r = await call(gw, 'whoami');
		assert.equal(r.ok, false);
		assert.match(r.text, /cannot refresh its token: the token endpoint cannot be reached/);
		assert.ok(Date.now() - t0 < 3000, `${Date.now() - t0} ms`);
		await gw.close();
		fs.rmSync(cfg.dir, { recursive: true });
		const t1 = Date.now();
		const l = await login(cfg);
		assert.equal(l.code, 1, l.stderr());
		assert.match(l.stderr(), /login to up failed: .*(connect|reach)/i);
		assert.ok(Date.now() - t1 < 5000, `${Date.now() - t1} ms`);
		await prot2.stop();
	});

	test('(k) a token holding CR LF, from the AS or the token store, never reaches a header', async () => {
		const cfg = setup();
		await as.knob('/_evil?n=1');
		const r = await login(cfg);
		assert.equal(r.code, 1, r.stderr());
		assert.match(r.stderr(), /without a usable bearer token/);
		assert.equal(records(cfg).length, 0, 'nothing saved');

		// A record changed on disk: the token store refuses it.
		await loggedIn(cfg);
		const { file, rec } = record(cfg);
		rec.tokens.access_token += '\r\nX-Injected: yes';
		fs.writeFileSync(file, JSON.stringify(rec), { mode: 0o600 });
		const before = (await prot.stats()).injected;
		const ck = await runSluice(['check', '--config', cfg.config], 15000, cfg.env);
		assert.notEqual(ck.code, 0, ck.stdout);
		assert.match(ck.stdout + ck.stderr, /access_token.*control character/);
		const st = await status(cfg);
		assert.match(st.error, /control character/);
		assert.equal((await prot.stats()).injected, before, 'no injected header reached the server');
	});

	test('(l) tools/list refused for a scope: check and calls name the login; the running gateway lists the tools once it is done', async () => {
		const listed = await startProtected({ ISSUER: as.issuer, LIST_SCOPE: 'mcp:admin' });
		try {
			const cfg = setup({}, {}, listed.url);
			const first = await loggedIn(cfg);
			assert.ok(!new URL(first.authUrl).searchParams.get('scope').split(' ').includes('mcp:admin'));
			const want = /needs the scope "mcp:tools mcp:admin": run `sluice auth login up`/;
			const ck = await runSluice(['check', '--config', cfg.config], 15000, cfg.env);
			assert.equal(ck.code, 1, ck.stdout + ck.stderr);
			assert.match(ck.stdout, new RegExp(`error: ${want.source}`));

			const gw = await connect({ configPath: cfg.config, env: cfg.env });
			// Its tools are absent, and a call on one says which login.
			const r = await eventually(async () => {
				const c = await call(gw, 'whoami');
				return want.test(c.text) && c;
			}, 5000, 100, 'the scope message');
			assert.equal(r.ok, false);
			assert.match(r.text, /server 'up' needs the scope/);
			assert.ok(!(await gw.client.listTools()).tools.some((t) => t.name.startsWith(`${NAME}__`)));

			// The login asks for the scope the gateway was refused for; the
			// gateway, still running, sees the record and lists again.
			const again = await loggedIn(cfg);
			assert.ok(new URL(again.authUrl).searchParams.get('scope').split(' ').includes('mcp:admin'), again.authUrl);
			const t0 = Date.now();
			await toolsWhen(gw.client, (t) => t.some((x) => x.name === `${NAME}__whoami`), 8000);
			assert.ok(Date.now() - t0 < 8000);
			const who = await whoami(gw);
			assert.match(who.scope, /\bmcp:admin\b/);
			await gw.close();
		} finally {
			await listed.stop();
		}
	});

	test('(m) the login listener: 20 silent connections and an oversized request do not keep the redirect out', async () => {
		const cfg = setup();
		const silent = [];
		let big = '', kept;
		const r = await loggedIn(cfg, {
			beforeBrowser: async (authUrl) => {
				const port = Number(new URL(new URL(authUrl).searchParams.get('redirect_uri')).port);
				for (let i = 0; i < 20; i++) {
					const s = net.connect(port, '127.0.0.1');
					s.closedByPeer = false;
					s.on('end', () => (s.closedByPeer = true)).on('close', () => (s.closedByPeer = true)).on('error', () => {});
					await new Promise((res) => s.once('connect', res));
					silent.push(s);
				}
				// 9000 bytes and no end of headers: past the 8 KiB a request may have.
				big = await withTimeout(new Promise((res) => {
					let got = '';
					const s = net.connect(port, '127.0.0.1', () => s.write(`GET /callback?${'a'.repeat(9000)}`));
					s.on('data', (d) => (got += d)).on('close', () => res(got)).on('error', () => res(got));
				}), 5000, 'the answer to an oversized request');
				// 20 + 1 into 16 places: the 5 oldest silent ones were let go,
				// the newer ones kept (until the login ends).
				await eventually(() => silent.slice(0, 5).every((s) => s.closedByPeer), 5000);
				kept = silent.slice(5).filter((s) => !s.closedByPeer).length;
			},
		});
		try {
			assert.match(big, /^HTTP\/1\.1 404 /);
			assert.equal(r.page.status, 200, 'the browser still reached the listener');
			assert.ok(record(cfg).rec.tokens.access_token, 'a token saved');
			assert.equal(kept, 15, 'the newer silent connections were kept');
		} finally {
			for (const s of silent) s.destroy();
		}
	});

	test('(n) private_key_jwt: client credentials with an ES256 key, a login and a refresh with an RS256 one', async () => {
		// The key next to the config, named relative to it, 0600.
		const keyed = (oauth, key, sluice) => {
			const cfg = setup({ oauth: { ...oauth, privateKeyFile: 'client.pem' } }, sluice);
			fs.writeFileSync(path.join(path.dirname(cfg.config), 'client.pem'), key, { mode: 0o600 });
			return cfg;
		};
		const cc = keyed({ grant: 'client_credentials', clientId: 'jwt-cc-client' }, as.clientKeys.es);
		const r = await runSluice(['auth', 'login', NAME, '--config', cc.config], 10000, cc.env);
		assert.equal(r.code, 0, r.stderr);
		assert.match(r.stderr, /logged in to up/);
		let gw = await serve(cc);
		assert.equal((await whoami(gw)).client_id, 'jwt-cc-client');
		await gw.close();

		const code = keyed({ clientId: 'jwt-client' }, as.clientKeys.rs, { oauth: { refreshBeforeSeconds: 0 } });
		await as.knob('/_ttl?s=2');
		try {
			const l = await loggedIn(code);
			assert.equal(new URL(l.authUrl).searchParams.get('client_id'), 'jwt-client');
		} finally {
			await as.knob('/_ttl?s=600');
		}
		const { rec } = record(code);
		assert.equal(rec.reg.auth_method, 'private_key_jwt');
		assert.ok(!JSON.stringify(rec).includes('PRIVATE KEY'), 'the key stays in its file');
		gw = await serve(code);
		await untilExpired(code);
		const before = await tokenRequests();
		const who = await whoami(gw); // the refresh authenticates with a new assertion
		assert.equal(who.sub, 'alice');
		assert.equal(who.client_id, 'jwt-client');
		assert.equal((await tokenRequests()) - before, 1, 'one refresh');
		await gw.close();
	});
});
