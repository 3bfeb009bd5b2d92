#!/usr/bin/env node
// A 2026-07-28-only server written by hand (no SDK), stateless as the
// protocol allows: everything a multi-round trip needs travels in
// requestState, and every request is judged by its own _meta. Over stdio by
// default; with --http it listens on 127.0.0.1 (a port the system picks),
// prints "PORT n" on stdout, and answers its protocol errors with HTTP 400
// as the 2026-07-28 transport says.
//
// Options:
//   --http                 Streamable HTTP instead of stdio
//   --reject-discover N    answer the first N server/discover requests with
//                          -32022 (data.supported: --supported, comma-separated;
//                          default 2026-07-28), as the conformance suite's
//                          request-metadata scenario does
//   --supported LIST       the versions -32022 advertises
//   --log FILE             appends one JSON line per request received
//
// Tools:
//   two_rounds      asks for a name (elicitation), keeping only in
//                   requestState that it asked; answers "hello NAME" with the
//                   number of rounds it saw. Without its state echoed it
//                   asks again, forever.
//   state_only      input_required with a requestState and no input
//                   requests (the client may retry at once); completes when
//                   the state comes back.
//   state_forever   input_required with only a requestState, every time.
//   needs_elicit    needs the elicitation capability: -32021 without it
//                   (data.requiredCapabilities), else asks.
//   caps            the client capabilities its own request declared.
//   huge_error      a JSON body of 100 000 bytes that is no JSON-RPC message (400).
import http from 'node:http';
import { appendFileSync } from 'node:fs';
import readline from 'node:readline';

const MODERN = '2026-07-28';
const argv = process.argv.slice(2);
const opt = (name, dflt) => {
	const i = argv.indexOf(name);
	return i >= 0 ? argv[i + 1] : dflt;
};
const useHttp = argv.includes('--http');
let rejectDiscover = Number(opt('--reject-discover', '0'));
const supported = opt('--supported', MODERN).split(',');
const logFile = opt('--log', null);

const TOOLS = [
	{ name: 'two_rounds', description: 'Asks a name, keeping its state in requestState', inputSchema: { type: 'object' } },
	{ name: 'state_only', description: 'input_required with only a requestState', inputSchema: { type: 'object' } },
	{ name: 'state_forever', description: 'Never completes', inputSchema: { type: 'object' } },
	{ name: 'needs_elicit', description: 'Needs the elicitation capability', inputSchema: { type: 'object' } },
	{ name: 'caps', description: 'The client capabilities of its own request', inputSchema: { type: 'object' } },
	{ name: 'huge_error', description: 'An error answer over any sane message bound', inputSchema: { type: 'object' } },
];

const ASK_NAME = {
	method: 'elicitation/create',
	params: {
		mode: 'form',
		message: 'Your name?',
		requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
	},
};

const complete = (extra) => ({ resultType: 'complete', ...extra });
const text = (t) => complete({ content: [{ type: 'text', text: t }] });
const rpcError = (code, message, data) => ({ error: { code, message, ...(data ? { data } : {}) } });

// One request: { result } or { error }, and the HTTP status for it.
function handle(m) {
	const meta = m.params?._meta ?? {};
	const version = meta['io.modelcontextprotocol/protocolVersion'];
	const caps = meta['io.modelcontextprotocol/clientCapabilities'];
	if (m.method === 'server/discover' && rejectDiscover > 0) {
		rejectDiscover--;
		return [400, rpcError(-32022, 'Unsupported protocol version', { supported, requested: String(version) })];
	}
	if (version !== MODERN)
		return [400, rpcError(-32022, 'Unsupported protocol version', { supported: [MODERN], requested: String(version) })];
	if (!caps || typeof caps !== 'object') return [400, rpcError(-32602, 'Invalid params: missing clientCapabilities')];
	switch (m.method) {
		case 'server/discover':
			return [200, { result: complete({ supportedVersions: [MODERN], capabilities: { tools: {} }, _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'stateless-fixture', version: '1.0.0' } }, ttlMs: 0, cacheScope: 'public' }) }];
		case 'tools/list':
			return [200, { result: complete({ tools: TOOLS, ttlMs: 0, cacheScope: 'public' }) }];
		case 'tools/call':
			return call(m.params, caps);
		default:
			return [404, rpcError(-32601, `Method not found: ${m.method}`)];
	}
}

function call(params, caps) {
	const state = params.requestState;
	const answers = params.inputResponses ?? {};
	switch (params.name) {
		case 'two_rounds': {
			// The state says how many rounds came before; nothing is kept here.
			const round = state ? JSON.parse(Buffer.from(state, 'base64url').toString()).round + 1 : 1;
			const name = answers.who?.action === 'accept' ? answers.who.content?.name : undefined;
			if (!state || !name) {
				const next = Buffer.from(JSON.stringify({ round })).toString('base64url');
				return [200, { result: { resultType: 'input_required', inputRequests: { who: ASK_NAME }, requestState: next } }];
			}
			return [200, { result: text(`hello ${name} after ${round} rounds`) }];
		}
		case 'state_only':
			if (state !== 'come-back') return [200, { result: { resultType: 'input_required', requestState: 'come-back' } }];
			return [200, { result: text(`state came back${params.inputResponses ? ' with inputResponses' : ''}`) }];
		case 'needs_elicit':
			if (!caps.elicitation)
				return [400, rpcError(-32021, 'Server requires the elicitation capability for this request', { requiredCapabilities: { elicitation: {} } })];
			if (answers.who?.action === 'accept') return [200, { result: text(`hello ${answers.who.content?.name}`) }];
			return [200, { result: { resultType: 'input_required', inputRequests: { who: ASK_NAME } } }];
		case 'caps':
			return [200, { result: text(JSON.stringify(caps)) }];
		case 'state_forever':
			return [200, { result: { resultType: 'input_required', requestState: 'again' } }];
		case 'huge_error':
			return [400, { bare: { error: 'x'.repeat(100000) } }];
		default:
			return [200, { result: complete({ content: [{ type: 'text', text: `unknown tool ${params.name}` }], isError: true }) }];
	}
}

function receive(m) {
	if (logFile) appendFileSync(logFile, JSON.stringify({ method: m.method, id: m.id, params: m.params ?? null }) + '\n');
	if (m.id === undefined || !m.method) return null;
	const [status, body] = handle(m);
	return [status, body.bare ?? { jsonrpc: '2.0', id: m.id, ...body }];
}

if (useHttp) {
	const srv = http.createServer((req, res) => {
		if (req.method !== 'POST') {
			res.writeHead(405, { allow: 'POST' }).end();
			return;
		}
		let body = '';
		req.on('data', (c) => (body += c));
		req.on('end', () => {
			let m;
			try {
				m = JSON.parse(body);
			} catch {
				res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }));
				return;
			}
			const out = receive(m);
			if (!out) {
				res.writeHead(202).end();
				return;
			}
			res.writeHead(out[0], { 'content-type': 'application/json' }).end(JSON.stringify(out[1]));
		});
	});
	srv.listen(0, '127.0.0.1', () => console.log(`PORT ${srv.address().port}`));
} else {
	const rl = readline.createInterface({ input: process.stdin });
	rl.on('line', (line) => {
		let m;
		try {
			m = JSON.parse(line);
		} catch {
			return;
		}
		const out = receive(m);
		if (out) process.stdout.write(JSON.stringify(out[1]) + '\n');
	});
}
