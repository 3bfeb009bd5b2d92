// What a server sends toward the client is bounded (issue 13, finding 15):
// sampling and elicitation per call (sluice.limits.serverRequestsPerCall)
// and per server and minute (serverRequestsPerMinute), refused to the
// server with an error naming the key; notifications per server and second
// (notificationsPerSecond), the excess dropped and counted in the log.
// The flooding server is the conformance fixture with --flood.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { ElicitRequestSchema, CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { closeAll, conformanceFixture, connect, eventually, sleep, textOf, toolsWhen } from './helpers.mjs';

const started = [];
after(async () => {
	await closeAll();
	// Under `make test SAN=...`, a sanitizer report fails the file.
	for (const g of started) assert.doesNotMatch(g.stderr(), /Sanitizer|runtime error/, g.stderr().slice(-3000));
});

function flooder() {
	const f = conformanceFixture();
	f.args = [...f.args, '--flood'];
	return f;
}

// A gateway over the flooding server, with a client that answers every
// elicitation and sampling request and counts them.
async function start(limits) {
	const seen = { elicit: 0, sample: 0 };
	const gw = await connect({
		servers: { conf: flooder() },
		sluice: { limits },
		capabilities: { elicitation: {}, sampling: {} },
		handlers: [
			[
				ElicitRequestSchema,
				async () => {
					seen.elicit++;
					return { action: 'accept', content: { ok: true } };
				},
			],
			[
				CreateMessageRequestSchema,
				async () => {
					seen.sample++;
					return { role: 'assistant', content: { type: 'text', text: 'ok' }, model: 'e2e', stopReason: 'endTurn' };
				},
			],
		],
	});
	started.push(gw);
	await toolsWhen(gw.client, (t) => t.some((x) => x.name === 'conf__flood'));
	const flood = async (args, opts) => JSON.parse(textOf(await gw.client.callTool({ name: 'conf__flood', arguments: args }, undefined, opts)));
	return { gw, seen, flood };
}

// Every error the server got back, as [message, count], and their total.
function errorsOf(r) {
	const all = [...Object.entries(r.elicit.errors), ...Object.entries(r.sample.errors)];
	return { all, total: all.reduce((n, [, c]) => n + c, 0) };
}

const lines = (gw, re) => gw.stderr().split('\n').filter((l) => re.test(l));

describe('flood bounds', () => {
	test('50 elicitations, 50 samplings and 400 notifications in one call: 5 requests and at most 2 s of notifications reach the client', async () => {
		const { gw, seen, flood } = await start({ serverRequestsPerCall: 5, serverRequestsPerMinute: 1000, notificationsPerSecond: 20 });
		const progress = [];
		const r = await flood({ asks: 50, notes: 200 }, { onprogress: (p) => progress.push(p), timeout: 30000 });
		// The client was asked 5 times in all; the server heard 5 answers and
		// 95 errors, each naming the bound.
		assert.equal(seen.elicit + seen.sample, 5, JSON.stringify(seen));
		assert.equal(r.elicit.ok + r.sample.ok, 5, JSON.stringify(r));
		const errs = errorsOf(r);
		assert.equal(errs.total, 95, JSON.stringify(r));
		for (const [msg] of errs.all) assert.match(msg, /-32000.*server 'conf' asked 5 sampling and elicitation requests during one call.*sluice\.limits\.serverRequestsPerCall/);
		// Logged once for the call.
		assert.equal(lines(gw, /serverRequestsPerCall/).length, 1, gw.stderr());

		// 200 log messages and 200 progress notifications: 20 a second pass.
		const logs = gw.notifications.filter((n) => n.method === 'notifications/message');
		assert.ok(logs.length + progress.length >= 1 && logs.length + progress.length <= 40, `${logs.length} logs, ${progress.length} progress`);
		// One line at the end of the second that dropped them, with the count.
		const dropped = await eventually(() => lines(gw, /notifications dropped in one second/).length > 0 && lines(gw, /notifications dropped in one second/), 4000);
		assert.ok(dropped.length <= 2, dropped.join('\n'));
		const n = dropped.reduce((sum, l) => sum + Number(/: (\d+) notifications dropped/.exec(l)[1]), 0);
		assert.ok(n >= 360 && n <= 400, dropped.join('\n'));
		assert.match(dropped[0], /server 'conf': \d+ notifications dropped in one second, over the limit of 20 \(sluice\.limits\.notificationsPerSecond\)/);

		// A normal call still works: its elicitation and its log messages arrive.
		await sleep(1100);
		const before = gw.notifications.length;
		const e = await gw.client.callTool({ name: 'conf__test_elicitation', arguments: { message: 'still there?' } });
		assert.match(textOf(e), /action=accept/);
		await gw.client.callTool({ name: 'conf__test_tool_with_logging', arguments: {} });
		await eventually(() => gw.notifications.length - before === 3, 3000);
		await gw.close();
	});

	test('per server and minute: the 9th request within a minute is refused, logged once', async () => {
		const { gw, seen, flood } = await start({ serverRequestsPerCall: 100, serverRequestsPerMinute: 8 });
		let r = await flood({ asks: 3 });
		assert.equal(r.elicit.ok + r.sample.ok, 6, JSON.stringify(r));
		r = await flood({ asks: 3 });
		assert.equal(r.elicit.ok + r.sample.ok, 2, JSON.stringify(r));
		let errs = errorsOf(r);
		assert.equal(errs.total, 4, JSON.stringify(r));
		for (const [msg] of errs.all) assert.match(msg, /server 'conf' asked 8 sampling and elicitation requests within a minute.*sluice\.limits\.serverRequestsPerMinute/);
		r = await flood({ asks: 3 });
		errs = errorsOf(r);
		assert.equal(errs.total, 6, JSON.stringify(r));
		assert.equal(seen.elicit + seen.sample, 8);
		assert.equal(lines(gw, /serverRequestsPerMinute/).length, 1, gw.stderr());
		await gw.close();
	});
});
