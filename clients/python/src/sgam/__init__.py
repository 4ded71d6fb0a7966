"""sgam: the Python client of sgam, the schema-guided, bitemporal memory layer
for LLM agents (its HTTP API: docs/api.md).

    import sgam

    with sgam.Client() as memory:            # $SGAM_URL, $SGAM_API_KEY
        memory.facts.assert_("mira", "passport_deadline", "2026-06-30", source="e2")
        print(memory.recall("When is Mira's passport deadline?").rendered)

See docs/sdk-python.md. The adapters are modules of their own, with optional
dependencies: ``sgam.langgraph`` (a LangGraph store), ``sgam.langchain`` and
``sgam.openai_agents`` (tools), ``sgam.capture`` (a turn loop helper).
"""

from . import capture, models, tools
from ._core import NO_RETRY, Op, Retry
from ._json import Number, dumps, loads
from ._ops import OPERATIONS
from ._version import __version__
from .client import AsyncClient, Client
from .errors import (
    Conflict,
    Error,
    Forbidden,
    Invalid,
    NotFound,
    RateLimited,
    ServerError,
    TransportError,
    Unauthorized,
    Unavailable,
    UnexpectedResponse,
)
from .models import (
    AttributeValue,
    Candidate,
    Episode,
    EpisodeResponse,
    Extraction,
    Fact,
    Hop,
    Health,
    Ok,
    RecallContext,
    RecallFact,
    Receipt,
    ReplayResult,
    SchemaVersion,
    Trace,
    WriteResult,
)

__all__ = [
    "__version__",
    "Client",
    "AsyncClient",
    "Retry",
    "Op",
    "NO_RETRY",
    "OPERATIONS",
    "Number",
    "dumps",
    "loads",
    "models",
    "capture",
    "tools",
    "Error",
    "Invalid",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Conflict",
    "Unavailable",
    "RateLimited",
    "ServerError",
    "TransportError",
    "UnexpectedResponse",
    "AttributeValue",
    "Candidate",
    "Episode",
    "EpisodeResponse",
    "Extraction",
    "Fact",
    "Hop",
    "Ok",
    "Health",
    "RecallContext",
    "RecallFact",
    "Receipt",
    "ReplayResult",
    "SchemaVersion",
    "Trace",
    "WriteResult",
]
