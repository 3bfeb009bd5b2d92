// sluice(1) and the bash completion are made from `sluice --help`
// (scripts/helpdoc.sh): every command and option of the help is in both,
// the page renders without a warning, and the completion completes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { runSluice, REPO, SLUICE } from './helpers.mjs';

const run = (cmd, args, input) =>
	new Promise((resolve, reject) => {
		const p = execFile(cmd, args, { timeout: 20000, maxBuffer: 4 << 20 }, (err, stdout, stderr) =>
			err ? reject(new Error(`${cmd}: ${err.message}\n${stderr}`)) : resolve({ stdout, stderr }));
		if (input !== undefined) p.stdin.end(input);
	});
const helpdoc = async (mode) => (await run('bash', [path.join(REPO, 'scripts', 'helpdoc.sh'), mode, SLUICE])).stdout;

// The commands and options as the help lists them.
async function help() {
	const text = (await runSluice(['--help'])).stdout;
	const section = (name) => text.split(`\n${name}:\n`)[1].split('\n\n')[0];
	const commands = [...new Set([...section('commands').matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((m) => m[1]))];
	const options = [...new Set([...section('options').matchAll(/(?:^|[ ,])(--?[a-zA-Z][a-zA-Z-]*)/gm)].map((m) => m[1]))];
	return { commands, options };
}

test('sluice(1) has every command and option of --help, and groff renders it without a warning', async () => {
	const { commands, options } = await help();
	assert.ok(commands.length >= 10 && options.length >= 6, JSON.stringify({ commands, options }));
	const page = await helpdoc('man');
	assert.match(page, /^\.TH SLUICE 1 "\d{4}-\d\d-\d\d" "sluice \d+\.\d+\.\d+"/m);
	const entries = page.split('\n').filter((l) => l.startsWith('.B ')).map((l) => l.slice(3).split(' ')[0]);
	for (const c of commands) assert.ok(entries.includes(c.replace(/-/g, '\\-')), `${c} in ${entries}`);
	for (const o of options) assert.ok(page.includes(o.replace(/-/g, '\\-')), o);
	const { stdout, stderr } = await run('groff', ['-man', '-Tutf8', '-ww', '-P', '-cbou'], page);
	assert.equal(stderr, '');
	assert.match(stdout, /COMMANDS/);
	assert.match(stdout, /config-reference/);
});

test('the bash completion completes commands, subcommands, option values and options', async () => {
	const { commands } = await help();
	const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-helpdoc-'));
	try {
		const file = path.join(dir, 'sluice.bash');
		writeFileSync(file, await helpdoc('bash'));
		const complete = async (...words) =>
			(await run('bash', ['-c', `. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _sluice; printf '%s\\n' "\${COMPREPLY[@]}"`, 'x', file, 'sluice', ...words]))
				.stdout.split('\n').filter(Boolean).sort();
		assert.deepEqual(await complete(''), [...commands].sort());
		assert.deepEqual(await complete('pins', ''), ['approve', 'diff', 'list', 'reset']);
		assert.deepEqual(await complete('skills', ''), ['approve', 'list', 'publish', 'rm', 'show']);
		assert.deepEqual(await complete('--exposure', ''), ['code', 'hybrid', 'passthrough', 'router']);
		assert.deepEqual(await complete('--log-level', 'd'), ['debug']);
		// A value after --config is not the command: "sk" is.
		assert.deepEqual(await complete('--config', 'c.json', 'sk'), ['skills']);
		assert.ok((await complete('serve', '--ht')).includes('--http'));
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
});
