"""Systems Manager OpsCenter's OpsItems as far as the tickets need them, which moto does not model.

It follows the documented behaviour only, and checks every request against the SSM API's own model (botocore's
parameter validation: required members, lengths, types), so a request AWS would refuse is refused here too:
- CreateOpsItem makes an OpsItem `oi-` + 12 hex digits, Open; with an OperationalData `/aws/dedup` whose
  `dedupString` matches an Open or InProgress OpsItem's (not case sensitive), no OpsItem is created; a Resolved one
  does not stop a new one (https://docs.aws.amazon.com/systems-manager/latest/userguide/OpsCenter-working-deduplication.html).
  What the call answers then is not documented: `duplicate` picks the reading, the existing OpsItem's id as a success
  (`"existing"`) or the modeled OpsItemAlreadyExistsException carrying it (`"error"`);
- UpdateOpsItem changes Status and adds or replaces OperationalData keys; an unknown id is OpsItemNotFoundException
  (https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_UpdateOpsItem.html);
- the 10,000 OpsItems an account may create in a month (OpsCenter-troubleshooting.html) is `monthly_limit`; over it,
  OpsItemLimitExceededException.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

import botocore.session
from botocore.exceptions import ClientError
from botocore.validate import validate_parameters

MONTHLY_LIMIT = 10_000
OPEN_STATES = ("Open", "InProgress")


@dataclass
class OpsItem:
    id: str
    request: dict[str, Any]
    status: str = "Open"
    data: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def dedup(self) -> str | None:
        value = self.data.get("/aws/dedup", {}).get("Value")
        return str(json.loads(value).get("dedupString", "")).lower() if value else None


@dataclass
class OpsCenter:
    """An in-memory OpsCenter answering like the boto3 SSM client's OpsItem calls."""

    duplicate: Literal["existing", "error"] = "error"
    monthly_limit: int = MONTHLY_LIMIT
    items: dict[str, OpsItem] = field(default_factory=dict)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def create_ops_item(self, **params: Any) -> dict[str, Any]:
        self._valid("CreateOpsItem", params)
        data = dict(params.get("OperationalData", {}))
        dedup = OpsItem("", params, data=data).dedup
        existing = next((item for item in self.items.values()
                         if dedup is not None and item.dedup == dedup and item.status in OPEN_STATES), None)
        if existing is not None:
            if self.duplicate == "error":  # the modeled exception's member beside the error, as botocore parses it
                answer: Any = {"Error": {"Code": "OpsItemAlreadyExistsException",
                                         "Message": "The OpsItem already exists."}, "OpsItemId": existing.id}
                raise ClientError(answer, "CreateOpsItem")
            return {"OpsItemId": existing.id, "OpsItemArn": self._arn(existing.id)}
        if len(self.items) >= self.monthly_limit:
            raise ClientError({"Error": {"Code": "OpsItemLimitExceededException", "Message": "The request caused "
                                         "OpsItems to exceed one or more quotas."}}, "CreateOpsItem")
        identifier = "oi-" + hashlib.sha256(f"{len(self.items)}:{json.dumps(params, sort_keys=True)}".encode()
                                            ).hexdigest()[:12]
        self.items[identifier] = OpsItem(identifier, params, data=data)
        return {"OpsItemId": identifier, "OpsItemArn": self._arn(identifier)}

    def update_ops_item(self, **params: Any) -> dict[str, Any]:
        self._valid("UpdateOpsItem", params)
        item = self.items.get(params["OpsItemId"])
        if item is None:
            raise ClientError({"Error": {"Code": "OpsItemNotFoundException", "Message": "The specified OpsItem ID "
                                         "doesn't exist."}}, "UpdateOpsItem")
        item.status = params.get("Status", item.status)
        item.data.update(params.get("OperationalData", {}))
        return {}

    def open_items(self) -> list[OpsItem]:
        return [item for item in self.items.values() if item.status in OPEN_STATES]

    def _valid(self, operation: str, params: dict[str, Any]) -> None:
        self.calls.append((operation, params))
        validate_parameters(params, _model().operation_model(operation).input_shape)

    @staticmethod
    def _arn(identifier: str) -> str:
        return f"arn:aws:ssm:us-east-1:123456789012:opsitem/{identifier}"


_MODEL: list[Any] = []


def _model() -> Any:
    """SSM's service model, loaded once (botocore's own data, no network)."""
    if not _MODEL:
        _MODEL.append(botocore.session.get_session().get_service_model("ssm"))
    return _MODEL[0]
