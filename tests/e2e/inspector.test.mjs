// The MCP Inspector's scripted CLI (@modelcontextprotocol/inspector, pinned
// in package.json) drives sluice as README "Use it" says: the inspector takes
// the options it knows for itself (--config is its own), so sluice's config
// goes as -c FILE, or everything of sluice's after `--`.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';

import { REPO, SLUICE, catalog, writeConfig, closeAll } from './helpers.mjs';

after(closeAll);

const INSPECTOR = path.join(REPO, 'node_modules', '.bin', 'mcp-inspector');

function inspector(args, ms = 60000) {
	return new Promise((resolve) => {
		execFile(INSPECTOR, ['--cli', ...args], { timeout: ms, maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
			resolve({ code: error ? (error.code ?? error.signal) : 0, stdout, stderr }));
	});
}

const config = () => writeConfig({ github: catalog('github') });

for (const [form, argv] of [
	['-c FILE', (cfg) => [SLUICE, 'serve', '-c', cfg]],
	['-- before the command', (cfg) => ['--', SLUICE, 'serve', '--config', cfg]],
]) {
	test(`the inspector CLI lists and calls tools through sluice (${form})`, async () => {
		const cfg = config();
		const list = await inspector([...argv(cfg), '--method', 'tools/list']);
		assert.equal(list.code, 0, list.stdout + list.stderr);
		const names = JSON.parse(list.stdout).tools.map((t) => t.name);
		assert.ok(names.includes('github__list_issues'), names.join(' '));
		const call = await inspector([...argv(cfg), '--method', 'tools/call', '--tool-name', 'github__list_issues',
			'--tool-arg', 'owner=acme', '--tool-arg', 'repo=web']);
		assert.equal(call.code, 0, call.stdout + call.stderr);
		const r = JSON.parse(call.stdout);
		assert.notEqual(r.isError, true, call.stdout);
		assert.equal(r.content[0].type, 'text');
		assert.ok(r.content[0].text.length > 0);
	});
}
