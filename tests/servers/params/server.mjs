#!/usr/bin/env node
// A Streamable HTTP server (session era, JSON answers) whose tools declare
// x-mcp-header (MCP 2026-07-28 tools, SEP-2243), for tests of header
// mirroring through sluice. Listens on 127.0.0.1 on a port the system
// picks and prints "PORT n" on stdout, then one line "HEADERS {...}" per
// tools/call with the Mcp-Param-* headers (and Mcp-Name) it received.
// With --modern it speaks MCP 2026-07-28 only (server/discover, results
// with resultType), so a client sends it Mcp-Method and Mcp-Name too.
// Tools:
//   query: region (string, Mcp-Param-Region), shard (integer, nested under
//          where.shard, Mcp-Param-Shard), dry (boolean, Mcp-Param-Dry), sql;
//          answers with the headers it got, as JSON text.
//   broken: x-mcp-header on a number property (invalid: a client leaves it out).
//   café: a name that is not header-safe ASCII (its Mcp-Name goes base64);
//         answers with the headers it got, as query does.
import http from 'node:http';

const tools = [
	{
		name: 'query',
		description: 'Run a query in a region; answers with the Mcp-Param headers it received',
		inputSchema: {
			type: 'object',
			properties: {
				region: { type: 'string', 'x-mcp-header': 'Region' },
				where: { type: 'object', properties: { shard: { type: 'integer', 'x-mcp-header': 'Shard' } } },
				dry: { type: 'boolean', 'x-mcp-header': 'Dry' },
				sql: { type: 'string' },
			},
			required: ['sql'],
		},
	},
	{ name: 'caf\u00e9', description: 'A name outside ASCII', inputSchema: { type: 'object', properties: {} } },
	{
		name: 'broken',
		description: 'Declares x-mcp-header on a number, which the spec forbids',
		inputSchema: { type: 'object', properties: { ratio: { type: 'number', 'x-mcp-header': 'Ratio' } } },
	},
];

const modern = process.argv.includes('--modern');
const srv = http.createServer(async (req, res) => {
	const chunks = [];
	for await (const c of req) chunks.push(c);
	if (req.method !== 'POST') {
		res.writeHead(405).end();
		return;
	}
	let m;
	try {
		m = JSON.parse(Buffer.concat(chunks).toString());
	} catch {
		res.writeHead(400).end();
		return;
	}
	const answer = (result) => {
		res.writeHead(200, { 'content-type': 'application/json', ...(modern ? {} : { 'mcp-session-id': 'params-1' }) });
		res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: modern ? { resultType: 'complete', ...result } : result }));
	};
	if (m.id === undefined) {
		res.writeHead(202).end();
		return;
	}
	if (modern && m.method === 'server/discover')
		return answer({ supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'params-fixture', version: '1.0.0' } }, ttlMs: 0, cacheScope: 'public' });
	if (!modern && m.method === 'initialize')
		return answer({ protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'params-fixture', version: '1.0.0' } });
	if (m.method === 'tools/list') return answer({ tools });
	if (m.method === 'ping') return answer({});
	if (m.method === 'tools/call') {
		const got = {};
		for (const [k, v] of Object.entries(req.headers)) if (/^mcp-(param-|name$|method$)/.test(k)) got[k] = v;
		console.log(`HEADERS ${JSON.stringify(got)}`);
		return answer({ content: [{ type: 'text', text: JSON.stringify(got) }] });
	}
	res.writeHead(404, { 'content-type': 'application/json' });
	res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } }));
});
srv.listen(0, '127.0.0.1', () => console.log(`PORT ${srv.address().port}`));
