"""Tools the chat can call: the registry, the service's own tools, MCP-backed tools."""
