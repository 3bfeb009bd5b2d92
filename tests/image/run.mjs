// make test-image (scripts/image.sh test): the OCI image as a container
// runtime runs it. The image is unpacked (umoci) and run by crun from a
// runtime config made here the way Kubernetes' runtime makes one: the
// image's user, entrypoint, command, environment and working directory;
// its own pid, network, ipc, uts and mount namespaces; no capability;
// no_new_privs; a read-only root, writable only at the state volume (no /tmp);
// /proc paths masked and read-only as containerd does; a seccomp profile.
//
// 1. with deploy/seccomp/sluice.json: `sluice doctor` shows every boundary
//    in force and a worker runs; the gateway (the image's command) serves
//    inside the container's own network namespace, and the MCP SDK client,
//    run in that namespace (nsenter --net), lists the tools, calls one of
//    the catalog test server bound into the container, and runs an
//    execute_code program that calls it; its state lands in the volume.
//    Without SLUICE_BEARER_TOKEN the image's command refuses to serve.
// 2. with Docker's default profile (as Debian 12 ships it): doctor names the
//    namespaces missing and the profile that restores them (and, under that
//    profile without its Landlock calls, names those); with
//    codeMode.require naming them, execute_code answers at once with an
//    error naming the missing boundaries.
//
// Env: SLUICE_IMAGE (the layout), SLUICE_IMAGE_TAG, DEFAULT_PROFILE, CATALOG.
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { toRuntime } from './seccomp.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const layout = process.env.SLUICE_IMAGE;
const tag = process.env.SLUICE_IMAGE_TAG;
const catalog = process.env.CATALOG;
const shipped = JSON.parse(readFileSync(path.join(repo, 'deploy/seccomp/sluice.json'), 'utf8'));
const dflt = JSON.parse(readFileSync(process.env.DEFAULT_PROFILE, 'utf8'));
const TOKEN = 'image-test-token-' + process.pid;
const BOUNDARIES = ['userns', 'pidns', 'netns', 'ipcns', 'mountns', 'rlimits', 'no_new_privs', 'landlock', 'seccomp'];
const NAMESPACES = BOUNDARIES.slice(0, 5);

const note = (s) => console.error(`image: ${s}`);
const work = mkdtempSync(path.join(os.tmpdir(), 'sluice-image-'));
const state = path.join(work, 'crun');
const live = new Set(); // container ids to delete at the end

// ---- the image as a runtime reads it ------------------------------------------------

function blob(digest) {
	return JSON.parse(readFileSync(path.join(layout, 'blobs', ...digest.split(':')), 'utf8'));
}
const index = JSON.parse(readFileSync(path.join(layout, 'index.json'), 'utf8'));
const ref = index.manifests.find((m) => m.annotations?.['org.opencontainers.image.ref.name'] === tag);
assert.ok(ref, `no tag ${tag} in ${layout}`);
const image = blob(blob(ref.digest).config.digest);
const ic = image.config;
assert.match(ic.User, /^[1-9][0-9]*:[1-9][0-9]*$/, 'the image runs as a numeric non-root user');
const [uid, gid] = ic.User.split(':').map(Number);

const bundle = path.join(work, 'bundle');
execFileSync('umoci', ['unpack', '--image', `${layout}:${tag}`, bundle], { stdio: ['ignore', 'ignore', 'inherit'] });
const rootfs = path.join(bundle, 'rootfs');

// A config as containerd makes one for a pod with securityContext
// {runAsNonRoot, readOnlyRootFilesystem, allowPrivilegeEscalation: false,
// capabilities: {drop: [ALL]}, seccompProfile}. No cgroup settings and no
// rlimits: crun runs without a cgroup manager here (below).
function runtimeConfig({ args, profile, mounts = [], token = true, volume = null }) {
	const none = [];
	return {
		ociVersion: '1.0.2',
		process: {
			terminal: false,
			user: { uid, gid },
			args,
			env: token ? ic.Env.concat([`SLUICE_BEARER_TOKEN=${TOKEN}`]) : ic.Env,
			cwd: ic.WorkingDir || '/',
			capabilities: { bounding: none, effective: none, inheritable: none, permitted: none, ambient: none },
			noNewPrivileges: true,
		},
		root: { path: 'rootfs', readonly: true },
		hostname: 'sluice',
		mounts: [
			{ destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
			{ destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'] },
			{ destination: '/dev/pts', type: 'devpts', source: 'devpts', options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620'] },
			{ destination: '/dev/shm', type: 'tmpfs', source: 'shm', options: ['nosuid', 'noexec', 'nodev', 'mode=1777', 'size=65536k'] },
			{ destination: '/dev/mqueue', type: 'mqueue', source: 'mqueue', options: ['nosuid', 'noexec', 'nodev'] },
			{ destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
			// The image's volume: a directory of the test's (a persistent
			// volume), else a tmpfs owned by the image's user (an emptyDir).
			...(ic.Volumes ? Object.keys(ic.Volumes) : []).map((d) =>
				volume
					? { destination: d, type: 'bind', source: volume, options: ['rbind', 'rw', 'nosuid', 'nodev'] }
					: { destination: d, type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'nodev', 'mode=0750', `uid=${uid}`, `gid=${gid}`, 'size=65536k'] },
			),
			...mounts,
		],
		linux: {
			namespaces: ['pid', 'network', 'ipc', 'uts', 'mount'].map((type) => ({ type })),
			maskedPaths: ['/proc/acpi', '/proc/asound', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list',
				'/proc/timer_stats', '/proc/sched_debug', '/proc/scsi', '/sys/firmware'],
			readonlyPaths: ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'],
			seccomp: toRuntime(profile, []),
		},
	};
}

function bind(source, destination) {
	return { destination, type: 'bind', source, options: ['rbind', 'ro', 'nosuid', 'nodev'] };
}

// Each container gets a bundle of its own: the same rootfs (read-only), its config.
let seq = 0;
function makeBundle(cfg) {
	const dir = path.join(work, `b${++seq}`);
	mkdirSync(dir);
	cfg.root.path = rootfs;
	writeFileSync(path.join(dir, 'config.json'), JSON.stringify(cfg, null, 1));
	return dir;
}

// crun refuses this machine's hybrid cgroup layout (v1 controllers, and a
// v2 hierarchy with controllers of its own): "cgroups in hybrid mode not
// supported". Containers here get no cgroup (--cgroup-manager=disabled),
// and crun runs in a mount namespace of its own where the v2 hierarchy is
// unmounted, so that it finds plain v1 and goes on.
const CRUN = ['unshare', '-m', '--propagation', 'private', '--', 'sh', '-c',
	'umount /sys/fs/cgroup/unified 2>/dev/null; exec crun "$@"', 'crun', '--root', state, '--cgroup-manager=disabled'];
function crun(args, opts = {}) {
	return spawn(CRUN[0], [...CRUN.slice(1), ...args], opts);
}
function crunSync(args, opts = {}) {
	return execFileSync(CRUN[0], [...CRUN.slice(1), ...args], opts);
}

// Runs a container to its end: { code, stdout, stderr }. Killed after ms.
function runOnce(id, cfg, ms = 30000) {
	const dir = makeBundle(cfg);
	live.add(id);
	return new Promise((resolve, reject) => {
		const p = crun(['run', '--bundle', dir, id], { stdio: ['ignore', 'pipe', 'pipe'] });
		let stdout = '', stderr = '';
		p.stdout.on('data', (d) => (stdout += d));
		p.stderr.on('data', (d) => (stderr += d));
		const timer = setTimeout(() => {
			crun(['kill', id, 'KILL']);
			reject(new Error(`container ${id} did not end in ${ms} ms: ${stderr}`));
		}, ms);
		p.on('exit', (code) => {
			clearTimeout(timer);
			remove(id);
			resolve({ code, stdout, stderr });
		});
	});
}

function remove(id) {
	try {
		crunSync(['delete', '-f', id], { stdio: 'ignore' });
	} catch {
		// already gone
	}
	live.delete(id);
}

// Starts the image's own command with cfg; resolves { p, pid, log } once it listens.
function serve(id, cfg, port, ms = 20000) {
	const dir = makeBundle(cfg);
	live.add(id);
	return new Promise((resolve, reject) => {
		const p = crun(['run', '--bundle', dir, id], { stdio: ['ignore', 'ignore', 'pipe'] });
		const log = { text: '' };
		const timer = setTimeout(() => reject(new Error(`no "listening" in ${ms} ms: ${log.text}`)), ms);
		p.on('exit', (code) => {
			clearTimeout(timer);
			reject(new Error(`the gateway's container exited (${code}): ${log.text}`));
		});
		let up = false;
		p.stderr.on('data', (d) => {
			log.text += d;
			if (!up && log.text.includes(`listening on http://0.0.0.0:${port}/mcp`)) {
				up = true;
				clearTimeout(timer);
				p.removeAllListeners('exit');
				const st = JSON.parse(crunSync(['state', id], { encoding: 'utf8' }));
				resolve({ p, pid: st.pid, log });
			}
		});
	});
}

// Stops it as the kubelet would: SIGTERM to its pid 1, then delete.
async function stop(id, g) {
	const exited = new Promise((r) => g.p.on('exit', r));
	crun(['kill', id, 'TERM']);
	const t = setTimeout(() => crun(['kill', id, 'KILL']), 10000);
	await exited;
	clearTimeout(t);
	remove(id);
}

// The SDK client, run inside the container's network namespace.
function drive(pid, url, mode) {
	const out = execFileSync('nsenter', [`--net=/proc/${pid}/ns/net`, process.execPath, path.join(here, 'drive.mjs'), url, TOKEN, mode], {
		encoding: 'utf8',
		timeout: 60000,
		stdio: ['ignore', 'pipe', 'inherit'],
	});
	return JSON.parse(out);
}

// The test config: the image's own, with the catalog test server (bound in
// read-only) and the port the test picked.
function gatewayConfig(port, codeMode) {
	const own = JSON.parse(readFileSync(path.join(rootfs, 'etc/sluice/sluice.json'), 'utf8'));
	own.mcpServers = { catalog: { command: '/opt/catalog', args: ['--backend', 'github'] } };
	own.sluice.http.listen = `0.0.0.0:${port}`;
	Object.assign(own.sluice.codeMode, codeMode);
	const f = path.join(work, `sluice-${port}.json`);
	writeFileSync(f, JSON.stringify(own));
	return f;
}

function freePortInside() {
	// Any port is free in the container's fresh network namespace; pick one
	// at random above the privileged range.
	return 20000 + Math.floor(Math.random() * 20000);
}

function boundaries(doctorOut) {
	const have = {};
	for (const b of BOUNDARIES) {
		const m = new RegExp(`^  ${b} +(yes|NO)$`, 'm').exec(doctorOut);
		assert.ok(m, `doctor lists ${b}:\n${doctorOut}`);
		have[b] = m[1] === 'yes';
	}
	return have;
}

const start = Date.now();
let failed = false;
try {
	assert.deepEqual(ic.Entrypoint, ['/usr/bin/sluice']);
	note(`image ${ref.digest}: user ${ic.User}, command ${ic.Entrypoint.concat(ic.Cmd).join(' ')}`);

	// ---- 1. the shipped profile -------------------------------------------------------
	let r = await runOnce('doctor-sluice', runtimeConfig({ args: [...ic.Entrypoint, 'doctor'], profile: shipped }));
	assert.equal(r.code, 0, `doctor under deploy/seccomp/sluice.json: ${r.stdout}${r.stderr}`);
	assert.match(r.stdout, /a worker ran `return 1`: ok, result 1/);
	assert.match(r.stdout, /^ {2}seccomp +filtered/m, 'the container runs under a seccomp filter');
	assert.match(r.stdout, /^ {2}capabilities +none$/m, 'the container has no capability');
	const got = boundaries(r.stdout);
	for (const b of BOUNDARIES)
		if (b !== 'landlock' || /landlock ABI +[1-9]/.test(r.stdout)) assert.ok(got[b], `${b} in force with the shipped profile:\n${r.stdout}`);
	assert.doesNotMatch(r.stdout, /missing, and what restores it/);
	note('doctor with deploy/seccomp/sluice.json: ' + BOUNDARIES.filter((b) => got[b]).join(' '));

	// The image's own config without its token: a clear refusal, no gateway.
	r = await runOnce('gw-notoken', runtimeConfig({ args: [...ic.Entrypoint, ...ic.Cmd], profile: shipped, token: false }));
	assert.equal(r.code, 2, `the image's command without SLUICE_BEARER_TOKEN: ${r.stderr}`);
	assert.match(r.stderr, /environment variable SLUICE_BEARER_TOKEN is not set/);
	note('without SLUICE_BEARER_TOKEN the image refuses to serve: ' + r.stderr.trim().split('\n')[0]);

	let port = freePortInside();
	const all = { require: NAMESPACES };
	const volume = path.join(work, 'state');
	mkdirSync(volume, { mode: 0o750 });
	chownSync(volume, uid, gid);
	let cfg = runtimeConfig({
		args: [...ic.Entrypoint, ...ic.Cmd],
		profile: shipped,
		mounts: [bind(gatewayConfig(port, all), '/etc/sluice/sluice.json'), bind(catalog, '/opt/catalog')],
		volume,
	});
	let g = await serve('gw-sluice', cfg, port);
	try {
		const d = drive(g.pid, `http://127.0.0.1:${port}/mcp`, 'run');
		note(`over HTTP in the container's network namespace: ${d.tools} tools listed; ${d.called}; execute_code: ${d.program}`);
	} finally {
		await stop('gw-sluice', g);
	}
	note('gateway stopped by SIGTERM to its pid 1 (crun kill), container deleted');
	// Its state (tool pins) went to the volume, as the image's user; the root is read-only.
	const files = execFileSync('find', [volume, '-type', 'f', '-user', String(uid)], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
	assert.ok(files.length > 0, 'the gateway wrote its state to the volume');
	note(`state in the volume: ${files.map((f) => path.relative(volume, f)).join(' ')}`);

	// ---- 2. a default profile: no user namespaces -------------------------------------
	r = await runOnce('doctor-default', runtimeConfig({ args: [...ic.Entrypoint, 'doctor'], profile: dflt }));
	assert.equal(r.code, 0, `doctor under the default profile: ${r.stdout}${r.stderr}`);
	const less = boundaries(r.stdout);
	for (const b of NAMESPACES) assert.equal(less[b], false, `${b} cannot hold under the default profile`);
	for (const b of ['rlimits', 'no_new_privs', 'seccomp']) assert.ok(less[b], `${b} holds in a default pod too`);
	assert.match(r.stdout, /a seccomp profile \(the container runtime's default\) refuses clone\(\) with CLONE_NEWUSER/);
	assert.match(r.stdout, /run the container with deploy\/seccomp\/sluice\.json/);
	assert.match(r.stdout, /localhostProfile/);
	note('doctor with the default profile: ' + BOUNDARIES.filter((b) => less[b]).join(' ') + '; for the rest it says:');
	console.error(r.stdout.slice(r.stdout.indexOf('missing, and what restores it')).trimEnd().replace(/^/gm, '    '));

	// A profile older than Landlock: doctor names the refusal and the profile.
	if (/landlock ABI +[1-9]/.test(r.stdout)) {
		const old = structuredClone(dflt);
		for (const rule of old.syscalls) rule.names = rule.names.filter((n) => !n.startsWith('landlock_'));
		r = await runOnce('doctor-nolandlock', runtimeConfig({ args: [...ic.Entrypoint, 'doctor'], profile: old }));
		assert.equal(r.code, 0, `doctor under a profile without Landlock: ${r.stdout}${r.stderr}`);
		assert.equal(boundaries(r.stdout).landlock, false, 'landlock is missing when the profile refuses it');
		assert.match(r.stdout, /landlock: landlock_create_ruleset\(\) is refused \(Operation not permitted\)\.\n {4}To restore it: run the container with deploy\/seccomp\/sluice\.json/);
		note('doctor with a profile without Landlock: names landlock_create_ruleset and deploy/seccomp/sluice.json');
	}

	port = freePortInside();
	cfg = runtimeConfig({
		args: [...ic.Entrypoint, ...ic.Cmd],
		profile: dflt,
		mounts: [bind(gatewayConfig(port, all), '/etc/sluice/sluice.json'), bind(catalog, '/opt/catalog')],
	});
	g = await serve('gw-default', cfg, port);
	try {
		const d = drive(g.pid, `http://127.0.0.1:${port}/mcp`, 'refused');
		note(`default profile, codeMode.require ${NAMESPACES.join(',')}: execute_code answered in ${d.ms} ms: ${d.program}`);
	} finally {
		await stop('gw-default', g);
	}
	note(`passed (${((Date.now() - start) / 1000).toFixed(1)} s)`);
} catch (e) {
	failed = true;
	console.error(e);
} finally {
	for (const id of [...live]) remove(id);
	rmSync(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
