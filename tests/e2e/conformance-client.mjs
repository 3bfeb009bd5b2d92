// The client side of the official conformance suite's client scenarios,
// with sluice in the middle: `conformance client --command "node this"`
// appends the scenario server's URL; this starts sluice with that URL as
// its only (remote) upstream, connects to sluice over stdio with the SDK,
// and calls every tool, as a model would. So the suite judges sluice's HTTP
// client: its handshake, session, stream resumption and relaying.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { writeConfig, closeAll, SLUICE } from './helpers.mjs';

const url = process.argv[process.argv.length - 1];
const config = writeConfig({ s: { url } }, { logLevel: 'warn' });
// The SDK passes an allowlisted environment: add the test's state directory
// (helpers.mjs), where the audit file goes by default.
const env = { XDG_STATE_HOME: process.env.XDG_STATE_HOME };
const transport = new StdioClientTransport({ command: SLUICE, args: ['serve', '--config', config], stderr: 'inherit', env });
const client = new Client({ name: 'conformance-client', version: '1.0.0' }, { capabilities: { elicitation: {} } });

// An elicitation is answered by accepting the defaults the form declares
// (what a user pressing "OK" on an untouched form sends).
client.setRequestHandler(ElicitRequestSchema, async (req) => {
	const content = {};
	for (const [k, v] of Object.entries(req.params.requestedSchema?.properties ?? {}))
		if (v.default !== undefined) content[k] = v.default;
	return { action: 'accept', content };
});

const ARGS = { add_numbers: { a: 2, b: 3 } };

try {
	await client.connect(transport);
	const { tools } = await client.listTools();
	for (const t of tools) {
		const name = t.name.replace(/^s__/, '');
		const r = await client.callTool({ name: t.name, arguments: ARGS[name] ?? {} }, undefined, { timeout: 20000 });
		console.log(`${t.name}: ${JSON.stringify(r.content)}`);
	}
} finally {
	await client.close();
	await closeAll();
}
