"""Faults in the AWS services the workflow itself calls: the failure DLQ (SQS) and the alerts topic (SNS)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.sns.models import SNSBackend
from moto.sqs.models import SQSBackend

from offline.faults import FaultKind, FaultPlan


class _Unavailable(JsonRESTError):
    def __init__(self, service: str) -> None:
        super().__init__("ServiceUnavailable", f"{service} is unavailable (injected)")
        self.code = 503


def install_service_faults(faults: FaultPlan, outputs: dict[str, str]) -> Callable[[], None]:
    """Patch SendMessage to the failure DLQ and Publish to the alerts topic; returns the undo function."""
    send_message = SQSBackend.send_message
    publish = SNSBackend.publish
    failure_dlq_name = outputs["FailureDlqUrl"].rsplit("/", 1)[1]
    topic_arn = outputs["AlertsTopicArn"]

    def faulty_send_message(self: SQSBackend, queue_name: str, message_body: str, *args: Any, **kwargs: Any) -> Any:
        if queue_name == failure_dlq_name and faults.take("FailureDlq", message_body) is FaultKind.UNAVAILABLE:
            raise _Unavailable("SQS")
        return send_message(self, queue_name, message_body, *args, **kwargs)

    def faulty_publish(self: SNSBackend, message: str, arn: str | None = None, *args: Any, **kwargs: Any) -> Any:
        if arn == topic_arn and faults.take("AlertsTopic", message) is FaultKind.UNAVAILABLE:
            raise _Unavailable("SNS")
        return publish(self, message, arn, *args, **kwargs)

    SQSBackend.send_message = faulty_send_message  # type: ignore[method-assign]
    SNSBackend.publish = faulty_publish  # type: ignore[method-assign]

    def undo() -> None:
        SQSBackend.send_message = send_message  # type: ignore[method-assign]
        SNSBackend.publish = publish  # type: ignore[method-assign]

    return undo
