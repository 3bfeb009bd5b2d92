#!/usr/bin/env bash
# `make run` (sluice and catalog: their paths under the top directory, as
# make names them): serve the demo config (examples/demo.json) over HTTP at
# http://$SLUICE_HTTP/mcp (the Makefile sets 127.0.0.1:8370; `make run
# HTTP=host:port` another), after printing how to connect an MCP client to
# it; with SLUICE_HTTP empty (`make run STDIO=1`), on stdio.
#
# A person waits through the first run (Debian and npm packages, a build
# of a few minutes): each step says what it is before it starts.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
step() { printf 'make run: step %s/3: %s\n' "$1" "$2" >&2; }

step 1 "installing what is missing (scripts/setup.sh)"
bash scripts/setup.sh >&2
step 2 "building $1 and the test catalog $2"
"${MAKE:-make}" --no-print-directory "$1" "$2" >&2
sluice=$top/$1
cfg="$top/build/demo.json"
sed "s|@ROOT@|$top|g" "$top/examples/demo.json" > "$cfg"
step 3 "serving the demo config $cfg"

if [ -n "${SLUICE_HTTP:-}" ]; then
	cat >&2 <<MSG

sluice demo: $("$sluice" --version), servers github and jira (the test catalog) and
@modelcontextprotocol/server-everything, config $cfg, over HTTP at http://$SLUICE_HTTP/mcp

Connect an MCP client to http://$SLUICE_HTTP/mcp (Streamable HTTP):

Claude Code: claude mcp add --transport http sluice http://$SLUICE_HTTP/mcp
VS Code (.vscode/mcp.json): { "servers": { "sluice": { "type": "http", "url": "http://$SLUICE_HTTP/mcp" } } }
Cursor (~/.cursor/mcp.json): { "mcpServers": { "sluice": { "url": "http://$SLUICE_HTTP/mcp" } } }

Try it from another terminal:
  curl -si http://$SLUICE_HTTP/mcp -H 'Content-Type: application/json' \\
    -H 'Accept: application/json, text/event-stream' \\
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"me","version":"1"}}}'
Ctrl-C ends it.

MSG
	exec "$sluice" serve --http "$SLUICE_HTTP" --config "$cfg"
fi

cat >&2 <<MSG

sluice demo: $("$sluice" --version), servers github and jira (the test catalog) and
@modelcontextprotocol/server-everything, config $cfg

Connect an MCP client by adding this to its config (Claude Desktop:
claude_desktop_config.json, Cursor: ~/.cursor/mcp.json, VS Code: .vscode/mcp.json
under "servers"):

  "mcpServers": {
    "sluice": { "command": "$sluice", "args": ["serve", "--config", "$cfg"] }
  }

Claude Code: claude mcp add sluice -- $sluice serve --config $cfg

This terminal now speaks MCP on stdin/stdout (one JSON-RPC message per line); try:
  {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"me","version":"1"}}}
  {"jsonrpc":"2.0","id":2,"method":"tools/list"}
Ctrl-D or Ctrl-C ends it. (make run without STDIO=1 serves it over HTTP instead.)

MSG
exec "$sluice" serve --config "$cfg"
