"""One deployment per template per process: moto's state as the deploy left it, copied, and restored for the next
rehearsal of the same template instead of deploying again.

A deploy (the assets uploaded, moto's CloudFormation creating the stack, the state machines created again) costs
about 2 s of CPU and leaves the same resources every time for one template. So the first rehearsal of a template
(with its stack name and region) deploys into an empty moto and then copies every moto backend as the deploy left it;
each later rehearsal of that template, opened on an empty moto too, gets a fresh copy of that state instead
(tests/workflow/test_deployment_snapshot.py proves a restored rehearsal is indistinguishable from a fresh one).

The copy is one `copy.deepcopy` over every backend, so the objects two services share (the queues that
CloudFormation's resource map and SQS both hold) stay shared, and the deployment's `OfflineStack` is copied with them:
its resource map is the restored stack's. What deepcopy cannot copy is given to it first: each lock, condition and
event is replaced by a new one, a `defaultdict` subclass whose constructor takes other arguments (SSM's
ParameterDict) is rebuilt, and the registries of moto's backends (`BackendDict`) are kept as they are. An S3 object
(moto's FakeKey) is copied with its attributes but its content put in an in-memory buffer over the same bytes: moto
would copy the content by reading it whole and writing it into a new temporary file (the dependencies layer's archive
is tens of megabytes, spilled to disk), four fifths of a restore; the bytes are immutable, and a buffer that is
written to (nothing writes to a deployed asset) makes its own copy first.

Resources keep the timestamps of the deployment the state was copied from (their creation dates); the rehearsal's
clock starts at the real time of each rehearsal as before. Nothing the pattern runs reads a creation date.
"""

from __future__ import annotations

import atexit
import copy
import hashlib
import io
import json
import threading
import types
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from moto.core.base_backend import BackendDict
from moto.s3.models import FakeKey

from fire_and_forget.rehearsal.assembly import CloudAssembly
from fire_and_forget.rehearsal.deployment import OfflineStack

_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))
# Never descended into: what deepcopy itself keeps as it is, and text and numbers (nothing to find inside).
_ATOMIC = (type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType, str, bytes, bytearray, int, float,
           complex, type(None))

_snapshots: dict[tuple[str, ...], DeploymentSnapshot] = {}
_guard = threading.Lock()


def deploy_once(assembly: CloudAssembly, region: str, deploy: Callable[[CloudAssembly, str], OfflineStack],
                reuse: bool = True) -> OfflineStack:
    """The stack of `assembly` in moto: restored from the copy the first deploy of the same template left, when moto
    is empty and such a copy exists; else deployed by `deploy` (and, into an empty moto, copied for the next one)."""
    pristine = moto_is_empty()
    key = snapshot_key(assembly, region)
    with _guard:
        snapshot = _snapshots.get(key) if reuse and pristine else None
    if snapshot is not None:
        return snapshot.restore()
    stack = deploy(assembly, region)
    if reuse and pristine:
        with _guard:
            _snapshots[key] = DeploymentSnapshot.take(stack)
    return stack


def forget(assembly: CloudAssembly | None = None, region: str = "us-east-1") -> None:
    """Drop the copy of one template's deployment in a region, or every copy: the next rehearsal of it deploys."""
    with _guard:
        if assembly is None:
            _snapshots.clear()
        else:
            _snapshots.pop(snapshot_key(assembly, region), None)


# The copies' S3 objects close their buffers when they are dropped: while the interpreter can still run that code.
atexit.register(forget, None)


def snapshot_key(assembly: CloudAssembly, region: str) -> tuple[str, ...]:
    """What the deployed state depends on: the template (its assets are named by their content's hash in it), the
    stack's name, the region, and where the assets are read from."""
    template = json.dumps(assembly.template, sort_keys=True).encode("utf-8")
    assets = json.dumps([(str(a.source.resolve()), a.bucket_template, a.object_key) for a in assembly.assets])
    return assembly.stack_name, region, hashlib.sha256(template).hexdigest(), assets


def moto_is_empty() -> bool:
    """True when no moto backend holds anything: as a new `mock_aws` leaves it."""
    return not any(accounts for accounts in BackendDict._instances)  # type: ignore[misc]


@dataclass(frozen=True)
class DeploymentSnapshot:
    """Every moto backend and the deployment's stack, as a deploy left them."""

    backends: dict[Any, dict[str, Any]]  # BackendDict -> its account backends
    stack: OfflineStack

    @classmethod
    def take(cls, stack: OfflineStack) -> DeploymentSnapshot:
        backends = {registry: dict(registry) for registry in BackendDict._instances}  # type: ignore[misc]
        copied = _deep_copy((backends, stack), tracked=False)
        return cls(*copied)

    def restore(self) -> OfflineStack:
        """Reset moto and give it a fresh copy of the deployed state; returns the copy's stack."""
        backends, stack = _deep_copy((self.backends, self.stack))
        BackendDict.reset()
        for registry, accounts in backends.items():
            dict.update(registry, accounts)
            BackendDict._instances.append(registry)  # type: ignore[misc]
        return stack  # type: ignore[no-any-return]


def _deep_copy(root: Any, tracked: bool = True) -> Any:
    """`copy.deepcopy(root)`, with the objects it cannot copy prepared first (see the module's docstring).

    moto keeps a list of every instance of its models, and its reset disposes every S3 object on that list (closes
    its buffer): the copies a snapshot keeps are taken off those lists (`tracked=False`), the ones a restore makes
    stay on them, as a deploy's would."""
    memo: dict[int, Any] = {}
    rebuilt: list[tuple[defaultdict[Any, Any], defaultdict[Any, Any]]] = []
    objects: list[tuple[FakeKey, FakeKey]] = []
    seen: set[int] = set()
    pending = [root]
    while pending:
        value = pending.pop()
        if isinstance(value, _ATOMIC) or id(value) in seen:
            continue
        seen.add(id(value))
        prepared = _prepared(value)
        if prepared is not None:
            memo[id(value)] = prepared
            if prepared is value:
                continue
            if isinstance(value, defaultdict):
                rebuilt.append((value, prepared))
            elif isinstance(value, FakeKey):
                objects.append((value, prepared))
        pending.extend(_parts(value))
    copied = copy.deepcopy(root, memo)
    for original, twin in rebuilt:
        twin.update(copy.deepcopy(dict(original), memo))
        vars(twin).update(copy.deepcopy(vars(original), memo))
    for key, key_twin in objects:
        vars(key_twin).update(copy.deepcopy({k: v for k, v in vars(key).items() if k != "_value_buffer"}, memo))
        key_twin._value_buffer = io.BytesIO(_content(key))  # type: ignore[assignment]  # a file, as moto uses it
    if not tracked:
        _untrack(memo.values())
    return copied


def _prepared(value: Any) -> Any:
    """What the copy of `value` is to be, made before deepcopy runs, or None to let deepcopy copy it: a registry of
    moto's backends is itself; a lock, condition or event a new one in the state it is in at rest (nobody holds or
    waits on a deployed resource's); a `defaultdict` subclass an empty one of its class, and an S3 object an empty
    FakeKey, both filled afterwards."""
    if isinstance(value, BackendDict):
        return value
    if isinstance(value, _LOCK_TYPES):
        return type(value)()
    if isinstance(value, threading.Condition):
        return threading.Condition(type(value._lock)())  # type: ignore[attr-defined]
    if isinstance(value, threading.Event):
        fresh = threading.Event()
        if value.is_set():
            fresh.set()
        return fresh
    if isinstance(value, defaultdict) and type(value) is not defaultdict:
        twin = type(value).__new__(type(value))
        defaultdict.__init__(twin, value.default_factory)
        return twin
    if type(value) is FakeKey:
        return FakeKey.__new__(FakeKey)  # on moto's list of live objects, as a deploy's; filled afterwards
    return None


def _content(key: FakeKey) -> bytes:
    """An S3 object's content: a copy's in-memory buffer hands over its bytes without copying them."""
    buffer = key._value_buffer
    if isinstance(buffer, io.BytesIO):
        return buffer.getvalue()
    return key.value


def _parts(value: Any) -> list[Any]:
    """What deepcopy will copy inside `value`: a container's items, an object's attributes and slots."""
    parts: list[Any] = []
    if isinstance(value, types.MethodType):  # deepcopy copies the object a bound method is bound to
        return [value.__self__]
    if isinstance(value, dict):
        parts.extend(value.keys())
        parts.extend(value.values())
    elif isinstance(value, list | tuple | set | frozenset):
        parts.extend(value)
    state = getattr(value, "__dict__", None)
    if isinstance(state, dict):
        parts.extend(state.values())
    parts.extend(getattr(value, slot) for slot in getattr(type(value), "__slots__", ())
                 if isinstance(slot, str) and hasattr(value, slot))
    return parts


def _untrack(objects: Any) -> None:
    """Take these objects off moto's lists of its models' instances (`InstanceTrackerMeta`)."""
    by_class: dict[type, set[int]] = defaultdict(set)
    for value in objects:
        if isinstance(getattr(type(value), "instances_tracked", None), list):
            by_class[type(value)].add(id(value))
    for model, ids in by_class.items():
        model.instances_tracked[:] = [i for i in model.instances_tracked if id(i) not in ids]  # type: ignore[attr-defined]
