"""Every alarm of the template, shown to trip on the metric data a failure would make AWS publish.

moto's CloudWatch stores alarms but does not evaluate them: an alarm keeps the state it was created with whatever data
arrives. So these tests do what CloudWatch would do. The rehearsal publishes the data points AWS publishes for what
happened (src/fire_and_forget/rehearsal/metrics.py); each test reads an alarm from the synthesized template, binds its
dimensions to the rehearsal's physical resources, fetches the data from moto's CloudWatch with the alarm's own statistic
and period (GetMetricData), computes the alarm's metric-math expression (moto's GetMetricData cannot), and compares the
result with the alarm's threshold and comparison operator, missing data treated as the alarm says.

One rehearsal runs every failure at once, each fault aimed at its own order; the value each alarm sees must equal
what the rehearsal observed (so each fault trips its own alarm, bound to the right resource). A second rehearsal of
healthy traffic, a duplicate delivery included, must leave every alarm OK.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from demos.orders.samples import OrderKind, make_order, seed_inventory
from fire_and_forget.rehearsal.accounting import advance_past_retries
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.rehearsal import Rehearsal
from stacks.orders.tasks import TASKS
from tests.support.alarms import Evaluation, alarms, create_in_moto, evaluate
from tests.support.redriver_gauges import REDRIVE_PERIOD_SECONDS, keep_one_overdue, needing_a_person

FUNCTIONS = tuple(spec.construct_id for spec in TASKS)
COMPENSATIONS = ("CancelShipment", "RefundPayment", "ReleaseInventory")
# Alarms whose metric the rehearsal cannot produce, and why.
CANNOT_TRIP_OFFLINE = {
    "ExecutionThrottled": "it counts throttled state transitions (StateEntered events and retries: "
                          "procedure-cw-metrics.html), which moto never throttles; the rehearsal's StartExecution "
                          "quota (fire_and_forget/rehearsal/quotas.py) is the API's, which this metric does not count",
    "PipeExecutionThrottled": "a pipe is throttled by the Pipes service's own concurrency limits, which the "
                              "emulator (src/fire_and_forget/rehearsal/pipe.py) does not model",
    "AlertsTopicNotificationsFailed": "SNS counts NumberOfNotificationsFailed when it cannot deliver to a "
                                      "subscription; moto's SNS never delivers to e-mail or HTTPS endpoints",
    "AlertPathNotificationsFailed": "the same, for the AlertPathTopic's e-mail subscription",
}


# -- the rehearsals -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What a rehearsal did, as the rehearsal itself saw it, and what every alarm would say about it."""

    evaluated: dict[str, Evaluation]
    statuses: Counter[str]
    queue_depths: dict[str, int]
    start_failures: int
    undelivered: int
    function_errors: Counter[str]  # failed invocations by task (the Reconciler's and the Redriver's among them)
    needing_a_person: int  # failure records needing a person when the Redriver last ran to its end
    failure_dlq_peak: int  # the failure DLQ's depth before the Redriver sent a record back (Maximum over the period)
    moto_states: dict[str, str]  # the state moto's CloudWatch reports for each alarm, as put there
    overdue: int = 0  # records waiting past their due time plus one Redriver period when the Redriver last ran
    source_dlq_spent: int = 0  # source-DLQ messages whose automatic attempts are spent, read from the queue


def outcome(aws: Rehearsal, evaluated: dict[str, Evaluation], needing_a_person: int = 0,
            failure_dlq_peak: int = 0) -> Outcome:
    depths = {key: len(aws.messages(key)) for key in ("FailureDlqUrl", "SourceDlqUrl", "FailureEventsQueueUrl",
                                                       "EventTargetDlqUrl", "ReconcilerDlqUrl", "ScheduleDlqUrl")}
    moto_states = {alarm["AlarmName"]: alarm["StateValue"]
                   for page in aws.cloudwatch.get_paginator("describe_alarms").paginate()
                   for alarm in page["MetricAlarms"]}
    errors = Counter(i.task for i in aws.runtime.invocations if i.error_type is not None)
    return Outcome(evaluated, Counter(e.status for e in aws.executions()), depths, aws.pipe.stats.start_failures,
                   sum(1 for delivery in aws.bus.deliveries if not delivery.delivered), errors, needing_a_person,
                   max(failure_dlq_peak, depths["FailureDlqUrl"]), moto_states)


def refuse_rule_deliveries(aws: Rehearsal) -> str:
    """The failure-events queue refusing EventBridge (its queue or key policy denying events.amazonaws.com): the
    rehearsal's bus is pointed at a queue that does not exist, so every delivery attempt fails. Returns the URL to
    put back."""
    url = aws.outputs["FailureEventsQueueUrl"]
    (arn,) = [arn for arn, queue_url in aws.bus.queue_urls.items() if queue_url == url]
    aws.bus.queue_urls[arn] = url + "-refusing"
    return arn


def send(aws: Rehearsal, kind: OrderKind, number: int) -> str | None:
    sample = make_order(kind, number, random.Random(number))
    aws.send(sample.body)
    return sample.order_id


def unexpected_errors(task: str) -> int:
    return FUNCTIONS.index(task) + 1


throttles = unexpected_errors


@pytest.fixture(scope="module")
def failures(cloud_assembly: Path) -> Outcome:
    """Every failure the alarms watch for, each fault aimed at an order of its own, in one deployment.

    Time is the rehearsal's clock, and each alarm looks at its last period: the failures happen at one moment and
    every alarm on them is evaluated then; the Redriver's alarms are evaluated after its first (failing) tick.
    """
    with Rehearsal.start(cloud_assembly, execution_timeout_seconds=1) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        for alarm in alarms(aws).values():
            create_in_moto(aws, alarm)
        # The Reconciler failing on one event every time: after the failure-events queue's maxReceiveCount the event
        # is in the ReconcilerDlq. Its redeliveries are compressed (visibility 0 for this phase, like the retry
        # waits), then the queue's own visibility timeout is put back.
        events_queue = aws.outputs["FailureEventsQueueUrl"]
        visibility = aws.visibility_timeout("FailureEventsQueueUrl")
        aws.sqs.set_queue_attributes(QueueUrl=events_queue, Attributes={"VisibilityTimeout": "0"})
        stuck = make_order(OrderKind.DECLINED, 70, random.Random(70)).order_id
        aws.faults.add(Fault("FailureDlq", FaultKind.UNAVAILABLE, times=6, key=stuck))  # the tail cannot record
        aws.faults.add(Fault("Reconciler", FaultKind.CRASH, times=5, key=stuck))
        send(aws, OrderKind.DECLINED, 70)
        aws.run()
        aws.sqs.set_queue_attributes(QueueUrl=events_queue, Attributes={"VisibilityTimeout": str(visibility)})
        # For a second order whose tail cannot record either, EventBridge cannot deliver to the queue at all: its
        # delivery ends in the target DLQ.
        events_arn = refuse_rule_deliveries(aws)
        unreachable = make_order(OrderKind.DECLINED, 71, random.Random(71)).order_id
        aws.faults.add(Fault("FailureDlq", FaultKind.UNAVAILABLE, times=6, key=unreachable))
        send(aws, OrderKind.DECLINED, 71)
        aws.run()
        aws.bus.queue_urls[events_arn] = aws.outputs["FailureEventsQueueUrl"]

        # An execution that times out (its ChargePayment held past the compressed timeout), then one that is aborted.
        timed_out = send(aws, OrderKind.VALID, 1)
        aws.faults.add(Fault("ChargePayment", FaultKind.HANG, key=timed_out))
        aws.wait_for_hang()
        aws.advance(2)  # past its 1-second timeout on the rehearsal's clock
        assert aws.executions()[-1].status == "TIMED_OUT"
        aws.set_execution_timeout(None)
        aborted = send(aws, OrderKind.VALID, 2)
        aws.faults.add(Fault("ChargePayment", FaultKind.HANG, key=aborted))
        aws.drain()
        deadline = time.monotonic() + 60  # a guard against waiting forever, not a time limit
        while aws.runtime.hung < 2:
            assert time.monotonic() < deadline, "the second execution was not held"
            time.sleep(0.01)
        aws.abort(aws.pipe.stats.started[-1])
        aws.release_held()

        # Business failures (the errors the handlers raise on purpose), one order of each kind.
        for number, kind in enumerate((OrderKind.DECLINED, OrderKind.OUT_OF_STOCK, OrderKind.MALFORMED,
                                       OrderKind.UNSERVED), start=10):
            send(aws, kind, number)
        # Each function fails unexpectedly as often as its place in FUNCTIONS (1 to 6), so that an alarm bound to
        # the wrong function shows: timeouts the retrier absorbs, then a crash it does not. A compensation runs on
        # an UNSERVED order, which runs all three.
        for number, task in enumerate(FUNCTIONS, start=20):
            kind = OrderKind.UNSERVED if task in COMPENSATIONS else OrderKind.VALID
            order_id = make_order(kind, number, random.Random(number)).order_id
            aws.faults.add(Fault(task, FaultKind.TIMEOUT, times=unexpected_errors(task) - 1, key=order_id))
            aws.faults.add(Fault(task, FaultKind.CRASH, times=1, key=order_id))
            send(aws, kind, number)
        # Each function throttled as often as its place, within its retries: the steps on a valid order, the
        # compensations on an UNSERVED one.
        for number, kind, tasks in ((30, OrderKind.VALID, FUNCTIONS[:3]), (31, OrderKind.UNSERVED, COMPENSATIONS)):
            order_id = make_order(kind, number, random.Random(number)).order_id
            for task in tasks:
                aws.faults.add(Fault(task, FaultKind.THROTTLE, times=throttles(task), key=order_id))
            send(aws, kind, number)
        # The pipe cannot start one order's execution: SQS's redrive moves it to the source DLQ.
        refused = make_order(OrderKind.VALID, 40, random.Random(40)).order_id
        aws.faults.add(Fault("StartExecution", FaultKind.START_REFUSED, key=refused))
        send(aws, OrderKind.VALID, 40)
        for number in range(50, 62):  # healthy orders: the failure rate counts from a minimum of started executions
            send(aws, OrderKind.VALID, number)
        aws.run()

        every = alarms(aws)
        redriver_alarms = ("RedriverErrors", "ScheduleDlqNotEmpty", "FailuresNeedAPerson", "FailureDlqNotEmpty")
        evaluated = {name: evaluate(aws, alarm) for name, alarm in every.items() if name not in redriver_alarms}
        # The pipe stopped, an order waiting: the oldest message's age is sampled as if the alarm's threshold had
        # passed (time compressed, like the retry waits), and the alarm evaluated at that time.
        send(aws, OrderKind.VALID, 80)
        later = datetime.now(UTC) + timedelta(seconds=every["SourceQueueBacklog"].threshold + 1)
        aws.metrics.sample_queues(at=later)
        evaluated["SourceQueueBacklog"] = evaluate(aws, every["SourceQueueBacklog"], at=later)
        # The Reconciler stopped consuming, a status-change event waiting: its age sampled past the threshold.
        aws.sqs.send_message(QueueUrl=aws.outputs["FailureEventsQueueUrl"], MessageBody=json.dumps({"detail": {}}))
        later = datetime.now(UTC) + timedelta(seconds=every["FailureEventsWaiting"].threshold + 1)
        aws.metrics.sample_queues(at=later)
        evaluated["FailureEventsWaiting"] = evaluate(aws, every["FailureEventsWaiting"], at=later)
        observed = outcome(aws, evaluated)

        # The Redriver's first tick fails on all of Lambda's three asynchronous attempts: to the ScheduleDlq; its
        # alarms look at that period. The second tick runs to its end and counts the records that need a person.
        aws.faults.add(Fault("Redriver", FaultKind.CRASH, times=3))
        aws.advance(REDRIVE_PERIOD_SECONDS)
        peak = len(aws.messages("FailureDlqUrl"))
        evaluated |= {name: evaluate(aws, every[name]) for name in redriver_alarms if name != "FailuresNeedAPerson"}
        first_tick = outcome(aws, evaluated, 0, peak)
        aws.advance(REDRIVE_PERIOD_SECONDS)
        counted = needing_a_person(aws)
        evaluated["FailuresNeedAPerson"] = evaluate(aws, every["FailuresNeedAPerson"])
        # Later the timed-out execution is reconciled (once its held invocation had certainly ended) and its
        # record sent back: the copy succeeds.
        advance_past_retries(aws)
        copies = [e for e in aws.executions() if timed_out and timed_out in str(e.input) and e.status == "SUCCEEDED"]
        assert len(copies) == 1
        # By now the Redriver has sent the refused order back from the source DLQ as often as it may: its last copy
        # waits there, and the next run counts it.
        aws.advance(REDRIVE_PERIOD_SECONDS)
        spent = sum(1 for m in aws.messages("SourceDlqUrl")
                    if int(m["MessageAttributes"]["ffRedriveAttempt"]["StringValue"]) >= 3)
        evaluated["SourceDlqNeedsAPerson"] = evaluate(aws, every["SourceDlqNeedsAPerson"])
        # Last, so that no other alarm sees it: a record the Redriver cannot clear, overdue.
        stuck = keep_one_overdue(aws)
        evaluated["FailuresOverdue"] = evaluate(aws, every["FailuresOverdue"])
        return replace(
            observed, evaluated=evaluated, needing_a_person=counted, failure_dlq_peak=first_tick.failure_dlq_peak,
            function_errors=observed.function_errors + Counter({"Redriver": first_tick.function_errors["Redriver"]}),
            queue_depths={**observed.queue_depths, "ScheduleDlqUrl": first_tick.queue_depths["ScheduleDlqUrl"]},
            moto_states=outcome(aws, evaluated).moto_states, overdue=stuck, source_dlq_spent=spent)


@pytest.fixture(scope="module")
def healthy(cloud_assembly: Path) -> Outcome:
    """Valid orders only, one of them delivered twice, more of them than the failure rate's minimum."""
    with Rehearsal.start(cloud_assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        # Two Redriver periods: it reports its gauges (all 0) on every run, as it does all day in AWS; without a report
        # FailuresNeedAPerson breaches (test_a_redriver_that_never_reports_needs_a_person).
        aws.advance(2 * REDRIVE_PERIOD_SECONDS)
        aws.pipe.duplicate_next = 1
        for number in range(1, 22):
            send(aws, OrderKind.VALID, number)
        aws.run()
        return outcome(aws, {name: evaluate(aws, alarm) for name, alarm in alarms(aws).items()})


@pytest.mark.parametrize("name", ["FailuresNeedAPerson", "FailuresOverdue"])
def test_a_redriver_that_never_reports_needs_a_person(cloud_assembly: Path, name: str) -> None:
    """No gauge for two Redriver periods (the schedule off, the function unable to start): nobody classifies or
    retries the failure DLQ, every waiting record is overdue, and both alarms say so."""
    with Rehearsal.start(cloud_assembly) as aws:
        silent = alarms(aws)[name]
        assert evaluate(aws, silent).state == "ALARM"
        aws.advance(2 * REDRIVE_PERIOD_SECONDS)
        assert evaluate(aws, silent) == Evaluation("OK", 0.0, {"m1": 0.0})


# Each alarm: the failure that trips it, and the value it must see: what the rehearsal itself observed.
TRIPPED_BY: dict[str, tuple[str, Callable[[Outcome], float]]] = {
    "ExecutionsFailed": ("business failures and crashes", lambda o: o.statuses["FAILED"]),
    "ExecutionsTimedOut": ("an execution timed out", lambda o: o.statuses["TIMED_OUT"]),
    "ExecutionsAborted": ("an execution stopped", lambda o: o.statuses["ABORTED"]),
    "FailureRate": ("half of 27 executions not succeeding", lambda o: 100 * (
        o.statuses["FAILED"] + o.statuses["TIMED_OUT"] + o.statuses["ABORTED"]) / o.statuses.total()),
    "FailureDlqNotEmpty": ("failed orders", lambda o: o.failure_dlq_peak),
    "SourceDlqNotEmpty": ("StartExecution refused", lambda o: o.queue_depths["SourceDlqUrl"]),
    # Each age alarm's threshold (600 s, 300 s) plus the second the sample is taken after.
    "FailureEventsWaiting": ("the Reconciler stopped", lambda o: 601),
    "SourceQueueBacklog": ("the pipe stopped", lambda o: 301),
    "PipeExecutionFailed": ("StartExecution refused", lambda o: o.start_failures),  # maxReceiveCount receives
    "RuleFailedInvocations": ("failure-events queue refusing", lambda o: o.undelivered),
    "RuleTargetDlqNotEmpty": ("failure-events queue refusing", lambda o: o.queue_depths["EventTargetDlqUrl"]),
    "ReconcilerDlqNotEmpty": ("the Reconciler failing on one event every time",
                              lambda o: o.queue_depths["ReconcilerDlqUrl"]),
    "ReconcilerErrors": ("the Reconciler crashing", lambda o: o.function_errors["Reconciler"]),
    "RedriverErrors": ("the Redriver crashing", lambda o: o.function_errors["Redriver"]),
    "ScheduleDlqNotEmpty": ("a tick failing all its attempts", lambda o: o.queue_depths["ScheduleDlqUrl"]),
    "FailuresNeedAPerson": ("records needing a person", lambda o: o.needing_a_person),
    "FailuresOverdue": ("the source queue refusing a resend", lambda o: o.overdue),
    "SourceDlqNeedsAPerson": ("StartExecution refused for every copy", lambda o: o.source_dlq_spent),
} | {f"{task}UnexpectedErrors": (f"{unexpected_errors(task)} unexpected errors", lambda o, t=task: unexpected_errors(t))
     for task in FUNCTIONS} | {
    f"{task}Throttles": (f"{throttles(task)} throttles", lambda o, t=task: throttles(t)) for task in FUNCTIONS}


@pytest.mark.parametrize("name", list(TRIPPED_BY), ids=[f"{name} ({cause})" for name, (cause, _) in TRIPPED_BY.items()])
def test_the_failure_trips_the_alarm_with_the_value_the_rehearsal_observed(failures: Outcome, name: str) -> None:
    evaluation = failures.evaluated[name]

    assert evaluation.state == "ALARM", evaluation
    assert evaluation.value == pytest.approx(TRIPPED_BY[name][1](failures)), evaluation


def test_moto_does_not_evaluate_alarms(failures: Outcome) -> None:
    # Why this module evaluates the alarms itself: in moto an alarm keeps the state it was created with, whatever
    # data arrives. Should moto start evaluating them, this fails, and its verdict can replace evaluate().
    tripped = {name for name, evaluation in failures.evaluated.items() if evaluation.state == "ALARM"}
    assert set(failures.moto_states) == set(failures.evaluated)

    assert {name: failures.moto_states[name] for name in tripped} == dict.fromkeys(tripped, "OK")


@pytest.mark.parametrize("name", list(CANNOT_TRIP_OFFLINE))
def test_alarms_whose_metric_cannot_be_produced_offline(name: str) -> None:
    pytest.skip(f"{name}: {CANNOT_TRIP_OFFLINE[name]}")


def test_every_metric_alarm_of_the_template_is_proven_or_explained(failures: Outcome) -> None:
    assert set(failures.evaluated) == set(TRIPPED_BY) | set(CANNOT_TRIP_OFFLINE)
    assert all((failures.evaluated[name].state, failures.evaluated[name].value) == ("OK", None)
               for name in CANNOT_TRIP_OFFLINE)


def test_healthy_traffic_leaves_every_alarm_ok(healthy: Outcome) -> None:
    assert healthy.statuses == {"SUCCEEDED": 22}  # 21 orders, one delivered twice

    assert {name: e for name, e in healthy.evaluated.items() if e.state != "OK"} == {}
    # OK not for want of data: the failure rate is computed (22 started, above its minimum) and is 0; the duplicate's
    # DuplicateDelivery is one Lambda error, subtracted as the business error ReserveInventory raises on purpose.
    rate = healthy.evaluated["FailureRate"]
    assert (rate.value, rate.series["started"]) == (0, 22)
    reserve = healthy.evaluated["ReserveInventoryUnexpectedErrors"]
    assert (reserve.value, reserve.series["errors"], reserve.series["expected0"]) == (0, 1, 1)
