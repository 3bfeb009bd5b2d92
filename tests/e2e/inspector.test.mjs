// The MCP Inspector's scripted CLI (@modelcontextprotocol/inspector, pinned
// in package.json) drives sluice with the command lines README "Use it"
// writes, read from the README itself: the inspector takes the options it
// knows for itself (--config is its own), so sluice's config goes as
// -c FILE, or the inspector's options come first and everything of
// sluice's after `--` (Inspector 2.x reads nothing after `--` as its own).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { REPO, SLUICE, catalog, writeConfig, closeAll } from './helpers.mjs';

after(closeAll);

const INSPECTOR = path.join(REPO, 'node_modules', '.bin', 'mcp-inspector');
const PREFIX = 'npx @modelcontextprotocol/inspector ';

// The README's inspector command lines, continuation lines joined, as argv.
function readmeLines() {
	const text = fs.readFileSync(path.join(REPO, 'README.md'), 'utf8').replace(/\\\n\s*/g, '');
	return text.split('\n').filter((l) => l.startsWith(PREFIX)).map((l) => l.slice(PREFIX.length).trim().split(/\s+/));
}

function inspector(args, ms = 60000) {
	return new Promise((resolve) => {
		execFile(INSPECTOR, args, { timeout: ms, maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
			resolve({ code: error ? (error.code ?? error.signal) : 0, stdout, stderr }));
	});
}

const lines = readmeLines();

test('the README gives two inspector command lines, the inspector options before any --', () => {
	assert.equal(lines.length, 2, lines.map((l) => l.join(' ')).join('\n'));
	for (const argv of lines) {
		const sep = argv.indexOf('--');
		if (sep < 0)
			continue;
		// Inspector 2.x: what follows -- is the server's command line only.
		const after = argv.slice(sep + 1).filter((a) => /^--(method|tool-name|tool-arg|cli|transport)$/.test(a));
		assert.deepEqual(after, [], `inspector options after --: ${argv.join(' ')}`);
	}
});

for (const [i, argv] of lines.entries()) {
	test(`the README's inspector line ${i + 1} runs through sluice as written`, async () => {
		const cfg = writeConfig({ github: catalog('github') });
		const args = argv.map((a) => (a === 'sluice' ? SLUICE : a === 'config.json' ? cfg : a));
		const method = args[args.indexOf('--method') + 1];
		const r = await inspector(args);
		assert.equal(r.code, 0, r.stdout + r.stderr);
		const out = JSON.parse(r.stdout);
		if (method === 'tools/list') {
			const names = out.tools.map((t) => t.name);
			assert.ok(names.includes('github__list_issues'), names.join(' '));
		} else {
			assert.equal(method, 'tools/call');
			assert.notEqual(out.isError, true, r.stdout);
			assert.equal(out.content[0].type, 'text');
			assert.ok(out.content[0].text.length > 0);
		}
	});
}
