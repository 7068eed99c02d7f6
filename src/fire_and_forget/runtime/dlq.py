"""Reading a queue without losing or hiding its messages.

SQS has no "peek": reading a message means receiving it, which hides it for the visibility timeout. ff-ops
receives with a short timeout (30 s by default), keeps every message it read hidden only while the command runs
(so that the next receive returns the next messages, not the same ones again), and then makes every message it
still holds visible again at once with ChangeMessageVisibility 0 — also when the command fails or is interrupted.
If the process is killed outright, the messages reappear by themselves when the short timeout lapses. Receiving
raises a message's receive count, which is harmless here: the failure DLQ has no redrive policy of its own.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import ChangeMessageVisibilityBatchRequestEntryTypeDef, MessageTypeDef

DEFAULT_VISIBILITY_TIMEOUT = 30
# Long polling asks every SQS server, so an empty answer means an empty queue; short polling samples a few.
DEFAULT_WAIT_SECONDS = 1
# After this many receives that bring nothing new (held messages whose timeout lapsed), the queue is read.
_STALE_RECEIVES = 3


class HeldMessages:
    """Receives a queue's messages, holds them while the command works, then releases the ones not deleted."""

    def __init__(self, sqs: SQSClient, queue_url: str, *, visibility_timeout: int = DEFAULT_VISIBILITY_TIMEOUT,
                 wait_seconds: int | None = None) -> None:
        self._sqs = sqs
        self._url = queue_url
        self._visibility = visibility_timeout
        self._wait = DEFAULT_WAIT_SECONDS if wait_seconds is None else wait_seconds
        self._held: dict[str, str] = {}  # message id -> latest receipt handle
        self._seen: set[str] = set()
        self._stale = 0

    def __enter__(self) -> HeldMessages:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        try:
            self.release()
        except Exception:
            if error is None:
                raise
            # The original error matters more; the messages reappear when their short timeout lapses anyway.

    @property
    def queue_url(self) -> str:
        return self._url

    @property
    def read(self) -> int:
        return len(self._seen)

    def receive(self, max_messages: int = 10) -> list[MessageTypeDef]:
        """The next messages not read before; an empty list once the queue has nothing more to give."""
        while self._stale < _STALE_RECEIVES:
            messages = self._sqs.receive_message(
                QueueUrl=self._url,
                MaxNumberOfMessages=max(1, min(max_messages, 10)),
                VisibilityTimeout=self._visibility,
                WaitTimeSeconds=self._wait,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not messages:
                return []
            for message in messages:
                self._held[message["MessageId"]] = message["ReceiptHandle"]
            new = [m for m in messages if m["MessageId"] not in self._seen]
            self._seen.update(m["MessageId"] for m in new)
            if new:
                return new
            self._stale += 1
        return []

    def receipt(self, message_id: str) -> str:
        """The latest receipt handle (SQS deletes reliably only with the latest one)."""
        return self._held[message_id]

    def forget(self, message_id: str) -> None:
        """The message was deleted: nothing to release."""
        self._held.pop(message_id, None)

    def release(self) -> None:
        """Make every held message visible again now."""
        handles = list(self._held.items())
        for start in range(0, len(handles), 10):
            chunk = handles[start:start + 10]
            entries: list[ChangeMessageVisibilityBatchRequestEntryTypeDef] = [
                {"Id": str(i), "ReceiptHandle": receipt, "VisibilityTimeout": 0} for i, (_, receipt) in enumerate(chunk)
            ]
            # Failed entries are messages already visible again or deleted meanwhile: nothing to restore.
            self._sqs.change_message_visibility_batch(QueueUrl=self._url, Entries=entries)
            for message_id, _ in chunk:
                self._held.pop(message_id, None)
