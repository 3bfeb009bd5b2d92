// A short run of the soak (tests/soak/soak.mjs; `make soak` runs the full
// 60 s): 5 s of 10 HTTP sessions mixing invoke_tool and execute_code,
// including failing and hostile programs, with two config reloads under
// load, must give no unexpected answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';

import { REPO } from './helpers.mjs';

test('5 s soak over HTTP: every answer is the one its scenario expects', async () => {
	const { code, stdout, stderr } = await new Promise((resolve) =>
		execFile(
			process.execPath,
			[path.join(REPO, 'tests', 'soak', 'soak.mjs')],
			{ env: { ...process.env, SOAK_SECONDS: '5', SOAK_SESSIONS: '10' }, timeout: 120000, maxBuffer: 1 << 20 },
			(error, out, err) => resolve({ code: error ? (error.code ?? error.signal) : 0, stdout: out, stderr: err }),
		),
	);
	assert.equal(code, 0, `${stdout}\n${stderr}`);
	assert.match(stdout, /- unexpected answers: 0\n/);
	const served = Number(/- requests served: (\d+)/.exec(stdout)?.[1]);
	assert.ok(served >= 10, `${served} requests served:\n${stdout}`);
	assert.match(stdout, /config reloads .*: 2 of 2 applied/);
	assert.match(stdout, /\*\*PASS\*\*/);
});
