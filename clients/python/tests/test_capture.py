"""The capture-in-a-loop helper and its LangGraph example, against the real server
(whose scripted model extracts "Name's attribute is value." sentences)."""

from __future__ import annotations

import datetime as dt
import os
import pathlib
import subprocess
import sys

import sgam
from sgam.capture import TurnMemory, last_turn, turn_text

from .conftest import REPO


def test_turn_text_and_last_turn() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    assert turn_text(" hi ", "hello") == "User: hi\nAssistant: hello"
    msgs = [HumanMessage("first"), AIMessage("one"), SystemMessage("memory"), HumanMessage("second"),
            AIMessage("", tool_calls=[{"name": "recall", "args": {}, "id": "c"}]),
            ToolMessage("tool says", tool_call_id="c"), AIMessage("two")]
    assert last_turn(msgs) == ("second", "two")
    assert last_turn([{"role": "user", "content": "q"}]) == ("q", None)


def test_capture_then_context(alpha_write: sgam.Client, uid: str) -> None:
    name = "Kora" + uid
    turns = TurnMemory(alpha_write, session=uid)
    assert f"{name.lower()} favorite_tea" not in turns.context(f"What is {name}'s favorite tea?")
    ep = turns.capture(f"By the way, {name}'s favorite tea is oolong.", "Noted!")
    assert ep.session == uid and ep.queued and ep.content.startswith("User: By the way")  # type: ignore[union-attr]
    records = turns.wait_extracted(timeout=30)
    assert records and records[0].status == "done"
    block = turns.context(f"What is {name}'s favorite tea?")
    assert f'{name.lower()} favorite_tea = "oolong"' in block
    # A retry of one capture (same instant, same words) is the same episode.
    when = dt.datetime.now(dt.timezone.utc)
    a = turns.capture("same words", "same answer", occurred_at=when)
    b = turns.capture("same words", "same answer", occurred_at=when)
    c = turns.capture("same words", "same answer")
    assert a.episode_id == b.episode_id != c.episode_id


def test_capture_messages(alpha_write: sgam.Client, uid: str) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    turns = TurnMemory(alpha_write, session=uid, extract="none", subjects=[f"s-{uid}"])
    ep = turns.capture_messages([HumanMessage("hello"), AIMessage("hi there")])
    assert ep is not None and ep.content == "User: hello\nAssistant: hi there" and ep.subjects == [f"s-{uid}"]
    assert turns.capture_messages([AIMessage("no user")]) is None
    assert turns.captured == [ep.episode_id]


async def test_async_turns(env: dict[str, str], uid: str) -> None:
    name = "Vela" + uid
    async with sgam.AsyncClient(env["SGAM_URL"], env["SGAM_ALPHA_WRITE_KEY"]) as ac:
        turns = TurnMemory(ac, session=uid)
        await turns.acapture(f"{name}'s lucky number is seven.")
        assert await turns.await_extracted(timeout=30)
        assert '"seven"' in await turns.acontext(f"What is {name}'s lucky number?")


def test_a_second_tenant_recalls_nothing_of_the_first(env: dict[str, str], alpha_write: sgam.Client,
                                                       uid: str) -> None:
    name = "Rune" + uid
    turns = TurnMemory(alpha_write, session=uid)
    turns.capture(f"{name}'s pin is secret.")
    assert turns.wait_extracted(timeout=30)
    assert '"secret"' in turns.context(f"What is {name}'s pin?")
    with sgam.Client(env["SGAM_URL"], env["SGAM_BETA_WRITE_KEY"]) as beta:
        other = TurnMemory(beta, session=uid)  # the same session name, another tenant
        block = other.context(f"What is {name}'s pin?")
        assert "secret" not in block and name not in block.split("\n", 1)[1]


def test_the_langgraph_example_runs(env: dict[str, str]) -> None:
    example = REPO / "examples" / "python" / "langgraph_capture_loop.py"
    run = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "SGAM_URL": env["SGAM_URL"], "SGAM_API_KEY": env["SGAM_ALPHA_WRITE_KEY"]},
                         cwd=pathlib.Path(example).parent)
    assert run.returncode == 0, run.stderr
    assert "assistant: From memory: mira's favorite color is \"teal\"" in run.stdout
    assert env["SGAM_ALPHA_WRITE_KEY"] not in run.stdout + run.stderr
