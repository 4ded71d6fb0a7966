"""A LangGraph long-term memory store backed by sgam (``pip install 'sgam[langgraph]'``).

:class:`SgamStore` is a :class:`langgraph.store.base.BaseStore`: LangGraph
agents (``graph.compile(store=...)``, ``create_react_agent(store=...)``) and
LangMem's memory tools use it as they use any store. The mapping, in short
(docs/langgraph.md has the whole of it):

* the **tenant** is the API key's, never part of a namespace;
* a **namespace** ``("users", "u1", "memories")`` is one **subject**,
  ``langgraph:users.u1.memories`` (``subject_prefix`` + the labels joined by
  ``.``, each label percent-encoded where sgam's ids need it);
* a **key** is an **attribute** of that subject (itself when it is an
  identifier sgam takes, else ``_`` + its base64url);
* a **value** (a dict) is the fact's JSON value; a put asserts it from now on,
  a delete retracts it, and **every earlier value stays in the ledger**:
  :meth:`SgamStore.history` lists the versions, :meth:`SgamStore.at` reads the
  store as it was at a valid instant (``as_of``) as believed at a belief
  instant (``known_at``).

sgam has no listing of subjects, so the store keeps an index of its
namespaces as facts of one more subject (``subject_prefix`` + ``%namespaces``),
which ``list_namespaces`` and ``search`` read.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import hashlib
import re
import threading
import unicodedata
import uuid
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any
from urllib.parse import quote, unquote

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
    )
except ImportError as e:  # pragma: no cover
    raise ImportError("sgam.langgraph needs LangGraph: pip install 'sgam[langgraph]'") from e

from . import _ops as ops
from ._core import Op as Call
from ._drive import Steps, arun, run
from .client import AsyncClient, Client
from .errors import Conflict, Invalid
from .models import AttributeValue, Fact

__all__ = ["SgamStore", "namespace_subject", "subject_namespace", "key_attribute", "attribute_key"]

_PLAIN_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}\Z")
_RESERVED_ATTRIBUTES = {"alias"}  # every tenant's built-in set of a subject's names
_ONE_MICROSECOND = _dt.timedelta(microseconds=1)
_WORD = re.compile(r"\w+", re.UNICODE)


def _escape_label(label: str) -> str:
    out = []
    for ch in label:
        if ch in "%." or unicodedata.category(ch)[0] in "CZ":
            out.append(quote(ch, safe=""))
        else:
            out.append(ch)
    return "".join(out)


def namespace_subject(namespace: tuple[str, ...], prefix: str = "langgraph:") -> str:
    """The sgam subject of a LangGraph namespace."""
    return prefix + ".".join(_escape_label(label) for label in namespace)


def subject_namespace(subject: str, prefix: str = "langgraph:") -> tuple[str, ...] | None:
    """The namespace of a subject :func:`namespace_subject` made, or None."""
    if not subject.startswith(prefix):
        return None
    rest = subject[len(prefix) :]
    if not rest:
        return None
    return tuple(unquote(label) for label in rest.split("."))


def key_attribute(key: str) -> str:
    """The sgam attribute of a LangGraph key: the key itself when sgam takes it
    as an attribute name, else ``_`` and the base64url of its UTF-8."""
    if _PLAIN_KEY.match(key) and key not in _RESERVED_ATTRIBUTES:
        return key
    attr = "_" + base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")
    if len(attr) > 128:
        raise Invalid(f"key {key[:40]!r}... is too long: sgam attributes hold at most 128 bytes, "
                      f"and this key needs {len(attr)}", field="key")
    return attr


def attribute_key(attribute: str) -> str | None:
    """The LangGraph key of an attribute :func:`key_attribute` made, or None."""
    if not attribute.startswith("_"):
        return None if attribute in _RESERVED_ATTRIBUTES else attribute
    enc = attribute[1:]
    try:
        return base64.urlsafe_b64decode(enc + "=" * (-len(enc) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def _native(v: Any) -> Any:
    """Numbers as LangGraph's other stores give them: int, or float."""
    if isinstance(v, Decimal):
        text = str(v)
        return int(v) if not any(c in text for c in ".eE") else float(v)
    if isinstance(v, dict):
        return {k: _native(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_native(x) for x in v]
    return v


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
    if condition.match_type not in ("prefix", "suffix"):
        raise ValueError(f"unsupported match type {condition.match_type!r}")
    return all(p == "*" or n == p for n, p in pairs)


def _compare(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_operator(value, k, v) for k, v in wanted.items())
        return isinstance(value, Mapping) and all(_compare(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (isinstance(value, (list, tuple)) and len(value) == len(wanted)
                and all(_compare(a, b) for a, b in zip(value, wanted)))
    return value == wanted


def _operator(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return _compare(value, operand)
    if op == "$ne":
        return not _compare(value, operand)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        try:
            a, b = float(value), float(operand)
        except (TypeError, ValueError):
            return False
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
    raise ValueError(f"unsupported filter operator {op!r}: use $eq, $ne, $gt, $gte, $lt or $lte")


def _texts(v: Any) -> Iterable[str]:
    if isinstance(v, str):
        yield v
    elif isinstance(v, Mapping):
        for k, x in v.items():
            yield str(k)
            yield from _texts(x)
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _texts(x)
    elif v is not None and not isinstance(v, bool):
        yield str(v)


def _score(query: str, item: Item) -> float:
    """The share of the query's words that the item (its key and value) holds."""
    words = set(_WORD.findall(query.lower()))
    if not words:
        return 0.0
    have = set(_WORD.findall(" ".join([item.key, *_texts(item.value)]).lower()))
    return len(words & have) / len(words)


class SgamStore(BaseStore):
    """A LangGraph ``BaseStore`` over an sgam server, within the tenant of one API key.

    Args:
        client: a :class:`sgam.Client` (for ``batch`` and the sync methods).
        aclient: a :class:`sgam.AsyncClient` (for ``abatch`` and the async
            methods). Give either, or both; the other is made with the same URL
            and key. Without either, both are made from ``base_url`` and
            ``api_key`` (``$SGAM_URL``, ``$SGAM_API_KEY``).
        subject_prefix: put before every namespace's subject, so that the
            store's subjects never meet those extraction writes (default
            ``"langgraph:"``; ``""`` shares them).
        source: the episode id every put cites as its source (a placeholder
            episode, created on first use). A put with a TTL cites an episode
            of its own instead (see ``ttl_classes``).
        ttl_classes: maps TTLs in minutes (LangGraph's unit) to retention
            classes of the tenant's schema; a put with one of these TTLs cites
            a new episode of that class, so the item's value is deleted when the
            episode expires (docs/lifecycle.md). Without it, a put with a TTL is
            refused (``supports_ttl`` is False), as LangGraph's contract says.
        ttl_config: LangGraph's TTL defaults (``default_ttl``); reads never
            refresh a TTL (sgam counts a retention class from the write).
        exact_numbers: keep numbers in values as :class:`sgam.Number`
            (Decimals) instead of int and float, as every LangGraph store
            returns them.
    """

    def __init__(
        self,
        client: Client | None = None,
        *,
        aclient: AsyncClient | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        subject_prefix: str = "langgraph:",
        source: str = "langgraph-store",
        ttl_classes: Mapping[float, str] | None = None,
        ttl_config: TTLConfig | None = None,
        exact_numbers: bool = False,
        as_of: _dt.datetime | str | None = None,
        known_at: _dt.datetime | str | None = None,
    ) -> None:
        if client is None and aclient is None:
            client = Client(base_url, api_key)
            aclient = AsyncClient(base_url, api_key)
        elif client is None:
            assert aclient is not None
            client = Client(aclient.base_url, aclient._key.get(), retry=aclient.retry)
        elif aclient is None:
            aclient = AsyncClient(client.base_url, client._key.get(), retry=client.retry)
        self._client = client
        self._aclient = aclient
        self._prefix = subject_prefix
        self._index = subject_prefix + "%namespaces"
        self._source = source
        self._ttl_classes = dict(ttl_classes or {})
        self.supports_ttl = bool(self._ttl_classes)
        self.ttl_config = ttl_config
        self._exact = exact_numbers
        self._as_of = as_of
        self._known_at = known_at
        self._lock = threading.Lock()
        self._last = _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)

    def __repr__(self) -> str:
        at = ""
        if self._as_of is not None or self._known_at is not None:
            at = f", as_of={self._as_of!r}, known_at={self._known_at!r}"
        return f"SgamStore({self._client!r}, subject_prefix={self._prefix!r}{at})"

    # sgam beyond the interface.

    def at(self, as_of: _dt.datetime | str | None = None, known_at: _dt.datetime | str | None = None) -> SgamStore:
        """The store as it was: every read at valid instant ``as_of`` as believed
        at ``known_at`` (either default now). The view refuses writes."""
        view = SgamStore(self._client, aclient=self._aclient, subject_prefix=self._prefix, source=self._source,
                         ttl_classes=self._ttl_classes, ttl_config=self.ttl_config, exact_numbers=self._exact,
                         as_of=as_of, known_at=known_at)
        return view

    def history(self, namespace: tuple[str, ...], key: str) -> list[Fact]:
        """Every version of an item, in write order: each put and delete, with
        both time windows (a delete is a row with ``tombstone`` True)."""
        return self._client.subjects.history(namespace_subject(tuple(namespace), self._prefix), key_attribute(key))

    async def ahistory(self, namespace: tuple[str, ...], key: str) -> list[Fact]:
        """:meth:`history`, asynchronously."""
        return await self._aclient.subjects.history(namespace_subject(tuple(namespace), self._prefix),
                                                    key_attribute(key))

    def close(self) -> None:
        self._client.close()

    async def aclose(self) -> None:
        await self._aclient.aclose()

    # The interface.

    def batch(self, ops_: Iterable[Op]) -> list[Result]:
        return run(self._client, self._batch(list(ops_)))

    async def abatch(self, ops_: Iterable[Op]) -> list[Result]:
        return await arun(self._aclient, self._batch(list(ops_)))

    # The logic, once for both.

    def _batch(self, batch: list[Op]) -> Steps[list[Result]]:
        for op in batch:
            _check(op)
        results: list[Result] = [None] * len(batch)
        # Reads see the store as it was before the batch; then its writes,
        # the last one of each item only (as LangGraph's InMemoryStore does).
        namespaces: list[tuple[str, ...]] | None = None
        if any(isinstance(op, (SearchOp, ListNamespacesOp)) for op in batch):
            namespaces = yield from self._namespaces()
        gets = [(i, op) for i, op in enumerate(batch) if isinstance(op, GetOp)]
        if gets:
            answers = yield [self._read(op.namespace, op.key) for _, op in gets]
            for (i, op), answer in zip(gets, answers):
                results[i] = self._item(tuple(op.namespace), op.key, answer)
        for i, op in enumerate(batch):
            if isinstance(op, SearchOp):
                assert namespaces is not None
                results[i] = yield from self._search(op, namespaces)
            elif isinstance(op, ListNamespacesOp):
                assert namespaces is not None
                results[i] = _list_namespaces(op, namespaces)
        writes: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in batch:
            if isinstance(op, PutOp):
                writes[(tuple(op.namespace), op.key)] = op
        if writes:
            if self._as_of is not None or self._known_at is not None:
                raise Invalid("this store is a view of the past (SgamStore.at): it cannot be written",
                              field="namespace")
            yield from self._write(list(writes.values()))
        return results

    def _read(self, namespace: tuple[str, ...], key: str) -> Call:
        return ops.get_value(namespace_subject(namespace, self._prefix), key_attribute(key),
                             as_of=self._as_of, known_at=self._known_at)

    def _value(self, fact: Fact | None) -> dict[str, Any] | None:
        if fact is None or fact.tombstone or fact.member is not None or not isinstance(fact.value, dict):
            return None
        return fact.value if self._exact else _native(fact.value)

    def _item(self, namespace: tuple[str, ...], key: str, answer: AttributeValue) -> Item | None:
        value = self._value(answer.fact)
        if value is None or answer.fact is None:
            return None
        t = _when(answer.fact)
        return Item(value=value, key=key, namespace=namespace, created_at=t, updated_at=t)

    def _namespaces(self) -> Steps[list[tuple[str, ...]]]:
        facts = yield ops.state(self._index, as_of=self._as_of, known_at=self._known_at)
        out = set()
        for f in facts:
            if isinstance(f.value, list) and f.value and all(isinstance(x, str) for x in f.value):
                out.add(tuple(f.value))
        return sorted(out)

    def _items_of(self, namespace: tuple[str, ...], facts: list[Fact]) -> list[Item]:
        items = []
        for f in facts:
            key = attribute_key(f.attribute or "")
            value = self._value(f)
            if key is None or value is None:
                continue
            t = _when(f)
            items.append(Item(value=value, key=key, namespace=namespace, created_at=t, updated_at=t))
        return items

    def _search(self, op: SearchOp, namespaces: list[tuple[str, ...]]) -> Steps[list[SearchItem]]:
        prefix = tuple(op.namespace_prefix)
        scope = [ns for ns in namespaces if ns[: len(prefix)] == prefix]
        states = yield [ops.state(namespace_subject(ns, self._prefix), as_of=self._as_of, known_at=self._known_at)
                        for ns in scope]
        items: list[Item] = []
        for ns, facts in zip(scope, states):
            items.extend(self._items_of(ns, facts))
        if op.filter:
            items = [it for it in items if all(_compare(it.value.get(k), v) for k, v in op.filter.items())]
        # Newest first; with a query, by the share of its words each item holds.
        items.sort(key=lambda it: (it.namespace, it.key))
        items.sort(key=lambda it: it.updated_at, reverse=True)
        scores: dict[int, float | None] = {id(it): None for it in items}
        if op.query:
            for it in items:
                scores[id(it)] = _score(op.query, it)
            items.sort(key=lambda it: scores[id(it)] or 0.0, reverse=True)
        page = items[op.offset : op.offset + op.limit]
        return [SearchItem(namespace=it.namespace, key=it.key, value=it.value, created_at=it.created_at,
                           updated_at=it.updated_at, score=scores[id(it)]) for it in page]

    def _next_instant(self, after: _dt.datetime | None = None) -> _dt.datetime:
        """Now, to the microsecond, after every instant this store wrote at (and after ``after``)."""
        with self._lock:
            t = _dt.datetime.now(_dt.timezone.utc)
            t = max(t, self._last + _ONE_MICROSECOND)
            if after is not None:
                t = max(t, after + _ONE_MICROSECOND)
            self._last = t
            return t

    def _write(self, writes: list[PutOp]) -> Steps[None]:
        puts = [w for w in writes if w.value is not None]
        deletes = [w for w in writes if w.value is None]
        # The index first, so that a read at the instant of an item's write
        # finds its namespace.
        touched = sorted({tuple(w.namespace) for w in puts})
        if touched:
            answers = yield [ops.get_value(self._index, _index_attribute(namespace_subject(ns, self._prefix)))
                             for ns in touched]
            missing = [ns for ns, a in zip(touched, answers) if a.fact is None or a.fact.tombstone]
            for ns in missing:
                yield ops.assert_fact(self._index, _index_attribute(namespace_subject(ns, self._prefix)), list(ns),
                                      source=self._source, valid_from=self._next_instant())
        for w in puts:
            yield from self._put(w)
        if deletes:
            current = yield [self._read(tuple(w.namespace), w.key) for w in deletes]
            for w, answer in zip(deletes, current):
                if answer.fact is None or answer.fact.tombstone:
                    continue  # nothing to delete
                yield ops.retract_fact(namespace_subject(tuple(w.namespace), self._prefix), key_attribute(w.key),
                                       source=self._source, at=self._next_instant())
            emptied = sorted({tuple(w.namespace) for w in deletes} - set(touched))
            states = yield [ops.state(namespace_subject(ns, self._prefix)) for ns in emptied]
            for ns, facts in zip(emptied, states):
                if not self._items_of(ns, facts):
                    attr = _index_attribute(namespace_subject(ns, self._prefix))
                    entry = yield ops.get_value(self._index, attr)
                    if entry.fact is not None and not entry.fact.tombstone:
                        yield ops.retract_fact(self._index, attr, source=self._source, at=self._next_instant())
        return None

    def _put(self, w: PutOp) -> Steps[None]:
        namespace = tuple(w.namespace)
        subject, attribute = namespace_subject(namespace, self._prefix), key_attribute(w.key)
        source = self._source
        if w.ttl is not None:
            retention = self._ttl_classes.get(w.ttl)
            if retention is None:
                raise Invalid(f"a TTL of {w.ttl:g} minutes has no retention class: this store maps "
                              f"{sorted(self._ttl_classes) or 'none'} (ttl_classes)", field="ttl")
            episode = yield ops.add_episode(
                f"LangGraph store: {w.key!r} in {'/'.join(namespace)}, kept as retention class {retention}",
                episode_id="lg-" + uuid.uuid4().hex, kind="event", retention=retention, extract="none")
            source = episode.episode_id
        value = dict(w.value or {})
        t = self._next_instant()
        for _ in range(5):
            try:
                res = yield ops.assert_fact(subject, attribute, value, source=source, valid_from=t)
            except Conflict:
                # Another writer put a different value at this very microsecond.
                t = self._next_instant()
                continue
            if res.fact is not None and res.fact.valid_to is not None:
                # A later version exists (another writer's clock runs ahead of
                # ours): the put must become the current value, so it is
                # asserted again after that version.
                t = self._next_instant(after=res.fact.valid_to)
                continue
            return None
        raise Conflict(f"could not make the put of {w.key!r} the current value after 5 tries", field="key")


def _when(f: Fact) -> _dt.datetime:
    return f.valid_from or f.recorded_at or _dt.datetime.now(_dt.timezone.utc)


def _index_attribute(subject: str) -> str:
    return "ns_" + hashlib.sha256(subject.encode()).hexdigest()[:40]


def _check(op: Op) -> None:
    def labels(ns: Any) -> None:
        for label in ns:
            if not isinstance(label, str) or not label or "." in label or "\x00" in label:
                raise InvalidNamespaceError(f"invalid namespace label {label!r} in {ns!r}")

    if isinstance(op, (GetOp, PutOp)):
        if not op.namespace:
            raise InvalidNamespaceError("namespace cannot be empty")
        labels(op.namespace)
        if isinstance(op, PutOp) and op.value is not None and not isinstance(op.value, Mapping):
            raise Invalid(f"a store value is a dict, not {type(op.value).__name__}", field="value")
    elif isinstance(op, SearchOp):
        labels(op.namespace_prefix)
    elif isinstance(op, ListNamespacesOp):
        for c in op.match_conditions or ():
            labels(c.path)
    else:
        raise ValueError(f"unknown store operation {type(op).__name__}")


def _list_namespaces(op: ListNamespacesOp, namespaces: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    found = [ns for ns in namespaces if all(_matches(c, ns) for c in (op.match_conditions or ()))]
    if op.max_depth is not None:
        found = sorted({ns[: op.max_depth] for ns in found})
    else:
        found = sorted(set(found))
    return found[op.offset : op.offset + op.limit]
