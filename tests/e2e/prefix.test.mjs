// "prefix": false in a server entry: its tools, prompts and resource URIs
// keep their own names; a name another server or the gateway already uses
// falls back to the prefixed form with a warning. Resource subscriptions
// are forwarded and updates reach only the session that subscribed.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { catalog, closeAll, conformanceFixture, connect, eventually, execCode, startHttp, textOf, toolsWhen, sleep } from './helpers.mjs';

after(closeAll);

describe('a server with "prefix": false', () => {
	test('keeps its names and URIs; other servers stay prefixed', async () => {
		const gw = await connect({
			servers: { conf: conformanceFixture({ prefix: false }), github: catalog('github') },
			sluice: { codeMode: { enabled: true } },
		});
		const tools = await toolsWhen(gw.client, (ts) => ts.some((t) => t.name === 'test_simple_text'));
		const names = tools.map((t) => t.name);
		assert.ok(names.includes('json_schema_2020_12_tool'));
		assert.ok(names.includes('github__echo'), names.join(','));
		assert.ok(!names.some((n) => n.startsWith('conf__')), names.join(','));

		const r = await gw.client.callTool({ name: 'test_simple_text', arguments: {} });
		assert.equal(textOf(r), 'This is a simple text response for testing.');
		// Content that points at a resource keeps the server's URI.
		const e = await gw.client.callTool({ name: 'test_embedded_resource', arguments: {} });
		assert.equal(e.content[0].resource.uri, 'test://embedded-resource');

		const { resources } = await gw.client.listResources();
		const uris = resources.map((x) => x.uri);
		assert.ok(uris.includes('test://static-text'), uris.join(','));
		const { resourceTemplates } = await gw.client.listResourceTemplates();
		assert.ok(resourceTemplates.some((t) => t.uriTemplate === 'test://template/{id}/data'));
		const read = await gw.client.readResource({ uri: 'test://static-text' });
		assert.equal(read.contents[0].uri, 'test://static-text');
		assert.equal(read.contents[0].text, 'This is the content of the static text resource.');
		// A URI from a template goes to the server whose template matches.
		const t = await gw.client.readResource({ uri: 'test://template/42/data' });
		assert.equal(JSON.parse(t.contents[0].text).id, '42');

		const { prompts } = await gw.client.listPrompts();
		assert.ok(prompts.some((p) => p.name === 'test_simple_prompt'));
		const p = await gw.client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 'b' } });
		assert.equal(p.messages[0].content.text, "Prompt with arguments: arg1='a', arg2='b'");
		// Code mode names servers and their own tool names, prefix or not.
		const prog = await execCode(gw.client, 'const r = await tools.conf.test_simple_text({}); ' +
			'const e = await tools.github.echo({ n: 1 }); return r + " " + e.arguments.n;');
		assert.equal(prog.isError, false, prog.text);
		assert.match(prog.text, /This is a simple text response for testing\. 1/);
		const c = await gw.client.complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
			argument: { name: 'arg1', value: 'par' } });
		assert.deepEqual(c.completion.values, ['paris', 'park', 'party']);
		await gw.close();
	});

	test('two servers sharing names fall back to prefixes, with a warning', async () => {
		const gw = await connect({
			servers: { a: conformanceFixture({ prefix: false }), b: conformanceFixture({ prefix: false }) },
		});
		const tools = await toolsWhen(gw.client, (ts) => ts.some((t) => t.name === 'b__test_simple_text'));
		const names = tools.map((t) => t.name);
		assert.ok(names.includes('a__test_simple_text'), names.join(','));
		assert.ok(!names.includes('test_simple_text'), names.join(','));
		const r = await gw.client.callTool({ name: 'b__test_simple_text', arguments: {} });
		assert.equal(textOf(r), 'This is a simple text response for testing.');
		const { resources } = await gw.client.listResources();
		const uris = resources.map((x) => x.uri);
		assert.ok(uris.includes('sluice://a/test://static-text') && uris.includes('sluice://b/test://static-text'),
			uris.join(','));
		const read = await gw.client.readResource({ uri: 'sluice://b/test://static-text' });
		assert.equal(read.contents[0].uri, 'sluice://b/test://static-text');
		// A URI both could serve names neither: not found, not a guess.
		await assert.rejects(gw.client.readResource({ uri: 'test://template/1/data' }), /not found/i);
		assert.match(gw.stderr(), /server 'a': tool 'test_simple_text' collides with another name/);
		assert.match(gw.stderr(), /both list test:\/\/static-text/);
		await gw.close();
	});

	test('a gateway tool name stays the gateway\'s', async () => {
		const gw = await connect({
			servers: { conf: conformanceFixture({ prefix: false }) },
			sluice: { exposure: 'hybrid' },
		});
		const tools = await toolsWhen(gw.client, (ts) => ts.some((t) => t.name === 'test_simple_text'));
		// search_tools is the gateway's in hybrid mode, and still answers.
		assert.equal(tools.filter((t) => t.name === 'search_tools').length, 1);
		const r = await gw.client.callTool({ name: 'search_tools', arguments: { query: 'simple text' } });
		assert.match(textOf(r), /test_simple_text/);
		await gw.close();
	});
});

test('resource updates reach only the session that subscribed (HTTP)', async () => {
	const gw = await startHttp({ servers: { conf: conformanceFixture({ prefix: false }) } });
	const open = async () => {
		const client = new Client({ name: 'sub', version: '1' }, { capabilities: {} });
		const got = [];
		client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => got.push(n.params.uri));
		await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
		return { client, got };
	};
	const a = await open();
	const b = await open();
	await toolsWhen(a.client, (ts) => ts.length > 0);
	assert.deepEqual(await a.client.subscribeResource({ uri: 'test://watched-resource' }), {});
	// The fixture sends one update 20 ms after a subscribe.
	await eventually(() => a.got.includes('test://watched-resource'), 5000, 50, 'the update in session A');
	await sleep(300);
	assert.deepEqual(b.got, []);
	// B unsubscribing from what it never subscribed to leaves A's subscription.
	assert.deepEqual(await b.client.unsubscribeResource({ uri: 'test://watched-resource' }), {});
	assert.deepEqual(await a.client.unsubscribeResource({ uri: 'test://watched-resource' }), {});
	// Unknown URI of no server: the gateway says so.
	await assert.rejects(a.client.subscribeResource({ uri: 'sluice://nobody/x' }), /not found/i);
	await a.client.close();
	await b.client.close();
	await gw.close();
});
