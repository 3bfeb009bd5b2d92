// sluice auth status and logout over the token store (src/cli/auth.c,
// src/oauth/store.c): records written here the way the store writes them,
// read back by the binary; never a token or secret on the terminal.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import { mkdirSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

import { runSluice, writeConfig, catalog, closeAll } from './helpers.mjs';

after(closeAll);

const ALPHA = 'http://127.0.0.1:1/alpha/mcp';
const BETA = 'http://127.0.0.1:1/beta/mcp';
const SECRETS = ['at-SECRET-access', 'rt-SECRET-refresh', 'cs-SECRET-client'];

function setup() {
	const config = writeConfig({
		alpha: { url: ALPHA },
		beta: { url: BETA },
		local: catalog('github'),
	});
	const state = path.join(path.dirname(config), 'xdg');
	const dir = path.join(state, 'sluice', 'oauth');
	return { config, state, dir, env: { XDG_STATE_HOME: state, SLUICE_TOKEN_KEY: undefined } };
}

function fileOf(dir, url, user = '') {
	return path.join(dir, createHash('sha256').update(`${url}\n${user}`).digest('hex') + '.json');
}

function record(url, extra = {}) {
	const now = Math.floor(Date.now() / 1000);
	return {
		version: 1,
		url,
		user: '',
		server: 'alpha',
		subject: 'alice@example.com',
		as: {
			resource: url,
			issuer: 'https://login.example.com',
			token_endpoint: 'https://login.example.com/token',
			auth_methods: ['none'],
		},
		reg: { issuer: 'https://login.example.com', client_id: 'client-123', client_secret: 'cs-SECRET-client', how: 'dynamic' },
		tokens: { access_token: 'at-SECRET-access', refresh_token: 'rt-SECRET-refresh', scope: 'repo read:org', expires_at: now + 52 * 60 + 30 },
		needs_scope: 'admin:org',
		saved_at: now,
		...extra,
	};
}

function save(dir, rec) {
	mkdirSync(dir, { recursive: true, mode: 0o700 });
	writeFileSync(fileOf(dir, rec.url, rec.user), JSON.stringify(rec), { mode: 0o600 });
}

function run(t, args) {
	return runSluice(['auth', ...args, '--config', t.config], 20000, t.env);
}

function noSecrets(r) {
	for (const s of SECRETS) {
		assert.ok(!r.stdout.includes(s), `stdout shows ${s}`);
		assert.ok(!r.stderr.includes(s), `stderr shows ${s}`);
	}
}

test('auth status: each remote server, who, scopes, expiry; never a token; --json the same facts', async () => {
	const t = setup();
	save(t.dir, record(ALPHA));
	let r = await run(t, ['status']);
	assert.equal(r.code, 0, r.stderr);
	noSecrets(r);
	assert.match(r.stdout, /^alpha  http:\/\/127\.0\.0\.1:1\/alpha\/mcp$/m);
	assert.match(r.stdout, /logged in\s+alice@example\.com/);
	assert.match(r.stdout, /issuer\s+https:\/\/login\.example\.com/);
	assert.match(r.stdout, /client\s+client-123 \(dynamic registration\)/);
	assert.match(r.stdout, /scopes\s+repo read:org/);
	assert.match(r.stdout, /token\s+expires in 5[12] min; refresh token: yes/);
	assert.match(r.stdout, /needs scope\s+admin:org/);
	assert.match(r.stdout, /sluice auth login alpha --scope "admin:org"/);
	assert.match(r.stdout, /^beta  .*\n  not logged in: run `sluice auth login beta`/m);
	assert.doesNotMatch(r.stdout, /^local/m, 'a stdio server has no login');

	r = await run(t, ['status', '--json']);
	assert.equal(r.code, 0, r.stderr);
	noSecrets(r);
	const list = JSON.parse(r.stdout);
	assert.equal(list.length, 2);
	const [a, b] = list;
	assert.equal(a.server, 'alpha');
	assert.equal(a.loggedIn, true);
	assert.equal(a.subject, 'alice@example.com');
	assert.equal(a.clientId, 'client-123');
	assert.equal(a.registration, 'dynamic');
	assert.equal(a.scope, 'repo read:org');
	assert.equal(a.refreshToken, true);
	assert.ok(a.expiresIn > 50 * 60 && a.expiresIn <= 53 * 60, String(a.expiresIn));
	assert.equal(a.needsScope, 'admin:org');
	assert.deepEqual(b, { server: 'beta', url: BETA, loggedIn: false });

	// One server; an expired token without a refresh token.
	const now = Math.floor(Date.now() / 1000);
	save(t.dir, record(ALPHA, { tokens: { access_token: 'at-SECRET-access', expires_at: now - 185 } }));
	r = await run(t, ['status', 'alpha']);
	assert.equal(r.code, 0, r.stderr);
	assert.match(r.stdout, /token\s+expired (3 min|18[5-9] s) ago; refresh token: no/);
	assert.doesNotMatch(r.stdout, /beta/);
});

test('auth status: an unreadable record is shown with why; unknown and stdio servers exit 2 listing the remote ones', async () => {
	const t = setup();
	save(t.dir, record(ALPHA));
	let r = await runSluice(['auth', 'status', '--config', t.config], 20000, { ...t.env, SLUICE_TOKEN_KEY: 'k' });
	assert.equal(r.code, 0, 'a plain record is read with a key set');
	assert.match(r.stdout, /logged in\s+alice/);

	writeFileSync(fileOf(t.dir, ALPHA), 'sluice-sealed-v1:AAAA', { mode: 0o600 });
	r = await run(t, ['status', 'alpha']);
	assert.equal(r.code, 0);
	assert.match(r.stdout, /unreadable\s+.*encrypted: set SLUICE_TOKEN_KEY or sluice\.oauth\.keyFile/);

	r = await run(t, ['status', 'nope']);
	assert.equal(r.code, 2);
	assert.match(r.stderr, /no server named 'nope'.*\(remote servers: alpha, beta\)/);
	r = await run(t, ['logout', 'local']);
	assert.equal(r.code, 2);
	assert.match(r.stderr, /'local' is not a remote server/);
	r = await run(t, ['logout']);
	assert.equal(r.code, 2);
	assert.match(r.stderr, /which server\?/);
	r = await run(t, ['forget', 'alpha']);
	assert.equal(r.code, 2);
	assert.match(r.stderr, /login, status or logout/);
});

// An authorization server's revocation endpoint: answers status, keeps the bodies.
async function revoker(status) {
	const bodies = [];
	const srv = http.createServer((req, res) => {
		let b = '';
		req.on('data', (c) => (b += c));
		req.on('end', () => {
			bodies.push(b);
			res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
		});
	});
	await new Promise((r) => srv.listen(0, '127.0.0.1', r));
	return { url: `http://127.0.0.1:${srv.address().port}/revoke`, bodies, close: () => srv.close() };
}

test('auth logout: revokes the refresh token where offered, then forgets the record', async () => {
	const t = setup();
	const as = await revoker(200);
	try {
		save(t.dir, record(ALPHA, { as: { issuer: 'https://login.example.com', revocation_endpoint: as.url } }));
		const r = await run(t, ['logout', 'alpha']);
		assert.equal(r.code, 0, r.stdout + r.stderr);
		noSecrets(r);
		assert.match(r.stdout, /alpha: revoked the refresh token/);
		assert.match(r.stdout, /alpha: logged out/);
		assert.equal(as.bodies.length, 1);
		const form = new URLSearchParams(as.bodies[0]);
		assert.equal(form.get('token'), 'rt-SECRET-refresh');
		assert.equal(form.get('token_type_hint'), 'refresh_token');
		assert.equal(existsSync(fileOf(t.dir, ALPHA)), false);
		assert.deepEqual(readdirSync(t.dir), [], 'no file left behind');
	} finally {
		as.close();
	}
	const again = await run(t, ['logout', 'alpha']);
	assert.equal(again.code, 0);
	assert.match(again.stdout, /alpha: not logged in; nothing to do/);
});

test('auth logout: no revocation offered, or revocation failing: the record is removed anyway, saying so', async () => {
	const t = setup();
	save(t.dir, record(ALPHA));
	let r = await run(t, ['logout', 'alpha']);
	assert.equal(r.code, 0, r.stderr);
	assert.match(r.stdout, /offers no revocation \(RFC 7009\): the refresh token stays valid until it expires/);
	assert.equal(existsSync(fileOf(t.dir, ALPHA)), false);

	const as = await revoker(503);
	try {
		save(t.dir, record(ALPHA, { as: { revocation_endpoint: as.url } }));
		r = await run(t, ['logout', 'alpha']);
		assert.equal(r.code, 1, 'a failed revocation is a failure');
		noSecrets(r);
		assert.match(r.stderr, /warning: alpha: revoking the refresh token failed/);
		assert.match(r.stdout, /alpha: logged out/);
		assert.equal(existsSync(fileOf(t.dir, ALPHA)), false);
	} finally {
		as.close();
	}

	// A record this key cannot open is neither revoked nor removed.
	writeFileSync(fileOf(t.dir, ALPHA), 'sluice-sealed-v1:AAAA', { mode: 0o600 });
	r = await runSluice(['auth', 'logout', 'alpha', '--config', t.config], 20000, { ...t.env, SLUICE_TOKEN_KEY: 'k' });
	assert.equal(r.code, 1);
	assert.match(r.stderr, /nothing revoked or removed; to forget this login anyway, delete /);
	assert.equal(existsSync(fileOf(t.dir, ALPHA)), true);
});
