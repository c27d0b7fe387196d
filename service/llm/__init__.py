"""Chat models: providers, timeouts, provider error redaction."""
