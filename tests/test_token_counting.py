"""Token counting for the history's budget (service.chat.summary): tiktoken's encodings are loaded off the event
loop, and until they are a chat counts with LangChain's approximation instead of waiting for tiktoken's download."""

from __future__ import annotations

import asyncio
import socket
import threading

from pydantic import SecretStr

from service.chat import summary
from service.chat.summary import TiktokenLoader, counter_name, token_counter
from service.llm.providers import ChatModelFactory, ProviderConfig


class HangingProxy:
    """An HTTP proxy on 127.0.0.1 that accepts connections and answers nothing until :meth:`release` (a network that
    drops packets: tiktoken's download, ``requests.get`` with no timeout, would wait for the TCP timeout)."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.connected = threading.Event()
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.connections.append(conn)
            self.connected.set()

    def release(self) -> None:
        """Close every connection held (the download fails) and stop accepting."""
        self.server.close()
        for conn in self.connections:
            conn.close()


async def test_a_chat_never_waits_for_tiktokens_download_and_counts_approximately_until_it_ends(monkeypatch, tmp_path):
    proxy = HangingProxy()
    # No cached encoding, and the download goes through the proxy that never answers.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    loader = TiktokenLoader(encodings=("o200k_base",))
    monkeypatch.setattr(summary, "TIKTOKEN", loader)
    factory = ChatModelFactory()
    model = factory.get(ProviderConfig("openai-compatible", "gpt-4o-mini", api_key=SecretStr("sk-test"),
                                       base_url="http://127.0.0.1:1/v1"))
    try:
        # Off the loop, so that a counter waiting for the download (as it did) fails here instead of hanging: the
        # proxy holds the download until released below.
        counter = await asyncio.wait_for(asyncio.to_thread(token_counter, model), 60)
        # The first call started the download and answered with the approximation while the download is held.
        assert counter.keywords == {"chars_per_token": 4.0}
        assert proxy.connected.wait(30), "tiktoken did not start its download"
        assert not loader.done.is_set() and counter_name(model) == "approximate"
        proxy.release()
        assert loader.done.wait(30), "the failed download did not end the load"
        assert loader.failed and not loader.ready and counter_name(model) == "approximate"
    finally:
        proxy.release()
        await factory.aclose()
