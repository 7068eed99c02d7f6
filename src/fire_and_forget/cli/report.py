"""The --json documents: one `schema` name per command, and the same keys every time (null when unknown).

docs/operator-cli.md describes each shape; tests/ops/test_json_output.py holds them to it.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from fire_and_forget.cli.errors import OpsError
from fire_and_forget.cli.executions import LEFT_BEHIND, ExecutionOutcome, RedriveVerdict
from fire_and_forget.cli.failures import FailureListing
from fire_and_forget.cli.healing import waiting_for
from fire_and_forget.cli.healing_status import PERSON_DISPOSITIONS, HealingStatus
from fire_and_forget.cli.source_dlq import MoveResult, MoveTask
from fire_and_forget.cli.status import StackStatus
from fire_and_forget.runtime.records import FailureRecord, UnrecognizedMessage
from fire_and_forget.runtime.redrive import Action, RedriveReport

if TYPE_CHECKING:
    from fire_and_forget.runtime.healing_policy import HealingPolicy

Json = dict[str, Any]


def json_time(value: datetime | None) -> str | None:
    """A time as every --json document and log line writes it: ISO 8601, UTC as Z."""
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def failure(record: FailureRecord, policy: HealingPolicy | None = None) -> Json:
    """One record; `disposition` and `dueAt` are null when the stack publishes no HealingPolicy."""
    waiting = waiting_for(record, policy)
    return {
        "messageId": record.message_id,
        "sourceMessageId": record.source_message_id,
        "key": record.key,
        "error": record.error,
        "cause": record.cause,
        "failedState": record.failed_state,
        "failedAt": json_time(record.failed_at),
        "manualRepair": record.manual_repair,
        "executionArn": record.execution_arn,
        "disposition": waiting.disposition.value if waiting.disposition is not None else None,
        "attempt": waiting.attempt,
        "dueAt": json_time(waiting.due_at),
        "notRedrivable": waiting.reason,  # why the automatic redrive cannot resend it (disposition cannot-redrive)
        "reconciliation": record.reconciliation,
        "copies": list(record.copies),  # DLQ message ids of further records of the same execution
    }


def failure_detail(record: FailureRecord, policy: HealingPolicy | None = None) -> Json:
    return failure(record, policy) | {
        "compensation": record.compensation,
        "stateMachineArn": record.state_machine_arn,
        "body": record.body,
        "messageAttributes": record.message_attributes,
        "record": record.record,
    }


def unrecognized(message: UnrecognizedMessage) -> Json:
    return {"messageId": message.message_id, "reason": message.reason, "bodyPreview": message.body_preview}


def failures_list(stack: str, listing: FailureListing, policy: HealingPolicy | None = None) -> Json:
    return {
        "schema": "ff-ops/failures-list/v1",
        "stack": stack,
        "keyField": listing.key_field,
        "queueUrl": listing.queue_url,
        "approximateDepth": listing.approximate_depth,
        "read": listing.read,
        "truncated": listing.truncated,
        "matching": listing.matching,
        "nextToken": listing.next_token,
        "failures": [failure(r, policy) for r in listing.records],
        "unrecognized": [unrecognized(m) for m in listing.unrecognized],
    }


def failures_show(stack: str, key_field: str, records: list[FailureRecord],
                  policy: HealingPolicy | None = None) -> Json:
    return {"schema": "ff-ops/failures-show/v1", "stack": stack, "keyField": key_field,
            "failures": [failure_detail(r, policy) for r in records]}


_ACTION_KEYS = {
    Action.REDRIVEN: "redriven",
    Action.WOULD_REDRIVE: "wouldRedrive",
    Action.REFUSED_MANUAL_REPAIR: "refusedManualRepair",
    Action.UNRECOGNIZED: "unrecognized",
    Action.SEND_FAILED: "sendFailed",
    Action.SENT_NOT_DELETED: "sentNotDeleted",
    Action.COPY_DELETED: "copyDeleted",
    Action.DECLINED: "declined",
}


def failures_redrive(stack: str, report: RedriveReport, audit: Json | None = None) -> Json:
    """`audit` is the guard's block (fire_and_forget/cli/guard.py): where the audit lines went, how many."""
    return {
        "schema": "ff-ops/failures-redrive/v1",
        "stack": stack,
        "keyField": report.key_field,
        "dryRun": report.dry_run,
        "read": report.read,
        "complete": report.complete,
        "summary": {key: report.count(action) for action, key in _ACTION_KEYS.items()},
        "items": [
            {"messageId": o.message_id, "key": o.key, "error": o.error, "action": o.action.value,
             "newMessageId": o.new_message_id, "reason": o.reason}
            for o in report.outcomes
        ],
        "audit": audit,
    }


def move_task(task: MoveTask | None) -> Json | None:
    if task is None:
        return None
    return {"taskHandle": task.task_handle, "status": task.status, "moved": task.moved, "toMove": task.to_move,
            "failureReason": task.failure_reason, "startedAt": json_time(task.started_at)}


def source_dlq_redrive(stack: str, source_arn: str, destination_arn: str, result: MoveResult,
                       audit: Json | None = None) -> Json:
    return {
        "schema": "ff-ops/source-dlq-redrive/v1",
        "stack": stack,
        "sourceDlqArn": source_arn,
        "destinationArn": destination_arn,
        "messagesBefore": result.messages_before,
        "started": result.started,
        "waited": result.waited,
        "declined": result.declined,
        "listed": [{"messageId": m.message_id, "key": m.key} for m in result.listed],
        "task": move_task(result.task),
        "audit": audit,
    }


_VERDICT_KEYS = {
    RedriveVerdict.REDRIVEN: "redriven",
    RedriveVerdict.WOULD_REDRIVE: "wouldRedrive",
    RedriveVerdict.IN_FAILURE_DLQ: "inFailureDlq",
    RedriveVerdict.RECONCILED: "reconciled",
    RedriveVerdict.ABORTED_BY_PERSON: "abortedByPerson",
    RedriveVerdict.NOT_REDRIVABLE: "notRedrivable",
    RedriveVerdict.REDRIVE_FAILED: "redriveFailed",
    RedriveVerdict.DECLINED: "declined",
}


def executions_redrive(stack: str, state_machine_arn: str, dry_run: bool, outcomes: list[ExecutionOutcome],
                       audit: Json | None = None) -> Json:
    return {
        "schema": "ff-ops/executions-redrive/v1",
        "stack": stack,
        "stateMachineArn": state_machine_arn,
        "dryRun": dry_run,
        "complete": executions_complete(outcomes),
        "summary": {key: sum(1 for o in outcomes if o.verdict is verdict) for verdict, key in _VERDICT_KEYS.items()},
        "items": [
            {"executionArn": o.execution_arn, "status": o.status, "stopDate": json_time(o.stop_date), "error": o.error,
             "verdict": o.verdict.value, "reason": o.reason, "redriveDate": json_time(o.redrive_date),
             "forced": o.forced}
            for o in outcomes
        ],
        "audit": audit,
    }


def executions_complete(outcomes: list[ExecutionOutcome]) -> bool:
    return not any(o.verdict in LEFT_BEHIND for o in outcomes)


def status(report: StackStatus) -> Json:
    return {
        "schema": "ff-ops/status/v1",
        "stack": report.stack,
        "region": report.region,
        "keyField": report.key_field,
        "invocationType": report.invocation_type,
        "queues": [
            {"outputKey": q.output_key, "label": q.label, "url": q.url, "visible": q.visible,
             "inFlight": q.in_flight, "delayed": q.delayed, "oldestAgeSeconds": q.oldest_age_seconds}
            for q in report.queues
        ],
        "pipe": {"name": report.pipe.name, "currentState": report.pipe.current_state,
                 "desiredState": report.pipe.desired_state, "stateReason": report.pipe.state_reason},
        "executions": {
            "windowHours": report.window.total_seconds() / 3600,
            "counts": dict(report.counts),
            "countsTruncated": report.counts_truncated,
            "countedFrom": report.counted_from,
            "recent": [
                {"executionArn": e.execution_arn, "name": e.name, "status": e.status,
                 "startDate": json_time(e.start_date), "stopDate": json_time(e.stop_date),
                 "messageId": e.message_id, "key": e.key}
                for e in report.recent
            ],
        },
        "healing": healing(report.healing, report.window.total_seconds() / 3600),
    }


def healing(status: HealingStatus | None, window_hours: float) -> Json | None:
    """null for a stack without self-healing (no HealingPolicy output)."""
    if status is None:
        return None
    return {
        "failureDlq": {
            "read": status.read,
            "truncated": status.truncated,
            "unrecognized": status.unrecognized,
            "waitingForRetry": status.waiting_for_retry,
            "nextDueAt": json_time(status.next_due),
            "needingAPerson": status.needing_a_person,
            "byDisposition": {d.value: status.dispositions[d] for d in PERSON_DISPOSITIONS},
        },
        "healedAutomatically": {
            "windowHours": window_hours,
            "service": status.healed.service,
            "executionsReconciled": status.healed.executions_reconciled,
            "failuresAutoRedriven": status.healed.failures_auto_redriven,
        },
    }


def error(failure: OpsError) -> Json:
    return {"schema": "ff-ops/error/v1",
            "error": {"type": type(failure).__name__, "message": failure.message, "hint": failure.hint,
                      "exitCode": int(failure.exit_code)}}
