// A Redis for the e2e tests of shared state (docs/internals/REPLICAS.md):
// Debian's redis-server on 127.0.0.1, on a port it is given (or picks), with
// no persistence and a scratch directory, stopped by its PID.
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { freePort } from './helpers.mjs';

export const REDIS_SERVER = process.env.REDIS_SERVER || 'redis-server';

// Starts redis-server (args: more of its options); resolves { port, pid, url, log(), kill(signal), stop() }
// once it accepts connections (at most ms).
export async function startRedis({ port, args = [], ms = 10000 } = {}) {
	port ??= await freePort();
	const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-redis-'));
	const proc = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '',
		'--appendonly', 'no', '--dir', dir, '--daemonize', 'no', '--logfile', '', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
	let out = '';
	const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
	const r = {
		port,
		pid: proc.pid,
		url: `redis://127.0.0.1:${port}`,
		log: () => out,
		exited,
		// SIGKILL: Redis gone at once, as in a crash.
		kill: (signal = 'SIGKILL') => {
			if (proc.exitCode === null && proc.signalCode === null) process.kill(proc.pid, signal);
			return exited;
		},
		stop: async () => {
			await r.kill('SIGTERM');
			rmSync(dir, { recursive: true, force: true });
		},
	};
	await new Promise((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${out}`)), ms);
		const on = (d) => {
			out += d;
			if (/Ready to accept connections/.test(out)) {
				clearTimeout(timer);
				resolve();
			}
		};
		proc.stdout.on('data', on);
		proc.stderr.on('data', on);
		proc.once('exit', (code) => {
			clearTimeout(timer);
			reject(new Error(`redis-server exited ${code}: ${out}`));
		});
	});
	return r;
}

// Runs one command with redis-cli against r (auth: its password); resolves its stdout.
export function redisCli(r, args, { auth, ms = 5000 } = {}) {
	return new Promise((resolve, reject) => {
		execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(r.port), ...(auth ? ['--no-auth-warning', '-a', auth] : []), ...args], { timeout: ms }, (err, stdout) =>
			err ? reject(err) : resolve(stdout));
	});
}
