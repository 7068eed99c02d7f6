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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moto.core.utils import unix_time_millis
from moto.sqs.models import Message, SQSBackend


def _visible(message: Message) -> bool:
    return bool(unix_time_millis() >= message.visible_at)


def install_sqs_on_the_clock() -> Callable[[], None]:
    """Replace moto's receive and visibility test; returns the function that puts moto's back."""
    original_receive = SQSBackend.receive_message
    original_visible = Message.visible

    def receive_message(self: SQSBackend, queue_name: str, count: int, wait_seconds_timeout: int,
                        visibility_timeout: int, message_attribute_names: list[str] | None = None) -> Any:
        return original_receive(self, queue_name, count, 0, visibility_timeout, message_attribute_names)

    SQSBackend.receive_message = receive_message  # type: ignore[method-assign]
    Message.visible = property(_visible)  # type: ignore[assignment,method-assign]

    def uninstall() -> None:
        SQSBackend.receive_message = original_receive  # type: ignore[method-assign]
        Message.visible = original_visible  # type: ignore[method-assign]

    return uninstall
