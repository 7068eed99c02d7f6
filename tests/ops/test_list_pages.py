"""`failures list --state`, `--disposition`, and `--max` pages joined by `--starting-token`: every record once, in
one order, and nothing left hidden by a read (src/fire_and_forget/cli/failures.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from typer.testing import CliRunner

from fire_and_forget.cli.app import app
from fire_and_forget.cli.errors import ExitCode
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from fire_and_forget.runtime.healing_policy import HealingPolicy
from tests.ops.healing_records import reconciliation, record_body
from tests.ops.helpers import depth, ff_ops

FIRST = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _put(aws: Rehearsal, order_id: str, minute: int, **kwargs: Any) -> None:
    kwargs.setdefault("error", "OutOfStock")
    kwargs.setdefault("state", "ReserveInventory")
    aws.sqs.send_message(QueueUrl=aws.outputs["FailureDlqUrl"],
                         MessageBody=record_body(order_id, failed_at=FIRST + timedelta(minutes=minute), **kwargs))


def _keys(document: dict[str, Any]) -> list[str]:
    return [f["key"] for f in document["failures"]]


def test_state_and_disposition_select_records_and_combine(aws: Rehearsal, cli: CliRunner) -> None:
    # Given a business failure, and three records of ChargePayment the Reconciler wrote: one to retry, one whose
    # automatic attempts are spent, one whose compensation failed
    max_attempts = HealingPolicy.from_environment(json.loads(aws.outputs["HealingPolicy"])).max_attempts
    _put(aws, "ord-business", 0)
    timed_out = {"error": "States.Timeout", "state": "ChargePayment", "reconciliation": reconciliation("TIMED_OUT")}
    _put(aws, "ord-retry", 1, attempt=1, **timed_out)
    _put(aws, "ord-spent", 2, attempt=max_attempts, **timed_out)
    _put(aws, "ord-repair", 3, manual_repair=True, **timed_out)

    _, by_state = ff_ops(cli, "failures", "list", "--state", "ReserveInventory")
    _, by_disposition = ff_ops(cli, "failures", "list", "--disposition", "waiting-for-retry",
                               "--disposition", "manual-repair")
    _, both = ff_ops(cli, "failures", "list", "--state", "ChargePayment", "--disposition", "retries-exhausted")
    _, neither = ff_ops(cli, "failures", "list", "--state", "ReserveInventory", "--disposition", "manual-repair")

    assert _keys(by_state) == ["ord-business"]
    assert _keys(by_disposition) == ["ord-retry", "ord-repair"]
    assert _keys(both) == ["ord-spent"]
    assert _keys(neither) == [] and neither["read"] == 4


def test_disposition_on_a_stack_without_a_healing_policy_says_so(stack_before_healing: Rehearsal,
                                                                 cli: CliRunner) -> None:
    code, document = ff_ops(cli, "failures", "list", "--disposition", "needs-decision")

    assert code == ExitCode.OUTPUTS_MISSING and "no disposition to select by" in document["error"]["message"]


def test_pages_give_every_record_once_in_failure_order_and_hide_nothing(aws: Rehearsal, cli: CliRunner) -> None:
    # Given five failures, sent in another order than they failed in
    for order_id, minute in (("ord-c", 2), ("ord-a", 0), ("ord-e", 4), ("ord-b", 1), ("ord-d", 3)):
        _put(aws, order_id, minute)

    # When the operator reads them two at a time, each page from the token of the one before
    pages = [ff_ops(cli, "failures", "list", "--max", "2")[1]]
    depths = [depth(aws, "FailureDlqUrl")]
    while pages[-1]["nextToken"]:
        pages.append(ff_ops(cli, "failures", "list", "--max", "2", "--starting-token", pages[-1]["nextToken"])[1])
        depths.append(depth(aws, "FailureDlqUrl"))

    # Then three pages hold the five records once each, oldest failure first, and each page told what was left
    assert [_keys(page) for page in pages] == [["ord-a", "ord-b"], ["ord-c", "ord-d"], ["ord-e"]]
    assert [page["matching"] for page in pages] == [5, 3, 1]
    # ... and every read released every message it read, the ones it did not return too: none stays in flight
    assert depths == [(5, 0)] * 3


def test_a_record_that_fails_between_two_pages_is_on_a_later_page(aws: Rehearsal, cli: CliRunner) -> None:
    for order_id, minute in (("ord-a", 0), ("ord-b", 1), ("ord-c", 2)):
        _put(aws, order_id, minute)
    _, first = ff_ops(cli, "failures", "list", "--max", "2")

    _put(aws, "ord-late", 10)  # a new failure: it failed after everything listed so far
    _, rest = ff_ops(cli, "failures", "list", "--max", "2", "--starting-token", first["nextToken"])

    assert _keys(first) == ["ord-a", "ord-b"] and _keys(rest) == ["ord-c", "ord-late"]
    assert rest["nextToken"] is None


def test_the_table_gives_the_token_whole_and_a_bad_token_is_a_usage_error(aws: Rehearsal, cli: CliRunner) -> None:
    for order_id, minute in (("ord-a", 0), ("ord-b", 1)):
        _put(aws, order_id, minute)
    _, page = ff_ops(cli, "failures", "list", "--max", "1")

    table = cli.invoke(app, ["failures", "list", "--max", "1"], env={"COLUMNS": "80"})
    code, bad = ff_ops(cli, "failures", "list", "--starting-token", "not-a-token")

    assert any(f"--starting-token {page['nextToken']}" in line for line in table.stdout.splitlines()), table.stdout
    assert "1 more match" in table.stdout
    assert code == ExitCode.USAGE and "is not a token" in bad["error"]["message"]
