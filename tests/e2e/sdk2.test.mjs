// The official SDK 2.x client (@modelcontextprotocol/client, its
// StreamableHTTPClientTransport) against `sluice serve --http`: connect,
// lists, calls, errors, progress, and ending the session.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { catalog, closeAll, startHttp, textOf, LEGACY } from './helpers.mjs';

let gw;
before(async () => {
	gw = await startHttp({ servers: { github: catalog('github') }, sluice: { codeMode: { enabled: true } } });
});
after(async () => {
	await closeAll();
	assert.doesNotMatch(gw?.stderr() ?? '', /Sanitizer|runtime error/);
});

async function open() {
	const transport = new StreamableHTTPClientTransport(new URL(gw.url));
	const client = new Client({ name: 'sdk2-e2e', version: '1.0.0' }, { capabilities: {} });
	await client.connect(transport);
	return { client, transport };
}

test('SDK 2.x: connect, list and call tools', async () => {
	const { client, transport } = await open();
	assert.match(transport.sessionId, /^[0-9a-f]{32}$/);
	assert.equal(client.getServerVersion().name, 'sluice');
	const { tools } = await client.listTools();
	assert.ok(tools.some((t) => t.name === 'github__echo'));
	assert.ok(tools.some((t) => t.name === 'execute_code'));
	const r = await client.callTool({ name: 'github__echo', arguments: { a: 1 } });
	assert.deepEqual(JSON.parse(textOf(r)), { a: 1 });
	// A program, through the same pipeline.
	const p = await client.callTool({ name: 'execute_code', arguments: { code: 'return (await tools.github.echo({ n: 2 })).arguments.n * 21;' } });
	assert.notEqual(p.isError, true, textOf(p));
	assert.match(textOf(p), /42/);
	await client.close();
});

test('SDK 2.x: errors come back as the protocol says', async () => {
	const { client } = await open();
	// Unknown tool: a JSON-RPC error -32602.
	await assert.rejects(client.callTool({ name: 'github__nope', arguments: {} }), (e) => e.code === -32602 && /Unknown tool/.test(e.message));
	// A failing tool: a result with isError.
	const r = await client.callTool({ name: 'github__fail', arguments: { message: 'boom' } });
	assert.equal(r.isError, true);
	assert.match(textOf(r), /boom/);
	// An unknown resource: -32002 (MCP 2025-11-25 resources) with data.uri
	// (SEP-2164), which SDK 2.x turns into its ResourceNotFoundError (code
	// -32602, the 2026-07-28 one, and the URI).
	await assert.rejects(client.readResource({ uri: 'sluice://nobody/x' }),
		(e) => e.constructor.name === 'ResourceNotFoundError' && e.uri === 'sluice://nobody/x');
	await client.close();
});

test('SDK 2.x: progress arrives before the result', async () => {
	const { client } = await open();
	const seen = [];
	const r = await client.callTool({ name: 'github__progress', arguments: { steps: 3, interval_ms: 20 } }, {
		onprogress: (p) => seen.push(p.progress),
	});
	assert.equal(textOf(r), 'done 3');
	assert.deepEqual(seen, [1, 2, 3]);
	await client.close();
});

test('SDK 2.x: terminateSession ends it on the server (then 404)', async () => {
	const { client, transport } = await open();
	const sid = transport.sessionId;
	await client.listTools();
	await transport.terminateSession();
	assert.equal(transport.sessionId, undefined);
	const res = await fetch(gw.url, {
		method: 'POST',
		headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY },
		body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }),
	});
	assert.equal(res.status, 404);
	await client.close();
});
