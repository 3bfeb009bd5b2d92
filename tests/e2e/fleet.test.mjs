// The fleet (docs/internals/REPLICAS.md, README "Run several replicas"):
// Redis, HAProxy running deploy/haproxy.cfg, and three replicas started with
// deploy/sluice@.service's ExecStart, each with the catalog test server as a
// stdio upstream. 2026-07-28 clients of the official SDK 2.x call tools and
// programs through HAProxy while one replica is SIGKILLed: only calls in
// flight at that moment may fail (with a clear error), every call made
// after it succeeds. The replicas see each other through Redis: 3 alive,
// then 2 alive and 1 gone; one stopped cleanly leaves; `sluice status`
// prints the fleet; hostile entries in the hash are ignored.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { writeFileSync } from 'node:fs';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { catalog, runSluice, eventually, textOf, MODERN } from './helpers.mjs';
import { startRedis, redisCli } from './redis.mjs';
import { fleetPorts, renderHaproxy, startHaproxy, startReplica, haproxyCmd as haproxyCmd_, replicaStatus, stopFleet } from './fleet.mjs';

const CLIENTS = 4;
const CALLS = 40; // per client: bounded whatever happens

let redis, haproxy, ports;
const replicas = [];
after(() => stopFleet({ replicas, haproxy, redis, ports }));
const haproxyCmd = (cmd) => haproxyCmd_(ports.dir, cmd);
const status = replicaStatus;
const fleetOf = async (r) => (await status(r)).fleet;
const states = (fl) => Object.fromEntries(fl.replicas.map((m) => [m.pid, m.state]));

async function client(url) {
	const c = new Client({ name: 'fleet-e2e', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
	await c.connect(new StreamableHTTPClientTransport(new URL(url)));
	return c;
}

// A call whose response stream was cut may be noticed by the SDK only at its
// request timeout (60 s by default): kept short here, within the test's budget.
const OPTS = { timeout: 5000 };

// One call of the mix, checked: resolves true, or throws what the client saw.
async function oneCall(c, i, k) {
	const kind = k % 4;
	if (kind === 3) {
		const r = await c.callTool({ name: 'execute_code', arguments: { code: `return (await tools.github.echo({ n: ${k} })).arguments.n * 2;` } }, OPTS);
		assert.notEqual(r.isError, true, textOf(r));
		assert.match(textOf(r), new RegExp(`\\b${k * 2}\\b`));
	} else if (kind === 1) {
		const r = await c.callTool({ name: 'github__slow', arguments: { ms: 40 } }, OPTS);
		assert.equal(textOf(r), 'slept 40 ms');
	} else {
		const r = await c.callTool({ name: 'github__echo', arguments: { client: i, k } }, OPTS);
		assert.deepEqual(JSON.parse(textOf(r)), { client: i, k });
	}
}

test('three replicas behind HAProxy: a SIGKILL mid-load fails only the calls in flight; the fleet in /status and sluice status', async (t) => {
	const t0 = Date.now();
	ports = await fleetPorts(3);
	redis = await startRedis();
	const configPath = path.join(ports.dir, 'sluice.json');
	writeFileSync(configPath, JSON.stringify({
		mcpServers: { github: catalog('github') },
		sluice: { exposure: 'passthrough', codeMode: { enabled: true }, shared: { redis: { url: redis.url, keyPrefix: 'fleet:' } } },
	}));
	for (const port of ports.replicas)
		replicas.push(await startReplica(port, { configPath, stateRoot: path.join(ports.dir, 'state') }));
	// Each replica has its own state directory, as the unit gives it.
	assert.equal(replicas[0].env.XDG_STATE_HOME, path.join(ports.dir, 'state', String(ports.replicas[0])));
	assert.deepEqual(replicas[0].argv.slice(1), ['serve', '--http', `127.0.0.1:${ports.replicas[0]}`, '--config', configPath]);
	haproxy = await startHaproxy(renderHaproxy({
		listen: `127.0.0.1:${ports.front}`,
		replicas: ports.replicas.map((p) => `127.0.0.1:${p}`),
		statsSocket: path.join(ports.dir, 'haproxy.sock'),
	}), ports.dir, ports.front);

	// (b) Every replica sees the three, alive.
	await eventually(async () => {
		const fl = await fleetOf(replicas[0]);
		return fl.replicas.length === 3 && fl.replicas.every((m) => m.state === 'alive');
	}, 8000, 100, 'three replicas alive');
	let fl = await fleetOf(replicas[2]);
	assert.deepEqual(fl.replicas.map((m) => m.pid).sort(), replicas.map((r) => r.pid).sort());
	for (const m of fl.replicas) {
		const r = replicas.find((x) => x.pid === m.pid);
		assert.equal(m.listen, `127.0.0.1:${r.port}`);
		assert.equal(m.self, r === replicas[2]);
		assert.equal(m.upstreams.total, 1);
		assert.match(m.id, new RegExp(`:${r.pid}$`));
	}
	assert.match(fl.replicas.find((m) => m.self).id, new RegExp(`:${replicas[2].pid}$`));

	// (a) Load through HAProxy; one replica SIGKILLed in the middle.
	const front = `http://127.0.0.1:${ports.front}/mcp`;
	const clients = await Promise.all(Array.from({ length: CLIENTS }, () => client(front)));
	const calls = [];
	let killAt = null, deadAt = null, inFlightAtKill = 0, done = 0;
	const victim = replicas[1];
	const loops = clients.map(async (c, i) => {
		for (let k = 0; k < CALLS; k++) {
			const rec = { i, k, start: Date.now(), end: null, ok: false, error: null };
			calls.push(rec);
			try {
				await oneCall(c, i, k);
				rec.ok = true;
			} catch (e) {
				rec.error = e;
			}
			rec.end = Date.now();
			done++;
			if (killAt === null && done >= CLIENTS * 8) {
				inFlightAtKill = calls.filter((x) => x.end === null).length;
				killAt = Date.now();
				await victim.kill('SIGKILL');
				// Until the process is gone, the kernel still completes connections
				// to its listening socket: a call started meanwhile may reach it.
				deadAt = Date.now();
			}
		}
	});
	await Promise.all(loops);
	assert.ok(killAt, 'the replica was killed mid-load');
	assert.equal(calls.length, CLIENTS * CALLS);
	const failed = calls.filter((x) => !x.ok);
	if (process.env.FLEET_DEBUG) t.diagnostic(haproxy.log().split('\n').filter((l) => !/ 200 /.test(l)).join('\n'));
	t.diagnostic(`the replica took ${deadAt - killAt} ms to die`);
	const cause = (e) => (e?.cause ? ` <- ${e.cause.code ?? ''} ${e.cause.message ?? ''}${cause(e.cause)}` : '');
	t.diagnostic(`${calls.length} calls, ${failed.length} failed (${inFlightAtKill} in flight at the kill): ${failed.map((f) => `[${f.start - killAt}..${f.end - killAt} ms] ${f.error?.message}${cause(f.error)}`).join('; ')}`);
	for (const f of failed) {
		// A clear error: the client saw HAProxy's 502 or the stream cut, never a wrong result.
		assert.doesNotMatch(String(f.error?.message), /Expected values|deepStrictEqual|strictEqual|match/, String(f.error?.stack));
		assert.match(String(f.error?.message), /502|Bad Gateway|terminated|fetch failed|ECONNRESET|socket|closed|Request timed out/i, String(f.error?.stack));
		assert.ok(f.start <= deadAt, `a call started ${f.start - deadAt} ms after the replica was gone failed: ${f.error?.message}`);
		assert.ok(f.end >= killAt, `a call failed before the kill: ${f.error?.message}`);
	}
	const dying = calls.filter((x) => x.start > killAt && x.start <= deadAt).length;
	assert.ok(failed.length <= inFlightAtKill + dying, `${failed.length} failed; ${inFlightAtKill} were in flight at the kill, ${dying} started while it died`);
	const after = calls.filter((x) => x.start > deadAt);
	assert.ok(after.length >= CLIENTS * 10, `${after.length} calls after the kill`);
	assert.ok(after.every((x) => x.ok));
	await eventually(() => /sluice\/r2 is DOWN/.test(haproxy.log()), 3000, 50, `HAProxy marks r2 down: ${haproxy.log()}`);
	await Promise.all(clients.map((c) => c.close()));

	// (b) After the kill: 2 alive, the killed one gone (not seen for 3 heartbeats).
	await eventually(async () => states(await fleetOf(replicas[0]))[victim.pid] === 'gone', 10000, 200, 'the killed replica gone');
	fl = await fleetOf(replicas[0]);
	assert.deepEqual(states(fl), { [replicas[0].pid]: 'alive', [victim.pid]: 'gone', [replicas[2].pid]: 'alive' });
	assert.ok(fl.replicas.find((m) => m.pid === victim.pid).lastSeenMsAgo > 6000);
	// The survivors served: their upstream is up (started with their first client).
	assert.deepEqual(fl.replicas.filter((m) => m.state === 'alive').map((m) => m.upstreams), [{ up: 1, total: 1 }, { up: 1, total: 1 }]);

	// Hostile entries in the hash: ignored, never printed.
	const now = Date.now();
	await redisCli(redis, ['HSET', 'fleet:replicas', 'evil\x1b[2J', JSON.stringify({ id: 'evil\x1b[2J', lastSeen: now })]);
	await redisCli(redis, ['HSET', 'fleet:replicas', 'evil:1', JSON.stringify({ id: 'evil:1', lastSeen: now, version: '\x1b]0;pwned\x07' })]);
	await redisCli(redis, ['HSET', 'fleet:replicas', 'evil:2', 'x'.repeat(5000)]);
	await redisCli(redis, ['HSET', 'fleet:replicas', 'evil:3', JSON.stringify({ id: 'evil:3', lastSeen: now + 7200e3 })]);
	await redisCli(redis, ['HSET', 'fleet:replicas', 'old:4', JSON.stringify({ id: 'old:4', lastSeen: now - 3700e3 })]);
	await eventually(async () => (await fleetOf(replicas[0])).ignored === 4, 5000, 100, 'hostile entries ignored');
	// The entry unseen for over an hour is pruned from Redis.
	await eventually(async () => (await redisCli(redis, ['HEXISTS', 'fleet:replicas', 'old:4'])).trim() === '0', 5000, 100, 'old entry pruned');

	// (c) sluice status prints the fleet.
	const out = await runSluice(['status', '--url', `http://127.0.0.1:${replicas[0].port}`]);
	assert.equal(out.code, 0, out.stderr);
	assert.match(out.stdout, /fleet: this replica is \S+:\d+, read from Redis at \d{4}-/);
	assert.match(out.stdout, /REPLICA\s+STATE\s+PID\s+LISTEN/);
	for (const r of replicas) {
		const row = out.stdout.split('\n').find((l) => new RegExp(`\\s${r.pid}\\s+127\\.0\\.0\\.1:${r.port}\\s`).test(l));
		assert.ok(row, `a row for ${r.pid}:\n${out.stdout}`);
		assert.match(row, r === victim ? /\sgone\s/ : /\salive\s/);
		// The killed one may have beaten last before its upstream was up.
		assert.match(row, r === victim ? /\s[01]\/1\s/ : /\s1\/1\s/);
	}
	assert.match(out.stdout, /\(this one\)/);
	assert.match(out.stdout, /4 entries ignored/);
	assert.doesNotMatch(out.stdout, /\x1b|\x07/);

	// The README's rolling restart: a replica drained through HAProxy's runtime
	// API gets no new requests (r2 is down, so all go to r3), and is back once ready.
	assert.match(await haproxyCmd('set server sluice/r1 state drain'), /^\s*$/);
	const c = await client(front);
	const mark = haproxy.log().length;
	for (let k = 0; k < 6; k++) await oneCall(c, 9, k * 4);
	// HAProxy logs a request once it has ended: its lines may come a little later.
	const served = () => [...haproxy.log().slice(mark).matchAll(/ sluice\/(r\d) .*"POST \/mcp/g)].map((m) => m[1]);
	await eventually(() => served().length >= 6, 3000, 50, 'HAProxy logging the calls');
	assert.ok(served().every((r) => r === 'r3'), served().join(' '));
	assert.match(await haproxyCmd('set server sluice/r1 state ready'), /^\s*$/);
	await c.close();
	// A config reload (SIGHUP, the unit's ExecReload) keeps the replica in the fleet, alive.
	process.kill(replicas[0].pid, 'SIGHUP');
	await eventually(() => /config reload: /.test(replicas[0].stderr()), 5000, 50, 'r1 reloaded');
	const reloaded = Date.now();
	// Its next heartbeat (one every 2 s), as another replica sees it.
	const r1 = await eventually(async () => {
		const m = (await fleetOf(replicas[2])).replicas.find((x) => x.pid === replicas[0].pid);
		return m && Date.parse(m.lastSeen) > reloaded && m;
	}, 5000, 100, 'a heartbeat of r1 after its reload');
	assert.equal(r1.state, 'alive');

	// A replica stopped cleanly (SIGTERM, as systemctl stop) leaves the fleet.
	const r3 = replicas[2];
	assert.equal((await r3.kill('SIGTERM')).code, 0);
	await eventually(async () => !(r3.pid in states(await fleetOf(replicas[0]))), 5000, 100, 'r3 left');
	assert.equal((await redisCli(redis, ['HKEYS', 'fleet:replicas'])).split('\n').filter((k) => k.endsWith(`:${r3.pid}`)).length, 0);
	// A hash grown huge: at most 1024 entries looked at per read, 256 shown in id order.
	const many = [];
	for (let n = 0; n < 1100; n++) many.push(`z:${String(n).padStart(4, '0')}`, JSON.stringify({ id: `z:${String(n).padStart(4, '0')}`, lastSeen: Date.now() }));
	await redisCli(redis, ['HSET', 'fleet:replicas', ...many]);
	const total = Number((await redisCli(redis, ['HLEN', 'fleet:replicas'])).trim());
	await eventually(async () => (await fleetOf(replicas[0])).replicas.length === 256, 5000, 100, '256 shown');
	fl = await fleetOf(replicas[0]);
	assert.equal(fl.replicas.length + fl.omitted + fl.ignored, total, JSON.stringify({ omitted: fl.omitted, ignored: fl.ignored, total }));
	assert.ok(fl.omitted >= total - 1024 - fl.ignored);
	const ids = fl.replicas.map((m) => m.id);
	assert.deepEqual(ids, [...ids].sort());
	assert.match((await runSluice(['status', '--url', `http://127.0.0.1:${replicas[0].port}`])).stdout, new RegExp(`  ${fl.omitted} more not listed`));
	for (const r of replicas) assert.doesNotMatch(r.stderr(), /Sanitizer|runtime error/);
	const took = Date.now() - t0;
	assert.ok(took < 45000, `took ${took} ms`);
});
