"""MCP server exposing a Node-RED instance (settings, diagnostics, flows, nodes, node types), read-only unless its
write tools are switched on (each write then waits for the client's user to approve it)."""
