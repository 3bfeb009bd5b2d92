#!/usr/bin/env node
// The SDK 2.x server (@modelcontextprotocol/server) over Streamable HTTP:
// createMcpHandler, which speaks MCP 2026-07-28 and falls back to the
// session era for older clients, mounted on node:http. Listens on
// 127.0.0.1 on a port the system picks and prints "PORT n" on stdout.
// Tools: add (the sum and the era it was called in).
import http from 'node:http';
import { McpServer, createMcpHandler, fromJsonSchema } from '@modelcontextprotocol/server';

const handler = createMcpHandler(() => {
	const s = new McpServer({ name: 'modern-http-fixture', version: '2.0.0' });
	s.registerTool(
		'add',
		{
			description: 'Adds two numbers',
			inputSchema: fromJsonSchema({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] }),
		},
		async ({ a, b }, ctx) => ({
			content: [{ type: 'text', text: JSON.stringify({ sum: a + b, era: ctx?.mcpReq?.protocolVersion ?? null }) }],
		}),
	);
	return s;
});

const srv = http.createServer(async (req, res) => {
	const chunks = [];
	for await (const c of req) chunks.push(c);
	const body = chunks.length ? Buffer.concat(chunks) : undefined;
	const headers = new Headers();
	for (const [k, v] of Object.entries(req.headers)) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
	const request = new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body });
	const response = await handler.fetch(request);
	res.writeHead(response.status, Object.fromEntries(response.headers));
	if (!response.body) return res.end();
	for await (const c of response.body) res.write(c);
	res.end();
});
srv.listen(0, '127.0.0.1', () => console.log(`PORT ${srv.address().port}`));
