"""node-red-ai-sidebar companion service: chat pipeline, providers, memory and the Node-RED Admin client."""

__version__ = "0.1.0"
