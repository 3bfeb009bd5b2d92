// A stdio MCP server (JSON lines) that speaks both eras, its 2026-07-28
// face poorer than its session-era one: server/discover declares resources
// without `subscribe`, initialize declares `resources.subscribe`. Like the
// SDK 2.x server, a connection keeps the era of its first handshake: after
// initialize it is session era only. The tool `era` says which era served
// it; `touch` sends notifications/resources/updated for memo://note to a
// session-era client that subscribed. With the argument "refuse-session"
// it answers initialize -32601 (a 2026-07-28-only server), with
// "ignore-session" not at all (one that ignores unknown methods); with
// "old-session" it answers initialize with 2025-06-18 whatever is asked.
import { createInterface } from 'node:readline';

const mode = process.argv[2] ?? '';
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const MODERN = '2026-07-28';
const NOTE = 'memo://note';
let session = false; // initialized: session era only from now on
let subscribed = false;

createInterface({ input: process.stdin }).on('line', (line) => {
	let m;
	try {
		m = JSON.parse(line);
	} catch {
		return;
	}
	if (m.id === undefined || !m.method) return;
	const modern = !session && m.params?._meta?.['io.modelcontextprotocol/protocolVersion'] === MODERN;
	const ok = (result) => send({ jsonrpc: '2.0', id: m.id, result: modern ? { resultType: 'complete', ...result } : result });
	const fail = (code, message) => send({ jsonrpc: '2.0', id: m.id, error: { code, message } });
	if (m.method === 'server/discover' && !session)
		ok({
			supportedVersions: [MODERN],
			capabilities: { tools: {}, resources: {} },
			_meta: { 'io.modelcontextprotocol/serverInfo': { name: 'dual-fixture', version: '1.0.0' } },
		});
	else if (m.method === 'initialize') {
		if (mode === 'refuse-session') return fail(-32601, 'Method not found: this server speaks 2026-07-28 only');
		if (mode === 'ignore-session') return;
		session = true;
		ok({
			protocolVersion: mode === 'old-session' ? '2025-06-18' : m.params.protocolVersion,
			capabilities: { tools: {}, resources: { subscribe: true } },
			serverInfo: { name: 'dual-fixture', version: '1.0.0' },
		});
	} else if (!session && !modern) fail(-32602, 'Request is missing the 2026-07-28 _meta envelope');
	else if (m.method === 'tools/list')
		ok({
			tools: [
				{ name: 'era', description: 'Which era served this call', inputSchema: { type: 'object' } },
				{ name: 'touch', description: 'Changes memo://note', inputSchema: { type: 'object' } },
			],
		});
	else if (m.method === 'tools/call') {
		if (m.params.name === 'touch' && subscribed)
			send({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: NOTE } });
		ok({ content: [{ type: 'text', text: m.params.name === 'era' ? (modern ? MODERN : 'session') : 'touched' }] });
	} else if (m.method === 'resources/list') ok({ resources: [{ uri: NOTE, name: 'note', mimeType: 'text/plain' }] });
	else if (m.method === 'resources/templates/list') ok({ resourceTemplates: [] });
	else if (m.method === 'resources/read') ok({ contents: [{ uri: NOTE, mimeType: 'text/plain', text: 'a note' }] });
	else if (m.method === 'resources/subscribe' && session) {
		subscribed = true;
		ok({});
	} else if (m.method === 'resources/unsubscribe' && session) {
		subscribed = false;
		ok({});
	} else if (m.method === 'ping') ok({});
	else fail(-32601, 'Method not found');
});
