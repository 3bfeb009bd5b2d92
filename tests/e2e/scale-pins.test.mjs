// Pinning's cost follows the catalog's changes, not its requests (issue 35,
// docs/stages/pinning.md "Cost"): one HTTP gateway over 10 servers of 200
// generated tools (and the github fake's own), pinning on. Every definition
// is hashed once when its server's list arrives; tools/list and
// search_tools after that hash nothing; a list change of one server
// (add_tool, tools/list_changed) hashes exactly that server's tools again;
// pins the CLI changes (reset, approve) are seen by the next request and
// cost statuses, not hashes. Counted on GET /metrics
// (sluice_catalog_work_total{kind="pin_hash"}), not timed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { catalog, closeAll, eventually, httpClient, httpRequest, runSluice, startHttp } from './helpers.mjs';

after(closeAll);

const SERVERS = 10;
const PER = 200;
const names = Array.from({ length: SERVERS }, (_, i) => `s${i}`);

let gw, client;

// A counter's value on GET /metrics.
async function metric(name, labels) {
	const r = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/metrics', method: 'GET' });
	assert.equal(r.status, 200, r.text);
	const want = `${name}{${labels}} `;
	const line = r.text.split('\n').find((l) => l.startsWith(want));
	assert.ok(line, `${want} on /metrics`);
	return Number(line.slice(want.length));
}
const pinHashes = () => metric('sluice_catalog_work_total', 'kind="pin_hash"');
const toolsOf = async (server) => metric('sluice_upstream_tools', `server="${server}"`);
const listed = async () => (await client.listTools()).tools.map((t) => t.name);

before(async () => {
	gw = await startHttp({
		servers: Object.fromEntries(names.map((n) => [n, catalog('github', { args: ['--backend', 'github', '--tools', String(PER)] })])),
		sluice: {
			exposure: 'hybrid', // every tool listed, and search_tools
			// A tool the pins do not know stays hidden until approved: what
			// the CLI does below is then visible in the listing.
			pinning: { new: 'block' },
			audit: { enabled: false },
		},
	});
	({ client } = await httpClient(gw.url));
	await eventually(async () => {
		const got = await listed();
		return names.every((n) => got.filter((t) => t.startsWith(`${n}__`)).length > PER);
	}, 15000, 100, 'every server listed');
});

test('every definition is hashed once, when its list arrives; listings and searches hash nothing', async () => {
	let total = 0;
	for (const n of names)
		total += await toolsOf(n);
	assert.ok(total > SERVERS * PER, `${total} tools`);
	const first = await pinHashes();
	assert.equal(first, total, 'each definition hashed exactly once');
	for (let i = 0; i < 3; i++) {
		assert.ok((await listed()).length >= total);
		const r = await client.callTool({ name: 'search_tools', arguments: { query: 'archive the invoices of a customer' } });
		assert.ok(!r.isError, JSON.stringify(r).slice(0, 300));
	}
	assert.equal(await pinHashes(), first, 'no hashing per request');
});

test('a list change of one server hashes only that server\'s tools', async () => {
	const before = await pinHashes();
	const had = await toolsOf('s3');
	const r = await client.callTool({ name: 's3__add_tool', arguments: { name: 'late_arrival' } });
	assert.ok(!r.isError, JSON.stringify(r));
	await eventually(async () => (await toolsOf('s3')) === had + 1, 10000, 50, 's3 lists its new tool');
	await eventually(async () => (await pinHashes()) > before, 5000, 50, 's3 hashed');
	assert.equal(await pinHashes(), before + had + 1, 's3\'s tools, once');
	// New, and sluice.pinning.new is "block": held back.
	assert.ok(!(await listed()).includes('s3__late_arrival'));
	assert.equal(await pinHashes(), before + had + 1, 'and nothing more when listed');
});

test('pins the CLI resets and approves are seen by the next request, without hashing', async () => {
	const before = await pinHashes();
	const tool = (await listed()).find((t) => t.startsWith('s5__') && !t.endsWith('__echo'));
	const own = tool.slice('s5__'.length);
	let out = await runSluice(['pins', 'reset', `s5.${own}`, '--config', gw.configPath]);
	assert.equal(out.code, 0, out.stderr);
	// Forgotten: a tool the pins do not know, held back at once.
	assert.ok(!(await listed()).includes(tool), `${tool} hidden after the reset`);
	out = await runSluice(['pins', 'approve', `s5.${own}`, '--config', gw.configPath]);
	assert.equal(out.code, 0, out.stderr);
	assert.ok((await listed()).includes(tool), `${tool} shown after the approval`);
	assert.equal(await pinHashes(), before, 'statuses judged again, definitions not hashed again');
});
