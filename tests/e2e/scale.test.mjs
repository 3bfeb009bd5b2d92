// 10,000 tools (issue 35): a listing and a search do no per-tool work after the
// first, and a list change of one server redoes that server's part only. Counted,
// not timed: GET /metrics's sluice_catalog_work_total{kind} counts each definition
// hashed for pinning (pin_hash), presented as clients see it (presented), added to
// the search index (indexed), and each listing rendered (listing).
// A hybrid gateway over HTTP (the passthrough listing and search_tools), 49 servers
// of 200 generated tools and the github fake with 177 more (200 with its own and the
// test tools, among them add_tool, which adds one and announces list_changed).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { CATALOG, closeAll, eventually, httpClient, httpRequest, startHttp, textOf } from './helpers.mjs';

after(closeAll);

const PER = 200;
const SERVERS = {};
for (let i = 1; i < 50; i++) {
	const name = `s${String(i).padStart(2, '0')}`;
	SERVERS[name] = { command: CATALOG, args: ['--backend', 'generated', '--tools', String(PER), '--name', name] };
}
SERVERS.gh = { command: CATALOG, args: ['--backend', 'github', '--tools', '177'] };
const KINDS = ['pin_hash', 'presented', 'listing', 'indexed'];

describe('10,000 tools: work per catalog change, not per request', () => {
	let gw, client, total;

	const work = async () => {
		const r = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/metrics', method: 'GET' });
		assert.equal(r.status, 200, r.text);
		return Object.fromEntries(KINDS.map((k) => {
			const m = new RegExp(`^sluice_catalog_work_total\\{kind="${k}"\\} (\\d+)$`, 'm').exec(r.text);
			return [k, m ? Number(m[1]) : 0];
		}));
	};
	const delta = (a, b) => Object.fromEntries(KINDS.map((k) => [k, b[k] - a[k]]));
	const upstream = async () => (await client.listTools()).tools.filter((t) => t.name.includes('__'));
	const search = async (query) => textOf(await client.callTool({ name: 'search_tools', arguments: { query } }));

	before(async () => {
		gw = await startHttp({ servers: SERVERS, sluice: { exposure: 'hybrid' } });
		client = (await httpClient(gw.url)).client;
		await eventually(async () => (total = (await upstream()).length) >= 50 * PER, 30000, 200,
			'every server listed');
	});

	test('the catalog is 10,000 tools, each hashed, presented and indexed once', async () => {
		assert.equal(total, 10000);
		assert.match(await search('archive an invoice'), /^tools\.(s\d\d|gh)\.archive_invoice_\d+\(args: /m);
		const w = await work();
		// Each tool once (a server listed early may have been listed again as it came up:
		// never fewer than the catalog, never a multiple of it).
		for (const k of ['pin_hash', 'presented', 'indexed'])
			assert.ok(w[k] >= total && w[k] < 1.5 * total, `${k}: ${w[k]} for ${total} tools`);
	});

	test('more listings and searches hash, present, render and index nothing', async () => {
		const before0 = await work();
		for (let i = 0; i < 3; i++) {
			assert.equal((await upstream()).length, total);
			await search('rotate the secret of a webhook');
			await search(`restore a deleted order ${i}`);
		}
		assert.deepEqual(delta(before0, await work()), { pin_hash: 0, presented: 0, listing: 0, indexed: 0 });
	});

	test('a list change of one server redoes that server\'s part, no other\'s', async () => {
		const before0 = await work();
		const added = await client.callTool({ name: 'gh__add_tool', arguments: { name: 'scale_probe' } });
		assert.ok(!added.isError, textOf(added));
		await eventually(async () => (await upstream()).length === total + 1, 20000, 100, 'the new tool listed');
		assert.match(await search('scale probe'), /gh\.scale_probe/);
		const d = delta(before0, await work());
		// The github server's 201 tools, once for each kind; the other 9,800 not at all.
		assert.equal(d.pin_hash, PER + 1, JSON.stringify(d));
		assert.equal(d.presented, PER + 1, JSON.stringify(d));
		assert.equal(d.indexed, PER + 1, JSON.stringify(d));
		assert.ok(d.listing >= 1 && d.listing <= 3, `listings rendered again: ${d.listing}`);
	});
});
