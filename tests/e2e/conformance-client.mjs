// The client side of the official conformance suite's client scenarios,
// with sluice in the middle: `conformance client --command "node this"`
// appends the scenario server's URL; this starts sluice with that URL as
// its only (remote) upstream, connects to sluice over stdio with the SDK,
// and calls every tool, as a model would. So the suite judges sluice's HTTP
// client: its handshake, session, stream resumption and relaying, and, in
// the auth/ scenarios, its OAuth client (discovery, registration, PKCE,
// tokens, step-up).
//
// OAuth, as a person would do it: when sluice says the server needs a
// login (or a wider scope), run `sluice auth login s` and play the browser
// (fetch the printed authorization URL; the scenario's authorization
// server approves at once and redirects to sluice's loopback listener),
// then wait for the running gateway to pick the saved tokens up, and retry.
// At most 3 logins: a server that keeps refusing is not chased forever.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

// Run by runClientSuite (conformance-suite.mjs), which starts every
// scenario's driver at once: wait at its gate for a place among the few
// drivers that run together, held until this process ends, before loading
// the SDK (most of a driver's start) or starting sluice; from then on, the
// scenario has 60 s.
if (process.env.CONFORMANCE_GATE) {
	await new Promise((resolve, reject) => {
		const s = net.connect(process.env.CONFORMANCE_GATE);
		s.once('error', reject).once('data', () => resolve(s.unref()));
	});
	setTimeout(() => {
		console.error('driver: the scenario took over 60 s');
		process.exit(1);
	}, 60000).unref();
}
const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
const { writeConfig, closeAll, SLUICE } = await import('./helpers.mjs');

const MAX_LOGINS = 3;
// The scenarios' Client ID Metadata Document URL (auth/basic-cimd): used by
// sluice only where the authorization server says it accepts one.
const CIMD_URL = 'https://conformance-test.local/client-metadata.json';

const url = process.argv[process.argv.length - 1];
// The suite passes a scenario's pre-registered client in this variable.
const ctx = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}');
const oauth = {};
if (ctx.client_id) oauth.clientId = ctx.client_id;
if (ctx.client_secret) oauth.clientSecret = ctx.client_secret;
if (/client-credentials/.test(ctx.name ?? '')) oauth.grant = 'client_credentials';
// private_key_jwt (auth/client-credentials-jwt): the key goes in a file
// only its owner may read, next to the config, named relative to it.
if (ctx.private_key_pem) {
	oauth.privateKeyFile = 'client-key.pem';
	if (ctx.signing_algorithm) oauth.signingAlg = ctx.signing_algorithm;
}
const entry = Object.keys(oauth).length ? { url, oauth } : { url };
// The handshake's bound is generous: two cores shared by the whole suite
// (and, under make test SAN=..., a sanitized sluice) can take seconds to
// answer; the scenarios judge no handshake's time.
const config = writeConfig({ s: entry }, { logLevel: 'warn', startupTimeoutMs: 30000, oauth: { clientMetadataUrl: CIMD_URL } });
if (ctx.private_key_pem)
	writeFileSync(path.join(path.dirname(config), oauth.privateKeyFile), ctx.private_key_pem, { mode: 0o600 });
// The SDK passes an allowlisted environment: add the test's state directory
// (helpers.mjs), where the audit file and the tokens go.
const env = { XDG_STATE_HOME: process.env.XDG_STATE_HOME };
const transport = new StdioClientTransport({ command: SLUICE, args: ['serve', '--config', config], stderr: 'pipe', env });
let stderr = '';
transport.stderr.on('data', (b) => {
	stderr += b;
	process.stderr.write(b);
});
const client = new Client({ name: 'conformance-client', version: '1.0.0' }, { capabilities: { elicitation: {} } });

// An elicitation is answered by accepting the defaults the form declares
// (what a user pressing "OK" on an untouched form sends).
client.setRequestHandler(ElicitRequestSchema, async (req) => {
	const content = {};
	for (const [k, v] of Object.entries(req.params.requestedSchema?.properties ?? {}))
		if (v.default !== undefined) content[k] = v.default;
	return { action: 'accept', content };
});

// Arguments a model would send. json_schema_echo (json-schema-2020-12-
// preservation) takes the input schema of json_schema_2020_12_tool as the
// client saw it through sluice: the suite checks sluice kept its keywords.
// A scenario that names the calls to make (its context's toolCalls, as
// http-custom-headers does) gets those arguments.
const ARGS = { add_numbers: { a: 2, b: 3 } };
for (const c of Array.isArray(ctx.toolCalls) ? ctx.toolCalls : [])
	if (typeof c?.name === 'string' && c.arguments && typeof c.arguments === 'object') ARGS[c.name] = c.arguments;
const argsFor = (name, tools) => name === 'json_schema_echo' ?
	{ schema: tools.find((t) => t.name === 's__json_schema_2020_12_tool')?.inputSchema ?? {} } :
	ARGS[name] ?? {};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let logins = 0;

// `sluice auth login s`, with this process as the browser. Resolves with
// the command's exit status.
async function login() {
	logins++;
	const p = spawn(SLUICE, ['auth', 'login', 's', '--config', config], { env: { ...process.env, DISPLAY: '', WAYLAND_DISPLAY: '' }, stdio: ['ignore', 'pipe', 'inherit'] });
	const done = new Promise((r) => p.on('close', (code) => r(code)));
	let out = '';
	let browsed = false;
	p.stdout.on('data', async (b) => {
		out += b;
		const nl = out.indexOf('\n');
		if (nl < 0 || browsed) return;
		browsed = true;
		// The authorization server redirects to sluice's listener; fetch
		// follows it there, as a browser would.
		await fetch(out.slice(0, nl)).catch((e) => console.error(`driver: the browser failed: ${e.message}`));
	});
	const timer = setTimeout(() => p.kill(), 20000);
	const code = await done;
	clearTimeout(timer);
	console.error(`driver: sluice auth login exited ${code}`);
	return code;
}

// sluice's words when a login (or one asking for more scopes) would help
// (src/oauth/client.c); "a new login would not help" is not among them.
function wantsLogin(text) {
	return /needs login|needs the scope/.test(text);
}

// The tools, once the server is reachable: a login where sluice says it
// needs one (its warning on stderr), then the tools once it has connected.
async function serverTools() {
	const deadline = Date.now() + 20000;
	let seen = 0;
	while (Date.now() < deadline) {
		const { tools } = await client.listTools();
		const mine = tools.filter((t) => t.name.startsWith('s__'));
		if (mine.length) return mine;
		await sleep(300); // the warning may trail the answer on the other pipe
		const fresh = stderr.slice(seen);
		seen = stderr.length;
		if (wantsLogin(fresh)) {
			if (logins >= MAX_LOGINS || (await login()) !== 0) return [];
		} else if (!logins || fresh) {
			return []; // no tools, and no login would change that
		}
	}
	return [];
}

// A call, with a new login where sluice says it needs one (a scope the
// server asks for on this call: step-up), retried after it.
async function call(t, tools) {
	const name = t.name.replace(/^s__/, '');
	for (;;) {
		let r, why;
		try {
			r = await client.callTool({ name: t.name, arguments: argsFor(name, tools) }, undefined, { timeout: 20000 });
			why = r.isError ? JSON.stringify(r.content) : null;
		} catch (e) {
			why = e.message; // sluice's JSON-RPC error: the server refused it
			r = { isError: true, content: [{ type: 'text', text: why }] };
		}
		if (!why || !wantsLogin(why) || logins >= MAX_LOGINS) return r;
		console.error(`driver: ${t.name}: ${why}`);
		if ((await login()) !== 0) return r;
	}
}

try {
	await client.connect(transport);
	const tools = await serverTools();
	for (const t of tools) {
		const r = await call(t, tools);
		console.log(`${t.name}: ${JSON.stringify(r.content)}`);
	}
} finally {
	await client.close();
	await closeAll();
}
