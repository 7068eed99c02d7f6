"""The rehearsal's boto3 clients: built from one session for the process, and the interpreter's reused per service.

Building a client from a new boto3 session costs about 30 ms of CPU (the session loads the service's model from
disk), and moto gives every `mock_aws` a new default session, so each rehearsal paid that again for each of its
clients and each service its workflow calls. Here each rehearsal's own clients are new, built from one session for
the process (`session()`: the models are loaded once), and the interpreter's clients are kept per service and region
for the process. A client is thread-safe and keeps nothing of the account between calls (the interpreter's make one
attempt, so no retry quota either), and every one of them talks to the same in-process moto, so reusing them changes
nothing the workflow can see.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import boto3
from moto.core.models import botocore_stubber
from moto.stepfunctions.parser.asl.utils import boto_client

_ORIGINAL = boto_client.boto_client_for
_clients: dict[tuple[str, str, bool], Any] = {}
_lock = threading.Lock()
_session: boto3.session.Session | None = None


def session() -> boto3.session.Session:
    """The boto3 session the rehearsal builds its own clients from, one for the process."""
    global _session
    with _lock:
        if _session is None:
            _session = boto3.session.Session()
        return _session


def install() -> Callable[[], None]:
    """Patch every interpreter module that imported `boto_client_for`; returns the undo function."""

    def cached(region: str, service: str, state_credentials: Any = None) -> Any:
        # A client made while moto intercepts botocore has no endpoint; one made for moto's server mode has one.
        key = (region, service, botocore_stubber.enabled)
        with _lock:
            if key not in _clients:
                _clients[key] = _ORIGINAL(region=region, service=service, state_credentials=state_credentials)
            return _clients[key]

    patched = [module for name, module in list(sys.modules.items())
               if name.startswith("moto.stepfunctions.parser")
               and getattr(module, "boto_client_for", None) is _ORIGINAL]
    for module in patched:
        setattr(module, "boto_client_for", cached)  # noqa: B010 - patching a module attribute

    def undo() -> None:
        for module in patched:
            setattr(module, "boto_client_for", _ORIGINAL)  # noqa: B010

    return undo
