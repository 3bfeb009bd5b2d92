// The conformance suite's newest alpha (0.2.0-alpha.12), client scenarios,
// with sluice as the client: the suite starts each scenario's server and
// runs conformance-client.mjs, which starts sluice with that server as its
// one upstream and drives it with the SDK (logins included). Every scenario
// passes with no warning, except those in KNOWN_CLIENT (conformance-
// suite.mjs), each with its reason; an entry that passes fails the test.
// The newest release's client scenarios are in remote.test.mjs.
// docs/internals/CONFORMANCE.md has the table.
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';

import { closeAll } from './helpers.mjs';
import { KNOWN_CLIENT, cell, clientScenarios, passes, runClientSuite } from './conformance-suite.mjs';

const KNOWN = KNOWN_CLIENT.alpha;
const scenarios = await clientScenarios('alpha');
// One suite run for all of them (runClientSuite), started by the first test.
let run;

after(closeAll);

describe('conformance 0.2.0-alpha.12 client scenarios: sluice as the client', { concurrency: 4 }, () => {
	test('the scenarios are listed, and every KNOWN entry is one of them', () => {
		assert.ok(scenarios.length >= 40, `too few client scenarios: ${scenarios.length}`);
		assert.deepEqual(Object.keys(KNOWN).filter((s) => !scenarios.includes(s)), []);
	});
	for (const s of scenarios) {
		test(s, { timeout: 540000 }, async () => {
			const r = await (run ??= runClientSuite('alpha'));
			assert.ok(!r.killed, `the suite run was stopped at its bound:\n${r.tail}`);
			const t = r.results.get(s);
			console.log(`conformance 0.2.0-alpha.12 client ${s}: ${cell(t)}`);
			if (KNOWN[s]) {
				assert.ok(!passes(t), `${s} passes now: remove it from KNOWN_CLIENT`);
				return;
			}
			assert.ok(t, `${s}: no checks written`);
			assert.deepEqual(t.failures, [], t.tail);
			assert.deepEqual(t.warnings, [], t.tail);
			assert.ok(t.passed > 0, `${s}: no check passed\n${t.tail}`);
		});
	}
});
