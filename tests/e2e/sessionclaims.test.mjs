// A session is decided with each request's own credential (issue 32,
// finding 4; docs/SESSIONS.md "Who a session serves"): alice opens a
// session with a token of group sre, then sends the next requests in the
// same session with a token of hers without it (the group removed at the
// identity provider, or a down-scoped token). Each listing, call and read
// is decided with the token it carries, never the one that opened the
// session; a token of another subject is refused the session (404); and a
// 2026-07-28 task id handed to alice is an unknown task to bob.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import {
	catalog,
	closeAll,
	eventually,
	everything,
	httpClient,
	httpRequest,
	jsonOf,
	modernMeta,
	searchHits,
	startHttp,
	textOf,
	MODERN,
} from './helpers.mjs';

after(closeAll);

const ALICE_SRE = { token: 'alice-sre-4e1d', subject: 'alice', groups: ['sre'] };
const ALICE_PLAIN = { token: 'alice-plain-7a20', subject: 'alice' };
const BOB = { token: 'bob-sre-91f0', subject: 'bob', groups: ['sre'] };
const TOKENS = [ALICE_SRE, ALICE_PLAIN, BOB];
const POLICY = {
	rules: [
		{ match: '*.merge_*', who: ['group:sre'], action: 'allow' },
		{ match: '*.merge_*', action: 'deny' },
	],
};
const bearer = (t) => `Bearer ${t.token}`;
const merge = (n) => ({ owner: 'acme', repo: 'api', pull_number: n });

describe("a session is decided with each request's own credential", () => {
	let hybrid, router;
	// headers objects the SDK reads on each request: swapping Authorization
	// sends the next request of the same session with another token.
	const hh = { Authorization: bearer(ALICE_SRE) }, rh = { Authorization: bearer(ALICE_SRE) };
	let h, r;

	before(async () => {
		const sluice = (exposure) => ({
			exposure,
			codeMode: { enabled: exposure === 'hybrid' },
			policy: POLICY,
			http: { auth: { tokens: TOKENS } },
		});
		[hybrid, router] = await Promise.all([
			startHttp({ servers: { github: catalog('github') }, sluice: sluice('hybrid') }),
			startHttp({ servers: { github: catalog('github') }, sluice: sluice('router') }),
		]);
		h = await httpClient(hybrid.url, { headers: hh });
		r = await httpClient(router.url, { headers: rh });
		await eventually(async () => (await h.client.listTools()).tools.some((t) => t.name === 'github__echo'),
			10000, 100, 'hybrid upstream ready');
		await eventually(async () => jsonOf(await r.client.callTool({ name: 'list_servers', arguments: {} }))
			.every((s) => s.status === 'ready'), 10000, 100, 'router upstream ready');
	});
	after(async () => {
		await Promise.all([h?.client.close(), r?.client.close()]);
	});

	const as = (t) => {
		hh.Authorization = bearer(t);
		rh.Authorization = bearer(t);
	};
	const listed = async () => jsonOf(await r.client.callTool({ name: 'list_tools', arguments: { server: 'github' } }))
		.map((t) => t.tool);

	test('the token without the group: no listing shows what the group grants, no call runs it', async () => {
		as(ALICE_SRE);
		assert.ok((await h.client.listTools()).tools.some((t) => t.name === 'github__merge_pull_request'));
		assert.ok((await listed()).includes('merge_pull_request'));

		as(ALICE_PLAIN);
		try {
			const { tools } = await h.client.listTools();
			assert.ok(!tools.some((t) => t.name === 'github__merge_pull_request'), 'tools/list');
			const hits = searchHits(await h.client.callTool({ name: 'search_tools', arguments: { query: 'merge pull request', k: 20 } }));
			assert.ok(!hits.some((x) => x.tool === 'merge_pull_request'), 'search_tools');
			assert.ok(!(await listed()).includes('merge_pull_request'), 'list_tools');
			const d = await r.client.callTool({ name: 'describe_tools', arguments: { server: 'github', tools: ['merge_pull_request'] } });
			assert.equal(d.isError, true, textOf(d));

			const direct = await h.client.callTool({ name: 'github__merge_pull_request', arguments: merge(412) });
			assert.equal(direct.isError, true);
			assert.match(textOf(direct), /policy: github\.merge_pull_request is denied/);
			const inv = await r.client.callTool({ name: 'invoke_tool',
				arguments: { server: 'github', tool: 'merge_pull_request', arguments: merge(412) } });
			assert.equal(inv.isError, true);
			assert.match(textOf(inv), /^policy: server 'github' has no tool 'merge_pull_request'/);
		} finally {
			as(ALICE_SRE);
		}
		// The group back, the same session grants it again.
		assert.ok((await listed()).includes('merge_pull_request'));
	});

	test("another subject's token in alice's session is refused as an unknown session (404)", async () => {
		const u = new URL(hybrid.url);
		const send = (t, id) => httpRequest(
			{
				host: u.hostname, port: u.port, path: u.pathname, method: 'POST',
				headers: {
					authorization: bearer(t),
					'mcp-session-id': h.transport.sessionId,
					'mcp-protocol-version': h.transport.protocolVersion,
				},
			},
			{ jsonrpc: '2.0', id, method: 'tools/list', params: {} },
		);
		const bob = await send(BOB, 8);
		assert.equal(bob.status, 404, bob.text);
		assert.match(bob.text, /Session not found/);
		assert.doesNotMatch(bob.text, /merge_pull_request/);
		// The same request with a token of alice's is served: the 404 was bob's.
		const alice = await send(ALICE_PLAIN, 9);
		assert.equal(alice.status, 200, alice.text);
		assert.ok(alice.json.result.tools.length > 0);
		// Nor may bob end it.
		const del = await httpRequest({
			host: u.hostname, port: u.port, path: u.pathname, method: 'DELETE',
			headers: { authorization: bearer(BOB), 'mcp-session-id': h.transport.sessionId },
		});
		assert.equal(del.status, 404, del.text);
		assert.ok((await h.client.listTools()).tools.length > 0);
	});
});

describe("a 2026-07-28 task is its creator's", () => {
	const TOOL = 'everything__simulate-research-query';
	const EXT = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
	let gw;
	const post = (t, method, params, name) => {
		const u = new URL(gw.url);
		return httpRequest(
			{
				host: u.hostname, port: u.port, path: u.pathname, method: 'POST',
				headers: {
					authorization: bearer(t),
					'mcp-protocol-version': MODERN,
					'mcp-method': method,
					...(name ? { 'mcp-name': name } : {}),
				},
			},
			{ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: modernMeta(EXT) } },
			20000,
		);
	};

	before(async () => {
		gw = await startHttp({ servers: { everything: everything() }, sluice: { http: { auth: { tokens: [ALICE_SRE, BOB] } } } });
		await eventually(async () => (await post(ALICE_SRE, 'tools/list', {})).json?.result?.tools?.some((t) => t.name === TOOL),
			15000, 200, 'the task tool to be listed');
	});

	test("bob can neither read nor cancel alice's task; alice can", async () => {
		const made = await post(ALICE_SRE, 'tools/call', { name: TOOL, arguments: { topic: 'tides' } }, TOOL);
		const id = made.json?.result?.taskId;
		assert.match(id ?? '', /^t2\./, made.text);
		for (const method of ['tasks/get', 'tasks/cancel']) {
			const b = await post(BOB, method, { taskId: id }, id);
			assert.equal(b.json?.error?.code, -32602, `${method}: ${b.text}`);
			assert.match(b.json.error.message, /unknown task/);
		}
		const a = await post(ALICE_SRE, 'tasks/get', { taskId: id }, id);
		assert.equal(a.json?.result?.taskId, id, a.text);
		assert.notEqual(a.json.result.status, 'cancelled', a.text);
		const c = await post(ALICE_SRE, 'tasks/cancel', { taskId: id }, id);
		assert.deepEqual(c.json?.result, { resultType: 'complete' }, c.text);
	});
});

describe("a parked call goes on only with a credential allowed its tool", () => {
	const TOOL = 'everything__trigger-elicitation-request';
	const CAPS = { elicitation: { form: {} } };
	let gw;
	const call = (t, id, extra = {}) => httpRequest(
		{
			host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST',
			headers: { authorization: bearer(t), 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': TOOL },
		},
		{ jsonrpc: '2.0', id, method: 'tools/call', params: { name: TOOL, arguments: {}, ...extra, _meta: modernMeta(CAPS) } },
		20000,
	);

	before(async () => {
		gw = await startHttp({
			servers: { everything: everything() },
			sluice: {
				policy: { rules: [
					{ match: 'everything.trigger-elicitation-request', who: ['group:sre'], action: 'allow' },
					{ match: 'everything.trigger-elicitation-request', action: 'deny' },
				] },
				http: { auth: { tokens: TOKENS } },
			},
		});
		await eventually(async () => (await call(ALICE_SRE, 1)).json?.result?.resultType === 'input_required',
			15000, 200, 'the elicitation tool to answer input_required');
	});

	test("alice's retry with her token without the group is refused; with it, the call completes", async () => {
		const first = (await call(ALICE_SRE, 2)).json.result;
		assert.equal(first.resultType, 'input_required', JSON.stringify(first));
		const key = Object.keys(first.inputRequests)[0];
		const retry = {
			requestState: first.requestState,
			inputResponses: { [key]: { action: 'accept', content: { name: 'Grace Hopper', check: true, email: 'grace@example.com' } } },
		};
		const plain = (await call(ALICE_PLAIN, 3, retry)).json;
		assert.equal(plain.error?.code, -32602, JSON.stringify(plain));
		assert.match(plain.error.message, /credential is not allowed the tool/);
		const sre = (await call(ALICE_SRE, 4, retry)).json;
		assert.equal(sre.result?.resultType, 'complete', JSON.stringify(sre));
		assert.match(textOf(sre.result), /Grace Hopper/);
	});
});
