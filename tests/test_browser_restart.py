"""Issue 31, finding 4, in a real headless Chromium against a real Node-RED (adminAuth, under /admin) and the service
as a process: a service that `make run` restarts (AI_SIDEBAR_SERVICE_SUPERVISED, as scripts/run.sh sets it) is
said to be restarted, never to need pip or docker, and the banner goes within about a second of the service
answering again (the sidebar checks every second while a restart is expected), not 15 to 30 s later."""

from __future__ import annotations

import threading
import time

import pytest

from tests.support.model_server import ScriptedModelServer
from tests.test_browser_sidebar import (  # noqa: F401  (browser_installed is a fixture)
    browser_installed,
    pytestmark,
    run_feature_in_stages,
    running_stack,
    tab_named,
)


@pytest.fixture(scope="module")
def make_run_stack(tmp_path_factory, model_server: ScriptedModelServer):
    """Node-RED told that `make run` restarts the service, and the service behind it (running)."""
    with running_stack(tmp_path_factory.mktemp("browser-restart"), model_server.base_url,
                       nodered_env={"AI_SIDEBAR_SERVICE_SUPERVISED": "make run"}) as stack:
        yield stack


def test_a_restart_under_make_run_names_make_run_offers_no_commands_and_clears_once_the_service_answers(
        make_run_stack, model):
    nodered, service = make_run_stack
    tab = tab_named(nodered, "01 - Catch error")
    back: list[float] = []

    def restart() -> None:
        def start() -> None:
            service.start()  # returns once the service answers its /healthz (polled every 0.2 s)
            back.append(time.time())
        threading.Thread(target=start, daemon=True).start()

    try:
        seen = run_feature_in_stages(nodered, "restart", tab["id"], {"ready": service.kill, "advised": restart},
                                     QUESTION="are you there?")
    finally:
        service.start()

    assert seen["reconnecting"]["reconnecting"] and seen["reconnecting"]["commands"] == 0
    # The question sent while it was down says the same of itself (the relay knows make run restarts it).
    assert seen["failedAnswer"] == ("The AI assistant service does not answer; it is being started again. "
                                    "Try again in a moment.")
    advised = seen["advised"]
    assert not advised["reconnecting"] and advised["commands"] == 0
    # Not the error's own advice ("Start it or check AI_SIDEBAR_SERVICE_URL"): make run starts it again.
    assert advised["text"] == "The AI assistant service does not answer."
    assert seen["advisedHelp"] == ("make run restarts the AI assistant service when it stops; it should answer again "
                                   "in a moment. Its terminal shows why it stopped.")
    assert "pip" not in seen["advisedHelp"] and "docker" not in seen["advisedHelp"]
    # Gone within about a second of the service answering again (a check a second, plus the relayed /healthz).
    assert back and seen["hiddenAt"] / 1000 - back[0] < 3.0, (seen["hiddenAt"] / 1000, back)


def test_a_frozen_service_gets_the_banner_and_the_waiting_question_is_answered_once_it_goes_on(make_run_stack, model):
    """A stopped process (SIGSTOP: out of memory, stuck) still accepts connections, so no request fails: the
    sidebar notices the silence (no byte, not even the stream's 15 s ping, for 20 s), asks the service-status route,
    whose /healthz gives up after 5 s, and shows the banner. When the process goes on, the banner goes and the
    question, which waited all along, is answered."""
    nodered, service = make_run_stack
    tab = tab_named(nodered, "01 - Catch error")
    try:
        seen = run_feature_in_stages(nodered, "frozen", tab["id"], {"ready": service.freeze, "frozen": service.thaw},
                                     QUESTION="still there?")
    finally:
        service.thaw()
    # 20 s of silence, then at most 5 s for the health check, and the banner (not before the silence).
    assert 20_000 <= seen["bannerAfterMs"] < 60_000, seen["bannerAfterMs"]
    assert seen["frozen"]["commands"] == 0
    assert seen["answer"]["errors"] == [] and seen["answer"]["text"], seen["answer"]
