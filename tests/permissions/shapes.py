"""The shapes of check every edge is made of: a role's call, a service's call on behalf of a resource, a denial."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from tests.permissions.architecture import Architecture
from tests.permissions.checks import (
    NO_TLS,
    SOURCE_KEYS_MAYBE_ABSENT,
    TLS,
    Check,
    encryption_context,
    kms_via,
    other_account,
)
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
            self._add(
                replace(
                    base,
                    allowed=False,
                    why="on behalf of another resource of this account",
                    context=context | {"aws:SourceArn": other_source},
                )
            )
        if policy and "SecureTransport" in json.dumps(policy):
            self._add(replace(base, allowed=False, why="without TLS", context=context | NO_TLS))
        key = self.a.key_of(target_lid)
        if key:
            self._key_use(edge, service, key, target_lid, resource, source_arn, key_actions, via)

    def _key_use(self, edge: str, service: str, key: str, target_lid: str, resource: str, source_arn: str,
                 key_actions: tuple[str, ...], via: str) -> None:
        """The KMS calls the service's delivery makes through `via` (SQS or SNS, on the service's behalf), allowed;
        for another account denied. For a service in SOURCE_KEYS_MAYBE_ABSENT, each call again without aws:Source*
        in the request (allowed), and through another service (denied).

        The simulator drops kms:EncryptionContext:* keys and judges the key policy without those conditions (see
        Architecture.resource_policy): it proves the principal, the actions, kms:ViaService and aws:Source*; that
        the encryption context binds the key to this account's queues is test_key_conditions.py's."""
        key_arn, key_policy = self.a.att(key), self.a.resource_policy(key)
        bound = dict(TLS) | kms_via(via) | encryption_context(self.a.resources[target_lid]["Type"], resource)
        source = {"aws:SourceArn": source_arn, "aws:SourceAccount": ACCOUNT}
        base = Check(edge, service, key_actions[0], key_arn, True, "the resource is encrypted", bound | source, (),
                     key_policy)
        for key_action in key_actions:
            self._add(replace(base, action=key_action))
            if service in SOURCE_KEYS_MAYBE_ABSENT:
                self._add(replace(base, action=key_action, why="the resource is encrypted (no aws:Source* in the "
                                  "key request)", context=bound))
        self._add(replace(base, allowed=False, why="key use for another account",
                          context=bound | {"aws:SourceAccount": OTHER_ACCOUNT,
                                           "aws:SourceArn": other_account(source_arn)}))
        if service in SOURCE_KEYS_MAYBE_ABSENT:
            other_via = "sns" if via == "sqs" else "sqs"
            self._add(replace(base, allowed=False, why="key use through another service",
                              context=bound | kms_via(other_via)))

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
