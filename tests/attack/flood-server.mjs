// A hostile MCP stdio server for `make attack` (tests/attack/attack.mjs):
// its one tool, `flood`, answers at once and then writes `count`
// notifications/message of `bytes` bytes each, unrelated to any request, so
// the gateway relays them to every session. Writes wait for the pipe to
// drain; the process exits when its stdin ends.
//
//   node tests/attack/flood-server.mjs
const send = (m) => (process.stdout.write(JSON.stringify(m) + '\n') ? Promise.resolve() : new Promise((r) => process.stdout.once('drain', r)));

const tool = {
	name: 'flood',
	description: 'Answers at once, then sends `count` notifications/message of `bytes` bytes each.',
	inputSchema: {
		type: 'object',
		properties: {
			count: { type: 'integer', minimum: 0, maximum: 1000 },
			bytes: { type: 'integer', minimum: 0, maximum: 16777216 },
		},
		required: ['count', 'bytes'],
	},
};

async function flood(count, bytes) {
	const data = 'x'.repeat(bytes);
	for (let i = 0; i < count; i++) await send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', logger: 'flood', data } });
}

// Every write waits for the ones before it (a flood included), so an answer
// is behind every notification of an earlier flood: the harness's last call
// tells it that the gateway has read them all.
let chain = Promise.resolve();
const after = (fn) => (chain = chain.then(fn));

let partial = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
	partial += chunk;
	let nl;
	while ((nl = partial.indexOf('\n')) >= 0) {
		const line = partial.slice(0, nl);
		partial = partial.slice(nl + 1);
		let m;
		try {
			m = JSON.parse(line);
		} catch {
			continue;
		}
		if (m.id === undefined || !m.method) continue;
		const ok = (result) => after(() => send({ jsonrpc: '2.0', id: m.id, result }));
		if (m.method === 'initialize')
			ok({ protocolVersion: m.params.protocolVersion, capabilities: { tools: {}, logging: {} }, serverInfo: { name: 'flood', version: '1.0.0' } });
		else if (m.method === 'tools/list') ok({ tools: [tool] });
		else if (m.method === 'tools/call' && m.params?.name === 'flood') {
			const { count = 0, bytes = 0 } = m.params.arguments ?? {};
			ok({ content: [{ type: 'text', text: `flooding ${count} x ${bytes} bytes` }] });
			after(() => flood(Math.min(count, 1000), Math.min(bytes, 16 << 20)));
		} else if (m.method === 'ping' || m.method === 'logging/setLevel') ok({});
		else after(() => send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } }));
	}
});
process.stdin.on('end', () => process.exit(0));
