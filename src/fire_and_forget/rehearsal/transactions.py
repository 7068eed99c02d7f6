"""moto's TransactWriteItems with a rollback of the items it names, not of the whole tables they are in.

moto makes a transaction all-or-nothing by copying, before it writes, every table the transaction touches, whole, and
putting the copies back if any of its actions fails. A transaction's cost then grows with its tables: in a demo of
300 messages those copies take about a fifth of the run's time. A transaction can change only the items its
actions name (Put, Update, Delete and ConditionCheck each name one key), so a copy of those items is enough to undo
it. Here each is copied before moto runs the transaction, moto's own whole-table copies are skipped for the calling
thread, and the items are put back if the transaction fails, so its tables are what they were before it, as with
moto's copies (tests/unit/test_transaction_rollback.py runs the same transactions through both and compares).

moto runs one call at a time, so two transactions on one item never meet. In DynamoDB they do: a TransactWriteItems
that names an item another transaction is working on is cancelled with the reason TransactionConflict for that item
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html, "Transaction conflict
handling in DynamoDB"). `ItemContention` gives each transaction a duration on the rehearsal's clock: one made by a
function's invocation holds every item it names for `seconds`, and another invocation's transaction on one of them
within that time is cancelled so. With `partition_writes`, each item's writes also draw from the bucket a partition
serves (quotas.partition_write_quota: a hot key's writes all go to one partition), two write units per item and
transaction (a transactional write prepares and commits the item: transaction-apis.html, "Capacity management for
transactions"; the items here are under 1 KB); a transaction that finds an item's bucket short is cancelled with the
reason ThrottlingError for it (the TransactionCanceledException API reference: on-demand throughput exceeded, "check
if you have a hot key"; ProvisionedThroughputExceeded is the provisioned tables' reason, and the handlers read both
as transient). Only the transactions of invocations are held, counted and refused; a test's or the rehearsal's own
writes pass.
"""

from __future__ import annotations

import copy
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import moto.dynamodb.models as dynamodb_models
from moto.dynamodb.exceptions import TransactionCanceledException
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table

from fire_and_forget.rehearsal.quotas import Quota, TokenBucket

_skipping = threading.local()  # set while this thread runs a transaction whose items are copied here
CONFLICT_MESSAGE = "Transaction is ongoing for the item"
THROTTLED_MESSAGE = "Throughput exceeds the current capacity of your table or index: check if you have a hot key"
TRANSACTIONAL_WRITE_UNITS = 2  # per item under 1 KB

_ItemKey = tuple[str, Any, Any]  # table name, hash key, range key (None without one)


class ItemContention:
    """Transactions with a duration on the clock: an invocation's transaction holds the items it names for
    `seconds` from `now()`; another invocation's transaction naming one of them meanwhile is cancelled with
    TransactionConflict on it. With `partition_writes`, each item's writes draw from a bucket of that shape, and a
    transaction an item's bucket cannot serve is cancelled with ThrottlingError on it. `owner()` says which
    invocation makes the calling thread's request (None: none)."""

    def __init__(self, seconds: float, now: Callable[[], datetime], owner: Callable[[], int | None],
                 partition_writes: Quota | None = None) -> None:
        if seconds < 0 or (seconds == 0 and partition_writes is None):
            raise ValueError("a transaction that takes no time conflicts with nothing: give it a duration")
        self.seconds = seconds
        self._now = now
        self._owner = owner
        self._partition_writes = partition_writes
        self._held: dict[_ItemKey, tuple[datetime, int]] = {}  # item -> held until, by which invocation
        self._buckets: dict[_ItemKey, TokenBucket] = {}  # item -> the write units its partition has left
        self._lock = threading.Lock()
        self.conflicts = 0  # transactions cancelled for TransactionConflict
        self.throttled = 0  # transactions cancelled for ThrottlingError

    def begin(self, keys: list[_ItemKey | None]) -> None:
        """Before a transaction runs: refuse it if another invocation holds one of its items, else hold them all."""
        owner = self._owner()
        if owner is None:
            return
        now = self._now()
        with self._lock:
            busy = [key is not None and self._busy(key, now, owner) for key in keys]
            if any(busy):
                self.conflicts += 1
                raise TransactionCanceledException(
                    [("TransactionConflict", CONFLICT_MESSAGE, None) if b else (None, None, None) for b in busy])
            buckets = [self._bucket(key, now) if key is not None else None for key in keys]
            short = [bucket is not None and not bucket.has(now, TRANSACTIONAL_WRITE_UNITS) for bucket in buckets]
            if any(short):
                self.throttled += 1
                raise TransactionCanceledException(
                    [("ThrottlingError", THROTTLED_MESSAGE, None) if s else (None, None, None) for s in short])
            until = now + timedelta(seconds=self.seconds)
            for key, bucket in zip(keys, buckets, strict=True):
                if key is not None and self.seconds:
                    self._held[key] = (until, owner)
                if bucket is not None:
                    bucket.take(now, TRANSACTIONAL_WRITE_UNITS)

    def _bucket(self, key: _ItemKey, now: datetime) -> TokenBucket | None:
        """The write units the item's partition has left (None: partitions are not modelled)."""
        if self._partition_writes is None:
            return None
        return self._buckets.setdefault(key, TokenBucket(self._partition_writes, now))

    def _busy(self, key: _ItemKey, now: datetime, owner: int) -> bool:
        held = self._held.get(key)
        return held is not None and held[0] > now and held[1] != owner


@dataclass
class _Saved:
    table: Table
    hash_key: DynamoType
    range_key: DynamoType | None
    item: Item | None  # a copy of the item before the transaction, None if there was none
    stream_length: int | None  # how many records the table's stream held, None without a stream


def install(contention: ItemContention | None = None) -> Callable[[], None]:
    """Patch moto's DynamoDB backend (with `contention`, transactions meet on their items); returns the undo
    function."""
    original = DynamoDBBackend.transact_write_items
    namespace = vars(dynamodb_models)  # the module's globals: its `copy` is what its functions call
    module_copy = namespace["copy"]

    def deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        if isinstance(value, Table) and getattr(_skipping, "active", False):
            return value  # moto's backup of a whole table: its items are saved by the caller instead
        return copy.deepcopy(value, memo)

    shim = types.SimpleNamespace(**{name: getattr(copy, name) for name in dir(copy) if not name.startswith("__")})
    shim.deepcopy = deepcopy

    def transact_write_items(backend: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
        if contention is not None:
            contention.begin([_key(backend, action) for action in transact_items])
        saved = _save(backend, transact_items)
        _skipping.active = True
        try:
            original(backend, transact_items)
        except BaseException:
            _restore(saved)
            raise
        finally:
            _skipping.active = False

    namespace["copy"] = shim
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign,assignment]

    def uninstall() -> None:
        DynamoDBBackend.transact_write_items = original  # type: ignore[method-assign]
        namespace["copy"] = module_copy

    return uninstall


def _located(backend: DynamoDBBackend, action: Any) -> tuple[Table, DynamoType, DynamoType | None] | None:
    """The table and key of the one item a transaction's action names; None where moto refuses the action before it
    writes anything (no such table, no key)."""
    if not isinstance(action, dict) or not action:
        return None
    op = next(iter(action.values()))
    name = op.get("TableName") if isinstance(op, dict) else None
    table = backend.tables.get(name) if isinstance(name, str) else None
    if table is None:
        return None
    key = op.get("Item") if "Item" in op else op.get("Key")
    if not isinstance(key, dict) or table.hash_key_attr not in key:
        return None
    range_key = None
    if table.range_key_attr is not None:
        if table.range_key_attr not in key:
            return None
        range_key = DynamoType(key[table.range_key_attr])
    return table, DynamoType(key[table.hash_key_attr]), range_key


def _key(backend: DynamoDBBackend, action: Any) -> _ItemKey | None:
    located = _located(backend, action)
    if located is None:
        return None
    table, hash_key, range_key = located
    return table.name, hash_key, range_key


def _save(backend: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> list[_Saved]:
    """A copy of each item the actions name, as they list them (an action moto will refuse is saved as well)."""
    saved = []
    for action in transact_items:
        located = _located(backend, action)
        if located is None:
            continue
        table, hash_key, range_key = located
        shard = table.stream_shard
        saved.append(_Saved(table, hash_key, range_key, copy.deepcopy(table.get_item(hash_key, range_key)),
                            len(shard.items) if shard is not None else None))
    return saved


def _restore(saved: list[_Saved]) -> None:
    """Each saved item back as it was (all were saved before the transaction wrote anything, so an item two actions
    name, which moto refuses, is saved twice alike)."""
    for entry in saved:
        items: Any = entry.table.items  # {hash: Item}, or {hash: {range: Item}} with a range key
        if entry.range_key is None:
            if entry.item is None:
                items.pop(entry.hash_key, None)
            else:
                items[entry.hash_key] = entry.item
        elif entry.item is None:
            if entry.hash_key in items:
                items[entry.hash_key].pop(entry.range_key, None)
        else:
            items[entry.hash_key][entry.range_key] = entry.item
        if entry.stream_length is not None and entry.table.stream_shard is not None:
            del entry.table.stream_shard.items[entry.stream_length:]
