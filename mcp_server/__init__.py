"""MCP server exposing a Node-RED instance (settings, diagnostics, flows, nodes, node types) read-only."""
