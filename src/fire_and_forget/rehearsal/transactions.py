"""moto's TransactWriteItems with a rollback of the items it names, not of the whole tables they are in.

moto makes a transaction all-or-nothing by copying, before it writes, every table the transaction touches, whole, and
putting the copies back if any of its actions fails. A transaction's cost then grows with its tables: in a demo of
300 messages those copies take about a fifth of the run's time. A transaction can change only the items its
actions name (Put, Update, Delete and ConditionCheck each name one key), so a copy of those items is enough to undo
it. Here each is copied before moto runs the transaction, moto's own whole-table copies are skipped for the calling
thread, and the items are put back if the transaction fails, so its tables are what they were before it, as with
moto's copies (tests/unit/test_transaction_rollback.py runs the same transactions through both and compares).
"""

from __future__ import annotations

import copy
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import moto.dynamodb.models as dynamodb_models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table

_skipping = threading.local()  # set while this thread runs a transaction whose items are copied here


@dataclass
class _Saved:
    table: Table
    hash_key: DynamoType
    range_key: DynamoType | None
    item: Item | None  # a copy of the item before the transaction, None if there was none
    stream_length: int | None  # how many records the table's stream held, None without a stream


def install() -> Callable[[], None]:
    """Patch moto's DynamoDB backend; returns the undo function."""
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


def _save(backend: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> list[_Saved]:
    """A copy of each item the actions name, as they list them (an action moto will refuse is saved as well)."""
    saved = []
    for action in transact_items:
        if not isinstance(action, dict) or not action:
            continue
        op = next(iter(action.values()))
        name = op.get("TableName") if isinstance(op, dict) else None
        table = backend.tables.get(name) if isinstance(name, str) else None
        if table is None:
            continue
        key = op.get("Item") if "Item" in op else op.get("Key")
        if not isinstance(key, dict) or table.hash_key_attr not in key:
            continue  # moto refuses the action before it writes anything
        hash_key = DynamoType(key[table.hash_key_attr])
        range_key = None
        if table.range_key_attr is not None:
            if table.range_key_attr not in key:
                continue
            range_key = DynamoType(key[table.range_key_attr])
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
