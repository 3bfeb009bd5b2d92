// A server of the official SDK 2.x (@modelcontextprotocol/server), which
// speaks MCP 2026-07-28 and falls back to the session era for older
// clients: the independent modern peer of sluice's upstream tests.
import { McpServer, fromJsonSchema, inputRequired, acceptedContent } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

serveStdio(() => {
	const s = new McpServer({ name: 'modern-fixture', version: '2.0.0' });
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
	return s;
});
