// W3C trace context in _meta (MCP 2026-07-28 "_meta", SEP-414) through
// sluice: an SDK client sends traceparent, tracestate and baggage; a test
// upstream answers with the _meta it received. With telemetry exporting to
// a receiver written here, sluice's span continues the client's trace (its
// trace id, the client's span as parent) and the upstream's traceparent
// names sluice's span as its parent; without telemetry the context passes
// unchanged. Invalid or oversized context is dropped, never forwarded.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';

import { connect, closeAll, tinyServer, toolsWhen, eventually, jsonOf, textOf } from './helpers.mjs';

after(closeAll);

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const TP = `00-${TRACE}-${CLIENT_SPAN}-01`;
const TP_RE = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

// Answers every call with the _meta its request carried.
const echoMeta = () =>
	tinyServer({
		name: 'metaecho',
		tools: `[{ name: 'meta', description: 'Echo the request _meta', inputSchema: { type: 'object', properties: {} } }]`,
		call: `(params, ok) => ok({ content: [{ type: 'text', text: JSON.stringify(params._meta ?? {}) }] })`,
	});

function receiver() {
	const spans = [];
	const server = http.createServer((req, res) => {
		let body = '';
		req.on('data', (b) => (body += b));
		req.on('end', () => {
			if (req.url === '/v1/traces')
				for (const rs of JSON.parse(body).resourceSpans ?? [])
					for (const ss of rs.scopeSpans) spans.push(...ss.spans);
			res.writeHead(200, { 'content-type': 'application/json' });
			res.end('{}');
		});
	});
	return new Promise((resolve) =>
		server.listen(0, '127.0.0.1', () => resolve({ spans, server, url: `http://127.0.0.1:${server.address().port}` })),
	);
}

const call = (gw, _meta) => gw.client.callTool({ name: 'metaecho__meta', arguments: {}, _meta });

let plain, traced, rx;

before(async () => {
	rx = await receiver();
	[plain, traced] = await Promise.all([
		connect({ servers: { metaecho: echoMeta() }, sluice: { audit: { enabled: false } } }),
		connect({
			servers: { metaecho: echoMeta() },
			sluice: {
				codeMode: { enabled: true },
				telemetry: { endpoint: rx.url, intervalMs: 100 },
				audit: { enabled: false },
			},
		}),
	]);
	await Promise.all([plain, traced].map((g) => toolsWhen(g.client, (t) => t.some((x) => x.name === 'metaecho__meta'))));
});
after(async () => {
	await Promise.all([plain?.close(), traced?.close()]);
	rx?.server.close();
});

describe('trace context toward upstreams', () => {
	test('telemetry off: traceparent, tracestate and baggage pass unchanged', async () => {
		const got = jsonOf(await call(plain, { traceparent: TP, tracestate: 'congo=t61rcWkgMzE', baggage: 'userId=alice' }));
		assert.equal(got.traceparent, TP);
		assert.equal(got.tracestate, 'congo=t61rcWkgMzE');
		assert.equal(got.baggage, 'userId=alice');
	});

	test('an invalid traceparent is never forwarded, nor its tracestate', async () => {
		for (const bad of [`00-${TRACE.toUpperCase()}-${CLIENT_SPAN}-01`, `00-${'0'.repeat(32)}-${CLIENT_SPAN}-01`, 'garbage', `${TP}\r\nX-Forged: 1`]) {
			const got = jsonOf(await call(plain, { traceparent: bad, tracestate: 'congo=x', baggage: 'a=1' }));
			assert.equal(got.traceparent, undefined, bad);
			assert.equal(got.tracestate, undefined);
			assert.equal(got.baggage, undefined);
		}
	});

	test('oversized or malformed tracestate and baggage are dropped, the traceparent kept', async () => {
		const members = Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(',');
		const long = `k=${'v'.repeat(250)},j=${'v'.repeat(250)},l=${'v'.repeat(20)}`; // 525 characters
		for (const [tracestate, baggage] of [
			[members, `a=${'b'.repeat(8200)}`],
			[long, 'a=1\r\nX-Forged: 1'],
		]) {
			const got = jsonOf(await call(plain, { traceparent: TP, tracestate, baggage }));
			assert.equal(got.traceparent, TP);
			assert.equal(got.tracestate, undefined);
			assert.equal(got.baggage, undefined);
		}
	});

	test("telemetry on: sluice's span continues the client's trace and is the upstream parent", async () => {
		const got = jsonOf(await call(traced, { traceparent: TP, tracestate: 'congo=t61rcWkgMzE', baggage: 'userId=alice' }));
		const [, trace, parent, flags] = TP_RE.exec(got.traceparent);
		assert.equal(trace, TRACE);
		assert.notEqual(parent, CLIENT_SPAN);
		assert.notEqual(parent, '0'.repeat(16));
		assert.equal(flags, '01');
		assert.equal(got.tracestate, 'congo=t61rcWkgMzE');
		assert.equal(got.baggage, 'userId=alice');
		const span = await eventually(() => rx.spans.find((s) => s.spanId === parent), 5000, 50, 'the call span');
		assert.equal(span.traceId, TRACE);
		assert.equal(span.parentSpanId, CLIENT_SPAN);
		assert.equal(span.name, 'tools/call metaecho.meta');
	});

	test("telemetry on: only the flags W3C defines go on from sluice's span", async () => {
		const got = jsonOf(await call(traced, { traceparent: `00-${TRACE}-${CLIENT_SPAN}-ff` }));
		assert.equal(TP_RE.exec(got.traceparent)[3], '03');
		const plainGot = jsonOf(await call(plain, { traceparent: `00-${TRACE}-${CLIENT_SPAN}-ff` }));
		assert.equal(plainGot.traceparent, `00-${TRACE}-${CLIENT_SPAN}-ff`, 'passed through as it came');
	});

	test("telemetry on, no context from the client: a new trace, sluice's span as the parent", async () => {
		const got = jsonOf(await call(traced, undefined));
		const [, trace, parent] = TP_RE.exec(got.traceparent);
		assert.notEqual(trace, TRACE);
		const span = await eventually(() => rx.spans.find((s) => s.spanId === parent && s.traceId === trace), 5000, 50, 'the span');
		assert.equal(span.parentSpanId, '');
	});

	test('a program continues the trace of its execute_code request', async () => {
		const r = await traced.client.callTool({
			name: 'execute_code',
			arguments: { code: 'return await tools.metaecho.meta({})' },
			_meta: { traceparent: TP, baggage: 'userId=alice' },
		});
		const upstream = JSON.parse(textOf(r)); // the program's value: the _meta the upstream got
		const [, trace, parent] = TP_RE.exec(upstream.traceparent);
		assert.equal(trace, TRACE);
		assert.equal(upstream.baggage, 'userId=alice');
		const { prog, kid } = await eventually(() => {
			const kid = rx.spans.find((s) => s.spanId === parent);
			const prog = kid && rx.spans.find((s) => s.name === 'execute_code' && s.spanId === kid.parentSpanId);
			return prog ? { prog, kid } : null;
		}, 5000, 50, 'the program span and its call span');
		assert.equal(kid.traceId, TRACE);
		assert.equal(prog.traceId, TRACE);
		assert.equal(prog.parentSpanId, CLIENT_SPAN);
	});
});
