// Server requests for 2026-07-28 clients (issue 14, point 4): a server's
// elicitation, sampling or roots request during a 2026-07-28 client's
// tools/call comes back as input_required with a sealed requestState; the
// upstream call is parked until the client retries with inputResponses.
// The official SDK 2.x client (which fulfils input_required with its own
// handlers) against server-everything, and raw requests for the hostile
// cases: forged, tampered, replayed and expired states, a client that never
// retries, and the bound on parked calls.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import path from 'node:path';

import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { MODERN, REPO, closeAll, eventually, everything, httpClient, httpRequest, modernMeta, sleep, startHttp, textOf } from './helpers.mjs';

const CAPS = { elicitation: { form: {} }, sampling: {}, roots: {} };
const ELICIT_ANSWER = { action: 'accept', content: { name: 'Grace Hopper', check: true, email: 'grace@example.com' } };

// One raw 2026-07-28 tools/call over HTTP: the JSON-RPC response.
async function rawCall(gw, id, name, args = {}, extra = {}, caps = CAPS) {
	const r = await httpRequest(
		{ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST', headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name } },
		{ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...extra, _meta: modernMeta(caps) } },
		20000,
	);
	assert.equal(r.status, 200, r.text);
	return r.json;
}

describe('the SDK 2.x client (2026-07-28) through sluice to server-everything', () => {
	let gw, client;
	const seen = { elicit: [], sample: [], roots: 0 };

	before(async () => {
		gw = await startHttp({
			servers: {
				everything: everything(),
				// A 2026-07-28 server of the SDK 2.x: its own input_required.
				sdk2: { command: process.execPath, args: [path.join(REPO, 'tests', 'servers', 'modern', 'server.mjs')] },
			},
			sluice: {
				// The sampling tool needs the person's confirmation first: the
				// policy's input request and the server's come in two rounds.
				policy: { rules: [{ match: 'everything.trigger-sampling-request', action: 'confirm' }] },
				codeMode: { enabled: true },
				exposure: 'hybrid',
			},
		});
		client = new Client({ name: 'mrtr-e2e', version: '1.0.0' }, { capabilities: CAPS, versionNegotiation: { mode: { pin: MODERN } } });
		client.setRequestHandler('elicitation/create', async (req) => {
			seen.elicit.push(req.params);
			if (/Allow the tool/.test(req.params.message)) return { action: 'accept', content: { approve: true } };
			if (/Deploy to/.test(req.params.message)) return { action: 'accept', content: { confirm: true } };
			if (/Passphrase/.test(req.params.message)) return { action: 'accept', content: { pass: 'sesame' } };
			return ELICIT_ANSWER;
		});
		client.setRequestHandler('sampling/createMessage', async (req) => {
			seen.sample.push(req.params);
			return { role: 'assistant', content: { type: 'text', text: 'words-from-the-2026-model' }, model: 'e2e', stopReason: 'endTurn' };
		});
		client.setRequestHandler('roots/list', async () => {
			seen.roots++;
			return { roots: [{ uri: 'file:///root-2026', name: 'root-2026' }] };
		});
		await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
	});
	after(async () => {
		await client?.close().catch(() => {});
		await gw?.close();
		assert.doesNotMatch(gw?.stderr() ?? '', /Sanitizer|runtime error/);
	});

	test('it speaks 2026-07-28 and sees the tools that need its capabilities', async () => {
		assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
		const { tools } = await client.listTools();
		for (const t of ['trigger-elicitation-request', 'trigger-sampling-request', 'get-roots-list'])
			assert.ok(tools.some((x) => x.name === `everything__${t}`), t);
	});

	test('elicitation: the result is built from its handler\'s answer', async () => {
		const n = seen.elicit.length;
		const r = await client.callTool({ name: 'everything__trigger-elicitation-request', arguments: {} });
		assert.notEqual(r.isError, true, textOf(r));
		assert.equal(seen.elicit.length, n + 1);
		assert.match(seen.elicit[n].message, /Please provide inputs/);
		assert.match(textOf(r), /Grace Hopper/);
	});

	test('sampling, after the policy\'s confirmation (two rounds, distinct keys)', async () => {
		const n = { e: seen.elicit.length, s: seen.sample.length };
		const r = await client.callTool({ name: 'everything__trigger-sampling-request', arguments: { prompt: 'hello 2026', maxTokens: 20 } });
		assert.notEqual(r.isError, true, textOf(r));
		assert.equal(seen.elicit.length, n.e + 1); // the confirmation
		assert.match(seen.elicit[n.e].message, /Allow the tool "trigger-sampling-request"/);
		assert.equal(seen.sample.length, n.s + 1);
		assert.match(seen.sample[n.s].messages[0].content.text, /hello 2026/);
		assert.match(textOf(r), /words-from-the-2026-model/);
	});

	test('roots: answered by its handler', async () => {
		const r = await client.callTool({ name: 'everything__get-roots-list', arguments: {} });
		assert.notEqual(r.isError, true, textOf(r));
		assert.match(textOf(r), /root-2026/);
		assert.ok(seen.roots >= 1);
	});

	test('a 2026-07-28 server\'s own input_required reaches the client and the call resumes', async () => {
		const n = seen.elicit.length;
		const r = await client.callTool({ name: 'sdk2__deploy', arguments: { env: 'prod' } });
		assert.notEqual(r.isError, true, textOf(r));
		assert.equal(seen.elicit.length, n + 1);
		assert.match(seen.elicit[n].message, /Deploy to prod\?/);
		assert.equal(textOf(r), 'deployed to prod');
	});

	// Not only tools/call: a prompts/get the server answers input_required
	// is relayed and resumed the same way (its upstream request parked).
	test('a 2026-07-28 server\'s input_required on prompts/get reaches the client and the request resumes', async () => {
		const n = seen.elicit.length;
		const r = await client.getPrompt({ name: 'sdk2__greet', arguments: {} });
		assert.equal(seen.elicit.length, n + 1);
		assert.match(seen.elicit[n].message, /Who is to be greeted\?/);
		assert.equal(r.messages[0].content.text, 'Hello, Grace Hopper!');
	});

	test('and on resources/read: the server\'s question, then the contents', async () => {
		const n = seen.elicit.length;
		const r = await client.readResource({ uri: 'sluice://sdk2/memo://vault' });
		assert.equal(seen.elicit.length, n + 1);
		assert.match(seen.elicit[n].message, /Passphrase for the vault\?/);
		assert.equal(r.contents[0].text, 'opened with sesame');
		assert.equal(r.contents[0].uri, 'sluice://sdk2/memo://vault');
	});

	// One server's own input requests keep its keys (here "who"): nothing
	// else is in the result to collide with.
	test('a 2026-07-28 server\'s inputRequests keys are kept when only its requests are in the result', async () => {
		const r = await httpRequest(
			{ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST', headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'prompts/get', 'mcp-name': 'sdk2__greet' } },
			{ jsonrpc: '2.0', id: 'k1', method: 'prompts/get', params: { name: 'sdk2__greet', arguments: {}, _meta: modernMeta(CAPS) } },
			20000,
		);
		assert.equal(r.status, 200, r.text);
		const line = r.text.split('\n').find((l) => l.includes('"k1"'));
		const res = JSON.parse(line.replace(/^data: /, '')).result;
		assert.equal(res.resultType, 'input_required', line);
		assert.deepEqual(Object.keys(res.inputRequests), ['who']);
		assert.match(res.requestState, /^sluice-park\./);
		const call = (await rawCall(gw, 'k2', 'sdk2__tag')).result;
		assert.equal(call.resultType, 'input_required');
		assert.deepEqual(Object.keys(call.inputRequests), ['label']);
		// A tools/call's state does not resume a prompts/get (the state binds
		// the method), and the refusal leaves the park as it was.
		const wrong = await httpRequest(
			{ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST', headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'prompts/get', 'mcp-name': 'sdk2__tag' } },
			{ jsonrpc: '2.0', id: 'k4', method: 'prompts/get', params: { name: 'sdk2__tag', requestState: call.requestState, inputResponses: { label: { action: 'accept', content: { label: 'x' } } }, _meta: modernMeta(CAPS) } },
			20000,
		);
		assert.equal(wrong.json.error.code, -32602, wrong.text);
		assert.match(wrong.json.error.message, /issued for another method/);
		// Answered under that key, the call resumes.
		const done = (await rawCall(gw, 'k3', 'sdk2__tag', {}, { requestState: call.requestState, inputResponses: { label: { action: 'accept', content: { label: 'red' } } } })).result;
		assert.equal(textOf(done), 'tagged red');
	});

	test('a session-era client over HTTP is asked too, on the prompts/get\'s stream', async () => {
		const asked = [];
		const { client: old } = await httpClient(gw.url, {
			name: 'legacy-prompt',
			capabilities: { elicitation: {} },
			handlers: [[ElicitRequestSchema, async (req) => (asked.push(req.params.message), { action: 'accept', content: { name: 'Ada' } })]],
		});
		const r = await old.getPrompt({ name: 'sdk2__greet', arguments: {} });
		assert.deepEqual(asked, ['Who is to be greeted?']);
		assert.equal(r.messages[0].content.text, 'Hello, Ada!');
		await old.close();
	});

	test('a program\'s tool call whose server asks gets a clear error inside the program', async () => {
		const n = seen.elicit.length;
		const r = await client.callTool({
			name: 'execute_code',
			arguments: { code: "try { await tools.everything['trigger-elicitation-request']({}); return 'no error'; } catch (e) { return 'caught: ' + e.message; }" },
		});
		assert.match(textOf(r), /program \(execute_code\)|input_required/);
		assert.equal(seen.elicit.length, n);
	});

	test('a client that did not declare elicitation is not asked; the server gets a clear error', async () => {
		const r = await rawCall(gw, 1, 'everything__trigger-elicitation-request', {}, {}, { sampling: {} });
		assert.notEqual(r.result?.resultType, 'input_required');
		assert.match(JSON.stringify(r), /did not declare that capability/);
	});

	describe('hostile retries', () => {
		let first;
		before(async () => {
			first = (await rawCall(gw, 10, 'everything__trigger-elicitation-request')).result;
		});

		test('the first answer is input_required with one elicitation and a sealed state', () => {
			assert.equal(first.resultType, 'input_required');
			const keys = Object.keys(first.inputRequests);
			assert.equal(keys.length, 1);
			assert.notEqual(keys[0], 'confirm');
			assert.equal(first.inputRequests[keys[0]].method, 'elicitation/create');
			assert.match(first.requestState, /^sluice-park\.[0-9a-f]+\.\d+\.[0-9a-f]+\.[0-9a-f]{64}$/);
		});

		const answers = () => ({ [Object.keys(first.inputRequests)[0]]: ELICIT_ANSWER });

		test('a forged state (its seal changed) is refused', async () => {
			const forged = first.requestState.replace(/.$/, (c) => (c === '0' ? '1' : '0'));
			const r = await rawCall(gw, 11, 'everything__trigger-elicitation-request', {}, { inputResponses: answers(), requestState: forged });
			assert.equal(r.error?.code, -32602);
			assert.match(r.error.message, /requestState: forged or tampered/);
		});

		test('a tampered state (another round) is refused', async () => {
			const tampered = first.requestState.replace(/^(sluice-park\.[0-9a-f]+\.)(\d+)/, (_, a, n) => a + (Number(n) + 1));
			const r = await rawCall(gw, 12, 'everything__trigger-elicitation-request', {}, { inputResponses: answers(), requestState: tampered });
			assert.match(r.error?.message ?? '', /requestState: forged or tampered/);
		});

		test('a state not of ours that looks like ours is refused', async () => {
			const r = await rawCall(gw, 13, 'everything__trigger-elicitation-request', {}, { inputResponses: answers(), requestState: 'sluice-park.zz' });
			assert.match(r.error?.message ?? '', /requestState: malformed/);
		});

		test('a retry without the answer is refused, and the park stays for a good one', async () => {
			const r = await rawCall(gw, 14, 'everything__trigger-elicitation-request', {}, { inputResponses: {}, requestState: first.requestState });
			assert.match(r.error?.message ?? '', /has no answer/);
		});

		test('the good retry resumes the call; the same state again is a replay', async () => {
			const retry = { inputResponses: answers(), requestState: first.requestState };
			const [a, b] = await Promise.all([
				rawCall(gw, 15, 'everything__trigger-elicitation-request', {}, retry),
				sleep(5).then(() => rawCall(gw, 16, 'everything__trigger-elicitation-request', {}, retry)),
			]);
			assert.equal(a.result?.resultType, 'complete', JSON.stringify(a));
			assert.match(textOf(a.result), /Grace Hopper/);
			assert.match(b.error?.message ?? '', /requestState: (already used|it names no parked call)/);
			const c = await rawCall(gw, 17, 'everything__trigger-elicitation-request', {}, retry);
			assert.match(c.error?.message ?? '', /requestState: (already used|it names no parked call)/);
		});
	});
});

describe('bounds: the retry deadline and the number of parked calls', () => {
	let gw;
	before(async () => {
		gw = await startHttp({
			servers: { everything: everything(), sdk2: { command: process.execPath, args: [path.join(REPO, 'tests', 'servers', 'modern', 'server.mjs')] } },
			sluice: { limits: { parkTimeoutMs: 1000, maxParkedCallsPerClient: 2 } },
		});
	});
	after(async () => {
		await gw?.close();
		assert.doesNotMatch(gw?.stderr() ?? '', /Sanitizer|runtime error/);
	});

	test('parked calls over the bound are refused with a clear error; the deadline frees them and cancels the call', async () => {
		const a = (await rawCall(gw, 1, 'everything__trigger-elicitation-request')).result;
		const b = (await rawCall(gw, 2, 'everything__trigger-elicitation-request')).result;
		assert.equal(a.resultType, 'input_required');
		assert.equal(b.resultType, 'input_required');
		// A third: its server's question is refused, naming the bound.
		const c = await rawCall(gw, 3, 'everything__trigger-elicitation-request');
		assert.notEqual(c.result?.resultType, 'input_required');
		assert.match(JSON.stringify(c), /maxParkedCallsPerClient/);
		// Nobody retries: after parkTimeoutMs the parked calls (a and b) are cancelled.
		const cancelled = () => gw.stderr().match(/a parked call of everything__trigger-elicitation-request is cancelled: the client did not retry/g) ?? [];
		await eventually(() => cancelled().length >= 2, 5000, 50, 'both parked calls cancelled');
		// And the expired state gets a clear error (once its seal's expiry,
		// counted in whole seconds, is past: up to a second after the deadline;
		// until then the retry hears that the park is gone).
		const late = await eventually(async () => {
			const r = await rawCall(gw, 4, 'everything__trigger-elicitation-request', {}, {
				inputResponses: { [Object.keys(a.inputRequests)[0]]: ELICIT_ANSWER },
				requestState: a.requestState,
			});
			assert.equal(r.error?.code, -32602, JSON.stringify(r));
			assert.match(r.error.message, /requestState: (expired|it names no parked call)/);
			return /requestState: expired/.test(r.error.message) && r;
		}, 5000, 100, 'the state to read as expired');
		assert.match(late.error.message, /requestState: expired \(sluice\.limits\.parkTimeoutMs\)/);
		// The freed places park again.
		const d = (await rawCall(gw, 5, 'everything__trigger-elicitation-request')).result;
		assert.equal(d.resultType, 'input_required');
	});

	test('a parked prompts/get nobody retries: its upstream request is cancelled at the deadline, the retry hears why', async () => {
		const get = async (id, extra = {}) => (await httpRequest(
			{ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST', headers: { 'mcp-protocol-version': MODERN, 'mcp-method': 'prompts/get', 'mcp-name': 'sdk2__greet' } },
			{ jsonrpc: '2.0', id, method: 'prompts/get', params: { name: 'sdk2__greet', arguments: {}, ...extra, _meta: modernMeta({ elicitation: { form: {} } }) } },
			20000,
		));
		const parse = (r, id) => JSON.parse(r.text.split('\n').find((l) => l.includes(`"${id}"`)).replace(/^data: /, ''));
		// d of the test above may still be parked: this is then the client's
		// second (maxParkedCallsPerClient 2), within the bound.
		const first = parse(await get('g1'), 'g1').result;
		assert.equal(first.resultType, 'input_required', JSON.stringify(first));
		await eventually(() => /a parked call of sdk2__greet is cancelled: the client did not retry/.test(gw.stderr()), 5000, 50, 'the parked prompts/get cancelled');
		const late = parse(await get('g2', { requestState: first.requestState, inputResponses: { who: { action: 'accept', content: { name: 'x' } } } }), 'g2');
		assert.equal(late.error?.code, -32602, JSON.stringify(late));
		assert.match(late.error.message, /requestState: (expired|it names no parked call)/);
		// And the prompt asks afresh.
		assert.equal(parse(await get('g3'), 'g3').result.resultType, 'input_required');
	});
});

after(closeAll);
