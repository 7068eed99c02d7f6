"""DynamoDB's request units, metered on every call the rehearsal serves, by the documented rules.

On-demand tables bill write and read request units, and the units of a request depend on the size of the items it
touches (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html):
- a write is 1 unit per 1 KB of item, rounded up; PutItem and UpdateItem count the larger of the item before and
  after, DeleteItem the item deleted, and a write whose condition fails still consumes the units of the item it
  looked at (at least 1);
- a read is 1 unit per 4 KB, rounded up, when strongly consistent, half of that when eventually consistent (the
  default); Query and Scan round the sum of the items they read once per request; a missing item still costs the
  minimum;
- a transactional write or read costs twice as much: DynamoDB prepares and commits every item
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-capacity-handling).
  The pages do not say which units a ConditionCheck action consumes. It is metered here as a transactional write
  of the item it checks (2 units per KB, as measured against DynamoDB and published), and counted apart
  (`condition_checks`), so a reader who takes it as a transactional read (2 read units per 4 KB) can price it so.

moto computes item sizes (`Item.size()`, the rule behind its 400 KB limit); Query and Scan are metered on the items
they return, which equals the items read when no filter expression drops any and no projection narrows them (a
projected or filtered read is under-counted here).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.responses import DynamoHandler

KB = 1024
READ_BLOCK = 4 * KB
TRANSACTIONAL = 2


@dataclass
class Units:
    """Request units consumed, as DynamoDB bills them."""

    write: float = 0.0
    read: float = 0.0
    condition_checks: int = 0  # ConditionCheck actions, metered in `write` (see the module's note)
    requests: int = 0

    def __sub__(self, other: Units) -> Units:
        return Units(self.write - other.write, self.read - other.read,
                     self.condition_checks - other.condition_checks, self.requests - other.requests)


def write_units(size_bytes: int) -> int:
    return max(1, math.ceil(size_bytes / KB))


def read_units(size_bytes: int, consistent: bool) -> float:
    units = max(1, math.ceil(size_bytes / READ_BLOCK))
    return float(units) if consistent else units / 2


def _size(item: Any) -> int:
    if item is None:
        return 0
    attrs = item.attrs if hasattr(item, "attrs") else item  # an Item, or a result's {name: DynamoType | wire value}
    return sum(len(name.encode("utf-8")) + (value if hasattr(value, "size") else DynamoType(value)).size()
               for name, value in attrs.items())


@dataclass
class CapacityMeter:
    """Counts the request units of every DynamoDB call moto serves while installed; `units` is the running total."""

    units: Units = field(default_factory=Units)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def snapshot(self) -> Units:
        with self._lock:
            return Units(self.units.write, self.units.read, self.units.condition_checks, self.units.requests)

    def _add(self, write: float = 0.0, read: float = 0.0, condition_checks: int = 0) -> None:
        with self._lock:
            self.units.write += write
            self.units.read += read
            self.units.condition_checks += condition_checks
            self.units.requests += 1

    def install(self) -> Callable[[], None]:
        """Patch moto's DynamoDB front end; returns the undo function."""
        meter = self
        originals = {name: getattr(DynamoHandler, name) for name in _METERS}

        def metered(name: str) -> Callable[[DynamoHandler], Any]:
            original, rule = originals[name], _METERS[name]

            def call(handler: DynamoHandler) -> Any:
                return rule(meter, handler, lambda: original(handler))

            return call

        for name in _METERS:
            setattr(DynamoHandler, name, metered(name))

        def uninstall() -> None:
            for name, original in originals.items():
                setattr(DynamoHandler, name, original)

        return uninstall


def _stored(handler: DynamoHandler, table: str, key: dict[str, Any]) -> int:
    """The size of the item stored under `key`, 0 if none, -1 if the table or key is not one (the call reports it).
    Read from the table itself, past the backend's methods: a fault planned on a table's GetItem strikes the
    pipeline's own calls, never this look."""
    try:
        schema = handler.dynamodb_backend.tables[table]
        hash_key = DynamoType(key[schema.hash_key_attr])
        range_key = DynamoType(key[schema.range_key_attr]) if schema.range_key_attr else None
        return _size(schema.get_item(hash_key, range_key))
    except Exception:  # noqa: BLE001 - no such table, a bad key: the call itself reports it
        return -1


def _key_of(handler: DynamoHandler, table: str, item: dict[str, Any]) -> dict[str, Any]:
    try:
        schema = handler.dynamodb_backend.get_table(table)
    except Exception:  # noqa: BLE001 - see _stored
        return {}
    return {name: item[name] for name in (schema.hash_key_attr, schema.range_key_attr) if name and name in item}


def _put_or_update(meter: CapacityMeter, handler: DynamoHandler, call: Callable[[], Any]) -> Any:
    """The larger of the item before and after; a write whose condition failed, the item it looked at."""
    body = handler.body
    table = body["TableName"]
    key = body.get("Key") or _key_of(handler, table, body.get("Item", {}))
    before = _stored(handler, table, key)
    try:
        result = call()
    except Exception:
        if before >= 0:  # the table exists: the request was served, and refused by its condition
            meter._add(write=write_units(before))
        raise
    meter._add(write=write_units(max(before, _stored(handler, table, key), 0)))
    return result


def _get(meter: CapacityMeter, handler: DynamoHandler, call: Callable[[], Any]) -> Any:
    body = handler.body
    result = call()
    meter._add(read=read_units(_stored(handler, body["TableName"], body["Key"]), bool(body.get("ConsistentRead"))))
    return result


def _query_or_scan(meter: CapacityMeter, handler: DynamoHandler, call: Callable[[], Any]) -> Any:
    result = call()
    items = (getattr(result, "result", None) or {}).get("Items", [])
    meter._add(read=read_units(sum(_size(item) for item in items), bool(handler.body.get("ConsistentRead"))))
    return result


def _batch_get(meter: CapacityMeter, handler: DynamoHandler, call: Callable[[], Any]) -> Any:
    result = call()
    units = 0.0
    for table, request in handler.body.get("RequestItems", {}).items():
        for key in request.get("Keys", []):
            units += read_units(_stored(handler, table, key), bool(request.get("ConsistentRead")))
    meter._add(read=units)
    return result


def _batch_write(meter: CapacityMeter, handler: DynamoHandler, call: Callable[[], Any]) -> Any:
    sizes = []
    for table, requests in handler.body.get("RequestItems", {}).items():
        for request in requests:
            if "PutRequest" in request:
                item = request["PutRequest"]["Item"]
                sizes.append((table, _key_of(handler, table, item)))
            elif "DeleteRequest" in request:
                sizes.append((table, request["DeleteRequest"]["Key"]))
    before = [_stored(handler, table, key) for table, key in sizes]
    result = call()
    after = [_stored(handler, table, key) for table, key in sizes]
    meter._add(write=sum(write_units(max(b, a, 0)) for b, a in zip(before, after, strict=True)))
    return result


def _transact_write(meter: CapacityMeter, handler: DynamoHandler, call: Callable[[], Any]) -> Any:
    actions = []
    for entry in handler.body.get("TransactItems", []):
        (kind, action), = entry.items()
        table = action["TableName"]
        key = action.get("Key") or _key_of(handler, table, action.get("Item", {}))
        actions.append((kind, table, key))
    before = [_stored(handler, table, key) for _, table, key in actions]
    checks = sum(1 for kind, _, _ in actions if kind == "ConditionCheck")
    try:
        result = call()
    except Exception:
        # A cancelled transaction still consumed the units of what it prepared: every item it looked at.
        meter._add(write=sum(TRANSACTIONAL * write_units(max(size, 0)) for size in before), condition_checks=checks)
        raise
    after = [_stored(handler, table, key) for _, table, key in actions]
    meter._add(write=sum(TRANSACTIONAL * write_units(max(b, a, 0)) for b, a in zip(before, after, strict=True)),
               condition_checks=checks)
    return result


def _transact_get(meter: CapacityMeter, handler: DynamoHandler, call: Callable[[], Any]) -> Any:
    result = call()
    units = 0.0
    for entry in handler.body.get("TransactItems", []):
        get = entry.get("Get", {})
        units += TRANSACTIONAL * read_units(_stored(handler, get.get("TableName", ""), get.get("Key", {})), True)
    meter._add(read=units)
    return result


def _delete(meter: CapacityMeter, handler: DynamoHandler, call: Callable[[], Any]) -> Any:
    body = handler.body
    before = _stored(handler, body["TableName"], body["Key"])
    try:
        result = call()
    finally:
        meter._add(write=write_units(max(before, 0)))
    return result


_METERS: dict[str, Callable[[CapacityMeter, DynamoHandler, Callable[[], Any]], Any]] = {
    "put_item": _put_or_update,
    "update_item": _put_or_update,
    "delete_item": _delete,
    "get_item": _get,
    "query": _query_or_scan,
    "scan": _query_or_scan,
    "batch_get_item": _batch_get,
    "batch_write_item": _batch_write,
    "transact_write_items": _transact_write,
    "transact_get_items": _transact_get,
}
