"""``make bench``: added latency, concurrency, prompt size, memory search and cold start on loopback.

Run with ``python -m tests.bench.run``; nothing here is collected by pytest (no ``test_*`` modules).
"""
