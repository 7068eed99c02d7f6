"""Log groups: bounded retention everywhere, and state machine logs under /aws/vendedlogs/states/.

Step Functions delivers logs through CloudWatch Logs' vended-log resource policy, whose size limit fills up with
log group names unless they share the documented prefix:
https://docs.aws.amazon.com/step-functions/latest/dg/cw-logs.html
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.template import of_type, ref_or_att


def _log_group_ids_of(machine: dict[str, Any]) -> set[str]:
    destinations = machine["Properties"]["LoggingConfiguration"]["Destinations"]
    return {str(ref_or_att(d["CloudWatchLogsLogGroup"]["LogGroupArn"])) for d in destinations}


def test_every_state_machine_logs_under_the_vended_prefix(template: dict[str, Any]) -> None:
    machines = of_type(template, "AWS::StepFunctions::StateMachine")
    assert machines
    groups = of_type(template, "AWS::Logs::LogGroup")
    for machine_id, machine in machines.items():
        (group_id,) = _log_group_ids_of(machine)
        name = json.dumps(groups[group_id]["Properties"]["LogGroupName"])
        assert name.startswith('"/aws/vendedlogs/states/'), (machine_id, name)


def test_state_machine_log_group_names_are_unique_per_stack(template: dict[str, Any]) -> None:
    names = [json.dumps(group["Properties"].get("LogGroupName")) for group in of_type(template, "AWS::Logs::LogGroup")
             .values() if group["Properties"].get("LogGroupName")]
    assert len(names) == len(set(names))
    # The stack name is part of every given name, so two stacks in one account and region do not collide.
    assert all("FireAndForget-" in name for name in names)


def test_every_log_group_has_a_retention(template: dict[str, Any]) -> None:
    groups = of_type(template, "AWS::Logs::LogGroup")
    assert groups
    assert all("RetentionInDays" in group["Properties"] for group in groups.values())
