"""The Node-RED core: Admin API client, flow slicing and compaction, redaction, error sentences.

Imports nothing else from ``service``, so ``mcp_server`` can import it alone.
"""
