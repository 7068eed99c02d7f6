"""The architecture picture (docs/architecture.png), drawn with `diagrams` from the synthesized template.

Names and counts come from the app itself: the saga's steps from the ASL file, the compensations from the
OrderSaga construct, the tables, alarms and dashboard from a fresh in-process synth. A resource the picture
shows but the template no longer has stops the script instead of drawing a stale picture.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from diagrams import Cluster, Diagram, Edge
from diagrams.aws.compute import Lambda
from diagrams.aws.database import DynamodbTable
from diagrams.aws.general import User, Users
from diagrams.aws.integration import SQS, EventbridgePipes, EventbridgeRule, StepFunctions
from diagrams.aws.integration import SimpleNotificationServiceSnsEmailNotification as Email
from diagrams.aws.integration import SimpleNotificationServiceSnsTopic as Topic
from diagrams.aws.management import Chatbot, Cloudwatch, CloudwatchAlarm, CommandLineInterface
from diagrams.onprem.network import Internet
from diagrams.saas.chat import Slack

REPO = Path(__file__).resolve().parents[2]
OUTPUT = REPO / "docs" / "architecture"  # diagrams appends .png
LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"

# What the picture draws; each must exist in the synthesized template.
REQUIRED_TYPES = (
    "AWS::SQS::Queue", "AWS::Pipes::Pipe", "AWS::StepFunctions::StateMachine", "AWS::SNS::Topic",
    "AWS::Events::Rule", "AWS::DynamoDB::Table", "AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm",
    "AWS::CloudWatch::Dashboard", "AWS::Lambda::Function",
)  # fmt: skip
REQUIRED_OUTPUTS = (
    "SourceQueueUrl", "SourceDlqUrl", "FailureDlqUrl", "FailureEventsQueueUrl", "EventTargetDlqUrl",
    "AlertsTopicArn", "StateMachineArn", "PipeName", "FailureRuleName", "DashboardName",
)  # fmt: skip


def synthesized_template() -> dict[str, Any]:
    """The stack's template from an in-process synth with cdk.json's context, as `cdk synth` would write it."""
    sys.path.insert(0, str(REPO))
    from app import STACK_NAME, build_app

    context = json.loads((REPO / "cdk.json").read_text(encoding="utf-8"))["context"]
    with tempfile.TemporaryDirectory() as outdir:
        assembly = Path(build_app(context, outdir=outdir).synth().directory)
        template: dict[str, Any] = json.loads((assembly / f"{STACK_NAME}.template.json").read_text(encoding="utf-8"))
    return template


def check(template: dict[str, Any]) -> Counter[str]:
    """Resource counts by type; exits when something the picture draws is missing."""
    types = Counter(resource["Type"] for resource in template["Resources"].values())
    missing = [t for t in REQUIRED_TYPES if not types[t]]
    missing += [output for output in REQUIRED_OUTPUTS if output not in template["Outputs"]]
    if missing:
        sys.exit(f"the template no longer has {', '.join(missing)}: update docs/diagrams/architecture.py")
    return types


def saga_steps() -> tuple[list[str], list[str]]:
    """(forward steps, compensations in the order they run): the Lambda tasks of the ASL file."""
    from stacks.orders.stack import ASL_FILE, COMPENSATIONS

    states = json.loads(ASL_FILE.read_text(encoding="utf-8"))["States"]
    tasks = [name for name, state in states.items() if state.get("Resource") == LAMBDA_INVOKE]
    return [t for t in tasks if t not in COMPENSATIONS], [t for t in tasks if t in COMPENSATIONS]


def draw(template: dict[str, Any]) -> None:
    types = check(template)
    steps, compensations = saga_steps()
    tables = sorted(key.removesuffix("TableName") for key in template["Outputs"] if key.endswith("TableName"))
    alarms = types["AWS::CloudWatch::Alarm"]

    graph = {"fontsize": "20", "pad": "0.4", "nodesep": "0.55", "ranksep": "0.9", "splines": "spline", "labelloc": "t"}
    with Diagram(
        "Fire-and-Forget: SQS -> EventBridge Pipe -> Step Functions order saga, losing nothing",
        filename=str(OUTPUT), outformat="png", show=False, direction="LR", graph_attr=graph,
    ):  # fmt: skip
        callers = Users("callers\n(SendMessage, then move on)")
        operator = User("operator")

        with Cluster("intake"):
            source = SQS("source queue\n(KMS, 64 KiB)")
            source_dlq = SQS("source DLQ\n(after maxReceiveCount)")
        pipe = EventbridgePipes("EventBridge Pipe\n(FIRE_AND_FORGET)\ndeletes the message at start")

        with Cluster("Step Functions STANDARD: order saga"):
            machine = StepFunctions("OrderSaga\nretry with backoff + jitter")
            with Cluster("saga steps"):
                forward = [Lambda(step) for step in steps]
            with Cluster("compensations (in reverse)"):
                undo = [Lambda(step) for step in compensations]
            handle = StepFunctions("HandleFailure\nclaim once, failure DLQ,\nalert, then Fail")

        with Cluster("failure path"):
            failure_dlq = SQS("failure DLQ\nrecord, error,\ncause")
            topic = Topic("alerts topic\n(KMS, TLS only)")
        with Cluster("alert subscribers (as configured)"):
            email = Email("e-mail")
            slack = Slack("Slack")
            webhook = Internet("HTTPS webhook")
        chatbot = Chatbot("AWS Chatbot")

        with Cluster("what Catch cannot see"):
            rule = EventbridgeRule("rule: Execution Status Change\nTIMED_OUT, ABORTED,\nunannounced FAILED")
            events_queue = SQS("failure-events queue")
            target_dlq = SQS("rule target DLQ")

        with Cluster("DynamoDB (KMS)"):
            data = DynamodbTable("tables\n" + "\n".join(tables))
        with Cluster("CloudWatch"):
            alarm = CloudwatchAlarm(f"{alarms} alarms\n+ 1 composite\n(runbook per alarm)")
            dashboard = Cloudwatch("dashboard")
        cli = CommandLineInterface("ff-ops\noperator CLI")

        # A new Edge per arrow: diagrams keeps an Edge's label and style, so a shared one would leak between arrows.
        def failed(label: str = "") -> Edge:
            return Edge(color="firebrick", style="dashed", label=label)

        def operates(label: str) -> Edge:
            return Edge(color="darkgreen", style="dotted", label=label)

        def reads(label: str = "") -> Edge:
            return Edge(color="gray", style="dotted", label=label)

        callers >> source >> pipe >> Edge(label="StartExecution") >> forward[0]
        source >> failed("hand-over failed") >> source_dlq
        for before, after in zip(forward, forward[1:], strict=False):
            before >> after
        for before, after in zip(undo, undo[1:], strict=False):
            before >> failed() >> after
        forward[-1] >> failed("Catch: a step failed") >> undo[0]
        undo[-1] >> failed() >> handle
        forward[0] >> failed("Catch: invalid order, out of stock") >> handle
        forward[0] >> reads() >> data
        handle >> failed() >> failure_dlq
        handle >> failed() >> topic
        machine >> failed("status change events") >> rule
        rule >> failed() >> topic
        rule >> failed() >> events_queue
        rule >> Edge(color="gray", style="dashed", label="undeliverable") >> target_dlq
        topic >> email
        topic >> webhook
        topic >> chatbot >> slack
        machine >> reads("metrics") >> alarm
        alarm >> Edge(color="firebrick", label="ALARM") >> topic
        alarm - reads() - dashboard
        operator >> operates("") >> cli
        cli >> operates("failures list / redrive") >> failure_dlq
        cli >> operates("source-dlq redrive") >> source_dlq
        cli >> operates("executions redrive") >> machine
        cli >> operates("redriven orders") >> source


def main() -> None:
    if shutil.which("dot") is None:
        sys.exit("graphviz's `dot` is not installed: apt-get install graphviz (Debian/Ubuntu) or brew install graphviz")
    draw(synthesized_template())
    print(f"wrote {OUTPUT.relative_to(REPO)}.png")


if __name__ == "__main__":
    main()
