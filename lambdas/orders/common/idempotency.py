"""Powertools idempotency keyed by orderId + step + attemptId, persisted in DynamoDB."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyPersistenceLayerError,
)

from common import aws
from common.errors import TransientError, is_transient, transient_from
from common.settings import IdempotencySettings

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

# The key hashes all three. attemptId is the SQS messageId that started this saga attempt: after an attempt was
# compensated, an operator redrive arrives with a new messageId and must run the step again instead of getting the
# cached "reserved" answer for stock that has since been released. Retries inside one attempt share the key.
KEY_JMESPATH = "[orderId, step, attemptId]"


class StepKey(NamedTuple):
    order_id: str
    step: str
    attempt_id: str

    def as_payload(self) -> dict[str, str]:
        return {"orderId": self.order_id, "step": self.step, "attemptId": self.attempt_id}


@cache
def _config(expiry_seconds: int) -> IdempotencyConfig:
    # Powertools configures a persistence store once, from the first config it sees, so both are cached.
    return IdempotencyConfig(
        event_key_jmespath=KEY_JMESPATH,
        raise_on_no_idempotency_key=True,
        expires_after_seconds=expiry_seconds,
    )


@cache
def _store(table_name: str) -> DynamoDBPersistenceLayer:
    return DynamoDBPersistenceLayer(table_name=table_name, boto3_client=aws.dynamodb())


def reset() -> None:
    """Forget the cached store and config (tests switch emulated accounts between cases)."""
    _config.cache_clear()
    _store.cache_clear()


def run_once(
    key: StepKey,
    work: Callable[[], dict[str, Any]],
    *,
    settings: IdempotencySettings,
    context: LambdaContext,
) -> dict[str, Any]:
    """Run ``work`` once per key; a repeat gets the stored result back. Business errors are not stored."""
    config = _config(settings.expiry_seconds)
    # The remaining time bounds the INPROGRESS record: after a timeout the retry may run instead of waiting days.
    config.register_lambda_context(context)

    def step(key: dict[str, str]) -> dict[str, Any]:
        return work()

    once = idempotent_function(
        step, data_keyword_argument="key", config=config, persistence_store=_store(settings.table_name)
    )
    try:
        result: dict[str, Any] = once(key=key.as_payload())
    except IdempotencyAlreadyInProgressError as error:
        # Another invocation with this key is running (or died less than its timeout ago): try again later.
        raise TransientError(f"{key.step} for order {key.order_id} is already in progress; retry later") from error
    except IdempotencyPersistenceLayerError as error:
        cause = error.__cause__
        if cause is not None and is_transient(cause):
            raise transient_from(cause, "idempotency store") from error
        raise
    return result
