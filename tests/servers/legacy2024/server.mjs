// Servers of protocol 2024-11-05 for tests/e2e/legacy2024.test.mjs.
//
//   node server.mjs sse            SDK 1.0.4: GET /sse + POST /messages (HTTP+SSE)
//   node server.mjs http           SDK 1.x Streamable HTTP, answering 2024-11-05
//   node server.mjs stdio          SDK 1.0.4 over stdio
//   node server.mjs version V FILE raw stdio: answers initialize with version V
//                                  and appends a line to FILE at each start
//
// The HTTP ones listen on 127.0.0.1 on a port the system picks and print
// "PORT n" on stdout. Tools: echo (its arguments as JSON text) and ask (an
// elicitation/create to the client, which 2024-11-05 lacks: its answer, or
// the error, as text).
import http from 'node:http';
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { z } from 'zod';

const mode = process.argv[2];

const tools = [
	{ name: 'echo', description: 'Echoes its arguments', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
	{ name: 'ask', description: 'Asks the client through elicitation', inputSchema: { type: 'object' } },
];

function setup(server, CallToolRequestSchema, ListToolsRequestSchema) {
	server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
	server.setRequestHandler(CallToolRequestSchema, async (req) => {
		if (req.params.name === 'echo') return { content: [{ type: 'text', text: JSON.stringify(req.params.arguments ?? {}) }] };
		if (req.params.name === 'ask') {
			try {
				const r = await server.request(
					{ method: 'elicitation/create', params: { message: 'ok?', requestedSchema: { type: 'object', properties: {} } } },
					z.object({}).passthrough(),
				);
				return { content: [{ type: 'text', text: `answered: ${JSON.stringify(r)}` }] };
			} catch (e) {
				return { content: [{ type: 'text', text: `refused: ${e.message}` }] };
			}
		}
		return { content: [{ type: 'text', text: `unknown tool ${req.params.name}` }], isError: true };
	});
	return server;
}

async function old() {
	const { Server } = await import('sdk-1.0/server/index.js');
	const T = await import('sdk-1.0/types.js');
	return () => setup(new Server({ name: 'legacy2024', version: '1.0.4' }, { capabilities: { tools: {} } }),
		T.CallToolRequestSchema, T.ListToolsRequestSchema);
}

function listen(srv) {
	srv.listen(0, '127.0.0.1', () => process.stdout.write(`PORT ${srv.address().port}\n`));
	process.on('SIGTERM', () => process.exit(0));
}

const readBody = (req) => new Promise((resolve) => {
	let b = '';
	req.on('data', (c) => (b += c));
	req.on('end', () => resolve(b ? JSON.parse(b) : undefined));
});

if (mode === 'sse') {
	const make = await old();
	const { SSEServerTransport } = await import('sdk-1.0/server/sse.js');
	const transports = new Map();
	listen(http.createServer(async (req, res) => {
		const url = new URL(req.url, 'http://x');
		if (req.method === 'GET' && url.pathname === '/sse') {
			const t = new SSEServerTransport('/messages', res);
			transports.set(t.sessionId, t);
			res.on('close', () => transports.delete(t.sessionId));
			await make().connect(t);
		} else if (req.method === 'POST' && url.pathname === '/messages') {
			const t = transports.get(url.searchParams.get('sessionId'));
			if (!t) return res.writeHead(404).end('no such session');
			await t.handlePostMessage(req, res);
		} else {
			res.writeHead(404).end();
		}
	}));
} else if (mode === 'http') {
	const { Server } = await import('@modelcontextprotocol/sdk/server/index.js');
	const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
	const T = await import('@modelcontextprotocol/sdk/types.js');
	const { randomUUID } = await import('node:crypto');
	const transports = new Map();
	const make = () => {
		const s = setup(new Server({ name: 'legacy2024-http', version: '1.0.0' }, { capabilities: { tools: {} } }),
			T.CallToolRequestSchema, T.ListToolsRequestSchema);
		// A server of 2024-11-05 on the Streamable HTTP transport: it answers
		// its own version whatever the client asks.
		const init = s._oninitialize.bind(s);
		s._oninitialize = async (req) => ({ ...(await init(req)), protocolVersion: '2024-11-05' });
		return s;
	};
	listen(http.createServer(async (req, res) => {
		const body = req.method === 'POST' ? await readBody(req) : undefined;
		const sid = req.headers['mcp-session-id'];
		let t = sid && transports.get(sid);
		if (!t) {
			if (req.method !== 'POST' || body?.method !== 'initialize') return res.writeHead(sid ? 404 : 400).end();
			t = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (id) => transports.set(id, t) });
			await make().connect(t);
		}
		await t.handleRequest(req, res, body);
	}));
} else if (mode === 'stdio') {
	const make = await old();
	const { StdioServerTransport } = await import('sdk-1.0/server/stdio.js');
	await make().connect(new StdioServerTransport());
} else if (mode === 'version') {
	const [version, file] = process.argv.slice(3);
	appendFileSync(file, `${process.pid}\n`);
	const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
	createInterface({ input: process.stdin }).on('line', (line) => {
		let m;
		try { m = JSON.parse(line); } catch { return; }
		if (m.id === undefined) return;
		if (m.method === 'initialize')
			send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: version, capabilities: { tools: {} }, serverInfo: { name: 'future', version: '9' } } });
		else send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
	});
} else {
	process.stderr.write(`usage: server.mjs sse|http|stdio|version V FILE\n`);
	process.exit(2);
}
