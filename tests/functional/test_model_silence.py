"""A turn waiting on a silent model says so in the runtime's log after ``AGENTKIT_MODEL_SILENCE_WARN_SECONDS``, long
before the CLI's own minutes-long timeout (``runtime/agent/silence.py``), through the real server and SDK."""

from __future__ import annotations

from pathlib import Path


def test_a_silent_model_is_reported_in_the_log_long_before_the_cli_gives_up(tmp_path: Path) -> None:
    from harness.cli import write_fake_cli
    from harness.runtime_server import RuntimeServer, session_id

    server = RuntimeServer(
        env={
            "AGENTKIT_CLI_PATH": str(write_fake_cli(tmp_path)),
            "AGENTKIT_STATE_DIR": str(tmp_path / "state"),
            "AGENTKIT_MODEL_SILENCE_WARN_SECONDS": "1",
        },
        log_path=tmp_path / "server.log",
    ).start()
    try:
        reply = server.invoke("[slow:2500] hello", session=session_id("silent-model"))
    finally:
        server.stop()
    assert reply.events[-1]["type"] == "result"
    warned = [
        line
        for line in (tmp_path / "server.log").read_text().splitlines()
        if "no bytes from the model" in line
    ]
    assert warned and "WARNING" in warned[0]
