// Prints the tables of docs/internals/CONFORMANCE.md: both pinned versions
// of the conformance suite, server scenarios directly and through sluice
// (stdio and URL upstream), and client scenarios with sluice as the client.
//
//   SLUICE=build/sluice node tests/conformance-table.mjs [release|alpha]... > tables.md
//
// The same runs as tests/e2e/conformance-{release,alpha,client-alpha}.test.mjs
// and remote.test.mjs's conformance part; a few minutes on 2 cores.
import { closeAll } from './e2e/helpers.mjs';
import { KNOWN_CLIENT, KNOWN_SERVER, VERSIONS, cell, clientScenarios, closeReferences, passes,
	runClientSuite, serverParity, serverTable } from './e2e/conformance-suite.mjs';

const which = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(VERSIONS);
try {
	for (const v of which) {
		const { version } = VERSIONS[v];
		const p = await serverParity(v);
		const count = (via) => p.scenarios.filter((s) => passes(p[via].results.get(s))).length;
		console.log(`### ${version}: server scenarios\n\n${serverTable(p, KNOWN_SERVER[v])}\n\n` +
			`${p.scenarios.length} scenarios; passing: directly ${count('direct')}, through sluice over ` +
			`stdio ${count('stdio')}, as a URL upstream ${count('url')}` +
			`${p.pinned ? `, as a URL upstream pinned to 2026-07-28 ${count('pinned')}` : ''} (${p.secs.toFixed(0)} s).\n`);
		const scenarios = await clientScenarios(v);
		const { results: run } = await runClientSuite(v);
		const results = scenarios.map((s) => run.get(s));
		const rows = scenarios.map((s, i) => `| ${s} | ${cell(results[i])} | ${KNOWN_CLIENT[v][s] ?? ''} |`);
		console.log(`### ${version}: client scenarios, sluice as the client\n\n| scenario | result | note |\n|---|---|---|\n` +
			`${rows.join('\n')}\n\n${scenarios.length} scenarios; ${results.filter(passes).length} pass.\n`);
	}
} finally {
	await closeReferences();
	await closeAll();
}
