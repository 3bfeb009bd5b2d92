// Per-user delegation (docs/internals/AUTH.md, "Per-user delegation"): a
// shared HTTP gateway whose callers are alice, bob and carol (static
// tokens), in front of an MCP server that requires OAuth with
// `oauth.perUser`. The operator logs the gateway in once (its tools are
// listed with that login); each caller's first call is answered with the
// URL of a login of its own through the gateway (URLElicitationRequiredError
// for a client that takes URL-mode elicitations, the URL in the error text
// otherwise); after that login the server sees that caller's own token, never
// another's, and the audit says so. Bounded: sluice.oauth.maxUsers.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { closeAll, eventually, freePort, httpClient, startHttp, textOf, writeConfig } from './helpers.mjs';
import { cliLoggedIn, startAS, startProtected, stopFixtures, webLogin } from './oidc.mjs';

const TOKENS = [
	{ token: 'alice-token-7c1d', subject: 'alice' },
	{ token: 'bob-token-2f9e', subject: 'bob' },
	{ token: 'carol-token-05ab', subject: 'carol' },
];
const bearer = (who) => ({ Authorization: `Bearer ${TOKENS.find((t) => t.subject === who).token}` });

let as, prot, gw, cfg, audit;

// A caller's client: with url: true it takes URL-mode elicitations.
async function client(who, { url = false } = {}) {
	return httpClient(gw.url, {
		headers: bearer(who), name: `peruser-${who}`,
		capabilities: url ? { elicitation: { form: {}, url: {} } } : {},
	});
}

// whoami through the gateway: { ok, sub } or { ok: false, error } (an
// McpError keeps its code and data).
async function whoami(c) {
	try {
		const r = await c.client.callTool({ name: 'up__whoami', arguments: {} });
		if (r.isError) return { ok: false, text: textOf(r) };
		return { ok: true, sub: JSON.parse(textOf(r)).sub };
	} catch (e) {
		return { ok: false, code: e.code, data: e.data, text: String(e.message) };
	}
}

function auditLines() {
	if (!fs.existsSync(audit)) return [];
	return fs.readFileSync(audit, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((l) => l.type === 'call');
}

before(async () => {
	as = await startAS({ SCOPES: 'mcp:tools' });
	prot = await startProtected({ ISSUER: as.issuer });
	const port = await freePort();
	const config = writeConfig({ up: { url: prot.url, oauth: { perUser: true } } }, {
		exposure: 'passthrough', startupTimeoutMs: 5000, logLevel: 'debug',
		http: { publicUrl: `http://127.0.0.1:${port}`, auth: { tokens: TOKENS } },
		oauth: { maxUsers: 2, userIdleSeconds: 10 },
	});
	const state = path.join(path.dirname(config), 'xdg');
	audit = path.join(path.dirname(config), 'audit.jsonl');
	const doc = JSON.parse(fs.readFileSync(config, 'utf8'));
	doc.sluice.audit = { file: audit };
	fs.writeFileSync(config, JSON.stringify(doc));
	cfg = { config, env: { XDG_STATE_HOME: state } };
	await cliLoggedIn(cfg, 'up');
	gw = await startHttp({ configPath: config, listen: `127.0.0.1:${port}`, env: cfg.env });
});

after(async () => {
	await closeAll();
	await gw?.close();
	await stopFixtures();
});

describe('per-user delegation', () => {
	let alice, bob;

	test('a caller without a login of its own gets a login URL as a URL-mode elicitation', async () => {
		alice = await client('alice', { url: true });
		const tools = (await alice.client.listTools()).tools.map((t) => t.name);
		assert.ok(tools.includes('up__whoami'), 'the tools are listed with the gateway\'s login');
		const r = await whoami(alice);
		assert.equal(r.ok, false);
		assert.equal(r.code, -32042, r.text);
		const [el] = r.data.elicitations;
		assert.equal(el.mode, 'url');
		assert.match(el.url, new RegExp(`^${new URL(gw.url).origin}/oauth/login/`));
		assert.equal(el.url.split('/').pop(), el.elicitationId);
		assert.match(el.message, /alice/);
		// Asked again, the same pending login: retries do not pile up.
		const again = await whoami(alice);
		assert.equal(again.data.elicitations[0].url, el.url);
		alice.loginUrl = el.url;
	});

	test('after the login through the gateway, the server sees the caller\'s own token', async () => {
		await webLogin(alice.loginUrl, { user: 'alice-upstream' });
		let r;
		for (let i = 0; i < 50; i++) {
			r = await whoami(alice);
			if (r.ok) break;
			await new Promise((res) => setTimeout(res, 100));
		}
		assert.equal(r.ok, true, r.text);
		assert.equal(r.sub, 'alice-upstream');
	});

	test('another caller never gets that token: its own login URL, in the error text without URL elicitation', async () => {
		bob = await client('bob');
		const r = await whoami(bob);
		assert.equal(r.ok, false);
		const url = /(http:\/\/127\.0\.0\.1:\d+\/oauth\/login\/[A-Za-z0-9_-]+)/.exec(r.text)?.[1];
		assert.ok(url, r.text);
		assert.notEqual(url, alice.loginUrl);
		await webLogin(url, { user: 'bob-upstream' });
		let w;
		for (let i = 0; i < 50; i++) {
			w = await whoami(bob);
			if (w.ok) break;
			await new Promise((res) => setTimeout(res, 100));
		}
		assert.equal(w.sub, 'bob-upstream');
		assert.equal((await whoami(alice)).sub, 'alice-upstream');
	});

	test('audit lines say whose token served each call', async () => {
		const lines = auditLines().filter((l) => l.outcome === 'ok');
		const of = (s) => lines.filter((l) => l.subject === s);
		assert.ok(of('alice').length >= 2 && of('bob').length >= 1, JSON.stringify(lines));
		for (const l of lines)
			assert.equal(l.upstream_token, 'caller');
	});

	test('links are bounded: one user more than sluice.oauth.maxUsers is refused, with the reason', async () => {
		const carol = await client('carol', { url: true });
		const r = await whoami(carol);
		assert.equal(r.ok, false);
		assert.notEqual(r.code, -32042);
		assert.match(r.text, /links for 2 users already \(sluice\.oauth\.maxUsers\)/);
		// The others go on.
		assert.equal((await whoami(bob)).sub, 'bob-upstream');
		// The operator sees the links.
		const st = await (await fetch(`${new URL(gw.url).origin}/status`)).json();
		const up = st.upstreams.find((u) => u.name === 'up');
		assert.deepEqual(up.users, { links: 2, open: 2, awaitingLogin: 0, max: 2 });
	});

	test('a config reload keeps every user\'s link and login, with the new bound', async () => {
		const doc = JSON.parse(fs.readFileSync(cfg.config, 'utf8'));
		doc.sluice.oauth.maxUsers = 3;
		fs.writeFileSync(cfg.config, JSON.stringify(doc));
		process.kill(gw.pid, 'SIGHUP');
		await eventually(async () => {
			const st = await (await fetch(`${new URL(gw.url).origin}/status`)).json();
			return st.upstreams.find((u) => u.name === 'up').users.max === 3;
		}, 5000, 100, 'the reload');
		assert.equal((await whoami(alice)).sub, 'alice-upstream');
		const carol = await client('carol', { url: true });
		const r = await whoami(carol);
		assert.equal(r.code, -32042, r.text);
	});

	test('an idle link is closed (sluice.oauth.userIdleSeconds) and opened again by the next call', async () => {
		const ups = () => (gw.stderr().match(/alice[^\n]*own link is up/g) || []).length;
		const before = ups();
		await eventually(() => /closing alice[^\n]*idle link/.test(gw.stderr()), 20000, 250, 'alice\'s idle link to close');
		assert.equal((await whoami(alice)).sub, 'alice-upstream');
		assert.equal(ups(), before + 1, gw.stderr());
	});
});
