// A server of the official SDK 2.x (@modelcontextprotocol/server), which
// speaks MCP 2026-07-28 and falls back to the session era for older
// clients: the independent modern peer of sluice's upstream tests.
import { McpServer, fromJsonSchema, inputRequired, acceptedContent } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

serveStdio(() => {
	const s = new McpServer(
		{ name: 'modern-fixture', version: '2.0.0' },
		{ capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true }, prompts: {} } },
	);
	s.registerTool(
		'add',
		{
			description: 'Adds two numbers',
			inputSchema: fromJsonSchema({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] }),
		},
		async ({ a, b }, ctx) => ({
			content: [{ type: 'text', text: JSON.stringify({ sum: a + b, era: ctx?.mcpReq?.protocolVersion ?? ctx?.protocolVersion ?? null }) }],
		}),
	);
	// Multi-round-trip (MRTR): asks the client to confirm before acting.
	s.registerTool(
		'deploy',
		{ description: 'Deploys after a confirmation', inputSchema: fromJsonSchema({ type: 'object', properties: { env: { type: 'string' } } }) },
		async ({ env }, ctx) => {
			const ok = acceptedContent(ctx.mcpReq.inputResponses, 'confirm');
			if (ok?.confirm !== true)
				return inputRequired({
					inputRequests: {
						confirm: inputRequired.elicit({
							message: `Deploy to ${env}?`,
							requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] },
						}),
					},
				});
			return { content: [{ type: 'text', text: `deployed to ${env}` }] };
		},
	);
	// Asks under a key of its own ("label"), which sluice keeps.
	s.registerTool('tag', { description: 'Tags after asking for the label' }, async (ctx) => {
		const got = acceptedContent(ctx.mcpReq.inputResponses, 'label');
		if (typeof got?.label !== 'string')
			return inputRequired({
				inputRequests: {
					label: inputRequired.elicit({
						message: 'Which label?',
						requestedSchema: { type: 'object', properties: { label: { type: 'string' } }, required: ['label'] },
					}),
				},
			});
		return { content: [{ type: 'text', text: `tagged ${got.label}` }] };
	});
	// A resource that asks for a passphrase before it is read.
	s.registerResource('vault', 'memo://vault', { mimeType: 'text/plain' }, async (uri, ctx) => {
		const got = acceptedContent(ctx.mcpReq.inputResponses, 'pass');
		if (typeof got?.pass !== 'string')
			return inputRequired({
				inputRequests: {
					pass: inputRequired.elicit({
						message: 'Passphrase for the vault?',
						requestedSchema: { type: 'object', properties: { pass: { type: 'string' } }, required: ['pass'] },
					}),
				},
			});
		return { contents: [{ uri: 'memo://vault', mimeType: 'text/plain', text: `opened with ${got.pass}` }] };
	});
	// A prompt that asks (MRTR on a request other than tools/call): the
	// person's name, by elicitation, goes into its message.
	s.registerPrompt('greet', { description: 'Greets the person, asking for the name' }, async (ctx) => {
		const got = acceptedContent(ctx.mcpReq.inputResponses, 'who');
		if (typeof got?.name !== 'string')
			return inputRequired({
				inputRequests: {
					who: inputRequired.elicit({
						message: 'Who is to be greeted?',
						requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
					}),
				},
			});
		return { messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${got.name}!` } }] };
	});
	// Changes on demand (the listen tests): grow adds a tool, which the
	// SDK announces with notifications/tools/list_changed; touch says the
	// note resource changed (notifications/resources/updated).
	let grown = 0;
	s.registerTool('grow', { description: 'Adds a tool named extra_N' }, async () => {
		const name = `extra_${++grown}`;
		s.registerTool(name, { description: `Added by grow (${grown})` }, async () => ({ content: [{ type: 'text', text: name }] }));
		return { content: [{ type: 'text', text: name }] };
	});
	let note = 'first';
	s.registerResource('note', 'memo://note', { mimeType: 'text/plain' }, async () => ({
		contents: [{ uri: 'memo://note', mimeType: 'text/plain', text: note }],
	}));
	s.registerTool(
		'touch',
		{ description: 'Changes the note resource', inputSchema: fromJsonSchema({ type: 'object', properties: { text: { type: 'string' } } }) },
		async ({ text }) => {
			note = text ?? 'changed';
			await s.server.sendResourceUpdated({ uri: 'memo://note' });
			return { content: [{ type: 'text', text: 'touched' }] };
		},
	);
	return s;
});
