"""The offline rehearsal: the synthesized app deployed into moto, with the pipe, events and real handlers."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from botocore.config import Config
from moto import mock_aws
from moto.moto_api._internal import mock_random
from moto.stepfunctions.responses import get_backend

from fire_and_forget.rehearsal import (
    client_cache,
    function_urls,
    moto_dispatch,
    parse_cache,
    snapshot,
    sqs_time,
    task_tokens,
    transactions,
)
from fire_and_forget.rehearsal.assembly import STACK_NAME, CloudAssembly
from fire_and_forget.rehearsal.async_invoke import AsyncLambda, read_policies
from fire_and_forget.rehearsal.capacity import CapacityMeter
from fire_and_forget.rehearsal.clock import RetryClock, VirtualClock
from fire_and_forget.rehearsal.deployment import ACCOUNT, OfflineStack, asset_directories, deploy
from fire_and_forget.rehearsal.event_sources import EventSourceMappings
from fire_and_forget.rehearsal.execution_events import EventBus, RuleDefinition, status_change_event
from fire_and_forget.rehearsal.faults import FaultPlan
from fire_and_forget.rehearsal.interpreter_time import InterpreterTime
from fire_and_forget.rehearsal.lambda_runtime import LambdaRuntime
from fire_and_forget.rehearsal.metrics import ServiceMetrics
from fire_and_forget.rehearsal.pipe import PipeDefinition, PipeEmulator, ThrottleReading
from fire_and_forget.rehearsal.quotas import Concurrency, Quota, Slots, TokenBucket
from fire_and_forget.rehearsal.schedules import Firing, Scheduler, read_schedules
from fire_and_forget.rehearsal.services import install_service_faults
from fire_and_forget.rehearsal.sfn_responses import (
    described_execution,
    execution_history,
    install_history_cache,
    install_stop_dates,
    is_running,
)
from fire_and_forget.rehearsal.sqs_time import install_sqs_on_the_clock
from fire_and_forget.runtime.outputs import Output

TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"}
# Executions the rehearsal lets run at once (see PipeEmulator.drain): enough for real interleaving; more only make each
# slower, as one interpreter runs every handler (timeouts run on the virtual clock, so none trips because of it).
MAX_IN_FLIGHT = 40
# How many times `run` goes round pipe -> executions -> status-change events -> event source mappings before it gives
# up: each round exists only because the previous one's consumers (a reconciler) queued or started more work.
MAX_SETTLE_ROUNDS = 20
# Functions whose logical id contains one of these are that task for fault injection
# (fire_and_forget/rehearsal/faults.py), whatever the construct's path in front of it: issue 13's self-healing
# functions.
NAMED_FUNCTIONS = ("Reconciler", "Redriver")


@dataclass
class Execution:
    """One finished execution, with what a test or an operator wants to know about it."""

    arn: str
    status: str
    error: str | None
    cause: str | None
    input: Any
    output: Any
    states: list[str]
    history: list[dict[str, Any]] = field(repr=False)

    @property
    def transitions(self) -> int:
        """States entered: what Step Functions Standard bills (retries are billed too, see `retries`)."""
        return len(self.states)

    @property
    def message_id(self) -> str | None:
        record = self.input[0] if isinstance(self.input, list) and self.input else {}
        return record.get("messageId") if isinstance(record, dict) else None


class Rehearsal:
    """Use as a context manager: `with Rehearsal.start(Path("cdk.out")) as aws: ...`; any stack of the assembly with
    the pipeline's outputs: `Rehearsal.start(Path("cdk.out"), stack_name="FireAndForget-Catalog")`."""

    def __init__(self, assembly: CloudAssembly, region: str = "us-east-1",
                 execution_timeout_seconds: int | None = None, reuse_deployment: bool = True,
                 start_quota: Quota | None = None, throttle_reading: ThrottleReading = ThrottleReading.COUNTED,
                 lambda_concurrency: Concurrency | None = None, invocation_seconds: float = 0.0,
                 transaction_seconds: float = 0.0, partition_writes: Quota | None = None) -> None:
        self.assembly = assembly
        self.region = region
        self._execution_timeout = execution_timeout_seconds
        # Restore the state the first deploy of this template in this process left, instead of deploying again
        # (fire_and_forget/rehearsal/snapshot.py); False deploys afresh.
        self._reuse_deployment = reuse_deployment
        # The account's StartExecution quota the pipe is held to (quotas.py; None: unlimited), and what a throttled
        # start is to the pipe (pipe.py, ThrottleReading).
        self._start_quota = start_quota
        self._throttle_reading = throttle_reading
        # Work that takes time (quotas.py, transactions.py): with `lambda_concurrency`, each invocation holds one of
        # its slots for `invocation_seconds` of the clock, a Retry wait is waited out on the clock, and with
        # `transaction_seconds` an invocation's TransactWriteItems holds its items that long. None and 0: work
        # takes no time on the clock and Retry waits are compressed to nothing. With `partition_writes`, an
        # invocation's transactions draw each item's write units from a partition's bucket of that shape.
        if (transaction_seconds or partition_writes) and not lambda_concurrency:
            raise ValueError("transactions take time and write units refill only where invocations take time: give a "
                             "lambda_concurrency")
        if transaction_seconds > invocation_seconds:
            raise ValueError("a transaction ends within its invocation: transaction_seconds <= invocation_seconds")
        self._slots = Slots(lambda_concurrency, invocation_seconds) if lambda_concurrency is not None else None
        self._transaction_seconds = transaction_seconds
        self._partition_writes = partition_writes
        self._mock = mock_aws(config={"stepfunctions": {"execute_state_machine": True},
                                      "lambda": {"use_docker": False}})
        # The one clock of the process while the rehearsal is open: the real UTC time at deployment, moved only by
        # `advance` (fire_and_forget/rehearsal/clock.py). Timeouts are measured on it; work takes no time on it.
        self.virtual_clock = VirtualClock()
        self.interpreter_time = InterpreterTime(self.virtual_clock)
        self.faults = FaultPlan(clock=self.virtual_clock)
        self.clock = RetryClock()
        self.stack: OfflineStack
        self.runtime: LambdaRuntime
        self.pipe: PipeEmulator
        self.bus: EventBus
        self.metrics: ServiceMetrics  # what AWS would publish to CloudWatch (metrics.py)
        self.event_sources: EventSourceMappings  # the template's SQS event source mappings (event_sources.py)
        self.scheduler: Scheduler  # the template's schedules, on `virtual_clock` (schedules.py)
        self._started_elsewhere: list[str] = []  # executions of the workflow the pipe did not start (a reconciler's)
        self.sent: list[str] = []  # the MessageId of every message `send` fired, first to last: the callers' messages
        self._announced: set[str] = set()
        self._uninstall_service_faults: Any = None
        self._uninstall_client_cache: Any = None
        self._uninstall_sqs_time: Any = None
        self._uninstall_stop_dates: Any = None
        self._uninstall_history_cache: Any = None
        self._uninstall_capacity: Any = None
        self._uninstall_transactions: Any = None
        self._uninstall_task_tokens: Any = None
        self._uninstall_dispatch: Any = None
        self.capacity = CapacityMeter()  # DynamoDB's request units of every call served (capacity.py)
        self.parse_cache = parse_cache.ParseCache()
        self._stopped_executions: dict[tuple[str, str, Any], Execution] = {}

    @classmethod
    @contextmanager
    def start(cls, assembly_dir: Path, stack_name: str = STACK_NAME, **kwargs: Any) -> Iterator[Rehearsal]:
        rehearsal = cls(CloudAssembly.load(assembly_dir, stack_name), **kwargs)
        rehearsal.open()
        try:
            yield rehearsal
        finally:
            rehearsal.close()

    # -- lifecycle -------------------------------------------------------------------------------------------

    def open(self) -> None:
        client_cache.share_models()
        client_cache.sign_only_what_leaves()
        self._mock.start()
        self.virtual_clock.install()
        self.interpreter_time.install()
        self.clock.install()
        self.parse_cache.install()
        try:
            self._uninstall_sqs_time = install_sqs_on_the_clock()
            self._uninstall_stop_dates = install_stop_dates()
            self._uninstall_history_cache = install_history_cache()
            self._uninstall_capacity = self.capacity.install()
            self.contention = (transactions.ItemContention(self._transaction_seconds, self.virtual_clock.now,
                                                           self._invocation, self._partition_writes)
                               if self._transaction_seconds or self._partition_writes else None)
            self._uninstall_transactions = transactions.install(self.contention)
            if self._slots is not None:
                self.clock.on_clock = self.virtual_clock
            self._uninstall_task_tokens = task_tokens.install()
            self._uninstall_dispatch = moto_dispatch.install()
            self.stack = snapshot.deploy_once(self.assembly, self.region, deploy, reuse=self._reuse_deployment)
            # Typed Any: the probes pass service responses on as plain dicts.
            self.sqs: Any = client_cache.client("sqs", self.region)
            self.sfn: Any = client_cache.client("stepfunctions", self.region)
            self.sns: Any = client_cache.client("sns", self.region)
            self.dynamodb: Any = client_cache.client("dynamodb", self.region)
            self.cloudwatch: Any = client_cache.client("cloudwatch", self.region)
            task_names, queue_urls = self._task_names(), self._queue_urls()
            self.runtime = LambdaRuntime(asset_directories(self.assembly), task_names, self.faults,
                                         clock=self.virtual_clock, slots=self._slots,
                                         waits_here=lambda: self.interpreter_time.owns(threading.current_thread()))
            self.runtime.install()
            self._uninstall_service_faults = install_service_faults(self.faults, self.outputs, ACCOUNT, self.region)
            self._uninstall_client_cache = client_cache.install()
            self.pipe = PipeEmulator(self._pipe_definition(queue_urls), self.sqs, self.sfn, self.faults, self.region)
            if self._start_quota is not None:
                self.pipe.start_quota = TokenBucket(self._start_quota, self.now())
                self.pipe.throttle_reading = self._throttle_reading
            # Express workflows send no status-change events to EventBridge (eventbridge-integration.html).
            self.express = self.sfn.describe_state_machine(
                stateMachineArn=self.pipe.definition.target_arn)["type"] == "EXPRESS"
            self.bus = EventBus(self._rules(), self.sns, self.sqs, queue_urls, faults=self.faults, sfn=self.sfn)
            self.metrics = ServiceMetrics(self.runtime, self.pipe, self.bus,
                                          function_names=task_names, queue_urls=queue_urls.values(),
                                          account=ACCOUNT, region=self.region)
            self.bus.on_execution_finished = self.metrics.execution_finished  # the announcer's AWS/States data
            # One attempt per Invoke: the emulated callers (mapping, scheduler) decide what is retried, not botocore.
            self.lambda_: Any = client_cache.client("lambda", self.region,
                                                    config=Config(retries={"total_max_attempts": 1}))
            # moto builds its router of a REST service's operations on that service's first request, and nothing
            # stops concurrent first requests from each building one (tens of executions invoking their first
            # function at once: a tenth of a second each). One request now builds it before any execution runs.
            self.lambda_.list_functions(MaxItems=1)
            self.event_sources = EventSourceMappings.from_stack(self.assembly, self.stack, queue_urls, self.sqs,
                                                                self.lambda_, self.region)
            self.scheduler = Scheduler(
                read_schedules(self.assembly, self.stack, queue_urls, ACCOUNT, self.region), self.virtual_clock,
                AsyncLambda(self.lambda_, self.sqs, read_policies(self.assembly, self.stack, queue_urls)), self.sqs)
            if self._execution_timeout is not None:
                self.set_execution_timeout(self._execution_timeout)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.faults.release()
        for name in ("_uninstall_service_faults", "_uninstall_client_cache"):
            _call_if_set(getattr(self, name))
        if hasattr(self, "runtime"):
            self.runtime.uninstall()
        for name in ("_uninstall_sqs_time", "_uninstall_stop_dates", "_uninstall_history_cache",
                     "_uninstall_capacity", "_uninstall_transactions", "_uninstall_task_tokens",
                     "_uninstall_dispatch"):
            _call_if_set(getattr(self, name))
        self.parse_cache.uninstall()
        self.clock.uninstall()
        self.interpreter_time.uninstall()
        self.virtual_clock.uninstall()
        self._mock.stop()

    def _invocation(self) -> int | None:
        runtime = getattr(self, "runtime", None)
        return runtime.invocation() if runtime is not None else None

    @property
    def outputs(self) -> dict[str, str]:
        return self.stack.outputs

    # -- driving -----------------------------------------------------------------------------------------------

    def send(self, body: str | dict[str, Any], attributes: dict[str, str] | None = None) -> str:
        """A caller fires a message into the source queue and moves on."""
        message = self.sqs.send_message(
            QueueUrl=self.outputs[Output.SOURCE_QUEUE_URL],
            MessageBody=body if isinstance(body, str) else json.dumps(body),
            MessageAttributes={k: {"DataType": "String", "StringValue": v} for k, v in (attributes or {}).items()},
        )
        self.sent.append(str(message["MessageId"]))
        return str(message["MessageId"])

    def run(self, timeout_seconds: float = 300.0) -> list[Execution]:
        """Drain the source queue through the pipe, let every execution go as far as it can without the clock
        moving, emit the events of those that ended, then let the event source mappings consume what the rules
        queued (a reconciler); again until nothing new happens. An execution held by a fault, or waiting for a
        timeout, is left running: it goes on when `advance` moves the clock past what it waits for. Returns every
        execution of the workflow so far."""
        self.run_until_quiet(timeout_seconds)
        return self.executions()

    def run_until_quiet(self, timeout_seconds: float = 300.0) -> None:
        """`run` without its answer, for a caller that does not read it (`advance` at every stop of the clock, the
        practice account after every request): describing every execution through the API costs more than a quiet
        round's work."""
        deadline = time.monotonic() + timeout_seconds
        for _ in range(MAX_SETTLE_ROUNDS):
            self.drain()
            self._settle(deadline, timeout_seconds)
            consumed = self.event_sources.drain()
            if not self._discover_executions() and not consumed and not self.pipe.requeued:
                self.metrics.publish()
                return
        raise RuntimeError(f"the rehearsal was not quiet after {MAX_SETTLE_ROUNDS} rounds")

    def _settle(self, deadline: float, timeout_seconds: float) -> None:
        """Until the interpreter is quiet (every execution ended, or waiting on the clock), emitting the
        status-change event of each execution that ended."""
        while True:
            self._emit_finished()
            if self.interpreter_time.quiet():
                self._emit_finished()
                return
            if time.monotonic() > deadline:
                pending = [arn for arn in self._started() if arn not in self._announced]
                raise TimeoutError(f"{len(pending)} executions still running after {timeout_seconds} s")
            # Poll gently: the executions run on threads of this process and need the interpreter more.
            time.sleep(0.005)

    def seed_ids(self, seed: int) -> None:
        """Draw the ids moto makes from now on (SQS MessageIds, receipt handles) from `seed`: the same messages sent
        in the same sequence get the same ids run after run, and so does what is drawn from an id, such as the
        Redriver's cool-off jitter (fire_and_forget.runtime.healing_policy). Ids drawn on the interpreter's threads
        follow their interleaving, which the rehearsal does not fix."""
        mock_random.seed(seed)

    def now(self) -> datetime:
        """The rehearsal's virtual time: the deployment's real UTC time plus every `advance` since."""
        return self.virtual_clock.now()

    def advance(self, seconds: float, timeout_seconds: float = 300.0) -> list[Firing]:
        """Compressed time: move the virtual clock `seconds` on, firing each schedule whenever its period elapses;
        after each firing the rehearsal runs until quiet (what a redrive started ends, is announced, reconciled)."""
        return self.scheduler.advance(seconds, settle=lambda: self.run_until_quiet(timeout_seconds),
                                      wakeups=self._next_wakeup)

    def _next_wakeup(self) -> datetime | None:
        """The next moment something waits for: a timeout on the clock, a message becoming visible again."""
        moments = [self.virtual_clock.next_deadline(), self.event_sources.next_visible(), self.pipe.next_visible(),
                   self.pipe.next_start()]
        return min((m for m in moments if m is not None), default=None)

    def drain(self) -> None:
        """Hand everything in the source queue to the workflow, at most MAX_IN_FLIGHT executions at a time."""
        self.pipe.drain(in_flight=lambda: len(self.running()), max_in_flight=MAX_IN_FLIGHT,
                        stalled=self.interpreter_time.quiet)

    def running(self) -> set[str]:
        """ARNs of the workflow's executions still running, read from the emulator's own records: the rehearsal asks
        this between every two steps of its loops, and a ListExecutions through the API (paging, serializing every
        execution) would cost more than the work it waits for."""
        return {execution.execution_arn for execution in self._recorded_executions() if is_running(execution)}

    def _recorded_executions(self) -> list[Any]:
        """The workflow's executions in the emulator's records, as they started, earliest first (ListExecutions, newest
        first by start date, cannot tell apart those the clock started at one moment)."""
        # The interpreter's state machine (moto's stepfunctions.parser), not the type get_backend declares.
        state_machine: Any = get_backend(ACCOUNT, self.region).describe_state_machine(self.pipe.definition.target_arn)
        return list(state_machine.executions)

    def set_execution_timeout(self, seconds: int | None) -> None:
        """Time compression, like the retry waits: executions started from now on time out after `seconds`
        (None: the deployed TimeoutSeconds again). Executions already running keep the timeout they started with."""
        for arn, definition in self.stack.definitions.items():
            changed = dict(definition) if seconds is None else {**definition, "TimeoutSeconds": seconds}
            self.sfn.update_state_machine(stateMachineArn=arn, definition=json.dumps(changed))

    def abort(self, execution_arn: str) -> None:
        """What an operator's StopExecution does; the rule then sees ABORTED."""
        self.sfn.stop_execution(executionArn=execution_arn, error="Aborted", cause="Stopped by the rehearsal")

    def settling(self) -> bool:
        """True while something will still happen without anyone acting: an execution is running, a message the
        pipe or an event source mapping consumes is hidden for its visibility timeout (or delayed) and will be
        received again, or the pipe holds a backlog back until its StartExecution quota has a token."""
        return (bool(self.running()) or self.event_sources.next_visible() is not None
                or self.pipe.next_visible() is not None or self.pipe.next_start() is not None)

    def visibility_timeout(self, output_key: str) -> int:
        """The VisibilityTimeout of the queue the stack output names: how long a received message stays hidden."""
        attributes = self.sqs.get_queue_attributes(QueueUrl=self.outputs[output_key],
                                                   AttributeNames=["VisibilityTimeout"])["Attributes"]
        return int(attributes["VisibilityTimeout"])

    def release_held(self, timeout_seconds: float = 30.0) -> None:
        """Release every call a HANG fault holds and wait until the held Lambda invocations have run to their end:
        what they write is written before anything the rehearsal does next (the Reconciler, say)."""
        self.faults.release()
        self.runtime.wait_for_held(timeout_seconds)

    def wait_for_hang(self, timeout_seconds: float = 10.0) -> list[str]:
        """The running executions, once a task is held by a HANG fault."""
        self.drain()
        if not self.runtime.hanging.wait(timeout_seconds):
            raise TimeoutError("no task is hanging")
        return [arn for arn in self.pipe.stats.started if self.execution_status(arn) == "RUNNING"]

    # -- probes ------------------------------------------------------------------------------------------------

    def executions(self) -> list[Execution]:
        return [self.execution(arn) for arn in self._started()]

    def execution(self, arn: str) -> Execution:
        described = self.described(arn)
        # A stopped execution's history does not change (the emulator has no RedriveExecution): read once per stop.
        stopped = (arn, described["status"], described.get("stopDate"))
        if described["status"] != "RUNNING" and stopped in self._stopped_executions:
            return self._stopped_executions[stopped]
        history = execution_history(ACCOUNT, self.region, arn)
        states = [e["stateEnteredEventDetails"]["name"] for e in history if e["type"].endswith("StateEntered")]
        execution = Execution(
            arn=arn,
            status=described["status"],
            error=described.get("error"),
            cause=described.get("cause"),
            input=json.loads(described.get("input") or "null"),
            output=json.loads(described["output"]) if described.get("output") else None,
            states=states,
            history=history,
        )
        if described["status"] != "RUNNING":
            self._stopped_executions[stopped] = execution
        return execution

    def publish_pipe(self) -> None:
        """What a real deployment has and moto's CloudFormation skips, for ff-ops to read: the pipe in the Pipes API
        (DescribePipe) and the stack's PipeName and PipeArn outputs. Idempotent. The rehearsal's own pipe emulator
        (pipe.py) still moves the messages; the published pipe only answers questions about it."""
        from moto.cloudformation.models import cloudformation_backends

        definition = self.pipe.definition
        pipes = client_cache.client("pipes", self.region)
        if any(p["Name"] == definition.name for p in pipes.list_pipes().get("Pipes", [])):
            return
        created = pipes.create_pipe(Name=definition.name, Source=definition.source_queue_arn,
                                    Target=definition.target_arn, RoleArn=f"arn:aws:iam::{ACCOUNT}:role/offline-pipe",
                                    DesiredState="RUNNING")
        stack = next(s for s in cloudformation_backends[ACCOUNT][self.region].stacks.values()
                     if s.name == self.stack.name)
        stack.output_map._output_json_map.update(
            {Output.PIPE_NAME: {"Value": definition.name}, Output.PIPE_ARN: {"Value": created["Arn"]}})

    def messages(self, output_key: str) -> list[dict[str, Any]]:
        """Every message in a queue, read without consuming it (made visible again at once)."""
        url = self.outputs[output_key]
        seen: dict[str, dict[str, Any]] = {}
        for _ in range(1000):
            batch = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30,
                                             MessageAttributeNames=["All"], AttributeNames=["All"]).get("Messages", [])
            if not batch:
                break
            for message in batch:
                seen[message["MessageId"]] = message
        for message in seen.values():
            self.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"],
                                               VisibilityTimeout=0)
        return list(seen.values())

    def call_function_url(self, name: str, body: dict[str, Any], *, caller_arn: str, method: str = "POST",
                          path: str = "/") -> function_urls.HttpReply:
        """A signed HTTPS request to the function URL whose logical id starts with `name` (function_urls.py)."""
        urls = function_urls.read_function_urls(self.assembly, self.stack)
        (url,) = (u for logical_id, u in urls.items() if logical_id.startswith(name))
        return function_urls.call(url, self.lambda_, caller_arn=caller_arn, account=ACCOUNT, body=body,
                                  moment=self.now(), method=method, path=path)

    def notifications(self) -> list[tuple[str | None, str]]:
        """(subject, message) of everything published to the alerts topic."""
        from moto.sns.models import sns_backends

        topic = sns_backends[ACCOUNT][self.region].topics[self.outputs[Output.ALERTS_TOPIC_ARN]]
        return [(subject, message) for _id, message, subject, _attrs, _group in topic.sent_notifications]

    def items(self, table_output_key: str) -> list[dict[str, Any]]:
        from boto3.dynamodb.types import TypeDeserializer

        deserializer = TypeDeserializer()
        pages = self.dynamodb.get_paginator("scan").paginate(TableName=self.outputs[table_output_key])
        return [{k: deserializer.deserialize(v) for k, v in item.items()} for page in pages for item in page["Items"]]

    # -- wiring ------------------------------------------------------------------------------------------------

    def execution_status(self, arn: str) -> str:
        return str(self.described(arn)["status"])

    def described(self, arn: str) -> dict[str, Any]:
        """DescribeExecution's answer, read from the emulator's records: the rehearsal describes executions between
        every two steps of its loops, and through the API each costs more than a task's work (sfn_responses.py)."""
        return described_execution(ACCOUNT, self.region, arn)

    def _started(self) -> list[str]:
        """Every execution of the workflow the rehearsal knows of: the pipe's, then any other (a reconciler's)."""
        return [*self.pipe.stats.started, *self._started_elsewhere]

    def _discover_executions(self) -> bool:
        """Track executions of the workflow that something other than the pipe started; True if there were new."""
        known = set(self._started())
        # From the emulator's records, as `running` reads them: the rehearsal asks this every round, and ListExecutions
        # would serialize every execution.
        new = [execution.execution_arn for execution in self._recorded_executions()
               if execution.execution_arn not in known]
        self._started_elsewhere.extend(new)
        return bool(new)

    def _emit_finished(self) -> None:
        running = self.running()
        for arn in self._started():
            if arn in self._announced or arn in running:
                continue
            described = self.described(arn)
            if described["status"] in TERMINAL:
                self._announced.add(arn)
                self.pipe.ended(arn, described["status"])
                if not self.express:
                    self.bus.put(status_change_event(described, ACCOUNT, self.region))
                self.metrics.execution_finished(described)

    def _task_names(self) -> dict[str, str]:
        """Physical function name -> the Task state that invokes it in a deployed definition (the first, if several do);
        the pattern's own functions by their names; any other function by its logical id."""
        invoked: dict[str, str] = {}
        for definition in self.stack.definitions.values():
            for state, function in _invoked_functions(definition.get("States", {})):
                invoked.setdefault(function.split(":function:", 1)[-1].split(":", 1)[0], state)
        names = {}
        for logical_id in self.assembly.resources_of_type("AWS::Lambda::Function"):
            physical = self.stack.physical_ids[logical_id]
            named = next((name for name in NAMED_FUNCTIONS if name in logical_id), None)
            names[physical] = named or invoked.get(physical) or logical_id
        return names

    def _queue_urls(self) -> dict[str, str]:
        """Queue ARN -> URL, from moto's records of the queues (GetQueueAttributes computes every attribute)."""
        urls = {}
        for logical_id in self.assembly.resources_of_type("AWS::SQS::Queue"):
            url = self.stack.physical_ids[logical_id]
            urls[sqs_time.queue_arn(url)] = url
        return urls

    def _pipe_definition(self, queue_urls: dict[str, str]) -> PipeDefinition:
        # The pipe from the source queue; the completion webhook's pipe (a table stream's) is not run here: its
        # enrichment is tested on the stream moto records (tests/workflow/test_completion_webhook.py).
        (logical_id, resource), = ((lid, r) for lid, r in self.assembly.resources_of_type("AWS::Pipes::Pipe").items()
                                   if "SqsQueueParameters" in r["Properties"].get("SourceParameters", {}))
        props = self.stack.resolve(resource["Properties"])
        source_arn = props["Source"]
        queue_url = queue_urls[source_arn]
        self.stack.outputs[Output.PIPE_NAME] = f"{self.stack.name}-{logical_id}-offline"
        return PipeDefinition(
            name=self.stack.outputs[Output.PIPE_NAME],
            source_queue_url=queue_url,
            source_queue_arn=source_arn,
            target_arn=props["Target"],
            batch_size=int(props["SourceParameters"]["SqsQueueParameters"].get("BatchSize", 10)),
            invocation_type=props["TargetParameters"]["StepFunctionStateMachineParameters"].get(
                "InvocationType", "REQUEST_RESPONSE"),
        )

    def _rules(self) -> list[RuleDefinition]:
        rules = []
        for logical_id, resource in self.assembly.resources_of_type("AWS::Events::Rule").items():
            props = self.stack.resolve(resource["Properties"])
            # A pattern written as a JSON string (it keeps nulls) arrives as text once Fn::Sub is resolved.
            pattern = props["EventPattern"]
            pattern = json.loads(pattern) if isinstance(pattern, str) else pattern
            rules.append(RuleDefinition(self.stack.physical_ids[logical_id], pattern, props["Targets"]))
        return rules


def _call_if_set(uninstall: Callable[[], None] | None) -> None:
    if uninstall is not None:
        uninstall()


def _invoked_functions(states: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(state name, function name or ARN) of every Task state that invokes a Lambda function, in Map and Parallel states
    too."""
    for name, state in states.items():
        parameters = state.get("Parameters") or state.get("Arguments") or {}
        function = parameters.get("FunctionName") if isinstance(parameters, dict) else None
        if state.get("Type") == "Task" and isinstance(function, str):
            yield name, function
        for branch in state.get("Branches", []):
            yield from _invoked_functions(branch.get("States", {}))
        for key in ("Iterator", "ItemProcessor"):
            if isinstance(state.get(key), dict):
                yield from _invoked_functions(state[key].get("States", {}))
