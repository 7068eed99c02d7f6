"""The rehearsal's boto3 clients: built from one session for the process, the interpreter's reused per service, and
botocore's service models read from disk once for the process, whoever makes the client.

Building a client from a new boto3 session costs about 30 ms of CPU (the session loads the service's model from
disk), and moto gives every `mock_aws` a new default session, so each rehearsal paid that again for each of its
clients and each service its workflow calls. Here the rehearsal's own clients (`client()`) and the interpreter's are
built from one session for the process (`session()`: the models are loaded once) and kept per service, region and
retry settings for the process: even from a loaded session a client costs about 6 ms, and a test's rehearsal made
six. A client is thread-safe and keeps nothing of the account between calls (the rehearsal's own retry quota aside,
which only refused calls spend), nothing registers on a rehearsal client's events, and every one of them talks to
the same in-process moto, so reusing them changes nothing the workflow can see.

The handlers make their own clients, through boto3's default session, as they do in Lambda. With `share_models()`
every session of the process reads a model from the copy the first one loaded, as one session's clients already
share theirs: a new session and two clients take 26 ms instead of 115.

With `sign_only_what_leaves()`, a request that moto answers in the process is not signed: moto verifies no signature
(it reads the access key for the account, and without one answers as its default account, the rehearsal's), and
signing every request is a tenth of a rehearsal's CPU. S3 is the exception: moto's S3 treats an unsigned request as
an anonymous caller's and refuses it a private object, as S3 does. A request that leaves the process (an endpoint
that is not AWS's, such as the practice gateway's, or any request while moto does not intercept) is signed as
botocore signs it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore import loaders, signers
from botocore.config import Config
from moto.core.models import botocore_stubber
from moto.stepfunctions.parser.asl.utils import boto_client

_ORIGINAL = boto_client.boto_client_for
_clients: dict[tuple[str, str, bool], Any] = {}  # the interpreter's
_own: dict[tuple[str, str, str], Any] = {}  # the rehearsal's
_lock = threading.Lock()
_session: boto3.session.Session | None = None
_models: dict[tuple[Any, ...], Any] = {}  # (search paths, what a Loader's instance_cache keys) -> the loaded data
_LOADER_INIT = loaders.Loader.__init__
_SIGN_ON_REQUEST_CREATED = signers.RequestSigner.handler


def session() -> boto3.session.Session:
    """The boto3 session the rehearsal builds its own clients from, one for the process."""
    global _session
    with _lock:
        if _session is None:
            _session = boto3.session.Session()
        return _session


def client(service: str, region: str, config: Config | None = None) -> Any:
    """The rehearsal's client of `service` in `region`, one per retry settings for the process."""
    retries = getattr(config, "retries", None) or {}
    key = (service, region, repr(sorted(retries.items())) if config is not None else "")
    with _lock:
        made = _own.get(key)
    if made is None:  # made outside the lock: loading a model takes it (_SharedModels)
        made = session().client(service, region_name=region, config=config)  # type: ignore[call-overload]
        with _lock:
            made = _own.setdefault(key, made)
    return made


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


class _SharedModels:
    """A Loader's `_cache` (botocore.loaders.instance_cache reads and writes it) kept in one dictionary for the
    process, each key prefixed with the loader's search paths as they are at the call: a loader told of other model
    directories reads its own files. What is loaded is read-only to botocore (one session's clients share it)."""

    def __init__(self, loader: loaders.Loader) -> None:
        self._loader = loader

    def _key(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        return (tuple(self._loader.search_paths), *key)

    def __contains__(self, key: tuple[Any, ...]) -> bool:
        return self._key(key) in _models

    def __getitem__(self, key: tuple[Any, ...]) -> Any:
        return _models[self._key(key)]

    def __setitem__(self, key: tuple[Any, ...], value: Any) -> None:
        with _lock:
            _models.setdefault(self._key(key), value)


def share_models() -> None:
    """From now on, every botocore Loader of the process (one per session) shares one cache of the models and data
    files it loaded. For the process, like `session()`: idempotent, and nothing to undo."""

    def init(loader: loaders.Loader, *args: Any, **kwargs: Any) -> None:
        _LOADER_INIT(loader, *args, **kwargs)
        setattr(loader, "_cache", _SharedModels(loader))  # noqa: B010 - a private attribute botocore declares nowhere

    with _lock:
        if loaders.Loader.__init__ is _LOADER_INIT:
            loaders.Loader.__init__ = init  # type: ignore[method-assign,assignment]


def sign_only_what_leaves() -> None:
    """From now on, a request the process's moto answers goes unsigned. For the process, like `share_models`:
    idempotent, and nothing to undo (with moto not intercepting, every request is signed)."""

    def handler(signer: signers.RequestSigner, operation_name: str | None = None, request: Any = None,
                **kwargs: Any) -> Any:
        host = (urlsplit(request.url).hostname or "") if request is not None else ""
        if botocore_stubber.enabled and host.endswith(".amazonaws.com") and signer.signing_name != "s3":
            return None  # moto's stubber answers it before it is sent
        return _SIGN_ON_REQUEST_CREATED(signer, operation_name, request, **kwargs)

    with _lock:
        if signers.RequestSigner.handler is _SIGN_ON_REQUEST_CREATED:
            signers.RequestSigner.handler = handler  # type: ignore[method-assign,assignment]
