// tools/call in passthrough mode: arguments forwarded exactly, structured
// content, and both error shapes (JSON-RPC error vs isError result).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import {
	connect,
	startRaw,
	catalog,
	everything,
	closeAll,
	toolsWhen,
	textOf,
	EVERYTHING,
	withTimeout,
} from './helpers.mjs';

after(closeAll);

let gw;
before(async () => {
	gw = await connect({ servers: { github: catalog('github'), jira: catalog('jira'), everything: everything() } });
	await toolsWhen(gw.client, (t) => t.some((x) => x.name === 'everything__get-structured-content'));
});
after(() => gw?.close());

const call = (name, args, opts) => gw.client.callTool({ name, arguments: args }, undefined, opts);

describe('arguments are forwarded exactly', () => {
	const cases = {
		nested: { a: { b: { c: { d: [1, [2, [3, { e: 'deep' }]]] } } }, z: null, t: true, f: false },
		unicode: { s: 'héllo wörld ☃ 日本語 😀 \u0000 \u2028 "quoted" \\ back\nslash\ttab', key_ü: 'ключ' },
		floats: { pi: 3.141592653589793, tiny: 1e-300, neg: -0.5, big: 1.7976931348623157e308, third: 1 / 3 },
		integers: { max_safe: 9007199254740991, min_safe: -9007199254740991, zero: 0, neg: -42 },
		empties: { arr: [], obj: {}, str: '', nested: [[], [{}]] },
	};
	for (const [label, args] of Object.entries(cases)) {
		test(label, async () => {
			const r = await call('github__echo', args);
			assert.ok(!r.isError, textOf(r));
			assert.deepEqual(JSON.parse(textOf(r)), args);
			assert.deepEqual(r.structuredContent, { arguments: args });
		});
	}

	test('no arguments at all reaches the tool as {}', async () => {
		const r = await gw.client.callTool({ name: 'jira__echo' });
		assert.deepEqual(JSON.parse(textOf(r)), {});
	});

	test('big integers keep every digit (raw text)', async () => {
		const raw = startRaw({ servers: { github: catalog('github') } });
		try {
			await raw.initialize();
			const big = '12345678901234567890';
			const neg = '-9223372036854775808';
			raw.sendLine(
				`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"github__echo",` +
					`"arguments":{"big":${big},"neg":${neg},"list":[${big}]}}}`,
			);
			const { line, msg } = await raw.nextItem((m) => m.id === 'big');
			assert.ok(msg.result, line);
			// The echo's text block is JSON text inside a JSON string; the
			// structured copy is plain JSON in the line itself.
			const text = msg.result.content[0].text;
			assert.ok(text.includes(`"big":${big}`), text);
			assert.ok(text.includes(`"neg":${neg}`), text);
			assert.ok(text.includes(`"list":[${big}]`), text);
			assert.ok(line.includes(`"structuredContent":{"arguments":{"big":${big},"neg":${neg},"list":[${big}]}}`), line);
		} finally {
			await raw.close();
		}
	});
});

describe('results pass through', () => {
	test('everything get-structured-content keeps structuredContent', async () => {
		const r = await call('everything__get-structured-content', { location: 'Chicago' });
		assert.ok(!r.isError, textOf(r));
		assert.ok(r.structuredContent, 'structuredContent present');
		assert.deepEqual(JSON.parse(textOf(r)), r.structuredContent);
		assert.deepEqual(Object.keys(r.structuredContent).sort(), ['conditions', 'humidity', 'temperature']);
	});

	test('everything content blocks and annotations unchanged', async () => {
		const r = await call('everything__get-annotated-message', { messageType: 'error', includeImage: true });
		assert.ok(!r.isError);
		const t = r.content.find((c) => c.type === 'text');
		assert.equal(t.text, 'Error: Operation failed');
		assert.deepEqual(t.annotations, { audience: ['user', 'assistant'], priority: 1 });
		assert.ok(r.content.some((c) => c.type === 'image' && c.data.length > 0 && c.mimeType === 'image/png'));
	});

	test('everything get-sum', async () => {
		const r = await call('everything__get-sum', { a: 19, b: 23 });
		assert.equal(textOf(r), 'The sum of 19 and 23 is 42.');
	});
});

describe('error shapes', () => {
	test('unknown tool on the gateway -> JSON-RPC -32602', async () => {
		await assert.rejects(call('github__no_such_tool', {}), (e) => {
			assert.ok(e instanceof McpError, String(e));
			assert.equal(e.code, -32602);
			assert.match(e.message, /github__no_such_tool/);
			return true;
		});
		await assert.rejects(call('nosuchserver__echo', {}), (e) => e instanceof McpError && e.code === -32602);
	});

	test('catalog fail -> isError result with its message', async () => {
		const r = await call('github__fail', { message: 'it broke on purpose' });
		assert.equal(r.isError, true);
		assert.equal(textOf(r), 'it broke on purpose');
		const d = await call('jira__fail', {});
		assert.equal(d.isError, true);
		assert.equal(textOf(d), 'the tool failed');
	});

	test('catalog argument validation failure stays isError', async () => {
		const r = await call('github__slow', { ms: 'soon' });
		assert.equal(r.isError, true);
		assert.match(textOf(r), /Invalid arguments/);
	});

	test('server-everything isError passes through unchanged', async () => {
		// The same call straight to server-everything, for reference.
		const direct = new Client({ name: 'direct', version: '1' });
		const transport = new StdioClientTransport({ command: EVERYTHING, args: ['stdio'], stderr: 'pipe' });
		let expected;
		try {
			await withTimeout(direct.connect(transport), 10000, 'server-everything');
			expected = await direct.callTool({ name: 'get-sum', arguments: { a: 'one', b: 2 } });
		} finally {
			await direct.close();
		}
		assert.equal(expected.isError, true);
		const r = await call('everything__get-sum', { a: 'one', b: 2 });
		assert.deepEqual(r, expected);
		assert.match(textOf(r), /Input validation error/);
	});

	test('the session keeps serving after errors', async () => {
		const r = await call('jira__echo', { still: 'here' });
		assert.deepEqual(r.structuredContent, { arguments: { still: 'here' } });
	});
});

describe('concurrency', () => {
	test('60 calls at once over three servers each get their own answer', async () => {
		const jobs = [];
		for (let i = 0; i < 60; i++) {
			const server = ['github', 'jira'][i % 2];
			if (i % 3 === 0) jobs.push(call(`${server}__slow`, { ms: 60 - i }).then((r) => assert.equal(textOf(r), `slept ${60 - i} ms`)));
			else if (i % 3 === 1) jobs.push(call('everything__get-sum', { a: i, b: 1000 }).then((r) => assert.equal(textOf(r), `The sum of ${i} and 1000 is ${i + 1000}.`)));
			else jobs.push(call(`${server}__echo`, { i, tag: `job-${i}` }).then((r) => assert.deepEqual(r.structuredContent, { arguments: { i, tag: `job-${i}` } })));
		}
		await Promise.all(jobs);
	});

	test('a slow call does not hold up a quick one on the same server', async () => {
		const t0 = Date.now();
		const slow = call('github__slow', { ms: 800 });
		const quick = await call('github__echo', { quick: true });
		assert.ok(Date.now() - t0 < 500, `quick call took ${Date.now() - t0} ms`);
		assert.deepEqual(quick.structuredContent, { arguments: { quick: true } });
		assert.equal(textOf(await slow), 'slept 800 ms');
	});
});
