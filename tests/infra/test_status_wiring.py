"""The order stack wires the steps that report a message's progress to its row (fire_and_forget.runtime.status)."""

from __future__ import annotations

from typing import Any

from stacks.orders.stack import CLAIMS_DELIVERY, REPORTS_PROGRESS
from tests.support.template import of_type, ref_or_att


def test_each_reporting_step_is_given_the_deliveries_table(template: dict[str, Any]) -> None:
    functions = of_type(template, "AWS::Lambda::Function")
    (table,) = [logical_id for logical_id in of_type(template, "AWS::DynamoDB::Table") if "Deliveries" in logical_id]
    reporting = {}
    for logical_id, function in functions.items():
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        if ref_or_att(variables.get("DELIVERIES_TABLE_NAME")) == table and logical_id.startswith("SagaTasks"):
            reporting[logical_id] = variables
    # The default deployment goes without BookCarrier: the other three steps report, the claiming one among them.
    expected = {state for state in REPORTS_PROGRESS if state != "BookCarrier"}
    assert {name for name in expected if any(name in logical_id for logical_id in reporting)} == expected
    assert len(reporting) == len(expected)
    # Only the claiming step holds the claim's expiry: the others update the row, they never create it
    assert [lid for lid, v in reporting.items() if "DELIVERY_CLAIM_TTL_SECONDS" in v] == [
        lid for lid in reporting if CLAIMS_DELIVERY in lid]
