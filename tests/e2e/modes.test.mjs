// tools/list in each exposure mode, and the router's own tools.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

import { connect, catalog, everything, closeAll, toolsWhen, jsonOf, textOf, searchHits, NAME_RE } from './helpers.mjs';

after(closeAll);

const servers = { github: catalog('github'), jira: catalog('jira'), everything: everything() };
const TEST_TOOLS = ['echo', 'slow', 'fail', 'crash', 'huge', 'progress', 'ask_user', 'add_tool', 'log', 'stderr', 'garbage'];
const ROUTER = ['search_tools', 'describe_tools', 'list_servers', 'list_tools', 'invoke_tool'];
// The governor's read_result is offered in every mode while the governor is on (the default).
const GATEWAY = ['read_result'];

const gws = {};
const lists = {};
// Everything is ready once its last late tool is listed too.
const complete = (tools) =>
	['everything__get-sum', 'everything__simulate-research-query', 'github__list_issues', 'jira__echo'].every((n) =>
		tools.some((t) => t.name === n),
	);

before(async () => {
	await Promise.all(
		['passthrough', 'router', 'hybrid'].map(async (mode) => {
			gws[mode] = await connect({ servers, sluice: { exposure: mode } });
		}),
	);
	lists.passthrough = await toolsWhen(gws.passthrough.client, complete);
	lists.hybrid = await toolsWhen(gws.hybrid.client, complete);
	lists.router = (await gws.router.client.listTools()).tools;
});
after(() => Promise.all(Object.values(gws).map((g) => g.close())));

const names = (tools) => tools.map((t) => t.name);

describe('passthrough', () => {
	test('names are server__tool', () => {
		const n = names(lists.passthrough);
		for (const want of ['everything__get-sum', 'everything__echo', 'github__list_issues', 'jira__echo'])
			assert.ok(n.includes(want), `${want} listed`);
		for (const t of TEST_TOOLS) {
			assert.ok(n.includes(`github__${t}`), `github__${t}`);
			assert.ok(n.includes(`jira__${t}`), `jira__${t}`);
		}
		for (const name of n) if (!GATEWAY.includes(name)) assert.match(name, /^(github|jira|everything)__/);
	});

	test('names are valid and unique', () => {
		const n = names(lists.passthrough);
		for (const name of n) assert.match(name, NAME_RE);
		assert.equal(new Set(n).size, n.length, 'no duplicates');
	});

	test('no router tools; definitions keep their schemas', () => {
		const n = names(lists.passthrough);
		for (const r of ROUTER) assert.ok(!n.includes(r), `${r} not listed`);
		for (const t of lists.passthrough) assert.equal(t.inputSchema?.type, 'object', t.name);
		const sum = lists.passthrough.find((t) => t.name === 'everything__get-sum');
		assert.deepEqual(Object.keys(sum.inputSchema.properties).sort(), ['a', 'b']);
		const echo = lists.passthrough.find((t) => t.name === 'github__echo');
		assert.ok(echo.outputSchema, 'outputSchema kept');
		assert.ok(echo.description?.length > 0);
	});

	test('router tools are not callable', async () => {
		await assert.rejects(
			gws.passthrough.client.callTool({ name: 'list_servers', arguments: {} }),
			(e) => e instanceof McpError && e.code === -32602,
		);
	});
});

describe('router', () => {
	const call = (name, args) => gws.router.client.callTool({ name, arguments: args });

	test('lists exactly the four router tools and read_result', () => {
		assert.deepEqual(names(lists.router).sort(), [...ROUTER, ...GATEWAY].sort());
		for (const t of lists.router) assert.equal(t.inputSchema.type, 'object');
	});

	test('passthrough names are not callable', async () => {
		await assert.rejects(
			call('github__echo', {}),
			(e) => e instanceof McpError && e.code === -32602,
		);
	});

	test('list_servers: each server ready with tool counts', async () => {
		const r = await call('list_servers', {});
		assert.ok(!r.isError, textOf(r));
		const list = jsonOf(r);
		assert.deepEqual(list.map((s) => s.name), ['github', 'jira', 'everything']);
		for (const s of list) {
			assert.equal(s.status, 'ready', JSON.stringify(s));
			assert.equal(typeof s.tools, 'number');
			assert.ok(s.tools >= TEST_TOOLS.length, JSON.stringify(s));
		}
		// The counts agree with the passthrough listing of the same servers.
		for (const s of list)
			assert.equal(
				s.tools,
				lists.passthrough.filter((t) => t.name.startsWith(`${s.name}__`)).length,
				`tool count of ${s.name}`,
			);
	});

	test('search_tools finds list_issues for "issues"', async () => {
		const r = await call('search_tools', { query: 'issues' });
		assert.ok(!r.isError, textOf(r));
		const hits = searchHits(r);
		assert.ok(hits.length > 0);
		assert.ok(hits.length <= 5, 'default k is 5');
		const hit = hits.find((h) => h.server === 'github' && h.tool === 'list_issues');
		assert.ok(hit, JSON.stringify(hits.map((h) => `${h.server}/${h.tool}`)));
		assert.match(hit.line, /\(args: \{owner: string; repo: string; /);
	});

	test('search_tools with k and with no match', async () => {
		const r = await call('search_tools', { query: 'echo', k: 2 });
		assert.equal(searchHits(r).length, 2);
		const none = await call('search_tools', { query: 'zzqqxxnothing' });
		assert.ok(!none.isError);
		assert.match(textOf(none), /no tools match/);
	});

	test('list_tools for one server', async () => {
		const r = await call('list_tools', { server: 'jira' });
		assert.ok(!r.isError, textOf(r));
		const tools = jsonOf(r);
		assert.ok(tools.every((t) => t.server === 'jira'));
		const n = tools.map((t) => t.tool);
		for (const t of TEST_TOOLS) assert.ok(n.includes(t), t);
		assert.equal(tools.length, lists.passthrough.filter((t) => t.name.startsWith('jira__')).length);
		const unknown = await call('list_tools', { server: 'nosuch' });
		assert.equal(unknown.isError, true);
		assert.match(textOf(unknown), /nosuch/);
	});

	test('invoke_tool reaches the tool', async () => {
		const args = { deep: { list: [1, 'two', { three: 3.5 }] }, s: 'ü' };
		const r = await call('invoke_tool', { server: 'github', tool: 'echo', arguments: args });
		assert.ok(!r.isError, textOf(r));
		assert.deepEqual(JSON.parse(textOf(r)), args);
		assert.deepEqual(r.structuredContent, { arguments: args });
		const sum = await call('invoke_tool', { server: 'everything', tool: 'get-sum', arguments: { a: 2, b: 3 } });
		assert.match(textOf(sum), /The sum of 2 and 3 is 5/);
	});

	test('invoke_tool with an unknown server or tool -> isError naming it', async () => {
		const s = await call('invoke_tool', { server: 'nosuch', tool: 'echo', arguments: {} });
		assert.equal(s.isError, true);
		assert.match(textOf(s), /nosuch/);
		const t = await call('invoke_tool', { server: 'github', tool: 'no_such_tool', arguments: {} });
		assert.equal(t.isError, true);
		assert.match(textOf(t), /no_such_tool/);
		const bad = await call('invoke_tool', { server: 'github', tool: 'echo', arguments: [1] });
		assert.equal(bad.isError, true);
	});

	test('a tool failure through invoke_tool stays an isError result', async () => {
		const r = await call('invoke_tool', { server: 'jira', tool: 'fail', arguments: { message: 'routed boom' } });
		assert.equal(r.isError, true);
		assert.match(textOf(r), /routed boom/);
	});
});

describe('hybrid', () => {
	test('hybrid = passthrough + search_tools', () => {
		const h = names(lists.hybrid).sort();
		const p = [...names(lists.passthrough), 'search_tools'].sort();
		assert.deepEqual(h, p);
		for (const name of h) assert.match(name, NAME_RE);
	});

	test('search_tools works, invoke_tool is not offered', async () => {
		const r = await gws.hybrid.client.callTool({ name: 'search_tools', arguments: { query: 'issues' } });
		assert.ok(searchHits(r).some((h) => h.tool === 'list_issues'));
		await assert.rejects(
			gws.hybrid.client.callTool({ name: 'invoke_tool', arguments: { server: 'github', tool: 'echo' } }),
			(e) => e instanceof McpError && e.code === -32602,
		);
		const direct = await gws.hybrid.client.callTool({ name: 'github__echo', arguments: { ok: true } });
		assert.deepEqual(direct.structuredContent, { arguments: { ok: true } });
	});
});

describe('exposed names from awkward server names', () => {
	const long = 'a-very-long-server-name-that-goes-on-and-on-and-on-forever-xyz';
	let g;
	before(async () => {
		g = await connect({ servers: { 'a.b': catalog('github'), a_b: catalog('jira'), [long]: catalog('slack') } });
	});
	after(() => g?.close());

	test('sanitised, at most 64 characters, unique, and every one callable', async () => {
		const { tools } = await g.client.listTools();
		const n = names(tools);
		for (const name of n) assert.match(name, NAME_RE);
		assert.equal(new Set(n).size, n.length, 'no two tools share a name');
		// 'a.b' and 'a_b' both sanitise to a_b: their common tools must both
		// survive, neither shadowing the other.
		const echoes = tools.filter((t) => t.name.startsWith('a_b__') && t.title === 'Echo');
		assert.ok(echoes.length >= 2, `echo tools: ${names(echoes)}`);
		for (const t of echoes) {
			const r = await g.client.callTool({ name: t.name, arguments: { via: t.name } });
			assert.deepEqual(r.structuredContent, { arguments: { via: t.name } });
		}
		// The long server's tools are there too, and callable.
		const longOnes = tools.filter((t) => t.name.startsWith(long.slice(0, 20)));
		assert.ok(longOnes.length > 0);
		const echo = longOnes.find((t) => t.title === 'Echo');
		assert.ok(echo, 'the long server echo tool is recognisable by its title');
		const r = await g.client.callTool({ name: echo.name, arguments: { long: true } });
		assert.deepEqual(r.structuredContent, { arguments: { long: true } });
	});
});
