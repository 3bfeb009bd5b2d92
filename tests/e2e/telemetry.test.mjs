// OpenTelemetry export end to end, against a tiny OTLP/HTTP receiver written
// here: spans (an execute_code span with a child span per tool call, trace id
// per program, parent = the program span; a lone span for a direct call and
// an invoke_tool call) and metrics arrive as OTLP JSON, match its shape, and
// carry no payloads. `sluice exec` sends what is queued before it exits.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';

import { connect, catalog, closeAll, toolsWhen, eventually, execCode, runSluice, writeConfig, jsonOf } from './helpers.mjs';

after(closeAll);

const MARK = 'OTEL-MARKER-5tq8Lw';
const HEX32 = /^[0-9a-f]{32}$/;
const HEX16 = /^[0-9a-f]{16}$/;
const NANOS = /^\d{19}$/; // unix nanoseconds, as OTLP JSON writes 64-bit integers

// The receiver: keeps every parsed body by path and checks the basics of OTLP/HTTP.
function receiver() {
	const got = { traces: [], metrics: [], raw: [], bad: [] };
	const server = http.createServer((req, res) => {
		let body = '';
		req.on('data', (b) => (body += b));
		req.on('end', () => {
			got.raw.push(body);
			if (req.method !== 'POST' || !/^application\/json/.test(req.headers['content-type'] ?? ''))
				got.bad.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
			try {
				const j = JSON.parse(body);
				if (req.url === '/v1/traces') got.traces.push(j);
				else if (req.url === '/v1/metrics') got.metrics.push(j);
				else got.bad.push(`path ${req.url}`);
			} catch (e) {
				got.bad.push(`not JSON: ${e.message}`);
			}
			res.writeHead(200, { 'content-type': 'application/json' });
			res.end('{}');
		});
	});
	return new Promise((resolve) =>
		server.listen(0, '127.0.0.1', () => resolve({ got, server, url: `http://127.0.0.1:${server.address().port}` })),
	);
}

function spansOf(got) {
	const out = [];
	for (const t of got.traces) {
		assert.ok(Array.isArray(t.resourceSpans));
		for (const rs of t.resourceSpans) {
			assert.ok(rs.resource.attributes.some((a) => a.key === 'service.name' && a.value.stringValue === 'sluice'));
			assert.ok(Array.isArray(rs.scopeSpans));
			for (const ss of rs.scopeSpans) {
				assert.equal(ss.scope.name, 'sluice');
				assert.ok(Array.isArray(ss.spans));
				out.push(...ss.spans);
			}
		}
	}
	return out;
}

const attrs = (s) => Object.fromEntries(s.attributes.map((a) => [a.key, Object.values(a.value)[0]]));

function checkSpan(s) {
	for (const k of ['traceId', 'spanId', 'parentSpanId', 'name', 'startTimeUnixNano', 'endTimeUnixNano', 'attributes'])
		assert.ok(k in s, `span has ${k}`);
	assert.match(s.traceId, HEX32);
	assert.match(s.spanId, HEX16);
	assert.ok(s.parentSpanId === '' || HEX16.test(s.parentSpanId));
	assert.match(s.startTimeUnixNano, NANOS);
	assert.match(s.endTimeUnixNano, NANOS);
	assert.ok(BigInt(s.endTimeUnixNano) >= BigInt(s.startTimeUnixNano));
	const now = BigInt(Date.now()) * 1000000n;
	assert.ok(now - BigInt(s.endTimeUnixNano) < 600n * 1000000000n, 'times are wall-clock unix nanoseconds');
	assert.ok(Array.isArray(s.attributes));
	for (const a of s.attributes) {
		assert.equal(typeof a.key, 'string');
		assert.equal(Object.keys(a.value).length, 1);
		assert.ok(['stringValue', 'intValue', 'boolValue', 'doubleValue'].includes(Object.keys(a.value)[0]));
	}
	assert.ok([1, 2].includes(s.status.code));
}

let rx, pass, router;

before(async () => {
	rx = await receiver();
	const telemetry = { endpoint: rx.url + '/', intervalMs: 100 };
	[pass, router] = await Promise.all([
		connect({
			servers: { github: catalog('github') },
			sluice: { exposure: 'passthrough', codeMode: { enabled: true }, telemetry, audit: { enabled: false } },
		}),
		connect({ servers: { github: catalog('github') }, sluice: { exposure: 'router', telemetry, audit: { enabled: false } } }),
	]);
	await toolsWhen(pass.client, (t) => t.some((x) => x.name === 'github__echo'));
	await eventually(async () => {
		const r = await router.client.callTool({ name: 'list_servers', arguments: {} });
		return jsonOf(r).every((s) => (s.status ?? s.state) === 'ready');
	}, 10000, 100, 'router upstream ready');
	await eventually(async () => (await execCode(pass.client, 'return 1')).text === '1', 10000, 100, 'code mode');
});
after(async () => {
	await Promise.all([pass?.close(), router?.close()]);
	rx?.server.close();
});

describe('OTLP/HTTP JSON export', () => {
	test('a program is a trace: execute_code span with a child span per call', async () => {
		const r = await execCode(
			pass.client,
			`await tools.github.echo({ m: '${MARK}' }); await tools.github.echo({ m: '${MARK}', n: 2 }); return 'ok'`,
		);
		assert.equal(r.text, 'ok');
		const { prog, kids } = await eventually(() => {
			const spans = spansOf(rx.got);
			const progs = spans.filter((s) => s.name === 'execute_code' && attrs(s)['sluice.program.calls'] === '2');
			if (!progs.length) return null;
			const prog = progs[progs.length - 1];
			const kids = spans.filter((s) => s.parentSpanId === prog.spanId && s.traceId === prog.traceId);
			return kids.length === 2 ? { prog, kids } : null;
		}, 5000, 50, 'the program span and its two children');
		checkSpan(prog);
		assert.equal(prog.parentSpanId, '');
		assert.equal(attrs(prog)['sluice.outcome'], 'ok');
		assert.equal(attrs(prog)['sluice.program.output_bytes'], '2');
		assert.equal(prog.status.code, 1);
		for (const k of kids) {
			checkSpan(k);
			assert.equal(k.name, 'tools/call github.echo');
			assert.notEqual(k.spanId, prog.spanId);
			const a = attrs(k);
			assert.equal(a['sluice.origin'], 'code');
			assert.equal(a['sluice.outcome'], 'ok');
			assert.equal(a['sluice.server'], 'github');
			assert.equal(a['sluice.tool'], 'echo');
			assert.equal(a['sluice.program.id'], attrs(prog)['sluice.program.id']);
			assert.ok(BigInt(k.startTimeUnixNano) >= BigInt(prog.startTimeUnixNano));
			assert.ok(BigInt(k.endTimeUnixNano) <= BigInt(prog.endTimeUnixNano));
		}
		assert.notEqual(kids[0].spanId, kids[1].spanId);
	});

	test('direct and invoke_tool calls are spans of their own traces', async () => {
		await pass.client.callTool({ name: 'github__echo', arguments: { m: MARK, via: 'direct' } });
		await router.client.callTool({ name: 'invoke_tool', arguments: { server: 'github', tool: 'echo', arguments: { m: MARK } } });
		const [d, i] = await eventually(() => {
			const spans = spansOf(rx.got);
			const d = spans.find((s) => attrs(s)['sluice.origin'] === 'direct' && s.name === 'tools/call github.echo');
			const i = spans.find((s) => attrs(s)['sluice.origin'] === 'router');
			return d && i ? [d, i] : null;
		}, 5000, 50, 'direct and router spans');
		for (const s of [d, i]) {
			checkSpan(s);
			assert.equal(s.parentSpanId, '');
			assert.equal(attrs(s)['sluice.cache_hit'], false);
		}
		assert.notEqual(d.traceId, i.traceId);
	});

	test('metrics: call and program counters and a duration histogram', async () => {
		const m = await eventually(() => {
			const all = rx.got.metrics.flatMap((b) => b.resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics)));
			const calls = all.filter((x) => x.name === 'sluice.calls');
			const progs = all.filter((x) => x.name === 'sluice.programs');
			return calls.length && progs.length ? { all, calls, progs } : null;
		}, 5000, 50, 'metrics');
		const c = m.calls[m.calls.length - 1];
		assert.equal(c.sum.aggregationTemporality, 2);
		assert.equal(c.sum.isMonotonic, true);
		for (const p of c.sum.dataPoints) {
			assert.match(p.startTimeUnixNano, NANOS);
			assert.match(p.timeUnixNano, NANOS);
			assert.match(p.asInt, /^\d+$/);
			assert.ok(['direct', 'router', 'code'].includes(attrs(p)['sluice.origin']));
		}
		const h = m.all.filter((x) => x.name === 'sluice.call.duration').pop();
		for (const p of h.histogram.dataPoints) {
			assert.equal(p.bucketCounts.length, p.explicitBounds.length + 1);
			assert.equal(p.bucketCounts.reduce((a, b) => a + Number(b), 0), Number(p.count));
		}
	});

	test('no payloads: no argument or result value in any export', () => {
		assert.ok(rx.got.raw.length > 0);
		for (const b of rx.got.raw) assert.ok(!b.includes(MARK));
		assert.deepEqual(rx.got.bad, []);
	});
});

describe('telemetry config and exit', () => {
	test('sluice exec sends its spans before it exits', async () => {
		const own = await receiver();
		try {
			const cfg = writeConfig({ github: catalog('github') }, { telemetry: { endpoint: own.url, intervalMs: 60000 }, audit: { enabled: false } });
			const r = await runSluice(['exec', '--config', cfg, `await tools.github.echo({}); return 'x'`]);
			assert.equal(r.code, 0, r.stderr);
			const spans = spansOf(own.got);
			const prog = spans.find((s) => s.name === 'execute_code');
			assert.ok(prog, 'the program span');
			assert.ok(spans.some((s) => s.parentSpanId === prog.spanId && s.traceId === prog.traceId));
			assert.ok(own.got.metrics.length >= 1);
		} finally {
			own.server.close();
		}
	});

	test('a collector that is down costs nothing: calls still answer', async () => {
		const cfg = writeConfig({ github: catalog('github') }, { telemetry: { endpoint: 'http://127.0.0.1:9', intervalMs: 50, timeoutMs: 500 }, audit: { enabled: false } });
		const r = await runSluice(['exec', '--config', cfg, `await tools.github.echo({}); return 'x'`]);
		assert.equal(r.code, 0, r.stderr);
		assert.equal(r.stdout.trim(), 'x');
	});

	test('bad config stops sluice at start', async () => {
		for (const [t, re] of [
			[{ endpoint: 'ftp://x' }, /sluice\.telemetry\.endpoint: must be an http:\/\/ or https:\/\/ URL/],
			[{ endpoint: 'http://x', intervalMs: 0 }, /intervalMs/],
			[{ endpont: 'http://x' }, /unknown key "endpont"/],
		]) {
			const r = await runSluice(['exec', '--config', writeConfig({}, { telemetry: t }), 'return 1']);
			assert.equal(r.code, 2);
			assert.match(r.stderr, re);
		}
	});
});
