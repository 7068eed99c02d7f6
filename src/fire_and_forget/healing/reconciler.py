"""Reconciler entry point (``reconciler.handler``): status-change events from the failure-events queue, or the
scheduled sweep's `{"sweep": {"time": ...}}`.

From the queue, each record is one EventBridge event; a record whose reconcile raises is reported in
batchItemFailures, so the queue redelivers only it and, after maxReceiveCount receives, keeps it in the
ReconcilerDlq (alarm ReconcilerDlqNotEmpty). An execution whose task invocation may still be running
(NotYetSettled) is reported the same way: it comes back after the queue's visibility timeout, longer than any
task's function timeout. A sweep reconciles every execution that ended unreconciled in its lookback window; one it
cannot finish now, or that is not settled yet, is left to the next sweep (and to its event).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING, Any

import boto3

from fire_and_forget.healing.reconciliation import (
    NotYetSettled,
    Reconciler,
    ReconcilerSettings,
    Result,
    Verdict,
    event_time,
)
from fire_and_forget.healing.telemetry import RECONCILED, RECONCILED_MANUAL_REPAIR, count, logger, metrics
from fire_and_forget.runtime.healing_policy import HealingPolicy

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext


def reconciler() -> Reconciler:
    """One per configuration: the offline rehearsal runs two stacks' Reconcilers in one process, from one module."""
    # Upper-case names without a leading "_": the configuration, not the per-invocation _X_AMZN_TRACE_ID.
    return _reconciler(tuple(sorted((k, v) for k, v in os.environ.items() if k.isupper() and not k.startswith("_"))))


@cache
def _reconciler(_environment: tuple[tuple[str, str], ...]) -> Reconciler:
    return Reconciler(
        sfn=boto3.client("stepfunctions"), dynamodb=boto3.client("dynamodb"), sqs=boto3.client("sqs"),
        sns=boto3.client("sns"), lambda_client=boto3.client("lambda"),
        settings=ReconcilerSettings.from_environment(os.environ), policy=HealingPolicy.from_environment(),
    )


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if "sweep" in event:
        return sweep(event["sweep"])
    return from_queue(event)


def from_queue(event: dict[str, Any]) -> dict[str, Any]:
    failures = []
    for record in event.get("Records", []):
        try:
            status_change = json.loads(record["body"])
            arn = status_change["detail"]["executionArn"]
            now = event_time(status_change.get("time"))
        except (KeyError, TypeError, ValueError):
            # Not a status-change event: nothing to reconcile, and redelivering it cannot help. It is logged whole.
            logger.error("not a status-change event; dropped", extra={"body": record.get("body")})
            continue
        try:
            _note(reconciler().reconcile(arn, via="event", now=max(now, datetime.now(UTC))))
        except NotYetSettled as waiting:
            logger.info("a task may still be running; the queue redelivers it",
                        extra={"executionArn": arn, "settlesAt": waiting.settles_at.isoformat()})
            failures.append({"itemIdentifier": record["messageId"]})
        except Exception:
            logger.exception("reconcile failed; the queue redelivers it", extra={"executionArn": arn})
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


def sweep(request: dict[str, Any]) -> dict[str, Any]:
    now = event_time(request.get("time"))
    lookback = timedelta(minutes=int(os.environ["SWEEP_LOOKBACK_MINUTES"]))
    longest_run = timedelta(seconds=int(os.environ["EXECUTION_TIMEOUT_SECONDS"]))
    seen, waiting, left = 0, 0, []
    for arn in reconciler().sweep(now, lookback, longest_run):
        seen += 1
        try:
            _note(reconciler().reconcile(arn, via="sweep", now=now))
        except NotYetSettled:
            waiting += 1  # not a failure: a later sweep (or its event) settles it
        except Exception:
            logger.exception("reconcile failed; the next sweep retries it", extra={"executionArn": arn})
            left.append(arn)
    if left:
        # Raised so that the schedule's retry policy and the Errors alarm see it; every other one was done.
        raise RuntimeError(f"{len(left)} of {seen} executions could not be reconciled now: {left[:5]}")
    return {"swept": seen, "notSettledYet": waiting}


def _note(result: Result) -> None:
    logger.info("reconcile", extra={"verdict": result.verdict.value, "executionArn": result.execution_arn,
                                    "messageId": result.message_id, "status": result.status,
                                    "recorded": result.recorded, "announced": result.announced,
                                    "compensated": result.compensated, "manualRepair": result.manual_repair})
    if result.verdict is Verdict.RECONCILED and result.recorded:
        count(RECONCILED)
        if result.manual_repair:
            count(RECONCILED_MANUAL_REPAIR)

