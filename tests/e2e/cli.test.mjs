// The command line: --version, check, and config errors.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { runSluice, writeConfig, catalog, everything, closeAll } from './helpers.mjs';

after(closeAll);

test('sluice --version prints the version and the commit it was built from', async () => {
	const git = (args) => spawnSync('git', args, { cwd: fileURLToPath(new URL('../..', import.meta.url)), encoding: 'utf8' });
	for (const flag of ['--version', '-V']) {
		const r = await runSluice([flag]);
		assert.equal(r.code, 0);
		const m = /^sluice (\d+\.\d+\.\d+) \(commit ([0-9a-z.+_-]+)\)\n$/.exec(r.stdout);
		assert.ok(m, r.stdout);
		// A commit of this repository (the build may predate its newest commit).
		if (git(['rev-parse', '--git-dir']).status === 0)
			assert.equal(git(['cat-file', '-e', `${m[2].replace(/-dirty$/, '')}^{commit}`]).status, 0, m[2]);
	}
});

test('sluice --help prints the usage and exits 0', async () => {
	const r = await runSluice(['--help']);
	assert.equal(r.code, 0);
	assert.match(r.stdout, /serve --config/);
	assert.match(r.stdout, /check --config/);
});

test('sluice check lists every server and exits 0 when all come up', async () => {
	const path = writeConfig({ github: catalog('github'), everything: everything() }, { exposure: 'passthrough' });
	const r = await runSluice(['check', '--config', path]);
	assert.equal(r.code, 0, r.stdout + r.stderr);
	assert.match(r.stdout, /^github\s+ready\s+2025-11-25\s+\d+/m);
	assert.match(r.stdout, /^everything\s+ready\s+2025-11-25\s+\d+/m);
	assert.match(r.stdout, /github__list_issues/);
	assert.match(r.stdout, /everything__get-sum/);
	// Logs stay on stderr.
	assert.doesNotMatch(r.stdout, /sluice info/);
});

test('sluice check counts resources and templates apart; a server without a templates method is no warning', async () => {
	// The peer fixture (SDK 1.x) declares resources and has one, but no
	// resources/templates/list: it answers -32601, which means "none".
	const peer = { command: process.execPath, args: [fileURLToPath(new URL('../servers/peer/server.mjs', import.meta.url))] };
	const path = writeConfig({ everything: everything(), peer });
	const r = await runSluice(['check', '--config', path]);
	assert.equal(r.code, 0, r.stdout + r.stderr);
	assert.match(r.stdout, /^SERVER\s+STATUS\s+PROTOCOL\s+TOOLS\s+RESOURCES\s+TEMPLATES\s+PROMPTS$/m);
	// server-everything 2026.8.31: 7 resources and 2 templates.
	assert.match(r.stdout, /^everything\s+ready\s+\S+\s+\d+\s+7\s+2\s+\d+$/m);
	assert.match(r.stdout, /^peer\s+ready\s+\S+\s+5\s+1\s+0\s+1$/m);
	assert.doesNotMatch(r.stderr, /sluice warn/, r.stderr);
});

test('sluice check in router mode names the router tools', async () => {
	const path = writeConfig({ jira: catalog('jira') }, { exposure: 'router' });
	const r = await runSluice(['check', '--config', path]);
	assert.equal(r.code, 0, r.stdout + r.stderr);
	assert.match(r.stdout, /router mode/);
	assert.match(r.stdout, /behind search_tools, describe_tools, list_servers, list_tools and invoke_tool/);
});

test('sluice check exits non-zero when one server fails, and says why', async () => {
	const path = writeConfig({
		github: catalog('github'),
		broken: { command: 'sluice-e2e-no-such-command' },
	});
	const r = await runSluice(['check', '--config', path]);
	assert.notEqual(r.code, 0, r.stdout);
	assert.match(r.stdout, /^github\s+ready/m);
	assert.match(r.stdout, /^broken\s+/m);
	assert.doesNotMatch(r.stdout, /^broken\s+ready/m);
	assert.match(r.stdout, /command not found/);
});

test('sluice check: a server that exits at once fails the check, with a report (10 runs)', async () => {
	// The server exits before reading its initialize: sluice must not die of
	// SIGPIPE writing to it, whatever the timing.
	const path = writeConfig({ dead: { command: 'false' }, github: catalog('github') }, { startupTimeoutMs: 3000 });
	for (let i = 0; i < 10; i++) {
		const r = await runSluice(['check', '--config', path]);
		assert.equal(r.code, 1, `run ${i}: exit ${r.code}; stdout: ${JSON.stringify(r.stdout)}; stderr: ${r.stderr.slice(-300)}`);
		assert.match(r.stdout, /^dead\s+/m);
		assert.match(r.stdout, /^github\s+ready/m);
	}
});

test('invalid configs exit 2 with a message naming the file', async () => {
	const path = writeConfig({ a: { command: 1 } });
	const r = await runSluice(['check', '--config', path]);
	assert.equal(r.code, 2);
	assert.match(r.stderr, /mcpServers\.a/);
	assert.match(r.stderr, /command/);
	writeFileSync(path, '{"mcpServers":');
	const j = await runSluice(['serve', '--config', path]);
	assert.equal(j.code, 2);
	assert.ok(j.stderr.includes(path), j.stderr);
	const bad = writeConfig({}, { exposure: 'everything-at-once' });
	const e = await runSluice(['check', '--config', bad]);
	assert.equal(e.code, 2);
	assert.match(e.stderr, /exposure/);
});

test('usage errors exit 2', async () => {
	assert.equal((await runSluice([])).code, 2);
	assert.equal((await runSluice(['frobnicate'])).code, 2);
	assert.equal((await runSluice(['serve', '--config', '/nonexistent/sluice-e2e.json'])).code, 2);
});
