// make soak: a bounded soak of `sluice serve --http`.
//
// SOAK_SECONDS (60) of SOAK_SESSIONS (50) concurrent SDK 1.x clients over
// Streamable HTTP, each sending one request after another: invoke_tool
// (echo, slow, a failing tool, an unknown tool) and execute_code (plain
// programs, failing ones: throw, syntax error, unknown tool; hostile ones:
// an endless loop, a memory bomb, a huge return value). Every answer is
// checked against what its scenario expects; anything else is a failure.
// The gateway's RSS (/proc/PID/status VmRSS) and open fds (/proc/PID/fd)
// are sampled after warm-up (the first sixth of the run), in the middle
// and at the end, and once more after every client has gone.
//
// At a third and at two thirds of the run the config file is rewritten
// with another sluice.governor.maxTokens and the gateway gets SIGHUP
// (SOAK_RELOADS=0 turns this off): the pipeline is held while the calls in
// flight finish and the new settings are swapped in, under full load, and
// still no answer may be unexpected.
//
// Prints a markdown report; exits non-zero on any unexpected answer, or
// (runs of SOAK_SECONDS >= 30 only) when RSS grew more than
// RSS_TOLERANCE (25% and at least 16 MiB) or fds more than FD_TOLERANCE
// (8) from the warm-up sample to the end, or fds after the clients left
// are above the warm-up's.
//
//   SLUICE=build/sluice CATALOG=build/tests/catalog node tests/soak/soak.mjs
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';

import { startHttp, httpClient, catalog, textOf, closeAll, sleep } from '../e2e/helpers.mjs';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const SESSIONS = Number(process.env.SOAK_SESSIONS ?? 50);
const RSS_TOLERANCE = { ratio: 0.25, bytes: 16 << 20 };
const FD_TOLERANCE = 8;
const CHECK_GROWTH = SECONDS >= 30;
const RELOADS = process.env.SOAK_RELOADS === '0' ? 0 : 2;

// A small deterministic generator: runs are comparable.
function rng(seed) {
	let s = seed >>> 0;
	return () => {
		s = (s * 1664525 + 1013904223) >>> 0;
		return s / 2 ** 32;
	};
}

const invoke = (tool, args, server = 'github') => ({
	name: 'invoke_tool',
	arguments: { server, tool, arguments: args },
});
const program = (code) => ({ name: 'execute_code', arguments: { code } });
const kindOf = (r) => (r.isError ? /^([a-z]+): /.exec(textOf(r))?.[1] : undefined);

// Each scenario: weight, the request, and whether the answer is the expected one.
const SCENARIOS = [
	{
		name: 'invoke echo',
		weight: 30,
		make: (n) => invoke('echo', { n }),
		ok: (r, n) => !r.isError && JSON.parse(textOf(r)).n === n,
	},
	{
		name: 'invoke slow 20 ms',
		weight: 8,
		make: () => invoke('slow', { ms: 20 }),
		ok: (r) => !r.isError && textOf(r) === 'slept 20 ms',
	},
	{
		name: 'invoke failing tool',
		weight: 6,
		make: () => invoke('fail', { message: 'planned failure' }),
		ok: (r) => r.isError === true && /planned failure/.test(textOf(r)),
	},
	{
		name: 'invoke unknown tool',
		weight: 4,
		make: () => invoke('no_such_tool', {}),
		ok: (r) => r.isError === true && /no_such_tool/.test(textOf(r)),
	},
	{
		name: 'program: two calls',
		weight: 25,
		make: (n) =>
			program(`const a = await tools.github.echo({ n: ${n} }); const b = await tools.jira.echo({ n: 1 }); return a.arguments.n + b.arguments.n;`),
		ok: (r, n) => !r.isError && textOf(r) === String(n + 1),
	},
	{
		name: 'program: throw',
		weight: 5,
		make: () => program('throw new Error("planned throw")'),
		ok: (r) => kindOf(r) === 'error' && /planned throw/.test(textOf(r)),
	},
	{
		name: 'program: syntax error',
		weight: 4,
		make: () => program('return (1 +;'),
		ok: (r) => kindOf(r) === 'syntax',
	},
	{
		name: 'program: unknown tool',
		weight: 4,
		make: () => program('return await tools.github.no_such_tool({});'),
		ok: (r) => r.isError === true && /no_such_tool/.test(textOf(r)),
	},
	{
		name: 'hostile: endless loop',
		weight: 1,
		make: () => program('for (;;) {}'),
		ok: (r) => ['cpu', 'timeout'].includes(kindOf(r)),
	},
	{
		name: 'hostile: memory bomb',
		weight: 1,
		make: () => program('const a = []; for (;;) a.push(new Array(100000).fill(a.length));'),
		ok: (r) => ['memory', 'error'].includes(kindOf(r)) && /memory/i.test(textOf(r)),
	},
	{
		name: 'hostile: huge output',
		weight: 2,
		make: () => program('return "x".repeat(1 << 20);'),
		ok: (r) => kindOf(r) === 'output',
	},
];
const TOTAL_WEIGHT = SCENARIOS.reduce((a, s) => a + s.weight, 0);

function pick(r) {
	let x = r() * TOTAL_WEIGHT;
	for (const s of SCENARIOS) if ((x -= s.weight) < 0) return s;
	return SCENARIOS[0];
}

// CPU seconds (user + system) a process used so far.
function cpuSeconds(pid) {
	const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
	const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
	return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

function sample(pid) {
	const status = readFileSync(`/proc/${pid}/status`, 'utf8');
	return {
		rss: Number(/^VmRSS:\s+(\d+) kB/m.exec(status)[1]) * 1024,
		fds: readdirSync(`/proc/${pid}/fd`).length,
		cpu: cpuSeconds(pid),
		at: Date.now(),
	};
}

const pct = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN);
const mib = (b) => (b / 1048576).toFixed(1);

async function main() {
	const gw = await startHttp({
		servers: { github: catalog('github'), jira: catalog('jira') },
		sluice: {
			exposure: 'router',
			audit: { file: '/dev/null' },
			http: { maxSessions: SESSIONS + 16 },
			// Every session may have a program at once: they queue behind
			// maxConcurrent (twice the cores), none is refused as busy.
			codeMode: { enabled: true, timeoutMs: 30000, cpuMs: 1000, heapBytes: 32 << 20, poolSize: 4, maxQueued: SESSIONS },
		},
	});
	const stats = new Map(SCENARIOS.map((s) => [s.name, { n: 0, unexpected: 0, ms: [] }]));
	const failures = [];
	const all = [];
	const samples = {};
	const t0 = Date.now();
	const end = t0 + SECONDS * 1000;
	const cpu0 = { gateway: cpuSeconds(gw.pid), client: process.cpuUsage() };

	// Warm-up sample after a sixth of the run, middle at half, end just
	// before the clients stop.
	const timers = [
		['start (after warm-up)', SECONDS / 6],
		['middle', SECONDS / 2],
		['end', SECONDS - Math.min(1, SECONDS / 10)],
	].map(([label, s]) => setTimeout(() => (samples[label] = sample(gw.pid)), s * 1000));
	// Reloads: a stage's settings change under load, then change back.
	const reload = (maxTokens) => {
		const cfg = JSON.parse(readFileSync(gw.configPath, 'utf8'));
		cfg.sluice.governor = { maxTokens };
		writeFileSync(gw.configPath, JSON.stringify(cfg, null, 2));
		process.kill(gw.pid, 'SIGHUP');
	};
	for (let i = 1; i <= RELOADS; i++) timers.push(setTimeout(() => reload(4000 - i), (SECONDS * 1000 * i) / (RELOADS + 1)));

	async function session(i) {
		const r = rng(1000 + i);
		const { client, transport } = await httpClient(gw.url, { name: `soak-${i}` });
		let n = 0;
		try {
			while (Date.now() < end) {
				const sc = pick(r);
				const arg = i * 1000000 + n++;
				const st = stats.get(sc.name);
				const t = performance.now();
				let res, err;
				try {
					res = await client.callTool(sc.make(arg), undefined, { timeout: 60000 });
				} catch (e) {
					err = e;
				}
				const ms = performance.now() - t;
				st.n++;
				st.ms.push(ms);
				all.push(ms);
				let good = false;
				try {
					good = !err && sc.ok(res, arg);
				} catch {}
				if (!good) {
					st.unexpected++;
					if (failures.length < 20)
						failures.push(`${sc.name} (session ${i}): ${err ? `error: ${err.message}` : textOf(res).slice(0, 200)}`);
				}
			}
		} finally {
			await transport.terminateSession().catch(() => {});
			await client.close().catch(() => {});
		}
	}

	const results = await Promise.allSettled(Array.from({ length: SESSIONS }, (_, i) => session(i)));
	for (const [i, r] of results.entries())
		if (r.status === 'rejected') failures.push(`session ${i} could not run: ${r.reason?.message ?? r.reason}`);
	timers.forEach(clearTimeout);
	const elapsed = (Date.now() - t0) / 1000;
	const cpu = {
		gateway: cpuSeconds(gw.pid) - cpu0.gateway,
		client: (() => {
			const u = process.cpuUsage(cpu0.client);
			return (u.user + u.system) / 1e6;
		})(),
	};
	// Past undici's 4 s keep-alive, so the clients' idle sockets are closed too.
	await sleep(5000);
	// A reload sent late in a short run may still be checking the file.
	const applied = () => (gw.stderr().match(/config reload: new settings for 1 stage\b/g) ?? []).length;
	for (let i = 0; i < 150 && applied() < RELOADS; i++) await sleep(100);
	samples['after the clients left'] = sample(gw.pid);
	const children = readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((d) => {
		try {
			return /^PPid:\s+(\d+)/m.exec(readFileSync(`/proc/${d}/status`, 'utf8'))[1] === String(gw.pid);
		} catch {
			return false;
		}
	}).length;
	const exited = await gw.close();
	const stderr = gw.stderr();
	const reloaded = applied();

	// ---- the report ----
	const served = [...stats.values()].reduce((a, s) => a + s.n, 0);
	const unexpected = [...stats.values()].reduce((a, s) => a + s.unexpected, 0) + results.filter((r) => r.status === 'rejected').length;
	all.sort((a, b) => a - b);
	const out = [];
	out.push(`## sluice soak: ${SESSIONS} HTTP sessions, ${elapsed.toFixed(1)} s`);
	out.push('');
	out.push(`- requests served: ${served} (${(served / elapsed).toFixed(0)}/s)`);
	out.push(`- unexpected answers: ${unexpected}`);
	out.push(`- latency, all requests: p50 ${pct(all, 50).toFixed(1)} ms, p99 ${pct(all, 99).toFixed(1)} ms`);
	out.push(
		`- CPU used: gateway ${cpu.gateway.toFixed(1)} s, the soak's own clients ${cpu.client.toFixed(1)} s ` +
			`(${os.cpus().length} cores, load average at the end ${os.loadavg()[0].toFixed(1)})`,
	);
	if (RELOADS) out.push(`- config reloads (SIGHUP, a stage's settings changed under load): ${reloaded} of ${RELOADS} applied`);
	out.push(`- gateway exit on SIGTERM: ${exited.code ?? exited.signal}; children left before it: ${children} (upstreams, zygote)`);
	out.push('');
	out.push('| scenario | requests | unexpected | p50 ms | p99 ms |');
	out.push('|---|---:|---:|---:|---:|');
	for (const [name, s] of stats) {
		s.ms.sort((a, b) => a - b);
		out.push(`| ${name} | ${s.n} | ${s.unexpected} | ${pct(s.ms, 50).toFixed(1)} | ${pct(s.ms, 99).toFixed(1)} |`);
	}
	out.push('');
	out.push('| gateway sample | at s | RSS MiB | open fds |');
	out.push('|---|---:|---:|---:|');
	for (const [label, s] of Object.entries(samples))
		out.push(`| ${label} | ${((s.at - t0) / 1000).toFixed(1)} | ${mib(s.rss)} | ${s.fds} |`);

	const problems = [];
	if (unexpected) problems.push(`${unexpected} unexpected answers`);
	if (reloaded !== RELOADS) problems.push(`${reloaded} of ${RELOADS} reloads applied`);
	if (/config reload refused/.test(stderr)) problems.push('a reload was refused');
	const start = samples['start (after warm-up)'], last = samples.end, left = samples['after the clients left'];
	if (!start || !last) problems.push('a sample is missing');
	else if (CHECK_GROWTH) {
		const limit = Math.max(start.rss * RSS_TOLERANCE.ratio, RSS_TOLERANCE.bytes);
		if (last.rss - start.rss > limit)
			problems.push(`RSS grew ${mib(last.rss - start.rss)} MiB after warm-up (tolerance ${mib(limit)} MiB)`);
		if (last.fds - start.fds > FD_TOLERANCE) problems.push(`open fds grew by ${last.fds - start.fds} after warm-up (tolerance ${FD_TOLERANCE})`);
		if (left.fds > start.fds) problems.push(`${left.fds} fds open after the clients left, ${start.fds} at warm-up`);
	}
	if (/Sanitizer|runtime error/.test(stderr)) problems.push('a sanitizer report in the gateway log');
	out.push('');
	out.push(
		CHECK_GROWTH
			? `Tolerance after warm-up: RSS +${RSS_TOLERANCE.ratio * 100}% (at least ${mib(RSS_TOLERANCE.bytes)} MiB), fds +${FD_TOLERANCE}; fds after the clients left at most the warm-up's.`
			: 'Growth is not judged in runs under 30 s (warm-up dominates).',
	);
	if (failures.length) {
		out.push('');
		out.push('Unexpected answers (first 20):');
		for (const f of failures) out.push(`- ${f}`);
	}
	out.push('');
	out.push(problems.length ? `**FAIL**: ${problems.join('; ')}` : '**PASS**');
	console.log(out.join('\n'));
	await closeAll();
	process.exitCode = problems.length ? 1 : 0;
}

main().catch(async (e) => {
	console.error(`soak: ${e.stack ?? e}`);
	await closeAll();
	process.exitCode = 2;
});
