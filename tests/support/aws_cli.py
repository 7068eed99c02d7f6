"""An `aws <service> <command> --option value ...` line, as the API call the AWS CLI would make for it, through boto3.

The AWS CLI is not installed here. Its commands are generated from the same botocore service models boto3 uses: the
command is the operation's name in kebab case, each option a member of the operation's input shape
(`botocore.xform_name(member, "-")`), a list member takes the words up to the next option, a number is parsed, a
`file://` value is read from the file, a structure or map is JSON. `--query` is JMESPath (the `jmespath` library
the CLI uses) over the response, and `--output text` prints scalars and lists of scalars tab-separated, one row per
inner list, as the CLI does. A command or option the model does not have, a value of the wrong type or a missing
required one is refused before any call, like the CLI. What is not reproduced: the CLI's own customizations beyond
these (shorthand syntax, `--cli-input-json`, automatic pagination, `table` layout: printed here as text).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import jmespath
from botocore import xform_name
from botocore.model import OperationModel, Shape

GLOBAL_OPTIONS = {"--query", "--output", "--region", "--endpoint-url", "--no-paginate", "--no-cli-pager"}


class UsageError(ValueError):
    """The line is not a command the AWS CLI accepts."""


def operation(service: str, command: str) -> OperationModel:
    model = botocore.session.get_session().get_service_model(service)
    names = {xform_name(name, "-"): name for name in model.operation_names}
    if command not in names:
        raise UsageError(f"aws {service}: no command {command!r}")
    return model.operation_model(names[command])


def _value(shape: Shape, words: list[str], cwd: Path) -> Any:
    kind = shape.type_name
    if kind == "list":
        return [_value(shape.member, [word], cwd) for word in words]  # type: ignore[attr-defined]
    if len(words) != 1:
        raise UsageError(f"expected one value, got {words}")
    word = words[0]
    if word.startswith("file://"):
        word = (cwd / word.removeprefix("file://")).read_text(encoding="utf-8")
    if kind in ("integer", "long"):
        return int(word)
    if kind in ("float", "double"):
        return float(word)
    if kind == "boolean":
        return word.lower() == "true"
    if kind in ("structure", "map"):
        return json.loads(word)
    return word


def parameters(op: OperationModel, words: list[str], cwd: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """(API parameters, global options) of the words after `aws <service> <command>`."""
    members = {xform_name(name, "-"): (name, shape) for name, shape in (op.input_shape.members.items()
                                                                        if op.input_shape else [])}
    params: dict[str, Any] = {}
    options: dict[str, str] = {}
    index = 0
    while index < len(words):
        option = words[index]
        if not option.startswith("--"):
            raise UsageError(f"unexpected word {option!r}")
        values = []
        index += 1
        while index < len(words) and not words[index].startswith("--"):
            values.append(words[index])
            index += 1
        if option in GLOBAL_OPTIONS:
            options[option] = values[0] if values else ""
            continue
        name = option.removeprefix("--")
        if name.startswith("no-") and name[3:] in members and members[name[3:]][1].type_name == "boolean":
            params[members[name[3:]][0]] = False
        elif name in members:
            member, shape = members[name]
            params[member] = True if shape.type_name == "boolean" and not values else _value(shape, values, cwd)
        else:
            raise UsageError(f"aws {op.service_model.service_name} {xform_name(op.name, '-')}: no option {option}")
    missing = [xform_name(name, "-") for name in (op.input_shape.required_members if op.input_shape else [])
               if name not in params]
    if missing:
        raise UsageError(f"missing required --{', --'.join(missing)}")
    return params, options


def text(value: Any) -> str:
    """The CLI's text output of a queried value: scalars tab-separated, one line per inner list or object."""
    if value is None:
        return "None"
    if isinstance(value, list):
        if all(not isinstance(v, list | dict) for v in value):
            return "\t".join(text(v) for v in value)
        return "\n".join(text(v) for v in value)
    if isinstance(value, dict):
        return "\t".join(text(v) for v in value.values())
    return str(value)


def run(line: str, environment: Mapping[str, str], cwd: Path) -> str:
    """What `line` (an `aws ...` command, variables already expanded) prints; raises on a refusal or an API error."""
    words = shlex.split(line, comments=True)
    if len(words) < 3 or words[0] != "aws":
        raise UsageError(f"not an aws command: {line}")
    service, command, rest = words[1], words[2], words[3:]
    op = operation(service, command)
    params, options = parameters(op, rest, cwd)
    client = boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=options.get("--endpoint-url") or environment["AWS_ENDPOINT_URL"],
        region_name=options.get("--region") or environment["AWS_REGION"],
        aws_access_key_id=environment["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=environment["AWS_SECRET_ACCESS_KEY"],
    )
    response = getattr(client, xform_name(op.name))(**params)
    response.pop("ResponseMetadata", None)
    result = jmespath.search(options["--query"], response) if "--query" in options else response
    if options.get("--output", "json") == "json":
        return json.dumps(result, indent=4, default=str)
    return text(result)
