"""Everything an emulated account holds, read through the AWS APIs: what two deployments must agree on to be one."""

from __future__ import annotations

import hashlib
from typing import Any

from fire_and_forget.rehearsal.deployment import ACCOUNT
from fire_and_forget.rehearsal.rehearsal import Rehearsal

# Response metadata differs per call (request ids, retries); nothing of the account is in it.
_PER_CALL = ("ResponseMetadata",)


def account_state(aws: Rehearsal) -> dict[str, Any]:
    """Every resource of the account with its configuration and contents: stacks and their resources, queues with
    their attributes (message counts included) and messages' presence, tables with their items, functions, layers
    and policies, state machines and their executions, topics, subscriptions and what was published, rules and
    targets, roles and policies, keys and key policies, log groups and streams, metrics, buckets and objects, and
    parameters."""
    session = _Clients(aws.region)
    state: dict[str, Any] = {}
    cfn = session("cloudformation")
    stacks = cfn.describe_stacks()["Stacks"]
    state["stacks"] = stacks
    state["stack_resources"] = {s["StackName"]: cfn.describe_stack_resources(StackName=s["StackName"])["StackResources"]
                                for s in stacks}
    sqs = session("sqs")
    urls = sorted(sqs.list_queues().get("QueueUrls", []))
    state["queues"] = {url: (sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"],
                             sqs.list_queue_tags(QueueUrl=url).get("Tags", {})) for url in urls}
    dynamodb = session("dynamodb")
    tables = dynamodb.list_tables()["TableNames"]
    state["tables"] = {name: (dynamodb.describe_table(TableName=name)["Table"],
                              _sorted(dynamodb.scan(TableName=name)["Items"])) for name in tables}
    lambda_ = session("lambda")
    functions = lambda_.list_functions()["Functions"]
    state["functions"] = {f["FunctionName"]: (f, lambda_.get_function(FunctionName=f["FunctionName"])["Code"],
                                              _policy(lambda_, f["FunctionName"])) for f in functions}
    state["layers"] = lambda_.list_layers()["Layers"]
    state["event_source_mappings"] = lambda_.list_event_source_mappings()["EventSourceMappings"]
    sfn = session("stepfunctions")
    machines = sfn.list_state_machines()["stateMachines"]
    state["state_machines"] = {m["stateMachineArn"]: (sfn.describe_state_machine(stateMachineArn=m["stateMachineArn"]),
                                                      sfn.list_executions(stateMachineArn=m["stateMachineArn"])[
                                                          "executions"]) for m in machines}
    sns = session("sns")
    topics = [t["TopicArn"] for t in sns.list_topics()["Topics"]]
    state["topics"] = {arn: (sns.get_topic_attributes(TopicArn=arn)["Attributes"], _published(aws, arn))
                       for arn in topics}
    state["subscriptions"] = sns.list_subscriptions()["Subscriptions"]
    events = session("events")
    rules = events.list_rules()["Rules"]
    state["rules"] = {r["Name"]: (r, events.list_targets_by_rule(Rule=r["Name"])["Targets"]) for r in rules}
    state["event_buses"] = events.list_event_buses()["EventBuses"]
    iam = session("iam")
    roles = iam.list_roles()["Roles"]
    state["roles"] = {r["RoleName"]: (r, iam.list_role_policies(RoleName=r["RoleName"])["PolicyNames"],
                                      iam.list_attached_role_policies(RoleName=r["RoleName"])["AttachedPolicies"])
                      for r in roles}
    state["policies"] = iam.list_policies(Scope="Local")["Policies"]
    kms = session("kms")
    keys = [k["KeyId"] for k in kms.list_keys()["Keys"]]
    # moto's DescribeKey and GetKeyPolicy cannot read a policy its CloudFormation stored (a dict, not text).
    state["keys"] = {key: _key(aws, key) for key in keys}
    state["aliases"] = kms.list_aliases()["Aliases"]
    logs = session("logs")
    groups = logs.describe_log_groups()["logGroups"]
    state["log_groups"] = {g["logGroupName"]: (g, logs.describe_log_streams(logGroupName=g["logGroupName"])[
        "logStreams"]) for g in groups}
    cloudwatch = session("cloudwatch")
    state["metrics"] = _sorted(cloudwatch.list_metrics()["Metrics"])
    state["alarms"] = cloudwatch.describe_alarms()["MetricAlarms"]
    s3 = session("s3")
    buckets = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    state["objects"] = {b: s3.list_objects_v2(Bucket=b).get("Contents", []) for b in buckets}
    # What each object holds, read back (a restore hands the copies their content in buffers of their own).
    state["contents"] = {f"{b}/{o['Key']}": hashlib.sha256(s3.get_object(Bucket=b, Key=o["Key"])["Body"].read())
                         .hexdigest() for b, objects in state["objects"].items() for o in objects}
    ssm = session("ssm")
    state["parameters"] = ssm.describe_parameters()["Parameters"]
    state["pipes"] = session("pipes").list_pipes()["Pipes"]
    return _without_call_metadata(state)


class _Clients:
    def __init__(self, region: str) -> None:
        from fire_and_forget.rehearsal.client_cache import session

        self._session, self._region = session(), region

    def __call__(self, service: str) -> Any:
        return self._session.client(service, region_name=self._region)


def _policy(lambda_: Any, function_name: str) -> str | None:
    try:
        return str(lambda_.get_policy(FunctionName=function_name)["Policy"])
    except lambda_.exceptions.ResourceNotFoundException:
        return None


def _key(aws: Rehearsal, key_id: str) -> Any:
    from moto.kms.models import kms_backends

    key = kms_backends[ACCOUNT][aws.region].keys[key_id]
    return key.to_dict(), key.policy


def _published(aws: Rehearsal, topic_arn: str) -> list[Any]:
    from moto.sns.models import sns_backends

    return list(sns_backends[ACCOUNT][aws.region].topics[topic_arn].sent_notifications)


def _sorted(items: list[Any]) -> list[Any]:
    return sorted(items, key=repr)


def _without_call_metadata(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_call_metadata(v) for k, v in value.items() if k not in _PER_CALL}
    if isinstance(value, list | tuple):
        return [_without_call_metadata(v) for v in value]
    return value
