// A tiny MCP server for the pinning tests (tests/e2e/pinning.test.mjs,
// tests/e2e/shared.test.mjs), JSON lines on stdio: the description of
// "greet" comes from TOOL_DESC, more of its fields from TOOL_MORE (JSON,
// merged in); TOOL_EXTRA=1 adds a tool "extra". env is not part of a
// server's pin key, so configs that differ only in it pin the same server.
const rl = require('readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const tools = [
  { name: 'greet', description: process.env.TOOL_DESC || 'Says hello.',
    inputSchema: { type: 'object', properties: { who: { type: 'string', description: 'Who' } } } },
  { name: 'stable', description: 'Never changes.', inputSchema: { type: 'object' } },
];
Object.assign(tools[0], JSON.parse(process.env.TOOL_MORE || '{}'));
if (process.env.TOOL_EXTRA === '1')
  tools.push({ name: 'extra', description: 'Appeared later.', inputSchema: { type: 'object' } });
rl.on('line', (line) => {
  let m; try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined) return;
  if (m.method === 'initialize')
    send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: 'pinme', version: '1.0.0' } } });
  else if (m.method === 'tools/list') send({ jsonrpc: '2.0', id: m.id, result: { tools } });
  else if (m.method === 'tools/call')
    send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'called ' + m.params.name }] } });
  else send({ jsonrpc: '2.0', id: m.id, result: {} });
});
