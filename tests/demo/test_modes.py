"""`make compare` (demos/catalog/modes.py): the same product messages and faults through both modes. The expected
figures are the test's own, from the plan it sends (how many documents are invalid, which products the fault
outlasts) and the modes' documented rules, never from the comparison's own account."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from demos.catalog import modes
from fire_and_forget.construct import PipelineSettings
from fire_and_forget.construct.request_response import TimeoutMismatch
from tests.infra import request_response_app
from tests.support import order_saga

logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)

PRODUCTS, SEED = 16, 3
MAX_RECEIVE_COUNT = 5
REDRIVE_COOL_OFF = 300  # the healing policy's first cool-off (docs/design.md, "Automatic redrive")


@pytest.fixture(scope="module")
def results(cloud_assembly: Path) -> dict[str, dict[str, Any]]:
    compared = modes.compare(cloud_assembly, PRODUCTS, SEED, request_response=request_response_app.assembly())
    return {result["mode"]: result for result in compared}


@pytest.fixture(scope="module")
def plan() -> tuple[int, int, int]:
    """(valid, invalid, outlasted) of what the comparison sends, counted here."""
    sent, outlasted = modes.messages(PRODUCTS, SEED)
    valid = sum(1 for message in sent if _valid(message.body))
    return valid, len(sent) - valid, len(outlasted)


def _valid(body: str) -> bool:
    try:
        document = json.loads(body)
    except ValueError:
        return False
    return isinstance(document, dict) and isinstance(document.get("version"), int) and document["version"] >= 1 \
        and " " not in str(document.get("productId")) and "price" not in document and "title" in document


def test_each_mode_ends_every_message_in_one_place_its_failures_where_the_mode_keeps_them(
        results: dict[str, dict[str, Any]], plan: tuple[int, int, int]) -> None:
    valid, invalid, _ = plan
    assert invalid > 0
    assert results["FIRE_AND_FORGET"]["places"] == {"processed": valid, "failure DLQ": invalid}
    assert results["REQUEST_RESPONSE"]["places"] == {"processed": valid, "source DLQ": invalid}


def test_the_executions_each_mode_runs_follow_from_its_rules(results: dict[str, dict[str, Any]],
                                                             plan: tuple[int, int, int]) -> None:
    valid, invalid, outlasted = plan
    ff, rr = results["FIRE_AND_FORGET"], results["REQUEST_RESPONSE"]
    # FIRE_AND_FORGET: one execution a message, one automatic redrive per outlasted product; each duplicate SQS
    # delivers is absorbed by the claim, whether its first execution still runs or not.
    duplicates = ff["duplicates_absorbed"]
    assert duplicates > 0 and ff["duplicates_returned"] == 0
    assert ff["executions"] == valid + invalid + outlasted + duplicates
    # REQUEST_RESPONSE: a duplicate received while its first execution has not completed the delivery fails and
    # returns to the queue (whether it did, the threads' timing decides), and comes back as a duplicate of the
    # completed delivery if its owner's delete did not remove it; every other duplicate is absorbed at once.
    returned = rr["duplicates_returned"]
    assert returned <= duplicates <= rr["duplicates_absorbed"] + returned
    # An invalid document is tried maxReceiveCount times, an outlasted product twice.
    assert rr["executions"] == valid + MAX_RECEIVE_COUNT * invalid + outlasted + rr["duplicates_absorbed"] + returned


def test_the_early_ack_and_the_visibility_timeout_dilemma_measured(results: dict[str, dict[str, Any]]) -> None:
    ff, rr = results["FIRE_AND_FORGET"], results["REQUEST_RESPONSE"]
    assert ff["deleted_after_send_seconds"]["max"] == 0  # deleted at hand-over, whatever happened next
    assert rr["deleted_after_send_seconds"]["max"] == rr["visibility_timeout_seconds"] == 1800
    assert ff["wait_before_next_attempt_seconds"]["max"] == REDRIVE_COOL_OFF
    assert rr["wait_before_next_attempt_seconds"]["max"] == rr["visibility_timeout_seconds"]
    assert rr["given_up_after_seconds"]["max"] == (MAX_RECEIVE_COUNT - 1) * rr["visibility_timeout_seconds"]
    assert (ff["longest_processing_seconds"], rr["longest_processing_seconds"]) == (3600, 300)
    assert rr["transitions"] == 0 and ff["transitions"] > 0
    assert 0 < rr["cost_per_million_messages_usd"] < ff["cost_per_million_messages_usd"]


def test_the_order_saga_runs_in_one_mode_and_the_construct_refuses_it_in_the_other(
        results: dict[str, dict[str, Any]]) -> None:
    ff, rr = results["FIRE_AND_FORGET"]["order_saga"], results["REQUEST_RESPONSE"]["order_saga"]
    # The row says what the construct does: the saga builds in FIRE_AND_FORGET, is refused in REQUEST_RESPONSE
    assert ff["longest_run_seconds"] <= ff["timeout_seconds"] == 3600
    assert rr["longest_run_seconds"] > rr["timeout_seconds"] == 300
    with pytest.raises(TimeoutMismatch, match=f"can run {rr['longest_run_seconds']:.0f} s"):
        order_saga.workflow().definition(PipelineSettings(), "REQUEST_RESPONSE")
    assert order_saga.workflow().definition(PipelineSettings())["TimeoutSeconds"] == ff["timeout_seconds"]
    assert modes.cell(rr, "fit").startswith("refused at synth: longest run 1,487 s")
