// The conformance suite's newest release (0.1.16), server scenarios:
// the suite against its reference server directly, and through sluice with
// that server as a stdio and as a URL upstream, side by side. Every
// scenario passing directly passes through sluice, except those in
// KNOWN_SERVER (conformance-suite.mjs), each with its reason; a known entry
// that passes fails the test (the list cannot go stale). docs/internals/CONFORMANCE.md has the table
// (tests/conformance-table.mjs prints it).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';

import { closeAll } from './helpers.mjs';
import { KNOWN_SERVER, VERSIONS, closeReferences, parityProblems, serverParity, serverTable } from './conformance-suite.mjs';

const KNOWN = KNOWN_SERVER.release;

after(async () => {
	await closeReferences();
	await closeAll();
});

test('conformance 0.1.16 server scenarios: through sluice as directly', { timeout: 240000 }, async () => {
	const p = await serverParity('release');
	console.log(`conformance 0.1.16 server scenarios in ${p.secs.toFixed(1)} s\n${serverTable(p, KNOWN)}`);
	const problems = parityProblems(p, KNOWN, VERSIONS.release.minDirect);
	assert.deepEqual(problems, [], problems.join('\n'));
	for (const gw of p.gateways) assert.doesNotMatch(gw.stderr(), /Sanitizer|runtime error/, gw.stderr().slice(-3000));
});
