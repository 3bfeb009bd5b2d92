// make bench, scale: what a request costs as the catalog grows (issue 35).
// For 100 (1 x 100), 1,000 (10 x 100), 4,000 (20 x 200) and 10,000 (50 x 200)
// tools, stdio servers of generated tools (the test catalog's `generated` back
// end with --tools N: realistic names, descriptions and schemas), two gateways
// on stdio, one client each, sequential requests, the median of each:
//   - passthrough: tools/list (and its size), a small tools/call of one tool;
//   - code mode: search_tools, describe_tools of one server;
//   - the floors for the listing, measured in this run by bench/serialize.c:
//     yyjson writing the same listing (received from the gateway) once, and
//     a process answering each request with that listing's line from memory,
//     timed through the same client as the gateway (the cost of moving the
//     bytes, which the gateway pays too);
//   - each gateway's RSS after its requests.
// Then sessions: one gateway over HTTP (a 100-tool catalog), 1,000 to 50,000
// sessions opened (initialize only), its RSS and the cost per session.
// Each number with its factor from the smallest size. Prints markdown and
// writes the table's data for the chart to BENCH_SCALE_DAT when set.
//   SLUICE=build/sluice CATALOG=build/tests/catalog SERIALIZE=... node bench/scale.mjs
//   BENCH_SCALE_SIZES=100,1000 to run fewer sizes; BENCH_SCALE_SESSIONS=1000,10000.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const SLUICE = process.env.SLUICE || 'build/sluice';
const CATALOG = process.env.CATALOG || 'build/tests/catalog';
const SERIALIZE = process.env.SERIALIZE;
const SHAPES = { 100: [1, 100], 1000: [10, 100], 4000: [20, 200], 10000: [50, 200] };
const SIZES = (process.env.BENCH_SCALE_SIZES || '100,1000,4000,10000').split(',').map(Number);
const SESSIONS = (process.env.BENCH_SCALE_SESSIONS || '1000,10000,50000').split(',').map(Number);
const tmp = mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-scale-'));
const procs = new Set();
process.on('exit', () => {
	for (const p of procs) if (p.exitCode === null && p.signalCode === null) process.kill(p.pid, 'SIGKILL');
	rmSync(tmp, { recursive: true, force: true });
});

const median = (v) => [...v].sort((a, b) => a - b)[v.length >> 1];
const rssKiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

// A gateway on stdio with a raw JSON-RPC client: requests go one at a time,
// and an answer is the next line that is not a notification (no JSON parse
// on the timed path beyond what the test needs).
function gateway(config) {
	const file = path.join(tmp, `config-${procs.size}.json`);
	writeFileSync(file, JSON.stringify(config));
	return peer(SLUICE, ['serve', '--config', file]);
}

function peer(command, args) {
	const p = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
	procs.add(p);
	// A line's chunks are kept only when the caller wants its text (keep):
	// a timed listing is counted, not copied, so the client's own copying
	// of megabytes does not weigh on the gateway's time (nor the writer's).
	let chunks = [], head = null, len = 0, waiting = null, keep = true, id = 0;
	const piece = (b) => {
		if (head === null || head.length < 40)
			head = head === null ? b.subarray(0, 40) : Buffer.concat([head, b]).subarray(0, 40);
		len += b.length;
		if (keep)
			chunks.push(b);
	};
	p.stdout.on('data', (d) => {
		let at;
		while ((at = d.indexOf(10)) >= 0) {
			piece(d.subarray(0, at));
			d = d.subarray(at + 1);
			const line = keep ? Buffer.concat(chunks) : null, n = len, h = head;
			chunks = [];
			head = null;
			len = 0;
			if (h.toString().includes('"method"'))
				continue;
			const w = waiting;
			waiting = null;
			w?.({ line, len: n });
		}
		if (d.length)
			piece(d);
	});
	const send = (method, params, kept) => new Promise((resolve, reject) => {
		if (p.exitCode !== null)
			return reject(new Error('the gateway exited'));
		waiting = resolve;
		keep = kept;
		p.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }) + '\n');
	});
	const request = async (method, params) => (await send(method, params, true)).line;
	// { us, len } and, with keep, the line.
	const timed = async (method, params, kept = false) => {
		const t0 = process.hrtime.bigint();
		const r = await send(method, params, kept);
		return { us: Number(process.hrtime.bigint() - t0) / 1000, ...r };
	};
	return {
		pid: p.pid,
		request, timed,
		async open() {
			await request('initialize', { protocolVersion: '2025-11-25', capabilities: {},
				clientInfo: { name: 'scale', version: '1' } });
			p.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
		},
		close() { p.stdin.end(); procs.delete(p); return new Promise((r) => p.once('exit', r)); },
	};
}

const servers = (n, tools) => Object.fromEntries(Array.from({ length: n }, (_, i) => {
	const name = `s${String(i + 1).padStart(2, '0')}`;
	return [name, { command: CATALOG, args: ['--backend', 'generated', '--tools', String(tools), '--name', name] }];
}));
const sluiceConfig = (extra) => ({ logLevel: 'warn', audit: { file: '/dev/null' },
	pinning: { stateDir: path.join(tmp, 'pins') }, ...extra });

// Waits (at most 60 s) until the listing has every tool: servers start in parallel.
async function untilListed(g, want) {
	const deadline = Date.now() + 60000;
	for (;;) {
		const r = JSON.parse(await g.request('tools/list', {}));
		const n = r.result.tools.length;
		if (n >= want)
			return r;
		if (Date.now() > deadline)
			throw new Error(`only ${n} of ${want} tools listed after 60 s`);
		await new Promise((res) => setTimeout(res, 200));
	}
}

async function repeat(n, fn) {
	const t = [];
	for (let i = 0; i < n; i++)
		t.push((await fn()).us);
	return median(t);
}

async function size(total) {
	const [n, per] = SHAPES[total];
	const row = { total, shape: `${n} x ${per}` };
	// Passthrough: the listing, its floor, a call.
	let g = gateway({ mcpServers: servers(n, per), sluice: sluiceConfig({}) });
	await g.open();
	const first = await untilListed(g, total);
	const listing = path.join(tmp, 'listing.json');
	writeFileSync(listing, JSON.stringify(first.result));
	const reps = total >= 4000 ? 11 : 31;
	const list = [];
	for (let i = 0; i < reps; i++) {
		const r = await g.timed('tools/list', {});
		list.push(r.us);
		row.bytes = r.len;
	}
	row.list = median(list);
	row.floor = SERIALIZE ? Number(execFileSync(SERIALIZE, ['-n', String(reps), listing]).toString()) : NaN;
	const tool = first.result.tools.find((t) => t.name.startsWith('s01__')).name;
	const call = await g.timed('tools/call', { name: tool, arguments: { id: 'x', query: 'q', owner: 'o' } }, true);
	if (!/"result"/.test(call.line))
		throw new Error(`tools/call ${tool} failed: ${call.line.subarray(0, 300)}`);
	row.call = await repeat(500, () => g.timed('tools/call', { name: tool, arguments: {} }));
	row.rss = rssKiB(g.pid);
	await g.close();
	// The writer, with the gateway and its servers gone, as the gateway
	// ran with nothing else of this bench's running beside it.
	row.writer = NaN;
	if (SERIALIZE) {
		const w = peer(SERIALIZE, ['-s', listing]);
		await w.request('ping', {});
		row.writer = await repeat(reps, () => w.timed('tools/list', {}));
		await w.close();
	}
	// Code mode: search and describe.
	g = gateway({ mcpServers: servers(n, per), sluice: sluiceConfig({ exposure: 'code' }) });
	await g.open();
	// Every server is ready once describe_tools knows each (servers start in parallel).
	const deadline = Date.now() + 60000;
	for (let i = 1; i <= n;) {
		const r = JSON.parse(await g.request('tools/call', { name: 'describe_tools',
			arguments: { server: `s${String(i).padStart(2, '0')}` } }));
		if (!r.result?.isError && /function|=>|\(args/.test(JSON.stringify(r.result))) {
			i++;
			continue;
		}
		if (Date.now() > deadline)
			throw new Error(`the code-mode gateway did not start its servers within 60 s: ${JSON.stringify(r).slice(0, 300)}`);
		await new Promise((res) => setTimeout(res, 200));
	}
	const search = { name: 'search_tools', arguments: { query: 'archive the invoices of a customer' } };
	const hit = JSON.parse((await g.timed('tools/call', search, true)).line);
	if (!/tools\.s\d\d\./.test(JSON.stringify(hit.result)))
		throw new Error(`search_tools found nothing: ${JSON.stringify(hit).slice(0, 300)}`);
	row.search = await repeat(reps * 3, () => g.timed('tools/call', search));
	row.describe = await repeat(reps * 3, () => g.timed('tools/call', { name: 'describe_tools', arguments: { server: 's01' } }));
	row.rssCode = rssKiB(g.pid);
	await g.close();
	return row;
}

const freePort = () => new Promise((resolve, reject) => {
	const s = net.createServer().listen(0, '127.0.0.1', () => {
		const { port } = s.address();
		s.close(() => resolve(port));
	});
	s.on('error', reject);
});

// Sessions over HTTP: initialize only, 16 at a time, on keep-alive connections.
async function sessions(counts) {
	const port = await freePort();
	const max = Math.max(...counts);
	const file = path.join(tmp, 'http.json');
	writeFileSync(file, JSON.stringify({ mcpServers: servers(1, 100), sluice: sluiceConfig({
		http: { listen: `127.0.0.1:${port}`, maxSessions: max, maxSessionsPerCaller: max } }) }));
	const p = spawn(SLUICE, ['serve', '--config', file], { stdio: ['ignore', 'ignore', 'inherit'] });
	procs.add(p);
	const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
	const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
		protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'scale', version: '1' } } });
	const init = () => new Promise((resolve, reject) => {
		const req = http.request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', agent, headers: {
			'content-type': 'application/json', accept: 'application/json, text/event-stream' } }, (res) => {
			res.resume();
			res.on('end', () => res.statusCode === 200 && res.headers['mcp-session-id'] ? resolve() :
				reject(new Error(`initialize: HTTP ${res.statusCode}`)));
		});
		req.on('error', reject);
		req.end(body);
	});
	for (let i = 0; ; i++) {
		try { await init(); break; } catch (e) { if (i > 100) throw e; await new Promise((r) => setTimeout(r, 100)); }
	}
	const base = rssKiB(p.pid);
	const rows = [];
	let open = 1;
	for (const want of counts) {
		const t0 = process.hrtime.bigint();
		const before = open;
		while (open < want) {
			const batch = Math.min(16, want - open);
			await Promise.all(Array.from({ length: batch }, init));
			open += batch;
		}
		const s = Number(process.hrtime.bigint() - t0) / 1e9;
		rows.push({ sessions: want, rss: rssKiB(p.pid), rate: (open - before) / s });
	}
	agent.destroy();
	process.kill(p.pid, 'SIGTERM');
	procs.delete(p);
	return { base, rows };
}

const fmt = (x, d = 0) => Number.isFinite(x) ? x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }) : '-';
const rows = [];
for (const s of SIZES)
	rows.push(await size(s));
const r0 = rows[0];
const f = (a, b) => `${fmt(a / 1000, a < 10000 ? 2 : 1)} (${fmt(a / b, 1)}x)`;
console.log('## Scale: the catalog');
console.log();
console.log(`Stdio servers of generated tools, one client, sequential requests, the median; milliseconds`);
console.log(`with the factor from ${fmt(r0.total)} tools in brackets. The floor is yyjson writing the same`);
console.log(`listing once; the writer answers each request with the same listing's line from memory,`);
console.log(`through the same client (both bench/serialize.c); RSS is each gateway's after its requests.`);
console.log(`Goals at ${fmt(10000)} tools: list / floor at most 3x, the listing at most 12x its time at`);
console.log(`${fmt(1000)} tools, search_tools at most 2x, tools/call as at the smallest size.`);
console.log();
console.log('| tools (servers x tools) | tools/list | its size | floor | list / floor | writer | list / writer | search_tools | describe_tools (one server) | tools/call | RSS passthrough | RSS code mode |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows)
	console.log(`| ${fmt(r.total)} (${r.shape}) | ${f(r.list, r0.list)} | ${fmt(r.bytes / 1024)} KiB | ${fmt(r.floor / 1000, 2)} | ${fmt(r.list / r.floor, 1)}x | ${fmt(r.writer / 1000, 2)} | ${fmt(r.list / r.writer, 1)}x | ${f(r.search, r0.search)} | ${f(r.describe, r0.describe)} | ${f(r.call, r0.call)} | ${fmt(r.rss / 1024, 1)} MiB | ${fmt(r.rssCode / 1024, 1)} MiB |`);
console.log();
if (process.env.BENCH_SCALE_DAT)
	writeFileSync(process.env.BENCH_SCALE_DAT, rows.map((r) =>
		`${r.total} ${r.list / 1000} ${r.floor / 1000} ${r.search / 1000} ${r.describe / 1000} ${r.call / 1000}`).join('\n') + '\n');
if (SESSIONS.length && SESSIONS[0] > 0) {
	const { base, rows: srows } = await sessions(SESSIONS);
	console.log('## Scale: sessions');
	console.log();
	console.log(`One gateway over HTTP (100 tools), sessions opened with initialize, 16 at a time; its RSS`);
	console.log(`(${fmt(base / 1024, 1)} MiB with one session) and the cost per session above that.`);
	console.log();
	console.log('| sessions | RSS | per session | opened per second |');
	console.log('|---:|---:|---:|---:|');
	for (const r of srows)
		console.log(`| ${fmt(r.sessions)} | ${fmt(r.rss / 1024, 1)} MiB | ${fmt((r.rss - base) / (r.sessions - 1), 2)} KiB | ${fmt(r.rate)} |`);
	console.log();
}
