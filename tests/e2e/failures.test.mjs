// Upstreams that crash, cannot start, are slow, or send too much.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { connect, catalog, everything, closeAll, textOf, jsonOf, eventually, toolsWhen } from './helpers.mjs';

after(closeAll);

delete process.env.SLUICE_E2E_UNSET_VAR;

describe('router gateway with broken and slow servers', () => {
	let gw;
	const call = (name, args) => gw.client.callTool({ name, arguments: args });
	const invoke = (server, tool, args = {}) => call('invoke_tool', { server, tool, arguments: args });
	const servers = async () => jsonOf(await call('list_servers', {}));
	const server = async (name) => (await servers()).find((s) => s.name === name);

	before(async () => {
		gw = await connect({
			servers: {
				github: catalog('github'),
				jira: catalog('jira'),
				tardy: catalog('postgres', { timeout: 300 }),
				missing: { command: 'sluice-e2e-no-such-command', args: [] },
				quitter: { command: 'false' },
				envy: { command: catalog('slack').command, args: ['--backend', 'slack', '--name', '${SLUICE_E2E_UNSET_VAR}'] },
			},
			// Whole results are checked here: no governor.
			sluice: { exposure: 'router', governor: { enabled: false } },
		});
	});
	after(() => gw?.close());

	test('a command that does not exist: not ready, "command not found", others serve', async () => {
		const m = await server('missing');
		assert.notEqual(m.status, 'ready');
		assert.match(m.error ?? '', /command not found/);
		assert.equal(m.tools, 0);
		for (const name of ['github', 'jira', 'tardy']) assert.equal((await server(name)).status, 'ready', name);
		const r = await invoke('missing', 'echo', {});
		assert.equal(r.isError, true);
		assert.match(textOf(r), /missing/);
	});

	test('a server that exits at once: not ready, its error says so, others serve', async () => {
		const q = await server('quitter');
		assert.notEqual(q.status, 'ready');
		assert.ok(q.error, JSON.stringify(q));
		const r = await invoke('quitter', 'echo', {});
		assert.equal(r.isError, true);
		const j = await invoke('jira', 'echo', { ok: 1 });
		assert.deepEqual(JSON.parse(textOf(j)), { ok: 1 });
	});

	test('an unset ${VAR} fails that server alone, naming the variable', async () => {
		const e = await server('envy');
		assert.notEqual(e.status, 'ready');
		assert.match(e.error ?? '', /SLUICE_E2E_UNSET_VAR/);
		const r = await invoke('jira', 'echo', { fine: true });
		assert.deepEqual(JSON.parse(textOf(r)), { fine: true });
	});

	test('per-call timeout: isError "did not answer", later calls work', async () => {
		const t0 = Date.now();
		const r = await invoke('tardy', 'slow', { ms: 2000 });
		assert.equal(r.isError, true);
		assert.match(textOf(r), /did not answer/);
		assert.match(textOf(r), /tardy/);
		assert.ok(Date.now() - t0 < 1500, `timed out at ${Date.now() - t0} ms`);
		const ok = await invoke('tardy', 'slow', { ms: 10 });
		assert.equal(textOf(ok), 'slept 10 ms');
		const echo = await invoke('tardy', 'echo', { after: 'timeout' });
		assert.deepEqual(JSON.parse(textOf(echo)), { after: 'timeout' });
	});

	test('huge: a 2,000,000-byte result arrives whole', async () => {
		const r = await invoke('jira', 'huge', { bytes: 2000000 });
		assert.ok(!r.isError, textOf(r).slice(0, 200));
		const text = textOf(r);
		assert.equal(text.length, 2000000);
		assert.equal(text.slice(0, 8), 'abcdefgh');
		assert.equal(text[63], ' ');
		assert.match(text, /^[a-z0-9 ]+$/);
	});

	let crashText;
	test('crash: the call and a call in flight get isError naming the server; others serve', async () => {
		const inflight = invoke('github', 'slow', { ms: 3000 });
		await new Promise((r) => setTimeout(r, 50));
		const t0 = Date.now();
		const r = await invoke('github', 'crash', {});
		crashText = textOf(r);
		assert.equal(r.isError, true);
		assert.match(crashText, /github/);
		const s = await inflight;
		assert.equal(s.isError, true, 'the call in flight fails too');
		assert.match(textOf(s), /github/);
		assert.ok(Date.now() - t0 < 2000, 'failed at once, not by timeout');
		// Right after: github is not ready, the others serve.
		const st = await server('github');
		assert.notEqual(st.status, 'ready', JSON.stringify(st));
		const j = await invoke('jira', 'echo', { during: 'restart' });
		assert.deepEqual(JSON.parse(textOf(j)), { during: 'restart' });
	});

	test('crash: the message says the process exited (status 3)', () => {
		assert.ok(crashText, 'the crash test ran');
		assert.match(crashText, /exit/i, `crash reported as: ${crashText}`);
	});

	test('crash: the server restarts and serves again', async () => {
		await eventually(async () => (await server('github')).status === 'ready', 5000, 100, 'github ready again');
		const r = await invoke('github', 'echo', { back: true });
		assert.ok(!r.isError, textOf(r));
		assert.deepEqual(JSON.parse(textOf(r)), { back: true });
		const st = await server('github');
		assert.ok(st.tools > 0);
		// The other broken servers are still broken, and alone.
		assert.notEqual((await server('missing')).status, 'ready');
		assert.equal((await server('jira')).status, 'ready');
	});
});

describe('passthrough gateway with maxUpstreamMessageBytes 65536', () => {
	let gw;
	const call = (name, args) => gw.client.callTool({ name, arguments: args });

	before(async () => {
		gw = await connect({
			servers: { github: catalog('github'), jira: catalog('jira'), everything: everything() },
			sluice: { maxUpstreamMessageBytes: 65536, governor: { enabled: false } },
		});
		await toolsWhen(gw.client, (t) => t.some((x) => x.name === 'everything__get-sum'));
	});
	after(() => gw?.close());

	test('huge {bytes:200000}: isError mentioning the limit, the server keeps serving', async () => {
		const r = await call('github__huge', { bytes: 200000 });
		assert.equal(r.isError, true);
		assert.match(textOf(r), /65536|maxUpstreamMessageBytes|limit/);
		const small = await call('github__huge', { bytes: 60000 });
		assert.ok(!small.isError, textOf(small).slice(0, 200));
		assert.equal(textOf(small).length, 60000);
		const e = await call('github__echo', { still: 'serving' });
		assert.deepEqual(e.structuredContent, { arguments: { still: 'serving' } });
	});

	test('garbage: non-JSON lines from an upstream do not break its calls', async () => {
		const r = await call('jira__garbage', {});
		assert.ok(!r.isError, textOf(r));
		assert.match(textOf(r), /^ok/);
		const e = await call('jira__echo', { after: 'garbage' });
		assert.deepEqual(e.structuredContent, { arguments: { after: 'garbage' } });
	});

	test('garbage: sluice logs the junk, one log line per event', async () => {
		const before = gw.stderr().length;
		const r = await call('jira__garbage', {});
		assert.ok(!r.isError, textOf(r));
		await eventually(() => /not MCP/.test(gw.stderr().slice(before)), 2000, 20, 'a log line about the junk');
		// Audit lines (sluice.audit writes to stderr by default) are JSON objects.
		const lines = gw.stderr().slice(before).split('\n').filter((l) => l && !l.startsWith('{"type":"'));
		for (const l of lines) assert.match(l, /^sluice /, `stray stderr line: ${JSON.stringify(l.slice(0, 100))}`);
	});

	test('passthrough crash: isError, then the tool works again', async () => {
		const r = await call('github__crash', {});
		assert.equal(r.isError, true);
		assert.match(textOf(r), /github/);
		// Tools stay listed while the server restarts.
		const { tools } = await gw.client.listTools();
		assert.ok(tools.some((t) => t.name === 'github__echo'));
		const e = await call('jira__echo', { other: 'server' });
		assert.ok(!e.isError);
		const back = await eventually(
			async () => {
				const x = await call('github__echo', { back: 1 });
				return !x.isError && x;
			},
			5000,
			100,
			'github__echo to work again',
		);
		assert.deepEqual(back.structuredContent, { arguments: { back: 1 } });
	});
});
