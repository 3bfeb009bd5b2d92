#!/usr/bin/env bash
# `make run`: serve the demo config (examples/demo.json) on stdio, after
# printing how to connect an MCP client to it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
sluice=$1
bash "$top/scripts/setup.sh" >&2
cfg="$top/build/demo.json"
sed "s|@ROOT@|$top|g" "$top/examples/demo.json" > "$cfg"

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
Ctrl-D or Ctrl-C ends it.

MSG
exec "$sluice" serve --config "$cfg"
