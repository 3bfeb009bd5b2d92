// OAuth 2.0 Token Exchange (RFC 8693) for a perUser server (docs/internals/
// AUTH.md, "Token exchange"): a shared HTTP gateway whose callers present
// JWTs of an authorization server (oidc-provider with TOKEN_EXCHANGE=1,
// tests/servers/oidc), in front of an MCP server of that same authorization
// server (tests/servers/protected) configured with oauth.perUser and
// oauth.tokenExchange. Each caller's own token is exchanged, once, for a
// token of the server that names that caller; the exchanged token is saved
// under that caller; an exchange refused leaves that caller "needs login"
// until it presents another token;
// a static sluice token is never exchanged; the audit names the caller's
// token as the one the server saw.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPrivateKey, randomUUID, sign as cryptoSign } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { closeAll, eventually, freePort, httpClient, startHttp, textOf, writeConfig } from './helpers.mjs';
import { cliLoggedIn, startAS, startProtected, stopFixtures } from './oidc.mjs';

const NAME = 'up';
const STATIC = 'static-token-of-sam-0123456789';
let as, prot, gw, cfg, resource, audit;

// A front-face access token for sub, as the authorization server would
// issue for the gateway (signed with its own key; aud = the gateway).
const b64u = (x) => Buffer.from(JSON.stringify(x)).toString('base64url');
function mint(sub) {
	const key = as.keys[0];
	const now = Math.floor(Date.now() / 1000);
	const input = `${b64u({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })}.${b64u({ iss: as.issuer, aud: resource,
		sub, client_id: 'front', scope: 'mcp:tools', iat: now, exp: now + 600, jti: randomUUID() })}`;
	const sig = cryptoSign('sha256', Buffer.from(input), createPrivateKey({ key, format: 'jwk' }));
	return `${input}.${sig.toString('base64url')}`;
}

// The store's user key of a caller (upstream/users.c).
// A person's user key (sl_caller_user_key, src/auth/caller.h): the identity
// digest of method (none for an issued token, "token" for a static one),
// issuer, subject and no profile, each field absent (0) or 1, length, bytes.
const userKey = (issuer, sub) => {
	const field = (v) => {
		if (v == null) return Buffer.from([0]);
		const b = Buffer.from(v), n = Buffer.alloc(8);
		n.writeBigUInt64BE(BigInt(b.length));
		return Buffer.concat([Buffer.from([1]), n, b]);
	};
	const method = issuer == null ? 'token' : null;
	return createHash('sha256').update(Buffer.concat([Buffer.from('sluice-identity-1'),
		field(method), field(issuer), field(sub), field(null)])).digest('hex');
};

function records() {
	if (!fs.existsSync(cfg.dir)) return [];
	return fs.readdirSync(cfg.dir).filter((f) => f.endsWith('.json'))
		.map((f) => JSON.parse(fs.readFileSync(path.join(cfg.dir, f), 'utf8')));
}

const claimsOf = (jwt) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url'));
const exchanges = async () => (await as.counts())['token-exchange'] || 0;

async function caller(token) {
	return httpClient(resource, { headers: { authorization: `Bearer ${token}` }, name: 'tx-e2e' });
}

async function whoami(c) {
	try {
		const r = await c.client.callTool({ name: `${NAME}__whoami`, arguments: {} });
		return { ok: !r.isError, text: textOf(r) };
	} catch (e) {
		return { ok: false, text: String(e.message) };
	}
}

function auditLines() {
	return fs.existsSync(audit) ? fs.readFileSync(audit, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
}

before(async () => {
	as = await startAS({ TOKEN_EXCHANGE: '1' });
	prot = await startProtected({ ISSUER: as.issuer });
	const port = await freePort();
	resource = `http://127.0.0.1:${port}/mcp`;
	audit = path.join(path.dirname(writeConfig({})), 'tokenexchange-audit.jsonl');
	const config = writeConfig({
		[NAME]: { url: prot.url, oauth: { perUser: true, tokenExchange: true, clientId: 'tx-client', clientSecret: 'tx-secret' } },
	}, {
		exposure: 'passthrough',
		startupTimeoutMs: 5000,
		audit: { file: audit },
		http: { auth: { resource, authorizationServers: [as.issuer], tokens: [{ token: STATIC, subject: 'sam' }] } },
	});
	const state = path.join(path.dirname(config), 'xdg');
	cfg = { config, state, dir: path.join(state, 'sluice', 'oauth'), env: { XDG_STATE_HOME: state } };
	await cliLoggedIn(cfg, NAME);
	gw = await startHttp({ configPath: config, listen: `127.0.0.1:${port}`, env: cfg.env });
});

after(async () => {
	await closeAll();
	await stopFixtures();
});

describe('token exchange for a perUser server', () => {
	test('each caller is exchanged once and reaches the server as itself; the token is saved under the caller', async () => {
		const before = await exchanges();
		const alice = await caller(mint('alice'));
		for (let i = 0; i < 3; i++) {
			const r = await whoami(alice);
			assert.ok(r.ok, r.text);
			assert.equal(JSON.parse(r.text).sub, 'alice');
		}
		assert.equal(await exchanges(), before + 1, 'one exchange for alice');
		// A second session of bob's, with another token of his: one exchange.
		const bob = await caller(mint('bob'));
		const r = await whoami(bob);
		assert.ok(r.ok, r.text);
		assert.equal(JSON.parse(r.text).sub, 'bob');
		assert.equal(JSON.parse(r.text).client_id, 'tx-client');
		assert.equal((await whoami(bob)).ok, true);
		assert.equal(await exchanges(), before + 2, 'one exchange for bob');

		const recs = records();
		const mine = recs.find((x) => x.user === userKey(as.issuer, 'alice'));
		assert.ok(mine, `a record under alice's key: ${recs.map((x) => x.user)}`);
		assert.equal(claimsOf(mine.tokens.access_token).sub, 'alice');
		assert.equal(mine.registration?.client_secret ?? mine.reg?.client_secret, undefined, 'no secret saved');
		const own = recs.find((x) => x.user === '');
		assert.equal(claimsOf(own.tokens.access_token).sub, 'operator', "the gateway's own login is untouched");
		assert.ok(recs.find((x) => x.user === userKey(as.issuer, 'bob')));

		// The audit names the caller's own token.
		const whoamis = () => auditLines().filter((l) => l.type === 'call' && /whoami$/.test(l.tool));
		await eventually(() => whoamis().length >= 5, 5000, 100, `5 audit lines: ${JSON.stringify(auditLines())}`);
		const calls = whoamis();
		for (const l of calls) assert.equal(l.upstream_token, 'caller', JSON.stringify(l));
	});

	test('an exchange the authorization server refuses leaves that caller "needs login", the gateway serving others', async () => {
		await as.knob('/_refuse?sub=carol');
		const before = await exchanges();
		const carol = await caller(mint('carol'));
		const r = await whoami(carol);
		assert.equal(r.ok, false);
		assert.match(r.text, /needs its caller's own login.*carol/);
		assert.equal(await exchanges(), before + 1, 'asked once');
		const again = await whoami(carol);
		assert.equal(again.ok, false);
		assert.match(again.text, /needs its caller's own login.*carol/);
		assert.equal(await exchanges(), before + 1, 'not asked again');
		assert.equal(records().find((x) => x.user === userKey(as.issuer, 'carol'))?.tokens?.access_token, undefined);
		// Accepted again: carol's next token (a new one) is exchanged, no login.
		await as.knob('/_refuse?sub=carol&off=1');
		const carol2 = await caller(mint('carol'));
		const ok = await whoami(carol2);
		assert.ok(ok.ok, ok.text);
		assert.equal(JSON.parse(ok.text).sub, 'carol');
		assert.equal(await exchanges(), before + 2, 'her new token exchanged once');
		const dave = await caller(mint('dave'));
		const d = await whoami(dave);
		assert.ok(d.ok, d.text);
		assert.equal(JSON.parse(d.text).sub, 'dave');
		assert.equal(gw.proc.exitCode, null, 'the gateway runs');
	});

	test('a caller with a static sluice token is never exchanged', async () => {
		const before = await exchanges();
		const sam = await caller(STATIC);
		const r = await whoami(sam);
		assert.equal(r.ok, false);
		assert.match(r.text, /needs its caller's own login.*sam/);
		assert.match((await whoami(sam)).text, /needs its caller's own login.*sam/);
		assert.equal(await exchanges(), before, 'no exchange');
		assert.equal(records().find((x) => x.user === userKey(null, 'sam'))?.tokens?.access_token, undefined);
	});
});
