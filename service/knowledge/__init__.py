"""Knowledge for grounded answers (issue 17): the installed nodes' help (docs store), the user's workspace with a
synthetic summary (workspace store), both in SQLite FTS5 beside the memory, kept fresh incrementally from the
Admin API, and a router that decides from the latest user message which store to ask.

Modules: ``text`` (search text and queries), ``index`` (the SQLite tables and BM25 search), ``helpdoc`` (help HTML
→ sections), ``docs`` (docs store), ``workspace`` and ``summary`` (workspace store), ``base`` (both stores kept
fresh together), ``router`` (docs / workspace / both / neither).
"""
