// make bench, replicas: what sharing state through Redis costs one replica.
// Two sluice processes side by side over HTTP, the same stdio upstream
// (the test catalog, github backend, --large-results): the single-process
// default, and a replica with sluice.shared.redis pointing at a
// redis-server started here (no persistence, a scratch directory, stopped
// by its PID). One session-era session each, one keep-alive connection,
// sequential requests; two measurements per process, interleaved in blocks
// so that drift of the machine hits both alike:
//   - a small tools/call (github__echo);
//   - read_result of a result the governor shortened earlier in the session
//     (list_issues, 300 issues), a 50-token page: found in the process that
//     made it; a third process (another replica on the same Redis) reads a
//     result the second made just before: its first page, a GET in Redis.
// Prints markdown. Numbers, not pass/fail (a failed call fails the run).
//   SLUICE=build/sluice CATALOG=build/tests/catalog node bench/replica.mjs
//   BENCH_REPLICA_CALLS (per measurement and process, default 1000)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const SLUICE = process.env.SLUICE || 'build/sluice';
const CATALOG = process.env.CATALOG || 'build/tests/catalog';
const N = Number(process.env.BENCH_REPLICA_CALLS || 1000);
const BLOCK = 100;
const WARMUP = 100;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-replica-'));
const procs = [];
const cleanup = () => {
	for (const p of procs) if (p.exitCode === null && p.signalCode === null) process.kill(p.pid, 'SIGTERM');
	rmSync(tmp, { recursive: true, force: true });
};
process.on('exit', cleanup);

const freePort = () => new Promise((resolve, reject) => {
	const s = net.createServer().listen(0, '127.0.0.1', () => {
		const { port } = s.address();
		s.close(() => resolve(port));
	});
	s.on('error', reject);
});

// Starts a process and resolves once its output matches re (at most 15 s).
function start(cmd, args, re) {
	const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
	procs.push(p);
	let out = '';
	return new Promise((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`${cmd} did not start: ${out}`)), 15000);
		const on = (d) => {
			out += d;
			const m = re.exec(out);
			if (m) {
				clearTimeout(timer);
				resolve({ proc: p, match: m, out: () => out });
			}
		};
		p.stdout.on('data', on);
		p.stderr.on('data', on);
		p.once('exit', (code) => {
			clearTimeout(timer);
			reject(new Error(`${cmd} exited ${code}: ${out}`));
		});
	});
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function post(url, body, session) {
	const u = new URL(url);
	const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
	if (session) Object.assign(headers, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
	return new Promise((resolve, reject) => {
		const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent, headers }, (res) => {
			let text = '';
			res.setEncoding('utf8');
			res.on('data', (c) => (text += c));
			res.on('end', () => {
				if (/event-stream/.test(res.headers['content-type'] || ''))
					text = text.split('\n').filter((l) => l.startsWith('data: ')).at(-1)?.slice(6) ?? '';
				resolve({ status: res.statusCode, session: res.headers['mcp-session-id'], json: text ? JSON.parse(text) : null });
			});
		});
		req.on('error', reject);
		req.end(JSON.stringify(body));
	});
}

async function session(url) {
	const init = await post(url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
	if (!init.session) throw new Error(`no session: ${JSON.stringify(init.json)}`);
	await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, init.session);
	let id = 2;
	const call = async (name, args) => {
		const r = await post(url, { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name, arguments: args } }, init.session);
		if (r.status !== 200 || !r.json?.result || r.json.result.isError) throw new Error(`${name}: ${JSON.stringify(r.json)}`);
		return r.json.result;
	};
	const list = await call('github__list_issues', { owner: 'acme', repo: 'web' });
	const text = list.content.map((c) => c.text ?? '').join('\n');
	const rid = /read_result \{"result_id": "([^"]+)"\}/.exec(text)?.[1];
	if (!rid) throw new Error(`list_issues was not shortened: ${text.slice(0, 200)}`);
	return { call, rid };
}

async function gateway(name, shared) {
	const port = await freePort();
	const cfg = path.join(tmp, `${name}.json`);
	writeFileSync(cfg, JSON.stringify({
		mcpServers: { github: { command: CATALOG, args: ['--backend', 'github', '--large-results'] } },
		sluice: { exposure: 'passthrough', audit: { file: '/dev/null' }, pinning: { stateDir: path.join(tmp, name) },
			governor: { maxTokens: 1000 }, ...(shared ? { shared } : {}) },
	}));
	await start(SLUICE, ['serve', '--http', `127.0.0.1:${port}`, '--config', cfg], /listening on/);
	return { name, s: await session(`http://127.0.0.1:${port}/mcp`), t: { echo: [], read: [] } };
}

const redisPort = await freePort();
await start('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
	'--dir', tmp, '--daemonize', 'no', '--logfile', ''], /Ready to accept connections/);
const sharedCfg = { redis: { url: `redis://127.0.0.1:${redisPort}`, keyPrefix: 'bench:' } };
const gws = [
	await gateway('single process (default)', null),
	await gateway('replica with Redis', sharedCfg),
	await gateway('another replica: a result it does not hold', sharedCfg),
];
// The third reads a result the second made just before (untimed), which it
// does not hold: its first page, a GET in Redis (the same caller: no
// authentication); it keeps it then, so later pages would be local.
if (!/^s/.test(gws[1].s.rid)) throw new Error(`the result was not kept in Redis: ${gws[1].s.rid}`);
gws[2].prep = async () => {
	const list = await gws[1].s.call('github__list_issues', { owner: 'acme', repo: 'web' });
	gws[2].s.rid = /read_result \{"result_id": "([^"]+)"\}/.exec(list.content.map((c) => c.text ?? '').join('\n'))[1];
};

const ops = {
	echo: (g) => g.s.call('github__echo', { a: 1 }),
	read: (g) => g.s.call('read_result', { result_id: g.s.rid, offset: 0, limit_tokens: 50 }),
};
for (const g of gws) for (let i = 0; i < WARMUP; i++) for (const [k, op] of Object.entries(ops)) {
	if (k === 'read' && g.prep) await g.prep();
	await op(g);
}
for (let done = 0; done < N; done += BLOCK)
	for (const g of gws)
		for (const [k, op] of Object.entries(ops))
			for (let i = 0; i < Math.min(BLOCK, N - done); i++) {
				if (k === 'read' && g.prep) await g.prep();
				const t0 = process.hrtime.bigint();
				await op(g);
				g.t[k].push(Number(process.hrtime.bigint() - t0) / 1000);
			}

const pct = (a, p) => {
	const s = [...a].sort((x, y) => x - y);
	return Math.round(s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))]);
};
console.log('## Replicas: the cost of sharing through Redis');
console.log();
console.log(`One replica over Streamable HTTP, one session, one keep-alive connection, sequential calls from`);
console.log(`Node: ${N} of each after ${WARMUP} warm-up, interleaved in blocks of ${BLOCK}, microseconds (client`);
console.log(`included). read_result: a 50-token page of a result the governor shortened (300 issues).`);
console.log();
console.log('| process | small call p50 | p99 | read_result p50 | p99 |');
console.log('|---|---|---|---|---|');
for (const g of gws)
	console.log(`| ${g.name} | ${pct(g.t.echo, 50)} | ${pct(g.t.echo, 99)} | ${pct(g.t.read, 50)} | ${pct(g.t.read, 99)} |`);
const [a, b, c] = gws;
console.log();
const diff = (k) => {
	const d = pct(b.t[k], 50) - pct(a.t[k], 50);
	return `${d >= 0 ? '+' : ''}${d} us`;
};
console.log(`the replica with Redis against the default, p50: small call ${diff('echo')}, read_result ${diff('read')}`);
const d = pct(c.t.read, 50) - pct(b.t.read, 50);
console.log(`a first read_result from Redis (another replica's result) against one kept in the process, p50: ${d >= 0 ? '+' : ''}${d} us`);
console.log();
process.exit(0);
