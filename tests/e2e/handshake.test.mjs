// Handshakes in both protocol eras: the SDK 1.x client (2025-11-25), raw
// initialize with older versions, and the 2026-07-28 per-request _meta.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { connect, startRaw, catalog, closeAll, modernMeta, LEGACY, MODERN, textOf, sleep } from './helpers.mjs';

after(closeAll);

const servers = { github: catalog('github') };

describe('legacy era (initialize)', () => {
	test('SDK client over stdio: version echoed, serverInfo sluice, capabilities', async () => {
		const gw = await connect({ servers });
		try {
			const init = gw.wire.find((m) => m.result?.protocolVersion);
			assert.ok(init, 'an initialize result arrived');
			assert.equal(init.result.protocolVersion, LEGACY);
			assert.equal(gw.client.getServerVersion().name, 'sluice');
			assert.equal(typeof gw.client.getServerVersion().version, 'string');
			const caps = gw.client.getServerCapabilities();
			assert.ok(caps.tools, 'tools capability');
			assert.ok(caps.resources, 'resources capability');
			assert.ok(caps.prompts, 'prompts capability');
			assert.match(gw.client.getInstructions() ?? '', /github/);
			// And the session works.
			await gw.client.ping();
			const { tools } = await gw.client.listTools();
			assert.ok(tools.some((t) => t.name === 'github__echo'));
		} finally {
			await gw.close();
		}
	});

	for (const v of ['2025-06-18', '2025-03-26', '2025-11-25']) {
		test(`raw initialize with ${v} is echoed`, async () => {
			const raw = startRaw({ servers: {} });
			try {
				const r = await raw.initialize(v);
				assert.equal(r.result?.protocolVersion, v, JSON.stringify(r));
				assert.equal(r.result.serverInfo.name, 'sluice');
				const p = await raw.request('ping');
				assert.deepEqual(p.result, {});
			} finally {
				await raw.close();
			}
		});
	}

	test('raw initialize with an unknown version is answered with 2025-11-25', async () => {
		const raw = startRaw({ servers: {} });
		try {
			const r = await raw.initialize('1900-01-01');
			assert.equal(r.result?.protocolVersion, LEGACY, JSON.stringify(r));
		} finally {
			await raw.close();
		}
	});

	test('initialize twice is refused, the session goes on', async () => {
		const raw = startRaw({ servers: {} });
		try {
			await raw.initialize();
			const again = await raw.request('initialize', {
				protocolVersion: LEGACY,
				capabilities: {},
				clientInfo: { name: 'x', version: '1' },
			});
			assert.ok(again.error, JSON.stringify(again));
			// No servers: only the gateway's own read_result (the governor is on).
			assert.deepEqual((await raw.request('tools/list')).result.tools.map((t) => t.name), ['read_result']);
		} finally {
			await raw.close();
		}
	});
});

describe('2026-07-28 era (no initialize)', () => {
	let raw;
	before(() => {
		raw = startRaw({ servers });
	});
	after(() => raw?.close());

	test('server/discover', async () => {
		const r = await raw.request('server/discover', { _meta: modernMeta() }, { ms: 15000 });
		assert.ok(r.result, JSON.stringify(r));
		const res = r.result;
		assert.ok(res.supportedVersions.includes(MODERN));
		assert.ok(res.supportedVersions.includes(LEGACY));
		assert.ok(res.capabilities?.tools, 'tools capability');
		assert.equal(res.resultType, 'complete');
		assert.equal(typeof res.ttlMs, 'number');
		assert.ok(res.ttlMs >= 0);
		assert.ok(['public', 'private'].includes(res.cacheScope), res.cacheScope);
		const info = res._meta?.['io.modelcontextprotocol/serverInfo'];
		assert.equal(info?.name, 'sluice');
		assert.equal(typeof info?.version, 'string');
	});

	test('tools/list carries resultType, ttlMs and cacheScope', async () => {
		const r = await raw.request('tools/list', { _meta: modernMeta() }, { ms: 15000 });
		assert.ok(r.result, JSON.stringify(r));
		assert.equal(r.result.resultType, 'complete');
		assert.equal(typeof r.result.ttlMs, 'number');
		assert.ok(['public', 'private'].includes(r.result.cacheScope));
		assert.ok(r.result.tools.some((t) => t.name === 'github__echo'));
	});

	test('tools/call result has resultType complete', async () => {
		const r = await raw.request('tools/call', {
			name: 'github__echo',
			arguments: { hello: 'modern' },
			_meta: modernMeta(),
		});
		assert.ok(r.result, JSON.stringify(r));
		assert.equal(r.result.resultType, 'complete');
		assert.deepEqual(JSON.parse(textOf(r.result)), { hello: 'modern' });
		assert.ok(!('ttlMs' in r.result), 'tools/call is not cacheable');
	});

	test('missing clientCapabilities -> -32602', async () => {
		const r = await raw.request('tools/list', {
			_meta: { 'io.modelcontextprotocol/protocolVersion': MODERN },
		});
		assert.equal(r.error?.code, -32602, JSON.stringify(r));
	});

	test('unsupported version -> -32022 with supported and requested', async () => {
		const r = await raw.request('tools/list', {
			_meta: modernMeta({}, { 'io.modelcontextprotocol/protocolVersion': '1999-01-01' }),
		});
		assert.equal(r.error?.code, -32022, JSON.stringify(r));
		assert.equal(r.error.data?.requested, '1999-01-01');
		assert.ok(Array.isArray(r.error.data?.supported));
		assert.ok(r.error.data.supported.includes(MODERN));
	});

	test('initialize sent with 2026 _meta -> method not found', async () => {
		const r = await raw.request('initialize', {
			protocolVersion: MODERN,
			capabilities: {},
			clientInfo: { name: 'x', version: '1' },
			_meta: modernMeta(),
		});
		assert.equal(r.error?.code, -32601, JSON.stringify(r));
	});

	test('the gateway still answers after those errors', async () => {
		const r = await raw.request('tools/call', { name: 'github__echo', arguments: {}, _meta: modernMeta() });
		assert.equal(r.result?.resultType, 'complete', JSON.stringify(r));
	});
});

test('a request without _meta and without initialize -> -32602', async () => {
	const raw = startRaw({ servers });
	try {
		const r = await raw.request('tools/list', {});
		assert.equal(r.error?.code, -32602, JSON.stringify(r));
		// Without params at all, too.
		const r2 = await raw.request('tools/list');
		assert.equal(r2.error?.code, -32602, JSON.stringify(r2));
		// ping needs neither.
		assert.deepEqual((await raw.request('ping')).result, {});
	} finally {
		await raw.close();
	}
});

describe('2026-07-28 tools/call details', () => {
	let raw;
	before(() => {
		raw = startRaw({ servers });
	});
	after(() => raw?.close());

	test('progress reaches a 2026 client before its result', async () => {
		const r = await raw.request(
			'tools/call',
			{ name: 'github__progress', arguments: { steps: 2, interval_ms: 10 }, _meta: modernMeta({}, { progressToken: 'mp' }) },
			{ ms: 15000 },
		);
		assert.equal(r.result?.resultType, 'complete', JSON.stringify(r));
		const idx = raw.all.findIndex((x) => x.msg.id === r.id);
		const notes = raw.all.map((x, i) => [x.msg, i]).filter(([m]) => m.method === 'notifications/progress');
		assert.deepEqual(notes.map(([m]) => m.params.progress), [1, 2]);
		for (const [m, i] of notes) {
			assert.equal(m.params.progressToken, 'mp');
			assert.ok(i < idx);
		}
	});

	test('notifications/cancelled works for a 2026 request', async () => {
		raw.send({ jsonrpc: '2.0', id: 'mc', method: 'tools/call', params: { name: 'github__slow', arguments: { ms: 500 }, _meta: modernMeta() } });
		await sleep(50);
		raw.notify('notifications/cancelled', { requestId: 'mc' });
		assert.ok(await raw.none((m) => m.id === 'mc', 800));
		const r = await raw.request('tools/list', { _meta: modernMeta() });
		assert.equal(r.result?.resultType, 'complete');
	});

	test('a tool that asks the client for input does not hang a 2026 client', async () => {
		// No server-to-client requests in 2026-07-28: either MRTR
		// (input_required) or a clean tool error, never silence.
		const r = await raw.request(
			'tools/call',
			{ name: 'github__ask_user', arguments: { question: 'still there?' }, _meta: modernMeta({ elicitation: {} }) },
			{ ms: 5000 },
		);
		assert.ok(r.result, JSON.stringify(r));
		assert.ok(['complete', 'input_required'].includes(r.result.resultType), JSON.stringify(r));
		if (r.result.resultType === 'complete') assert.equal(r.result.isError, true);
		assert.ok(!raw.all.some((x) => x.msg.method === 'elicitation/create'), 'no elicitation/create request sent to a 2026 client');
	});

	test('no legacy notifications are pushed to a 2026 client', async () => {
		await raw.request('tools/call', { name: 'github__add_tool', arguments: { name: 'modern_fresh' }, _meta: modernMeta() });
		await sleep(200);
		assert.ok(!raw.all.some((x) => x.msg.method === 'notifications/tools/list_changed'));
		const r = await raw.request('tools/list', { _meta: modernMeta() });
		assert.ok(r.result.tools.some((t) => t.name === 'github__modern_fresh'), 'the new tool is listed');
	});
});
