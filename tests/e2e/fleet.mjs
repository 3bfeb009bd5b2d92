// The fleet of tests/e2e/fleet.test.mjs, made from the files in deploy/ so
// they cannot rot: HAProxy runs deploy/haproxy.cfg with its placeholders
// filled in, and each replica runs the ExecStart line (and Environment) of
// deploy/sluice@.service with the unit's specifiers and paths replaced by
// the test's. Everything listens on loopback ports picked here, lives in a
// temp dir, and is stopped by its PID.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { REPO, SLUICE, freePort, eventually, closeAll, httpRequest } from './helpers.mjs';

export const HAPROXY = process.env.HAPROXY || 'haproxy';
const DEPLOY = path.join(REPO, 'deploy');

// deploy/haproxy.cfg with { listen, replicas: [addr x3], statsSocket } and
// the health check every checkMs (the file says 2s).
export function renderHaproxy({ listen, replicas, statsSocket, checkMs = 200 }) {
	let cfg = readFileSync(path.join(DEPLOY, 'haproxy.cfg'), 'utf8');
	const subst = { '@LISTEN@': listen, '@STATS_SOCKET@': statsSocket };
	replicas.forEach((r, i) => (subst[`@REPLICA${i + 1}@`] = r));
	for (const [k, v] of Object.entries(subst)) {
		if (!cfg.includes(k)) throw new Error(`deploy/haproxy.cfg has no ${k} placeholder`);
		cfg = cfg.split(k).join(v);
	}
	const body = cfg.split('\n').filter((l) => !l.trimStart().startsWith('#')).join('\n');
	if (/@[A-Z0-9_]+@/.test(body)) throw new Error(`deploy/haproxy.cfg: a placeholder left: ${/@[A-Z0-9_]+@/.exec(body)[0]}`);
	const inter = /(default-server check inter )2s/;
	if (!inter.test(cfg)) throw new Error('deploy/haproxy.cfg: no "default-server check inter 2s" line to shorten');
	return cfg.replace(inter, `$1${checkMs}ms`);
}

// Starts haproxy -f cfg -db in dir; resolves { pid, log(), stop() } once its
// frontend accepts connections.
export async function startHaproxy(cfgText, dir, port, ms = 10000) {
	const file = path.join(dir, 'haproxy.cfg');
	writeFileSync(file, cfgText);
	const proc = spawn(HAPROXY, ['-f', file, '-db'], { stdio: ['ignore', 'pipe', 'pipe'] });
	let out = '';
	proc.stdout.on('data', (d) => (out += d));
	proc.stderr.on('data', (d) => (out += d));
	const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
	const h = {
		pid: proc.pid,
		log: () => out,
		stop: async () => {
			if (proc.exitCode === null && proc.signalCode === null) process.kill(proc.pid, 'SIGTERM');
			await exited;
		},
	};
	let dead = false;
	exited.then(() => (dead = true));
	await eventually(() => {
		if (dead) throw new Error(`haproxy exited: ${out}`);
		return new Promise((resolve) => {
			const s = net.connect(port, '127.0.0.1', () => (s.destroy(), resolve(true)));
			s.on('error', () => resolve(false));
		});
	}, ms, 50, `haproxy listening: ${out}`);
	return h;
}

// The unit's [Service] lines: { execStart: [argv], env: {} }, with %i the
// instance and the unit's paths mapped to the test's.
export function unitCommand(instance, paths) {
	const text = readFileSync(path.join(DEPLOY, 'sluice@.service'), 'utf8');
	const map = (s) => {
		s = s.replace(/%i/g, String(instance)).replace(/%%/g, '%');
		for (const [from, to] of Object.entries(paths)) s = s.split(from).join(to);
		if (/%[a-zA-Z]/.test(s)) throw new Error(`deploy/sluice@.service: an unhandled specifier in ${s}`);
		return s;
	};
	const lines = text.split('\n').filter((l) => !l.startsWith('#'));
	const exec = lines.filter((l) => l.startsWith('ExecStart='));
	if (exec.length !== 1) throw new Error('deploy/sluice@.service: one ExecStart= line expected');
	const execStart = map(exec[0].slice('ExecStart='.length)).trim().split(/\s+/);
	const env = {};
	// EnvironmentFile=-PATH: KEY=VALUE lines, read if the file exists (the "-").
	for (const l of lines.filter((x) => x.startsWith('EnvironmentFile='))) {
		const optional = l.startsWith('EnvironmentFile=-');
		const file = map(l.slice(l.indexOf('=') + (optional ? 2 : 1))).trim();
		if (!existsSync(file)) {
			if (!optional) throw new Error(`deploy/sluice@.service: ${file} missing`);
			continue;
		}
		for (const kv of readFileSync(file, 'utf8').split('\n').filter((x) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(x))) {
			const i = kv.indexOf('=');
			env[kv.slice(0, i)] = kv.slice(i + 1);
		}
	}
	for (const l of lines.filter((x) => x.startsWith('Environment=')))
		for (const kv of map(l.slice('Environment='.length)).trim().split(/\s+/)) {
			const i = kv.indexOf('=');
			env[kv.slice(0, i)] = kv.slice(i + 1);
		}
	return { execStart, env };
}

// One replica as systemd would start sluice@PORT: resolves
// { port, pid, url, stderr(), kill(sig), exited } once it listens.
// envFile: the unit's EnvironmentFile (absent: none, as the unit allows).
export async function startReplica(port, { configPath, stateRoot, envFile }) {
	const { execStart, env } = unitCommand(port, {
		'/usr/local/bin/sluice': SLUICE,
		'/etc/sluice/sluice.json': configPath,
		'/etc/sluice/sluice.env': envFile ?? path.join(stateRoot, 'no-such.env'),
		'/var/lib/sluice': stateRoot,
	});
	if (execStart[0] !== SLUICE) throw new Error(`ExecStart runs ${execStart[0]}, not sluice`);
	for (const v of Object.values(env)) if (v.startsWith(stateRoot)) mkdirSync(v, { recursive: true });
	const proc = spawn(execStart[0], execStart.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
	let err = '';
	const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
	const r = {
		port,
		pid: proc.pid,
		url: `http://127.0.0.1:${port}/mcp`,
		argv: execStart,
		env,
		exited,
		stderr: () => err,
		kill: (sig = 'SIGTERM') => {
			if (proc.exitCode === null && proc.signalCode === null) process.kill(proc.pid, sig);
			return exited;
		},
	};
	await new Promise((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`replica ${port} did not listen: ${err}`)), 15000);
		proc.stderr.on('data', (d) => {
			err += d;
			if (/listening on https?:\/\//.test(err)) {
				clearTimeout(timer);
				resolve();
			}
		});
		proc.once('exit', (code) => {
			clearTimeout(timer);
			reject(new Error(`replica ${port} exited ${code}: ${err}`));
		});
	});
	return r;
}

// Three ports for replicas, one for HAProxy, a temp dir.
export async function fleetPorts(n = 3) {
	const ports = [];
	while (ports.length < n + 1) {
		const p = await freePort();
		if (!ports.includes(p)) ports.push(p);
	}
	return { replicas: ports.slice(0, n), front: ports[n], dir: mkdtempSync(path.join(os.tmpdir(), 'sluice-fleet-')) };
}

export const removeDir = (dir) => rmSync(dir, { recursive: true, force: true });

// One command on HAProxy's runtime API (the stats socket of deploy/haproxy.cfg).
export function haproxyCmd(dir, cmd) {
	return new Promise((resolve, reject) => {
		let out = '';
		const sock = net.connect(path.join(dir, 'haproxy.sock'), () => sock.end(`${cmd}\n`));
		sock.on('data', (d) => (out += d));
		sock.on('end', () => resolve(out));
		sock.on('error', reject);
	});
}

// A replica's GET /status.
export const replicaStatus = async (r) =>
	(await httpRequest({ host: '127.0.0.1', port: r.port, path: '/status', method: 'GET' })).json;

// Stops what a fleet test started, by PID (FLEET_DEBUG=1 prints the logs first).
export async function stopFleet({ replicas, haproxy, redis, ports }) {
	if (process.env.FLEET_DEBUG) console.log(`---- haproxy\n${haproxy?.log()}\n---- replicas\n${replicas.map((r) => r.stderr()).join('\n----\n')}`);
	await closeAll();
	for (const r of replicas) await r.kill('SIGKILL');
	await haproxy?.stop();
	await redis?.stop();
	if (ports) removeDir(ports.dir);
}
