"""Raspberry Pi class (issue 33): every runtime dependency installs on 64-bit Raspberry Pi OS (Linux aarch64, Python
3.11, glibc 2.36 on bookworm) from a binary wheel or as pure Python, so that no compiler and no hour of building is
needed there. pip resolves the runtime dependencies for that platform with binary wheels only (``--only-binary
:all:``, pip's documented way to resolve for another platform: https://pip.pypa.io/en/stable/cli/pip_download/) and
its ``--report`` (https://pip.pypa.io/en/stable/reference/installation-report/) names every file it would install.

It needs the package index: without it the test is skipped, saying so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.nodered import REPO

# Raspberry Pi OS bookworm (64-bit) has glibc 2.36: manylinux up to 2_36 fits; the older tags are what most
# projects publish.
PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_17_aarch64", "manylinux_2_28_aarch64", "manylinux_2_36_aarch64")
PYTHON_VERSION = "3.11"


def _index_reachable() -> str | None:
    """None when pip's index answers, else why not."""
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
    try:
        with urllib.request.urlopen(f"{index}/pip/", timeout=15) as answer:
            answer.read(1)
    except (urllib.error.URLError, OSError) as err:
        return f"the package index {index} cannot be reached ({err}): the aarch64 wheel check needs it"
    return None


def not_installable_on_aarch64(project: Path, report_path: Path) -> list[str]:
    """The runtime dependencies of ``project`` that have no binary wheel for Linux aarch64 (``name version: why``);
    ``[]`` when every one resolves to an aarch64 or pure-Python wheel. The project itself is built locally and not
    counted.

    Raises:
        AssertionError: pip could not resolve them at all (its output says which requirement had no wheel).
    """
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--only-binary=:all:",
               *(f"--platform={platform}" for platform in PLATFORMS), f"--python-version={PYTHON_VERSION}",
               "--implementation=cp", "--quiet", "--report", str(report_path), str(project)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=REPO)
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if "ignored: it is neither" not in line]
        raise AssertionError("pip cannot resolve the dependencies for Linux aarch64 with wheels only:\n"
                             + "\n".join(errors[-20:]))
    report = json.loads(report_path.read_text())
    wrong = []
    for item in report["install"]:
        info = item["download_info"]
        if "dir_info" in info:  # the project itself, from its directory
            continue
        name = f"{item['metadata']['name']} {item['metadata']['version']}"
        filename = info["url"].rsplit("/", 1)[-1]
        if not filename.endswith(".whl"):
            wrong.append(f"{name}: {filename} is not a wheel")
            continue
        platform_tag = filename[:-len(".whl")].split("-")[-1]
        if platform_tag != "any" and "aarch64" not in platform_tag:
            wrong.append(f"{name}: {filename} is not for aarch64")
    return wrong


@pytest.fixture
def index():
    reason = _index_reachable()
    if reason:
        pytest.skip(reason)


def test_every_runtime_dependency_installs_from_a_wheel_on_a_64_bit_raspberry_pi(index, tmp_path):
    assert not_installable_on_aarch64(REPO, tmp_path / "report.json") == []


def test_the_check_names_a_dependency_that_has_no_wheel_at_all(index, tmp_path):
    # docopt 0.6.2 exists as a source distribution only: a project needing it cannot install without building.
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=69"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "needs-a-build"\nversion = "0"\ndependencies = ["docopt==0.6.2"]\n'
        '[tool.setuptools]\npy-modules = []\n')
    with pytest.raises(AssertionError, match="docopt"):
        not_installable_on_aarch64(project, tmp_path / "report.json")
