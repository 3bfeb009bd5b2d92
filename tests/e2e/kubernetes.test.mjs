// deploy/kubernetes: the manifests render with `kubectl kustomize` and are valid
// Kubernetes objects, checked twice against the Kubernetes OpenAPI schemas as the
// npm package kubernetes-models compiles them: its validators (types, required
// fields, formats, enums), and its TypeScript interfaces under `tsc --strict`, whose
// excess-property check refuses any field the API does not define (a typo such as
// `replica:` is otherwise silently dropped by the API server). Then the parts must
// fit together: selectors match the pods, the probes ask the port the config
// listens on, and the gateway accepts the ConfigMap's config with the Secret's
// values and refuses it with the placeholders.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

import { runSluice } from './helpers.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = path.join(root, 'deploy/kubernetes');

// Group "" is the core API (kubernetes-models/v1); others by their group and version.
const modulePath = (apiVersion) => `kubernetes-models/${apiVersion}`;

function render() {
	const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
	assert.equal(r.status, 0, `kubectl kustomize failed: ${r.error || r.stderr}`);
	return parseAllDocuments(r.stdout).map((d) => {
		assert.deepEqual(d.errors, [], 'the rendered YAML parses');
		return d.toJS();
	});
}

async function validate(obj) {
	const mod = await import(modulePath(obj.apiVersion));
	const Model = mod[obj.kind];
	assert.ok(Model, `${obj.apiVersion} ${obj.kind} is a Kubernetes kind`);
	new Model(obj).validate();
}

// tsc over files that type each object with its kind's interface, one file per
// set (one run: tsc's start dominates), under build/ so that their imports resolve
// to the project's node_modules. Returns each file's errors.
function typecheck(sets) {
	const tmp = mkdtempSync(path.join(root, 'build', 'k8s-check-'));
	try {
		const files = Object.entries(sets).map(([name, list]) => {
			const lines = [];
			list.forEach((o, i) => {
				lines.push(`import type { I${o.kind} as T${i} } from '${modulePath(o.apiVersion)}';`);
				lines.push(`export const o${i}: T${i} = ${JSON.stringify(o, null, 1)};`);
			});
			const file = path.join(tmp, `${name}.ts`);
			writeFileSync(file, lines.join('\n') + '\n');
			return file;
		});
		const r = spawnSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '--noEmit',
			'--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022',
			'--skipLibCheck', ...files], { encoding: 'utf8' });
		const out = (r.stdout + r.stderr).split('\n').filter(Boolean);
		return Object.fromEntries(Object.keys(sets).map((name) =>
			[name, out.filter((l) => l.includes(`/${name}.ts(`)).join('\n')]));
	} finally {
		rmSync(tmp, { recursive: true, force: true });
	}
}

const objs = render();
const byKind = (kind, name) => objs.find((o) => o.kind === kind && (!name || o.metadata.name === name));

test('the manifests render to the objects a deployment needs, each valid by the OpenAPI schemas', async () => {
	const kinds = objs.map((o) => `${o.kind}/${o.metadata.name}`).sort();
	for (const want of ['ConfigMap/', 'Deployment/sluice', 'Deployment/sluice-redis', 'HorizontalPodAutoscaler/sluice',
		'Namespace/sluice', 'NetworkPolicy/sluice', 'NetworkPolicy/sluice-redis', 'PodDisruptionBudget/sluice',
		'Secret/sluice', 'Service/sluice', 'Service/sluice-redis'])
		assert.ok(kinds.some((k) => k.startsWith(want)), `${want} in ${kinds.join(', ')}`);
	for (const o of objs) {
		if (o.kind !== 'Namespace')
			assert.equal(o.metadata.namespace, 'sluice', `${o.kind}/${o.metadata.name} is in the namespace`);
		await validate(o);
	}
	// The validators bite: a wrong type is refused.
	const bad = structuredClone(byKind('Deployment', 'sluice'));
	bad.spec.template.spec.containers[0].ports[0].containerPort = 'mcp';
	await assert.rejects(() => validate(bad), /containerPort must be integer/);
});

test('no field the Kubernetes API does not define (tsc --strict over the typed objects)', () => {
	// The check bites: a misspelt field is an error naming it.
	const bad = structuredClone(byKind('Deployment', 'sluice'));
	bad.spec.replica = 2;
	const errors = typecheck({ manifests: objs, misspelt: [bad] });
	assert.equal(errors.manifests, '');
	assert.match(errors.misspelt, /'"?replica"?' does not exist/);
});

test('the parts fit: selectors, ports, probes, the hardening of the pod', () => {
	const dep = byKind('Deployment', 'sluice');
	const pod = dep.spec.template;
	const labels = pod.metadata.labels;
	const matches = (sel) => Object.entries(sel).every(([k, v]) => labels[k] === v);
	assert.ok(matches(dep.spec.selector.matchLabels));
	assert.ok(matches(byKind('Service', 'sluice').spec.selector));
	assert.ok(matches(byKind('PodDisruptionBudget', 'sluice').spec.selector.matchLabels));
	assert.ok(matches(byKind('NetworkPolicy', 'sluice').spec.podSelector.matchLabels));
	assert.equal(byKind('HorizontalPodAutoscaler').spec.scaleTargetRef.name, 'sluice');
	const c = pod.spec.containers[0];
	const config = JSON.parse(byKind('ConfigMap').data['sluice.json']);
	const port = Number(config.sluice.http.listen.split(':').pop());
	assert.equal(c.ports.find((p) => p.name === 'mcp').containerPort, port);
	assert.equal(byKind('Service', 'sluice').spec.ports[0].targetPort, 'mcp');
	for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe'])
		assert.deepEqual(c[probe].exec.command, ['sluice', 'status', '--url', `http://127.0.0.1:${port}`, '--json']);
	assert.equal(c.securityContext.readOnlyRootFilesystem, true);
	assert.equal(c.securityContext.allowPrivilegeEscalation, false);
	assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
	assert.equal(pod.spec.securityContext.runAsNonRoot, true);
	assert.equal(pod.spec.securityContext.seccompProfile.localhostProfile, 'profiles/sluice.json');
	// Every key the container reads from the Secret exists there.
	const secret = byKind('Secret', 'sluice');
	for (const e of c.env.filter((x) => x.valueFrom?.secretKeyRef))
		assert.ok(e.valueFrom.secretKeyRef.key in secret.stringData, e.name);
	// The config's Redis is the Service the manifests make.
	assert.equal(new URL(config.sluice.shared.redis.url).hostname, byKind('Service', 'sluice-redis').metadata.name);
});

test('the gateway loads the ConfigMap with real secrets, and refuses the placeholders', async () => {
	const tmp = mkdtempSync(path.join(os.tmpdir(), 'sluice-k8s-'));
	try {
		const file = path.join(tmp, 'sluice.json');
		writeFileSync(file, byKind('ConfigMap').data['sluice.json']);
		const secret = byKind('Secret', 'sluice').stringData;
		const env = (shared, bearer) => ({ SLUICE_SHARED_SECRET: shared, SLUICE_BEARER_TOKEN: bearer, POD_NAME: 'sluice-0' });
		const good = await runSluice(['check', '--config', file], 20000, env('s'.repeat(44), 't'.repeat(44)));
		assert.equal(good.code, 0, good.stdout + good.stderr);
		const bad = await runSluice(['check', '--config', file], 20000,
			env(secret['shared-secret'], secret['bearer-token']));
		assert.notEqual(bad.code, 0);
		assert.match(bad.stderr, /sluice\.shared\.secret/);
	} finally {
		rmSync(tmp, { recursive: true, force: true });
	}
});

test('kubectl is on the PATH (setup installs Debian\'s kubernetes-client where none is)', () => {
	assert.match(execFileSync('kubectl', ['version', '--client'], { encoding: 'utf8' }), /Client Version/);
});
