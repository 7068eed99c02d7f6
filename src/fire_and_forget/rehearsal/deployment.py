"""Deploys a synthesized cloud assembly into moto, in-process, the way `cdk deploy` would into AWS."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from moto.cloudformation.models import cloudformation_backends
from moto.cloudformation.parsing import NULL_MODELS, clean_json, get_model_map

from fire_and_forget.rehearsal.assembly import CloudAssembly

ACCOUNT = "123456789012"  # moto's default account
# What `cdk bootstrap` writes into the account: the template checks this version parameter at deploy time.
BOOTSTRAP_VERSION = "30"
# Resource types the rehearsal runs itself instead of moto's CloudFormation: the pipe
# (fire_and_forget/rehearsal/pipe.py), which moto cannot create; event source mappings
# (fire_and_forget/rehearsal/event_sources.py), which moto would run on every SendMessage, one fake record at a time;
# schedules (fire_and_forget/rehearsal/schedules.py), which moto has no model for.
EMULATED_TYPES = ("AWS::Pipes::Pipe", "AWS::Lambda::EventSourceMapping", "AWS::Scheduler::Schedule")
_SUBSTITUTION = re.compile(r"\$\{(\w+)\}")


@dataclass(frozen=True)
class OfflineStack:
    """What a deployment leaves behind: outputs, logical -> physical ids, and the resolver for the rest."""

    name: str
    outputs: dict[str, str]
    physical_ids: dict[str, str]
    resource_map: Any
    definitions: dict[str, Any] = field(default_factory=dict)  # state machine ARN -> deployed definition

    def resolve(self, value: Any) -> Any:
        """Resolve Ref / Fn::GetAtt / Fn::Join in a template fragment against the deployed stack."""
        return clean_json(value, self.resource_map)


def deploy(assembly: CloudAssembly, region: str) -> OfflineStack:
    """Upload the assets, create the stack from the template under the assembly's stack name, and make its state
    machines executable."""
    _upload_assets(assembly, region)
    _bootstrap_version_parameter(assembly, region)
    template = _deployable_template(assembly.template)
    cfn = boto3.client("cloudformation", region_name=region)
    name = assembly.stack_name
    cfn.create_stack(
        StackName=name,
        TemplateBody=json.dumps(template),
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
    )
    description = cfn.describe_stacks(StackName=name)["Stacks"][0]
    if description["StackStatus"] != "CREATE_COMPLETE":
        raise RuntimeError(f"offline deployment failed: {description['StackStatus']}")
    resources = cfn.describe_stack_resources(StackName=name)["StackResources"]
    stack = OfflineStack(
        name=name,
        outputs={o["OutputKey"]: o["OutputValue"] for o in description.get("Outputs", [])},
        # moto reports no physical id for a LayerVersion (AWS: its ARN); nothing looks one up by logical id.
        physical_ids={r["LogicalResourceId"]: r["PhysicalResourceId"] for r in resources if "PhysicalResourceId" in r},
        resource_map=_moto_stack(region, name).resource_map,
    )
    stack.definitions.update(_recreate_state_machines(assembly, stack, region))
    return stack


def _upload_assets(assembly: CloudAssembly, region: str) -> None:
    # No checksum of its own over the body: botocore would compute a CRC32 of the layer's archive in Python, and
    # moto decode the chunked upload it makes, for an object that never leaves the process.
    s3 = boto3.client("s3", region_name=region, config=Config(request_checksum_calculation="when_required"))
    for asset in assembly.assets:
        bucket = asset.bucket(ACCOUNT, region)
        if bucket not in {b["Name"] for b in s3.list_buckets().get("Buckets", [])}:
            s3.create_bucket(Bucket=bucket)
        s3.put_object(Bucket=bucket, Key=asset.object_key, Body=asset.zipped())


def _bootstrap_version_parameter(assembly: CloudAssembly, region: str) -> None:
    """The one SSM parameter the template resolves is the bootstrap version `cdk bootstrap` writes; no public
    (AWS-owned) parameter is needed: the Lambda dependencies are the stack's own layer, uploaded as an asset."""
    ssm = boto3.client("ssm", region_name=region)
    for parameter in assembly.template.get("Parameters", {}).values():
        if parameter["Type"].startswith("AWS::SSM::Parameter::Value"):
            ssm.put_parameter(Name=parameter["Default"], Value=BOOTSTRAP_VERSION, Type="String", Overwrite=True)


def _deployable_template(template: dict[str, Any]) -> dict[str, Any]:
    """The template minus what moto cannot create: the pipe (emulated by fire_and_forget/rehearsal/pipe.py) and resource
    types moto has no model for (composite alarms, chat integrations), with whatever references them."""
    deployable: dict[str, Any] = json.loads(json.dumps(template))
    for resource in deployable["Resources"].values():
        if resource["Type"] == "AWS::Events::Rule" and "EventPattern" in resource.get("Properties", {}):
            resource["Properties"]["EventPattern"] = _pattern_object(resource["Properties"]["EventPattern"])
    models = get_model_map()
    dropped = {lid for lid, res in deployable["Resources"].items()
               if res["Type"] in EMULATED_TYPES or (res["Type"] not in models and res["Type"] not in NULL_MODELS)}
    while True:
        referencing = {lid for lid, res in deployable["Resources"].items()
                       if lid not in dropped and any(_mentions(res, d) for d in dropped)}
        if not referencing:
            break
        dropped |= referencing
    for logical_id in dropped:
        del deployable["Resources"][logical_id]
    deployable["Outputs"] = {
        key: output for key, output in deployable.get("Outputs", {}).items()
        if not any(_mentions(output, lid) for lid in dropped)
    }
    return deployable


def _pattern_object(pattern: Any) -> Any:
    """An EventPattern written as a JSON string under Fn::Sub (it keeps its nulls), as the object moto expects.

    moto's CloudFormation resolves Fn::Sub to the text and then JSON-encodes that text again. So the text is parsed
    here and each `${Name}` value becomes the reference Fn::Sub would have filled in, which moto resolves.
    """
    if isinstance(pattern, str):
        return json.loads(pattern)
    sub = pattern.get("Fn::Sub") if isinstance(pattern, dict) else None
    if sub is None:
        return pattern
    text, variables = (sub, {}) if isinstance(sub, str) else (sub[0], sub[1])

    def filled(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: filled(item) for key, item in value.items()}
        if isinstance(value, list):
            return [filled(item) for item in value]
        if isinstance(value, str) and value.startswith("${") and value.endswith("}"):
            name = value[2:-1]
            return variables.get(name, {"Ref": name})
        return value

    return filled(json.loads(text))


def _mentions(fragment: Any, logical_id: str) -> bool:
    text = json.dumps(fragment)
    return f'"Ref": "{logical_id}"' in text or f'["{logical_id}",' in text or f'"{logical_id}"' in text


def _moto_stack(region: str, name: str) -> Any:
    backend = cloudformation_backends[ACCOUNT][region]
    return next(stack for stack in backend.stacks.values() if stack.name == name)


def _recreate_state_machines(assembly: CloudAssembly, stack: OfflineStack, region: str) -> dict[str, Any]:
    """moto's CloudFormation puts state machines in its non-executing backend and ignores
    DefinitionSubstitutions. Create each again through the API (the executing backend), with the same name
    and the definition CloudFormation would deploy, so it keeps its ARN and really runs. Returns ARN -> definition."""
    sfn = boto3.client("stepfunctions", region_name=region)
    definitions = {}
    for logical_id, resource in assembly.resources_of_type("AWS::StepFunctions::StateMachine").items():
        props = resource["Properties"]
        substitutions = stack.resolve(props.get("DefinitionSubstitutions", {}))
        definition = json.loads(_substitute(props["DefinitionString"], substitutions))
        arn = stack.physical_ids[logical_id]
        definitions[arn] = definition
        sfn.create_state_machine(
            name=arn.rsplit(":", 1)[1],
            definition=json.dumps(definition),
            roleArn=stack.resolve(props["RoleArn"]),
            type=props.get("StateMachineType", "STANDARD"),
        )
    return definitions


def _substitute(text: str, substitutions: dict[str, Any]) -> str:
    """What CloudFormation does with DefinitionSubstitutions: replace each ${Key} with its value."""
    return _SUBSTITUTION.sub(lambda match: str(substitutions[match.group(1)]), text)


def asset_directories(assembly: CloudAssembly) -> dict[str, Path]:
    """S3 object key -> the asset directory it was zipped from."""
    return {asset.object_key: asset.source for asset in assembly.assets}

