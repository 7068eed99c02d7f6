"""The entry point a party doing a workflow's work answers through: a Lambda function URL (AuthType AWS_IAM, so every
request is signed by an IAM principal allowed to call it), `POST /answers` with

    {"key": "job-42", "request": "9f3c...", "answer": "success", "output": {...}}
    {"key": "job-42", "request": "9f3c...", "answer": "failure", "error": "Rejected", "cause": "no capacity"}
    {"key": "job-42", "request": "9f3c...", "answer": "heartbeat"}

(`request` is the id the hand-over sent with the work) and the reply's status says what became of it: 200 delivered
or a repeat of a delivered answer, 404 unknown key, 409 answered before differently, 410 the wait is over or was
replaced by a newer hand-over of the same key, 422 a malformed answer or an error name the workflow does not
take, 503 try again (Step Functions or DynamoDB throttled). fire_and_forget/runtime/callbacks.py keeps the rules.
"""

from __future__ import annotations

import os
from functools import cache
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Literal

import boto3
from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import ServiceError
from aws_lambda_powertools.logging import Logger
from aws_lambda_powertools.metrics import Metrics, MetricUnit
from pydantic import BaseModel, ConfigDict, Field, model_validator

from fire_and_forget.runtime.callbacks import (
    MAX_CAUSE,
    MAX_ERROR,
    REQUEST_ID_LENGTH,
    Answer,
    AnswerKind,
    CallbackWaits,
    Verdict,
)
from fire_and_forget.runtime.errors import TransientError

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()
metrics = Metrics()
app = LambdaFunctionUrlResolver(enable_validation=True)

DELIVERED_METRIC = "CallbackAnswersDelivered"
REFUSED_METRIC = "CallbackAnswersRefused"  # unknown key, conflicting, too late, or an error name not taken
STATUS = {
    Verdict.DELIVERED: HTTPStatus.OK,
    Verdict.REPEATED: HTTPStatus.OK,
    Verdict.UNKNOWN: HTTPStatus.NOT_FOUND,
    Verdict.CONFLICT: HTTPStatus.CONFLICT,
    Verdict.CLOSED: HTTPStatus.GONE,
    Verdict.SUPERSEDED: HTTPStatus.GONE,
}
REFUSED = frozenset({Verdict.UNKNOWN, Verdict.CONFLICT, Verdict.CLOSED, Verdict.SUPERSEDED})


class AnswerBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str = Field(min_length=1, max_length=1024)
    request: str = Field(min_length=1, max_length=REQUEST_ID_LENGTH)
    answer: Literal["success", "failure", "heartbeat"]
    output: dict[str, Any] | None = None
    error: str | None = Field(default=None, min_length=1, max_length=MAX_ERROR)
    cause: str | None = Field(default=None, max_length=MAX_CAUSE)

    @model_validator(mode="after")
    def _fields_of_the_kind(self) -> AnswerBody:
        if self.answer == "failure" and self.error is None:
            raise ValueError("a failure names its error")
        if self.answer != "failure" and (self.error is not None or self.cause is not None):
            raise ValueError("only a failure has an error and a cause")
        if self.answer != "success" and self.output is not None:
            raise ValueError("only a success has an output")
        return self


@cache
def _waits() -> CallbackWaits:
    return CallbackWaits(boto3.client("dynamodb"), os.environ["CALLBACK_WAITS_TABLE_NAME"],
                         boto3.client("stepfunctions"))


def accepted_errors(environ: Any = os.environ) -> frozenset[str]:
    """The error names a failure may carry: those the workflow Catches on purpose. Anything else (TransientError,
    say, which the workflow would retry and the healing would redrive) is refused."""
    return frozenset(name for name in environ.get("ACCEPTED_ERRORS", "").split(",") if name)


@app.post("/answers")
def post_answer(body: AnswerBody) -> Response[dict[str, str]]:
    caller = app.current_event.request_context.authorizer.iam.user_arn if _signed(app.current_event) else None
    if body.error is not None and body.error not in accepted_errors():
        metrics.add_metric(name=REFUSED_METRIC, unit=MetricUnit.Count, value=1)
        logger.warning("answer refused: error name not taken", extra={"key": body.key, "error": body.error,
                                                                     "caller": caller})
        return _json(HTTPStatus.UNPROCESSABLE_ENTITY, {
            "verdict": "invalid", "key": body.key,
            "detail": f"error {body.error!r} is not one the workflow takes: {sorted(accepted_errors())}"})
    answer = Answer(key=body.key, request=body.request, kind=AnswerKind(body.answer), output=body.output,
                    error=body.error, cause=body.cause)
    try:
        reply = _waits().answer(answer)
    except TransientError as error:
        logger.warning("answer not delivered yet", extra={"key": body.key, "reason": str(error)})
        raise ServiceError(HTTPStatus.SERVICE_UNAVAILABLE, f"try again: {error}") from error
    metrics.add_metric(name=REFUSED_METRIC if reply.verdict in REFUSED else DELIVERED_METRIC,
                       unit=MetricUnit.Count, value=1)
    log = logger.warning if reply.verdict in REFUSED else logger.info
    log("answer " + reply.verdict.value, extra={**reply.as_dict(), "answer": body.answer, "caller": caller})
    return _json(STATUS[reply.verdict], reply.as_dict())


def _signed(event: Any) -> bool:
    try:
        return event.request_context.authorizer.iam is not None
    except (AttributeError, KeyError, TypeError):
        return False


def _json(status: HTTPStatus, body: dict[str, str]) -> Response[dict[str, str]]:
    return Response(status_code=int(status), content_type=content_types.APPLICATION_JSON, body=body)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
