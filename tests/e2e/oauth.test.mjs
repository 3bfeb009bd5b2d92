// sluice as an OAuth 2.1 resource server (docs/internals/AUTH.md), against a
// real authorization server (tests/servers/oidc/server.mjs: oidc-provider):
// the official SDK client logs in by itself from sluice's 401 and Protected
// Resource Metadata; two people are two callers; every forged, expired,
// misdirected, revoked or malformed token gets 401 with the right challenge
// and leaves nothing behind; an unknown-kid flood costs the authorization
// server at most one key fetch; an issuer that does not answer holds at
// most maxWaiting requests, each 503 at its deadline.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, createPrivateKey, createPublicKey, randomUUID, sign as cryptoSign } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { catalog, closeAll, eventually, freePort, httpRequest, startHttp, writeConfig, LEGACY } from './helpers.mjs';
import { browserLogin, startAS as startOidc, stopFixtures } from './oidc.mjs';

const SCOPE = 'mcp:tools';
const CALLBACK = 'http://127.0.0.1/callback';

let as, gw, resource, audit;

const startAS = (res) => startOidc({ RESOURCE: res, SCOPE });

const counts = async () => (await fetch(`${as.issuer}/_counts`)).json();

before(async () => {
	const port = await freePort();
	resource = `http://127.0.0.1:${port}/mcp`;
	as = await startAS(resource);
	audit = path.join(path.dirname(writeConfig({})), 'oauth-audit.jsonl');
	gw = await startHttp({
		listen: `127.0.0.1:${port}`,
		servers: { github: catalog('github') },
		sluice: {
			audit: { file: audit },
			// Groups come from the authorization server's tokens.
			policy: { rules: [{ match: 'github.merge_*', notWho: ['group:sre'], action: 'deny' }] },
			http: { auth: {
				resource,
				authorizationServers: [as.issuer],
				scopesSupported: [SCOPE],
				algorithms: ['RS256', 'ES256'],
				introspection: { endpoint: `${as.issuer}/token/introspection`, clientId: 'sluice',
					clientSecret: 'sluice-secret', cacheSeconds: 1 },
			} },
		},
	});
});

after(async () => {
	await closeAll();
	await stopFixtures();
});

// ---- the SDK client's own login ------------------------------------------------------------

// An OAuthClientProvider that keeps everything in memory and, instead of
// opening a browser, records where it was sent.
class MemoryProvider {
	constructor() { this.info = undefined; this.saved = undefined; this.verifier = undefined; this.authUrl = undefined; }
	get redirectUrl() { return CALLBACK; }
	get clientMetadata() {
		return { client_name: 'sluice e2e', redirect_uris: [CALLBACK], grant_types: ['authorization_code', 'refresh_token'],
			response_types: ['code'], token_endpoint_auth_method: 'none', application_type: 'native' };
	}
	clientInformation() { return this.info; }
	saveClientInformation(info) { this.info = info; }
	tokens() { return this.saved; }
	saveTokens(t) { this.saved = t; }
	redirectToAuthorization(url) { this.authUrl = url; }
	saveCodeVerifier(v) { this.verifier = v; }
	codeVerifier() { return this.verifier; }
}

// The SDK client meets sluice's 401, discovers the authorization server
// through the Protected Resource Metadata, registers (DCR), sends the user
// to log in, trades the code and connects with the token.
async function sdkLogin(user) {
	const provider = new MemoryProvider();
	const client = new Client({ name: `oauth-e2e-${user}`, version: '1.0.0' });
	const first = new StreamableHTTPClientTransport(new URL(resource), { authProvider: provider });
	await assert.rejects(client.connect(first), UnauthorizedError);
	assert.ok(provider.authUrl, 'the SDK was sent to the authorization server');
	assert.equal(provider.authUrl.searchParams.get('resource'), resource, 'RFC 8707 resource sent');
	assert.ok(provider.info?.client_id, 'registered dynamically');
	const back = new URL(await browserLogin(provider.authUrl, user));
	assert.equal(`${back.origin}${back.pathname}`, CALLBACK);
	const code = back.searchParams.get('code');
	assert.ok(code, `the callback carries a code: ${back}`);
	await first.finishAuth(code);
	assert.ok(provider.saved?.access_token, 'a token');
	const transport = new StreamableHTTPClientTransport(new URL(resource), { authProvider: provider });
	await client.connect(transport);
	return { client, transport, token: provider.saved.access_token };
}

function auditLines() {
	return fs.existsSync(audit) ? fs.readFileSync(audit, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
}

// ---- tokens made here, with the authorization server's own keys --------------------------

const b64u = (x) => Buffer.from(typeof x === 'string' ? x : JSON.stringify(x)).toString('base64url');

function mint(claims = {}, header = {}, key = as.keys[0]) {
	const now = Math.floor(Date.now() / 1000);
	const h = { alg: key.alg, kid: key.kid, typ: 'at+jwt', ...header };
	const c = { iss: as.issuer, aud: resource, sub: 'carol', client_id: 'minted', scope: SCOPE,
		iat: now, exp: now + 300, jti: randomUUID(), ...claims };
	const input = `${b64u(h)}.${b64u(c)}`;
	const pk = createPrivateKey({ key, format: 'jwk' });
	const sig = cryptoSign('sha256', Buffer.from(input), h.alg === 'ES256' ? { key: pk, dsaEncoding: 'ieee-p1363' } : pk);
	return `${input}.${sig.toString('base64url')}`;
}

const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
const init = { jsonrpc: '2.0', id: 1, method: 'initialize',
	params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };

function post(token, body = init, headers = {}) {
	return httpRequest({ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST',
		headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...headers } }, body);
}

function assertChallenge(r, error) {
	const h = r.headers['www-authenticate'];
	assert.ok(h, 'a WWW-Authenticate header');
	const prm = `http://127.0.0.1:${gw.port}/.well-known/oauth-protected-resource/mcp`;
	assert.ok(h.startsWith(`Bearer resource_metadata="${prm}"`), h);
	assert.match(h, new RegExp(`scope="${SCOPE}"`));
	if (error) assert.match(h, new RegExp(`error="${error}"`));
	else assert.doesNotMatch(h, /error=/);
	assert.equal(r.headers['mcp-session-id'], undefined, 'no session');
}

// ---------------------------------------------------------------------------------------

describe('OAuth resource server', () => {
	test('Protected Resource Metadata at both well-known paths, GET only, without a token', async () => {
		for (const p of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
			const r = await httpRequest({ host: '127.0.0.1', port: gw.port, path: p, method: 'GET' });
			assert.equal(r.status, 200, p);
			assert.match(r.headers['content-type'], /application\/json/);
			assert.deepEqual(r.json, { resource, authorization_servers: [as.issuer], scopes_supported: [SCOPE],
				bearer_methods_supported: ['header'], resource_name: 'sluice' });
		}
		const wrong = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/.well-known/oauth-protected-resource/mcp', method: 'POST' }, {});
		assert.equal(wrong.status, 405);
		assert.equal(wrong.headers.allow, 'GET');
		// Host checks as everywhere: the document never follows a forged Host.
		const forged = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/.well-known/oauth-protected-resource/mcp',
			method: 'GET', headers: { host: 'evil.example' } });
		assert.equal(forged.status, 403);
		const none = await post(undefined);
		assert.equal(none.status, 401);
		assertChallenge(none, null);
	});

	test('the SDK client logs in by itself and calls tools; two people are two callers, with their own tools', async () => {
		const alice = await sdkLogin('alice');
		const { tools } = await alice.client.listTools();
		const tool = tools.find((t) => /list_issues/.test(t.name));
		assert.ok(tool, 'tools are listed');
		const res = await alice.client.callTool({ name: tool.name, arguments: { owner: 'acme', repo: 'api' } });
		assert.ok(!res.isError, JSON.stringify(res));

		const bob = await sdkLogin('bob');
		await bob.client.callTool({ name: tool.name, arguments: { owner: 'acme', repo: 'web' } });
		// The policy by group, from the token's groups claim: alice (sre)
		// sees the merge tool, bob (sales) does not, and cannot call it.
		const merge = tools.find((t) => /merge_pull_request/.test(t.name));
		assert.ok(merge, 'alice (group sre) sees the merge tool');
		const bobTools = (await bob.client.listTools()).tools.map((t) => t.name);
		assert.ok(bobTools.includes(tool.name) && !bobTools.includes(merge.name), JSON.stringify(bobTools));
		const refused = await bob.client.callTool({ name: merge.name, arguments: { owner: 'acme', repo: 'web', number: 1 } })
			.then((r) => r, (e) => ({ error: e }));
		assert.ok(refused.error || refused.isError, 'bob cannot call it');

		// Bob's valid token does not reach Alice's session (404, not 403).
		const cross = await post(bob.token, ping, { 'mcp-session-id': alice.transport.sessionId, 'mcp-protocol-version': LEGACY });
		assert.equal(cross.status, 404);

		const calls = await eventually(() => {
			const ls = auditLines().filter((l) => l.type === 'call');
			return ls.length >= 2 && ls;
		}, 5000, 50, 'two audit call lines');
		const subjects = new Set(calls.map((l) => l.subject));
		assert.ok(subjects.has('alice') && subjects.has('bob'), JSON.stringify(calls));
		const text = fs.readFileSync(audit, 'utf8');
		assert.ok(!text.includes(alice.token) && !text.includes(bob.token), 'no token in the audit');
		assert.ok(!gw.stderr().includes(alice.token), 'no token in the log');
		await alice.client.close();
		await bob.client.close();
	});

	test('an ES256 token of the same server is accepted', async () => {
		const ok = await post(mint({ groups: ['ops'] }, {}, as.keys[1]));
		assert.equal(ok.status, 200, ok.text);
		assert.ok(ok.headers['mcp-session-id']);
	});

	test('forged, expired, misdirected and malformed tokens get 401 and leave no session', async () => {
		const valid = mint();
		assert.equal((await post(valid)).status, 200, 'a minted token passes, so each change below is what fails');
		const now = Math.floor(Date.now() / 1000);
		const pub = createPublicKey({ key: as.keys[0], format: 'jwk' });
		const hsInput = `${b64u({ alg: 'HS256', kid: 'rsa-1', typ: 'at+jwt' })}.${b64u({ iss: as.issuer, aud: resource, sub: 'mallory', exp: now + 300 })}`;
		const hs256 = `${hsInput}.${createHmac('sha256', pub.export({ type: 'spki', format: 'pem' })).update(hsInput).digest('base64url')}`;
		const noneInput = `${b64u({ alg: 'none', typ: 'at+jwt' })}.${b64u({ iss: as.issuer, aud: resource, sub: 'mallory', exp: now + 300 })}`;
		const cases = {
			expired: mint({ exp: now - 3600, iat: now - 7200 }),
			'wrong audience': mint({ aud: 'https://other.example/mcp' }),
			'another resource on this host': mint({ aud: `http://127.0.0.1:${gw.port}/other` }),
			'wrong issuer': mint({ iss: 'http://127.0.0.1:1' }),
			'alg none': `${noneInput}.`,
			'HS256 with the public key': hs256,
			'bad signature': valid.slice(0, -4) + (valid.endsWith('AAAA') ? 'BBBB' : 'AAAA'),
			'not an access token (typ JWT)': mint({}, { typ: 'JWT' }),
			'no exp': mint({ exp: undefined }),
			'not yet valid': mint({ nbf: now + 3600 }),
			'JWE (five parts)': 'a.b.c.d.e',
			garbage: 'not-a-token-%%%',
			'over 8 KiB': 'x'.repeat(9000),
		};
		for (const [what, token] of Object.entries(cases)) {
			const r = await post(token);
			assert.equal(r.status, 401, `${what}: ${r.status} ${r.text}`);
			assertChallenge(r, 'invalid_token');
		}
		assert.ok(!gw.stderr().includes(valid), 'no token in the log');
	});

	test('an unknown-kid flood costs at most one key fetch, and each gets 401', async () => {
		assert.equal((await post(mint())).status, 200); // keys are cached
		const before = (await counts())['/jwks'] || 0;
		const flood = Array.from({ length: 40 }, () => post(mint({}, { kid: randomUUID() })));
		const answers = await Promise.all(flood);
		for (const r of answers) {
			assert.equal(r.status, 401, r.text);
			assertChallenge(r, 'invalid_token');
		}
		const again = await Promise.all(Array.from({ length: 10 }, () => post(mint({}, { kid: randomUUID() }))));
		for (const r of again) assert.equal(r.status, 401);
		const fetched = ((await counts())['/jwks'] || 0) - before;
		assert.ok(fetched <= 1, `at most one key fetch per minRefreshSeconds, saw ${fetched}`);
		assert.equal((await post(mint())).status, 200, 'known keys still work');
	});

	test('opaque tokens through introspection; a revoked one gets 401 once its answer ages out', async () => {
		const basic = `Basic ${Buffer.from('opaque-client:opaque-secret').toString('base64')}`;
		const tr = await fetch(`${as.issuer}/token`, { method: 'POST', headers: { authorization: basic,
			'content-type': 'application/x-www-form-urlencoded' },
		body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope: SCOPE }).toString() });
		const { access_token: token } = await tr.json();
		assert.ok(token && token.split('.').length !== 3, 'an opaque token');
		const ok = await post(token);
		assert.equal(ok.status, 200, ok.text);
		const rv = await fetch(`${as.issuer}/token/revocation`, { method: 'POST', headers: { authorization: basic,
			'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token }).toString() });
		assert.ok(rv.ok);
		const denied = await eventually(async () => {
			const r = await post(token);
			return r.status === 401 && r;
		}, 5000, 250, 'the revoked token refused');
		assertChallenge(denied, 'invalid_token');
		const unknown = await post('opaque-but-unknown-0123456789');
		assert.equal(unknown.status, 401);
		assertChallenge(unknown, 'invalid_token');
		assert.ok(!gw.stderr().includes(token), 'no token in the log');
	});

	test('a token without a required scope gets 403 insufficient_scope naming it', async () => {
		const strict = await startHttp({
			servers: { github: catalog('github') },
			sluice: { http: { auth: { resource, authorizationServers: [as.issuer], requiredScopes: ['mcp:admin'] } } },
		});
		const r = await httpRequest({ host: '127.0.0.1', port: strict.port, path: '/mcp', method: 'POST',
			headers: { authorization: `Bearer ${mint()}` } }, init);
		assert.equal(r.status, 403, r.text);
		assert.match(r.headers['www-authenticate'], /error="insufficient_scope"/);
		assert.match(r.headers['www-authenticate'], /scope="mcp:admin"/);
		const ok = await httpRequest({ host: '127.0.0.1', port: strict.port, path: '/mcp', method: 'POST',
			headers: { authorization: `Bearer ${mint({ scope: `${SCOPE} mcp:admin` })}` } }, init);
		assert.equal(ok.status, 200, ok.text);
		// A session opened with the scope is no way around it: the same
		// person's down-scoped token is refused in that session (issue 32,
		// finding 4), a resource read as any request.
		const sid = ok.headers['mcp-session-id'];
		const inSession = (scope, method, params = {}) => httpRequest({ host: '127.0.0.1', port: strict.port, path: '/mcp',
			method: 'POST', headers: { authorization: `Bearer ${mint({ scope })}`, 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY } },
		{ jsonrpc: '2.0', id: 2, method, params });
		const admin = `${SCOPE} mcp:admin`;
		const readme = await eventually(async () => (await inSession(admin, 'resources/list')).json?.result?.resources
			?.find((x) => x.name === 'readme'), 10000, 100, 'the readme listed');
		const down = await inSession(SCOPE, 'resources/read', { uri: readme.uri });
		assert.equal(down.status, 403, down.text);
		assert.match(down.headers['www-authenticate'], /error="insufficient_scope"/);
		const full = await inSession(admin, 'resources/read', { uri: readme.uri });
		assert.ok(full.json?.result?.contents?.length > 0, full.text);
		await strict.close();
	});

	test('an issuer that does not answer: at most maxWaiting requests are held, the next gets 503 at once, the held one 503 at its deadline', async () => {
		// A key set endpoint that accepts and never answers.
		const silent = net.createServer(() => {});
		await new Promise((r) => silent.listen(0, '127.0.0.1', r));
		const url = `http://127.0.0.1:${silent.address().port}`;
		const held = await startHttp({
			servers: { github: catalog('github') },
			sluice: { http: { auth: { resource, authorizationServers: [url], jwksUri: `${url}/jwks`,
				maxWaiting: 1, fetchTimeoutMs: 1000 } } },
		});
		const ask = () => httpRequest({ host: '127.0.0.1', port: held.port, path: '/mcp', method: 'POST',
			headers: { authorization: `Bearer ${mint({ iss: url })}` } }, init, 15000);
		const first = ask();
		let firstDone = false;
		first.finally(() => (firstDone = true)).catch(() => {});
		await new Promise((r) => setTimeout(r, 200));
		const second = await ask();
		assert.equal(second.status, 503, second.text);
		assert.match(second.text, /sluice\.http\.auth\.maxWaiting/);
		// At once: while the first still waits on the silent key server.
		assert.equal(firstDone, false, `answered at once (${second.ms} ms)`);
		const r = await first;
		assert.equal(r.status, 503, r.text);
		assert.ok(r.ms < 5000, `within twice fetchTimeoutMs and slack (${r.ms} ms)`);
		// Still serving: a request without a token is answered 401 at once.
		assert.equal((await httpRequest({ host: '127.0.0.1', port: held.port, path: '/mcp', method: 'POST' }, init)).status, 401);
		await held.close();
		silent.close();
	});
});
