"""Fixtures: the probe app synthesized once, and deployed into moto for each test (restored from the first deploy's
state) with the real handler running."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from moto import mock_aws

from fire_and_forget.rehearsal.assembly import CloudAssembly
from fire_and_forget.rehearsal.async_invoke import AsyncLambda, read_policies
from fire_and_forget.rehearsal.clock import VirtualClock
from fire_and_forget.rehearsal.deployment import ACCOUNT, OfflineStack, asset_directories, deploy
from fire_and_forget.rehearsal.event_sources import EventSourceMappings
from fire_and_forget.rehearsal.faults import FaultPlan
from fire_and_forget.rehearsal.lambda_runtime import LambdaRuntime
from fire_and_forget.rehearsal.schedules import Scheduler, read_schedules
from fire_and_forget.rehearsal.snapshot import deploy_once
from fire_and_forget.rehearsal.sqs_time import install_sqs_on_the_clock
from tests.rehearsal_emulation.probe_app import STACK_NAME, synthesize
from tests.support.cdk import synthesize_once

REGION = "us-east-1"


@pytest.fixture(scope="session")
def probe_cloud_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The probe app's cloud assembly directory (both stacks), synthesized once per test run: the pytest-xdist
    workers of one run share it (tests/conftest.py's `cloud_assembly` does the same)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return synthesize_once(tmp_path_factory.getbasetemp().parent / "probe.out", synthesize)
    return synthesize(tmp_path_factory.mktemp("probe.out"))


@pytest.fixture(scope="session")
def probe_assembly(probe_cloud_assembly: Path) -> CloudAssembly:
    return CloudAssembly.load(probe_cloud_assembly, STACK_NAME)


@dataclass
class ProbeAccount:
    """The probe stack deployed into moto, with the emulators built from its template."""

    assembly: CloudAssembly
    stack: OfflineStack
    sqs: Any
    lambda_client: Any
    faults: FaultPlan
    runtime: LambdaRuntime
    queue_urls: dict[str, str]
    mappings: EventSourceMappings
    clock: VirtualClock
    scheduler: Scheduler

    def url(self, output_key: str) -> str:
        return self.stack.outputs[output_key]

    def send(self, body: dict[str, Any], queue_key: str = "FailureEventsQueueUrl") -> str:
        return str(self.sqs.send_message(QueueUrl=self.url(queue_key), MessageBody=json.dumps(body))["MessageId"])

    def messages(self, queue_key: str) -> list[dict[str, Any]]:
        """Every message in a queue, consumed (the tests read each queue once, at the end)."""
        found: list[dict[str, Any]] = []
        while batch := self.sqs.receive_message(
            QueueUrl=self.url(queue_key),
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            AttributeNames=["All"],
            VisibilityTimeout=300,
        ).get("Messages", []):
            found.extend(batch)
        return found

    def drain_over_time(self) -> None:
        """Drain the mappings' queues, moving the clock past each visibility timeout, until nothing comes back."""
        while True:
            self.mappings.drain()
            moment = self.mappings.next_visible()
            if moment is None:
                return
            self.clock.set(max(moment, self.clock.now()))

    def observed(self) -> list[dict[str, Any]]:
        """The events the probe function was invoked with, in order."""
        bodies = [json.loads(m["Body"]) for m in self.messages("ObservationsQueueUrl")]
        return bodies

    def function_name(self, logical_prefix: str) -> str:
        return next(
            physical
            for logical, physical in self.stack.physical_ids.items()
            if logical.startswith(logical_prefix)
            and logical in self.assembly.resources_of_type("AWS::Lambda::Function")
        )


@pytest.fixture
def probe(probe_assembly: CloudAssembly) -> Iterator[ProbeAccount]:
    clock = VirtualClock()
    clock.install()  # every timestamp, visibility timeout and schedule on the one virtual clock
    uninstall_sqs_time = install_sqs_on_the_clock()
    with mock_aws(config={"lambda": {"use_docker": False}}):
        # The first test deploys; the others get moto's state as that deploy left it (rehearsal/snapshot.py).
        stack = deploy_once(probe_assembly, REGION, deploy)
        sqs = boto3.client("sqs", region_name=REGION)
        # One attempt per call: the emulators, not botocore, decide what is retried.
        lambda_client = boto3.client("lambda", region_name=REGION, config=Config(retries={"total_max_attempts": 1}))
        queue_urls = {}
        for logical_id in probe_assembly.resources_of_type("AWS::SQS::Queue"):
            url = stack.physical_ids[logical_id]
            queue_urls[
                sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            ] = url
        faults = FaultPlan()
        functions = probe_assembly.resources_of_type("AWS::Lambda::Function")
        task_names = {stack.physical_ids[lid]: lid.split("Function")[0] for lid in functions}
        runtime = LambdaRuntime(asset_directories(probe_assembly), task_names, faults)
        runtime.install()
        invoker = AsyncLambda(lambda_client, sqs, read_policies(probe_assembly, stack, queue_urls))
        try:
            yield ProbeAccount(
                assembly=probe_assembly,
                stack=stack,
                sqs=sqs,
                lambda_client=lambda_client,
                faults=faults,
                runtime=runtime,
                queue_urls=queue_urls,
                mappings=EventSourceMappings.from_stack(probe_assembly, stack, queue_urls, sqs, lambda_client, REGION),
                clock=clock,
                scheduler=Scheduler(
                    read_schedules(probe_assembly, stack, queue_urls, ACCOUNT, REGION), clock, invoker, sqs
                ),
            )
        finally:
            runtime.uninstall()
            uninstall_sqs_time()
            clock.uninstall()
