// The code-mode scenarios of `make bench`: the same tasks done with plain tool
// calls and with one execute_code program, through `sluice serve` on stdio,
// measured on the wire. Prints markdown tables; see docs/BENCHMARKS.md.
//
//   node bench/scenarios.mjs [--runs 7] [--dat FILE] [--only 1,7]
//
// --only: just those scenarios (by id), for a look at one by hand; make bench
// runs them all.
//
// Environment: SLUICE, CATALOG (as for the tests); FLOOR_US, INVOKE_US, IDLE_RSS,
// IDLE_ANON, BINARY_BYTES, ENGINE_BYTES from bench/run.sh for the fixed-costs table.
//
// What is counted: the JSON-RPC request line the client writes and the
// response line it reads, for every tools/call of a task, with chars / 4 (the
// reference's method) and with the o200k_base BPE (gpt-tokenizer). The plain
// answer is computed here from the plain results; a program's answer must
// equal it.
import { readFileSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

import { startRaw, catalog, closeAll } from '../tests/e2e/helpers.mjs';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
	const i = args.indexOf(name);
	return i >= 0 ? args[i + 1] : dflt;
};
const RUNS = Number(opt('--runs', 7));
const DAT = opt('--dat', null);
const ONLY = opt('--only', null)?.split(',').map(Number);

const SERVERS = {
	github: catalog('github', { args: ['--backend', 'github', '--large-results'] }),
	jira: catalog('jira'),
	postgres: catalog('postgres'),
};
const GOVERNOR_ON = { enabled: true, maxTokens: 4000 };
const GOVERNOR_OFF = { enabled: false };

// ---- counting ---------------------------------------------------------------------------

const quarter = (chars) => Math.round(chars / 4);
const count = (lines) => {
	const chars = lines.reduce((n, l) => n + l.length, 0);
	return { chars, c4: quarter(chars), bpe: lines.reduce((n, l) => n + countTokens(l), 0) };
};
const median = (v) => {
	const s = [...v].sort((a, b) => a - b);
	return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// ---- a gateway, spoken to in raw JSON-RPC lines -----------------------------------------

class Gateway {
	constructor(label, sluice) {
		this.label = label;
		this.raw = startRaw({ servers: SERVERS, sluice: { logLevel: 'warn', audit: { file: '/dev/null' }, ...sluice } });
		this.nextId = 1;
	}

	async start() {
		await this.raw.initialize();
		this.toolsLine = (await this.request('tools/list', {}, 20000)).line;
		this.tools = JSON.parse(this.toolsLine).result.tools;
		return this;
	}

	// One request: resolves { line (response), sent (request line), msg, ms }.
	async request(method, params, ms = 60000) {
		const id = this.nextId++;
		const sent = JSON.stringify({ jsonrpc: '2.0', id, method, params });
		const t0 = performance.now();
		this.raw.sendLine(sent);
		const item = await this.raw.nextItem((m) => m.id === id && !('method' in m), ms);
		return { sent, line: item.line, msg: item.msg, ms: performance.now() - t0 };
	}

	async call(name, args) {
		const r = await this.request('tools/call', { name, arguments: args });
		if (r.msg.error) throw new Error(`${this.label}: ${name}: ${JSON.stringify(r.msg.error)}`);
		return r;
	}

	rss() {
		const status = readFileSync(`/proc/${this.raw.child.pid}/status`, 'utf8');
		const kib = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(status)[1]);
		return { rss: kib('VmRSS'), hwm: kib('VmHWM') };
	}

	close() {
		return this.raw.close();
	}
}

// A plain call as the table counts it: invoke_tool in router mode, or the
// namespaced tool in passthrough mode.
const plainCall = (gw, mode, c) =>
	mode === 'router'
		? gw.call('invoke_tool', { server: c.server, tool: c.tool, arguments: c.args })
		: gw.call(`${c.server}__${c.tool}`, c.args);

// The JSON a result shows: its structuredContent, else its first text block parsed.
const valueOf = (res) => res.structuredContent ?? JSON.parse(res.content[0].text);

// Runs a task's batches of plain calls (each batch may depend on what the
// previous ones returned), sequentially or each batch at once.
async function runPlain(gw, mode, sc, parallel) {
	const got = [];
	const t0 = performance.now();
	for (let b = 0; b < sc.batches.length; b++) {
		const calls = sc.batches[b](got.map((r) => r.msg.result));
		const one = async (c) => ({ ...(await plainCall(gw, mode, c)), tool: `${c.server}__${c.tool}` });
		if (parallel) got.push(...(await Promise.all(calls.map(one))));
		else for (const c of calls) got.push(await one(c));
	}
	const ms = performance.now() - t0;
	for (const r of got)
		if (r.msg.result.isError) throw new Error(`${sc.id}: plain call failed: ${r.line.slice(0, 300)}`);
	return { got, ms };
}

async function runCode(gw, sc) {
	const r = await gw.call('execute_code', { code: sc.program, ...(sc.language ? { language: sc.language } : {}) });
	if (r.msg.result.isError) throw new Error(`${sc.id}: program failed: ${r.line.slice(0, 500)}`);
	return r;
}

// ---- the scenarios --------------------------------------------------------------------------

const REPOS = ['api', 'web', 'infra', 'mobile', 'docs'];
const topThree = (lists) =>
	lists
		.flatMap((issues, i) => issues.filter((x) => typeof x === 'object').map((x) => [REPOS[i], x.number, x.title, x.comments]))
		.sort((a, b) => b[3] - a[3])
		.slice(0, 3);
const TOP3_PROGRAM =
	'const r=["api","web","infra","mobile","docs"];' +
	'const l=await Promise.all(r.map(repo=>tools.github.list_issues({owner:"acme",repo})));' +
	'return l.flatMap((x,i)=>x.map(s=>[r[i],s.number,s.title,s.comments])).sort((a,b)=>b[3]-a[3]).slice(0,3)';
// The same program as a model writes it in TypeScript, against the types
// describe_tools serves: an interface, annotations, a tuple type, `as`.
const TOP3_TS_PROGRAM =
	'interface Issue { number: number; title: string; comments: number }\n' +
	'type Row = [repo: string, number: number, title: string, comments: number];\n' +
	'const r: string[] = ["api", "web", "infra", "mobile", "docs"];\n' +
	'const l = (await Promise.all(r.map((repo: string) => tools.github.list_issues({ owner: "acme", repo })))) as Issue[][];\n' +
	'return l.flatMap((x: Issue[], i: number): Row[] => x.map((s: Issue): Row => [r[i], s.number, s.title, s.comments]))\n' +
	'\t.sort((a: Row, b: Row) => b[3] - a[3]).slice(0, 3);';
const TICKETS = { jql: 'project = OPS ORDER BY key ASC', max_results: 10 };
const QUERIES = ['SELECT * FROM products', 'SELECT id, email FROM users LIMIT 200', 'SELECT * FROM analytics.daily_revenue'];

// batches: functions of the results so far giving the next calls; answer: the
// answer from the plain results (as the model would work it out); check: the
// program's answer against it.
const SCENARIOS = [
	{
		id: 1,
		short: 'top 3', // for the chart
		name: 'top 3 issues by comments, 5 repositories x 300 issues',
		ref: { plain: 289982, code: 230 },
		governor: false,
		guardOff: true, // latency measured again with the injection guard off
		batches: [() => REPOS.map((repo) => ({ server: 'github', tool: 'list_issues', args: { owner: 'acme', repo } }))],
		answer: (results) => topThree(results.map(valueOf)),
		program: TOP3_PROGRAM,
	},
	{
		id: 2,
		short: 'governor', // for the chart
		name: 'the same, response governor on (4000 tokens per result)',
		ref: { plain: 18977, code: 206, note: 'wrong answer' },
		governor: true,
		truthFrom: 1, // the plain answer is computed from the cut results the model saw
		batches: [() => REPOS.map((repo) => ({ server: 'github', tool: 'list_issues', args: { owner: 'acme', repo } }))],
		answer: (results) => topThree(results.map((r) => JSON.parse(r.content[0].text))),
		program: TOP3_PROGRAM,
	},
	{
		id: 3,
		short: 'create_issue', // for the chart
		name: 'one small call (create_issue)',
		ref: { plain: 104, code: 101 },
		governor: false,
		batches: [() => [{ server: 'github', tool: 'create_issue', args: { owner: 'acme', repo: 'api', title: 'Rate limiter drops webhooks' } }]],
		answer: (results) => valueOf(results[0]).html_url,
		program: 'return (await tools.github.create_issue({owner:"acme",repo:"api",title:"Rate limiter drops webhooks"})).html_url',
	},
	{
		id: 4,
		short: '2 counts', // for the chart
		name: 'two small calls, both results needed (2 row counts)',
		ref: { plain: 178, code: 145 },
		governor: false,
		batches: [
			() => ['users', 'orders'].map((t) => ({ server: 'postgres', tool: 'query', args: { sql: `SELECT count(*) FROM ${t}` } })),
		],
		answer: (results) => results.map((r) => valueOf(r).rows[0].count),
		program:
			'return (await Promise.all(["users","orders"].map(t=>tools.postgres.query({sql:"SELECT count(*) FROM "+t})))).map(q=>q.rows[0].count)',
	},
	{
		id: 5,
		short: 'tickets vs PRs', // for the chart
		name: 'which of 10 tickets (jira) have no linked pull request (github)',
		governor: false,
		batches: [
			() => [{ server: 'jira', tool: 'search_issues', args: TICKETS }],
			([tickets]) =>
				valueOf(tickets).issues.map((t) => ({ server: 'github', tool: 'search_pull_requests', args: { q: t.key } })),
		],
		answer: ([tickets, ...prs]) =>
			valueOf(tickets)
				.issues.filter((t, i) => valueOf(prs[i]).total_count === 0)
				.map((t) => t.key),
		program:
			`const t=(await tools.jira.search_issues(${JSON.stringify(TICKETS).replace(/"(\w+)":/g, '$1:')})).issues;` +
			'const p=await Promise.all(t.map(x=>tools.github.search_pull_requests({q:x.key})));' +
			'return t.filter((x,i)=>!p[i].total_count).map(x=>x.key)',
	},
	{
		id: 6,
		short: '3 queries', // for the chart
		name: 'sum the row counts of 3 SQL queries',
		governor: false,
		batches: [() => QUERIES.map((sql) => ({ server: 'postgres', tool: 'query', args: { sql } }))],
		answer: (results) => results.reduce((n, r) => n + valueOf(r).rowCount, 0),
		program: `const q=${JSON.stringify(QUERIES)};return (await Promise.all(q.map(sql=>tools.postgres.query({sql})))).reduce((n,r)=>n+r.rowCount,0)`,
	},
	{
		id: 7,
		short: 'top 3, TS', // for the chart
		name: 'scenario 1 as a TypeScript program (language "ts")',
		governor: false,
		sameAnswerAs: 1, // its answer's tokens must equal that scenario's program's
		batches: [() => REPOS.map((repo) => ({ server: 'github', tool: 'list_issues', args: { owner: 'acme', repo } }))],
		answer: (results) => topThree(results.map(valueOf)),
		program: TOP3_TS_PROGRAM,
		language: 'ts',
	},
].filter((sc) => !ONLY || ONLY.includes(sc.id));

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// p50 of RUNS of each way, after one warm-up of each, in milliseconds.
async function latency(gw, sc) {
	const t = { seq: [], par: [], code: [] };
	for (let i = 0; i <= RUNS; i++) {
		const s = (await runPlain(gw, 'router', sc, false)).ms;
		const p = (await runPlain(gw, 'router', sc, true)).ms;
		const c = (await runCode(gw, sc)).ms;
		if (i === 0) continue;
		t.seq.push(s);
		t.par.push(p);
		t.code.push(c);
	}
	return { seq: median(t.seq), par: median(t.par), code: median(t.code) };
}

// ---- measuring ---------------------------------------------------------------------------------

async function listTokens(exposure, governor, codeMode) {
	const gw = await new Gateway(`${exposure}`, { exposure, governor, codeMode: { enabled: codeMode } }).start();
	const out = { ...count([gw.toolsLine]), n: gw.tools.length, tools: gw.tools };
	const ec = gw.tools.find((t) => t.name === 'execute_code');
	if (ec) out.executeCode = count([JSON.stringify(ec)]);
	await gw.close();
	return out;
}

async function main() {
	const gws = {
		router: await new Gateway('router', { exposure: 'router', governor: GOVERNOR_OFF, codeMode: { enabled: true } }).start(),
		pass: await new Gateway('passthrough', { exposure: 'passthrough', governor: GOVERNOR_OFF }).start(),
		routerGov: await new Gateway('router+governor', { exposure: 'router', governor: GOVERNOR_ON, codeMode: { enabled: true } }).start(),
		passGov: await new Gateway('passthrough+governor', { exposure: 'passthrough', governor: GOVERNOR_ON }).start(),
		// The injection guard scores every result, a program's too: its share of the latency.
		noGuard: await new Gateway('router, guard off', {
			exposure: 'router',
			governor: GOVERNOR_OFF,
			guard: { enabled: false },
			codeMode: { enabled: true },
		}).start(),
	};
	// Every upstream answers before anything is measured.
	for (const gw of Object.values(gws))
		for (const c of [
			{ server: 'github', tool: 'echo', args: {} },
			{ server: 'jira', tool: 'echo', args: {} },
			{ server: 'postgres', tool: 'echo', args: {} },
		])
			await plainCall(gw, gw === gws.pass || gw === gws.passGov ? 'pass' : 'router', c);
	const idle = Object.fromEntries(Object.entries(gws).map(([k, gw]) => [k, gw.rss()]));

	// The definitions a one-task session carries, per mode, as the scenarios ran.
	const defs = {
		false: {
			router: await listTokens('router', GOVERNOR_OFF, false),
			pass: await listTokens('passthrough', GOVERNOR_OFF, false),
			code: await listTokens('code', GOVERNOR_OFF, true),
		},
		true: {
			router: await listTokens('router', GOVERNOR_ON, false),
			pass: await listTokens('passthrough', GOVERNOR_ON, false),
			code: await listTokens('code', GOVERNOR_ON, true),
		},
	};

	const rows = [];
	const truth = {};
	for (const sc of SCENARIOS) {
		const [rgw, pgw] = sc.governor ? [gws.routerGov, gws.passGov] : [gws.router, gws.pass];
		// Tokens and answers, from one run of each.
		const plain = (await runPlain(rgw, 'router', sc, false)).got;
		const pass = (await runPlain(pgw, 'pass', sc, false)).got;
		const code = await runCode(rgw, sc);
		const plainAnswer = sc.answer(plain.map((r) => r.msg.result));
		const passAnswer = sc.answer(pass.map((r) => r.msg.result));
		truth[sc.id] = plainAnswer;
		const expected = sc.truthFrom ? truth[sc.truthFrom] : plainAnswer;
		const text = code.msg.result.content[0].text;
		let codeAnswer;
		try {
			codeAnswer = JSON.parse(text);
		} catch {
			codeAnswer = text;
		}
		const times = await latency(rgw, sc);
		const unguarded = sc.guardOff ? await latency(gws.noGuard, sc) : null;
		const d = defs[sc.governor];
		// The definitions of just the tools the plain calls used, as passthrough lists them.
		const used = new Set(pass.map((r) => r.tool));
		const usedDefs = count(d.pass.tools.filter((t) => used.has(t.name)).map((t) => JSON.stringify(t)));
		rows.push({
			usedDefs,
			sc,
			calls: plain.length,
			turns: sc.batches.length,
			plain: count(plain.flatMap((r) => [r.sent, r.line])),
			pass: count(pass.flatMap((r) => [r.sent, r.line])),
			code: count([code.sent, code.line]),
			// The answer as the model reads it: the result, without the
			// JSON-RPC envelope (whose id differs between scenarios).
			answer: count([JSON.stringify(code.msg.result)]),
			defs: d,
			times,
			unguarded,
			plainOk: same(plainAnswer, expected),
			passOk: same(passAnswer, expected),
			codeOk: same(codeAnswer, expected),
			expected,
			plainAnswer,
			codeAnswer,
		});
	}
	// A program in another language must answer in the same tokens.
	for (const r of rows) {
		const ref = r.sc.sameAnswerAs && rows.find((x) => x.sc.id === r.sc.sameAnswerAs);
		if (!ref) continue;
		r.sameAs = { id: ref.sc.id, bpe: ref.answer.bpe, ok: ref.answer.bpe === r.answer.bpe };
		if (!r.sameAs.ok) r.codeOk = false;
	}
	const peak = Object.fromEntries(Object.entries(gws).map(([k, gw]) => [k, gw.rss()]));
	const modes = {
		passthrough: await listTokens('passthrough', GOVERNOR_ON, false),
		hybrid: await listTokens('hybrid', GOVERNOR_ON, false),
		router: await listTokens('router', GOVERNOR_ON, false),
		code: await listTokens('code', GOVERNOR_ON, true),
		'router + codeMode.enabled': await listTokens('router', GOVERNOR_ON, true),
	};
	await Promise.all(Object.values(gws).map((gw) => gw.close()));
	await closeAll();
	print(rows, modes, idle, peak);
	if (DAT) writeDat(rows);
	const wrong = rows.filter((r) => !r.codeOk);
	if (wrong.length) {
		for (const r of wrong)
			console.error(
				r.sameAs && !r.sameAs.ok
					? `scenario ${r.sc.id}: its answer is ${r.answer.bpe} o200k tokens, scenario ${r.sameAs.id}'s ${r.sameAs.bpe}`
					: `scenario ${r.sc.id}: the program answered ${JSON.stringify(r.codeAnswer)}, expected ${JSON.stringify(r.expected)}`,
			);
		process.exitCode = 1;
	}
}

// ---- output ----------------------------------------------------------------------------------

const fmt = (n) => n.toLocaleString('en-US');
const ms = (v) => v.toFixed(1);
const yes = (ok) => (ok ? 'yes' : '**no**');

// Columns after the first are numbers, right-aligned, unless left is set.
function table(head, body, left = false) {
	console.log(`| ${head.join(' | ')} |`);
	console.log(`|${head.map((h, i) => (i && !left ? '---:' : '---')).join('|')}|`);
	for (const r of body) console.log(`| ${r.join(' | ')} |`);
	console.log();
}

function print(rows, modes, idle, peak) {
	console.log('## Scenarios: tokens on the wire');
	console.log();
	console.log('Request and response lines of every tools/call of the task, chars/4 and o200k_base. Plain:');
	console.log('invoke_tool in router mode (passthrough calls beside it); code mode: one execute_code. Governor');
	console.log('off except scenario 2. "ref" is the design spike\'s table (chars/4).');
	console.log();
	table(
		['scenario', 'calls', 'plain chars/4', 'plain o200k', 'passthrough chars/4', 'passthrough o200k', 'code chars/4', 'code o200k', 'ref plain / code', 'code / plain (o200k)'],
		rows.map((r) => [
			`${r.sc.id}. ${r.sc.name}`,
			r.calls,
			fmt(r.plain.c4),
			fmt(r.plain.bpe),
			fmt(r.pass.c4),
			fmt(r.pass.bpe),
			fmt(r.code.c4),
			fmt(r.code.bpe),
			r.sc.ref ? `${fmt(r.sc.ref.plain)} / ${fmt(r.sc.ref.code)}${r.sc.ref.note ? ` (${r.sc.ref.note})` : ''}` : '-',
			`${((100 * r.code.bpe) / r.plain.bpe).toFixed(1)}%`,
		]),
	);

	for (const r of rows.filter((x) => x.sameAs))
		console.log(
			`Scenario ${r.sc.id}'s answer (the execute_code result) is ${fmt(r.answer.bpe)} o200k tokens, scenario ` +
				`${r.sameAs.id}'s ${fmt(r.sameAs.bpe)}: ${r.sameAs.ok ? 'equal' : '**they differ**'}.`,
		);
	if (rows.some((x) => x.sameAs)) console.log();

	console.log('## Scenarios: with the tool definitions of a one-task session');
	console.log();
	console.log('The same plus the definitions the session carries, o200k_base (chars/4 in brackets). Least:');
	console.log('plain with only the definitions of the tools it calls (passthrough), code mode with only');
	console.log('execute_code. Whole lists: the tools/list response line of the mode (router for invoke_tool,');
	console.log('passthrough, exposure "code"). Last column: the reference\'s way (+202% in its scenario 3),');
	console.log('code mode with its definition against plain calls without any.');
	console.log();
	const withDefs = (c, d) => `${fmt(c.bpe + d.bpe)} (${fmt(c.c4 + d.c4)})`;
	const pct = (a, b) => {
		const v = Math.round((100 * (a - b)) / b);
		return `${v > 0 ? '+' : ''}${v}%`;
	};
	table(
		[
			'scenario',
			'plain + its tools',
			'code + execute_code',
			'plain, router list',
			'passthrough list',
			'code, code-mode list',
			'code vs plain, least',
			'code + execute_code vs plain alone',
		],
		rows.map((r) => [
			`${r.sc.id}`,
			withDefs(r.pass, r.usedDefs),
			withDefs(r.code, r.defs.code.executeCode),
			withDefs(r.plain, r.defs.router),
			withDefs(r.pass, r.defs.pass),
			withDefs(r.code, r.defs.code),
			pct(r.code.bpe + r.defs.code.executeCode.bpe, r.pass.bpe + r.usedDefs.bpe),
			pct(r.code.bpe + r.defs.code.executeCode.bpe, r.pass.bpe),
		]),
	);

	console.log(`## Scenarios: latency, turns, correctness`);
	console.log();
	console.log(`p50 of ${RUNS} runs, milliseconds, client to gateway and back (plain through invoke_tool;`);
	console.log('parallel: each batch of independent calls at once). Turns: model round trips. Correct: the');
	console.log('answer equals the one computed from whole plain results.');
	console.log();
	table(
		['scenario', 'plain seq', 'plain parallel', 'code mode', 'turns plain / code', 'plain correct', 'code correct'],
		rows.flatMap((r) => {
			const plainOk = r.sc.truthFrom ? yes(r.plainOk && r.passOk) : r.plainOk && r.passOk ? 'reference' : '**router and passthrough differ**';
			const row = (label, t) => [label, ms(t.seq), ms(t.par), ms(t.code), `${r.turns} / 1`, plainOk, yes(r.codeOk)];
			return [row(`${r.sc.id}`, r.times), ...(r.unguarded ? [row(`${r.sc.id}, guard off`, r.unguarded)] : [])];
		}),
	);

	console.log('## Scenarios: answers');
	console.log();
	const show = (v) => {
		const j = JSON.stringify(v);
		return '`' + (j.length > 150 ? j.slice(0, 147) + '...' : j) + '`';
	};
	table(
		['scenario', 'answer (from whole plain results)', 'code mode', 'plain, when it differs'],
		rows.map((r) => [
			`${r.sc.id}`,
			show(r.expected),
			r.codeOk ? 'the same' : show(r.codeAnswer),
			same(r.plainAnswer, r.expected) ? '' : show(r.plainAnswer),
		]),
		true,
	);

	console.log('## Fixed costs');
	console.log();
	const e = process.env;
	const body = Object.entries(modes).map(([k, m]) => [
		`tools/list, exposure ${k} (${m.n} tools; 3 servers)`,
		`${fmt(m.bpe)} o200k, ${fmt(m.c4)} chars/4`,
	]);
	const ec = modes.code.executeCode;
	body.push(['execute_code definition (goal: at most 150 tokens)', `${fmt(ec.bpe)} o200k, ${fmt(ec.c4)} chars/4`]);
	if (e.FLOOR_US && e.INVOKE_US)
		body.push([
			'sandbox floor: execute_code("return 1") against a small invoke_tool, p50',
			`${e.FLOOR_US} us against ${e.INVOKE_US} us (+${(Number(e.FLOOR_US) - Number(e.INVOKE_US)).toFixed(0)} us)`,
		]);
	if (e.BINARY_BYTES)
		body.push([
			'stripped binary',
			`${fmt(Number(e.BINARY_BYTES))} bytes${e.ENGINE_BYTES ? `, of which the JS engine ${fmt(Number(e.ENGINE_BYTES))}` : ''}`,
		]);
	const kib = (v) => `${fmt(v)} KiB`;
	if (e.IDLE_RSS)
		body.push([
			'gateway RSS idle, one upstream, after the handshake (goal: at most 4096 KiB)',
			`${kib(Number(e.IDLE_RSS))}${e.IDLE_ANON ? `, of which private (anonymous) ${kib(Number(e.IDLE_ANON))}` : ''}`,
		]);
	body.push([
		'gateway RSS, router + code mode: idle / peak during the scenarios',
		`${kib(idle.router.rss)} / ${kib(peak.router.hwm)}`,
	]);
	body.push([
		'gateway RSS, router + code mode, governor on: idle / peak',
		`${kib(idle.routerGov.rss)} / ${kib(peak.routerGov.hwm)}`,
	]);
	body.push(['gateway RSS, passthrough: idle / peak', `${kib(idle.pass.rss)} / ${kib(peak.pass.hwm)}`]);
	table(['what', 'measured'], body, true);
}

// Data for the chart: scenario, plain o200k, code o200k.
function writeDat(rows) {
	writeFileSync(
		DAT,
		'# scenario plain_o200k code_o200k\n' + rows.map((r) => `"${r.sc.id}. ${r.sc.short}" ${r.plain.bpe} ${r.code.bpe}`).join('\n') + '\n',
	);
}

main().catch(async (e) => {
	console.error(e.stack ?? e);
	await closeAll();
	process.exit(1);
});
