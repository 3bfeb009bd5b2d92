// Tool discovery end to end: search_tools' ranked signature lines and
// describe_tools' .d.ts modules through the official SDK client; the ranking
// of 30 queries written from the catalog's tools; every declaration checked
// by the real TypeScript compiler (tsc --noEmit --strict) over the catalog,
// server-everything, server-filesystem and the tricky schema corpus; and the
// size of tools/list in each exposure mode and of a search answer.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';

import {
	connect,
	catalog,
	everything,
	closeAll,
	eventually,
	execCode,
	textOf,
	jsonOf,
	searchHits,
	tinyServer,
	toolsWhen,
	REPO,
} from './helpers.mjs';

after(closeAll);

const FIXTURES = path.join(REPO, 'tests', 'fixtures');
const TSC = path.join(REPO, 'node_modules', '.bin', 'tsc');
const FILESYSTEM = path.join(REPO, 'node_modules', '.bin', 'mcp-server-filesystem');
const SERVERS = {
	github: catalog('github'),
	jira: catalog('jira'),
	slack: catalog('slack'),
	postgres: catalog('postgres'),
	everything: everything(),
};

// The tricky schemas, each served as one tool's inputSchema and outputSchema.
const corpus = readdirSync(path.join(FIXTURES, 'schemas'))
	.filter((f) => f.endsWith('.json'))
	.sort()
	.map((f) => ({ name: f.replace(/\.json$/, ''), schema: JSON.parse(readFileSync(path.join(FIXTURES, 'schemas', f), 'utf8')) }));
const UNTRANSLATABLE = ['external-ref', 'missing-ref', 'not-translatable', 'ref-cycle'];
const corpusServer = () =>
	tinyServer({
		name: 'corpus',
		tools: JSON.stringify([
			...corpus.map(({ name, schema }) => ({ name, description: `Fixture ${name}.`, inputSchema: schema, outputSchema: schema })),
			// Two tools with one identifier: programs must use the raw names.
			...['dup-name', 'dup_name'].map((name) => ({ name, description: 'Twin tool.', inputSchema: { type: 'object' } })),
			// Line and paragraph separators, which end a "//" comment line.
			{
				name: 'separators',
				description: 'Reads a line.\u2028Then another.\u2029And\u0085more.',
				inputSchema: { type: 'object', properties: { 'a\u2028b': { type: 'string', description: 'One\u2028two.' } } },
			},
		]),
		call: `(params, ok) => ok({ content: [{ type: 'text', text: 'ok' }] })`,
	});

const gws = {};
const fsDir = mkdtempSync(path.join(os.tmpdir(), 'sluice-fs-'));
after(() => rmSync(fsDir, { recursive: true, force: true }));

const call = (gw, name, args) => gw.client.callTool({ name, arguments: args });
const describeText = async (gw, server, tools) => textOf(await call(gw, 'describe_tools', { server, ...(tools ? { tools } : {}) }));
const countOf = (dts) => Number(/^\/\/ (\d+) tools? of server/.exec(dts)?.[1] ?? 0);

before(async () => {
	[gws.router, gws.code, gws.extra, gws.passthrough, gws.hybrid] = await Promise.all([
		connect({ servers: SERVERS, sluice: { exposure: 'router' } }),
		connect({ servers: SERVERS, sluice: { exposure: 'code' } }),
		connect({
			servers: {
				'git-hub': catalog('jira'),
				filesystem: { command: FILESYSTEM, args: [fsDir] },
				corpus: corpusServer(),
			},
			sluice: { exposure: 'code' },
		}),
		connect({ servers: SERVERS, sluice: { exposure: 'passthrough' } }),
		connect({ servers: SERVERS, sluice: { exposure: 'hybrid' } }),
	]);
	// Upstreams come up asynchronously: wait until each has all its tools.
	const want = { github: 11, jira: 10, slack: 11, postgres: 10, everything: 13 };
	const wantExtra = { git_hub: 10, filesystem: 14, corpus: corpus.length + 3 };
	await eventually(
		async () => {
			for (const [s, n] of Object.entries(want))
				for (const gw of [gws.router, gws.code]) if (countOf(await describeText(gw, s)) < n) return false;
			for (const [s, n] of Object.entries(wantExtra)) if (countOf(await describeText(gws.extra, s)) < n) return false;
			return true;
		},
		20000,
		250,
		'every upstream of every gateway',
	);
	const complete = (tools) => ['everything__get-sum', 'postgres__query', 'slack__upload_file'].every((n) => tools.some((t) => t.name === n));
	await toolsWhen(gws.passthrough.client, complete, 20000);
	await toolsWhen(gws.hybrid.client, complete, 20000);
});
after(() => Promise.all(Object.values(gws).map((g) => g.close())));

// Runs tsc --noEmit --strict over the .ts files of dir; resolves to its output.
function tsc(dir) {
	const files = readdirSync(dir).map((f) => path.join(dir, f));
	return new Promise((resolve) => {
		execFile(
			TSC,
			['--noEmit', '--strict', '--target', 'es2022', '--lib', 'es2022', '--module', 'es2022', '--moduleResolution', 'bundler', ...files],
			{ timeout: 120000 },
			(err, stdout, stderr) => resolve({ code: err ? (err.code ?? 1) : 0, out: stdout + stderr }),
		);
	});
}

// The lines and declarations of a search answer as one module.
function searchModule(text) {
	const [, decls = ''] = text.split(/\n\n/);
	const byServer = new Map();
	for (const h of searchHits({ content: [{ type: 'text', text }] })) {
		const prefix = `tools.${h.server}.`;
		const member = h.line.slice(prefix.length, h.line.indexOf('  // '));
		if (!byServer.has(h.server)) byServer.set(h.server, new Map());
		byServer.get(h.server).set(h.tool, member);
	}
	const body = [...byServer].map(([s, m]) => `  ${s}: {\n${[...m.values()].map((x) => `    ${x};`).join('\n')}\n  };`).join('\n');
	return `${decls}\nexport declare const tools: {\n${body}\n};\n`;
}

describe('search_tools', () => {
	const LINE = /^tools\.[A-Za-z_$][\w$]*\.[A-Za-z_$][\w$]*\(args: .*\): Promise<.+>( \/\* inferred \*\/)?  \/\/ .*$/;

	test('each hit is one signature line a program can use', async () => {
		const r = await call(gws.router, 'search_tools', { query: 'get one issue by number' });
		assert.ok(!r.isError, textOf(r));
		const lines = textOf(r).split('\n').filter(Boolean);
		assert.equal(lines.length, 5, 'k defaults to 5');
		for (const l of lines) assert.match(l, LINE);
		assert.equal(
			lines[0],
			'tools.github.get_issue(args: {owner: string; repo: string; issue_number: number}): Promise<GetIssueResult>  // Get one issue of a repository by number.',
		);
	});

	test('k is capped at 20; server narrows; detail full declares the named types', async () => {
		assert.equal(searchHits(await call(gws.router, 'search_tools', { query: 'list get', k: 50 })).length, 20);
		assert.equal(searchHits(await call(gws.router, 'search_tools', { query: 'list', k: 1 })).length, 1);
		const jira = searchHits(await call(gws.router, 'search_tools', { query: 'issue comment', k: 20, server: 'jira' }));
		assert.ok(jira.length > 0 && jira.every((h) => h.server === 'jira'), JSON.stringify(jira));
		const sig = textOf(await call(gws.router, 'search_tools', { query: 'get issue', k: 1 }));
		assert.doesNotMatch(sig, /interface/);
		const full = textOf(await call(gws.router, 'search_tools', { query: 'get issue', k: 1, detail: 'full' }));
		assert.ok(full.startsWith(sig.trimEnd()), full);
		assert.match(full, /\n\ninterface GetIssueResult \{\n {2}id\?: number;\n {2}\/\*\* Issue number\. \*\/\n {2}number: number;/);
		assert.match(full, /state: "open" \| "closed";/);
	});

	test('bad arguments get a clear isError answer', async () => {
		for (const args of [{}, { query: 'x', detail: 'everything' }, { query: 'x', server: 7 }]) {
			const r = await call(gws.router, 'search_tools', args);
			assert.equal(r.isError, true, JSON.stringify(args));
			assert.match(textOf(r), /search_tools needs a query string/);
		}
		const r = await call(gws.router, 'search_tools', { query: 'x', server: 'nosuch' });
		assert.equal(r.isError, true);
		assert.match(textOf(r), /unknown server 'nosuch'/);
	});

	test('the identifiers are the ones a program calls', async () => {
		// git-hub -> git_hub; everything's get-sum -> get_sum.
		const [sum] = searchHits(await call(gws.code, 'search_tools', { query: 'sum of two numbers', k: 1 }));
		assert.equal(`${sum.server}.${sum.tool}`, 'everything.get_sum');
		const [ticket] = searchHits(await call(gws.extra, 'search_tools', { query: 'create a ticket', k: 1 }));
		assert.equal(`${ticket.server}.${ticket.tool}`, 'git_hub.create_ticket');
		const r = await execCode(gws.code.client, `return await tools.${sum.server}.${sum.tool}({a: 2, b: 40});`);
		assert.match(r.text, /42/);
		const e = await execCode(gws.extra.client, `const t = await tools.${ticket.server}.list_projects({}); return Array.isArray(t) || typeof t;`);
		assert.equal(e.isError, false, e.text);
		// Two tools sharing an identifier are named by their raw names.
		const twins = searchHits(await call(gws.extra, 'search_tools', { query: 'twin tool', k: 2 }));
		assert.deepEqual(twins.map((h) => h.tool).sort(), ['dup-name', 'dup_name']);
		assert.ok(twins.some((h) => h.line.startsWith('tools.corpus["dup-name"](args: ')), twins[0].line);
		const t = await execCode(gws.extra.client, `return await tools.corpus["dup-name"]({});`);
		assert.equal(t.text, 'ok');
		assert.match(await describeText(gws.extra, 'corpus', ['dup-name', 'dup_name']), /^ {4}"dup-name"\(args: DupNameArgs\): Promise<string>;$/m);
		// invoke_tool (router mode) takes the same identifiers as the raw names.
		const [r2] = searchHits(await call(gws.router, 'search_tools', { query: 'sum of two numbers', k: 1 }));
		const sum2 = await call(gws.router, 'invoke_tool', { server: r2.server, tool: r2.tool, arguments: { a: 2, b: 3 } });
		assert.match(textOf(sum2), /The sum of 2 and 3 is 5/);
		const raw = await call(gws.router, 'invoke_tool', { server: 'everything', tool: 'get-sum', arguments: { a: 1, b: 1 } });
		assert.match(textOf(raw), /The sum of 1 and 1 is 2/);
	});

	test('30 queries written from the catalog: the expected tool is in the top 3 for at least 27', async () => {
		const queries = JSON.parse(readFileSync(path.join(FIXTURES, 'search-queries.json'), 'utf8'));
		assert.equal(queries.length, 30);
		let top3 = 0,
			top1 = 0;
		const misses = [];
		for (const [q, want] of queries) {
			const hits = searchHits(await call(gws.router, 'search_tools', { query: q })).map((h) => `${h.server}.${h.tool}`);
			const rank = hits.indexOf(want);
			if (rank === 0) top1++;
			if (rank >= 0 && rank < 3) top3++;
			else misses.push(`${q} -> ${hits.slice(0, 3).join(', ')} (want ${want})`);
		}
		console.log(`search ranking: ${top3}/30 in the top 3, ${top1}/30 first`);
		assert.ok(top3 >= 27, `${top3}/30 in the top 3; misses:\n${misses.join('\n')}`);
	});
});

describe('describe_tools and inferred result types', () => {
	test('a .d.ts module for the chosen tools; unknown names are refused', async () => {
		const dts = await describeText(gws.router, 'github', ['merge_pull_request', 'search_code']);
		assert.equal(countOf(dts), 2);
		assert.match(dts, /^export interface MergePullRequestArgs \{$/m);
		assert.match(dts, /^ {4}merge_pull_request\(args: MergePullRequestArgs\): Promise<MergePullRequestResult>;$/m);
		assert.match(dts, /^ {4}\/\*\* Merge an open pull request into its base branch\. \*\/$/m);
		assert.doesNotMatch(dts, /list_issues/);
		const bad = await call(gws.router, 'describe_tools', { server: 'github', tools: ['nope'] });
		assert.equal(bad.isError, true);
		assert.match(textOf(bad), /no tool 'nope'/);
		const none = await call(gws.router, 'describe_tools', { server: 'nosuch' });
		assert.equal(none.isError, true);
		assert.match(textOf(none), /unknown server 'nosuch'/);
		assert.equal((await call(gws.router, 'describe_tools', { tools: 'x' })).isError, true);
	});

	test('one unknown name among three: the known ones are described, the unknown named with "did you mean"', async () => {
		const r = await call(gws.code, 'describe_tools', { server: 'github', tools: ['merge_pull_request', 'list_isues', 'search_code'] });
		assert.ok(!r.isError, textOf(r));
		const dts = textOf(r);
		assert.equal(countOf(dts), 2);
		assert.match(dts, /^\/\/ server 'github' has no tool 'list_isues' \(or it is hidden\); did you mean 'list_issues'\?$/m);
		assert.match(dts, /^ {4}merge_pull_request\(args: MergePullRequestArgs\)/m);
		assert.match(dts, /^ {4}search_code\(args: /m);
		// Nothing close: named, no guess; nothing known at all: an error, with the guess.
		const far = textOf(await call(gws.code, 'describe_tools', { server: 'github', tools: ['get_issue', 'zzzzzz'] }));
		assert.match(far, /^\/\/ server 'github' has no tool 'zzzzzz' \(or it is hidden\)$/m);
		const all = await call(gws.code, 'describe_tools', { server: 'github', tools: ['get_isue'] });
		assert.equal(all.isError, true);
		assert.equal(textOf(all), "server 'github' has no tool 'get_isue' (or it is hidden); did you mean 'get_issue'?");
	});

	test('search_tools with no match points at what code mode offers', async () => {
		const none = await call(gws.code, 'search_tools', { query: 'zzqqxxnothing' });
		assert.ok(!none.isError);
		assert.equal(textOf(none), 'no tools match; try a broader query, or describe_tools with a server name to see all its tools');
		assert.doesNotMatch(textOf(none), /list_servers|list_tools/);
		const router = await call(gws.router, 'search_tools', { query: 'zzqqxxnothing' });
		assert.equal(textOf(router), 'no tools match; list_servers and list_tools show them all');
	});

	test('a tool without outputSchema gets its result type from its first results, marked inferred', async () => {
		const before = searchHits(await call(gws.code, 'search_tools', { query: 'list pull requests', k: 1 }))[0];
		assert.equal(before.tool, 'list_pull_requests');
		assert.match(before.line, /: Promise<unknown>  \/\//);
		// Before any call, the module says when the type will be known.
		assert.match(await describeText(gws.code, 'github', ['list_pull_requests']),
			/The result type is unknown until the tool has answered a call\. \*\/\n {4}list_pull_requests\(args: [^)]*\): Promise<unknown>;/);
		const r = await execCode(gws.code.client, `const p = await tools.github.list_pull_requests({owner: 'acme', repo: 'api', per_page: 2}); return p.length;`);
		assert.equal(r.text, '2');
		const after = searchHits(await call(gws.code, 'search_tools', { query: 'list pull requests', k: 1, detail: 'full' }))[0];
		assert.match(after.line, /: Promise<PullRequest\[\]> \/\* inferred \*\/  \/\//);
		const full = textOf(await call(gws.code, 'search_tools', { query: 'list pull requests', k: 1, detail: 'full' }));
		assert.match(full, /interface PullRequest \{[^}]*\n {2}number: number;/);
		const dts = await describeText(gws.code, 'github', ['list_pull_requests']);
		assert.match(dts, /The result type is inferred from 1 result\./);
		assert.doesNotMatch(dts, /unknown until/);
	});
});

describe('line separators in descriptions', () => {
	test('no raw U+2028, U+2029 or U+0085 reaches a signature line or a module', async () => {
		const RAW = /[\u2028\u2029\u0085]/;
		const r = textOf(await call(gws.extra, 'search_tools', { query: 'reads a line then another', server: 'corpus', k: 1 }));
		assert.doesNotMatch(r, RAW);
		assert.equal(r.trimEnd().split('\n').length, 1, r);
		assert.match(r, /^tools\.corpus\.separators\(args: \{"a\\u2028b"\?: string\}\): Promise<unknown>  \/\/ Reads a line\. Then another\.$/m);
		const dts = await describeText(gws.extra, 'corpus', ['separators']);
		assert.doesNotMatch(dts, RAW);
		assert.match(dts, /^ {4}\/\*\* Reads a line\. Then another\. And more\. The result type is unknown until the tool has answered a call\. \*\/$/m);
		assert.match(dts, /^ {2}\/\*\* One two\. \*\/$/m);
	});
});

describe('tsc --noEmit --strict accepts every declaration', () => {
	test('catalog, server-everything, server-filesystem, the tricky corpus and search answers', async () => {
		// One inferred type in the mix: list_issues after a call.
		const r = await execCode(gws.code.client, `return (await tools.github.list_issues({owner: 'acme', repo: 'web', per_page: 1})).length;`);
		assert.equal(r.text, '1');
		const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-tsc-'));
		try {
			for (const s of Object.keys(SERVERS)) writeFileSync(path.join(dir, `${s}.d.ts`), await describeText(gws.code, s));
			for (const s of ['filesystem', 'corpus']) writeFileSync(path.join(dir, `${s}.d.ts`), await describeText(gws.extra, s));
			const queries = ['issues', 'pull request', 'ticket', 'channel messages', 'table', 'structured sum'];
			for (const [i, q] of queries.entries()) {
				const text = textOf(await call(gws.code, 'search_tools', { query: q, k: 20, detail: 'full' }));
				writeFileSync(path.join(dir, `search${i}.d.ts`), searchModule(text));
			}
			const corpusDts = readFileSync(path.join(dir, 'corpus.d.ts'), 'utf8');
			for (const name of UNTRANSLATABLE) {
				const id = name.replace(/-/g, '_');
				assert.match(corpusDts, new RegExp(`^ {4}${id}\\(args: unknown\\): Promise<unknown>;$`, 'm'), name);
			}
			for (const { name } of corpus.filter((c) => !UNTRANSLATABLE.includes(c.name)))
				assert.doesNotMatch(corpusDts, new RegExp(`^ {4}${name.replace(/-/g, '_')}\\(args: unknown\\)`, 'm'), name);
			// A program's view of the types: right uses compile, wrong ones must not.
			writeFileSync(
				path.join(dir, 'use.ts'),
				`import { tools as gh } from './github';
import { tools as ev } from './everything';
import { tools as fsys } from './filesystem';
import { tools as co } from './corpus';
import { tools as s0 } from './search0';

export async function use(): Promise<number> {
	const issue = await gh.github.get_issue({ owner: 'acme', repo: 'api', issue_number: 1 });
	const state: 'open' | 'closed' = issue.state;
	const issues = await gh.github.list_issues({ owner: 'acme', repo: 'api', state: 'open' });
	const comments: number = issues[0].comments;
	// @ts-expect-error issue_number is a number
	await gh.github.get_issue({ owner: 'acme', repo: 'api', issue_number: '1' });
	// @ts-expect-error repo is required
	await gh.github.list_issues({ owner: 'acme' });
	// @ts-expect-error not one of the states
	await gh.github.list_issues({ owner: 'acme', repo: 'api', state: 'merged' });
	const w = await ev.everything.get_structured_content({ location: 'Chicago' });
	// @ts-expect-error not one of the cities
	await ev.everything.get_structured_content({ location: 'Paris' });
	const f = await fsys.filesystem.read_text_file({ path: '/tmp/x' });
	const tree = await co.corpus.recursive_tree({ value: 1, children: [{ value: 2, children: [] }] });
	const kids: number = tree.children.length;
	const found = await s0.github.get_issue({ owner: 'a', repo: 'b', issue_number: 2 });
	return state.length + comments + w.temperature + f.content.length + kids + found.number;
}
`,
			);
			const out = await tsc(dir);
			assert.equal(out.code, 0, out.out);
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});
});

describe('tokens', () => {
	const size = (v) => {
		const s = typeof v === 'string' ? v : JSON.stringify(v);
		return { chars: s.length, quarter: Math.ceil(s.length / 4), o200k: encode(s).length };
	};

	test('tools/list in each exposure mode, and a search answer', async () => {
		const rows = [];
		for (const mode of ['passthrough', 'hybrid', 'router', 'code']) {
			const { tools } = await gws[mode].client.listTools();
			rows.push([`tools/list ${mode} (${tools.length} tools)`, size({ tools })]);
		}
		const answer = textOf(await call(gws.router, 'search_tools', { query: 'open issues of a repository' }));
		rows.push(['search_tools answer (k 5)', size(answer)]);
		const full = textOf(await call(gws.router, 'search_tools', { query: 'open issues of a repository', detail: 'full' }));
		rows.push(['search_tools answer (k 5, full)', size(full)]);
		const dts = await describeText(gws.router, 'github');
		rows.push(['describe_tools github', size(dts)]);
		const { tools: codeTools } = await gws.code.client.listTools();
		const exec = codeTools.find((t) => t.name === 'execute_code');
		rows.push(['execute_code description', size(exec.description)]);
		console.log('tokens (servers: github, jira, slack, postgres, everything; o200k and chars/4):');
		for (const [what, s] of rows) console.log(`  ${what.padEnd(40)} ${String(s.o200k).padStart(6)} o200k ${String(s.quarter).padStart(6)} chars/4`);
		const get = (what) => rows.find(([w]) => w.startsWith(what))[1];
		assert.ok(get('tools/list router').o200k * 5 < get('tools/list passthrough').o200k, 'router lists far less');
		assert.ok(get('search_tools answer (k 5)').o200k < 1000, 'five signature lines stay small');
		assert.ok(get('execute_code description').quarter <= 150, 'execute_code description <= 150 tokens');
	});
});
