"""The LangGraph store over the real server: LangGraph's contract for stores,
and what sgam adds (history, reads at past instants), within one tenant."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from typing import TypedDict

import pytest
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

import sgam
from sgam.langgraph import SgamStore, attribute_key, key_attribute, namespace_subject, subject_namespace


@pytest.fixture
def store(env: dict[str, str], uid: str) -> Iterator[SgamStore]:
    """A store of tenant alpha with subjects of its own (prefix lg<uid>:)."""
    s = SgamStore(sgam.Client(env["SGAM_URL"], env["SGAM_ALPHA_WRITE_KEY"]), subject_prefix=f"lg{uid}:")
    yield s
    s.close()


def test_is_a_base_store(store: SgamStore) -> None:
    assert isinstance(store, BaseStore) and store.supports_ttl is False


def test_put_get_delete(store: SgamStore) -> None:
    ns = ("users", "u1", "memories")
    assert store.get(ns, "m1") is None
    store.put(ns, "m1", {"text": "likes teal", "n": 4.99, "k": 3, "nested": {"a": [1, 2.5, None, True]}})
    item = store.get(ns, "m1")
    assert isinstance(item, Item)
    assert (item.namespace, item.key) == (ns, "m1")
    assert item.value == {"text": "likes teal", "n": 4.99, "k": 3, "nested": {"a": [1, 2.5, None, True]}}
    assert type(item.value["n"]) is float and type(item.value["k"]) is int
    assert item.created_at.tzinfo is not None and item.updated_at >= item.created_at
    store.delete(ns, "m1")
    assert store.get(ns, "m1") is None
    store.delete(ns, "m1")  # deleting what is not there is no error
    store.delete(ns, "never")


def test_a_put_keeps_the_old_value_in_history(store: SgamStore) -> None:
    ns = ("users", "u2")
    store.put(ns, "profile", {"city": "Oslo"})
    between = dt.datetime.now(dt.timezone.utc)
    time.sleep(0.01)
    store.put(ns, "profile", {"city": "Bergen"})
    assert store.get(ns, "profile").value == {"city": "Bergen"}  # type: ignore[union-attr]
    versions = [f for f in store.history(ns, "profile") if f.retracted_at is None]
    assert [f.value for f in versions] == [{"city": "Oslo"}, {"city": "Bergen"}]
    assert versions[0].valid_to == versions[1].valid_from
    past = store.at(as_of=between)
    assert past.get(ns, "profile").value == {"city": "Oslo"}  # type: ignore[union-attr]
    assert [i.value for i in past.search(ns)] == [{"city": "Oslo"}]
    with pytest.raises(sgam.Invalid):
        past.put(ns, "profile", {"city": "Tromsø"})
    store.delete(ns, "profile")
    rows = [f for f in store.history(ns, "profile") if f.retracted_at is None]
    assert rows[-1].tombstone and [f.value for f in rows[:-1]] == [{"city": "Oslo"}, {"city": "Bergen"}]
    assert store.at(as_of=between).get(ns, "profile").value == {"city": "Oslo"}  # type: ignore[union-attr]


def test_search(store: SgamStore) -> None:
    store.put(("docs", "a"), "d1", {"type": "report", "status": "active", "score": 5, "text": "quarterly revenue"})
    store.put(("docs", "a"), "d2", {"type": "report", "status": "draft", "score": 3.5, "text": "hiring plan"})
    store.put(("docs", "b"), "d3", {"type": "memo", "status": "active", "score": 1, "text": "revenue memo",
                                    "meta": {"owner": "ana"}})
    store.put(("other",), "o1", {"type": "report"})
    assert {i.key for i in store.search(("docs",))} == {"d1", "d2", "d3"}
    assert {i.key for i in store.search(())} == {"d1", "d2", "d3", "o1"}
    assert {i.key for i in store.search(("docs", "a"))} == {"d1", "d2"}
    assert {i.key for i in store.search(("docs",), filter={"type": "report"})} == {"d1", "d2"}
    assert {i.key for i in store.search(("docs",), filter={"type": "report", "status": "active"})} == {"d1"}
    assert {i.key for i in store.search(("docs",), filter={"score": {"$gt": 3}})} == {"d1", "d2"}
    assert {i.key for i in store.search(("docs",), filter={"score": {"$gte": 1, "$lt": 5}})} == {"d2", "d3"}
    assert {i.key for i in store.search(("docs",), filter={"status": {"$ne": "active"}})} == {"d2"}
    assert {i.key for i in store.search(("docs",), filter={"meta": {"owner": "ana"}})} == {"d3"}
    hits = store.search(("docs",), query="revenue report")
    assert all(isinstance(h, SearchItem) for h in hits)
    assert [h.key for h in hits][:1] == ["d1"] and hits[0].score == 1.0
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    newest_first = store.search(("docs",))
    assert [h.key for h in newest_first] == ["d3", "d2", "d1"] and newest_first[0].score is None
    assert [h.key for h in store.search(("docs",), limit=2)] == ["d3", "d2"]
    assert [h.key for h in store.search(("docs",), limit=2, offset=2)] == ["d1"]
    assert store.search(("nothing",)) == []


def test_list_namespaces(store: SgamStore) -> None:
    namespaces = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f"),
                  ("b", "a", "f"), ("users", "123"), ("users", "456", "settings")]
    store.batch([PutOp(ns, f"id{i}", {"i": i}) for i, ns in enumerate(namespaces)])
    assert store.list_namespaces() == sorted(namespaces)
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"),
                                                         ("a", "b", "f")]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"),
                                                                      ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    # A namespace whose last item is deleted is listed no more.
    store.delete(("users", "123"), "id6")
    assert store.list_namespaces(prefix=("users",)) == [("users", "456", "settings")]


def test_batch(store: SgamStore) -> None:
    ns = ("batch",)
    store.put(ns, "k0", {"v": 0})
    results = store.batch([
        PutOp(ns, "k1", {"v": 1}),
        GetOp(ns, "k0"),
        GetOp(ns, "k1"),  # reads see the store as it was before the batch
        SearchOp(ns),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ns),)),
        PutOp(ns, "k2", {"v": 2}),
        PutOp(ns, "k2", {"v": 22}),  # the last write of an item wins
        PutOp(ns, "k0", None),  # a delete
    ])
    assert results[0] is None and results[5] is None and results[6] is None and results[7] is None
    assert results[1].value == {"v": 0} and results[2] is None  # type: ignore[union-attr]
    assert [i.key for i in results[3]] == ["k0"]  # type: ignore[union-attr]
    assert results[4] == [ns]
    assert store.get(ns, "k0") is None
    assert store.get(ns, "k1").value == {"v": 1}  # type: ignore[union-attr]
    assert store.get(ns, "k2").value == {"v": 22}  # type: ignore[union-attr]
    assert [f.value for f in store.history(ns, "k2")] == [{"v": 22}], "only the last write was sent"


def test_odd_namespaces_and_keys(store: SgamStore) -> None:
    odd = [(("spaces in label", " lead", "trail "), "key with spaces"),
           (("100%", "a/b", "ü-é", "tab\tx"), "alias"),
           (("k",), "ключ/🔑"),
           (("langgraph", "x"), "_underscore")]
    for ns, key in odd:
        store.batch([PutOp(ns, key, {"ns": list(ns), "key": key})])
    for ns, key in odd:
        assert store.get(ns, key).value == {"ns": list(ns), "key": key}  # type: ignore[union-attr]
    assert sorted(store.list_namespaces()) == sorted(ns for ns, _ in odd)
    assert {(i.namespace, i.key) for i in store.search(())} == set(odd)
    for ns, key in odd:
        subject = namespace_subject(ns, "p:")
        assert subject_namespace(subject, "p:") == ns
        assert attribute_key(key_attribute(key)) == key
    assert key_attribute("plain-key_1.2:x@y") == "plain-key_1.2:x@y"
    with pytest.raises(sgam.Invalid):
        key_attribute("k" * 200)


def test_invalid_namespaces(store: SgamStore) -> None:
    for ns in [(), ("a.b",), ("",), ("langgraph",)]:
        with pytest.raises(InvalidNamespaceError):
            store.put(ns, "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("a.b",), "k")])
    with pytest.raises(InvalidNamespaceError):
        store.search(("a.b",))


def test_ttl(env: dict[str, str], store: SgamStore, uid: str) -> None:
    with pytest.raises(NotImplementedError):
        store.put(("t",), "k", {"v": 1}, ttl=60)
    with sgam.Client(env["SGAM_URL"], env["SGAM_ALPHA_WRITE_KEY"]) as c:
        s = SgamStore(c, subject_prefix=f"lgttl{uid}:", ttl_classes={60: "hourly", 1440: "daily"})
        assert s.supports_ttl
        s.put(("t",), "k", {"v": 1}, ttl=60)
        [row] = s.history(("t",), "k")
        episode = c.episodes.get(row.sources[0])
        assert episode.retention == "hourly" and episode.kind == "event"
        s.put(("t",), "plain", {"v": 2})
        assert s.history(("t",), "plain")[0].sources == ["langgraph-store"]
        with pytest.raises(sgam.Invalid) as e:
            s.put(("t",), "k", {"v": 1}, ttl=5)
        assert e.value.field == "ttl"


def test_a_second_tenant_sees_nothing(env: dict[str, str], store: SgamStore, uid: str) -> None:
    store.put(("shared", "name"), "k", {"secret": "alpha's"})
    with sgam.Client(env["SGAM_URL"], env["SGAM_BETA_WRITE_KEY"]) as c:
        other = SgamStore(c, subject_prefix=f"lg{uid}:")
        assert other.get(("shared", "name"), "k") is None
        assert other.search(()) == [] and other.search(("shared",), query="secret") == []
        assert other.list_namespaces() == []
        assert [f for f in other.history(("shared", "name"), "k")] == []
        other.put(("shared", "name"), "k", {"secret": "beta's"})
        assert other.get(("shared", "name"), "k").value == {"secret": "beta's"}  # type: ignore[union-attr]
    assert store.get(("shared", "name"), "k").value == {"secret": "alpha's"}  # type: ignore[union-attr]
    assert len(store.history(("shared", "name"), "k")) == 1


async def test_async(env: dict[str, str], uid: str) -> None:
    async with sgam.AsyncClient(env["SGAM_URL"], env["SGAM_ALPHA_WRITE_KEY"]) as ac:
        s = SgamStore(aclient=ac, subject_prefix=f"lga{uid}:")
        await s.aput(("a", "1"), "k", {"v": 1})
        await s.aput(("a", "2"), "k", {"v": 2})
        await s.aput(("a", "1"), "k", {"v": 3})
        assert (await s.aget(("a", "1"), "k")).value == {"v": 3}  # type: ignore[union-attr]
        assert {i.value["v"] for i in await s.asearch(("a",))} == {2, 3}
        assert await s.alist_namespaces(prefix=("a",)) == [("a", "1"), ("a", "2")]
        await s.adelete(("a", "2"), "k")
        assert await s.alist_namespaces() == [("a", "1")]
        assert [f.value for f in await s.ahistory(("a", "1"), "k") if f.retracted_at is None] == [{"v": 1}, {"v": 3}]
        results = await s.abatch([GetOp(("a", "1"), "k"), PutOp(("a", "3"), "k", {"v": 4})])
        assert results[0].value == {"v": 3} and results[1] is None  # type: ignore[union-attr]
        s.close()


def test_in_a_langgraph_graph(store: SgamStore) -> None:
    from langgraph.config import get_store
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        user: str
        fact: str
        seen: list[str]

    def remember(state: State) -> dict:
        get_store().put(("memories", state["user"]), "latest", {"fact": state["fact"]})
        return {}

    def recall(state: State) -> dict:
        items = get_store().search(("memories", state["user"]))
        return {"seen": [i.value["fact"] for i in items]}

    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    app = graph.compile(store=store)
    out = app.invoke({"user": "u1", "fact": "prefers tea", "seen": []})
    assert out["seen"] == ["prefers tea"]
    out = app.invoke({"user": "u1", "fact": "prefers coffee", "seen": []})
    assert out["seen"] == ["prefers coffee"]
    assert [f.value for f in store.history(("memories", "u1"), "latest")] == [
        {"fact": "prefers tea"}, {"fact": "prefers tea"}, {"fact": "prefers coffee"}]
