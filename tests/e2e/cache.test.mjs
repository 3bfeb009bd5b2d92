// The cache stage end to end. The catalog server cannot count its calls, so
// the cache is proven by time: `slow {ms: 500}` answers after 500 ms, and a
// second identical call answered from the cache comes back in well under
// that, on each path (direct tools/call, invoke_tool, a program's call);
// other arguments miss; entries expire after ttlMs; readOnly caches tools
// annotated readOnlyHint; the audit line of a hit says cache_hit.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { connect, catalog, closeAll, toolsWhen, eventually, execCode, writeConfig, textOf, jsonOf, sleep } from './helpers.mjs';

after(closeAll);

const SERVERS = { github: catalog('github') };
const SLOW = 500;
const FAST = 250; // a hit must come back well under the upstream's 500 ms

async function timed(fn) {
	const t0 = performance.now();
	const r = await fn();
	return { r, ms: performance.now() - t0 };
}

let pass, router, passAudit;

before(async () => {
	passAudit = path.join(path.dirname(writeConfig({})), 'audit.jsonl');
	[pass, router] = await Promise.all([
		connect({
			servers: SERVERS,
			sluice: {
				exposure: 'passthrough',
				codeMode: { enabled: true, timeoutMs: 10000 },
				cache: { tools: ['github.slow'] },
				audit: { file: passAudit },
			},
		}),
		// readOnly instead of a glob, and a short TTL.
		connect({ servers: SERVERS, sluice: { exposure: 'router', cache: { readOnly: true, ttlMs: 1500 } } }),
	]);
	await toolsWhen(pass.client, (t) => t.some((x) => x.name === 'github__slow'));
	await eventually(async () => {
		const r = await router.client.callTool({ name: 'list_servers', arguments: {} });
		return jsonOf(r).every((s) => (s.status ?? s.state) === 'ready');
	}, 10000, 100, 'router upstream ready');
	await eventually(async () => (await execCode(pass.client, 'return 1')).text === '1', 10000, 100, 'code mode');
});
after(() => Promise.all([pass?.close(), router?.close()]));

const direct = (args) => pass.client.callTool({ name: 'github__slow', arguments: args });
const invoke = (args) =>
	router.client.callTool({ name: 'invoke_tool', arguments: { server: 'github', tool: 'slow', arguments: args } });
// Returns the text and the time the call itself took inside the program.
async function fromProgram(args) {
	const r = await execCode(
		pass.client,
		`const t = Date.now(); const v = await tools.github.slow(${JSON.stringify(args)});
		 return JSON.stringify({ ms: Date.now() - t, v });`,
	);
	assert.ok(!r.isError, r.text);
	return JSON.parse(r.text);
}

describe('cache hits on every path', () => {
	test('direct tools/call: the second identical call is answered from the cache', async () => {
		const a = await timed(() => direct({ ms: SLOW }));
		const b = await timed(() => direct({ ms: SLOW }));
		console.log(`direct: first ${a.ms.toFixed(1)} ms, cached ${b.ms.toFixed(1)} ms`);
		assert.ok(a.ms >= SLOW, `first call ${a.ms} ms`);
		assert.ok(b.ms < FAST, `second call ${b.ms} ms`);
		assert.equal(textOf(b.r), textOf(a.r));
		assert.equal(textOf(b.r), `slept ${SLOW} ms`);
		assert.ok(!b.r.isError);
		// Other arguments miss.
		const c = await timed(() => direct({ ms: SLOW + 1 }));
		assert.ok(c.ms >= SLOW, `other arguments ${c.ms} ms`);
	});

	test('invoke_tool (readOnly: slow is annotated readOnlyHint)', async () => {
		const a = await timed(() => invoke({ ms: SLOW }));
		const b = await timed(() => invoke({ ms: SLOW }));
		console.log(`router: first ${a.ms.toFixed(1)} ms, cached ${b.ms.toFixed(1)} ms`);
		assert.ok(a.ms >= SLOW, `first call ${a.ms} ms`);
		assert.ok(b.ms < FAST, `second call ${b.ms} ms`);
		assert.equal(textOf(b.r), `slept ${SLOW} ms`);
		const c = await timed(() => invoke({ ms: SLOW + 2 }));
		assert.ok(c.ms >= SLOW, `other arguments ${c.ms} ms`);
	});

	test('a program: the second call is a hit, and so is a call cached by a direct call', async () => {
		const a = await fromProgram({ ms: SLOW + 3 });
		const b = await fromProgram({ ms: SLOW + 3 });
		console.log(`program: first ${a.ms} ms, cached ${b.ms} ms`);
		assert.ok(a.ms >= SLOW, `first call ${a.ms} ms`);
		assert.ok(b.ms < FAST, `second call ${b.ms} ms`);
		assert.deepEqual(b.v, a.v);
		// The key is server, tool and arguments, whatever the path: the
		// direct test's {ms: 500} is already there.
		const c = await fromProgram({ ms: SLOW });
		assert.ok(c.ms < FAST, `cached by the direct call: ${c.ms} ms`);
		const d = await fromProgram({ ms: SLOW + 4 });
		assert.ok(d.ms >= SLOW, `other arguments ${d.ms} ms`);
	});

	test('argument key order does not matter (canonical key)', async () => {
		const a = await timed(() => direct({ ms: SLOW + 5, x: { b: 1, a: 2 } }));
		const b = await timed(() => direct({ x: { a: 2, b: 1 }, ms: SLOW + 5 }));
		assert.ok(a.ms >= SLOW && b.ms < FAST, `${a.ms} then ${b.ms} ms`);
	});

	test('the audit line of a hit says cache_hit', async () => {
		const ls = await eventually(() => {
			const all = readFileSync(passAudit, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
			const slow = all.filter((x) => x.type === 'call' && x.tool === 'slow');
			return slow.some((x) => x.origin === 'code' && x.cache_hit) ? slow : null;
		}, 5000, 50, 'audit lines');
		const hits = ls.filter((x) => x.cache_hit);
		const misses = ls.filter((x) => !x.cache_hit);
		assert.ok(hits.length >= 4 && misses.length >= 4, `${hits.length} hits, ${misses.length} misses`);
		for (const h of hits) {
			assert.equal(h.outcome, 'ok');
			assert.ok(h.duration_ms < FAST);
			assert.ok(misses.some((m) => m.args_sha256 === h.args_sha256), 'a hit follows a miss with the same arguments');
		}
		assert.deepEqual([...new Set(hits.map((x) => x.origin))].sort(), ['code', 'direct']);
	});
});

describe('cache limits', () => {
	test('entries expire after ttlMs', async () => {
		const args = { ms: SLOW + 6 };
		const a = await timed(() => invoke(args));
		const b = await timed(() => invoke(args));
		assert.ok(a.ms >= SLOW && b.ms < FAST, `${a.ms} then ${b.ms} ms`);
		await sleep(1600);
		const c = await timed(() => invoke(args));
		assert.ok(c.ms >= SLOW, `after the TTL: ${c.ms} ms`);
	});

	test('failed calls are not cached: a timed-out call is slow again', async () => {
		const g = await connect({
			servers: { github: catalog('github', { timeout: 200 }) },
			sluice: { exposure: 'passthrough', cache: { tools: ['github.*'] } },
		});
		try {
			await toolsWhen(g.client, (t) => t.some((x) => x.name === 'github__slow'));
			const a = await timed(() => g.client.callTool({ name: 'github__slow', arguments: { ms: 400 } }));
			assert.ok(a.r.isError, 'timed out');
			const b = await timed(() => g.client.callTool({ name: 'github__slow', arguments: { ms: 400 } }));
			assert.ok(b.r.isError, 'timed out again, not served from the cache');
			assert.ok(b.ms >= 150, `${b.ms} ms`);
			// An isError result is not cached either.
			const f1 = await g.client.callTool({ name: 'github__fail', arguments: { message: 'x' } });
			assert.ok(f1.isError);
		} finally {
			await g.close();
		}
	});
});
