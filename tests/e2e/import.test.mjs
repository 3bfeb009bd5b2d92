// sluice import, install and uninstall on fixture configs of every MCP client
// (tests/fixtures/clients/), in a temp HOME: the real user's files are never
// touched. docs/IMPORT.md.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import {
	mkdtempSync, mkdirSync, copyFileSync, readFileSync, writeFileSync, existsSync, statSync, rmSync,
	symlinkSync, lstatSync, realpathSync,
} from 'node:fs';
import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { REPO, SLUICE, CATALOG, withTimeout } from './helpers.mjs';

const FIX = path.join(REPO, 'tests', 'fixtures', 'clients');
const roots = [];
after(() => {
	for (const r of roots) rmSync(r, { recursive: true, force: true });
});

// Where each fixture goes: its client, the file under the temp root, and
// whether it is a project file (under proj/, the current directory).
const PLACES = [
	{ client: 'claude-desktop', fixture: 'claude_desktop_config.json', at: 'home/.config/Claude/claude_desktop_config.json' },
	{ client: 'claude-code', fixture: 'claude.json', at: 'home/.claude.json' },
	{ client: 'claude-code', fixture: 'mcp.json.claude-code', at: 'proj/.mcp.json' },
	{ client: 'cursor', fixture: 'cursor-mcp.json', at: 'home/.cursor/mcp.json' },
	{ client: 'vscode', fixture: 'vscode-mcp.json', at: 'proj/.vscode/mcp.json' },
	{ client: 'windsurf', fixture: 'windsurf-mcp_config.json', at: 'home/.codeium/windsurf/mcp_config.json' },
	{ client: 'zed', fixture: 'zed-settings.json', at: 'home/.config/zed/settings.json' },
];

// A temp root with home/ and proj/, every fixture in its place.
function machine(places = PLACES) {
	const root = mkdtempSync(path.join(os.tmpdir(), 'sluice-import-'));
	roots.push(root);
	mkdirSync(path.join(root, 'proj'), { recursive: true });
	for (const p of places) {
		mkdirSync(path.dirname(path.join(root, p.at)), { recursive: true });
		copyFileSync(path.join(FIX, p.fixture), path.join(root, p.at));
	}
	return {
		root,
		home: path.join(root, 'home'),
		proj: path.join(root, 'proj'),
		file: (at) => path.join(root, at),
		config: path.join(root, 'home', '.config', 'sluice', 'config.json'),
	};
}

// Runs sluice in the project directory with HOME in the temp root and no
// XDG_CONFIG_HOME or SLUICE_CONFIG of the caller's.
function run(m, args, env = {}) {
	const base = { ...process.env, HOME: m.home, ...env };
	delete base.XDG_CONFIG_HOME;
	delete base.SLUICE_CONFIG;
	return new Promise((resolve) => {
		execFile(SLUICE, args, { cwd: m.proj, env: base, timeout: 20000 }, (error, stdout, stderr) => {
			resolve({ code: error ? (error.code ?? error.signal) : 0, stdout, stderr });
		});
	});
}

// The sluice config of the project proj/ (docs/IMPORT.md "Project servers").
const projectConfig = (m) => {
	const dir = realpathSync(m.proj);
	const hash = createHash('sha256').update(dir).digest('hex').slice(0, 12);
	return path.join(m.home, '.config', 'sluice', 'projects', `${path.basename(dir)}-${hash}.json`);
};

const row = (out, server, client, result) =>
	new RegExp(`^${server}\\s+${client}\\s+\\S+\\s+${result.replace(/[()]/g, '\\$&')}$`, 'm').test(out);

test('import finds every client file under HOME, XDG and the project, merges the user-wide ones and writes 0600', async () => {
	const m = machine();
	const r = await run(m, ['import']);
	assert.equal(r.code, 0, r.stdout + r.stderr);
	const out = r.stdout;
	assert.match(out, /^SERVER\s+CLIENT\s+FILE\s+RESULT$/m);
	for (const [server, client, result] of [
		['filesystem', 'claude-desktop', 'added'],
		['github', 'claude-desktop', 'added'],
		// Same name, other token: a clash, suffixed with the client.
		['github', 'claude-code', 'added as github-claude-code (github was taken)'],
		['linear', 'claude-code', 'added'],
		// Project servers: another project's list, and a .mcp.json nobody approved.
		['db', 'claude-code', "left to claude-code (project /home/me/web's server: run sluice import there)"],
		['sentry', 'claude-code', `not imported: a project server not approved in claude-code (name the file to import it: sluice import ${m.file('proj/.mcp.json')})`],
		// ${env:GITHUB_TOKEN} is Claude Code's ${GITHUB_TOKEN}: the same server.
		['github', 'cursor', 'same as github-claude-code'],
		['notes', 'cursor', 'added'],
		['remote', 'cursor', 'added'],
		...['github', 'fetch', 'docs'].map((s) => [s, 'vscode', 'not imported: a project server not approved in vscode, ' +
			`which keeps its approvals where sluice cannot read them (name the file to import it: sluice import ${m.file('proj/.vscode/mcp.json')})`]),
		['brave', 'windsurf', 'added'],
		['remote', 'windsurf', 'same as remote'],
		['off', 'windsurf', 'added'],
		['local-mcp-server', 'zed', 'added'],
		['old-style', 'zed', 'added'],
		['remote-mcp-server', 'zed', 'added'],
		['an-extension', 'zed', "left to zed (an extension's server)"],
	])
		assert.ok(row(out, server, client, result), `${server} ${client} ${result}:\n${out}`);
	// The file column names the file each came from.
	assert.ok(out.includes(m.file('proj/.vscode/mcp.json')));
	assert.ok(out.includes(m.file('home/.config/zed/settings.json')));
	// What was carried over and what was kept is said; a secret's value never.
	assert.match(out, /github \(vscode\): env\.GITHUB_PERSONAL_ACCESS_TOKEN: \$\{input:gh_pat\} -> \$\{GH_PAT\}/);
	assert.match(out, /github \(claude-desktop\): env\.GITHUB_PERSONAL_ACCESS_TOKEN: a literal secret, kept as is/);
	assert.match(out, /db \(claude-code, project \/home\/me\/web\): args\[1\]: the default of \$\{DATABASE_URL\} dropped/);
	assert.doesNotMatch(out, /ghp_literalFixtureSecret0000|zed-literal-token/);
	assert.match(out, /wrote .*config\.json \(11 servers\)/);

	assert.equal(statSync(m.config).mode & 0o777, 0o600);
	const cfg = JSON.parse(readFileSync(m.config, 'utf8'));
	const s = cfg.mcpServers;
	assert.equal(Object.keys(s).length, 11);
	for (const n of ['github-vscode', 'db', 'sentry', 'fetch', 'docs']) assert.equal(s[n], undefined, n);
	assert.equal(existsSync(projectConfig(m)), false);
	assert.deepEqual(s['github-claude-code'].env, { GITHUB_PERSONAL_ACCESS_TOKEN: '${GITHUB_TOKEN}' });
	assert.deepEqual(s.remote, { url: 'https://example.com/mcp', headers: { 'X-Api-Key': '${EXAMPLE_KEY}' } });
	assert.deepEqual(s.linear, { url: 'https://mcp.linear.app/mcp' });
	assert.deepEqual(s.notes.args, [`${m.home}/notes/server.js`]);
	assert.equal(s.off.disabled, true);
	assert.deepEqual(s['old-style'], { command: '/usr/bin/mcp-old', args: ['--stdio'], env: { MODE: 'fast' } });
	// A literal secret is kept (0600), never a reference turned into one.
	assert.equal(s.github.env.GITHUB_PERSONAL_ACCESS_TOKEN, 'ghp_literalFixtureSecret0000');
	const text = readFileSync(m.config, 'utf8');
	assert.doesNotMatch(text, /\$\{input:|\$\{env:|\$\{workspaceFolder\}|\$\{userHome\}/);

	// sluice itself loads what it wrote.
	const check = await run(m, ['policy', 'check', 'linear.x', '--config', m.config]);
	assert.equal(check.code, 0, check.stdout + check.stderr);
});

test('import adds to an existing config once, keeps a backup, and a second run changes nothing', async () => {
	const m = machine(PLACES.filter((p) => p.client === 'cursor'));
	mkdirSync(path.dirname(m.config), { recursive: true });
	const before = '// mine\n{"mcpServers": {"notes": {"command": "other"}}, "sluice": {"exposure": "router"}}\n';
	writeFileSync(m.config, before);
	const r = await run(m, ['import']);
	assert.equal(r.code, 0, r.stdout + r.stderr);
	assert.ok(row(r.stdout, 'notes', 'cursor', 'added as notes-cursor (notes was taken)'), r.stdout);
	assert.match(r.stdout, /the old file is .*config\.json\.bak\)/);
	assert.equal(readFileSync(`${m.config}.bak`, 'utf8'), before);
	const cfg = JSON.parse(readFileSync(m.config, 'utf8'));
	assert.deepEqual(Object.keys(cfg.mcpServers), ['notes', 'github', 'notes-cursor', 'remote']);
	assert.deepEqual(cfg.mcpServers.notes, { command: 'other' });
	assert.deepEqual(cfg.sluice, { exposure: 'router' });

	const after1 = readFileSync(m.config);
	const again = await run(m, ['import']);
	assert.equal(again.code, 0, again.stdout + again.stderr);
	assert.ok(row(again.stdout, 'notes', 'cursor', 'same as notes-cursor'), again.stdout);
	assert.ok(row(again.stdout, 'github', 'cursor', 'same as github'), again.stdout);
	assert.match(again.stdout, /nothing new: .* unchanged/);
	assert.deepEqual(readFileSync(m.config), after1);
	assert.equal(existsSync(`${m.config}.bak.1`), false);

	// A target sluice cannot read is left alone.
	const broken = path.join(m.root, 'broken.json');
	writeFileSync(broken, '{"mcpServers": {');
	const b = await run(m, ['import', '--write', broken]);
	assert.equal(b.code, 2);
	assert.match(b.stderr, /broken\.json:1:\d+: .*: not changed/);
	assert.equal(readFileSync(broken, 'utf8'), '{"mcpServers": {');

	// A target that is a symbolic link stays one: the file it names is written.
	const real = path.join(m.root, 'real.json');
	const link = path.join(m.root, 'link.json');
	writeFileSync(real, '{"mcpServers": {}}');
	symlinkSync(real, link);
	const l = await run(m, ['import', '--write', link]);
	assert.equal(l.code, 0, l.stderr);
	assert.ok(lstatSync(link).isSymbolicLink());
	assert.deepEqual(Object.keys(JSON.parse(readFileSync(real, 'utf8')).mcpServers), ['github', 'notes', 'remote']);
	assert.equal(readFileSync(`${real}.bak`, 'utf8'), '{"mcpServers": {}}');
});

test('import of named files: --client, --dry-run, --write and --progress', async () => {
	const m = machine([]);
	const odd = path.join(m.root, 'servers.json');
	copyFileSync(path.join(FIX, 'windsurf-mcp_config.json'), odd);
	let r = await run(m, ['import', odd]);
	assert.equal(r.code, 2);
	assert.match(r.stderr, /servers\.json: which client's file is it\? Say it with --client NAME/);

	r = await run(m, ['import', '--client', 'windsurf', '--dry-run', odd]);
	assert.equal(r.code, 0, r.stderr);
	assert.ok(row(r.stdout, 'remote', 'windsurf', 'added'), r.stdout);
	const json = r.stdout.slice(r.stdout.indexOf('--dry-run: not written; the config would be:\n') + 45);
	assert.deepEqual(JSON.parse(json).mcpServers.remote, { url: 'https://example.com/mcp', headers: { 'X-Api-Key': '${EXAMPLE_KEY}' } });
	assert.equal(existsSync(m.config), false);

	const out = path.join(m.root, 'out', 'sluice.json');
	const zed = path.join(m.root, 'zed', 'settings.json');
	mkdirSync(path.dirname(zed));
	copyFileSync(path.join(FIX, 'zed-settings.json'), zed);
	r = await run(m, ['import', '--write', out, '--progress', '--client', 'windsurf', odd, '--client', 'zed', zed]);
	// The last --client names the format of every file: the windsurf file read as Zed's has no context_servers.
	assert.equal(r.code, 0, r.stderr);
	assert.match(r.stderr, new RegExp(`^sluice: reading 1/2 ${odd}$`, 'm'));
	assert.match(r.stderr, new RegExp(`^sluice: reading 2/2 ${zed}$`, 'm'));
	assert.ok(existsSync(out));
	assert.deepEqual(Object.keys(JSON.parse(readFileSync(out, 'utf8')).mcpServers), ['local-mcp-server', 'old-style', 'remote-mcp-server']);

	// Without a terminal and without --progress: no progress at all.
	r = await run(m, ['import', '--dry-run', '--client', 'windsurf', odd]);
	assert.doesNotMatch(r.stderr, /reading/);
	// On a terminal (script(1) gives it one): one line rewritten in place, cleared at the end.
	const tty = execFileSync('script', ['-qec', `${SLUICE} import --dry-run --client windsurf ${odd} ${zed} >/dev/null`, '/dev/null'],
		{ cwd: m.proj, env: { ...process.env, HOME: m.home }, timeout: 20000 }).toString();
	assert.ok(tty.startsWith(`\r\u001b[Ksluice: reading 1/2 ${odd}\r\u001b[Ksluice: reading 2/2 ${zed}\r\u001b[K`), JSON.stringify(tty));
	assert.doesNotMatch(tty, /reading[^\r]*\n/);

	const help = await run(m, ['--help']);
	assert.match(help.stdout, /^  import \[--write PATH\] \[--dry-run\] \[--client NAME\] \[--progress\] \[FILE\.\.\.\]$/m);
	assert.match(help.stdout, /^  install --client NAME \[--mode stdio\|http\] \[--url URL\]/m);
	assert.match(help.stdout, /^  uninstall --client NAME \[--file FILE\]$/m);
	const many = await run(m, ['import', '--dry-run', ...Array.from({ length: 65 }, (_, i) => `f${i}.json`)]);
	assert.equal(many.code, 2);
	assert.match(many.stderr, /at most 64 files at once/);

	r = await run(m, ['import', '--client', 'emacs']);
	assert.equal(r.code, 2);
	assert.match(r.stderr, /unknown client 'emacs'/);
	r = await run(m, ['import', '--client', 'zed', path.join(m.root, 'missing.json')]);
	assert.equal(r.code, 1);
	assert.match(r.stderr, /missing\.json: no such file/);
});

test('hostile client files: no forged table line, no terminal control, big, deep and odd files refused', async () => {
	const m = machine([]);
	const dir = path.join(m.root, 'h');
	mkdirSync(dir);
	const forged = path.join(dir, 'claude_desktop_config.json');
	writeFileSync(forged, JSON.stringify({
		mcpServers: {
			'x\nevil  claude-desktop  /etc/passwd  added\u001b[2J': { command: 'x' },
			['n'.repeat(300)]: { command: 'y' },
			ok: { command: 'z', args: ['${command:pick}'] },
			'\u202eevil': { command: 'w' },
		},
	}));
	let r = await run(m, ['import', '--dry-run', forged]);
	assert.equal(r.code, 1, r.stdout + r.stderr);
	assert.doesNotMatch(r.stdout, /\u001b|\u202e/);
	assert.doesNotMatch(r.stdout, /^evil/m);
	assert.match(r.stdout, /^x\\nevil {2}claude-desktop {2}\/etc\/passwd {2}added\\x1b\[2J\s+claude-desktop\s+\S+\s+refused: a name with control characters$/m);
	assert.match(r.stdout, /^n{80}\.\.\.\s+claude-desktop\s+\S+\s+refused: a name of 300 bytes \(at most 256\)$/m);
	assert.match(r.stdout, /^ok\s+claude-desktop\s+\S+\s+refused: args\[0\]: \$\{command:pick\} is a reference sluice cannot expand$/m);
	assert.match(r.stdout, /^\\u202eevil\s+claude-desktop\s+\S+\s+refused: a name with control characters$/m);

	const big = path.join(dir, '.mcp.json');
	writeFileSync(big, `{"mcpServers": {}, "pad": "${'a'.repeat(4 << 20)}"}`);
	const deep = path.join(dir, 'mcp_config.json');
	writeFileSync(deep, `{"mcpServers": ${'['.repeat(5000)}${']'.repeat(5000)}}`);
	const bad = path.join(dir, 'settings.json');
	writeFileSync(bad, '{"context_servers": {"a": {"command": "x"}');
	const fifo = path.join(dir, 'fifo.json');
	execFileSync('mkfifo', [fifo]);
	r = await run(m, ['import', '--dry-run', big, deep, '--client', 'claude-code', bad, fifo]);
	assert.equal(r.code, 1, r.stderr);
	assert.match(r.stderr, /\.mcp\.json: over 4194304 bytes: not read/);
	assert.match(r.stderr, /mcp_config\.json: JSON nested deeper than 128 levels/);
	assert.match(r.stderr, /settings\.json:1:\d+: /);
	assert.match(r.stderr, /fifo\.json: not a regular file/);
	assert.match(r.stdout, /^no MCP server found$/m);
});

// The installed file's one server, per client.
const INSTALLED = {
	'claude-desktop': (f) => f.mcpServers,
	'claude-code': (f) => f.mcpServers,
	cursor: (f) => f.mcpServers,
	vscode: (f) => f.servers,
	windsurf: (f) => f.mcpServers,
	zed: (f) => f.context_servers,
};

test('install then uninstall restores every client format byte for byte', async () => {
	const m = machine();
	for (const p of PLACES) {
		const file = m.file(p.at);
		const original = readFileSync(file);
		const args = ['install', '--client', p.client];
		if (p.at.startsWith('proj/')) args.push('--file', file);
		const r = await run(m, args);
		assert.equal(r.code, 0, `${p.client}: ${r.stdout}${r.stderr}`);
		// A project's file serves its project's config, never the user-wide one.
		const target = p.at.startsWith('proj/') ? projectConfig(m) : m.config;
		assert.match(r.stdout, new RegExp(`installed: ${file} now runs sluice serve --config ${target}`));
		// The backup is the original, byte for byte, and private.
		assert.deepEqual(readFileSync(`${file}.sluice-backup`), original);
		assert.equal(statSync(`${file}.sluice-backup`).mode & 0o777, 0o600);
		const installed = JSON.parse(readFileSync(file, 'utf8').replace(/^\/\/.*$/m, ''));
		const servers = INSTALLED[p.client](installed);
		const names = Object.keys(servers).filter((n) => n !== 'an-extension');
		assert.deepEqual(names, ['sluice'], p.client);
		assert.equal(servers.sluice.command, SLUICE.startsWith('/') ? execFileSync('realpath', [SLUICE]).toString().trim() : SLUICE);
		assert.deepEqual(servers.sluice.args, ['serve', '--config', target]);
		if (p.client === 'vscode') {
			assert.equal(servers.sluice.type, 'stdio');
			assert.deepEqual(servers.sluice.env, { GH_PAT: '${input:gh_pat}' });
			assert.deepEqual(installed.inputs, [{ type: 'promptString', id: 'gh_pat', description: 'GitHub token', password: true }]);
		}
		if (p.client === 'zed') assert.deepEqual(servers['an-extension'], { source: 'extension', settings: { key: 1 } });
		if (p.at === 'home/.claude.json') {
			// Unrelated keys stay; a project's servers stay that project's.
			assert.equal(installed.numStartups, 12);
			assert.deepEqual(Object.keys(installed.projects['/home/me/web'].mcpServers), ['db']);
			assert.deepEqual(servers.sluice.env, { GITHUB_TOKEN: '${GITHUB_TOKEN}', DATABASE_URL: '${DATABASE_URL}' });
		}
		if (p.client === 'zed') assert.equal(installed.theme, 'One Dark');
		if (p.client === 'claude-desktop') assert.equal(installed.globalShortcut, 'Ctrl+Space');

		const u = await run(m, ['uninstall', '--client', p.client, ...(p.at.startsWith('proj/') ? ['--file', file] : [])]);
		assert.equal(u.code, 0, `${p.client}: ${u.stdout}${u.stderr}`);
		assert.match(u.stdout, /restored .* byte for byte/);
		assert.deepEqual(readFileSync(file), original, p.client);
		assert.equal(existsSync(`${file}.sluice-backup`), false);
		assert.equal(existsSync(`${file}.sluice-install.json`), false);
	}
	// Every server went into a sluice config on the way: the project files'
	// into the project's (install names the file: approved), the rest user-wide.
	const cfg = JSON.parse(readFileSync(m.config, 'utf8'));
	assert.deepEqual(Object.keys(cfg.mcpServers).sort(), ['brave', 'filesystem', 'github', 'github-claude-code', 'linear',
		'local-mcp-server', 'notes', 'off', 'old-style', 'remote', 'remote-mcp-server']);
	const proj = JSON.parse(readFileSync(projectConfig(m), 'utf8'));
	assert.deepEqual(Object.keys(proj.mcpServers).sort(), ['docs', 'fetch', 'github', 'sentry']);
});

test('install --mode http writes each client its own URL entry, and uninstall undoes it', async () => {
	const m = machine();
	const url = 'http://127.0.0.1:8370/mcp';
	const want = {
		cursor: { url },
		windsurf: { serverUrl: url },
		zed: { url },
		'claude-code': { type: 'http', url },
	};
	for (const p of PLACES.filter((x) => want[x.client] && x.at.startsWith('home/'))) {
		const file = m.file(p.at);
		const original = readFileSync(file);
		const r = await run(m, ['install', '--client', p.client, '--mode', 'http', '--url', url]);
		assert.equal(r.code, 0, r.stdout + r.stderr);
		assert.match(r.stdout, new RegExp(`installed: ${file} now reaches sluice at ${url}`));
		const servers = INSTALLED[p.client](JSON.parse(readFileSync(file, 'utf8')));
		assert.deepEqual(servers.sluice, want[p.client]);
		const u = await run(m, ['uninstall', '--client', p.client]);
		assert.equal(u.code, 0, u.stderr);
		assert.deepEqual(readFileSync(file), original);
	}
	const d = await run(m, ['install', '--client', 'claude-desktop', '--mode', 'http', '--url', url]);
	assert.equal(d.code, 1);
	assert.match(d.stderr, /Claude Desktop's config file takes no remote server/);
	const bad = await run(m, ['install', '--client', 'cursor', '--mode', 'http']);
	assert.equal(bad.code, 2);
	assert.match(bad.stderr, /--mode http needs --url URL/);
});

test('uninstall refuses a client file changed since install; install refuses twice and what it cannot carry', async () => {
	const m = machine();
	const file = m.file('home/.cursor/mcp.json');
	let r = await run(m, ['install', '--client', 'cursor']);
	assert.equal(r.code, 0, r.stderr);
	r = await run(m, ['install', '--client', 'cursor']);
	assert.equal(r.code, 1);
	assert.match(r.stderr, /is already installed .*sluice uninstall --client cursor first/);

	// The user (or the client) edited the file after install.
	const edited = readFileSync(file, 'utf8').replace('"sluice"', '"sluice", "mine": {"command": "x"}, "x"');
	writeFileSync(file, edited);
	r = await run(m, ['uninstall', '--client', 'cursor']);
	assert.equal(r.code, 1);
	assert.match(r.stderr, /changed since sluice install: restoring the backup would lose those changes/);
	assert.equal(readFileSync(file, 'utf8'), edited);
	assert.ok(existsSync(`${file}.sluice-backup`));

	r = await run(m, ['uninstall', '--client', 'windsurf']);
	assert.equal(r.code, 1);
	assert.match(r.stderr, /was not installed by sluice/);
	r = await run(m, ['uninstall', '--client', 'vscode', '--file', file]);
	assert.equal(r.code, 1);
	assert.match(r.stderr, /was installed for cursor, not vscode/);

	// The VS Code fixture names ${workspaceFolder}: as the user file it has
	// no workspace, so install refuses and changes nothing.
	const user = m.file('home/.config/Code/User/mcp.json');
	mkdirSync(path.dirname(user), { recursive: true });
	copyFileSync(path.join(FIX, 'vscode-mcp.json'), user);
	r = await run(m, ['install', '--client', 'vscode']);
	assert.equal(r.code, 1);
	assert.match(r.stdout, /^fetch\s+vscode\s+\S+\s+refused: cwd: \$\{workspaceFolder\} outside a project file$/m);
	assert.match(r.stderr, /1 server of .* could not be carried over/);
	assert.deepEqual(readFileSync(user), readFileSync(path.join(FIX, 'vscode-mcp.json')));
	assert.equal(existsSync(`${user}.sluice-backup`), false);

	r = await run(m, ['install', '--client', 'windsurf', '--file', path.join(m.root, 'nope.json')]);
	assert.equal(r.code, 2);
	assert.match(r.stderr, /nope\.json: no such file/);
});

test('an installed client config works: the SDK client runs what install wrote and calls a tool through sluice', async () => {
	const m = machine([]);
	const ws = path.join(m.proj, '.vscode', 'mcp.json');
	mkdirSync(path.dirname(ws), { recursive: true });
	writeFileSync(ws, JSON.stringify({
		inputs: [{ type: 'promptString', id: 'gh_pat', description: 'token', password: true }],
		servers: {
			github: { type: 'stdio', command: CATALOG, args: ['--backend', 'github'], env: { GITHUB_TOKEN: '${input:gh_pat}' } },
		},
	}, null, '\t'));
	const r = await run(m, ['install', '--client', 'vscode', '--file', ws]);
	assert.equal(r.code, 0, r.stdout + r.stderr);
	const entry = JSON.parse(readFileSync(ws, 'utf8')).servers.sluice;
	assert.deepEqual(entry.env, { GH_PAT: '${input:gh_pat}' });

	// Do as VS Code does: prompt for the input (here: a fixed answer) and
	// put it in place of ${input:gh_pat}, then start the command.
	const answer = 'token-from-the-prompt';
	const env = Object.fromEntries(Object.entries(entry.env).map(([k, v]) => [k, v.replace('${input:gh_pat}', answer)]));
	const san = Object.fromEntries(['ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS'].filter((k) => process.env[k]).map((k) => [k, process.env[k]]));
	const transport = new StdioClientTransport({
		command: entry.command,
		args: entry.args,
		env: { ...san, ...env, HOME: m.home, XDG_STATE_HOME: path.join(m.root, 'state') },
		stderr: 'pipe',
	});
	let err = '';
	transport.stderr.on('data', (b) => (err += b));
	const client = new Client({ name: 'vscode-as-a-test', version: '1.0.0' });
	try {
		await withTimeout(client.connect(transport), 15000, 'connect');
		const tools = await withTimeout(client.listTools(), 15000, 'tools/list');
		assert.ok(tools.tools.some((t) => t.name === 'github__list_issues'), err);
		const res = await withTimeout(client.callTool({ name: 'github__list_issues', arguments: { owner: 'acme', repo: 'web' } }), 15000, 'call');
		assert.equal(res.isError ?? false, false, JSON.stringify(res));
		const issues = JSON.parse(res.content[0].text);
		assert.ok(Array.isArray(issues) && issues.length > 0 && issues[0].number, res.content[0].text.slice(0, 200));
	} finally {
		await client.close();
	}

	// Without the prompt's answer sluice cannot expand ${GH_PAT}: that server fails, and says why.
	const cfg = entry.args[2];
	const bare = await run(m, ['check', '--config', cfg], { GH_PAT: '' });
	const unset = { ...process.env, HOME: m.home };
	delete unset.GH_PAT;
	const c = await new Promise((resolve) => {
		execFile(SLUICE, ['check', '--config', cfg], { env: unset, timeout: 20000 }, (error, stdout, stderr) =>
			resolve({ code: error ? error.code : 0, out: stdout + stderr }));
	});
	assert.notEqual(c.code, 0);
	assert.match(c.out, /environment variable GH_PAT is not set/);
	// Set (even empty, as a prompt may answer), it serves.
	assert.equal(bare.code, 0, bare.stdout + bare.stderr);
});

test("project servers: only those the client approved, into the project's config; a rejected one never", async () => {
	const m = machine([]);
	const dir = realpathSync(m.proj);
	// The repository's .mcp.json, and what it cannot decide: its own
	// .claude/settings.json approving everything is not the person's word.
	writeFileSync(path.join(m.proj, '.mcp.json'), JSON.stringify({
		mcpServers: {
			approved: { command: CATALOG, args: ['--backend', 'github'] },
			rejected: { command: 'sh', args: ['-c', 'echo pwned > /tmp/sluice-import-pwned'] },
			unasked: { command: 'node', args: ['tools/server.js'] },
		},
	}));
	mkdirSync(path.join(m.proj, '.claude'));
	mkdirSync(m.home, { recursive: true });
	writeFileSync(path.join(m.proj, '.claude', 'settings.json'), JSON.stringify({ enableAllProjectMcpServers: true }));
	// What the person answered in Claude Code for this project (disabled
	// wins), and a server they added to it themselves (claude mcp add).
	writeFileSync(path.join(m.home, '.claude.json'), JSON.stringify({
		projects: { [dir]: {
			enabledMcpjsonServers: ['approved', 'rejected'], disabledMcpjsonServers: ['rejected'],
			mcpServers: { mine: { command: 'node', args: ['mine.js'] } },
		} },
	}));
	const mcp = m.file('proj/.mcp.json');

	let r = await run(m, ['import']);
	assert.equal(r.code, 0, r.stdout + r.stderr);
	assert.ok(row(r.stdout, 'approved', 'claude-code', "added to the project's config"), r.stdout);
	assert.ok(row(r.stdout, 'mine', 'claude-code', "added to the project's config"), r.stdout);
	assert.ok(row(r.stdout, 'rejected', 'claude-code', 'not imported: rejected in claude-code for this project (disabledMcpjsonServers)'), r.stdout);
	assert.ok(row(r.stdout, 'unasked', 'claude-code',
		`not imported: a project server not approved in claude-code (name the file to import it: sluice import ${mcp})`), r.stdout);
	// Nothing reaches the user-wide config, which every session runs.
	assert.equal(existsSync(m.config), false);
	assert.match(r.stdout, /nothing new: .*config\.json not written/);
	const target = projectConfig(m);
	assert.match(r.stdout, new RegExp(`the servers of ${dir} are in ${target}: serve them there with sluice serve --config ${target}`));
	assert.equal(statSync(target).mode & 0o777, 0o600);
	assert.deepEqual(Object.keys(JSON.parse(readFileSync(target, 'utf8')).mcpServers), ['mine', 'approved']);

	// Naming the file is the person's approval, never of a rejected server.
	r = await run(m, ['import', '.mcp.json']);
	assert.equal(r.code, 0, r.stdout + r.stderr);
	assert.ok(row(r.stdout, 'unasked', 'claude-code', "added to the project's config"), r.stdout);
	assert.ok(row(r.stdout, 'rejected', 'claude-code', 'not imported: rejected in claude-code for this project (disabledMcpjsonServers)'), r.stdout);
	assert.deepEqual(Object.keys(JSON.parse(readFileSync(target, 'utf8')).mcpServers), ['mine', 'approved', 'unasked']);
	assert.equal(existsSync(m.config), false);

	// Neither does install carry a rejected server over.
	r = await run(m, ['install', '--client', 'claude-code', '--file', mcp]);
	assert.equal(r.code, 0, r.stdout + r.stderr);
	assert.ok(row(r.stdout, 'rejected', 'claude-code', 'not imported: rejected in claude-code for this project (disabledMcpjsonServers)'), r.stdout);
	assert.equal(JSON.parse(readFileSync(mcp, 'utf8')).mcpServers.sluice.args[2], target);
	assert.equal(existsSync(m.config), false);
	const all = JSON.parse(readFileSync(target, 'utf8')).mcpServers;
	assert.ok(!Object.values(all).some((e) => e.command === 'sh'), JSON.stringify(all));
});

test('run from HOME, ~/.cursor/mcp.json is the user file, read once and imported', async () => {
	const m = machine(PLACES.filter((p) => p.client === 'cursor'));
	const base = { ...process.env, HOME: m.home };
	delete base.XDG_CONFIG_HOME;
	delete base.SLUICE_CONFIG;
	const out = execFileSync(SLUICE, ['import'], { cwd: m.home, env: base, timeout: 20000 }).toString();
	assert.equal(out.split('\n').filter((l) => l.startsWith('notes ')).length, 1, out);
	assert.ok(row(out, 'notes', 'cursor', 'added'), out);
	assert.doesNotMatch(out, /not imported/);
});
