"""The interpreter builds a new boto3 client for every service call; the rehearsal reuses one per service.

Building a client costs milliseconds of CPU, and with many executions on threads of one process that time is
taken from the handlers. Clients are thread-safe, and every one of them talks to the same in-process moto, so
reusing them changes nothing the workflow can see.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from moto.stepfunctions.parser.asl.utils import boto_client

_ORIGINAL = boto_client.boto_client_for


def install() -> Callable[[], None]:
    """Patch every interpreter module that imported `boto_client_for`; returns the undo function."""
    cache: dict[tuple[str, str], Any] = {}
    lock = threading.Lock()

    def cached(region: str, service: str, state_credentials: Any = None) -> Any:
        with lock:
            key = (region, service)
            if key not in cache:
                cache[key] = _ORIGINAL(region=region, service=service, state_credentials=state_credentials)
            return cache[key]

    patched = [module for name, module in list(sys.modules.items())
               if name.startswith("moto.stepfunctions.parser")
               and getattr(module, "boto_client_for", None) is _ORIGINAL]
    for module in patched:
        setattr(module, "boto_client_for", cached)  # noqa: B010 - patching a module attribute

    def undo() -> None:
        for module in patched:
            setattr(module, "boto_client_for", _ORIGINAL)  # noqa: B010

    return undo
