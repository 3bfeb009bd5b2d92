// Shutting down: the client closing its input, signals, and the upstream
// processes left behind (there must be none).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { startRaw, catalog, everything, closeAll, sleep, eventually, withTimeout } from './helpers.mjs';

after(closeAll);

const childrenOf = (pid) => {
	try {
		return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
	} catch {
		return null; // no /proc children file on this kernel
	}
};
const alive = (pid) => {
	try {
		process.kill(pid, 0);
		return true;
	} catch {
		return false;
	}
};

async function started() {
	const raw = startRaw({ servers: { gh: catalog('github'), ev: everything() } });
	await raw.initialize();
	await raw.request('tools/list');
	const kids = childrenOf(raw.child.pid);
	if (kids) assert.equal(kids.length, 2, 'one process per upstream');
	return { raw, kids: kids ?? [] };
}

async function noneLeft(kids) {
	try {
		await eventually(() => kids.every((p) => !alive(p)), 3000, 50, 'upstream processes to end');
	} finally {
		for (const p of kids.filter(alive)) process.kill(p, 'SIGKILL');
	}
}

test('closing stdin ends sluice and every upstream', async () => {
	const { raw, kids } = await started();
	raw.child.stdin.end();
	const ex = await withTimeout(raw.wait(), 5000, 'sluice to exit');
	assert.equal(ex.code, 0);
	await noneLeft(kids);
});

test('closing stdin with a call in flight: the call is answered first, then sluice exits', async () => {
	const { raw, kids } = await started();
	raw.send({ jsonrpc: '2.0', id: 'last', method: 'tools/call', params: { name: 'gh__slow', arguments: { ms: 500 } } });
	await sleep(50);
	raw.child.stdin.end();
	const r = await raw.next((m) => m.id === 'last', 5000);
	assert.equal(r.result?.content?.[0]?.text, 'slept 500 ms', JSON.stringify(r));
	const ex = await withTimeout(raw.wait(), 5000, 'sluice to exit');
	assert.equal(ex.code, 0);
	await noneLeft(kids);
});

for (const sig of ['SIGTERM', 'SIGINT']) {
	test(`${sig} with a call in flight ends sluice at once, upstreams too`, async () => {
		const { raw, kids } = await started();
		raw.send({ jsonrpc: '2.0', id: 'x', method: 'tools/call', params: { name: 'gh__slow', arguments: { ms: 20000 } } });
		await sleep(50);
		const t0 = Date.now();
		raw.child.kill(sig);
		const ex = await withTimeout(raw.wait(), 5000, 'sluice to exit');
		assert.ok(ex.code === 0 || ex.signal === sig, JSON.stringify(ex));
		assert.ok(Date.now() - t0 < 4000);
		await noneLeft(kids);
	});
}

test('stdout of sluice carries only JSON-RPC, logs go to stderr', async () => {
	const { raw, kids } = await started();
	await raw.request('tools/call', { name: 'gh__stderr', arguments: { lines: 20 } });
	await raw.request('tools/call', { name: 'gh__garbage', arguments: {} });
	await raw.close();
	for (const { msg, line } of raw.all) {
		assert.ok(!msg.__unparsable, `non-JSON on stdout: ${line.slice(0, 120)}`);
		assert.equal(msg.jsonrpc, '2.0');
	}
	assert.match(raw.stderr(), /stderr line 20 of 20/);
	await noneLeft(kids);
});
