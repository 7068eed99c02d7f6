"""Direct checks of the fault matrix's newer modes: what each fault did, asserted on queues, topics and executions,
beside what src/fire_and_forget/rehearsal/accounting.py concludes."""

from __future__ import annotations

import json
from typing import Any

from moto.sns.models import sns_backends

from demos.orders.samples import OrderKind, SampleOrder
from fire_and_forget.cli.failures import list_failures
from fire_and_forget.construct.alert_path import ALERT_PATH_ALARMS
from fire_and_forget.rehearsal.accounting import Ledger, Place
from fire_and_forget.rehearsal.deployment import ACCOUNT
from fire_and_forget.rehearsal.rehearsal import Execution, Rehearsal
from tests.support.alarms import alarms, evaluate
from tests.support.template import of_type


def executions_of(aws: Rehearsal, order_id: str | None) -> list[Execution]:
    return [e for e in aws.executions() if order_id is not None and order_id in json.dumps(e.input)]


def naming(texts: list[str], execution: Execution) -> int:
    return sum(1 for text in texts if execution.arn in text)


def alerts(aws: Rehearsal) -> list[str]:
    return [message for _subject, message in aws.notifications()]


def sample(samples: list[SampleOrder], kind: OrderKind) -> SampleOrder:
    return next(s for s in samples if s.kind is kind)


def failure_records(aws: Rehearsal, order_id: str | None) -> list[dict[str, Any]]:
    records = [json.loads(m["Body"]) for m in aws.messages("FailureDlqUrl")]
    return [r for r in records if order_id is not None and order_id in r["record"]["body"]]


def announced_twice(aws: Rehearsal, ledger: Ledger, samples: list[SampleOrder]) -> None:
    """The publish took effect, its response was lost, NotifyFailure's retry published again."""
    (declined,) = executions_of(aws, sample(samples, OrderKind.DECLINED).order_id)
    assert naming(alerts(aws), declined) == 2
    unserved = executions_of(aws, sample(samples, OrderKind.UNSERVED).order_id)
    assert [naming(alerts(aws), e) for e in unserved] == [1]
    assert ledger.fates[declined.message_id or ""].announcements == 2


def failure_record_twice(aws: Rehearsal, ledger: Ledger, samples: list[SampleOrder]) -> None:
    """The SendMessage took effect, its response was lost, HandleFailure's retry sent the record again."""
    (declined,) = executions_of(aws, sample(samples, OrderKind.DECLINED).order_id)
    records = failure_records(aws, sample(samples, OrderKind.DECLINED).order_id)
    assert len(records) == 2
    assert {r["record"]["messageId"] for r in records} == {declined.message_id}
    assert {r["executionArn"] for r in records} == {declined.arn}
    assert declined.status == "FAILED" and naming(alerts(aws), declined) == 1  # announced once all the same
    one_failure_listed(aws, ledger, declined, reconciled=False)


def start_response_lost_ran_twice(aws: Rehearsal, ledger: Ledger, samples: list[SampleOrder]) -> None:
    """StartExecution started an execution but the pipe saw it fail: the message stayed and started a second."""
    order_id = samples[0].order_id
    runs = executions_of(aws, order_id)
    assert len(runs) == 2 and len({e.message_id for e in runs}) == 1
    assert aws.pipe.stats.start_failures == 1
    assert sorted(e.states[-1] for e in runs) == ["ArrangeShipping", "DuplicateDeliveryIgnored"]
    assert [s["orderId"] for s in aws.items("ShipmentsTableName")].count(order_id) == 1
    assert aws.messages("SourceQueueUrl") == [] and aws.messages("SourceDlqUrl") == []


def held_send_completed_after_abort(aws: Rehearsal, ledger: Ledger, samples: list[SampleOrder]) -> None:
    """HandleFailure's SendMessage was in flight when the execution was aborted; it still delivered the record, and
    the Reconciler, which sees HandleFailure entered but never exited, recorded the abort beside it."""
    order_id = sample(samples, OrderKind.DECLINED).order_id
    (declined,) = executions_of(aws, order_id)
    assert declined.status == "ABORTED" and declined.states[-1] == "HandleFailure"
    assert aws.faults.held == ["FailureDlq"] and aws.faults.completed_holds == ["FailureDlq"]
    records = failure_records(aws, order_id)
    assert {r["executionArn"] for r in records} == {declined.arn}
    assert sorted(bool(r.get("reconciliation")) for r in records) == [False, True]  # the tail's, the Reconciler's
    assert all(r["failure"]["error"] == "PaymentDeclined" for r in records)  # the tail's description is kept
    assert naming(alerts(aws), declined) == 1  # the Reconciler's ABORTED alert; NotifyFailure never ran
    one_failure_listed(aws, ledger, declined, reconciled=True)


def one_failure_listed(aws: Rehearsal, ledger: Ledger, execution: Execution, *, reconciled: bool) -> None:
    """The two records of one execution are one failure: one place in the books, one row in `ff-ops failures list`
    (the Reconciler's record standing for both when there is one), the other named as its copy."""
    fate = ledger.fates[execution.message_id or ""]
    assert (fate.places, fate.announcements) == ([Place.FAILURE_DLQ], 1)
    listing = list_failures(aws.sqs, aws.outputs["FailureDlqUrl"], wait_seconds=0)
    (listed,) = [r for r in listing.records if r.execution_arn == execution.arn]
    assert len(listed.copies) == 1 and (listed.reconciliation is not None) == reconciled
    assert listed.status == ("ABORTED" if reconciled else "FAILED")


def one_order_unannounced_by_sns(aws: Rehearsal, ledger: Ledger, samples: list[SampleOrder]) -> None:
    """SNS refused one order's alerts only: NotifyFailure's and the Reconciler's; after the failure-events queue's
    maxReceiveCount its status-change event waits in the ReconcilerDlq, whose alarm announces it."""
    (declined,) = executions_of(aws, sample(samples, OrderKind.DECLINED).order_id)
    assert declined.status == "FAILED" and declined.states[-1] == "NotifyFailure"
    assert naming(alerts(aws), declined) == 0
    (event,) = aws.messages("ReconcilerDlqUrl")
    assert json.loads(event["Body"])["detail"]["executionArn"] == declined.arn
    assert ledger.fates[declined.message_id or ""].announcements == 1  # by the alarm ReconcilerDlqNotEmpty
    assert len(failure_records(aws, sample(samples, OrderKind.DECLINED).order_id)) == 1  # HandleFailure's
    others = [e for e in aws.executions() if e.status == "FAILED" and e.arn != declined.arn]
    assert len(others) == 2 and [naming(alerts(aws), e) for e in others] == [1, 1]


def _attempt(execution: Execution) -> int:
    value = execution.input[0].get("messageAttributes", {}).get("ffRedriveAttempt", {}).get("stringValue")
    return int(value) if value else 0


def exhausted_after_three_redrives(aws: Rehearsal, ledger: Ledger, samples: list[SampleOrder]) -> None:
    """Each valid order ran four times (the caller's message and three automatic redrives), every run compensated;
    only the last was announced, and its record is the one left."""
    for valid in [s for s in samples if s.kind is OrderKind.VALID]:
        runs = executions_of(aws, valid.order_id)
        assert sorted(_attempt(e) for e in runs) == [0, 1, 2, 3]
        assert all("CancelShipment" in e.states for e in runs)
        # The first three left to the automatic redrive, the last announced: each ending says which.
        assert [e.states[-1] for e in sorted(runs, key=_attempt)] == ["FailureRecordedForRetry"] * 3 + [
            "FailureRecorded"]
        last = max(runs, key=_attempt)
        assert [naming(alerts(aws), e) for e in sorted(runs, key=_attempt)] == [0, 0, 0, 1]
        (record,) = failure_records(aws, valid.order_id)
        assert record["executionArn"] == last.arn
        fate = ledger.fates[min(runs, key=_attempt).message_id or ""]  # the caller's message, attempt 0
        assert (fate.redrives, fate.announcements, fate.place) == (3, 1, Place.FAILURE_DLQ)


def healed_by_one_redrive(aws: Rehearsal, ledger: Ledger, samples: list[SampleOrder]) -> None:
    """The first run's retries ran out; it was compensated and recorded unannounced; its one redrive succeeded."""
    runs = sorted(executions_of(aws, samples[0].order_id), key=_attempt)
    assert [(_attempt(e), e.status) for e in runs] == [(0, "FAILED"), (1, "SUCCEEDED")]
    assert runs[0].states[-1] == "FailureRecordedForRetry" and "FormatFailureAlert" not in runs[0].states
    assert [naming(alerts(aws), e) for e in runs] == [0, 0]
    assert failure_records(aws, samples[0].order_id) == []
    fate = ledger.fates[runs[0].message_id or ""]
    assert (fate.place, fate.redrives, fate.copies) == (Place.SUCCEEDED, 1, [runs[1].message_id])


def aborted_reconciled(aws: Rehearsal, ledger: Ledger, samples: list[SampleOrder]) -> None:
    """The aborted execution's entered steps were compensated by the Reconciler, recorded, announced once."""
    (aborted,) = [e for e in executions_of(aws, samples[0].order_id) if e.status == "ABORTED"]
    (record,) = failure_records(aws, samples[0].order_id)
    assert record["reconciliation"]["status"] == "ABORTED" and record["executionArn"] == aborted.arn
    assert record["reconciliation"]["compensated"] == ["RefundPayment", "ReleaseInventory"]
    assert naming(alerts(aws), aborted) == 1
    assert len(executions_of(aws, samples[0].order_id)) == 1  # never redriven by itself


def timed_out_healed(aws: Rehearsal, ledger: Ledger, samples: list[SampleOrder]) -> None:
    """The timed-out execution was compensated and recorded unannounced; its automatic redrive succeeded."""
    runs = sorted(executions_of(aws, samples[0].order_id), key=_attempt)
    assert [(_attempt(e), e.status) for e in runs] == [(0, "TIMED_OUT"), (1, "SUCCEEDED")]
    assert [naming(alerts(aws), e) for e in runs] == [0, 0]
    assert failure_records(aws, samples[0].order_id) == []
    assert ledger.fates[runs[0].message_id or ""].place is Place.SUCCEEDED


def alert_path_alarm_targets_the_second_topic(aws: Rehearsal, ledger: Ledger, samples: list[SampleOrder]) -> None:
    """The alerts topic refuses everything: an alarm about the alerting trips, and its actions notify the
    AlertPathTopic, another topic under another key, which still accepts what CloudWatch publishes."""
    assert alerts(aws) == []  # nothing reached the alerts topic
    assert len([e for e in aws.executions() if e.status == "FAILED"]) == 3
    aws.metrics.publish()
    every = alarms(aws)
    tripped = {name: evaluate(aws, every[name]) for name in ALERT_PATH_ALARMS if name in every}
    tripped = {name: e for name, e in tripped.items() if e.state == "ALARM"}
    assert tripped, "no alarm about the alerting path tripped"
    template = aws.assembly.template
    topics = of_type(template, "AWS::SNS::Topic")
    second = next(lid for lid in topics if lid.startswith("PipelineAlertPath"))
    alerts_topic = next(lid for lid in topics if lid.startswith("PipelineFailureHandlingAlertsTopic"))
    assert topics[second]["Properties"]["KmsMasterKeyId"] != topics[alerts_topic]["Properties"]["KmsMasterKeyId"]
    for name in tripped:
        (alarm,) = [
            r for lid, r in of_type(template, "AWS::CloudWatch::Alarm").items()
            if lid.startswith(f"PipelineMonitoring{name}")
        ]
        assert {"Ref": second} in alarm["Properties"]["AlarmActions"], name
    # What CloudWatch's alarm action does: publish to the second topic, which the outage does not touch.
    aws.sns.publish(
        TopicArn=aws.outputs["AlertPathTopicArn"],
        Subject=f"ALARM: {min(tripped)}",
        Message=json.dumps({"AlarmName": min(tripped), "NewStateValue": "ALARM"}),
    )
    topic = sns_backends[ACCOUNT][aws.region].topics[aws.outputs["AlertPathTopicArn"]]
    assert len(topic.sent_notifications) == 1
