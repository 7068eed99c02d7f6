"""moto's SQS on the rehearsal's frozen clock: long polls answered at once, a visibility timeout that has elapsed
(0 included) makes the message visible at that very moment.

- SQS answers a long poll as soon as a message is available, or with nothing once WaitTimeSeconds have passed
  (sqs-short-and-long-polling.html). moto waits by reading the wall clock in a loop; on the rehearsal's virtual
  clock (fire_and_forget/rehearsal/clock.py) no time passes while the caller waits, so that loop would never end. The
  wait is
  answered at once instead: what is receivable now is returned, and an empty queue answers empty, which is what
  the poll's end would answer too, since nothing becomes visible while the clock stands still.
- A message is invisible for its visibility timeout and receivable again when it has elapsed; ChangeMessageVisibility
  with 0 makes it "immediately visible" (sqs-visibility-timeout.html). moto tests `now > visible_at`, which on a
  clock that stands still keeps a message released with 0 invisible until the clock moves: here it is `>=`.
- ChangeMessageVisibility may not extend a message's "total visibility timeout" past 12 hours
  (APIReference/API_ChangeMessageVisibility.html): the total of one receive, counted from that receive (the page's
  example: received with 30 minutes, extended by 2 hours, the most left is 9 hours 30 minutes). moto counts the 12
  hours from when the message was sent, so it refuses every change to a message older than 12 hours, a release
  with 0 included: a failure DLQ's record the Redriver reads and releases every few minutes then stays invisible
  for its visibility timeout after each read, which a real queue does not do. Here the 12 hours count from the
  message's latest receive.

Three economies, with the same answers. `receivable` tells the rehearsal's pollers (the pipe, the event source
mappings) from moto's own records that a queue holds nothing to receive, so a quiet round (hundreds of them in a
rehearsal that runs for days of its clock) asks no ReceiveMessage that would answer empty. And moto tests each
message it receives against the queue's retention period by computing every attribute of the queue (each count
walks every message), once per message received; the retention period is read from the queue itself here. And moto's
views of a queue (the receivable messages, the counts of delayed and invisible ones) read the clock once per message,
a patched clock at that, and SendMessage computes all of them: here each view reads it once, so that firing hundreds
of messages into a queue no longer costs a clock reading per message already there, per message sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from moto.core.utils import unix_time, unix_time_millis
from moto.sqs.exceptions import InvalidParameterValue, ReceiptHandleIsInvalid
from moto.sqs.models import Message, Queue, SQSBackend, sqs_backends


def _visible(message: Message) -> bool:
    return bool(unix_time_millis() >= message.visible_at)


def _receivable(queue: Queue) -> list[Message]:
    now = unix_time_millis()
    return [message for message in queue._messages if now >= message.visible_at and now >= message.delayed_until]


def _delayed_count(queue: Queue) -> int:
    now = unix_time_millis()
    return sum(1 for message in queue._messages if now < message.delayed_until)


def _invisible_count(queue: Queue) -> int:
    now = unix_time_millis()
    return sum(1 for message in queue._messages if now < message.visible_at)


# moto's Queue properties -> what answers them on the clock (each reads it once).
_QUEUE_VIEWS = {"messages": _receivable, "approximate_number_of_messages_delayed": _delayed_count,
                "approximate_number_of_messages_not_visible": _invisible_count}


def _retained(self: SQSBackend, queue_name: str, message: Message) -> bool:
    # moto's test, without computing the queue's other attributes: kept until sent + MessageRetentionPeriod.
    retention_period = int(self.get_queue(queue_name).message_retention_period)  # type: ignore[attr-defined]
    return bool(retention_period + int(message.sent_timestamp or 0) / 1000 > unix_time())


MAXIMUM_TOTAL_VISIBILITY_MS = 43_200_000  # 12 hours of one receive


def _mark_received(original: Callable[..., None]) -> Callable[..., None]:
    def mark_received(self: Message, visibility_timeout: int | None = None) -> None:
        self.ff_received_at = unix_time_millis()  # type: ignore[attr-defined]
        original(self, visibility_timeout)

    return mark_received


def _change_message_visibility(self: SQSBackend, queue_name: str, receipt_handle: str,
                               visibility_timeout: int) -> None:
    """moto's ChangeMessageVisibility, the 12-hour limit counted from the message's latest receive."""
    queue = self.get_queue(queue_name)
    message = next((m for m in queue._messages if m.had_receipt_handle(receipt_handle)), None)
    if message is None:
        raise ReceiptHandleIsInvalid
    received_at = float(getattr(message, "ff_received_at", message.sent_timestamp or 0))
    if unix_time_millis() + int(visibility_timeout) * 1000 - received_at > MAXIMUM_TOTAL_VISIBILITY_MS:
        raise InvalidParameterValue(f"Value {visibility_timeout} for parameter VisibilityTimeout is invalid. Reason: "
                                    "Total VisibilityTimeout for the message is beyond the limit [43200 seconds]")
    message.change_visibility(int(visibility_timeout))
    if message.visible and message in queue.pending_messages:
        queue.pending_messages.remove(message)


def install_sqs_on_the_clock() -> Callable[[], None]:
    """Replace moto's receive, visibility, visibility change and retention tests; returns the function that puts
    moto's back."""
    original_receive = SQSBackend.receive_message
    original_visible = Message.visible
    original_retained = SQSBackend.is_message_valid_based_on_retention_period
    original_mark_received = Message.mark_received
    original_change = SQSBackend.change_message_visibility

    def receive_message(self: SQSBackend, queue_name: str, count: int, wait_seconds_timeout: int,
                        visibility_timeout: int, message_attribute_names: list[str] | None = None) -> Any:
        return original_receive(self, queue_name, count, 0, visibility_timeout, message_attribute_names)

    original_views = {name: vars(Queue)[name] for name in _QUEUE_VIEWS}

    SQSBackend.receive_message = receive_message  # type: ignore[method-assign]
    Message.visible = property(_visible)  # type: ignore[assignment,method-assign]
    SQSBackend.is_message_valid_based_on_retention_period = _retained  # type: ignore[method-assign]
    Message.mark_received = _mark_received(original_mark_received)  # type: ignore[method-assign]
    SQSBackend.change_message_visibility = _change_message_visibility  # type: ignore[method-assign]
    for name, view in _QUEUE_VIEWS.items():
        setattr(Queue, name, property(view))

    def uninstall() -> None:
        SQSBackend.receive_message = original_receive  # type: ignore[method-assign]
        Message.visible = original_visible  # type: ignore[method-assign]
        SQSBackend.is_message_valid_based_on_retention_period = original_retained  # type: ignore[method-assign]
        Message.mark_received = original_mark_received  # type: ignore[method-assign]
        SQSBackend.change_message_visibility = original_change  # type: ignore[method-assign]
        for name, view in original_views.items():
            setattr(Queue, name, view)

    return uninstall


def receivable(queue_url: str) -> bool:
    """True when a ReceiveMessage on this queue now could return a message: one is visible and not delayed (what
    moto's receive draws from)."""
    now = unix_time_millis()
    return any(now >= message.visible_at and now >= message.delayed_until for message in _queue(queue_url)._messages)


def queue_arn(queue_url: str) -> str:
    """The queue's ARN as moto recorded it (what GetQueueAttributes answers for QueueArn)."""
    return str(_queue(queue_url).queue_arn)


def _queue(queue_url: str) -> Any:
    """moto's queue behind a queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>)."""
    host, account, name = queue_url.split("/")[-3:]
    return sqs_backends[account][host.split(".")[1]].get_queue(name)


def next_visible(queue_urls: Iterable[str]) -> datetime | None:
    """The earliest moment at which a message now invisible or delayed (DelaySeconds) in one of these queues can be
    received."""
    now = unix_time_millis()
    moments = [max(message.visible_at, message.delayed_until) for url in queue_urls
               for message in _queue(url)._messages
               if now < message.visible_at or now < message.delayed_until]  # milliseconds
    return datetime.fromtimestamp(min(moments) / 1000, UTC) if moments else None


def held_copy(queue_url: str, message_id: str) -> Callable[[], None]:
    """What a server holding a copy of a message keeps when a DeleteMessage misses it (standard queues deliver at
    least once, standard-queues-at-least-once-delivery.html): call the result after the delete, and the message is
    in the queue again, receivable at once, with its messageId, receive count and enqueue time."""
    queue = _queue(queue_url)
    message = next(m for m in queue._messages if m.id == message_id)

    def restore() -> None:
        message.visible_at = 0.0
        queue._messages.append(message)

    return restore
