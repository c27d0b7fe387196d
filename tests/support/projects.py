"""Node-RED's Projects feature in tests: the git identity Node-RED's own commits and ours use, and a commit made
with git in a project's folder, as a user committing outside the editor does."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_USER = {"GIT_AUTHOR_NAME": "Grace Hopper", "GIT_AUTHOR_EMAIL": "grace@example.org",
            "GIT_COMMITTER_NAME": "Grace Hopper", "GIT_COMMITTER_EMAIL": "grace@example.org"}


def commit(project_dir: Path, subject: str, when: str) -> None:
    """An empty commit ``subject`` in the git repository ``project_dir`` (``userDir/projects/<name>``), authored
    and committed by :data:`GIT_USER` at ``when`` (ISO 8601, e.g. ``2030-01-02T03:04:05Z``)."""
    subprocess.run(["git", "commit", "--allow-empty", "-q", "-m", subject], cwd=project_dir, check=True,
                   env={**os.environ, **GIT_USER, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when})
