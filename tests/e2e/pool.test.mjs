// The sandbox's pool of prepared workers (docs/internals/SANDBOX.md, "The floor, third
// pass"): a worker taken by a program is replaced when that program ends, not while it
// runs, unless the pool would stay empty; the zygote and its workers are the sandbox's own
// static executable, with nothing of the gateway's libraries; and the zygote holds its code
// in an anonymous huge page that every worker shares.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { catalog, closeAll, connect, eventually, execCode, sleep, zygoteOf, SLUICE } from './helpers.mjs';

const started = [];
after(async () => {
	await closeAll();
	for (const g of started) assert.doesNotMatch(g.stderr(), /Sanitizer|runtime error/, g.stderr().slice(-3000));
});

const servers = { github: catalog('github') };
const SLOW = 'await tools.github.slow({ ms: 1500 }); return "slept";';

async function gateway(poolSize) {
	const gw = await connect({ servers, sluice: { exposure: 'code', codeMode: { poolSize } } });
	started.push(gw);
	// The start-up probe has run and its worker has been replaced: the same
	// poolSize workers, none of them ending, over 300 ms.
	await eventually(() => /code mode (ready|failed)/.test(gw.stderr()), 15000, 50, 'the code-mode probe');
	let last = '';
	let since = Date.now();
	await eventually(() => {
		const now = [...pids(gw)].sort().join();
		if (now !== last) [last, since] = [now, Date.now()];
		return pids(gw).size === poolSize && Date.now() - since >= 300;
	}, 8000, 25, `${poolSize} prepared workers`);
	return gw;
}

// The zygote's live workers (an ended one not yet reaped is left out).
const pids = (gw) => new Set((zygoteOf(gw.pid())?.workers ?? []).filter((w) => w.state !== 'Z').map((w) => w.pid));

// Samples the zygote's workers every 25 ms for ms; returns the largest count seen.
async function mostWorkers(gw, ms) {
	let most = 0;
	for (const end = Date.now() + ms; Date.now() < end; await sleep(25)) most = Math.max(most, pids(gw).size);
	return most;
}

describe('the worker pool', () => {
	test('poolSize 2: the worker a program takes is replaced when the program ends', async () => {
		const gw = await gateway(2);
		const before = pids(gw);
		const run = execCode(gw.client, SLOW);
		// While the program runs: its worker and one prepared worker, no third.
		await sleep(200);
		assert.equal(await mostWorkers(gw, 900), 2);
		assert.deepEqual(pids(gw), before, 'no worker was forked while the program ran');
		const r = await run;
		assert.equal(r.text, 'slept');
		// Then the pool is whole again, without the worker that ran.
		await eventually(() => {
			const now = pids(gw);
			return now.size === 2 && [...now].filter((p) => before.has(p)).length === 1;
		}, 5000, 25, 'the used worker replaced');
		// And the next program runs in a prepared worker.
		assert.equal((await execCode(gw.client, 'return 6 * 7')).text, '42');
		await gw.close();
	});

	test('poolSize 1: a pool left empty is refilled at once, while the program runs', async () => {
		const gw = await gateway(1);
		const [first] = pids(gw);
		const run = execCode(gw.client, SLOW);
		await eventually(() => {
			const now = pids(gw);
			return now.size === 2 && now.has(first);
		}, 1200, 25, 'a new prepared worker beside the running one');
		assert.equal((await run).text, 'slept');
		await eventually(() => pids(gw).size === 1 && !pids(gw).has(first), 5000, 25, 'the used worker gone');
		await gw.close();
	});
});

// The mappings of /proc/PID/smaps: { range, perms, path, kb: { Size, AnonHugePages, ... } }.
function smaps(pid) {
	const out = [];
	for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
		const head = /^([0-9a-f]+-[0-9a-f]+) (\S+) \S+ \S+ \d+\s*(.*)$/.exec(line);
		if (head) out.push({ range: head[1], perms: head[2], path: head[3], kb: {} });
		const field = /^(\w+):\s+(\d+) kB/.exec(line);
		if (field && out.length) out.at(-1).kb[field[1]] = Number(field[2]);
	}
	return out;
}

// Release builds start the zygote from the sandbox's own executable, embedded in sluice
// and run from a memfd (src/sandbox/image.h); sanitizer builds from sluice itself.
const SANITIZED = !!process.env.SAN;
const IMAGE = /^\/memfd:sluice-sandbox( \(deleted\))?$/;
const image = (m) => (SANITIZED ? m.path === SLUICE : IMAGE.test(m.path));

describe("the sandbox's code", () => {
	test('is its own executable: a worker maps no library of the gateway', async () => {
		const gw = await gateway(1);
		const z = zygoteOf(gw.pid());
		for (const pid of [z.zygote.pid, z.workers[0].pid]) {
			const files = smaps(pid).filter((m) => m.path.startsWith('/'));
			const paths = [...new Set(files.map((m) => m.path))];
			assert.ok(files.some(image), `process ${pid} runs ${SANITIZED ? 'sluice' : 'the image'}: ${paths}`);
			assert.equal(readFileSync(`/proc/${pid}/comm`, 'utf8'), 'sluice-sandbox\n');
			const libs = files.filter((m) => /\.so[.\d]*$/.test(m.path)).map((m) => m.path);
			if (SANITIZED) {
				assert.ok(libs.some((l) => /libgnutls/.test(l)), `a sanitizer build's zygote is sluice: ${libs}`);
				continue;
			}
			// Static: not even the C library is a file of its own; nothing of TLS, HTTP, Redis.
			assert.deepEqual(libs, [], `process ${pid} maps libraries: ${libs}`);
			assert.deepEqual(paths.filter((p) => !IMAGE.test(p)), [], `process ${pid} maps only the image`);
		}
		await gw.close();
	});

	test('is one anonymous huge page, and its read-only data another, shared by the workers, where THP is available', async () => {
		const gw = await gateway(1);
		const z = zygoteOf(gw.pid());
		const thp = readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8');
		const code = (pid) => smaps(pid).filter((m) => m.perms === 'r-xp');
		// The gateway runs its code from the file, as any program does.
		assert.ok(code(gw.pid()).some((m) => m.path === SLUICE), 'the gateway maps its code from the file');
		for (const pid of [z.zygote.pid, z.workers[0].pid]) {
			const mine = code(pid);
			if (/\[never\]/.test(thp)) {
				// No huge pages: the code stays as it was (4 KiB copies would make forks dearer).
				assert.ok(mine.some(image), `process ${pid} kept its code from the file`);
				continue;
			}
			assert.ok(!mine.some(image), `process ${pid} runs no code from the file: ${JSON.stringify(mine)}`);
			const hugeOf = (maps) => maps.filter((m) => m.path === '' && m.kb.Size % 2048 === 0 && m.kb.AnonHugePages === m.kb.Size);
			assert.equal(hugeOf(mine).length, 1, `process ${pid}: ${JSON.stringify(mine)}`);
			// The image's read-only data (under 2 MiB) too; sluice's own is larger and stays.
			const data = smaps(pid).filter((m) => m.perms === 'r--p' && (m.path === '' || image(m)));
			assert.equal(hugeOf(data).length, SANITIZED ? 0 : 1, `process ${pid}: ${JSON.stringify(data.map((m) => [m.range, m.path, m.kb.Size]))}`);
		}
		// The code runs: a program that uses the engine's parser, regexps and JSON.
		const r = await execCode(gw.client, 'return JSON.stringify([..."a1b2".matchAll(/\\d/g)].map((m) => +m[0]))');
		assert.equal(r.text, '[1,2]');
		await gw.close();
	});
});
