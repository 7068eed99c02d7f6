"""What FireAndForgetPipeline exposes and deploys, on a small stack and on the two examples' templates, and the rule
that the construct has no line that knows either example."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_kms as kms
from constructs import IConstruct

from fire_and_forget.construct import OUTPUT_KEYS, FireAndForgetPipeline
from fire_and_forget.construct.settings import HealingConfig
from fire_and_forget.construct.workflow import ANNOUNCE_OR_WAIT, failure_tail, full_definition
from tests.pipeline import minimal
from tests.support.cdk import REPO
from tests.support.template import one, ref_or_att

ORDER_WORDS = re.compile(r"order|saga|inventory|payment|shipment", re.IGNORECASE)
# The whole package: the construct, its runtime, the Reconciler and the Redriver, the CLI and the rehearsal belong to
# the pattern and must stay free of any domain.
CONSTRUCT_SOURCES = (REPO / "src" / "fire_and_forget",)
# Each exception: (file or template, the exact phrase allowed there, why). A phrase nothing contains any more fails
# the test, so the list only shrinks.
SOURCE_EXCEPTIONS = (
    ("src/fire_and_forget/construct/monitoring_dashboard.py", "in the order an operator asks",
     "'order' as in sequence"),
    ("src/fire_and_forget/runtime/errors.py", "in the order of the transaction's actions", "'order' as in sequence"),
    ("src/fire_and_forget/construct/healing.py", "in the order of the steps", "'order' as in sequence"),
    ("src/fire_and_forget/construct/pipeline.py", "workflow.ordered_undo(", "'ordered' as in sequence"),
    ("src/fire_and_forget/construct/workflow.py", "def ordered_undo(", "'ordered' as in sequence"),
    ("src/fire_and_forget/construct/workflow.py", "in the order the steps appear", "'order' as in sequence"),
    ("src/fire_and_forget/healing/reconciliation.py", "in the order of their steps", "'order' as in sequence"),
    ("src/fire_and_forget/healing/reconciliation.py", "the states entered in order", "'order' as in sequence"),
)
# The deprecated key alias and fallback, for stacks deployed before MessageKeyField (CHANGELOG.md).
SOURCE_EXCEPTIONS += (
    ("src/fire_and_forget/cli/trend_page.py", "border-collapse:collapse", "CSS 'border'"),
    ("src/fire_and_forget/cli/trend_page.py", "td,th{border:1px", "CSS 'border'"),
    ("src/fire_and_forget/runtime/records.py", 'DEFAULT_KEY_FIELD = "orderId"', "deprecated fallback"),
    ("src/fire_and_forget/cli/cli_common.py", "# --order-id is --key's deprecated alias", "deprecated alias"),
    ("src/fire_and_forget/cli/cli_common.py", '"--order-id",', "deprecated alias"),
    ("src/fire_and_forget/cli/cli_common.py", "--order-id is a deprecated alias", "deprecated alias"),
)
CATALOG_EXCEPTIONS: tuple[tuple[str, str, str], ...] = ()
EXPOSED = {
    "source_queue": "AWS::SQS::Queue",
    "source_dlq": "AWS::SQS::Queue",
    "pipe": "AWS::Pipes::Pipe",
    "state_machine": "AWS::StepFunctions::StateMachine",
    "failure_dlq": "AWS::SQS::Queue",
    "alerts_topic": "AWS::SNS::Topic",
    "dashboard": "AWS::CloudWatch::Dashboard",
    "deliveries_table": "AWS::DynamoDB::Table",
    "key": "AWS::KMS::Key",
    "operator_policy": "AWS::IAM::ManagedPolicy",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[FireAndForgetPipeline, dict[str, Any]]:
    """A pipeline that makes its own key, in a stack of its own, and that stack's template."""
    scope = minimal.stack()
    pipeline = minimal.pipeline(scope, minimal.write(tmp_path_factory.mktemp("asl"), minimal.valid_definition()))
    template: dict[str, Any] = scope.node.root.synth().get_stack_by_name("Minimal").template  # type: ignore[attr-defined]
    return pipeline, template


def logical_id(construct: IConstruct) -> str:
    cfn = construct if isinstance(construct, cdk.CfnElement) else construct.node.default_child
    assert isinstance(cfn, cdk.CfnElement), construct.node.path
    return str(cdk.Stack.of(construct).resolve(cfn.logical_id))


@pytest.mark.parametrize(("attribute", "resource_type"), EXPOSED.items())
def test_the_construct_exposes_each_resource_it_creates(
    built: tuple[FireAndForgetPipeline, dict[str, Any]], attribute: str, resource_type: str
) -> None:
    pipeline, template = built
    exposed = getattr(pipeline, attribute)
    assert template["Resources"][logical_id(exposed)]["Type"] == resource_type


def test_the_exposed_queues_are_the_ones_the_pipe_and_the_tail_use(
    built: tuple[FireAndForgetPipeline, dict[str, Any]],
) -> None:
    pipeline, template = built
    resources = template["Resources"]
    source, dlq, failure = (logical_id(q) for q in (pipeline.source_queue, pipeline.source_dlq, pipeline.failure_dlq))
    assert len({source, dlq, failure}) == 3
    pipe = resources[logical_id(pipeline.pipe)]["Properties"]
    assert ref_or_att(pipe["Source"]) == source
    assert ref_or_att(pipe["Target"]) == logical_id(pipeline.state_machine)
    assert ref_or_att(resources[source]["Properties"]["RedrivePolicy"]["deadLetterTargetArn"]) == dlq
    substitutions = resources[logical_id(pipeline.state_machine)]["Properties"]["DefinitionSubstitutions"]
    assert ref_or_att(substitutions["FailureDlqUrl"]) == failure
    assert ref_or_att(substitutions["AlertsTopicArn"]) == logical_id(pipeline.alerts_topic)
    assert ref_or_att(substitutions["DeliveriesTableName"]) == logical_id(pipeline.deliveries_table)


def test_the_construct_exposes_its_alarms(built: tuple[FireAndForgetPipeline, dict[str, Any]]) -> None:
    pipeline, template = built
    alarms = {name: template["Resources"][logical_id(alarm)]["Type"] for name, alarm in pipeline.alarms.items()}
    assert alarms
    assert set(alarms.values()) == {"AWS::CloudWatch::Alarm"}
    every_alarm = [lid for lid, r in template["Resources"].items() if r["Type"] == "AWS::CloudWatch::Alarm"]
    assert sorted(logical_id(alarm) for alarm in pipeline.alarms.values()) == sorted(every_alarm)


def test_a_given_key_is_used_instead_of_a_new_one(tmp_path: Path) -> None:
    scope = minimal.stack()
    key = kms.Key(scope, "TeamKey")
    pipeline = minimal.pipeline(scope, minimal.write(tmp_path, minimal.valid_definition()), key=key)
    assert pipeline.key is key
    assert pipeline.node.try_find_child("MessagingKey") is None
    resources = scope.node.root.synth().get_stack_by_name("Minimal").template["Resources"]  # type: ignore[attr-defined]
    team_key = logical_id(key)
    for queue in (pipeline.source_queue, pipeline.source_dlq, pipeline.failure_dlq):
        assert ref_or_att(resources[logical_id(queue)]["Properties"]["KmsMasterKeyId"]) == team_key
    assert ref_or_att(resources[logical_id(pipeline.alerts_topic)]["Properties"]["KmsMasterKeyId"]) == team_key
    table = resources[logical_id(pipeline.deliveries_table)]["Properties"]
    assert ref_or_att(table["SSESpecification"]["KMSMasterKeyId"]) == team_key


def test_a_pipeline_alone_has_exactly_the_pipeline_outputs(built: tuple[FireAndForgetPipeline, dict[str, Any]]) -> None:
    _, template = built
    assert sorted(template["Outputs"]) == sorted(OUTPUT_KEYS)
    assert template["Outputs"]["PipelineName"]["Value"] == "minimal"
    assert template["Outputs"]["MessageKeyField"]["Value"] == "id"


@pytest.mark.parametrize(
    ("fixture", "own"),
    [
        (
            "template",
            {
                "OrdersTableName",
                "InventoryTableName",
                "ReservationsTableName",
                "PaymentsTableName",
                "ShipmentsTableName",
                "IdempotencyTableName",
                "CompensationStates",  # the pipeline's, present only for a workflow that compensates
            },
        ),
        ("catalog_template", {"SearchIndexTableName"}),
    ],
)
def test_both_examples_carry_the_pipeline_outputs_plus_their_own(
    fixture: str, own: set[str], request: pytest.FixtureRequest
) -> None:
    outputs = set(request.getfixturevalue(fixture)["Outputs"])
    assert outputs >= set(OUTPUT_KEYS)
    assert outputs - set(OUTPUT_KEYS) == own


def test_the_catalog_runs_one_state_then_the_construct_s_tail(catalog_template: dict[str, Any]) -> None:
    machine = one(catalog_template, "AWS::StepFunctions::StateMachine", "PipelineWorkflow")[1]["Properties"]
    definition = json.loads(machine["DefinitionString"])
    states: dict[str, Any] = definition["States"]
    own = {name: state for name, state in states.items() if name not in failure_tail() and name != ANNOUNCE_OR_WAIT}
    assert set(own) == {"IndexProduct", "IndexProductFailed"}
    # The tail as the construct appends it with automatic redrives on (the default maxAttempts, 3).
    assert states == full_definition({"States": own}, HealingConfig().max_attempts)["States"]
    assert states["HandleFailure"]["Next"] == ANNOUNCE_OR_WAIT
    happy_path = [definition["StartAt"]]
    while not states[happy_path[-1]].get("End"):
        happy_path.append(states[happy_path[-1]]["Next"])
    assert happy_path == ["IndexProduct"]
    assert machine["DefinitionSubstitutions"]["PipelineName"] == "catalog"


def _unexplained(text: str, where: str, exceptions: tuple[tuple[str, str, str], ...]) -> list[str]:
    """Order words in `text` outside the phrases `exceptions` allow for `where`."""
    allowed = [phrase for place, phrase, _ in exceptions if place == where]
    for phrase in allowed:
        text = text.replace(phrase, "")
    return [f"{where}: ...{text[max(0, m.start() - 40) : m.end() + 40]}..." for m in ORDER_WORDS.finditer(text)]


def test_the_catalog_template_names_nothing_of_the_order_example(catalog_template: dict[str, Any]) -> None:
    text = json.dumps(catalog_template)
    found = _unexplained(text, "statemachines/catalog/index_product.asl.json", CATALOG_EXCEPTIONS)
    assert not found, "\n".join(found)
    stale = [phrase for _, phrase, _ in CATALOG_EXCEPTIONS if phrase not in text]
    assert not stale, f"exceptions nothing needs any more, remove them: {stale}"


def test_the_construct_library_has_no_line_that_knows_the_order_example() -> None:
    found: list[str] = []
    used: set[str] = set()
    for root in CONSTRUCT_SOURCES:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            where = path.relative_to(REPO).as_posix()
            text = path.read_text(encoding="utf-8")
            used |= {phrase for place, phrase, _ in SOURCE_EXCEPTIONS if place == where and phrase in text}
            found += _unexplained(text, where, SOURCE_EXCEPTIONS)
    assert not found, "\n".join(found)
    stale = [phrase for _, phrase, _ in SOURCE_EXCEPTIONS if phrase not in used]
    assert not stale, f"exceptions nothing needs any more, remove them: {stale}"


def test_the_documented_failure_record_is_the_one_handle_failure_sends() -> None:
    from fire_and_forget.runtime.records import RECORD_KIND

    body = failure_tail()["HandleFailure"]["Parameters"]["MessageBody"]
    sent = {name.removesuffix(".$") for name in body}
    doc = (REPO / "docs" / "construct.md").read_text(encoding="utf-8")
    section = doc.split("## The failure record", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE))
    # `reconciliation` is the one field only the Reconciler's records carry (documented so; it writes it).
    assert documented == sent | {"reconciliation"}
    assert "reconciliation" not in sent
    reconciliation = REPO / "src" / "fire_and_forget" / "healing" / "reconciliation.py"
    assert '"reconciliation": reconciliation' in reconciliation.read_text()
    assert body["kind"] == RECORD_KIND == "fire-and-forget.failure.v1"
    assert f"`{RECORD_KIND}`" in section


def test_the_construct_takes_each_prop_as_a_keyword_with_the_documented_default() -> None:
    """FireAndForgetPipeline's keywords are PipelineProps' fields, in order, with the same defaults (a factory
    default is None at the keyword), and each field is documented where it is declared."""
    import dataclasses
    import inspect

    from fire_and_forget.construct import PipelineProps

    keywords = [p for p in inspect.signature(FireAndForgetPipeline.__init__).parameters.values()
                if p.kind is inspect.Parameter.KEYWORD_ONLY]
    fields = dataclasses.fields(PipelineProps)
    assert [p.name for p in keywords] == [f.name for f in fields]
    for parameter, declared in zip(keywords, fields, strict=True):
        if declared.default is not dataclasses.MISSING:
            assert parameter.default == declared.default, declared.name
        elif declared.default_factory is not dataclasses.MISSING:
            assert parameter.default is None, declared.name
        else:
            assert parameter.default is inspect.Parameter.empty, declared.name
    source = inspect.getsource(PipelineProps)
    undocumented = [f.name for f in fields if not re.search(rf"\n    {f.name}: [^\n]+\n    \"\"\"", source)]
    assert not undocumented
