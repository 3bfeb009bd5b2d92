// Per-identity limits end to end (docs/stages/quota.md): static-token
// identities over HTTP, a token bucket and a daily quota per subject, the
// refusal a client can act on (JSON-RPC error -31429 with retryAfterSeconds;
// 429 + Retry-After when it is the whole body; inside an SSE stream when the
// status was already sent), a program's calls counted and refused in the
// program, counters kept across a reload, and `sluice status` / GET /status.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { catalog, closeAll, eventually, httpRequest, modernMeta, runSluice, startHttp, writeConfig, LEGACY, MODERN } from './helpers.mjs';
import { startRedis, redisCli } from './redis.mjs';

let redis;
after(async () => {
	await closeAll();
	await redis?.stop();
});

const TOKENS = {
	alice: 'alice-token-5c1d',
	bob: 'bob-token-0e7a',
	carol: 'carol-token-93bb',
	dave: 'dave-token-2f48',
	erin: 'erin-token-71aa',
	frank: 'frank-token-08d3',
	gina: 'gina-token-6e25',
	hank: 'hank-token-c4f9',
};
const RATE_LIMITED = -31429;
const TOOL = 'github__echo';

const QUOTAS = {
	// 6 a minute: a token every 10 s, so the refusals below hold for the
	// test's few seconds however slow the machine.
	subjects: {
		alice: { callsPerMinute: 6, burst: 3 },
		carol: { callsPerDay: 5 },
		dave: { callsPerMinute: 6, burst: 2 },
		erin: { callsPerMinute: 6, burst: 1 },
	},
};

function sluiceSection(quotas = QUOTAS, extra = {}) {
	return {
		http: { auth: { tokens: Object.entries(TOKENS).map(([subject, token]) => ({ token, subject })) } },
		codeMode: { enabled: true, timeoutMs: 20000 },
		quotas,
		...extra,
	};
}

function post(gw, who, body, headers = {}) {
	return httpRequest({ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST',
		headers: { authorization: `Bearer ${TOKENS[who]}`, ...headers } }, body);
}

// A session-era session for who: call(name, args, meta) resolves the raw response.
async function session(gw, who) {
	const init = await post(gw, who, { jsonrpc: '2.0', id: 0, method: 'initialize', params: {
		protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'quota-e2e', version: '1' } } });
	assert.equal(init.status, 200, init.text);
	const sid = init.headers['mcp-session-id'];
	const h = { 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY };
	await post(gw, who, { jsonrpc: '2.0', method: 'notifications/initialized' }, h);
	let id = 1;
	return {
		call: (name, args = {}, meta) => post(gw, who, { jsonrpc: '2.0', id: id++, method: 'tools/call',
			params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) } }, h),
		list: () => post(gw, who, { jsonrpc: '2.0', id: id++, method: 'tools/list' }, h),
	};
}

function assertLimited(r, { window, scope = 'subject', limit }) {
	const err = r.json?.error;
	assert.ok(err, `a JSON-RPC error: ${r.text}`);
	assert.equal(err.code, RATE_LIMITED);
	assert.match(err.message, /^rate limit: .*retry after \d+ s$/);
	assert.equal(err.data.scope, scope);
	assert.equal(err.data.window, window);
	assert.equal(err.data.limit, limit);
	assert.ok(Number.isInteger(err.data.retryAfterSeconds) && err.data.retryAfterSeconds >= 1);
	return err;
}

describe('per-identity limits', () => {
	let gw;

	before(async () => {
		gw = await startHttp({ servers: { github: catalog('github') }, sluice: sluiceSection() });
		// The upstream answers its tools before the tests count calls.
		const s = await session(gw, 'bob');
		for (let i = 0; i < 100; i++) {
			const r = await s.list();
			if (r.json?.result?.tools?.some((t) => t.name === TOOL)) return;
			await new Promise((res) => setTimeout(res, 100));
		}
		throw new Error(`${TOOL} never listed`);
	});

	// A sanitizer build (SLUICE=build/san/sluice) reports on stderr.
	after(() => assert.doesNotMatch(gw.stderr(), /AddressSanitizer|LeakSanitizer|runtime error/));

	test('the burst passes, the next call gets 429 with Retry-After; another subject is unaffected', async () => {
		const alice = await session(gw, 'alice'), bob = await session(gw, 'bob');
		for (let i = 0; i < 3; i++) {
			const r = await alice.call(TOOL, { text: `hi ${i}` });
			assert.equal(r.status, 200, r.text);
			assert.equal(r.json.result.isError, undefined, r.text);
		}
		const r = await alice.call(TOOL, { text: 'one too many' });
		assert.equal(r.status, 429, r.text);
		assert.match(r.headers['content-type'], /^application\/json/);
		const err = assertLimited(r, { window: 'minute', limit: 6 });
		assert.equal(r.headers['retry-after'], String(err.data.retryAfterSeconds));
		assert.ok(err.data.retryAfterSeconds <= 10);
		assert.match(err.message, /subject 'alice' is over its 6 calls per minute \(burst 3\)/);
		// Bob, with no limits of his own, calls on.
		for (let i = 0; i < 5; i++) assert.equal((await bob.call(TOOL, { text: 'bob' })).status, 200);

		// A call that asked for progress is answered on an SSE stream, whose
		// status (200) is sent before the answer: the error alone tells.
		const sse = await alice.call(TOOL, { text: 'progress' }, { progressToken: 'p1' });
		assert.equal(sse.status, 200);
		assert.match(sse.headers['content-type'], /^text\/event-stream/);
		assertLimited(sse, { window: 'minute', limit: 6 });
	});

	test('a 2026-07-28 request is refused the same way', async () => {
		const r = await post(gw, 'alice', { jsonrpc: '2.0', id: 7, method: 'tools/call',
			params: { name: TOOL, arguments: { text: 'modern' }, _meta: modernMeta() } },
		{ 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': TOOL });
		assert.equal(r.status, 429, r.text);
		assert.ok(Number(r.headers['retry-after']) >= 1);
		assertLimited(r, { window: 'minute', limit: 6 });
	});

	test('a day quota of 5 refuses the 6th call until 00:00 UTC', async () => {
		const carol = await session(gw, 'carol');
		for (let i = 0; i < 5; i++) assert.equal((await carol.call(TOOL, { text: `c${i}` })).status, 200);
		const r = await carol.call(TOOL, { text: 'sixth' });
		assert.equal(r.status, 429, r.text);
		const err = assertLimited(r, { window: 'day', limit: 5 });
		const now = new Date();
		const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
		const expected = Math.ceil((midnight - now.getTime()) / 1000);
		assert.ok(Math.abs(err.data.retryAfterSeconds - expected) <= 5, `${err.data.retryAfterSeconds} vs ${expected}`);
		assert.match(err.message, /made its 5 calls for today/);
	});

	test("a program's calls count, and the refused one throws in the program", async () => {
		const dave = await session(gw, 'dave');
		const code = `
			const seen = [];
			for (let i = 0; i < 3; i++) {
				try { await tools.github.echo({ text: 'p' + i }); seen.push('ok'); }
				catch (e) { seen.push(e.message); }
			}
			return seen;`;
		const r = await dave.call('execute_code', { code });
		assert.equal(r.status, 200, r.text);
		const text = r.json.result.content.map((c) => c.text).join('\n');
		assert.equal(r.json.result.isError, undefined, text);
		const seen = JSON.parse(text);
		// The program took one of dave's two (it is a call for quotas), its
		// first tool call the other.
		assert.equal(seen[0], 'ok');
		for (const s of seen.slice(1))
			assert.match(s, /^rate limit: subject 'dave' is over its 6 calls per minute \(burst 2\); retry after \d+ s$/);
		// The next direct call is refused by the bucket the program emptied,
		// and so is the next program: a caller's quota bounds its programs.
		assertLimited(await dave.call(TOOL, { text: 'after' }), { window: 'minute', limit: 6 });
		const again = await dave.call('execute_code', { code: 'return 1' });
		assert.equal(again.status, 200, again.text);
		assert.equal(again.json.result.isError, true);
		assert.match(again.json.result.content[0].text,
			/^rate limit: subject 'dave' is over its 6 calls per minute \(burst 2\); retry after \d+ s$/);
	});

	test('sluice status and GET /status show the counters and no secret', async () => {
		const url = `http://127.0.0.1:${gw.port}`;
		const json = await runSluice(['status', '--url', url, '--json']);
		assert.equal(json.code, 0, json.stderr);
		const st = JSON.parse(json.stdout);
		assert.equal(st.version, '0.1.0');
		assert.ok(st.uptimeSeconds >= 0);
		assert.deepEqual(st.upstreams.map((u) => [u.name, u.state]), [['github', 'ready']]);
		assert.ok(st.upstreams[0].tools > 0);
		assert.ok(st.sessions >= 4);
		assert.deepEqual(st.programs, { running: 0, queued: 0 });
		const row = (name) => st.quotas.counters.find((c) => c.scope === 'subject' && c.name === name);
		assert.deepEqual(row('alice'), { scope: 'subject', name: 'alice', tokens: 0, callsToday: 3,
			limits: { callsPerMinute: 6, burst: 3, callsPerDay: null } });
		assert.equal(row('carol').callsToday, 5);
		assert.equal(row('carol').tokens, null);
		assert.equal(row('dave').callsToday, 2);
		assert.equal(row('bob'), undefined, 'an unlimited subject is not counted');
		assert.equal(st.quotas.maxIdentities, 10000);

		const table = await runSluice(['status', '--url', url]);
		assert.equal(table.code, 0, table.stderr);
		assert.match(table.stdout, /^UPSTREAM\s+STATE\s+TOOLS$/m);
		assert.match(table.stdout, /^github\s+ready\s+\d+$/m);
		assert.match(table.stdout, /^subject\s+alice\s+0\s+6\s+3\s+3\s+-$/m);
		assert.match(table.stdout, /^subject\s+carol\s+-\s+-\s+-\s+5\s+5$/m);
		for (const t of Object.values(TOKENS)) {
			assert.ok(!json.stdout.includes(t) && !table.stdout.includes(t), 'no token in the status');
		}

		// A loopback peer needs no credential, unless the request says a
		// proxy relayed it: then it is not local (tests/e2e/operator.test.mjs).
		const plain = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/status', method: 'GET' });
		assert.equal(plain.status, 200);
		assert.equal(plain.headers['cache-control'], 'no-store');
		const fwd = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/status', method: 'GET',
			headers: { 'x-forwarded-for': '203.0.113.9', forwarded: 'for=203.0.113.9' } });
		assert.equal(fwd.status, 403);
		const wrong = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/status', method: 'POST' }, {});
		assert.equal(wrong.status, 405);
		assert.equal(wrong.headers.allow, 'GET');
	});

	test('the counters survive a reload that leaves sluice.quotas as it was', async () => {
		const erin = await session(gw, 'erin');
		assert.equal((await erin.call(TOOL, { text: 'one' })).status, 200);
		assert.equal((await erin.call(TOOL, { text: 'two' })).status, 429);
		// Another section changes; the quotas section does not.
		const cfg = JSON.parse(fs.readFileSync(gw.configPath, 'utf8'));
		cfg.sluice.governor = { maxTokens: 5000 };
		fs.writeFileSync(gw.configPath, JSON.stringify(cfg));
		const before = gw.stderr().length;
		gw.proc.kill('SIGHUP');
		for (let i = 0; i < 100 && !/reload/i.test(gw.stderr().slice(before)); i++) {
			await new Promise((res) => setTimeout(res, 50));
		}
		assert.match(gw.stderr().slice(before), /reload/i);
		const st = JSON.parse((await runSluice(['status', '--url', `http://127.0.0.1:${gw.port}`, '--json'])).stdout);
		assert.equal(st.configGeneration, 2);
		assertLimited(await erin.call(TOOL, { text: 'three' }), { window: 'minute', limit: 6 });
	});
});

// One 2026-07-28 tools/call as who through path (/mcp or /mcp/<profile>) of gw.
let modernId = 100;
function modernCall(gw, path, who) {
	return httpRequest({ host: '127.0.0.1', port: gw.port, path, method: 'POST',
		headers: { authorization: `Bearer ${TOKENS[who]}`, 'mcp-protocol-version': MODERN,
			'mcp-method': 'tools/call', 'mcp-name': TOOL } },
	{ jsonrpc: '2.0', id: modernId++, method: 'tools/call',
		params: { name: TOOL, arguments: { text: path }, _meta: modernMeta() } });
}

// Six endpoints onto the same server: /mcp and five profiles, one of them
// with a day quota of its own, stricter than the gateway-wide one.
const ENDPOINTS = ['/mcp', '/mcp/a', '/mcp/b', '/mcp/c', '/mcp/d', '/mcp/tight'];
function acrossProfiles(extra = {}) {
	const profiles = Object.fromEntries(['a', 'b', 'c', 'd', 'tight'].map((p) => [p, { servers: ['github'] }]));
	return sluiceSection({ default: { callsPerDay: 3 }, profiles: { tight: { callsPerDay: 1 } } }, { profiles, ...extra });
}

describe("a person's quota across profiles", () => {
	test('callsPerDay 3 is 3 calls for the person, whatever the endpoint; a profile limit applies on top', async () => {
		const gw = await startHttp({ servers: { github: catalog('github') }, sluice: acrossProfiles() });
		// frank: one call through each of three endpoints, then every endpoint refuses.
		for (const path of ENDPOINTS.slice(0, 3)) {
			const r = await modernCall(gw, path, 'frank');
			assert.equal(r.status, 200, `${path}: ${r.text}`);
			assert.equal(r.json.result?.isError, undefined, r.text);
		}
		for (const path of ENDPOINTS) {
			const r = await modernCall(gw, path, 'frank');
			assert.equal(r.status, 429, `${path}: ${r.text}`);
			const err = assertLimited(r, { window: 'day', limit: 3 });
			assert.match(err.message, /subject 'frank' has made its 3 calls for today/);
		}
		// gina: the profile's own day quota of 1 refuses her second call through
		// it (costing her nothing); elsewhere her own 3 go on.
		assert.equal((await modernCall(gw, '/mcp/tight', 'gina')).status, 200);
		assertLimited(await modernCall(gw, '/mcp/tight', 'gina'), { window: 'day', scope: 'profile', limit: 1 });
		assert.equal((await modernCall(gw, '/mcp/a', 'gina')).status, 200);
		assert.equal((await modernCall(gw, '/mcp/d', 'gina')).status, 200);
		assertLimited(await modernCall(gw, '/mcp/b', 'gina'), { window: 'day', limit: 3 });
		// One counter per person in /status, not one per endpoint.
		const st = (await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/status', method: 'GET' })).json;
		const rows = (name) => st.quotas.counters.filter((c) => c.scope === 'subject' && c.name === name);
		assert.deepEqual(rows('frank').map((c) => c.callsToday), [3]);
		assert.deepEqual(rows('gina').map((c) => c.callsToday), [3]);
		await gw.close();
	});

	test('the same across two replicas sharing Redis: one bucket per person', async () => {
		redis = await startRedis();
		const shared = { shared: { redis: { url: redis.url, keyPrefix: 'q32:', commandTimeoutMs: 2000 } } };
		const [a, b] = await Promise.all([0, 1].map(() => startHttp({
			configPath: writeConfig({ github: catalog('github') }, acrossProfiles(shared)) })));
		for (const gw of [a, b]) {
			await eventually(async () => (await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/status',
				method: 'GET' })).json?.shared?.state === 'connected', 5000, 50, 'connected');
		}
		assert.equal((await modernCall(a, '/mcp', 'hank')).status, 200);
		assert.equal((await modernCall(b, '/mcp/a', 'hank')).status, 200);
		assert.equal((await modernCall(a, '/mcp/b', 'hank')).status, 200);
		for (const [gw, path] of [[b, '/mcp/c'], [a, '/mcp/d'], [b, '/mcp']]) {
			assertLimited(await modernCall(gw, path, 'hank'), { window: 'day', limit: 3 });
		}
		const keys = (await redisCli(redis, ['KEYS', 'q32:quota:subject:*'])).trim().split('\n');
		assert.equal(keys.length, 1, `one bucket: ${keys}`);
		assert.equal((await redisCli(redis, ['HGET', keys[0], 'n'])).trim(), '3');
		await Promise.all([a.close(), b.close()]);
	});
});

describe('sluice status without a gateway', () => {
	test("a profile's limit counts every caller through /mcp/<profile>, and only there", async () => {
		const pgw = await startHttp({ servers: { github: catalog('github') }, sluice: sluiceSection({
			profiles: { ops: { callsPerMinute: 6, burst: 2 } } }, { profiles: { ops: { servers: ['github'] } } }) });
		const at = (path, who, body, headers = {}) => httpRequest({ host: '127.0.0.1', port: pgw.port, path, method: 'POST',
			headers: { authorization: `Bearer ${TOKENS[who]}`, ...headers } }, body);
		const call = (path, who, id) => at(path, who, { jsonrpc: '2.0', id, method: 'tools/call',
			params: { name: TOOL, arguments: { text: 'p' }, _meta: modernMeta() } },
		{ 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': TOOL });
		// Every caller through /mcp/ops draws on its bucket of 2; bob has no
		// limit of his own, so on /mcp he calls on.
		assert.equal((await call('/mcp/ops', 'bob', 1)).status, 200);
		assert.equal((await call('/mcp/ops', 'bob', 2)).status, 200);
		const r = await call('/mcp/ops', 'bob', 3);
		assert.equal(r.status, 429, r.text);
		const err = assertLimited(r, { window: 'minute', scope: 'profile', limit: 6 });
		assert.match(err.message, /profile 'ops'/);
		assert.equal((await call('/mcp/ops', 'bob', 4)).status, 429);
		for (let i = 0; i < 3; i++) assert.equal((await call('/mcp', 'bob', 10 + i)).status, 200);
		await pgw.close();
	});

	test('a config without sluice.http.listen names what to give', async () => {
		const gw = await startHttp({ sluice: { quotas: {} } });
		const r = await runSluice(['status', '--config', gw.configPath]);
		assert.equal(r.code, 1);
		assert.match(r.stderr, /no sluice\.http\.listen .*give --url/);
		const none = await runSluice(['status', '--url', 'http://127.0.0.1:1']);
		assert.equal(none.code, 1);
		assert.match(none.stderr, /^sluice status: http:\/\/127\.0\.0\.1:1\/status: /);
		await gw.close();
	});
});
