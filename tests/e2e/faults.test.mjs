// Faults end to end (issue 8): each test checks the client's clear answer,
// that nothing is lost (the other calls in flight are answered, the audit
// lines are written) and that the gateway keeps serving (a following call
// works). docs/RELIABILITY.md maps each promise to its test, here or in
// failures, hostile, lifecycle and codemode.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';

import {
	connect,
	startRaw,
	startHttp,
	httpClient,
	catalog,
	closeAll,
	textOf,
	eventually,
	toolsWhen,
	writeConfig,
	sleep,
	withTimeout,
	descendants,
	zygoteOf,
	modernMeta,
} from './helpers.mjs';

// Every gateway a test started: under `make test SAN=...` a sanitizer
// report in any of their logs fails the file.
const started = [];
const track = (gw) => (started.push(gw), gw);
const open = async (opts) => track(await connect(opts));
after(async () => {
	await closeAll();
	for (const gw of started) assert.doesNotMatch(gw.stderr(), /Sanitizer|runtime error/, gw.stderr().slice(-3000));
});

// The audit file of a config written by writeConfig (in its own temp dir).
const auditPath = (configPath) => path.join(path.dirname(configPath), 'audit.jsonl');
const auditLines = (file) =>
	existsSync(file)
		? readFileSync(file, 'utf8')
				.split('\n')
				.filter(Boolean)
				.map((l) => JSON.parse(l))
		: [];
// Waits for an audit line of a call to server.tool with this outcome.
const audited = (file, server, tool, outcome) =>
	eventually(
		() => auditLines(file).find((l) => l.type === 'call' && l.server === server && l.tool === tool && l.outcome === outcome),
		5000,
		50,
		`an audit line for ${server}.${tool} (${outcome})`,
	);

// Rewrites a config file in place, as a person editing it would.
function rewrite(configPath, servers, sluice) {
	const dir = path.dirname(configPath);
	const full = {
		pinning: { stateDir: path.join(dir, 'state') },
		audit: { file: auditPath(configPath) },
		...sluice,
	};
	writeFileSync(configPath, JSON.stringify({ mcpServers: servers, sluice: full }, null, 2));
}

describe('SIGHUP reloads the config', () => {
	test('a server added, a policy changed: list_changed, new tools, the session and a call in flight go on', async () => {
		const servers = { github: catalog('github') };
		const configPath = writeConfig(servers, {});
		rewrite(configPath, servers, {});
		const gw = await open({ configPath });
		const audit = auditPath(configPath);
		const names = (tools) => tools.map((t) => t.name);
		await toolsWhen(gw.client, (t) => names(t).includes('github__merge_pull_request'));

		// A call in flight across the reload finishes against the old settings.
		const slow = gw.client.callTool({ name: 'github__slow', arguments: { ms: 3000 } });
		await sleep(200);
		rewrite(
			configPath,
			{ ...servers, jira: catalog('jira') },
			{ policy: { rules: [{ match: 'github.merge_*', action: 'deny' }] } },
		);
		const before = gw.notifications.length;
		process.kill(gw.pid(), 'SIGHUP');
		// A call made while the stages wait for the one in flight is held,
		// then runs on the new settings: the new policy denies it.
		await eventually(() => /config reload: 2 servers/.test(gw.stderr()), 15000, 20, 'the reload');
		const held = gw.client.callTool({ name: 'github__merge_pull_request', arguments: { repo: 'api', number: 1 } });

		const tools = await toolsWhen(
			gw.client,
			(t) => names(t).includes('jira__get_ticket') && !names(t).includes('github__merge_pull_request'),
			15000,
		);
		assert.ok(names(tools).includes('github__echo'));
		await eventually(
			() => gw.notifications.slice(before).some((n) => n.method === 'notifications/tools/list_changed'),
			5000,
			50,
			'notifications/tools/list_changed',
		);
		assert.equal(textOf(await slow), 'slept 3000 ms');
		await audited(audit, 'github', 'slow', 'ok');
		const denied = await held;
		assert.equal(denied.isError, true);
		assert.match(textOf(denied), /policy: github\.merge_pull_request is denied by rule 1/);
		await audited(audit, 'github', 'merge_pull_request', 'denied');

		// The same session: the new server serves, the new policy holds.
		const j = await gw.client.callTool({ name: 'jira__echo', arguments: { after: 'reload' } });
		assert.deepEqual(JSON.parse(textOf(j)), { after: 'reload' });
		const m = await gw.client.callTool({ name: 'github__merge_pull_request', arguments: { repo: 'api', number: 1 } });
		assert.equal(m.isError, true);
		assert.match(gw.stderr(), /config reload: 2 servers \(1 added, 0 restarted, 0 removed\)/);
		assert.match(gw.stderr(), /config reload: new settings for 1 stage\b/);
		await gw.close();
	});

	test('a server removed and one changed: the removed one stops after its call in flight, the changed one restarts', async () => {
		const servers = { github: catalog('github'), jira: catalog('jira') };
		const configPath = writeConfig(servers, {});
		rewrite(configPath, servers, {});
		const gw = await open({ configPath });
		const audit = auditPath(configPath);
		const names = (tools) => tools.map((t) => t.name);
		await toolsWhen(gw.client, (t) => names(t).includes('github__echo') && names(t).includes('jira__echo'));
		const procs = () => descendants(gw.pid()).filter((p) => p.cmdline.includes('--backend'));
		const before = procs();
		const github = before.find((p) => p.cmdline.includes('--backend github'));
		const jira = before.find((p) => p.cmdline.includes('--backend jira'));
		assert.ok(github && jira, JSON.stringify(before));

		const inflight = gw.client.callTool({ name: 'github__slow', arguments: { ms: 3000 } });
		await sleep(200);
		// github goes; jira gets an extra argument (a changed command line).
		rewrite(configPath, { jira: { ...catalog('jira'), args: ['--backend', 'jira', '--name', 'jira-two'] } }, {});
		process.kill(gw.pid(), 'SIGHUP');
		await eventually(() => /config reload: 1 servers \(0 added, 1 restarted, 1 removed\)/.test(gw.stderr()), 15000, 50, 'the reload');
		const tools = await toolsWhen(gw.client, (t) => !names(t).includes('github__echo') && names(t).includes('jira__echo'), 15000);
		assert.ok(!names(tools).some((n) => n.startsWith('github__')));
		// The call in flight on the removed server is answered, not cut.
		assert.equal(textOf(await inflight), 'slept 3000 ms');
		await audited(audit, 'github', 'slow', 'ok');
		// Then its process ends; jira's old process is replaced by a new one.
		await eventually(() => !existsSync(`/proc/${github.pid}`) && !existsSync(`/proc/${jira.pid}`), 8000, 50, 'the old processes to end');
		const after = procs();
		assert.equal(after.length, 1, JSON.stringify(after));
		assert.match(after[0].cmdline, /--name jira-two/);
		const r = await gw.client.callTool({ name: 'jira__echo', arguments: { changed: true } });
		assert.deepEqual(JSON.parse(textOf(r)), { changed: true });
		const gone = await gw.client.callTool({ name: 'github__echo', arguments: {} }).catch((e) => e);
		assert.ok(gone instanceof Error ? /github__echo/.test(gone.message) : gone.isError, 'a removed tool is refused');
		await gw.close();
	});

	test('exposure passthrough to router: list_changed, the router tools, and back', async () => {
		const servers = { github: catalog('github') };
		const configPath = writeConfig(servers, {});
		rewrite(configPath, servers, {});
		const gw = await open({ configPath });
		const names = (tools) => tools.map((t) => t.name).sort();
		await toolsWhen(gw.client, (t) => names(t).includes('github__echo'));
		const before = gw.notifications.length;
		rewrite(configPath, servers, { exposure: 'router' });
		process.kill(gw.pid(), 'SIGHUP');
		await eventually(
			() => gw.notifications.slice(before).some((n) => n.method === 'notifications/tools/list_changed'),
			5000,
			50,
			'notifications/tools/list_changed',
		);
		const tools = await toolsWhen(gw.client, (t) => names(t).includes('invoke_tool'), 15000);
		assert.ok(!names(tools).includes('github__echo'), names(tools).join(', '));
		const r = await gw.client.callTool({ name: 'invoke_tool', arguments: { server: 'github', tool: 'echo', arguments: { via: 'router' } } });
		assert.deepEqual(JSON.parse(textOf(r)), { via: 'router' });
		rewrite(configPath, servers, {});
		process.kill(gw.pid(), 'SIGHUP');
		await toolsWhen(gw.client, (t) => names(t).includes('github__echo') && !names(t).includes('invoke_tool'), 15000);
		await gw.close();
	});

	test('a broken config is refused with a clear log line; the old one keeps serving', async () => {
		const servers = { github: catalog('github') };
		const configPath = writeConfig(servers, {});
		rewrite(configPath, servers, {});
		const gw = await open({ configPath });
		const audit = auditPath(configPath);
		await toolsWhen(gw.client, (t) => t.some((x) => x.name === 'github__echo'));

		// Invalid JSON: the loader's message with line and column.
		writeFileSync(configPath, '{ "mcpServers": { "github": ');
		process.kill(gw.pid(), 'SIGHUP');
		await eventually(() => /config reload refused, the current config stays: \S+:\d+:\d+: invalid JSON/.test(gw.stderr()), 15000, 50, 'the refusal');
		let r = await gw.client.callTool({ name: 'github__echo', arguments: { still: 1 } });
		assert.deepEqual(JSON.parse(textOf(r)), { still: 1 });

		// Valid JSON, but a stage refuses its section: nothing changes either,
		// not even the servers of the same file.
		rewrite(configPath, { ...servers, jira: catalog('jira') }, { policy: { rules: [{ match: 'github.*', action: 'nope' }] } });
		process.kill(gw.pid(), 'SIGHUP');
		await eventually(() => /config reload refused.*sluice\.policy\.rules\[0\]\.action/.test(gw.stderr()), 15000, 50, 'the refusal');
		const names = (await gw.client.listTools()).tools.map((t) => t.name);
		assert.ok(!names.includes('jira__echo'), 'the refused file added no server');
		r = await gw.client.callTool({ name: 'github__echo', arguments: { still: 2 } });
		assert.deepEqual(JSON.parse(textOf(r)), { still: 2 });
		await audited(audit, 'github', 'echo', 'ok');
		assert.equal(gw.transport.pid, gw.pid(), 'the same gateway process');
		await gw.close();
	});
});

// ---- a full disk and a read-only state directory ------------------------------

// Runs its arguments (sluice serve ...) with STATE replaced by a small tmpfs
// in a private mount namespace, holding a copy of SAVED/pins.json, then made
// full (MODE full) or read-only (MODE ro). Afterwards it copies what the
// tmpfs holds to SAVED/after, since the namespace ends with it.
const STATE_WRAPPER = `
state=$1 saved=$2 mode=$3; shift 3
mount -t tmpfs -o size=256k sluice-e2e "$state" || exit 97
cp "$saved/pins.json" "$state/pins.json" || exit 97
if [ "$mode" = full ]; then
	dd if=/dev/zero of="$state/fill" bs=1k 2>/dev/null
	[ "$(df --output=avail "$state" | tail -n1 | tr -d ' ')" = 0 ] || exit 97
else
	mount -o remount,ro "$state" || exit 97
fi
"$@"
rc=$?
mkdir -p "$saved/after" && cp -a "$state/." "$saved/after/"
exit $rc
`;

// Whether this machine lets the tests mount (root in a VM, not a container).
async function canMount() {
	const { execFileSync } = await import('node:child_process');
	try {
		execFileSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c', 'mount -t tmpfs -o size=4k x /mnt'], { stdio: 'ignore' });
		return true;
	} catch {
		return false;
	}
}

for (const mode of ['full', 'ro']) {
	const what = mode === 'full' ? 'a full disk' : 'a read-only state directory';
	test(`${what}: pins fail to save with a clear log line, the old file stays whole, calls are answered`, async (t) => {
		if (!(await canMount())) return t.skip('mounting a tmpfs needs root outside a container');
		const { mkdirSync, readdirSync } = await import('node:fs');
		// A first run pins github's tools in a normal directory.
		const configPath = writeConfig({ github: catalog('github') }, {});
		const dir = path.dirname(configPath);
		const state = path.join(dir, 'state');
		const saved = path.join(dir, 'saved');
		mkdirSync(saved);
		let gw = await open({ configPath });
		await toolsWhen(gw.client, (tools) => tools.some((x) => x.name === 'github__echo'));
		await eventually(() => existsSync(path.join(state, 'pins.json')), 5000, 50, 'pins.json');
		await gw.close();
		const pins = readFileSync(path.join(state, 'pins.json'), 'utf8');
		writeFileSync(path.join(saved, 'pins.json'), pins);
		assert.match(pins, /"github#[0-9a-f]{16}"/);

		// Then jira is added: its tools are new, and their pins cannot be saved.
		// The audit file shares the full disk (a read-only one would stop
		// sluice at start, by design: docs/stages/audit.md).
		const audit = mode === 'full' ? path.join(state, 'audit.jsonl') : auditPath(configPath);
		rewrite(configPath, { github: catalog('github'), jira: catalog('jira') }, { audit: { file: audit } });
		gw = await open({ configPath, wrap: ['unshare', '-m', '--propagation', 'private', 'sh', '-c', STATE_WRAPPER, 'sh', state, saved, mode] });
		await toolsWhen(gw.client, (tools) => tools.some((x) => x.name === 'jira__echo'));
		const calls = await Promise.all([
			gw.client.callTool({ name: 'jira__echo', arguments: { disk: mode } }),
			gw.client.callTool({ name: 'github__slow', arguments: { ms: 300 } }),
			gw.client.callTool({ name: 'github__echo', arguments: { disk: mode } }),
		]);
		assert.deepEqual(JSON.parse(textOf(calls[0])), { disk: mode });
		assert.equal(textOf(calls[1]), 'slept 300 ms');
		assert.deepEqual(JSON.parse(textOf(calls[2])), { disk: mode });
		const reason = mode === 'full' ? /the disk is full/ : /Read-only file system/;
		await eventually(() => /pinning: pins not saved: /.test(gw.stderr()), 5000, 50, 'the pinning warning');
		assert.match(/pinning: pins not saved: .*/.exec(gw.stderr())[0], reason);
		if (mode === 'full') assert.match(gw.stderr(), /audit: write failed: No space left on device/);
		else await audited(audit, 'jira', 'echo', 'ok');
		// Still serving after the failed writes.
		const again = await gw.client.callTool({ name: 'jira__echo', arguments: { again: true } });
		assert.deepEqual(JSON.parse(textOf(again)), { again: true });
		await gw.close();

		// The old pins, byte for byte, and no temporary file left behind.
		await eventually(() => existsSync(path.join(saved, 'after', 'pins.json')), 5000, 50, 'the wrapper to copy the tmpfs out');
		assert.equal(readFileSync(path.join(saved, 'after', 'pins.json'), 'utf8'), pins);
		const left = readdirSync(path.join(saved, 'after')).filter((f) => !['pins.json', 'fill', 'audit.jsonl'].includes(f));
		assert.deepEqual(left, [], 'no temporary files');
		if (mode === 'full') {
			const a = readFileSync(path.join(saved, 'after', 'audit.jsonl'), 'utf8');
			assert.ok(a === '' || a.endsWith('\n'), 'the audit file holds whole lines only');
		}
	});
}

// ---- upstreams that crash or hang, with the audit trail -----------------------

// A router gateway over github and jira with its audit in a file.
async function routerGateway(sluice = {}, servers = { github: catalog('github'), jira: catalog('jira') }) {
	const configPath = writeConfig(servers, {});
	rewrite(configPath, servers, { exposure: 'router', governor: { enabled: false }, ...sluice });
	const gw = await open({ configPath });
	const invoke = (server, tool, args = {}) =>
		gw.client.callTool({ name: 'invoke_tool', arguments: { server, tool, arguments: args } });
	return { gw, invoke, audit: auditPath(configPath) };
}

test('an upstream that crashes mid-call: clear errors, audited, restarted with backoff, the next call works', async () => {
	const { gw, invoke, audit } = await routerGateway();
	const inflight = invoke('github', 'slow', { ms: 5000 });
	const other = invoke('jira', 'slow', { ms: 400 });
	await sleep(100);
	const crash = await invoke('github', 'crash');
	assert.equal(crash.isError, true);
	assert.match(textOf(crash), /github.*exit|exit.*github/is);
	const lost = await inflight;
	assert.equal(lost.isError, true);
	assert.match(textOf(lost), /github/);
	assert.equal(textOf(await other), 'slept 400 ms', 'the other server is untouched');
	await audited(audit, 'github', 'crash', 'ok').catch(() => audited(audit, 'github', 'crash', 'failed'));
	await audited(audit, 'github', 'slow', 'failed');
	await audited(audit, 'jira', 'slow', 'ok');
	assert.match(gw.stderr(), /'github' exited .*; restarting in \d+ ms/);
	const back = await eventually(async () => {
		const r = await invoke('github', 'echo', { back: true });
		return r.isError ? null : r;
	}, 8000, 200, 'github to serve again');
	assert.deepEqual(JSON.parse(textOf(back)), { back: true });
	await gw.close();
});

test('an upstream that hangs: the call times out, the upstream is told to cancel, audited, the next call works', async () => {
	const { gw, invoke, audit } = await routerGateway({}, { github: catalog('github', { timeout: 500 }), jira: catalog('jira') });
	const t0 = Date.now();
	const [hung, other] = await Promise.all([invoke('github', 'slow', { ms: 30000 }), invoke('jira', 'slow', { ms: 700 })]);
	assert.equal(hung.isError, true);
	assert.match(textOf(hung), /github.*did not answer .*within 500 ms/);
	assert.ok(Date.now() - t0 < 10000);
	assert.equal(textOf(other), 'slept 700 ms');
	// The catalog server logs the notifications/cancelled it got (its stderr goes to sluice's log).
	await eventually(() => /catalog: cancelled request/.test(gw.stderr()), 5000, 50, 'the upstream to see the cancellation');
	await audited(audit, 'github', 'slow', 'failed');
	const next = await invoke('github', 'echo', { after: 'hang' });
	assert.deepEqual(JSON.parse(textOf(next)), { after: 'hang' });
	await gw.close();
});

// ---- SIGTERM ------------------------------------------------------------------

test('SIGTERM with a program and a call in flight: both cancelled and audited, exit 0, no child or zombie left', async () => {
	const servers = { github: catalog('github') };
	const configPath = writeConfig(servers, {});
	rewrite(configPath, servers, { exposure: 'router', codeMode: { enabled: true } });
	const audit = auditPath(configPath);
	const raw = track(startRaw({ configPath }));
	await raw.initialize();
	const pid = raw.child.pid;
	await eventually(() => zygoteOf(pid)?.workers.length > 0, 8000, 50, 'the zygote and its workers');
	raw.send({
		jsonrpc: '2.0',
		id: 'prog',
		method: 'tools/call',
		params: {
			name: 'execute_code',
			arguments: { code: 'await tools.github.stderr({ lines: 1 }); await tools.github.slow({ ms: 20000 }); return 1;' },
		},
	});
	raw.send({
		jsonrpc: '2.0',
		id: 'call',
		method: 'tools/call',
		params: { name: 'invoke_tool', arguments: { server: 'github', tool: 'slow', arguments: { ms: 20000 } } },
	});
	// The program is past its first call (the upstream's stderr line is in
	// sluice's log); give its second one a moment to reach the upstream.
	await eventually(() => /catalog: stderr line 1 of 1/.test(raw.stderr()), 8000, 50, 'the program to start calling');
	await sleep(300);
	const kids = descendants(pid);
	assert.ok(kids.some((k) => k.cmdline.includes('__zygote')), 'a zygote');
	assert.ok(kids.some((k) => k.cmdline.includes('--backend github')), 'the upstream');
	const t0 = Date.now();
	raw.child.kill('SIGTERM');
	const ex = await withTimeout(raw.wait(), 8000, 'sluice to exit');
	assert.equal(ex.code, 0, raw.stderr().slice(-2000));
	assert.ok(Date.now() - t0 < 6000, `exited after ${Date.now() - t0} ms`);
	// Nothing answered after the signal is a half answer: every line is whole JSON.
	assert.ok(raw.all.every((m) => !m.msg.__unparsable));
	// Each call and the program left their audit line.
	const lines = await eventually(() => {
		const l = auditLines(audit);
		const calls = l.filter((x) => x.type === 'call' && x.tool === 'slow' && x.outcome === 'cancelled');
		const progs = l.filter((x) => x.type === 'program' && x.outcome === 'cancelled');
		return calls.length === 2 && progs.length === 1 ? l : null;
	}, 3000, 50, 'two cancelled call lines and a cancelled program line');
	assert.deepEqual(lines.filter((x) => x.tool === 'slow').map((x) => x.origin).sort(), ['code', 'router']);
	// Every process it started is gone: none alive, none a zombie.
	await eventually(() => kids.every((k) => !existsSync(`/proc/${k.pid}`)), 5000, 50, `no process left of ${kids.map((k) => `${k.pid} ${k.cmdline}`).join('; ')}`);
});

// A request in flight at SIGTERM is answered, not dropped: a JSON-RPC error
// saying sluice is shutting down, within a second, on every face (stdio,
// HTTP session era, HTTP 2026-07-28), so no client waits for its own timeout.
const SHUTDOWN_RE = /sluice is shutting down/;

test('SIGTERM over stdio: the call in flight gets an error answer within a second', async () => {
	const raw = track(startRaw({ servers: { github: catalog('github') } }));
	await raw.initialize();
	raw.send({ jsonrpc: '2.0', id: 'slow', method: 'tools/call', params: { name: 'github__slow', arguments: { ms: 20000 } } });
	// Answered in order after it: the slow call has gone to its server.
	await raw.request('tools/call', { name: 'github__echo', arguments: { n: 1 } });
	const t0 = Date.now();
	raw.child.kill('SIGTERM');
	const answer = await raw.next((m) => m.id === 'slow', 1000);
	assert.ok(Date.now() - t0 < 1000, `answered after ${Date.now() - t0} ms`);
	assert.equal(answer.error?.code, -32000, JSON.stringify(answer));
	assert.match(answer.error.message, SHUTDOWN_RE);
	const ex = await withTimeout(raw.wait(), 8000, 'sluice to exit');
	assert.equal(ex.code, 0, raw.stderr().slice(-2000));
});

test('SIGTERM over HTTP: calls in flight of both eras get an error answer within a second', async () => {
	const gw = track(await startHttp({ servers: { github: catalog('github') } }));
	const { client } = await httpClient(gw.url, { name: 'legacy' });
	const legacy = client.callTool({ name: 'github__slow', arguments: { ms: 20000 } }).then(
		(r) => ({ r }),
		(e) => ({ e }),
	);
	const modern = fetch(gw.url, {
		method: 'POST',
		headers: {
			'content-type': 'application/json',
			accept: 'application/json, text/event-stream',
			'mcp-protocol-version': '2026-07-28',
			'mcp-method': 'tools/call',
			'mcp-name': 'github__slow',
		},
		body: JSON.stringify({ jsonrpc: '2.0', id: 'm1', method: 'tools/call', params: { name: 'github__slow', arguments: { ms: 20000 }, _meta: modernMeta() } }),
	}).then(async (res) => ({ status: res.status, text: await res.text() }));
	// Both calls are in flight (the operator's /metrics counts them).
	const metrics = new URL('/metrics', gw.url).href;
	await eventually(async () => /^sluice_requests_in_flight 2$/m.test(await (await fetch(metrics)).text()), 8000, 50, 'both calls in flight');
	const t0 = Date.now();
	gw.proc.kill('SIGTERM');
	const [l, m] = await withTimeout(Promise.all([legacy, modern]), 1000, 'both answers');
	assert.ok(Date.now() - t0 < 1000, `answered after ${Date.now() - t0} ms`);
	assert.ok(l.e, `an error, not ${JSON.stringify(l.r)}`);
	assert.match(l.e.message, SHUTDOWN_RE);
	assert.equal(m.status, 200, m.text);
	const line = m.text.split('\n').find((x) => x.includes('"m1"'));
	const msg = JSON.parse(line.startsWith('data: ') ? line.slice(6) : line);
	assert.equal(msg.id, 'm1');
	assert.match(msg.error.message, SHUTDOWN_RE);
	assert.equal((await withTimeout(gw.exited, 8000, 'sluice to exit')).code, 0);
	await client.close().catch(() => {});
});

// ---- a client that goes away in the middle of a program, over HTTP ------------

test('an HTTP client that ends its session mid-program: program killed, its calls cancelled, others served', async () => {
	const servers = { github: catalog('github') };
	const configPath = writeConfig(servers, {});
	rewrite(configPath, servers, { exposure: 'router', codeMode: { enabled: true } });
	const audit = auditPath(configPath);
	const gw = track(await startHttp({ configPath }));
	const a = await httpClient(gw.url, { name: 'leaver' });
	const b = await httpClient(gw.url, { name: 'stayer' });
	const stays = b.client.callTool({ name: 'invoke_tool', arguments: { server: 'github', tool: 'slow', arguments: { ms: 1500 } } });
	const leaving = a.client
		.callTool({
			name: 'execute_code',
			arguments: { code: 'await tools.github.stderr({ lines: 1 }); await tools.github.slow({ ms: 20000 }); return "finished";' },
		})
		.then(
			(r) => ({ r }),
			(e) => ({ e }),
		);
	// The program is past its first call; its second reaches the upstream.
	await eventually(() => /catalog: stderr line 1 of 1/.test(gw.stderr()), 8000, 50, 'the program to start calling');
	await sleep(300);
	await a.transport.terminateSession();
	await a.client.close();
	const left = await withTimeout(leaving, 5000, 'the leaving call to settle');
	assert.ok(left.e || left.r?.isError, 'the program did not run to its end');
	// Its call was cancelled upstream, and both were audited as cancelled.
	await eventually(() => /catalog: cancelled request/.test(gw.stderr()), 5000, 50, 'the upstream to see the cancellation');
	await eventually(
		() => auditLines(audit).some((x) => x.type === 'program' && x.outcome === 'cancelled'),
		5000,
		50,
		'a cancelled program line',
	);
	await audited(audit, 'github', 'slow', 'cancelled');
	// The other session was not disturbed, and keeps serving.
	assert.equal(textOf(await stays), 'slept 1500 ms');
	await audited(audit, 'github', 'slow', 'ok');
	const r = await b.client.callTool({ name: 'execute_code', arguments: { code: 'return (await tools.github.echo({ n: 7 })).arguments.n * 6;' } });
	assert.equal(textOf(r), '42');
	await b.client.close();
	const ex = await gw.close();
	assert.equal(ex.code, 0);
});

test('an upstream that writes a line over the cap and non-JSON lines: clear errors, audited, nothing else lost', async () => {
	const { gw, invoke, audit } = await routerGateway({ maxUpstreamMessageBytes: 65536 });
	const other = invoke('github', 'slow', { ms: 600 });
	const [big, junk] = await Promise.all([invoke('github', 'huge', { bytes: 200000 }), invoke('github', 'garbage')]);
	assert.equal(big.isError, true);
	assert.match(textOf(big), /65536|maxUpstreamMessageBytes/);
	assert.equal(junk.isError ?? false, false, textOf(junk));
	assert.match(textOf(junk), /garbage/);
	assert.equal(textOf(await other), 'slept 600 ms', 'the call in flight beside them is answered');
	await audited(audit, 'github', 'huge', 'failed');
	await audited(audit, 'github', 'garbage', 'ok');
	await audited(audit, 'github', 'slow', 'ok');
	const next = await invoke('github', 'echo', { after: 'junk' });
	assert.deepEqual(JSON.parse(textOf(next)), { after: 'junk' });
	await gw.close();
});

test('an upstream that exits at start: not ready with its reason, restarted with growing backoff, calls answered, others served', async () => {
	const quitter = { command: 'sh', args: ['-c', 'echo "quitter: no config found" >&2; exit 7'] };
	const { gw, invoke, audit } = await routerGateway({}, { github: catalog('github'), quitter });
	const servers = async () => JSON.parse(textOf(await gw.client.callTool({ name: 'list_servers', arguments: {} })));
	const q = (await servers()).find((s) => s.name === 'quitter');
	assert.notEqual(q.status, 'ready');
	assert.match(q.error ?? '', /exited with status 7/, JSON.stringify(q));
	const [r, other] = await Promise.all([invoke('quitter', 'echo', {}), invoke('github', 'slow', { ms: 300 })]);
	assert.equal(r.isError, true);
	assert.match(textOf(r), /quitter/);
	assert.equal(textOf(other), 'slept 300 ms');
	await audited(audit, 'github', 'slow', 'ok');
	// Its last stderr line reaches the log (drained when it is reaped),
	// and the retries back off: 250, 500, 1000 ms ...
	await eventually(() => /restarting in 1000 ms/.test(gw.stderr()), 8000, 100, 'the backoff to grow');
	assert.equal(gw.stderr().match(/\[quitter\] quitter: no config found/g)?.length >= 3, true, gw.stderr());
	assert.match(
		gw.stderr(),
		/'quitter' exited with status 7; restarting in 250 ms[\s\S]*restarting in 500 ms[\s\S]*restarting in 1000 ms/,
	);
	const next = await invoke('github', 'echo', { still: 'serving' });
	assert.deepEqual(JSON.parse(textOf(next)), { still: 'serving' });
	await gw.close();
});
