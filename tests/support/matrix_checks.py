"""Direct checks of the fault matrix's newer modes: what each fault did, asserted on queues, topics and executions,
beside what offline/accounting.py concludes."""

from __future__ import annotations

import json
from typing import Any

from moto.sns.models import sns_backends

from offline.accounting import Ledger
from offline.deployment import ACCOUNT
from offline.orders import OrderKind, SampleOrder
from offline.rehearsal import Execution, Rehearsal
from stacks.fire_and_forget.alert_path import ALERT_PATH_ALARMS
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
    """HandleFailure's SendMessage was in flight when the execution was aborted; it still delivered the record."""
    order_id = sample(samples, OrderKind.DECLINED).order_id
    (declined,) = executions_of(aws, order_id)
    assert declined.status == "ABORTED" and declined.states[-1] == "HandleFailure"
    assert aws.faults.held == ["FailureDlq"] and aws.faults.completed_holds == ["FailureDlq"]
    assert len(failure_records(aws, order_id)) == 1
    assert naming(alerts(aws), declined) == 1  # the rule's ABORTED alert; NotifyFailure never ran


def one_order_unannounced_by_sns(aws: Rehearsal, ledger: Ledger, samples: list[SampleOrder]) -> None:
    """SNS refused one order's alerts only: NotifyFailure's and the rule's; its rule alert waits in the target DLQ."""
    (declined,) = executions_of(aws, sample(samples, OrderKind.DECLINED).order_id)
    assert declined.status == "FAILED" and declined.states[-1] == "NotifyFailure"
    assert naming(alerts(aws), declined) == 0
    # The rule's alert for it was not delivered either (its target refused it: the target DLQ keeps it).
    lost = [
        d
        for d in aws.bus.deliveries
        if d.event["detail"]["executionArn"] == declined.arn and (not d.delivered or getattr(d, "alert_lost", False))
    ]
    assert len(lost) == 1 and len(aws.bus.deliveries) >= 1
    others = [e for e in aws.executions() if e.status == "FAILED" and e.arn != declined.arn]
    assert len(others) == 2 and [naming(alerts(aws), e) for e in others] == [1, 1]


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
