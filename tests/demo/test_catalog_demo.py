"""`python -m demos.orders.demo --example catalog`: the catalog stack through the same rehearsal, its outcome table
balancing."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from demos.catalog import demo as catalog_demo
from demos.catalog.samples import ProductFate, plan_products
from demos.orders import demo
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from tests.support.cdk import CATALOG_STACK_NAME

logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)


@pytest.mark.parametrize("chaos", [False, True])
def test_the_catalog_demo_accounts_for_every_product_message(cloud_assembly: Path, tmp_path: Path, chaos: bool) -> None:
    report = tmp_path / "catalog.json"
    args = [
        "--example",
        "catalog",
        "--products",
        "24",
        "--seed",
        "5",
        "--assembly",
        str(cloud_assembly),
        "--report",
        str(report),
    ]
    result = CliRunner().invoke(demo.app, [*args, "--chaos"] if chaos else args)

    assert result.exit_code == 0, result.output
    data = json.loads(report.read_text(encoding="utf-8"))
    the_plan = plan_products(24, seed=5)
    assert data["stack"] == CATALOG_STACK_NAME and data["balanced"] is True
    assert data["messages_in"] == len(the_plan.samples) == sum(data["outcomes"].values())
    # Every kind of ending happened, as planned message by message
    assert data["outcomes"] == data["expected"] and data["mismatches"] == []
    assert set(data["outcomes"]) == {fate.value for fate in ProductFate}
    assert data["errors"] == {"InvalidDocument": data["outcomes"]["in failure DLQ"]}
    assert data["alerts"] == data["outcomes"]["in failure DLQ"]
    runs = data["executions"]
    assert runs["started"] == runs["messages_handed_over"] + runs["duplicate delivery, ignored"]
    assert runs["messages_handed_over"] == data["messages_in"] and runs["duplicate delivery, ignored"] >= 1
    assert data["index_holds_newest_versions"] is True
    text = " ".join(result.output.split())
    assert "Catalog example (FireAndForget-Catalog)" in text and "-> BALANCED" in text
    if chaos:  # every injected fault struck, and retries absorbed all of them
        assert data["faults_fired"] and all(fired >= 1 for fired in data["faults_fired"].values())
        assert data["retries"] >= 6 and "injected faults struck" in text
    else:
        assert data["retries"] == 0


def test_a_message_missing_from_the_index_unbalances_the_catalog_account(cloud_assembly: Path) -> None:
    """The verdict rests on the lookups: take one indexed product out and the same run no longer balances."""
    the_plan = plan_products(8, seed=2)
    with Rehearsal.start(cloud_assembly, stack_name=CATALOG_STACK_NAME) as aws:
        result = catalog_demo.run_catalog_demo(aws, Console(quiet=True), products=8, chaos=False, seed=2)
        # Balanced with nothing off plan: where each message is now is what the plan said
        sent = sorted({e.message_id or "" for e in aws.executions()})
        planned = {m: ProductFate(where[0]) for m, where in catalog_demo.places(aws, sent).items()}
        (item, *_) = aws.items(catalog_demo.INDEX_OUTPUT)
        aws.dynamodb.delete_item(
            TableName=aws.outputs[catalog_demo.INDEX_OUTPUT], Key={"productId": {"S": item["productId"]}}
        )

        again = catalog_demo.summarize(aws, the_plan, planned, 0.0, products=8, chaos=False, seed=2)

    assert result["balanced"] is True and result["mismatches"] == []
    assert again["balanced"] is False and again["index_holds_newest_versions"] is False
    assert [m["messageId"] for m in again["mismatches"]] == [item["messageId"]]


def test_the_catalog_demo_without_a_catalog_stack_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(demo.app, ["--example", "catalog", "--assembly", str(tmp_path)])
    assert result.exit_code == 2 and "make synth" in " ".join(result.output.split())


def test_both_examples_run_in_one_process_each_with_its_report(cloud_assembly: Path, tmp_path: Path) -> None:
    report = tmp_path / "orders.json"
    result = CliRunner().invoke(demo.app, ["--example", "both", "--orders", "6", "--products", "6", "--seed", "5",
                                           "--assembly", str(cloud_assembly), "--report", str(report), "--no-carrier"])

    assert result.exit_code == 0, result.output
    orders = json.loads(report.read_text(encoding="utf-8"))
    catalog = json.loads((tmp_path / demo.CATALOG_REPORT.name).read_text(encoding="utf-8"))
    assert orders["conservation"]["balanced"] is True and catalog["balanced"] is True
    assert catalog["stack"] == CATALOG_STACK_NAME and catalog["messages_in"] == len(plan_products(6, seed=5).samples)
    text = " ".join(result.output.split())
    assert text.index("Fire-and-forget offline demo") < text.index("Catalog example (FireAndForget-Catalog)")


def test_an_unbalanced_first_example_still_runs_the_second_and_fails_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []

    def unbalanced_orders(**_: object) -> None:
        ran.append("orders")
        raise demo.typer.Exit(1)

    monkeypatch.setattr(demo, "run_and_keep", unbalanced_orders)
    monkeypatch.setattr(demo, "run_catalog", lambda **_: ran.append("catalog"))
    result = CliRunner().invoke(demo.app, ["--example", "both", "--assembly", str(tmp_path)])
    assert (result.exit_code, ran) == (1, ["orders", "catalog"])


def test_both_examples_without_a_synthesized_app_stop_at_the_first_with_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(demo.app, ["--example", "both", "--assembly", str(tmp_path)])
    assert result.exit_code == 2 and "make synth" in " ".join(result.output.split())
