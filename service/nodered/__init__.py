"""The Node-RED core: Admin API client, flow slicing and compaction, redaction, error sentences, the tool
declaration type (``tooling``) and the read tools (``tools``).

Imports nothing else from ``service``, so ``mcp_server`` can import it alone.
"""
