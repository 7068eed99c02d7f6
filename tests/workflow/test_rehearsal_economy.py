"""What keeps the rehearsal fast without changing what it runs (docs/testing.md, "Suite time"): each definition is
parsed once per process and its program shared by the executions, a later rehearsal loads no service model again, a
function's modules are imported once per cold start and its asset directory read once, `running()` agrees with
ListExecutions, the histories read from the emulator are the API's, and advancing the clock describes no execution
nobody asked about. (One deployment per template per process: tests/workflow/test_deployment_snapshot.py.)"""

from __future__ import annotations

import json
import random
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.loaders import JSONFileLoader
from jsonpath_ng.parser import JsonPathParser
from moto.core.responses import ActionResult

from demos.orders.samples import OrderKind, make_order, seed_inventory
from fire_and_forget.rehearsal.faults import Fault, FaultKind
from fire_and_forget.rehearsal.parse_cache import ParseCache
from fire_and_forget.rehearsal.rehearsal import Execution, Rehearsal

CHARGE_ATTEMPTS = 5  # ChargePayment's first try and its retrier's MaxAttempts of 4 (statemachines/orders)


def _order(number: int) -> tuple[str, str]:
    order = make_order(OrderKind.VALID, number, random.Random(number))
    assert order.order_id is not None
    return order.body, order.order_id


def test_each_definition_is_parsed_once_however_many_executions_run_it(aws: Rehearsal) -> None:
    # Given two orders run through the saga
    for number in (1, 2):
        aws.send(_order(number)[0])
    aws.run()
    parsed = ParseCache.parses
    assert parsed >= 1
    # When five more run
    for number in range(3, 8):
        aws.send(_order(number)[0])
    executions = aws.run()
    # Then they all succeeded and the interpreter built no new program for them
    assert len(executions) == 7 and all(e.status == "SUCCEEDED" for e in executions)
    assert ParseCache.parses == parsed


def test_each_json_path_is_parsed_once_however_many_executions_evaluate_it(
        aws: Rehearsal, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given two orders run through the saga, and a record of the JSONPaths jsonpath_ng parses from then on
    for number in (1, 2):
        aws.send(_order(number)[0])
    aws.run()
    parsed: list[str] = []
    original = JsonPathParser.parse
    monkeypatch.setattr(JsonPathParser, "parse",
                        lambda self, string, lexer=None: parsed.append(string) or original(self, string, lexer))
    # When five more run
    for number in range(3, 8):
        aws.send(_order(number)[0])
    executions = aws.run()
    # Then they succeeded on the paths the first two parsed: none was parsed again
    assert len(executions) == 7 and all(e.status == "SUCCEEDED" for e in executions)
    assert parsed == []
    # And an order that fails parses the paths of its Catch and HandleFailure at most once each
    aws.send(make_order(OrderKind.DECLINED, 8, random.Random(8)).body)
    aws.send(make_order(OrderKind.DECLINED, 9, random.Random(9)).body)
    assert [e.status for e in aws.run()].count("FAILED") == 2
    assert len(parsed) == len(set(parsed))


def test_a_later_rehearsal_parses_no_definition_and_loads_no_service_model_again(
        cloud_assembly: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a rehearsal of the process that ran an order through the saga
    _one_order(cloud_assembly, 1)
    parsed = ParseCache.parses
    loaded: list[str] = []
    original = JSONFileLoader.load_file
    monkeypatch.setattr(JSONFileLoader, "load_file", lambda self, path: loaded.append(path) or original(self, path))
    # When another rehearsal of the process opens and runs one
    executions = _one_order(cloud_assembly, 2)
    # Then it succeeded on the program the first one parsed and on clients built from the models already loaded
    assert [e.status for e in executions] == ["SUCCEEDED"]
    assert ParseCache.parses == parsed
    assert loaded == []


def test_a_functions_asset_directory_is_read_once(aws: Rehearsal, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given one order run (the functions' modules imported from their asset directories)
    aws.send(_order(1)[0])
    aws.run()
    listed: list[Path] = []
    original = Path.iterdir
    monkeypatch.setattr(Path, "iterdir", lambda self: listed.append(self) or original(self))
    # When another order runs through the same functions
    aws.send(_order(2)[0])
    executions = aws.run()
    # Then their directories were not listed again: a synthesized asset never changes
    assert len(executions) == 2 and all(e.status == "SUCCEEDED" for e in executions)
    assert listed == []


def test_advancing_the_clock_describes_no_execution_nobody_asked_about(
        aws: Rehearsal, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given two orders that ended
    for number in (1, 2):
        aws.send(_order(number)[0])
    assert len(aws.run()) == 2
    described: list[str] = []
    original = Rehearsal.execution
    monkeypatch.setattr(Rehearsal, "execution", lambda self, arn: described.append(arn) or original(self, arn))
    # When the clock moves past the Redriver's and the Reconciler's schedules
    firings = aws.advance(1800)
    # Then the schedules fired and ran, and the rehearsal read no execution for a list nobody reads
    assert firings and all(f.delivered for f in firings)
    assert described == []
    assert len(aws.executions()) == 2


def _one_order(cloud_assembly: Path, number: int) -> list[Execution]:
    with Rehearsal.start(cloud_assembly) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        aws.send(_order(number)[0])
        return aws.run()


def test_executions_sharing_a_program_each_keep_their_own_retry_count(aws: Rehearsal) -> None:
    # Given two orders whose ChargePayment calls always fail with a retried Lambda error, running at once
    faults = []
    for number in (1, 2):
        body, order_id = _order(number)
        faults.append(Fault("ChargePayment", FaultKind.SERVICE_ERROR, key=order_id))
        aws.faults.add(faults[-1])
        aws.send(body)
    # When both run to their end
    executions = aws.run()
    # Then each execution made its own full set of attempts, none counted against the other's retrier
    assert [fault.fired for fault in faults] == [CHARGE_ATTEMPTS, CHARGE_ATTEMPTS]
    assert len(executions) == 2 and all(e.status == "FAILED" and "HandleFailure" in e.states for e in executions)
    assert len(aws.messages("FailureDlqUrl")) == 2


def test_a_relative_assembly_path_imports_each_function_once(cloud_assembly: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the rehearsal opened on a relative path to the cloud assembly, as `make demo` does with cdk.out
    monkeypatch.chdir(cloud_assembly.parent)
    with Rehearsal.start(Path(cloud_assembly.name)) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        aws.send(_order(1)[0])
        aws.run()
        first = sys.modules["charge_payment.handler"]
        # When a second order runs
        aws.send(_order(2)[0])
        executions = aws.run()
        # Then it ran in the same execution environment: the module was not imported again
        assert len(executions) == 2 and all(e.status == "SUCCEEDED" for e in executions)
        assert sys.modules["charge_payment.handler"] is first


def test_running_agrees_with_list_executions(aws: Rehearsal) -> None:
    # Given one order held in ChargePayment and one that has finished
    aws.send(_order(1)[0])
    aws.run()
    aws.faults.add(Fault("ChargePayment", FaultKind.HANG, times=1))
    aws.send(_order(2)[0])
    (held,) = aws.wait_for_hang()
    # Then the running set is what ListExecutions reports as RUNNING
    listed = aws.sfn.list_executions(stateMachineArn=aws.pipe.definition.target_arn, statusFilter="RUNNING")
    assert aws.running() == {e["executionArn"] for e in listed["executions"]} == {held}
    aws.release_held()
    aws.run()
    assert aws.running() == set()


def test_the_reported_histories_are_what_get_execution_history_returns(aws: Rehearsal) -> None:
    # Given an order of every kind, one of them retried twice in ChargePayment, run to their end
    for number, kind in enumerate(OrderKind, start=1):
        order = make_order(kind, number, random.Random(number))
        if kind is OrderKind.VALID:
            aws.faults.add(Fault("ChargePayment", FaultKind.SERVICE_ERROR, times=2, key=order.order_id))
        aws.send(order.body)
    executions = aws.run()
    assert len(executions) == len(OrderKind)
    # Then each execution's history, as the rehearsal reports it, equals the API's, event by event
    for execution in executions:
        events = aws.sfn.get_execution_history(executionArn=execution.arn, maxResults=1000)["events"]
        assert execution.history == events
    assert any(e["type"] == "TaskFailed" for execution in executions for e in execution.history)


def _described_as_the_api_answers(aws: Rehearsal, arn: str) -> str:
    answer = aws.sfn.describe_execution(executionArn=arn)
    answer.pop("ResponseMetadata")
    assert aws.described(arn) == answer
    return str(answer["status"])


def test_the_descriptions_read_from_the_records_are_what_describe_execution_returns(aws: Rehearsal) -> None:
    # Given an order that succeeded, one that failed, and one held in ChargePayment
    aws.send(_order(1)[0])
    aws.send(make_order(OrderKind.DECLINED, 2, random.Random(2)).body)
    aws.run()
    body, held_order = _order(3)
    aws.faults.add(Fault("ChargePayment", FaultKind.HANG, times=1, key=held_order))
    aws.send(body)
    (held,) = aws.wait_for_hang()
    # Then each description the rehearsal reads from the emulator equals the API's answer, field by field
    assert sorted(_described_as_the_api_answers(aws, e.arn) for e in aws.executions()) == [
        "FAILED", "RUNNING", "SUCCEEDED"]
    # And so does the held one's once an operator has stopped it
    aws.abort(held)
    aws.release_held()
    aws.run()
    assert _described_as_the_api_answers(aws, held) == "ABORTED"


def test_a_timed_out_execution_s_description_from_the_records_is_the_api_s(cloud_assembly: Path) -> None:
    # Given an execution that timed out (stopDate is the rehearsal's own: sfn_responses.install_stop_dates)
    with Rehearsal.start(cloud_assembly, execution_timeout_seconds=1) as aws:
        seed_inventory(aws.dynamodb, aws.outputs["InventoryTableName"])
        body, held_order = _order(1)
        aws.faults.add(Fault("ChargePayment", FaultKind.HANG, times=1, key=held_order))
        aws.send(body)
        (held,) = aws.wait_for_hang()
        aws.advance(2)
        # Then its description from the records equals the API's, stopDate included
        assert _described_as_the_api_answers(aws, held) == "TIMED_OUT"
        assert "stopDate" in aws.described(held)
        aws.release_held()


def test_a_stopped_executions_history_is_serialized_once_and_answered_the_same_every_time(
        aws: Rehearsal, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a failed order whose history was read once through the API (moto's serializer made that answer)
    aws.send(make_order(OrderKind.OUT_OF_STOCK, 1, random.Random(1)).body)
    (execution,) = aws.run()
    first = aws.sfn.get_execution_history(executionArn=execution.arn, includeExecutionData=True)
    serialized: list[object] = []
    original = ActionResult.execute_result
    monkeypatch.setattr(ActionResult, "execute_result",
                        lambda self, context: serialized.append(self.result) or original(self, context))
    # When it is read again, as each Reconciler sweep and ff-ops command does
    again = aws.sfn.get_execution_history(executionArn=execution.arn, includeExecutionData=True)
    # Then moto's serializer did not run again, and the answer is the same, the execution's whole history
    assert serialized == []
    assert again["events"] == first["events"] == execution.history
    assert again["events"][-1]["type"] == "ExecutionFailed"


def test_the_benchmarks_floor_is_the_same_work_as_an_order_through_the_rehearsal(aws: Rehearsal) -> None:
    # bench/overhead.py divides an order's time through the rehearsal by the time of its three handlers called
    # directly (LambdaRuntime.call); the ratio means something only if both sides do the same business work.
    from bench.overhead import direct_order, saga_functions

    piped_body, piped_id = _order(1)
    direct_body, direct_id = _order(2)
    # Given one order through the whole rehearsal and one straight through the handlers
    aws.send(piped_body)
    assert [e.status for e in aws.run()] == ["SUCCEEDED"]
    shipped = direct_order(aws, saga_functions(aws), direct_body)
    # Then the direct one ran every step: its result names the shipment, and each table that holds an order's
    # work holds one item for each order, of the same shape
    assert shipped["orderId"] == direct_id
    for table in ("OrdersTableName", "ReservationsTableName", "PaymentsTableName", "ShipmentsTableName"):
        items = aws.items(table)
        piped = [item for item in items if piped_id in repr(item)]
        direct = [item for item in items if direct_id in repr(item)]
        assert len(piped) == len(direct) == 1, (table, items)
        assert set(piped[0]) == set(direct[0]), table


def test_the_dynamodb_meter_never_takes_a_fault_planned_for_the_pipeline(aws: Rehearsal) -> None:
    # The meter looks at the stored item before and after each write (capacity.py); a fault on a table's calls must
    # still strike the call it was planned for.
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError

    client = boto3.client("dynamodb", region_name=aws.region, config=Config(retries={"total_max_attempts": 1}))
    table = aws.outputs["InventoryTableName"]
    aws.faults.add(Fault("InventoryTable", FaultKind.UNAVAILABLE, times=1))
    with pytest.raises(ClientError, match="ServiceUnavailable"):
        client.put_item(TableName=table, Item={"sku": {"S": "METER-PROBE"}, "available": {"N": "1"}})
    written = aws.capacity.snapshot()
    client.put_item(TableName=table, Item={"sku": {"S": "METER-PROBE"}, "available": {"N": "1"}})
    assert (aws.capacity.snapshot() - written).write == 1


def test_a_receive_tests_retention_without_computing_the_queues_attributes(
        aws: Rehearsal, monkeypatch: pytest.MonkeyPatch) -> None:
    # moto computes every attribute of the queue (each count walks every message) per message it hands out, to read
    # one number: a queue of n messages drained one at a time cost n squared.
    from moto.sqs.models import Queue

    url = aws.sqs.create_queue(QueueName="retention-probe")["QueueUrl"]
    aws.sqs.send_message(QueueUrl=url, MessageBody="one")
    computed: list[str] = []
    original = Queue.attributes
    monkeypatch.setattr(Queue, "attributes",
                        property(lambda queue: computed.append(queue.name) or original.fget(queue)))  # type: ignore[attr-defined]
    received = aws.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
    assert [message["Body"] for message in received] == ["one"]
    assert computed == []


def test_a_message_older_than_its_queues_retention_period_is_not_received(aws: Rehearsal) -> None:
    # SQS deletes a message once it is older than the queue's MessageRetentionPeriod (sqs-queue-parameters.html).
    url = aws.sqs.create_queue(QueueName="retention-probe", Attributes={"MessageRetentionPeriod": "60"})["QueueUrl"]
    aws.sqs.send_message(QueueUrl=url, MessageBody="kept")
    aws.advance(59)
    kept = aws.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=0)
    assert [message["Body"] for message in kept["Messages"]] == ["kept"]
    aws.advance(1)
    assert aws.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1).get("Messages", []) == []


def test_the_executions_metrics_are_sent_together_when_a_run_ends(
        aws: Rehearsal, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a record of the AWS/States data the rehearsal sends
    sent: list[int] = []
    original = aws.metrics._put
    monkeypatch.setattr(aws.metrics, "_put", lambda namespace, data: (
        sent.append(len(data)) if namespace == "AWS/States" else None) or original(namespace, data))
    # When five orders run
    for number in range(1, 6):
        aws.send(_order(number)[0])
    executions = aws.run()
    # Then their started and ended counts went in one request, and CloudWatch holds them all
    assert len(executions) == 5
    assert sent == [10]
    statistics = aws.cloudwatch.get_metric_statistics(
        Namespace="AWS/States", MetricName="ExecutionsSucceeded", Statistics=["Sum"], Period=60,
        StartTime=aws.now() - timedelta(hours=1), EndTime=aws.now() + timedelta(hours=1),
        Dimensions=[{"Name": "StateMachineArn", "Value": aws.pipe.definition.target_arn}])
    assert sum(point["Sum"] for point in statistics["Datapoints"]) == 5


def test_moto_lists_a_response_classs_methods_once_however_many_requests_it_serves(
        moto_as_shipped: None, aws: Rehearsal, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given one order run (every response class of the saga has served a request)
    import inspect

    aws.send(_order(1)[0])
    aws.run()
    listed: list[object] = []
    original = inspect.getmembers
    monkeypatch.setattr(inspect, "getmembers", lambda thing, predicate=None: (
        listed.append(thing) or original(thing, predicate)))
    # When two more orders run through the same services
    for number in (2, 3):
        aws.send(_order(number)[0])
    executions = aws.run()
    # Then they succeeded and no response class was listed again
    assert len(executions) == 3 and all(e.status == "SUCCEEDED" for e in executions)
    assert [thing for thing in listed if isinstance(thing, type) and thing.__name__.endswith("Response")] == []


def test_a_quiet_round_asks_moto_nothing_through_the_api(aws: Rehearsal) -> None:
    # Given an order that ended, and a record of every request the rehearsal's own clients make from then on
    aws.send(_order(1)[0])
    assert [e.status for e in aws.run()] == ["SUCCEEDED"]
    asked: list[str] = []

    def record(model: Any, **_: Any) -> None:
        asked.append(model.name)

    clients = (aws.sqs, aws.sfn, aws.cloudwatch)
    for client in clients:
        client.meta.events.register("before-call", record)
    try:
        # When the rehearsal runs with nothing to do, twice
        aws.run_until_quiet()
        aws.run_until_quiet()
    finally:
        for client in clients:
            client.meta.events.unregister("before-call", record)
    # Then it received from no empty queue, listed no executions and sent no metric through the API
    assert asked == []
    # and the queue samples it published are in CloudWatch all the same
    depth = aws.cloudwatch.get_metric_statistics(
        Namespace="AWS/SQS", MetricName="ApproximateNumberOfMessagesVisible", Statistics=["SampleCount"], Period=60,
        StartTime=aws.now() - timedelta(hours=1), EndTime=aws.now() + timedelta(hours=1),
        Dimensions=[{"Name": "QueueName", "Value": aws.outputs["SourceQueueUrl"].rsplit("/", 1)[1]}])
    assert sum(point["SampleCount"] for point in depth["Datapoints"]) >= 3


def test_an_execution_started_elsewhere_is_found_in_the_records_as_list_executions_would(aws: Rehearsal) -> None:
    # Given an order run by the pipe, and two executions started directly (as a reconciler or a redrive would)
    aws.send(_order(1)[0])
    aws.run()
    started = [aws.sfn.start_execution(stateMachineArn=aws.pipe.definition.target_arn, name=f"elsewhere-{number}",
                                       input=json.dumps(json.loads(_order(number)[0])))["executionArn"]
               for number in (2, 3)]
    # When the rehearsal runs them
    executions = aws.run()
    # Then it knows of all three, those started elsewhere in start order, though the clock started both at one moment
    listed = aws.sfn.list_executions(stateMachineArn=aws.pipe.definition.target_arn)["executions"]
    assert {e.arn for e in executions} == {e["executionArn"] for e in listed}
    assert aws._started()[1:3] == started
