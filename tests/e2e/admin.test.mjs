// The admin page (docs/ADMIN.md) in headless Chromium (Debian's, driven by
// playwright-core): it shows upstreams, sessions and the audit tail; a
// click approves a changed pin and the tool comes back for an MCP client;
// what servers wrote is shown as text and never runs; a POST from another
// origin, or without the page's token, is refused and changes nothing.
// SLUICE_ADMIN_SCREENSHOT=1 also writes docs/admin.png (the README's).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { REPO, writeConfig, startHttp, httpClient, httpRequest, closeAll, tinyServer, textOf, eventually } from './helpers.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const serverFile = path.join(REPO, 'tests', 'servers', 'pinme', 'server.cjs');
const work = mkdtempSync(path.join(os.tmpdir(), 'sluice-admin-'));
const stateDir = path.join(work, 'state');
const auditFile = path.join(work, 'audit.jsonl');
const pinsFile = path.join(stateDir, 'pins.json');

let browser;
const clients = [];
after(async () => {
	await Promise.allSettled(clients.map((c) => c.client.close()));
	await browser?.close();
	await closeAll();
	rmSync(work, { recursive: true, force: true });
});

const HARMLESS = 'Says hello.';
// What a rug pull could put in a description, aimed at the page itself:
// markup that would run, a quote to leave an attribute, and a
// right-to-left override that would reverse what follows it on screen.
const HOSTILE =
	'Says hello. <script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> "quoted\' \u202Eevil.example';
// A tool whose very name is markup, from a second server.
const EVIL_NAME = '<img src=x onerror=alert(1)>';

function config(desc) {
	const evil = tinyServer({
		name: 'evil',
		tools: `[{ name: ${JSON.stringify(EVIL_NAME)}, description: '<script>alert(2)</script>', inputSchema: { type: 'object' } }]`,
		call: `(p, ok) => ok({ content: [{ type: 'text', text: 'x' }] })`,
	});
	return writeConfig(
		{ pin: { command: process.execPath, args: [serverFile], env: { TOOL_DESC: desc } }, evil },
		{ pinning: { stateDir }, audit: { file: auditFile } },
	);
}

const pinNames = async (client) =>
	(await client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith('pin__')).sort();

// The token of the page's forms, as a person's browser gets it.
async function csrfOf(gw) {
	const r = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/admin', method: 'GET' });
	assert.equal(r.status, 200);
	const m = /name=csrf value="([0-9a-f]{64})"/.exec(r.text);
	assert.ok(m, 'the page carries a CSRF token');
	return m[1];
}

const hex = (s) => Buffer.from(s, 'utf8').toString('hex');
function postForm(gw, fields, headers = {}) {
	return httpRequest(
		{
			host: '127.0.0.1',
			port: gw.port,
			path: '/admin',
			method: 'POST',
			headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
		},
		new URLSearchParams(fields).toString(),
	);
}

let gw;
let mcp;

test('a pinned tool whose definition changed is hidden from clients', { timeout: 60000 }, async () => {
	const first = await startHttp({ configPath: config(HARMLESS) });
	const c1 = await httpClient(first.url);
	assert.deepEqual(await pinNames(c1.client), ['pin__greet', 'pin__stable']);
	await c1.client.close();
	await first.close();
	assert.ok(existsSync(pinsFile));

	gw = await startHttp({ configPath: config(HOSTILE) });
	mcp = await httpClient(gw.url);
	clients.push(mcp);
	assert.deepEqual(await pinNames(mcp.client), ['pin__stable']);
	// An audit line to see on the page.
	assert.equal(textOf(await mcp.client.callTool({ name: 'pin__stable', arguments: {} })), 'called stable');
});

test('the page shows upstreams, sessions and the audit tail; approving by a click brings the tool back', { timeout: 90000 }, async () => {
	assert.ok(gw, 'the gateway of the first test runs');
	browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
	const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
	// Anything a script did, tried, or the CSP blocked would show here.
	const seen = [];
	// (The browser's own request for /favicon.ico gets 404: not the page's.)
	page.on('console', (m) => {
		if (!m.location().url?.endsWith('/favicon.ico')) seen.push(`console ${m.type()}: ${m.text()} ${m.location().url}`);
	});
	page.on('dialog', (d) => {
		seen.push(`dialog: ${d.message()}`);
		d.dismiss();
	});
	page.on('pageerror', (e) => seen.push(`pageerror: ${e.message}`));
	page.on('request', (r) => {
		if (!r.url().endsWith('/admin')) seen.push(`request: ${r.url()}`);
	});

	const base = gw.url.replace(/\/mcp$/, '');
	const res = await page.goto(`${base}/admin`);
	assert.equal(res.status(), 200);
	const h = res.headers();
	assert.match(h['content-security-policy'], /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; form-action 'self'; frame-ancestors 'none'/);
	assert.equal(h['x-frame-options'], 'DENY');
	assert.equal(h['referrer-policy'], 'same-origin');
	assert.equal(h['cache-control'], 'no-store');

	// Upstreams and their states.
	const ups = page.locator('#upstreams + table');
	assert.match(await ups.locator('tr', { hasText: /^pin/ }).innerText(), /pin\s+ready\s+2/);
	assert.match(await ups.locator('tr', { hasText: 'evil' }).innerText(), /ready/);
	// The MCP client's session.
	const sessions = page.locator('#sessions ~ table').first();
	assert.ok((await sessions.locator('tr').count()) >= 2, await sessions.innerText());
	assert.match(await sessions.innerText(), /2025-11-25|2025-06-18/);
	// The audit tail has the call made above.
	const audit = await page.locator('#audit ~ pre').innerText();
	assert.match(audit, /"type":"call".*"tool":"stable"/);

	// What the servers wrote is text: the markup is shown, nothing of it
	// exists as elements, nothing ran, and the bidi override is visible.
	const greet = page.locator('#pins + p + table tr', { hasText: 'greet' });
	const row = await greet.innerText();
	assert.match(row, /changed \(hidden\)/);
	assert.ok(row.includes('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'), row);
	assert.ok(row.includes('\\u202eevil.example'), row);
	assert.ok(!row.includes('\u202E'), 'no raw bidi override reaches the page');
	assert.match(row, /pinned: Says hello\./);
	const evilRow = await page.locator('#pins + p + table tr', { hasText: EVIL_NAME }).innerText();
	assert.match(evilRow, /^evil\t/, evilRow);
	assert.equal(await page.locator('script').count(), 0);
	assert.equal(await page.locator('img').count(), 0);
	assert.equal(await page.evaluate(() => window.__pwned), undefined);

	if (process.env.SLUICE_ADMIN_SCREENSHOT) {
		const file = path.join(REPO, 'docs', 'admin.png');
		await page.screenshot({ path: file, fullPage: false });
		assert.ok(readFileSync(file).length < 150 * 1024, 'docs/admin.png stays small');
	}

	// The click: a form POST with the page's token, from the page's origin.
	await Promise.all([page.waitForNavigation(), greet.getByRole('button', { name: 'Approve' }).click()]);
	assert.match(await page.locator('.note').innerText(), /^approved pin\.greet \(sha256:[0-9a-f]{12}\)$/);
	assert.match(await page.locator('#pins + p + table tr', { hasText: 'greet' }).innerText(), /pinned/);
	assert.deepEqual(seen, [], seen.join('\n'));

	// The client sees the tool again, and can call it.
	await eventually(async () => (await pinNames(mcp.client)).join() === 'pin__greet,pin__stable', 10000, 100, 'pin__greet to be listed');
	assert.equal(textOf(await mcp.client.callTool({ name: 'pin__greet', arguments: {} })), 'called greet');
	// The pin is the new definition, and the action is in the audit log.
	const pins = JSON.parse(readFileSync(pinsFile, 'utf8')).servers;
	const key = Object.keys(pins).find((k) => k.startsWith('pin#'));
	// (Pinned as clients see it: the bidi override stripped, pinning.md.)
	assert.equal(pins[key].greet.definition.description, HOSTILE.replace('\u202E', ''));
	const lines = readFileSync(auditFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
	const admin = lines.filter((l) => l.type === 'admin');
	assert.equal(admin.length, 1);
	assert.equal(admin[0].action, 'pins.approve');
	assert.equal(admin[0].server, 'pin');
	assert.equal(admin[0].tool, 'greet');
	assert.equal(admin[0].outcome, 'ok');
	assert.equal(admin[0].peer, '127.0.0.1');
	await page.close();
});

test('a POST from another origin or without the token is refused and changes nothing', { timeout: 60000 }, async () => {
	assert.ok(gw, 'the gateway of the first test runs');
	const token = await csrfOf(gw);
	const self = `http://127.0.0.1:${gw.port}`;
	const reset = { action: 'reset', server: hex('pin'), tool: hex('stable') };
	const pinsBefore = readFileSync(pinsFile);
	const auditBefore = readFileSync(auditFile);

	const refused = [
		// Another site's page: refused by the Origin check of every request.
		[{ ...reset, csrf: token }, { origin: 'http://evil.example' }],
		// Another server on this host (allowed for MCP, not for /admin).
		[{ ...reset, csrf: token }, { origin: 'http://127.0.0.1:1' }],
		[{ ...reset, csrf: token }, { 'sec-fetch-site': 'cross-site' }],
		[{ ...reset, csrf: token }, {}],
		// The right origin, but no token, or another one.
		[reset, { origin: self }],
		[{ ...reset, csrf: '0'.repeat(64) }, { origin: self }],
		[{ ...reset, csrf: token.slice(0, 63) }, { origin: self }],
	];
	for (const [fields, headers] of refused) {
		const r = await postForm(gw, fields, headers);
		assert.equal(r.status, 403, `${JSON.stringify(headers)} ${Object.keys(fields)}: ${r.text}`);
	}
	// GET never acts, whatever it carries.
	const g = await httpRequest({ host: '127.0.0.1', port: gw.port, path: `/admin?${new URLSearchParams({ ...reset, csrf: token })}`, method: 'GET' });
	assert.equal(g.status, 200);
	assert.deepEqual(readFileSync(pinsFile), pinsBefore, 'no pin changed');
	assert.deepEqual(readFileSync(auditFile), auditBefore, 'no action was carried out');
	assert.deepEqual(await pinNames(mcp.client), ['pin__greet', 'pin__stable']);

	// The same form with the token and the page's own origin is carried out
	// (so the refusals above were the checks, not a broken form).
	const ok = await postForm(gw, { ...reset, csrf: token }, { origin: self });
	assert.equal(ok.status, 200, ok.text);
	assert.match(ok.text, /forgot the pin of pin\.stable/);
	const pins = JSON.parse(readFileSync(pinsFile, 'utf8')).servers;
	const key = Object.keys(pins).find((k) => k.startsWith('pin#'));
	assert.deepEqual(Object.keys(pins[key]), ['greet']);
	// An approval of a definition the page did not show is refused.
	const stale = await postForm(gw, { action: 'approve', server: hex('pin'), tool: hex('greet'), sha: '0'.repeat(64), csrf: token }, { origin: self });
	assert.equal(stale.status, 409);
	assert.match(stale.text, /changed since the page showed it/);
	const admin = readFileSync(auditFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.type === 'admin');
	assert.deepEqual(admin.slice(-2).map((l) => [l.action, l.tool, l.outcome]), [
		['pins.reset', 'stable', 'ok'],
		['pins.approve', 'greet', 'refused'],
	]);
});

test('a call waiting for its client\'s confirmation is listed, with no button', { timeout: 60000 }, async () => {
	const cfg = writeConfig(
		{ pin: { command: process.execPath, args: [serverFile] } },
		{ policy: { rules: [{ match: 'pin.stable', action: 'confirm' }] }, audit: { file: path.join(work, 'audit2.jsonl') } },
	);
	const gw2 = await startHttp({ configPath: cfg });
	const releases = [];
	const c = await httpClient(gw2.url, {
		capabilities: { elicitation: {} },
		handlers: [[ElicitRequestSchema, () => new Promise((r) => releases.push(r))]],
	});
	clients.push(c);
	const call = c.client.callTool({ name: 'pin__stable', arguments: {} });
	await eventually(() => releases.length === 1, 10000, 100, 'the confirmation question');
	const page = await httpRequest({ host: '127.0.0.1', port: gw2.port, path: '/admin', method: 'GET' });
	const section = page.text.split('<h2 id=confirmations>')[1].split('<h2')[0];
	assert.match(section, /<tr><td>pin<\/td><td>stable<\/td><td>\d+<\/td><td>\d+ s<\/td><td>rule 1 \(match &quot;pin\.stable&quot;\)<\/td><\/tr>/);
	assert.doesNotMatch(section, /<form|<button/);
	releases[0]({ action: 'decline' });
	const r = await call;
	assert.equal(r.isError, true);
	assert.match(textOf(r), /the user declined/);
	// Answered: no longer listed.
	const after = await httpRequest({ host: '127.0.0.1', port: gw2.port, path: '/admin', method: 'GET' });
	assert.doesNotMatch(after.text.split('<h2 id=confirmations>')[1].split('<h2')[0], /<td>stable<\/td>/);
	await gw2.close();
});
