// Per-user keys never cross authentication methods (issue 32, finding 7;
// docs/internals/AUTH.md "Who a person is"): a shared gateway takes static
// tokens and, with two authorization servers configured, opaque tokens
// through an introspection endpoint whose answers name no issuer. The
// static token's alice logs in to a perUser upstream through the gateway;
// the introspected alice (the same subject string, another namespace: the
// endpoint's) never gets that login: she is sent to a login of her own.
// Nor does the alice of another introspection endpoint (the gateway
// restarted on another identity provider) get the first one's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { closeAll, freePort, httpClient, startHttp, textOf, writeConfig } from './helpers.mjs';
import { cliLoggedIn, startAS, startProtected, stopFixtures, webLogin } from './oidc.mjs';

const STATIC = 'alice-static-token-3d8a';
const OPAQUE = 'opaque-alice-token-5c0f91';
let as, prot, gw, intro, resource, cfg, port, asked = 0;

// An introspection endpoint (RFC 7662) that knows one token, and answers
// without "iss": with two issuers configured, none names alice's namespace.
function startIntrospection() {
	const srv = http.createServer((req, res) => {
		let body = '';
		req.on('data', (c) => (body += c));
		req.on('end', () => {
			asked++;
			const token = new URLSearchParams(body).get('token');
			res.setHeader('content-type', 'application/json');
			res.end(JSON.stringify(token === OPAQUE ? { active: true, sub: 'alice', aud: resource } : { active: false }));
		});
	});
	return new Promise((r) => srv.listen(0, '127.0.0.1', () => r(srv)));
}

async function whoami(token) {
	const c = await httpClient(gw.url, { headers: { Authorization: `Bearer ${token}` }, name: 'identitykeys' });
	try {
		const r = await c.client.callTool({ name: 'up__whoami', arguments: {} });
		if (r.isError) return { ok: false, text: textOf(r) };
		return { ok: true, sub: JSON.parse(textOf(r)).sub };
	} catch (e) {
		return { ok: false, text: String(e.message) };
	} finally {
		await c.client.close();
	}
}

// Retried while the login just made settles: bounded in count and time.
async function whoamiUntil(token, pred) {
	let r;
	for (let i = 0; i < 50; i++) {
		r = await whoami(token);
		if (pred(r)) return r;
		await new Promise((res) => setTimeout(res, 100));
	}
	return r;
}

const loginUrl = (r) => /(http:\/\/127\.0\.0\.1:\d+\/oauth\/login\/[A-Za-z0-9_-]+)/.exec(r.text)?.[1];

before(async () => {
	as = await startAS({ SCOPES: 'mcp:tools' });
	prot = await startProtected({ ISSUER: as.issuer });
	intro = await startIntrospection();
	port = await freePort();
	resource = `http://127.0.0.1:${port}/mcp`;
	const config = writeConfig({ up: { url: prot.url, oauth: { perUser: true } } }, {
		exposure: 'passthrough', startupTimeoutMs: 5000,
		http: {
			publicUrl: `http://127.0.0.1:${port}`,
			auth: {
				tokens: [{ token: STATIC, subject: 'alice' }],
				resource,
				// Two issuers: an answer without iss is neither's.
				authorizationServers: [as.issuer, 'https://idp.invalid'],
				introspection: { endpoint: `http://127.0.0.1:${intro.address().port}/introspect`,
					clientId: 'sluice', clientSecret: 'sluice-secret' },
			},
		},
	});
	cfg = { config, env: { XDG_STATE_HOME: path.join(path.dirname(config), 'xdg') } };
	await cliLoggedIn(cfg, 'up');
	gw = await startHttp({ configPath: config, listen: `127.0.0.1:${port}`, env: cfg.env });
});

after(async () => {
	await closeAll();
	await gw?.close();
	intro?.close();
	await stopFixtures();
});

test("the introspected alice never uses the static alice's upstream login", async () => {
	const first = await whoami(STATIC);
	const url = loginUrl(first);
	assert.ok(url, first.text);
	await webLogin(url, { user: 'static-alice-upstream' });
	const s = await whoamiUntil(STATIC, (r) => r.ok);
	assert.equal(s.sub, 'static-alice-upstream', s.text);

	const i = await whoami(OPAQUE);
	assert.ok(asked > 0, 'the opaque token was introspected');
	assert.equal(i.ok, false, `the introspected alice was served with ${i.sub}`);
	const own = loginUrl(i);
	assert.ok(own, i.text);
	assert.notEqual(own, url);
	await webLogin(own, { user: 'introspected-alice-upstream' });
	const j = await whoamiUntil(OPAQUE, (r) => r.ok);
	assert.equal(j.sub, 'introspected-alice-upstream', j.text);
	// Each keeps her own.
	assert.equal((await whoami(STATIC)).sub, 'static-alice-upstream');
	const stored = fs.readdirSync(path.join(path.dirname(gw.configPath), 'xdg'), { recursive: true })
		.filter((f) => f.endsWith('.json'));
	assert.ok(stored.length >= 3, `the gateway's login and one per alice: ${stored}`);
});

test("another introspection endpoint's alice is another person: she does not inherit the first one's login", async () => {
	// The same gateway and token store, restarted on another endpoint
	// that also answers "sub: alice" without an issuer.
	const other = await startIntrospection();
	try {
		const doc = JSON.parse(fs.readFileSync(cfg.config, 'utf8'));
		doc.sluice.http.auth.introspection.endpoint = `http://127.0.0.1:${other.address().port}/other-introspect`;
		fs.writeFileSync(cfg.config, JSON.stringify(doc));
		await gw.close();
		gw = await startHttp({ configPath: cfg.config, listen: `127.0.0.1:${port}`, env: cfg.env });
		const r = await whoami(OPAQUE);
		assert.equal(r.ok, false, `served with ${r.sub}: the first endpoint's alice's login`);
		assert.ok(loginUrl(r), r.text);
		// The static alice still has hers, across the restart.
		assert.equal((await whoamiUntil(STATIC, (x) => x.ok)).sub, 'static-alice-upstream');
	} finally {
		other.close();
	}
});
