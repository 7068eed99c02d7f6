"""The queue callers fire messages into, and the DLQ for messages the pipe could not hand over."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from fire_and_forget.construct.defaults import dead_letter_queue, encrypted_queue
from fire_and_forget.construct.settings import SOURCE_QUEUE_RETENTION_DAYS, PipelineSettings

# Why these numbers: docs/design.md, "Source queue: sizes, visibility timeout, duplicates"; the visibility timeout is
# the mode's (request_response.visibility_timeout_seconds).
MAX_MESSAGE_SIZE_BYTES = 64 * 1024


class SourceQueue(Construct):
    """Encrypted, TLS-only source queue whose redrive policy catches messages the pipe fails to start."""

    def __init__(self, scope: Construct, construct_id: str, *, key: kms.IKey, settings: PipelineSettings,
                 visibility_timeout_seconds: int) -> None:
        super().__init__(scope, construct_id)
        self.visibility_timeout_seconds = visibility_timeout_seconds
        self.max_message_size_bytes = MAX_MESSAGE_SIZE_BYTES
        self.dead_letter_queue = dead_letter_queue(self, "SourceDlq", key=key, settings=settings)
        self.queue = encrypted_queue(
            self,
            "Queue",
            key=key,
            settings=settings,
            visibility_timeout=Duration.seconds(visibility_timeout_seconds),
            max_message_size_bytes=self.max_message_size_bytes,
            retention_period=Duration.days(SOURCE_QUEUE_RETENTION_DAYS),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=settings.max_receive_count
            ),
        )
