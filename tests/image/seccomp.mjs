// Seccomp profiles for make test-image (scripts/image.sh, docs/CONTAINERS.md).
//
//   node tests/image/seccomp.mjs sluice DEFAULT.json
//       prints deploy/seccomp/sluice.json: DEFAULT.json (Docker's default
//       profile, as Debian 12 ships it) with the sandbox's one rule added
//   import { toRuntime } from './seccomp.mjs'
//       a profile in Docker's format (what Docker, Podman, containerd and
//       CRI-O read, and Kubernetes' Localhost profiles) as the OCI runtime
//       config's linux.seccomp, the way a runtime turns it into one for a
//       container with the capabilities caps on this machine's architecture
import { readFileSync } from 'node:fs';
import os from 'node:os';

// clone(2)'s namespace flags, as the default profile masks them.
const CLONE_NEWNS = 0x00020000;
const CLONE_NEWCGROUP = 0x02000000;
const CLONE_NEWUTS = 0x04000000;
const CLONE_NEWIPC = 0x08000000;
const CLONE_NEWUSER = 0x10000000;
const CLONE_NEWPID = 0x20000000;
const CLONE_NEWNET = 0x40000000;
const NS_MASK = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET;
// The one set the code-mode zygote is started with (src/sandbox/zygote.c):
// no UTS and no cgroup namespace, and never without a user namespace.
const SANDBOX_NS = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWNS;

const COMMENT =
	'sluice code mode: the zygote is started by clone() with exactly CLONE_NEWUSER|CLONE_NEWPID|' +
	'CLONE_NEWNET|CLONE_NEWIPC|CLONE_NEWNS (docs/CONTAINERS.md); any other namespace flag, ' +
	'unshare, setns and mount stay refused';

// The sandbox's rule, in the default's own form: for callers without
// CAP_SYS_ADMIN (who have the default's wider rule), on s390 the flags are
// clone's second argument.
export function sandboxRules() {
	const arg = (index) => [{ index, value: NS_MASK, valueTwo: SANDBOX_NS, op: 'SCMP_CMP_MASKED_EQ' }];
	return [
		{ names: ['clone'], action: 'SCMP_ACT_ALLOW', args: arg(0), comment: COMMENT, includes: {},
			excludes: { caps: ['CAP_SYS_ADMIN'], arches: ['s390', 's390x'] } },
		{ names: ['clone'], action: 'SCMP_ACT_ALLOW', args: arg(1), comment: COMMENT,
			includes: { arches: ['s390', 's390x'] }, excludes: { caps: ['CAP_SYS_ADMIN'] } },
	];
}

// The default with the sandbox's rules after its own rules for clone.
export function sluiceProfile(def) {
	const p = structuredClone(def);
	let at = -1;
	p.syscalls.forEach((s, i) => {
		if (s.names.length === 1 && s.names[0] === 'clone') at = i;
	});
	if (at < 0) throw new Error('the default profile has no rule for clone alone: not the profile expected');
	p.syscalls.splice(at + 1, 0, ...sandboxRules());
	return p;
}

const GOARCH = { x64: 'amd64', arm64: 'arm64', s390x: 's390x', ppc64: 'ppc64le' }[process.arch] ?? process.arch;
const SCMP_ARCH = { amd64: 'SCMP_ARCH_X86_64', arm64: 'SCMP_ARCH_AARCH64', s390x: 'SCMP_ARCH_S390X', ppc64le: 'SCMP_ARCH_PPC64LE' };

function kernelAtLeast(v) {
	const [a, b] = os.release().split('.').map((x) => parseInt(x, 10));
	const [c, d] = v.split('.').map((x) => parseInt(x, 10));
	return a > c || (a === c && b >= d);
}

export function toRuntime(profile, caps = []) {
	const has = (list) => (list ?? []).every((c) => caps.includes(c));
	const any = (list) => (list ?? []).some((c) => caps.includes(c));
	const main = SCMP_ARCH[GOARCH];
	const map = profile.archMap.find((a) => a.architecture === main);
	if (!map) throw new Error(`no ${main} in the profile's archMap`);
	const syscalls = [];
	for (const s of profile.syscalls) {
		const inc = s.includes ?? {}, exc = s.excludes ?? {};
		if (inc.caps?.length && !has(inc.caps)) continue;
		if (inc.arches?.length && !inc.arches.includes(GOARCH)) continue;
		if (inc.minKernel && !kernelAtLeast(inc.minKernel)) continue;
		if (any(exc.caps)) continue;
		if (exc.arches?.includes(GOARCH)) continue;
		const r = { names: s.names, action: s.action };
		if (s.errnoRet !== undefined) r.errnoRet = s.errnoRet;
		if (s.args?.length) r.args = s.args.map((a) => ({ index: a.index, value: a.value, valueTwo: a.valueTwo ?? 0, op: a.op }));
		syscalls.push(r);
	}
	const out = { defaultAction: profile.defaultAction, architectures: [map.architecture, ...map.subArchitectures], syscalls };
	if (profile.defaultErrnoRet !== undefined) out.defaultErrnoRet = profile.defaultErrnoRet;
	return out;
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
	const [cmd, file] = process.argv.slice(2);
	if (cmd !== 'sluice' || !file) {
		console.error('usage: node tests/image/seccomp.mjs sluice DEFAULT.json');
		process.exit(2);
	}
	process.stdout.write(JSON.stringify(sluiceProfile(JSON.parse(readFileSync(file, 'utf8'))), null, '\t') + '\n');
}
