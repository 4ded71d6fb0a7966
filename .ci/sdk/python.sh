#!/usr/bin/env bash
# The Python SDK's tests (clients/python) against a real `sgam serve`:
#
#   bash .ci/sdk/python.sh
#
# 1. a fresh venv with `pip install ./clients/python` alone: the SDK installs
#    with its two dependencies (httpx, pydantic), imports, and its adapters
#    say which extra they need;
# 2. a fresh venv with `pip install ./clients/python[all,test]`, every version
#    pinned by clients/python/constraints.txt (langgraph, langchain-core,
#    openai-agents, pytest and what they pull in; hatchling for the build);
# 3. .ci/sdk/serve.sh starts the servers (sgam built from this checkout, or
#    $SGAM_BIN), pytest runs clients/python/tests against them, and the
#    servers are stopped, pass or fail.
#
# $SGAM_SDK_PYTHON picks the interpreter (3.11 or later for the pinned test
# environment, though the SDK itself runs on 3.10; default python3).
# Work files (venvs, database, logs) go to a temporary directory, removed at
# the end; $SGAM_SDK_WORK names one to keep instead.
set -euo pipefail

name=python.sh
source "$(dirname "$0")/work.sh"
python=${SGAM_SDK_PYTHON:-python3}

"$python" - <<'PY'
import sys
# The SDK runs on 3.10; its pinned test environment needs 3.11 (langchain-core 1.8 does).
if sys.version_info < (3, 11):
    sys.exit(f"python.sh: the SDK's tests need Python 3.11 or later, not {sys.version.split()[0]}")
PY

export PIP_CONSTRAINT=$root/clients/python/constraints.txt # pins the build backend too
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
export OPENAI_AGENTS_DISABLE_TRACING=1 # no trace export: the tests reach nothing but the server

echo "python.sh: pip install ./clients/python (no extras) into a fresh venv" >&2
rm -rf "$work/bare"
"$python" -m venv "$work/bare"
"$work/bare/bin/pip" install -q "$root/clients/python"
"$work/bare/bin/python" - <<'PY'
import importlib.metadata as md
import sgam

requires = [r.split(";")[0].strip() for r in md.requires("sgam") or [] if "extra ==" not in r]
names = sorted(r.split(">")[0].split("<")[0].split("=")[0].strip().lower() for r in requires)
assert names == ["httpx", "pydantic"], names
c = sgam.Client("http://127.0.0.1:1")
assert "api_key" in repr(c)
for module, extra in [("sgam.langgraph", "langgraph"), ("sgam.langchain", "langchain"), ("sgam.openai_agents", "openai-agents")]:
    try:
        __import__(module)
    except ImportError as e:
        assert f"sgam[{extra}]" in str(e), e
    else:
        raise AssertionError(f"{module} imported without its extra")
print(f"python.sh: sgam {sgam.__version__} installs and imports with httpx and pydantic only")
PY

echo "python.sh: pip install ./clients/python[all,test] into a fresh venv" >&2
rm -rf "$work/venv"
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$root/clients/python[all,test]"

SGAM_SDK_PYTHON=$python bash "$root/.ci/sdk/serve.sh" start "$serve"

cd "$root/clients/python"
status=0
SGAM_SDK_ENV=$serve/env PYTHONDONTWRITEBYTECODE=1 "$work/venv/bin/python" -m pytest -p no:cacheprovider -q -rs "$@" || status=$?
echo "python.sh: done in $(($(date +%s) - start)) s" >&2
exit $status
