// A stdio MCP server (JSON lines) whose tool definitions come from a JSON
// file named by its first argument, read at every tools/list: rewriting
// the file "upgrades" the server while its command and arguments stay the
// same, as an `npx -y` server's new release does. The file holds an array
// of tool definitions. tools/call answers "NAME called".
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const file = process.argv[2];
if (!file) {
	process.stderr.write('usage: server.mjs TOOLS.json\n');
	process.exit(2);
}
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
createInterface({ input: process.stdin }).on('line', (line) => {
	let m;
	try {
		m = JSON.parse(line);
	} catch {
		return;
	}
	if (m.id === undefined || !m.method) return;
	const ok = (result) => send({ jsonrpc: '2.0', id: m.id, result });
	if (m.method === 'initialize')
		ok({
			protocolVersion: m.params.protocolVersion,
			capabilities: { tools: {} },
			serverInfo: { name: 'upgrade-fixture', version: '1.0.0' },
		});
	else if (m.method === 'tools/list') ok({ tools: JSON.parse(readFileSync(file, 'utf8')) });
	else if (m.method === 'tools/call') ok({ content: [{ type: 'text', text: `${m.params.name} called` }] });
	else if (m.method === 'ping') ok({});
	else send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
});
