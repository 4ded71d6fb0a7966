"""Fixtures of the SDK tests: a real `sgam serve` started by .ci/sdk/serve.sh.

The server's address and keys come from the env file serve.sh writes, named
by $SGAM_SDK_ENV (.ci/sdk/python.sh sets it). Without it, the tests that need
a server skip, loudly; under CI=true they fail instead.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import string
from collections.abc import Iterator

import pytest

import sgam

REPO = pathlib.Path(__file__).resolve().parents[3]
OPENAPI = REPO / "server" / "openapi.json"


class Env(dict):
    """serve.sh's variables; its repr hides them, so that no failing test prints a key."""

    def __repr__(self) -> str:
        return f"<serve.sh env: {', '.join(sorted(self))}>"


def _read_env() -> Env | None:
    path = os.environ.get("SGAM_SDK_ENV")
    if not path:
        return None
    env = Env()
    for line in pathlib.Path(path).read_text().splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            env[k.strip()] = v.strip()
    return env


ENV = _read_env()


@pytest.fixture(scope="session")
def env() -> dict[str, str]:
    if ENV is None:
        msg = "no sgam server: run the tests with `bash .ci/sdk/python.sh` (or set SGAM_SDK_ENV to serve.sh's env file)"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return ENV


@pytest.fixture(scope="session")
def url(env: dict[str, str]) -> str:
    return env["SGAM_URL"]


@pytest.fixture(scope="session")
def keys(env: dict[str, str]) -> dict[str, str]:
    """Every key the server has, by env name: the tests look for them in logs and errors."""
    return {k: v for k, v in env.items() if k.endswith("_KEY")}


def _client(env: dict[str, str], name: str, **kw: object) -> Iterator[sgam.Client]:
    with sgam.Client(env["SGAM_URL"], env[name], **kw) as c:  # type: ignore[arg-type]
        yield c


@pytest.fixture
def alpha(env: dict[str, str]) -> Iterator[sgam.Client]:
    """An admin key of tenant alpha."""
    yield from _client(env, "SGAM_ALPHA_ADMIN_KEY")


@pytest.fixture
def alpha_write(env: dict[str, str]) -> Iterator[sgam.Client]:
    yield from _client(env, "SGAM_ALPHA_WRITE_KEY")


@pytest.fixture
def alpha_read(env: dict[str, str]) -> Iterator[sgam.Client]:
    yield from _client(env, "SGAM_ALPHA_READ_KEY")


@pytest.fixture
def beta(env: dict[str, str]) -> Iterator[sgam.Client]:
    """An admin key of tenant beta: it must see nothing of alpha's."""
    yield from _client(env, "SGAM_BETA_ADMIN_KEY")


@pytest.fixture
def gamma(env: dict[str, str]) -> Iterator[sgam.Client]:
    """A write key of tenant gamma, whose token budget is 1 a day."""
    yield from _client(env, "SGAM_GAMMA_WRITE_KEY")


@pytest.fixture
def delta(env: dict[str, str]) -> Iterator[sgam.Client]:
    """An admin key of tenant delta, which has a schema (schema_yaml)."""
    with sgam.Client(env["SGAM_URL"], env["SGAM_DELTA_ADMIN_KEY"]) as c:
        c.schema.apply(SCHEMA_YAML)
        yield c


@pytest.fixture
def uid() -> str:
    """A fresh lowercase word: the tests share one database, and each writes its own subjects."""
    return "".join(random.choices(string.ascii_lowercase, k=10))


@pytest.fixture(scope="session")
def openapi_doc() -> dict:
    return json.loads(OPENAPI.read_text())


def openapi_operations(doc: dict) -> set[str]:
    ops = set()
    for path, item in doc["paths"].items():
        for method in item:
            if method in ("get", "post", "put", "patch", "delete", "head", "options"):
                ops.add(f"{method.upper()} {path}")
    return ops


SCHEMA_YAML = """\
name: sdk-tests
retention:
  hourly: 1h
attributes:
  full_name: {memory: profile, type: string}
  email_opt_in: {memory: preference, type: boolean, sensitive: true}
  account: {memory: relation, type: {ref: account}}
  owner: {memory: relation, type: {ref: customer}}
  plan: {memory: account, type: {enum: [free, pro]}}
  tags: {memory: profile, type: string, cardinality: many}
  lifetime_value: {memory: account, type: number}
  address:
    memory: profile
    json_schema:
      type: object
      properties:
        zip: {type: string, pattern: "^[0-9]{4,5}$"}
      required: [zip]
      additionalProperties: false
"""
