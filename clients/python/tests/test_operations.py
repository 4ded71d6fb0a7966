"""Every operation of server/openapi.json through the SDK, against the real server."""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
from typing import Any

import pytest

import sgam
from sgam._core import Op

from .conftest import openapi_operations


def t(day: int, hour: int = 9) -> dt.datetime:
    return dt.datetime(2026, 6, day, hour, tzinfo=dt.timezone.utc)


def resolve(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def test_every_documented_operation_has_a_method(openapi_doc: dict) -> None:
    documented = openapi_operations(openapi_doc)
    assert set(sgam.OPERATIONS) == documented, (
        f"no SDK method for {sorted(documented - set(sgam.OPERATIONS))}; "
        f"SDK methods for no documented operation: {sorted(set(sgam.OPERATIONS) - documented)}"
    )
    client, aclient = sgam.Client("http://127.0.0.1:1"), sgam.AsyncClient("http://127.0.0.1:1")
    for op, dotted in sgam.OPERATIONS.items():
        sync, coro = resolve(client, dotted), resolve(aclient, dotted)
        assert callable(sync) and not inspect.iscoroutinefunction(sync), op
        assert inspect.iscoroutinefunction(coro), op
        assert inspect.signature(sync) == inspect.signature(coro), f"{dotted}: the two clients differ"
    client.close()
    asyncio.run(aclient.aclose())


def test_the_server_serves_the_document_the_sdk_was_checked_against(alpha: sgam.Client, openapi_doc: dict) -> None:
    assert alpha.openapi() == sgam.loads(sgam.dumps(openapi_doc))


class Recording(sgam.Client):
    """A client that notes each operation it sends."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.seen: set[str] = set()

    def call(self, op: Op) -> Any:
        self.seen.add(op.name)
        return super().call(op)


class AsyncRecording(sgam.AsyncClient):
    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.seen: set[str] = set()

    async def call(self, op: Op) -> Any:
        self.seen.add(op.name)
        return await super().call(op)


def test_every_operation_sync(env: dict[str, str], delta: sgam.Client, uid: str, openapi_doc: dict) -> None:
    c = Recording(env["SGAM_URL"], env["SGAM_DELTA_ADMIN_KEY"])
    cust, acct = f"cust-{uid}", f"acct-{uid}"

    assert c.health().ok and c.ready().ok
    assert c.openapi()["openapi"].startswith("3.1")
    assert "sgam_http_requests_total" in c.metrics()

    schema = c.schema.get()
    assert schema.tenant == "delta" and schema.version >= 1 and not schema.store_default
    assert "plan" in (schema.schema_ or {}).get("attributes", {})
    dry = c.schema.apply({"attributes": {"plan": {"memory": "account", "type": {"enum": ["free", "pro", "max"]}}}},
                         dry_run=True)
    assert dry.diff, "a dry run shows the diff"
    assert c.schema.get().version == schema.version, "a dry run applies nothing"

    ep = c.episodes.add("Mira Chen called about her plan.", episode_id=f"{uid}-e1", session=uid,
                        occurred_at=t(1), extract="none", metadata={"channel": "phone"}, subjects=[cust])
    assert ep.episode_id == f"{uid}-e1" and ep.queued is False and ep.extraction is None
    got = c.episodes.get(f"{uid}-e1")
    assert got.content == "Mira Chen called about her plan." and got.metadata == {"channel": "phone"}
    assert [e.episode_id for e in c.episodes.list(session=uid, limit=10)] == [f"{uid}-e1"]
    assert c.extractions.list(f"{uid}-e1") == []

    first = c.facts.assert_(cust, "full_name", "Mira Chen", source=f"{uid}-e1", valid_from=t(1))
    second = c.facts.assert_(cust, "full_name", "Mira Lind", source=f"{uid}-e2", valid_from=t(3))
    assert first.fact and second.fact and second.fact.value == "Mira Lind"
    assert c.subjects.get(cust, "full_name", as_of=t(2)).fact.value == "Mira Chen"  # type: ignore[union-attr]
    assert c.subjects.get(cust, "full_name").fact.value == "Mira Lind"  # type: ignore[union-attr]
    trace = c.facts.trace(second.fact.fact_id)  # type: ignore[arg-type]
    assert trace.chain[0].fact_id == second.fact.fact_id
    assert {e.episode_id for e in trace.episodes} >= {f"{uid}-e2"}
    retracted = c.facts.retract(cust, "full_name", source=f"{uid}-e3", at=t(5))
    assert retracted.fact and retracted.fact.tombstone
    history = c.subjects.history(cust, "full_name")
    assert [f.value for f in history if f.retracted_at is None] == ["Mira Chen", "Mira Lind", None]
    assert [f.attribute for f in c.subjects.state(cust, as_of=t(4))] == ["full_name"]
    assert c.subjects.state(cust, as_of=t(6)) == [] or all(f.attribute != "full_name"
                                                          for f in c.subjects.state(cust, as_of=t(6)))

    c.sets.add(cust, "tags", "vip", source=f"{uid}-e1", valid_from=t(1))
    c.sets.add(cust, "tags", "early", source=f"{uid}-e1", valid_from=t(1))
    removed = c.sets.remove(cust, "tags", "vip", source=f"{uid}-e3", at=t(4))
    assert removed.fact and removed.fact.member == "vip"
    members = c.subjects.get(cust, "tags", as_of=t(2)).facts
    assert sorted(f.member for f in members or []) == ["early", "vip"]
    assert [f.member for f in c.subjects.get(cust, "tags").facts or []] == ["early"]

    c.facts.assert_(cust, "account", acct, source=f"{uid}-e1", valid_from=t(1))
    c.facts.assert_(acct, "plan", "pro", source=f"{uid}-e1", valid_from=t(1))
    hops = c.subjects.traverse(cust, ["account"], as_of=t(2))
    assert [(h.from_, h.attribute, h.to) for h in hops] == [(cust, "account", acct)]

    held = c.facts.assert_(cust, "email_opt_in", True, source=f"{uid}-e1", valid_from=t(1))
    assert held.fact is None and held.pending is not None and held.pending.reason == "sensitive"
    pending = c.pending.list(subject=cust)
    assert [p.pending_id for p in pending] == [held.pending.pending_id]
    c.episodes.add("Yes, send me the newsletter.", episode_id=f"{uid}-ok", kind="user_confirmed", extract="none")
    confirmed = c.pending.confirm(held.pending.pending_id, f"{uid}-ok")  # type: ignore[arg-type]
    assert confirmed.fact is not None and confirmed.fact.value is True
    again = c.facts.assert_(cust, "email_opt_in", False, source=f"{uid}-e3", valid_from=t(6))
    assert again.pending is not None
    assert c.pending.dismiss(again.pending.pending_id).ok  # type: ignore[arg-type]
    assert c.pending.list(subject=cust) == []

    ctx = c.recall(f"What is the plan of {acct}?", subjects=[acct], as_of=t(2), budget=400, evidence_limit=-1,
                   hops=1, session=uid)
    assert isinstance(ctx, sgam.RecallContext) and '"pro"' in ctx.rendered and str(ctx) == ctx.rendered
    assert [f.value for f in ctx.facts] == ["pro"] and ctx.facts[0].status == "current"
    none = c.recall(f"What is the plan of {acct}?", subjects=[acct], evidence="none")
    assert none.evidence == [] and [f.value for f in none.facts] == ["pro"]

    result = c.replay([
        {"op": "assert", "subject": f"r-{uid}", "attribute": "plan", "value": "free",
         "valid_from": "2026-06-01T00:00:00Z", "source": f"{uid}-r"},
        {"op": "get", "subject": f"r-{uid}", "attribute": "plan"},
        {"op": "assert", "subject": f"r-{uid}", "attribute": "plan", "value": "gold",
         "valid_from": "2026-06-02T00:00:00Z", "source": f"{uid}-r"},
    ])
    assert (result.lines, result.failed) == (3, 1)
    assert result.results[1]["fact"]["value"] == "free" and result.results[2]["ok"] is False

    answer = c.mcp({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert {"recall", "history", "trace"} <= {tool["name"] for tool in answer["result"]["tools"]}

    receipt = c.forget(subject=cust)
    assert receipt.kind and receipt.facts_deleted > 0
    assert receipt.receipt_id in [r.receipt_id for r in c.receipts()]
    assert c.subjects.history(cust, "full_name") == []
    c.close()

    missing = openapi_operations(openapi_doc) - c.seen
    assert not missing, f"operations this test did not send: {sorted(missing)}"


async def test_every_operation_async(env: dict[str, str], delta: sgam.Client, uid: str, openapi_doc: dict) -> None:
    async with AsyncRecording(env["SGAM_URL"], env["SGAM_DELTA_ADMIN_KEY"]) as c:
        cust, acct = f"acust-{uid}", f"aacct-{uid}"
        assert (await c.health()).ok and (await c.ready()).ok
        assert (await c.openapi())["paths"]
        assert "sgam_" in await c.metrics()
        assert (await c.schema.get()).version >= 1
        assert (await c.schema.apply(SCHEMA_SAME, dry_run=True)).version >= 1
        await c.episodes.add("An async episode.", episode_id=f"{uid}-a1", session=uid, extract="none")
        assert (await c.episodes.get(f"{uid}-a1")).session == uid
        assert len(await c.episodes.list(session=uid)) == 1
        assert await c.extractions.list(f"{uid}-a1") == []
        w = await c.facts.assert_(cust, "full_name", "Ada", source=f"{uid}-a1", valid_from=t(1))
        assert (await c.subjects.get(cust, "full_name")).fact.value == "Ada"  # type: ignore[union-attr]
        assert len((await c.facts.trace(w.fact.fact_id)).chain) == 1  # type: ignore[union-attr]
        await c.facts.retract(cust, "full_name", source=f"{uid}-a1", at=t(2))
        assert len([f for f in await c.subjects.history(cust, "full_name") if f.retracted_at is None]) == 2
        assert await c.subjects.state(cust) == []
        await c.sets.add(cust, "tags", "a", source=f"{uid}-a1", valid_from=t(1))
        await c.sets.remove(cust, "tags", "a", source=f"{uid}-a1", at=t(2))
        await c.facts.assert_(cust, "account", acct, source=f"{uid}-a1", valid_from=t(1))
        assert [h.to for h in await c.subjects.traverse(cust, "account")] == [acct]
        held = await c.facts.assert_(cust, "email_opt_in", True, source=f"{uid}-a1", valid_from=t(1))
        assert held.pending is not None
        assert len(await c.pending.list(subject=cust)) == 1
        await c.episodes.add("Yes.", episode_id=f"{uid}-aok", kind="user_confirmed", extract="none")
        assert (await c.pending.confirm(held.pending.pending_id, f"{uid}-aok")).fact is not None  # type: ignore[arg-type]
        held2 = await c.facts.assert_(cust, "email_opt_in", False, source=f"{uid}-a1", valid_from=t(3))
        assert (await c.pending.dismiss(held2.pending.pending_id)).ok  # type: ignore[union-attr, arg-type]
        assert "Ada" not in (await c.recall("full name?", subjects=[cust])).rendered
        assert (await c.replay("")).lines == 0
        assert "result" in await c.mcp({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        receipt = await c.forget(subject=cust)
        assert receipt.receipt_id in [r.receipt_id for r in await c.receipts()]
    missing = openapi_operations(openapi_doc) - c.seen
    assert not missing, f"operations this test did not send: {sorted(missing)}"


SCHEMA_SAME = {"attributes": {"full_name": {"memory": "profile", "type": "string"}}}


def test_extract_now_returns_the_record_and_the_facts(alpha: sgam.Client, uid: str) -> None:
    name = "Zed" + uid
    ep = alpha.episodes.add(f"{name.capitalize()}'s favorite color is teal.", episode_id=f"{uid}-x", extract="now")
    assert ep.extraction is not None and ep.extraction.status == "done", ep
    assert [a.outcome for a in ep.extraction.accepted] == ["written"]
    fact_id = ep.extraction.accepted[0].fact_id
    assert alpha.subjects.get(name.lower(), "favorite_color").fact.fact_id == fact_id  # type: ignore[union-attr]
    records = alpha.extractions.list(f"{uid}-x")
    assert [r.extraction_id for r in records] == [ep.extraction.extraction_id]


def test_background_extraction_reaches_recall(alpha: sgam.Client, uid: str) -> None:
    name = "Quin" + uid
    ep = alpha.episodes.add(f"{name.capitalize()}'s home city is Oslo.", session=uid)
    assert ep.queued is True
    turns = sgam.capture.TurnMemory(alpha, session=uid)
    assert turns.wait_extracted(ep.episode_id, timeout=30), "the workers extracted the episode"
    ctx = alpha.recall(f"Where does {name.capitalize()} live?", subjects=[name.lower()])
    assert '"Oslo"' in ctx.rendered


def test_path_ids_are_escaped(alpha: sgam.Client, uid: str) -> None:
    subject = f"a/b c?d#e%f {uid} ü"
    alpha.facts.assert_(subject, "note", "x", source="e1", valid_from=t(1))
    assert alpha.subjects.get(subject, "note").fact.subject == subject  # type: ignore[union-attr]
    assert [f.subject for f in alpha.subjects.state(subject)] == [subject]
    for dots in (".", ".."):  # no subject: URL parsers remove such a path segment, so the server refuses them
        with pytest.raises(sgam.Invalid) as e:
            alpha.facts.assert_(dots, f"note-{uid}", dots, source="e1", valid_from=t(1))
        assert e.value.field == "subject"
        with pytest.raises(sgam.Invalid) as e:
            alpha.subjects.get(dots, f"note-{uid}")  # sent escaped (%2E), read as the dot, refused
        assert e.value.field == "subject"
    with pytest.raises(sgam.Invalid) as e:
        alpha.subjects.state("")
    assert e.value.field == "subject"


def test_a_second_tenant_sees_nothing_of_the_first(alpha: sgam.Client, beta: sgam.Client, uid: str) -> None:
    ep = alpha.episodes.add(f"Secret{uid}'s code is hidden.", episode_id=f"{uid}-s", session=uid, extract="now")
    w = alpha.facts.assert_(uid, "code", "hidden", source=f"{uid}-s", valid_from=t(1))
    alpha.facts.assert_(uid, "account", f"acct-{uid}", source=f"{uid}-s", valid_from=t(1))
    assert w.fact is not None and ep.extraction is not None
    assert beta.subjects.state(uid) == []
    assert beta.subjects.get(uid, "code").fact is None
    assert beta.subjects.history(uid, "code") == []
    assert beta.subjects.traverse(uid, "account") == []
    with pytest.raises(sgam.NotFound):
        beta.episodes.get(f"{uid}-s")
    with pytest.raises(sgam.NotFound):
        beta.facts.trace(w.fact.fact_id)  # type: ignore[arg-type]
    with pytest.raises(sgam.NotFound):
        beta.extractions.list(f"{uid}-s")
    assert beta.episodes.list(session=uid) == []
    ctx = beta.recall(f"What is {uid}'s code?", subjects=[uid])
    assert ctx.facts == [] and "hidden" not in ctx.rendered
    assert all(r.target != uid for r in beta.receipts())
    # beta's forget of the same subject touches nothing of alpha's.
    assert beta.forget(subject=uid).facts_deleted == 0
    assert alpha.subjects.get(uid, "code").fact.value == "hidden"  # type: ignore[union-attr]
