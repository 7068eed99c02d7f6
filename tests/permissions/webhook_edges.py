"""The edges of the deliveries table's stream readers: the completion webhook (fire_and_forget.construct.
completion_webhook: its pipe reading the stream, invoking the enrichment, calling the API destination and
dead-lettering; the enrichment reading the status rows and describing the workflow's executions) and the tickets
(fire_and_forget.construct.tickets: the function's stream mapping and its on-failure queue, and its OpsCenter calls)."""

from __future__ import annotations

from typing import Any

from tests.permissions.checks import SQS_SEND_KEY
from tests.permissions.resolver import arn
from tests.permissions.shapes import CheckShapes

NOTICES = "PipelineCompletionWebhookNoticesFunction"
NOTICES_TABLE_CALLS = ("dynamodb:GetItem",)
TICKETS = "PipelineTicketsTicketsFunction"
TICKETS_TABLE_CALLS = ("dynamodb:GetItem", "dynamodb:UpdateItem")
STREAM_READS = ("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator")


def stream_source(props: dict[str, Any]) -> bool:
    """A pipe whose source is a DynamoDB stream (the completion webhook's), not a queue."""
    return "DynamoDBStreamParameters" in props.get("SourceParameters", {})


class WebhookEdges(CheckShapes):
    """Mixed into MatrixBuilder: `webhooks()` adds every edge below, for each stream pipe of the template."""

    def webhooks(self) -> None:
        for pipe, res in self.a.of_type("AWS::Pipes::Pipe").items():
            props = res["Properties"]
            if stream_source(props):
                self._stream_pipe(pipe, props)
        for function in self.a.of_type("AWS::Lambda::Function"):
            if function.startswith(NOTICES):
                self._describes_executions(function)
            elif function.startswith(TICKETS):
                self._describes_executions(function)
                self._tickets(function)
        for mapping, res in self.a.of_type("AWS::Lambda::EventSourceMapping").items():
            if stream_mapping(res["Properties"]):
                self._stream_mapping(mapping, res["Properties"])

    def _stream_pipe(self, pipe: str, props: dict[str, Any]) -> None:
        role = self.a.lid(props["RoleArn"])
        table = self._reads_stream(f"pipe {pipe}", role, props["Source"])
        self.denied(f"pipe {pipe} reads {table}'s stream", role, "dynamodb:GetItem", self.a.att(table),
                    "the table itself, not its stream", table)

        enrichment = self.a.lid(props["Enrichment"])
        edge = f"pipe {pipe} enriches with {enrichment}"
        self.role_call(edge, role, "lambda:InvokeFunction", enrichment, self.a.att(enrichment))
        self.denied(edge, role, "lambda:InvokeFunction", arn("lambda", "function:NotTheEnrichment"),
                    "another function")
        self.denied(edge, role, "lambda:InvokeFunction", self.a.att(enrichment) + ":1", "a version of it")

        destination = self.a.lid(props["Target"])
        edge = f"pipe {pipe} calls {destination}"
        self.role_call(edge, role, "events:InvokeApiDestination", destination, self.a.att(destination))
        self.denied(edge, role, "events:InvokeApiDestination",
                    arn("events", "api-destination/AnotherDestination/0000"), "another API destination")
        dlq = self._dead_letters(f"pipe {pipe}", role,
                                 props["SourceParameters"]["DynamoDBStreamParameters"]["DeadLetterConfig"]["Arn"])
        log_group = props.get("LogConfiguration", {}).get("CloudwatchLogsLogDestination", {}).get("LogGroupArn")
        if log_group is not None:
            self._logs(f"pipe {pipe} logs", role, self.a.lid(log_group))
        self.a.covered.update({("pipe-source", table), ("pipe-target", destination), ("pipe-enrichment", enrichment),
                               ("pipe-dlq", dlq)})

    def _stream_mapping(self, mapping: str, props: dict[str, Any]) -> None:
        """Lambda reads the stream with the function's role, and sends what it gave up on to the on-failure queue."""
        function = self.a.lid(props["FunctionName"])
        role = self.a.lid(self.a.props(function)["Role"])
        self._reads_stream(f"mapping {mapping} for {function}", role, props["EventSourceArn"])
        self._dead_letters(f"mapping {mapping}", role, props["DestinationConfig"]["OnFailure"]["Destination"])
        self.a.covered.add(("event-source", mapping))

    def _reads_stream(self, reader: str, role: str, source: Any) -> str:
        """The stream's reads (and the key's decrypt) allowed, ListStreams, any other table's stream denied; the
        table whose stream it is."""
        stream = self.a.resolver.resolve(source)
        table = next(lid for lid in self.a.of_type("AWS::DynamoDB::Table") if self.a.att(lid, "StreamArn") == stream)
        edge = f"{reader} reads {table}'s stream"
        for action in STREAM_READS:
            self.role_call(edge, role, action, table, stream, key_actions=("kms:Decrypt",), via="dynamodb")
        self.role_call(edge, role, "dynamodb:ListStreams", None, "*", negatives=False)
        for other in self.a.of_type("AWS::DynamoDB::Table"):
            if other != table:
                self.denied(edge, role, "dynamodb:GetRecords", self.a.att(other, "Arn") + "/stream/2026-12-07T00:00",
                            "another table's stream")
        return table

    def _dead_letters(self, reader: str, role: str, target: Any) -> str:
        """SendMessage to its DLQ (with the key's data key) allowed, to every other queue denied; the DLQ."""
        dlq = self.a.lid(target)
        edge = f"{reader} dead-letters to {dlq}"
        self.role_call(edge, role, "sqs:SendMessage", dlq, self.a.att(dlq), key_actions=SQS_SEND_KEY, via="sqs")
        for queue in self.a.of_type("AWS::SQS::Queue"):
            if queue != dlq:
                self.denied(edge, role, "sqs:SendMessage", self.a.att(queue), "a queue that is not its DLQ", queue)
        return dlq

    def _tickets(self, function: str) -> None:
        """CreateOpsItem (no resource type) and UpdateOpsItem on this account's OpsItems; nothing else of SSM."""
        role = self.a.lid(self.a.props(function)["Role"])
        item = arn("ssm", "opsitem/oi-0123456789ab")
        edge = f"function {function} opens and resolves OpsItems"
        self.role_call(edge, role, "ssm:CreateOpsItem", None, "*", negatives=False)
        self.role_call(edge, role, "ssm:UpdateOpsItem", None, item)
        for action, why in (("ssm:DeleteOpsItem", "deleting a ticket"), ("ssm:GetParameter", "an SSM call it never "
                            "makes"), ("ssm:AddTagsToResource", "tagging (it passes no tags)")):
            self.denied(edge, role, action, item if "OpsItem" in action or "Tags" in action
                        else arn("ssm", "parameter/secret"), why)

    def _describes_executions(self, function: str) -> None:
        """The function describes the workflow's executions (a redriven copy's caller id is in its input) and
        nothing else of Step Functions; its table calls are judged with every function's."""
        role = self.a.lid(self.a.props(function)["Role"])
        machine = next(iter(self.a.of_type("AWS::StepFunctions::StateMachine")))
        name = self.a.att(machine, "Name")
        edge = f"function {function} describes {machine}'s executions"
        self.role_call(edge, role, "states:DescribeExecution", None, arn("states", f"execution:{name}:an-execution"))
        self.denied(edge, role, "states:DescribeExecution", arn("states", "execution:AnotherMachine:an-execution"),
                    "another state machine's execution")
        self.denied(edge, role, "states:GetExecutionHistory", arn("states", f"execution:{name}:an-execution"),
                    "a history it never reads")
        self.denied(edge, role, "states:StopExecution", arn("states", f"execution:{name}:an-execution"),
                    "stopping what it reports on")


def stream_mapping(props: dict[str, Any]) -> bool:
    """An event source mapping on a DynamoDB stream (the tickets'), not a queue."""
    return "StreamArn" in str(props.get("EventSourceArn"))


def uncovered_webhooks(builder: WebhookEdges) -> list[str]:
    """Every stream pipe's source, enrichment, target and DLQ that no edge judged."""
    a = builder.a
    missing = []
    for pipe, res in a.of_type("AWS::Pipes::Pipe").items():
        props = res["Properties"]
        if not stream_source(props):
            continue
        dlq = props["SourceParameters"]["DynamoDBStreamParameters"]["DeadLetterConfig"]["Arn"]
        for kind, value in (("pipe-enrichment", props["Enrichment"]), ("pipe-target", props["Target"]),
                            ("pipe-dlq", dlq)):
            if (kind, a.lid(value)) not in a.covered:
                missing.append(f"{kind} {pipe}.{a.lid(value)}")
    return missing
