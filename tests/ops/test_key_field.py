"""ff-ops keys messages by the stack's MessageKeyField output: --key and its alias --order-id, the fallback (and its
one note) for a stack deployed before the output existed, and `smoke` refusing a stack that is not the order example.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from typer.main import get_command
from typer.testing import CliRunner

from demos.orders.cli_smoke import app as smoke_app
from fire_and_forget.cli.app import app
from fire_and_forget.rehearsal.deployment import ACCOUNT
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.runtime.records import message_key
from tests.ops.helpers import failed_orders, ff_ops, smoke


@contextmanager
def without_output(aws: Rehearsal, key: str) -> Iterator[None]:
    """The deployed stack as an older (or another) deployment shows it: without output `key`, put back after."""
    from moto.cloudformation.models import cloudformation_backends

    stack = next(s for s in cloudformation_backends[ACCOUNT][aws.region].stacks.values() if s.name == aws.stack.name)
    outputs = stack.output_map._output_json_map
    removed = outputs.pop(key)
    try:
        yield
    finally:
        outputs[key] = removed


def test_the_order_stack_publishes_orderid_and_key_selects_like_order_id(aws: Rehearsal, cli: CliRunner) -> None:
    first, second = failed_orders(aws, 2, first=7601)

    by_key_code, by_key = ff_ops(cli, "failures", "list", "--key", second)
    by_alias_code, by_alias = ff_ops(cli, "failures", "list", "--order-id", first, "--order-id", second)
    mixed_code, mixed = ff_ops(cli, "failures", "list", "--key", first, "--order-id", second)

    assert (by_key_code, by_alias_code, mixed_code) == (0, 0, 0)
    assert by_key["keyField"] == "orderId" and [f["key"] for f in by_key["failures"]] == [second]
    assert sorted(f["key"] for f in by_alias["failures"]) == sorted([first, second])
    assert sorted(f["key"] for f in mixed["failures"]) == sorted([first, second])


def test_a_stack_without_the_output_falls_back_to_orderid_and_says_so_once(aws: Rehearsal, cli: CliRunner) -> None:
    (order_id,) = failed_orders(aws, 1, first=7611)

    with without_output(aws, "MessageKeyField"):
        result = cli.invoke(app, ["failures", "list", "--key", order_id, "--json"])
        quiet = cli.invoke(app, ["failures", "list", "--key", order_id, "--json"])
    with_output = cli.invoke(app, ["failures", "list", "--key", order_id, "--json"])

    document = json.loads(result.stdout)
    assert result.exit_code == 0 and document["keyField"] == "orderId"
    assert [f["key"] for f in document["failures"]] == [order_id]
    assert result.stderr.count("has no output MessageKeyField") == 1
    assert "keyed by their body's orderId" in result.stderr
    assert quiet.stderr == result.stderr  # once per command, the same every time
    assert "MessageKeyField" not in with_output.stderr


def test_smoke_refuses_a_stack_without_the_inventory_table(aws: Rehearsal, cli: CliRunner) -> None:
    with without_output(aws, "InventoryTableName"):
        code, document = smoke(cli, "--timeout", "1")

    assert code == 2 and document["error"]["type"] == "UsageError"
    assert document["error"]["message"].startswith("the smoke test checks the order example")
    assert "has no output InventoryTableName" in document["error"]["message"]
    assert "productId" not in document["error"]["message"]  # the key field is the order example's
    assert aws.messages("SourceQueueUrl") == []


def _help_texts() -> dict[str, str]:
    """Every group's and command's help and its options' help, by full command name ("" for ff-ops itself)."""
    found: dict[str, str] = {}

    def walk(command: Any, name: str) -> None:
        params = " ".join(getattr(param, "help", None) or "" for param in command.params)
        found[name] = f"{command.help or ''} {params}"
        for sub_name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{name} {sub_name}".strip())

    walk(get_command(app), "")
    return found


def test_help_speaks_of_messages_not_orders_and_the_smoke_test_is_the_examples(cli: CliRunner) -> None:
    texts = _help_texts()
    smoke_help = get_command(smoke_app).help or ""

    assert texts["failures"].startswith("Failed messages in the failure DLQ")
    assert "--key" in cli.invoke(app, ["failures", "list", "--help"], terminal_width=200).output
    assert "--order-id" in cli.invoke(app, ["failures", "list", "--help"], terminal_width=200).output
    assert len(texts) > 10
    for name, text in texts.items():
        for word in ("order ", "orders", "saga"):
            assert word not in text.lower(), (name, word)
    assert "smoke" not in texts  # the order example's smoke test is its own tool, not an ff-ops command
    assert "order example" in smoke_help


def test_the_key_is_the_body_fields_text_and_none_when_the_body_has_none() -> None:
    assert message_key('{"productId": "sku-1"}', "productId") == "sku-1"
    assert message_key('{"productId": 42}', "productId") == "42"  # so that --key 42 matches it
    assert message_key('{"productId": true}', "productId") is None
    assert message_key('{"productId": {"id": 1}}', "productId") is None
    assert message_key('{"orderId": "ord-1"}', "productId") is None
    assert message_key("not json", "productId") is None
    assert message_key("[]", "productId") is None
