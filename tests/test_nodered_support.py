"""The tests' own Node-RED starter (tests/support/nodered.py) on a busy machine: a port another process took between
free_port() and the start is replaced by a new one (seen in make test beside other jobs: "Error: port in use")."""

from __future__ import annotations

import socket

import pytest

from tests.support.nodered import NodeRed

pytestmark = pytest.mark.nodered


def test_a_taken_port_is_replaced_by_a_free_one(tmp_path):
    with socket.socket() as taker:
        taker.bind(("127.0.0.1", 0))
        taker.listen()
        taken = taker.getsockname()[1]
        instance = NodeRed(userdir=tmp_path, port=taken, with_palette=False).start()
        try:
            assert instance.port != taken
            assert instance.url == f"http://127.0.0.1:{instance.port}"
            assert "Unable to listen on" in instance.log_path.read_text(errors="replace")
        finally:
            instance.stop()
