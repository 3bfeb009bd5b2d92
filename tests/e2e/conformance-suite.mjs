// The official MCP conformance suite, both pinned versions, run in both
// directions (docs/internals/CONFORMANCE.md):
//
// - server scenarios: the suite against the suite's own reference server
//   (tests/servers/conformance-reference/), directly, and through sluice
//   with that server as a stdio upstream and as a URL upstream;
// - client scenarios: the suite's scenario server with sluice as its client
//   (tests/e2e/conformance-client.mjs drives sluice).
//
// Used by the conformance-*.test.mjs files, which assert parity, and by
// tests/conformance-table.mjs, which prints the tables of CONFORMANCE.md.
// Every process started here is stopped by its PID in close()/closeAll();
// every run is bounded by a timeout.
import { spawn, execFile } from 'node:child_process';
import net from 'node:net';
import { mkdtempSync, readdirSync, readFileSync, existsSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { REPO, SLUICE, freePort, startHttp } from './helpers.mjs';

export const NODE22 = path.join(REPO, 'node_modules', '.bin', 'node');
const REF = path.join(REPO, 'tests', 'servers', 'conformance-reference');

// A Node process that inherits the test runner's NODE_TEST_CONTEXT reports
// to the runner instead of running its program (the reference server said
// nothing): the processes started from here, sluice's upstreams among them,
// get an environment without it (the runner read it at start).
delete process.env.NODE_TEST_CONTEXT;

// The two pinned versions (package.json): the newest release and the newest
// alpha, each with the reference server of its own commit.
export const VERSIONS = {
	release: {
		version: '0.1.16',
		suite: path.join(REPO, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js'),
		server: path.join(REF, '0.1.16', 'everything-server.ts'),
		minDirect: 28, // of the 31 the reference server passes: fewer, and its run broke
	},
	alpha: {
		version: '0.2.0-alpha.12',
		suite: path.join(REPO, 'node_modules', 'conformance-alpha', 'dist', 'index.js'),
		server: path.join(REF, 'alpha', 'everything-server.ts'),
		minDirect: 48, // of 53
		dualEra: true, // its reference server speaks both eras: also run with the URL upstream pinned
	},
};

// Server scenarios that pass directly and not through sluice, and why:
// 'stdio:scenario' or 'url:scenario' -> reason. Only what sluice cannot fix;
// an entry that passes through sluice fails the test.
// (docs/internals/CONFORMANCE.md, "Why the known ones fail", says more.)
const STDIO_NO_MRTR = 'the reference server has these tools and prompt only on its 2026-07-28 HTTP path, ' +
	'not over stdio';
export const URL_SESSION_FACE = '"protocol": "auto" speaks this dual-era server\'s session era (its 2026-07-28 ' +
	'face has no resources.subscribe), which lacks these 2026-only tools; pinned to 2026-07-28 they pass ' +
	'(CONFORMANCE.md, "Why the known ones fail")';
export const KNOWN_SERVER = {
	release: {},
	alpha: {
		'stdio:server-stateless': 'four checks call diagnostic tools the reference server has only on its ' +
			'2026-07-28 HTTP path, not over stdio',
		...Object.fromEntries(['basic-elicitation', 'basic-sampling', 'basic-list-roots', 'request-state',
			'multiple-input-requests', 'multi-round', 'non-tool-request', 'result-type', 'tampered-state',
			'capability-check'].map((s) => [`stdio:input-required-result-${s}`, STDIO_NO_MRTR])),
		'url:server-stateless': URL_SESSION_FACE,
		...Object.fromEntries(['basic-elicitation', 'basic-sampling', 'basic-list-roots', 'request-state',
			'multiple-input-requests', 'multi-round', 'non-tool-request', 'result-type', 'tampered-state',
			'capability-check'].map((s) => [`url:input-required-result-${s}`, URL_SESSION_FACE])),
	},
};

// Client scenarios sluice does not pass, and why: scenario -> reason.
// An entry that passes fails the test.
const NOT_SUPPORTED = 'not supported: ';
export const KNOWN_CLIENT = {
	release: {
		'auth/cross-app-access-complete-flow': `${NOT_SUPPORTED}ID-JAG token exchange at an identity provider and ` +
			'the JWT bearer grant (SEP-990, enterprise-managed authorization)',
	},
	alpha: {
		'auth/enterprise-managed-authorization': `${NOT_SUPPORTED}ID-JAG token exchange and the JWT bearer grant ` +
			'(SEP-990, an extension)',
		'auth/dpop': `${NOT_SUPPORTED}DPoP-bound tokens (RFC 9449, an extension)`,
		'auth/dpop-nonce': `${NOT_SUPPORTED}DPoP-bound tokens (RFC 9449, an extension)`,
		'auth/wif-jwt-bearer': `${NOT_SUPPORTED}workload identity federation's JWT bearer grant (an extension)`,
		...Object.fromEntries(['no-prefetch', 'verify-digest', 'verify-size', 'verify-frontmatter'].map((c) =>
			[`sep-2640-client-${c}`, `${NOT_SUPPORTED}the skills extension (SEP-2640) as a client: no checks run ` +
				'against a client that reads no skills'])),
	},
};

// The reference server as sluice's stdio upstream ("prefix": false: the
// suite expects its own names).
export function referenceStdio(v) {
	return {
		command: NODE22,
		args: ['--no-warnings', VERSIONS[v].server],
		env: { MCP_STDIO: '1' },
		prefix: false,
	};
}

const started = new Set();

// Starts the reference server over HTTP on a port picked here; resolves
// with { url, close } once it says it listens (at most 30 s).
export async function startReference(v) {
	const port = await freePort();
	const proc = spawn(NODE22, ['--no-warnings', VERSIONS[v].server], {
		env: { ...process.env, PORT: String(port) },
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	let out = '';
	const exited = new Promise((r) => proc.once('exit', r));
	const ref = {
		url: `http://localhost:${port}/mcp`,
		output: () => out,
		close: () => {
			started.delete(ref);
			if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
			return exited;
		},
	};
	started.add(ref);
	return new Promise((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`the reference server did not listen: ${out}`)), 30000);
		const onData = (b) => {
			out += b;
			if (/running on http/.test(out)) {
				clearTimeout(timer);
				resolve(ref);
			}
		};
		proc.stdout.on('data', onData);
		proc.stderr.on('data', (b) => (out += b));
		proc.once('exit', (code) => {
			clearTimeout(timer);
			reject(new Error(`the reference server exited ${code}: ${out}`));
		});
	});
}

export async function closeReferences() {
	await Promise.allSettled([...started].map((r) => r.close()));
}

function suite(v, args, ms, env = {}) {
	return new Promise((resolve) => {
		execFile(NODE22, [VERSIONS[v].suite, ...args], { cwd: REPO, timeout: ms, maxBuffer: 64 << 20, env: { ...process.env, ...env } },
			(err, stdout, stderr) => resolve({ code: err ? err.code : 0, killed: !!err?.killed, text: stdout + stderr, stdout }));
	});
}

// The server scenarios the version lists.
export async function serverScenarios(v) {
	const r = await suite(v, ['list', '--server'], 30000);
	return [...r.stdout.matchAll(/^ {2}- (\S+)/gm)].map((m) => m[1]);
}

// The client scenarios the version lists.
export async function clientScenarios(v) {
	const r = await suite(v, ['list', '--client'], 30000);
	return [...r.stdout.matchAll(/^ {2}- (\S+)/gm)].map((m) => m[1]);
}

// One scenario's checks, as the suite wrote them: { passed, failed,
// warnings: [id], failures: ["id: message"] }.
function tally(checks) {
	const by = (s) => checks.filter((c) => c.status === s);
	return {
		passed: by('SUCCESS').length,
		failed: by('FAILURE').length,
		warnings: by('WARNING').map((c) => c.id),
		failures: by('FAILURE').map((c) => `${c.id}: ${(c.errorMessage ?? '').slice(0, 300)}`),
	};
}

// `conformance server --suite all` against url: Map scenario -> tally (a
// scenario that wrote no checks is absent), with the seconds it took.
export async function runServerSuite(v, url, ms = 150000) {
	const out = mkdtempSync(path.join(os.tmpdir(), 'sluice-conformance-'));
	try {
		const t0 = Date.now();
		const r = await suite(v, ['server', '--url', url, '--suite', 'all', '-o', out], ms);
		const secs = (Date.now() - t0) / 1000;
		const results = new Map();
		for (const d of readdirSync(out)) {
			const m = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(d);
			const f = path.join(out, d, 'checks.json');
			if (m && existsSync(f)) results.set(m[1], tally(JSON.parse(readFileSync(f, 'utf8'))));
		}
		return { results, secs, killed: r.killed, tail: r.text.slice(-2000) };
	} finally {
		rmSync(out, { recursive: true, force: true });
	}
}

// A gate for the drivers of one suite run: a Unix socket where each
// driver waits for one of n places, held until the driver's process ends
// (its socket closes with it, however it ends).
function gate(n) {
	let busy = 0;
	const waiting = [];
	const grant = () => {
		while (busy < n && waiting.length) {
			const s = waiting.shift();
			if (s.destroyed) continue;
			busy++;
			s.granted = true;
			s.write('go\n');
		}
	};
	return net.createServer((s) => {
		s.on('error', () => {});
		s.on('close', () => {
			if (s.granted) busy--;
			grant();
		});
		waiting.push(s);
		grant();
	});
}

// The client scenarios of version v with sluice as the client
// (conformance-client.mjs), in one `conformance client --suite all` run:
// the suite's process starts once, not once per scenario (its start is
// half a scenario's CPU, about 1.2 s of 2.4). That run starts every
// scenario at once; each driver waits at the gate for one of `places`
// before it starts sluice, so no more sluices run together than the old
// one-scenario-at-a-time runs had, and a scenario's own bound (60 s, in the
// driver) starts once it has its place. Resolves with { results: Map
// scenario -> tally, with the scenario's checks as JSON and the driver's
// stderr (sluice's included) }; a scenario that wrote no checks is absent.
export async function runClientSuite(v, places = 4, ms = 480000) {
	const out = mkdtempSync(path.join(os.tmpdir(), 'sluice-conformance-'));
	const sock = path.join(out, 'gate.sock');
	const driver = `${process.execPath} ${path.join(REPO, 'tests', 'e2e', 'conformance-client.mjs')}`;
	const g = gate(places);
	try {
		await new Promise((resolve, reject) => g.once('error', reject).listen(sock, resolve));
		const r = await suite(v, ['client', '--command', driver, '--suite', 'all', '--timeout', String(ms), '-o', out],
			ms + 30000, { SLUICE, CONFORMANCE_GATE: sock });
		const results = new Map();
		for (const f of readdirSync(out, { recursive: true }).filter((p) => p.endsWith('checks.json'))) {
			const m = /^(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(path.dirname(f));
			if (!m) continue;
			const checks = readFileSync(path.join(out, f), 'utf8');
			const err = path.join(out, path.dirname(f), 'stderr.txt');
			const stderr = existsSync(err) ? readFileSync(err, 'utf8') : '';
			results.set(m[1], { ...tally(JSON.parse(checks)), checks, stderr, tail: stderr.slice(-3000) });
		}
		return { results, killed: r.killed, tail: r.text.slice(-3000) };
	} finally {
		g.close();
		rmSync(out, { recursive: true, force: true });
	}
}

// The server scenarios of version v, side by side: directly against the
// reference server, and through sluice (stdio upstream, URL upstream with
// "protocol" auto, and the same pinned to 2026-07-28), the four at once.
// Resolves with { scenarios, direct, stdio, url, pinned, secs }.
export async function serverParity(v) {
	const t0 = Date.now();
	const [scenarios, direct, upstream] = await Promise.all([serverScenarios(v), startReference(v), startReference(v)]);
	const audit = { audit: { file: '/dev/null' } };
	const pinned = { c: { url: upstream.url, prefix: false, protocol: '2026-07-28' } };
	const gateways = await Promise.all([
		startHttp({ servers: { c: referenceStdio(v) }, sluice: audit }),
		startHttp({ servers: { c: { url: upstream.url, prefix: false } }, sluice: audit }),
		...(VERSIONS[v].dualEra ? [startHttp({ servers: pinned, sluice: audit })] : []),
	]);
	try {
		const [d, s, u, pn] = await Promise.all([runServerSuite(v, direct.url),
			...gateways.map((gw) => runServerSuite(v, gw.url))]);
		return { scenarios, direct: d, stdio: s, url: u, pinned: pn, gateways, secs: (Date.now() - t0) / 1000 };
	} finally {
		await Promise.allSettled([...gateways.map((gw) => gw.close()), direct.close(), upstream.close()]);
	}
}

// A tally as a table cell: "3/3", "1/2 ✗", "2/2 (1 warning)", "not run".
export function cell(t) {
	if (!t) return 'not run';
	const total = t.passed + t.failed;
	return `${t.passed}/${total}${t.failed ? ' ✗' : ''}${t.warnings.length ? ` (${t.warnings.length} warning${t.warnings.length > 1 ? 's' : ''})` : ''}`;
}

export const passes = (t) => !!t && t.failed === 0 && t.passed > 0;

// What breaks parity: a scenario passing directly and not through sluice
// (where known lists it not), and a KNOWN entry that passes through sluice
// now (the list must not go stale), or that no longer passes directly.
// known: { 'stdio:scenario': reason, 'url:scenario': reason }; fewer than
// minDirect scenarios passing directly means the comparison says nothing.
export function parityProblems(p, known, minDirect = 0) {
	const problems = [];
	const direct = p.scenarios.filter((s) => passes(p.direct.results.get(s))).length;
	for (const via of ['direct', 'stdio', 'url', 'pinned'])
		if (p[via]?.killed) problems.push(`the suite's ${via} run did not finish in time\n${p[via].tail}`);
	if (direct < minDirect)
		problems.push(`only ${direct} scenarios pass directly, not ${minDirect}: the reference server's run broke\n${p.direct.tail}`);
	for (const s of p.scenarios) {
		const d = p.direct.results.get(s);
		for (const via of ['stdio', 'url']) {
			const t = p[via].results.get(s);
			const k = known[`${via}:${s}`];
			if (passes(d) && !passes(t) && !k)
				problems.push(`${via}:${s} passes directly (${cell(d)}), not through sluice (${cell(t)}): ${t ? t.failures.join('; ') : 'no checks'}`);
			if (k && passes(t)) problems.push(`${via}:${s} passes through sluice now: remove it from KNOWN`);
			// Known for the era auto picks: it must pass with the pin.
			if (k === URL_SESSION_FACE && passes(d) && !passes(p.pinned?.results.get(s)))
				problems.push(`${via}:${s} fails through sluice with "protocol" auto and pinned to 2026-07-28 ` +
					`(${cell(p.pinned?.results.get(s))})`);
			if (k && !passes(d)) problems.push(`${via}:${s} no longer passes directly: remove it from KNOWN`);
		}
	}
	for (const k of Object.keys(known))
		if (!p.scenarios.includes(k.replace(/^\w+:/, ''))) problems.push(`${k}: no such scenario: remove it from KNOWN`);
	return problems;
}

// The markdown table of CONFORMANCE.md for one version's server scenarios.
export function serverTable(p, known) {
	const pin = !!p.pinned;
	const rows = [`| scenario | direct | through sluice, stdio | through sluice, URL |${pin ? ' URL, pinned 2026-07-28 |' : ''} note |`,
		`|---|---|---|---|${pin ? '---|' : ''}---|`];
	for (const s of p.scenarios) {
		const d = p.direct.results.get(s);
		const notes = [];
		for (const via of ['stdio', 'url']) {
			const t = p[via].results.get(s);
			if (known[`${via}:${s}`]) notes.push(`${via}: ${known[`${via}:${s}`]}`);
			else if (!passes(d) && passes(t)) notes.push(`${via}: passes through sluice, not directly`);
		}
		rows.push(`| ${s} | ${cell(d)} | ${cell(p.stdio.results.get(s))} | ${cell(p.url.results.get(s))} | ` +
			`${pin ? `${cell(p.pinned.results.get(s))} | ` : ''}${notes.join('; ')} |`);
	}
	return rows.join('\n');
}
