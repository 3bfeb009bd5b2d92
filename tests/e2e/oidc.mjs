// Fixtures for the OAuth tests against a real authorization server:
// oidc-provider (tests/servers/oidc/server.mjs) and an MCP server that
// requires its tokens (tests/servers/protected/server.mjs), each a child
// process on 127.0.0.1, on a port picked here, stopped by its PID; and a
// person at a browser, played with fetch.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO, SLUICE, freePort, withTimeout } from './helpers.mjs';

// oidc-provider wants a newer Node than some CI images have; the repository
// carries one.
const NODE22 = path.join(REPO, 'node_modules', '.bin', 'node');
const NODE = fs.existsSync(NODE22) ? NODE22 : process.execPath;
const started = new Set();

// Starts a fixture that prints one JSON line when it is ready.
function startFixture(script, env, what) {
	const proc = spawn(NODE, [path.join(REPO, 'tests', 'servers', script)], {
		env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
	});
	started.add(proc);
	proc.once('exit', () => started.delete(proc));
	let out = '', err = '';
	proc.stderr.on('data', (d) => (err += d));
	return new Promise((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`${what} did not start: ${err}`)), 15000);
		proc.stdout.on('data', (d) => {
			out += d;
			const nl = out.indexOf('\n');
			if (nl < 0) return;
			clearTimeout(timer);
			resolve({ ...JSON.parse(out.slice(0, nl)), proc, stderr: () => err, stop: () => stop(proc) });
		});
		proc.once('exit', (code) => {
			clearTimeout(timer);
			reject(new Error(`${what} exited ${code}: ${err}`));
		});
	});
}

function stop(proc) {
	if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
	const gone = new Promise((r) => proc.once('exit', r));
	process.kill(proc.pid, 'SIGKILL');
	return gone;
}

// The authorization server. env: RESOURCE, SCOPE, SCOPES, ACCESS_TTL (see
// the server's header). Returns { issuer, port, keys, proc, stop(),
// counts(), knob(path) } where knob('/_ttl?s=2') calls a test endpoint.
export async function startAS(env = {}) {
	const as = await startFixture(path.join('oidc', 'server.mjs'), env, 'the authorization server');
	as.knob = async (p) => {
		const r = await fetch(`${as.issuer}${p}`);
		assert.equal(r.status, 200, p);
		return r.json();
	};
	as.counts = () => as.knob('/_counts');
	return as;
}

// The MCP server that wants the issuer's tokens. env: ISSUER (required),
// PORT (picked here when absent), BAD_PRM, LIST_SCOPE. Returns { url, port, stats(), stop() }.
export async function startProtected(env) {
	const port = env.PORT ?? (await freePort());
	const p = await startFixture(path.join('protected', 'server.mjs'), { ...env, PORT: String(port) }, 'the protected MCP server');
	p.port = port;
	p.stats = async () => (await fetch(`http://127.0.0.1:${port}/_stats`)).json();
	return p;
}

// Stops every fixture started here (by PID).
export async function stopFixtures() {
	await Promise.all([...started].map(stop));
}

// Plays the person at the browser: follows the authorization URL, submits
// oidc-provider's dev login and consent forms with a cookie jar, and stops
// at the redirect to the client's callback (callbackPath, on another origin
// than the authorization server's: /callback for the CLI's loopback
// listener, /oauth/callback for the gateway's web login). Returns that
// address, unvisited: the caller follows it (to sluice) or pastes it.
export async function browserLogin(authUrl, user, callbackPath = '/callback') {
	const jar = new Map();
	const origin = new URL(authUrl).origin;
	let url = String(authUrl), init = {};
	for (let step = 0; step < 12; step++) {
		const headers = { ...(init.headers || {}), cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') };
		const res = await fetch(url, { ...init, headers, redirect: 'manual', signal: AbortSignal.timeout(5000) });
		for (const c of res.headers.getSetCookie()) {
			const [kv] = c.split(';');
			const i = kv.indexOf('=');
			jar.set(kv.slice(0, i), kv.slice(i + 1));
		}
		const loc = res.headers.get('location');
		if (loc) {
			const next = new URL(loc, url);
			if (next.origin !== origin && next.pathname === callbackPath) return next.href;
			url = next.href;
			init = {};
			continue;
		}
		const html = await res.text();
		assert.equal(res.status, 200, `the interaction page: ${html.slice(0, 300)}`);
		const prompt = /name="prompt" value="(\w+)"/.exec(html)?.[1];
		assert.ok(prompt, `a login or consent form: ${html.slice(0, 300)}`);
		const form = new URLSearchParams({ prompt });
		if (prompt === 'login') {
			form.set('login', user);
			form.set('password', 'anything');
		}
		init = { method: 'POST', body: form.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } };
	}
	throw new Error('the login did not reach the callback');
}

const unescapeHtml = (s) => s.replace(/&(amp|lt|gt|quot|#39);/g, (_, e) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]);

// A browser's cookies for the gateway: what its pages set (name=value; a
// cookie whose Max-Age is 0 is forgotten), sent back to the paths they name.
export function gatewayBrowser() {
	const jar = new Map(); // name -> { value, path }
	const get = async (url) => {
		const u = new URL(url);
		const cookie = [...jar].filter(([, c]) => u.pathname.startsWith(c.path)).map(([k, c]) => `${k}=${c.value}`).join('; ');
		const res = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {}, signal: AbortSignal.timeout(15000) });
		for (const c of res.headers.getSetCookie()) {
			const [kv, ...attrs] = c.split(';').map((x) => x.trim());
			const i = kv.indexOf('=');
			const path = attrs.find((a) => /^path=/i.test(a))?.slice(5) ?? '/';
			if (attrs.some((a) => /^max-age=0$/i.test(a))) jar.delete(kv.slice(0, i));
			else jar.set(kv.slice(0, i), { value: kv.slice(i + 1), path });
		}
		return { status: res.status, headers: res.headers, html: await res.text() };
	};
	return { jar, get };
}

// The gateway's login page in browser (gatewayBrowser()): { page, authUrl },
// authUrl the page's "Continue to" link.
export async function openLoginPage(pageUrl, browser = gatewayBrowser()) {
	const page = await browser.get(pageUrl);
	assert.equal(page.status, 200, `the login page: ${page.html.slice(0, 500)}`);
	const href = /<a href="([^"]+)">Continue to /.exec(page.html)?.[1];
	assert.ok(href, `a "Continue to" link: ${page.html.slice(0, 500)}`);
	return { page, authUrl: unescapeHtml(href) };
}

// The whole web login through the gateway (docs/internals/AUTH.md, "Logging
// in through the gateway"), as a person at a browser: opens the login page
// (<publicUrl>/oauth/login/<id>), follows its "Continue to" link to the
// authorization server, logs in as user and consents, and follows the
// redirect back to <publicUrl>/oauth/callback, in the same browser (its
// cookies for the gateway kept), or in callbackBrowser (another person's,
// to whom the authorization URL was handed). Resolves { page, callback, back }:
// page and callback each { status, headers, html } (page: the login page,
// which names whose login it is; callback: the gateway's last answer), back
// the callback's URL (its code and state).
export async function webLogin(pageUrl, { user = 'alice', callbackBrowser } = {}) {
	const browser = gatewayBrowser();
	const { page, authUrl } = await openLoginPage(pageUrl, browser);
	const back = await browserLogin(authUrl, user, '/oauth/callback');
	assert.equal(new URL(back).origin, new URL(pageUrl).origin, 'back to the gateway');
	return { page, callback: await (callbackBrowser ?? browser).get(back), back };
}

// `sluice auth login NAME` for cfg ({ config, env }: the config file and the
// environment its token store is under): the URL from its stdout goes to the scripted
// browser; the browser's redirect goes to sluice's loopback listener, or,
// headless, is pasted on its stdin (through paste(url), to change it).
export async function cliLogin(cfg, name, { user = 'alice', headless = false, paste = (u) => u, args = [], beforeBrowser } = {}) {
	const env = { ...process.env, ...cfg.env };
	delete env.DISPLAY; // no xdg-open
	delete env.WAYLAND_DISPLAY;
	const proc = spawn(SLUICE, ['auth', 'login', name, '--config', cfg.config, ...(headless ? ['--headless'] : []), ...args],
		{ env, stdio: ['pipe', 'pipe', 'pipe'] });
	let stdout = '', stderr = '';
	proc.stderr.on('data', (d) => (stderr += d));
	const exited = new Promise((r) => proc.once('exit', (code, signal) => r(code ?? signal)));
	const firstLine = new Promise((resolve) => {
		proc.stdout.on('data', (d) => {
			stdout += d;
			if (stdout.includes('\n')) resolve(stdout.split('\n')[0]);
		});
		exited.then(() => resolve(null));
	});
	const out = { stderr: () => stderr, stdout: () => stdout };
	try {
		out.authUrl = await withTimeout(firstLine, 10000, 'the authorization URL');
		if (out.authUrl) {
			if (beforeBrowser) await beforeBrowser(out.authUrl);
			out.back = await browserLogin(out.authUrl, user);
			if (headless) {
				proc.stdin.end(`${paste(out.back)}\n`);
			} else {
				const page = await fetch(out.back, { signal: AbortSignal.timeout(5000) });
				out.page = { status: page.status, length: page.headers.get('content-length'), text: await page.text() };
			}
		}
		out.code = await withTimeout(exited, 15000, 'sluice auth login to end');
	} finally {
		if (proc.exitCode === null && proc.signalCode === null) process.kill(proc.pid, 'SIGKILL');
	}
	return out;
}

// The same, which must succeed: the gateway's own login (user ""), through
// which a perUser server's catalog comes.
export async function cliLoggedIn(cfg, name, user = 'operator') {
	const r = await cliLogin(cfg, name, { user });
	assert.equal(r.code, 0, r.stderr());
	return r;
}
