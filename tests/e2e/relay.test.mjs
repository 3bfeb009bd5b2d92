// What flows besides request and response: progress, cancellation,
// list_changed, logging, and server-to-client requests (elicitation,
// sampling, roots) relayed to the client.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
	ElicitRequestSchema,
	CreateMessageRequestSchema,
	ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

import {
	connect,
	startRaw,
	catalog,
	everything,
	closeAll,
	toolsWhen,
	textOf,
	eventually,
	sleep,
	progressBefore,
} from './helpers.mjs';

after(closeAll);

const elicited = [];
const sampled = [];
let elicitAnswer = { action: 'accept', content: { answer: '42' } };

let gw; // full client capabilities
before(async () => {
	gw = await connect({
		servers: { github: catalog('github'), jira: catalog('jira'), everything: everything() },
		capabilities: { elicitation: {}, sampling: {}, roots: { listChanged: true } },
		handlers: [
			[
				ElicitRequestSchema,
				async (req) => {
					elicited.push(req.params);
					return typeof elicitAnswer === 'function' ? elicitAnswer(req.params) : elicitAnswer;
				},
			],
			[
				CreateMessageRequestSchema,
				async (req) => {
					sampled.push(req.params);
					return {
						role: 'assistant',
						content: { type: 'text', text: 'sampled by the e2e client' },
						model: 'e2e-model',
						stopReason: 'endTurn',
					};
				},
			],
			[ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///e2e-root', name: 'e2e-root' }] })],
		],
	});
	await toolsWhen(gw.client, (t) => t.some((x) => x.name === 'everything__trigger-elicitation-request'));
});
after(() => gw?.close());

const call = (name, args, opts) => gw.client.callTool({ name, arguments: args }, undefined, opts);

// Index in the wire log of the response to the request whose result text is `text`.
const responseIndex = (wire, pred) => wire.findIndex((m) => 'id' in m && 'result' in m && pred(m.result));

describe('progress', () => {
	test('catalog progress: 3 increasing notifications, all before the result', async () => {
		const before = gw.wire.length;
		const r = await call('github__progress', { steps: 3, interval_ms: 50 }, {
			onprogress: () => {},
		});
		assert.equal(textOf(r), 'done 3');
		const seen = progressBefore(gw.wire.slice(before), (res) => textOf(res) === 'done 3');
		assert.equal(seen.length, 3, JSON.stringify(seen));
		assert.deepEqual(seen.map((p) => p.progress), [1, 2, 3]);
		for (const p of seen) assert.equal(p.total, 3);
		// On the wire, every notification precedes the response.
		const resp = responseIndex(gw.wire, (res) => textOf(res) === 'done 3');
		const notes = gw.wire
			.map((m, i) => [m, i])
			.filter(([m]) => m.method === 'notifications/progress' && /^step /.test(m.params.message ?? ''));
		assert.ok(resp >= 0);
		assert.equal(notes.length, 3);
		for (const [, i] of notes) assert.ok(i < resp, 'progress before result');
	});

	test('server-everything long-running operation reports progress', async () => {
		const before = gw.wire.length;
		const r = await call('everything__trigger-long-running-operation', { duration: 0.3, steps: 3 }, {
			onprogress: () => {},
		});
		assert.match(textOf(r), /Long running operation completed/);
		const seen = progressBefore(gw.wire.slice(before), (res) => /Long running operation completed/.test(textOf(res))).map((p) => p.progress);
		assert.equal(seen.length, 3, JSON.stringify(seen));
		for (let i = 1; i < seen.length; i++) assert.ok(seen[i] > seen[i - 1], 'increasing');
	});

	test('no progress token, no notifications', async () => {
		const before = gw.wire.length;
		const r = await gw.client.callTool({ name: 'jira__progress', arguments: { steps: 2, interval_ms: 10 } });
		assert.equal(textOf(r), 'done 2');
		assert.ok(!gw.wire.slice(before).some((m) => m.method === 'notifications/progress'));
	});
});

describe('cancellation', () => {
	test('abort a slow call: the SDK rejects, the gateway keeps serving, no late answer', async () => {
		const ac = new AbortController();
		const t0 = Date.now();
		const slow = call('github__slow', { ms: 1500 }, { signal: ac.signal });
		setTimeout(() => ac.abort('test abort'), 200);
		await assert.rejects(slow);
		assert.ok(Date.now() - t0 < 1000, 'rejected at once');
		const r = await call('github__echo', { after: 'cancel' });
		assert.deepEqual(r.structuredContent, { arguments: { after: 'cancel' } });
		// Not held behind the cancelled call: answered before it would have been.
		assert.ok(Date.now() - t0 < 1500, `next call answered ${Date.now() - t0} ms after the slow one began`);
		// The slow call would have answered at 1500 ms: nothing may arrive.
		await sleep(1600 - (Date.now() - t0));
		assert.ok(
			!gw.wire.some((m) => 'result' in m && textOf(m.result) === 'slept 1500 ms'),
			'no response for the cancelled call',
		);
		// The upstream is fine too.
		const again = await call('github__slow', { ms: 10 });
		assert.equal(textOf(again), 'slept 10 ms');
	});

	test('raw: notifications/cancelled suppresses the answer, ping still answered', async () => {
		const raw = startRaw({ servers: { github: catalog('github') } });
		try {
			await raw.initialize();
			raw.send({ jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'github__slow', arguments: { ms: 600 } } });
			await sleep(100);
			raw.notify('notifications/cancelled', { requestId: 'c1', reason: 'test' });
			const p = await raw.request('ping', undefined, { ms: 1000 });
			assert.deepEqual(p.result, {});
			assert.ok(await raw.none((m) => m.id === 'c1', 1000), 'no response for c1');
			// Cancelling an unknown or finished id is ignored.
			raw.notify('notifications/cancelled', { requestId: 'c1' });
			raw.notify('notifications/cancelled', { requestId: 12345 });
			const r = await raw.request('tools/call', { name: 'github__slow', arguments: { ms: 5 } });
			assert.equal(r.result?.content?.[0]?.text, 'slept 5 ms');
		} finally {
			await raw.close();
		}
	});

	test('raw: progress of a cancelled call is dropped (server-everything keeps sending it)', async () => {
		const raw = startRaw({ servers: { everything: everything() } });
		try {
			await raw.initialize();
			raw.send({
				jsonrpc: '2.0',
				id: 'lr',
				method: 'tools/call',
				params: {
					name: 'everything__trigger-long-running-operation',
					arguments: { duration: 1, steps: 5 },
					_meta: { progressToken: 'pt-cancel' },
				},
			});
			await raw.next((m) => m.method === 'notifications/progress' && m.params.progressToken === 'pt-cancel', 3000);
			raw.notify('notifications/cancelled', { requestId: 'lr' });
			await sleep(50); // a notification already in flight may still land
			const late = await raw.none(
				(m) => m.id === 'lr' || (m.method === 'notifications/progress' && m.params.progressToken === 'pt-cancel'),
				1200,
			);
			assert.ok(late, 'no progress and no response after the cancel');
			assert.deepEqual((await raw.request('ping')).result, {});
		} finally {
			await raw.close();
		}
	});
});

describe('list_changed', () => {
	test('add_tool -> notifications/tools/list_changed and <server>__fresh listed', async () => {
		const before = gw.wire.length;
		const r = await call('jira__add_tool', { name: 'fresh' });
		assert.equal(textOf(r), 'added tool fresh');
		await eventually(
			() => gw.wire.slice(before).some((m) => m.method === 'notifications/tools/list_changed'),
			3000,
			20,
			'notifications/tools/list_changed',
		);
		const { tools } = await gw.client.listTools();
		assert.ok(tools.some((t) => t.name === 'jira__fresh'), 'jira__fresh listed');
		assert.ok(!tools.some((t) => t.name === 'github__fresh'));
		const e = await call('jira__fresh', { new: 'tool' });
		assert.deepEqual(e.structuredContent, { arguments: { new: 'tool' } });
	});
});

describe('logging', () => {
	test('notifications/message from an upstream reaches the client, logger namespaced', async () => {
		await gw.client.setLoggingLevel('debug');
		const before = gw.wire.length;
		const r = await call('github__log', { level: 'warning', message: 'hello from the catalog' });
		assert.equal(textOf(r), 'logged');
		const m = await eventually(
			() =>
				gw.wire
					.slice(before)
					.find((x) => x.method === 'notifications/message' && x.params.data === 'hello from the catalog'),
			3000,
			20,
			'notifications/message',
		);
		assert.equal(m.params.level, 'warning');
		assert.match(m.params.logger, /^github/);
	});

	test('stderr noise from an upstream does not disturb the session', async () => {
		const r = await call('github__stderr', { lines: 500 });
		assert.equal(textOf(r), 'ok');
		const e = await call('github__echo', { x: 1 });
		assert.deepEqual(e.structuredContent, { arguments: { x: 1 } });
	});
});

describe('server-to-client requests', () => {
	test('catalog ask_user: elicitation relayed, answer returned', async () => {
		elicitAnswer = { action: 'accept', content: { answer: 'forty-two' } };
		const n = elicited.length;
		const r = await call('github__ask_user', { question: 'What is the answer?' });
		assert.ok(!r.isError, textOf(r));
		assert.deepEqual(JSON.parse(textOf(r)), { action: 'accept', content: { answer: 'forty-two' } });
		assert.equal(elicited.length, n + 1);
		assert.equal(elicited[n].message, 'What is the answer?');
		assert.equal(elicited[n].requestedSchema.properties.answer.type, 'string');
	});

	test('catalog ask_user: decline relayed', async () => {
		elicitAnswer = { action: 'decline' };
		const r = await call('jira__ask_user', { question: 'Declined?' });
		assert.deepEqual(JSON.parse(textOf(r)), { action: 'decline' });
	});

	test('two elicitations from two servers at once', async () => {
		elicitAnswer = (p) => ({ action: 'accept', content: { answer: `re: ${p.message}` } });
		const [a, b] = await Promise.all([
			call('github__ask_user', { question: 'from github' }),
			call('jira__ask_user', { question: 'from jira' }),
		]);
		assert.deepEqual(JSON.parse(textOf(a)).content, { answer: 're: from github' });
		assert.deepEqual(JSON.parse(textOf(b)).content, { answer: 're: from jira' });
	});

	test('server-everything lists its capability-gated tools through the gateway', async () => {
		const { tools } = await gw.client.listTools();
		const n = tools.map((t) => t.name);
		for (const t of ['trigger-elicitation-request', 'trigger-sampling-request', 'get-roots-list'])
			assert.ok(n.includes(`everything__${t}`), t);
	});

	test('server-everything elicitation', async () => {
		elicitAnswer = { action: 'accept', content: { name: 'Ada', check: true, email: 'a@b.c' } };
		const r = await call('everything__trigger-elicitation-request', {});
		assert.ok(!r.isError, textOf(r));
		assert.match(textOf(r), /User provided the requested information/);
		assert.match(textOf(r), /Ada/);
	});

	test('server-everything sampling', async () => {
		const n = sampled.length;
		const r = await call('everything__trigger-sampling-request', { prompt: 'hello', maxTokens: 20 });
		assert.ok(!r.isError, textOf(r));
		assert.match(textOf(r), /sampled by the e2e client/);
		assert.equal(sampled.length, n + 1);
		assert.match(JSON.stringify(sampled[n].messages), /hello/);
	});

	test('server-everything roots', async () => {
		const r = await call('everything__get-roots-list', {});
		assert.ok(!r.isError, textOf(r));
		assert.match(textOf(r), /file:\/\/\/e2e-root/);
	});

	test('without the elicitation capability, ask_user fails cleanly and nothing is relayed', async () => {
		const plain = await connect({ servers: { github: catalog('github'), everything: everything() } });
		try {
			const r = await plain.client.callTool({ name: 'github__ask_user', arguments: { question: 'hi?' } });
			assert.equal(r.isError, true);
			assert.match(textOf(r), /elicitation/);
			assert.ok(!plain.wire.some((m) => m.method === 'elicitation/create'));
			const { tools } = await plain.client.listTools();
			assert.ok(!tools.some((t) => t.name === 'everything__trigger-elicitation-request'));
			assert.ok(tools.some((t) => t.name === 'everything__get-sum'));
		} finally {
			await plain.close();
		}
	});
});

// Issue 33, finding 12: roots are a client's. Over HTTP server-everything
// asks roots/list right after its initialize, outside any call: sluice
// answers an empty list (no error in its log), and before each call of
// another client than the one whose roots it was last given, tells it the
// roots changed and waits until it has asked again within that call, so
// each caller sees its own roots, never another's (upstream/roots.c).
test('roots over HTTP: none outside a call, each caller its own within its call, never another\'s', async () => {
	const { startHttp, httpClient } = await import('./helpers.mjs');
	const gw = await startHttp({ servers: { everything: everything() }, sluice: { logLevel: 'debug' } });
	const url = `${gw.url}`;
	const withRoots = (uri) => ({
		capabilities: { roots: { listChanged: true } },
		handlers: [[ListRootsRequestSchema, async () => ({ roots: uri ? [{ uri, name: uri }] : [] })]],
	});
	const clients = [];
	try {
		const alice = await httpClient(url, { ...withRoots('file:///alice'), name: 'alice' });
		clients.push(alice);
		// Its question at start has been answered, one way or the other.
		const asked = /asked roots\/list outside any call|Failed to request roots/;
		await eventually(() => asked.test(gw.stderr()), 15000, 50, 'server-everything\'s roots/list at start, answered');
		assert.doesNotMatch(gw.stderr(), /Failed to request roots/);
		assert.match(gw.stderr(), /server 'everything' asked roots\/list outside any call: answered with no roots/);
		const roots = async (c) => textOf(await c.client.callTool({ name: 'everything__get-roots-list', arguments: {} }));
		assert.match(await roots(alice), /file:\/\/\/alice/);
		const bob = await httpClient(url, { ...withRoots('file:///bob'), name: 'bob' });
		clients.push(bob);
		const b = await roots(bob);
		assert.match(b, /file:\/\/\/bob/);
		assert.doesNotMatch(b, /alice/);
		// A client that declared no roots is given none, not the last caller's.
		const carol = await httpClient(url, { name: 'carol' });
		clients.push(carol);
		const c = await roots(carol);
		assert.doesNotMatch(c, /alice|bob/);
		assert.match(c, /no roots/);
		assert.match(await roots(alice), /file:\/\/\/alice/);
		assert.doesNotMatch(gw.stderr(), /Failed to request roots/);
	} finally {
		await Promise.allSettled(clients.map((c) => c.client.close()));
		await gw.close();
	}
});
