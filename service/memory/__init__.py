"""Conversation memory and knowledge: the SQLite store."""
