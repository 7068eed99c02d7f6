"""The shapes of check every edge is made of: a role's call, a service's call on behalf of a resource, a denial."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from tests.permissions.architecture import Architecture
from tests.permissions.checks import NO_TLS, SOURCE_ACCOUNT_SCOPED, TLS, Check, kms_via, other_account
from tests.permissions.resolver import ACCOUNT, OTHER_ACCOUNT


class CheckShapes:
    """Collects the checks of a template; each shape adds an allowed call and the denials that bound it."""

    def __init__(self, template: dict[str, Any]) -> None:
        self.a = Architecture(template)
        self.checks: list[Check] = []
        self.edges: set[str] = set()

    def _add(self, check: Check) -> None:
        self.edges.add(check.edge)
        self.checks.append(check)

    def role_call(
        self,
        edge: str,
        role_lid: str,
        action: str,
        target_lid: str | None,
        resource: str,
        *,
        key_actions: tuple[str, ...] = (),
        via: str = "",
        negatives: bool = True,
    ) -> None:
        """A role's call, allowed, plus the same call on another account's copy and, where the resource policy
        forbids it, without TLS; and the KMS calls the encrypted resource needs."""
        principal = self.a.att(role_lid)
        identity = self.a.identity(role_lid)
        policy = self.a.resource_policy(target_lid) if target_lid else None
        base = Check(edge, principal, action, resource, True, "the architecture needs it", dict(TLS), identity, policy)
        self._add(base)
        if negatives:
            self.denied_on_another_accounts_copy(base)
            if policy and "SecureTransport" in json.dumps(policy):
                self._add(replace(base, allowed=False, why="without TLS", context=dict(NO_TLS)))
        key = self.a.key_of(target_lid) if target_lid else None
        for key_action in key_actions if key else ():
            assert key is not None
            self._add(
                Check(
                    edge,
                    principal,
                    key_action,
                    self.a.att(key),
                    True,
                    "the resource is encrypted",
                    dict(TLS) | kms_via(via),
                    identity,
                    self.a.resource_policy(key),
                )
            )

    def service_call(
        self,
        edge: str,
        service: str,
        action: str,
        target_lid: str,
        source_arn: str,
        *,
        key_actions: tuple[str, ...],
        via: str,
        other_source: str,
    ) -> None:
        """A service's call on behalf of `source_arn`, allowed; from another account, from `other_source`, and
        without TLS denied; and the key policy lets it use the key for this account."""
        resource = self.a.att(target_lid, "Ref" if self.a.resources[target_lid]["Type"] == "AWS::SNS::Topic" else "Arn")
        policy = self.a.resource_policy(target_lid)
        context = dict(TLS) | {"aws:SourceArn": source_arn, "aws:SourceAccount": ACCOUNT}
        base = Check(edge, service, action, resource, True, "the architecture needs it", context, (), policy)
        self._add(base)
        self._add(
            replace(
                base,
                allowed=False,
                why="on behalf of another account",
                context=dict(TLS) | {"aws:SourceArn": other_account(source_arn), "aws:SourceAccount": OTHER_ACCOUNT},
            )
        )
        if other_source != source_arn:
            # CDK's SqsQueue rule target scopes its queue statement to aws:SourceAccount only (with the flag
            # @aws-cdk/aws-events:eventsTargetQueueSameAccount): another rule of this account may send there too.
            same_account_only = any(target_lid.startswith(prefix) for prefix in SOURCE_ACCOUNT_SCOPED)
            self._add(
                replace(
                    base,
                    allowed=same_account_only,
                    why="on behalf of another resource of this account"
                    + (" (accepted: scoped to the account only)" if same_account_only else ""),
                    context=context | {"aws:SourceArn": other_source},
                )
            )
        if policy and "SecureTransport" in json.dumps(policy):
            self._add(replace(base, allowed=False, why="without TLS", context=context | NO_TLS))
        key = self.a.key_of(target_lid)
        if key:
            key_arn, key_policy = self.a.att(key), self.a.resource_policy(key)
            for key_action in key_actions:
                self._add(
                    Check(
                        edge,
                        service,
                        key_action,
                        key_arn,
                        True,
                        "the resource is encrypted",
                        context | kms_via(via),
                        (),
                        key_policy,
                    )
                )
            self._add(
                Check(
                    edge,
                    service,
                    key_actions[0],
                    key_arn,
                    False,
                    "key use for another account",
                    dict(TLS)
                    | {"aws:SourceAccount": OTHER_ACCOUNT, "aws:SourceArn": other_account(source_arn)}
                    | kms_via(via),
                    (),
                    key_policy,
                )
            )

    def denied_on_another_accounts_copy(self, base: Check) -> None:
        """The allowed call `base` made on another account's copy of its resource: nothing here grants it."""
        self._add(
            replace(
                base,
                resource=other_account(base.resource),
                allowed=False,
                why="another account's copy",
                resource_policy=None,
            )
        )

    def denied(
        self, edge: str, role_lid: str, action: str, resource: str, why: str, target_lid: str | None = None
    ) -> None:
        policy = self.a.resource_policy(target_lid) if target_lid else None
        self._add(
            Check(
                edge, self.a.att(role_lid), action, resource, False, why, dict(TLS), self.a.identity(role_lid), policy
            )
        )

    def _logs(self, edge: str, role: str, log_group: str) -> None:
        stream = self.a.att(log_group).removesuffix(":*") + ":log-stream:s"
        self.role_call(edge, role, "logs:PutLogEvents", None, stream, negatives=False)
        self.a.covered.add(("log-group", log_group))
