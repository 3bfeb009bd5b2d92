// tools/list at scale (docs/internals/LISTING.md): each definition is
// presented once per server list, each view's listing rendered once, both
// counted by sluice_catalog_work_total on GET /metrics; a list change of one
// server redoes that server's definitions only; two callers whose policy
// shows them different tools get their own listings; and with
// sluice.limits.toolsPageSize the listing comes in pages with MCP cursors,
// every tool once, a bad, tampered, foreign or stale cursor refused with
// -32602. Over HTTP, with generated servers and the github fake grown by
// 200 tools (its add_tool announces tools/list_changed).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';

import { CATALOG, closeAll, eventually, httpClient, httpRequest, startHttp, textOf } from './helpers.mjs';

after(closeAll);

const TOKENS = [
	{ token: 'alice-token-4d1f', subject: 'alice', groups: ['sre'] },
	{ token: 'bob-token-8a2c', subject: 'bob' },
];
// Only group sre sees (and merges) merge_* tools.
const POLICY = {
	rules: [
		{ match: '*.merge_*', who: ['group:sre'], action: 'allow' },
		{ match: '*.merge_*', action: 'deny' },
	],
};
const generated = (name, tools) => ({ command: CATALOG, args: ['--backend', 'generated', '--tools', String(tools), '--name', name] });
const SERVERS = {
	s01: generated('s01', 60),
	s02: generated('s02', 60),
	s03: generated('s03', 60),
	github: { command: CATALOG, args: ['--backend', 'github', '--tools', '200'] },
};
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const bearer = (t) => ({ Authorization: `Bearer ${t.token}` });

async function work(gw) {
	const r = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/metrics', method: 'GET' });
	assert.equal(r.status, 200, r.text);
	const out = {};
	for (const m of r.text.matchAll(/^sluice_catalog_work_total\{kind="(\w+)"\} (\d+)$/gm))
		out[m[1]] = Number(m[2]);
	assert.ok('presented' in out && 'listing' in out, r.text);
	return out;
}

// Every page of a listing, following nextCursor (bounded).
async function allPages(client) {
	const pages = [];
	let cursor;
	for (let i = 0; i < 100; i++) {
		const r = await client.listTools(cursor ? { cursor } : {});
		pages.push(r);
		if (!r.nextCursor)
			return pages;
		cursor = r.nextCursor;
	}
	throw new Error('more than 100 pages');
}

const names = (tools) => tools.map((t) => t.name);

describe('tools/list at scale', () => {
	let gw, paged;
	const as = {}, pagedAs = {};

	before(async () => {
		const sluice = (limits) => ({ policy: POLICY, http: { auth: { tokens: TOKENS } }, limits });
		[gw, paged] = await Promise.all([
			startHttp({ servers: SERVERS, sluice: sluice({}) }),
			startHttp({ servers: SERVERS, sluice: sluice({ toolsPageSize: 37 }) }),
		]);
		for (const t of TOKENS) {
			as[t.subject] = (await httpClient(gw.url, { headers: bearer(t) })).client;
			pagedAs[t.subject] = (await httpClient(paged.url, { headers: bearer(t) })).client;
		}
		// Every server up: 3 x 60 generated, github's own and 200 more.
		const ready = (tools) => ['s01__', 's02__', 's03__'].every((p) => tools.filter((n) => n.startsWith(p)).length === 60) &&
			tools.filter((n) => n.startsWith('github__')).length > 200;
		await eventually(async () => ready(names((await as.alice.listTools()).tools)), 20000, 100, 'every server listed');
		await eventually(async () => ready((await allPages(pagedAs.alice)).flatMap((p) => names(p.tools))), 20000, 100,
			'every server listed (paged)');
	});

	test('a repeated tools/list presents and renders nothing again', async () => {
		const first = (await as.alice.listTools()).tools;
		const before = await work(gw);
		// The first listings did the work, counted: every tool listed was
		// presented, and a listing rendered.
		const servers = first.filter((t) => /^(s0\d|github)__/.test(t.name)).length;
		assert.ok(before.presented >= servers, `presented ${before.presented} of ${servers}`);
		assert.ok(before.listing >= 1);
		for (let i = 0; i < 5; i++)
			assert.deepEqual((await as.alice.listTools()).tools, first);
		const after = await work(gw);
		assert.equal(after.presented, before.presented, 'no definition presented again');
		assert.equal(after.listing, before.listing, 'no listing rendered again');
		assert.ok(first.length > 380, `${first.length} tools`);
		for (const t of first)
			assert.equal(typeof t.inputSchema, 'object', t.name);
	});

	test('callers who may see different tools get their own listings, never each other\'s', async () => {
		const before = await work(gw);
		// bob first, then alice, then bob again: a listing kept for one is
		// never the other's.
		const bob1 = names((await as.bob.listTools()).tools);
		const alice = names((await as.alice.listTools()).tools);
		const bob2 = names((await as.bob.listTools()).tools);
		assert.ok(alice.includes('github__merge_pull_request'), 'alice (group sre) sees merges');
		assert.ok(!bob1.includes('github__merge_pull_request'), 'bob does not');
		assert.deepEqual(bob2, bob1);
		assert.deepEqual(bob1, alice.filter((n) => !/__merge_/.test(n)), 'bob sees all but the merges');
		const after = await work(gw);
		// bob's view is rendered once (alice's was kept); his tools were all
		// presented for alice already.
		assert.equal(after.listing - before.listing, 1, 'one new listing: bob\'s');
		assert.equal(after.presented, before.presented);
	});

	test('a list change of one server presents that server\'s tools again, no other\'s', async () => {
		await as.alice.listTools();
		const before = await work(gw);
		const r = await as.alice.callTool({ name: 'github__add_tool', arguments: { name: 'fresh_one' } });
		assert.ok(!r.isError, textOf(r));
		let listed;
		await eventually(async () => {
			listed = names((await as.alice.listTools()).tools);
			return listed.includes('github__fresh_one');
		}, 10000, 50, 'the new tool listed');
		await as.bob.listTools();
		const after = await work(gw);
		assert.equal(after.presented - before.presented, listed.filter((n) => n.startsWith('github__')).length,
			'exactly the github server\'s tools (with the new one) were presented again');
		assert.ok(after.listing - before.listing >= 2, 'alice\'s and bob\'s listings rendered anew');
	});

	test('an older client gets its own listing, without the fields its version lacks', async () => {
		const post = (headers, body) => httpRequest({ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST',
			headers: { ...bearer(TOKENS[0]), ...headers } }, body);
		const init = await post({}, { jsonrpc: '2.0', id: 1, method: 'initialize',
			params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'old', version: '1' } } });
		assert.equal(init.status, 200, init.text);
		assert.equal(init.json.result.protocolVersion, '2025-03-26');
		const session = { 'mcp-session-id': init.headers['mcp-session-id'], 'mcp-protocol-version': '2025-03-26' };
		assert.equal((await post(session, { jsonrpc: '2.0', method: 'notifications/initialized' })).status, 202);
		const current = (await as.alice.listTools()).tools;
		assert.ok(current.some((t) => t.title || t.outputSchema), 'a 2025-11-25 client sees titles and output schemas');
		assert.ok(current.some((t) => t.name === 'github__echo'));
		const before = await work(gw);
		for (let i = 0; i < 2; i++) {
			const old = await post(session, { jsonrpc: '2.0', id: 2 + i, method: 'tools/list', params: {} });
			assert.equal(old.status, 200, old.text);
			const tools = old.json.result.tools;
			assert.deepEqual(names(tools), names(current), 'the same tools');
			for (const t of tools)
				assert.ok(!('title' in t) && !('outputSchema' in t) && !('icons' in t), JSON.stringify(t));
			assert.deepEqual(tools.find((t) => t.name === 'github__echo')?.inputSchema,
				current.find((t) => t.name === 'github__echo')?.inputSchema);
		}
		const after = await work(gw);
		assert.equal(after.listing - before.listing, 1, 'one listing for the older version, then kept');
		assert.deepEqual((await as.alice.listTools()).tools, current, 'the current client\'s listing is unchanged');
	});

	test('pages: every tool exactly once, in the unpaged order', async () => {
		for (const who of ['alice', 'bob']) {
			const pages = await allPages(pagedAs[who]);
			const all = pages.flatMap((p) => names(p.tools));
			const whole = names((await as[who].listTools()).tools).filter((n) => n !== 'github__fresh_one');
			assert.ok(pages.length > 10, `${pages.length} pages`);
			for (const p of pages.slice(0, -1))
				assert.equal(p.tools.length, 37);
			assert.equal(new Set(all).size, all.length, 'no tool twice');
			assert.deepEqual(all, whole, `${who}: the same tools as one unpaged listing`);
		}
		// A 2026-07-28 request (no session): the same first page, sealed for its era.
		const modern = await httpRequest({ host: '127.0.0.1', port: paged.port, path: '/mcp', method: 'POST',
			headers: { ...bearer(TOKENS[0]), 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' } },
			{ jsonrpc: '2.0', id: 8, method: 'tools/list', params: { _meta: META } });
		assert.equal(modern.status, 200, modern.text);
		assert.equal(modern.json.result.resultType, 'complete');
		assert.equal(modern.json.result.cacheScope, 'private');
		assert.deepEqual(names(modern.json.result.tools), names((await pagedAs.alice.listTools()).tools));
		assert.equal(typeof modern.json.result.nextCursor, 'string');
	});

	test('a bad, tampered, foreign or stale cursor gets -32602', async () => {
		const refuses = async (client, cursor, what) => {
			await assert.rejects(client.listTools({ cursor }), (e) => {
				assert.equal(e.code, -32602, `${what}: ${e.message}`);
				return true;
			}, what);
		};
		const first = await pagedAs.alice.listTools();
		const cursor = first.nextCursor;
		assert.equal(typeof cursor, 'string');
		await refuses(pagedAs.alice, 'garbage', 'not a cursor');
		await refuses(pagedAs.alice, '', 'empty');
		await refuses(pagedAs.alice, cursor + '0', 'too long');
		const flipped = cursor.slice(0, 3) + (cursor[3] === '0' ? '1' : '0') + cursor.slice(4);
		await refuses(pagedAs.alice, flipped, 'another offset, same tag');
		await refuses(pagedAs.alice, cursor.toUpperCase(), 'upper case');
		await refuses(pagedAs.bob, cursor, 'alice\'s cursor used by bob');
		// A cursor is not a string: -32602 too, and the gateway still answers.
		const raw = await httpRequest({ host: '127.0.0.1', port: paged.port, path: '/mcp', method: 'POST',
			headers: { ...bearer(TOKENS[0]), 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' } },
			{ jsonrpc: '2.0', id: 7, method: 'tools/list', params: { cursor: 12, _meta: META } });
		assert.equal(raw.json?.error?.code, -32602, raw.text);
		// The cursor still works for its own caller...
		const second = await pagedAs.alice.listTools({ cursor });
		assert.equal(second.tools.length, 37);
		// ...until the listing changes under it.
		const r = await pagedAs.alice.callTool({ name: 'github__add_tool', arguments: { name: 'late_one' } });
		assert.ok(!r.isError, textOf(r));
		await eventually(async () => (await allPages(pagedAs.alice)).some((p) => names(p.tools).includes('github__late_one')),
			10000, 50, 'the new tool listed');
		await refuses(pagedAs.alice, cursor, 'stale');
	});

	test('a listing over maxListingBytes is rendered for each request and never kept', async () => {
		// 2,000 generated tools write about 1.5 MiB: over the smallest bound (1 MiB).
		const tight = await startHttp({ servers: { big: generated('big', 2000) }, sluice: { limits: { maxListingBytes: 1048576 } } });
		try {
			const client = (await httpClient(tight.url)).client;
			const big = (r) => r.tools.filter((t) => t.name.startsWith('big__')).length;
			await eventually(async () => big(await client.listTools()) === 2000, 20000, 100, 'the big server listed');
			const before = await work(tight);
			const a = await client.listTools(), b = await client.listTools();
			assert.equal(big(a), 2000);
			assert.deepEqual(b, a);
			const after = await work(tight);
			assert.equal(after.listing - before.listing, 2, 'rendered for each request');
			assert.equal(after.presented, before.presented, 'the definitions are kept all the same');
		} finally {
			await tight.close();
		}
	});

	test('a reload that changes who sees what renders anew, and presents nothing again', async () => {
		const before = await work(gw);
		assert.ok(!names((await as.bob.listTools()).tools).includes('github__merge_pull_request'));
		// The policy now lets everyone merge; pinning's section is unchanged.
		const cfg = JSON.parse(readFileSync(gw.configPath, 'utf8'));
		cfg.sluice.policy = { rules: [] };
		writeFileSync(gw.configPath, JSON.stringify(cfg));
		gw.proc.kill('SIGHUP');
		await eventually(async () => names((await as.bob.listTools()).tools).includes('github__merge_pull_request'),
			10000, 100, 'bob sees merges after the reload');
		const bob = names((await as.bob.listTools()).tools), alice = names((await as.alice.listTools()).tools);
		assert.deepEqual(bob, alice, 'one policy for both: the same tools');
		const after = await work(gw);
		assert.equal(after.presented, before.presented, 'the definitions were kept across the reload');
		assert.ok(after.listing > before.listing, 'the listings were rendered anew');
	});
});
