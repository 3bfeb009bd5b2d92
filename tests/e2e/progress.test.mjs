// Progress where a person waits: `sluice check` says on stderr how the
// servers' start-up goes. Plain lines when stderr is not a terminal (logs,
// CI); one line rewritten in place on a terminal (src/cli/check.c).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';

import { runSluice, writeConfig, catalog, closeAll, CATALOG, SLUICE } from './helpers.mjs';

after(closeAll);

// A server that takes a second to come up, so that there is something to wait for.
const slow = () => ({ command: '/bin/sh', args: ['-c', `sleep 1; exec "${CATALOG}" --backend jira`] });

test('sluice check, stderr not a terminal: a line per server as it settles, the disabled one not counted', async () => {
	const path = writeConfig({
		github: catalog('github'),
		slow: slow(),
		missing: { command: '/nonexistent/sluice-e2e-server' },
		off: { ...catalog('jira'), disabled: true },
	});
	const r = await runSluice(['check', '--config', path]);
	assert.equal(r.code, 1, r.stdout + r.stderr); // missing is not ready
	assert.doesNotMatch(r.stderr, /[\r\x1b]/, 'no terminal control when stderr is a pipe');
	const lines = r.stderr.split('\n').filter((l) => l.startsWith('check: '));
	assert.equal(lines[0], 'check: starting 3 servers');
	assert.equal(lines.length, 4, r.stderr);
	const seen = lines.slice(1).map((l, i) => {
		const m = /^check: (\d+)\/3 (\S+): (.+)$/.exec(l);
		assert.ok(m, l);
		assert.equal(Number(m[1]), i + 1);
		return [m[2], m[3]];
	});
	assert.deepEqual(Object.fromEntries(seen), { github: 'ready', slow: 'ready', missing: 'restarting' });
	// The slow one settles last, a second after the others.
	assert.equal(seen[2][0], 'slow');
	// The report itself stays on stdout, as before.
	assert.match(r.stdout, /^slow\s+ready\s/m);
	assert.match(r.stdout, /^off\s+disabled\s/m);
});

test('sluice check on a terminal: one status line, rewritten in place, erased before the report', async () => {
	const path = writeConfig({ github: catalog('github'), slow: slow() });
	// script(1) (util-linux) gives the command a terminal; stdout goes to /dev/null.
	const out = await new Promise((resolve, reject) => {
		execFile('script', ['-qec', `"${SLUICE}" check --config "${path}" >/dev/null`, '/dev/null'],
			{ timeout: 20000 }, (err, stdout) => (err ? reject(err) : resolve(stdout)));
	});
	assert.match(out, /\r\x1b\[Kstarting servers: 1\/2 done, waiting for slow\.\.\./);
	assert.doesNotMatch(out, /^check: /m, 'no plain progress lines on a terminal');
	// Ends erased: after the last erase-line, no status line is drawn again
	// (while one is up, each log line is followed by it).
	const tail = out.slice(out.lastIndexOf('\r\x1b[K') + 4);
	assert.doesNotMatch(tail, /starting servers/, JSON.stringify(out.slice(-300)));
	// Log lines scroll above it, each on its own line.
	assert.match(out, /\r\x1b\[Ksluice info: server 'slow' ready[^\r\n]*\r?\n/);
});
