// Resources, resource templates, prompts and completion through the gateway.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

import { connect, startRaw, catalog, everything, closeAll, textOf, modernMeta, NAME_RE } from './helpers.mjs';

after(closeAll);

const PREFIX = 'sluice://everything/';
let gw;
before(async () => {
	gw = await connect({ servers: { github: catalog('github'), everything: everything() } });
});
after(() => gw?.close());

describe('resources', () => {
	let resources;
	before(async () => {
		resources = (await gw.client.listResources()).resources;
	});

	test('resources/list: URIs are prefixed sluice://<server>/', () => {
		const ev = resources.filter((r) => r.uri.startsWith(PREFIX));
		assert.ok(ev.length >= 7, `everything resources: ${ev.length}`);
		assert.ok(ev.some((r) => r.uri === `${PREFIX}demo://resource/static/document/architecture.md`));
		assert.ok(resources.some((r) => r.uri.startsWith('sluice://github/')));
		for (const r of resources) assert.match(r.uri, /^sluice:\/\/(github|everything)\//);
		// The rest of the entry is unchanged.
		const arch = ev.find((r) => r.uri.endsWith('architecture.md'));
		assert.equal(arch.name, 'architecture.md');
		assert.equal(arch.mimeType, 'text/markdown');
	});

	test('resources/read of a listed resource returns its contents under the same URI', async () => {
		const uri = `${PREFIX}demo://resource/static/document/architecture.md`;
		const r = await gw.client.readResource({ uri });
		assert.equal(r.contents.length, 1);
		assert.equal(r.contents[0].uri, uri);
		assert.match(r.contents[0].text, /Architecture/);
	});

	test('resources/read of a catalog resource (text and blob)', async () => {
		const readme = resources.find((r) => r.uri.startsWith('sluice://github/') && r.name === 'readme');
		assert.ok(readme, 'github readme listed');
		const r = await gw.client.readResource({ uri: readme.uri });
		assert.equal(r.contents[0].uri, readme.uri);
		assert.ok(r.contents[0].text.length > 0);
		const logo = resources.find((x) => x.uri.startsWith('sluice://github/') && x.mimeType === 'image/png');
		if (logo) {
			const b = await gw.client.readResource({ uri: logo.uri });
			assert.ok(b.contents[0].blob.length > 0);
		}
	});

	test('resource templates are prefixed and can be read through', async () => {
		const { resourceTemplates } = await gw.client.listResourceTemplates();
		const t = resourceTemplates.find((x) => x.uriTemplate === `${PREFIX}demo://resource/dynamic/text/{resourceId}`);
		assert.ok(t, JSON.stringify(resourceTemplates.map((x) => x.uriTemplate)));
		const r = await gw.client.readResource({ uri: `${PREFIX}demo://resource/dynamic/text/3` });
		assert.equal(r.contents[0].uri, `${PREFIX}demo://resource/dynamic/text/3`);
		assert.match(r.contents[0].text, /Resource 3/);
	});

	test('unknown resources: an error, from the gateway or from the server', async () => {
		await assert.rejects(gw.client.readResource({ uri: 'sluice://nosuch/x' }), (e) => e instanceof McpError);
		await assert.rejects(gw.client.readResource({ uri: 'demo://resource/static/document/architecture.md' }), (e) => e instanceof McpError);
		await assert.rejects(gw.client.readResource({ uri: `${PREFIX}demo://nope/1` }), (e) => e instanceof McpError && e.code === -32602);
	});

	// SEP-2164 (conformance sep-2164-resource-not-found, data.uri): the
	// error names the URI as the client asked for it, the gateway's own
	// error as the server's.
	test('an unknown resource\'s error names its URI in data.uri', async () => {
		for (const uri of ['sluice://nosuch/x', `${PREFIX}demo://nope/1`])
			await assert.rejects(gw.client.readResource({ uri }), (e) => e instanceof McpError && e.data?.uri === uri);
	});

	test('a resource_link returned by a tool can be read through the gateway', async () => {
		const r = await gw.client.callTool({ name: 'everything__get-resource-links', arguments: { count: 2 } });
		const links = r.content.filter((c) => c.type === 'resource_link');
		assert.equal(links.length, 2);
		for (const link of links) {
			const read = await gw.client.readResource({ uri: link.uri }).catch((e) => e);
			assert.ok(!(read instanceof Error), `resource_link ${link.uri} cannot be read: ${read.message}`);
			assert.ok(read.contents.length > 0);
		}
	});
});

describe('prompts and completion', () => {
	test('prompts/list names are server__prompt', async () => {
		const { prompts } = await gw.client.listPrompts();
		const n = prompts.map((p) => p.name);
		for (const p of ['simple-prompt', 'args-prompt', 'completable-prompt', 'resource-prompt'])
			assert.ok(n.includes(`everything__${p}`), p);
		assert.ok(n.some((x) => x.startsWith('github__')));
		for (const name of n) assert.match(name, NAME_RE);
		assert.equal(new Set(n).size, n.length);
		const args = prompts.find((p) => p.name === 'everything__args-prompt');
		assert.deepEqual(args.arguments.map((a) => a.name).sort(), ['city', 'state']);
	});

	test('prompts/get with arguments', async () => {
		const r = await gw.client.getPrompt({ name: 'everything__args-prompt', arguments: { city: 'Paris', state: 'TX' } });
		assert.match(JSON.stringify(r.messages), /Paris, TX/);
		const s = await gw.client.getPrompt({ name: 'everything__simple-prompt' });
		assert.ok(s.messages.length > 0);
		const g = await gw.client.getPrompt({ name: 'github__summarize', arguments: { topic: 'open issues' } });
		assert.match(JSON.stringify(g.messages), /open issues/);
	});

	test('prompts/get of an unknown prompt -> -32602', async () => {
		await assert.rejects(gw.client.getPrompt({ name: 'everything__nope' }), (e) => e instanceof McpError && e.code === -32602);
	});

	test('completion/complete for a prompt argument', async () => {
		const r = await gw.client.complete({
			ref: { type: 'ref/prompt', name: 'everything__completable-prompt' },
			argument: { name: 'department', value: 'En' },
		});
		assert.deepEqual(r.completion.values, ['Engineering']);
		const all = await gw.client.complete({
			ref: { type: 'ref/prompt', name: 'everything__completable-prompt' },
			argument: { name: 'department', value: '' },
		});
		assert.deepEqual(all.completion.values.sort(), ['Engineering', 'Marketing', 'Sales', 'Support']);
	});

	test('completion/complete for a resource template argument', async () => {
		const r = await gw.client.complete({
			ref: { type: 'ref/resource', uri: `${PREFIX}demo://resource/dynamic/text/{resourceId}` },
			argument: { name: 'resourceId', value: '1' },
		});
		assert.deepEqual(r.completion.values, ['1']);
	});

	test('completion/complete for an unknown prompt -> -32602', async () => {
		await assert.rejects(
			gw.client.complete({ ref: { type: 'ref/prompt', name: 'nope__nope' }, argument: { name: 'x', value: '' } }),
			(e) => e instanceof McpError && e.code === -32602,
		);
	});
});

test('2026-07-28: resources and prompts lists are cacheable results', async () => {
	const raw = startRaw({ servers: { everything: everything() } });
	try {
		const list = await raw.request('resources/list', { _meta: modernMeta() }, { ms: 15000 });
		assert.ok(list.result, JSON.stringify(list));
		assert.equal(list.result.resultType, 'complete');
		assert.equal(typeof list.result.ttlMs, 'number');
		assert.ok(list.result.resources.every((r) => r.uri.startsWith(PREFIX)));
		const read = await raw.request('resources/read', { uri: list.result.resources[0].uri, _meta: modernMeta() });
		assert.equal(read.result?.resultType, 'complete', JSON.stringify(read).slice(0, 300));
		assert.equal(typeof read.result.ttlMs, 'number');
		const prompts = await raw.request('prompts/list', { _meta: modernMeta() });
		assert.equal(prompts.result?.resultType, 'complete');
		assert.equal(typeof prompts.result.ttlMs, 'number');
		const get = await raw.request('prompts/get', { name: 'everything__simple-prompt', _meta: modernMeta() });
		assert.equal(get.result?.resultType, 'complete', JSON.stringify(get));
		const bad = await raw.request('resources/read', { uri: 'sluice://nosuch/x', _meta: modernMeta() });
		assert.equal(bad.error?.code, -32602, '2026-07-28 uses -32602 for a missing resource');
		assert.equal(bad.error.data?.uri, 'sluice://nosuch/x', JSON.stringify(bad));
		const gone = await raw.request('resources/read', { uri: `${PREFIX}demo://nope/1`, _meta: modernMeta() });
		assert.equal(gone.error?.data?.uri, `${PREFIX}demo://nope/1`, JSON.stringify(gone));
	} finally {
		await raw.close();
	}
});
