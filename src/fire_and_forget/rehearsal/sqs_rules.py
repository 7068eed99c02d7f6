"""SQS's documented message limits, enforced on moto's SendMessage path (moto counts characters and checks less).

What SQS documents and moto 5.2.5 does not enforce:
- a message's size is counted in bytes (UTF-8) and includes every message attribute's name, data type and value;
  it must not exceed the queue's MaximumMessageSize (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/
  SQSDeveloperGuide/sqs-message-metadata.html: "All components of a message attribute are included in the
  1 MiB message size restriction"; https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/
  API_SendMessage.html: MessageBody and MaximumMessageSize in bytes). moto compares the body's length in characters;
- a message has at most 10 message attributes (same metadata page: "Each message can have up to 10 attributes");
- an attribute's name, type and value must not be empty (same page); moto rejects only a missing value, so an empty
  StringValue, or a Binary attribute carrying a StringValue instead of a BinaryValue, passes there.
SendMessageBatch sends each entry through SendMessage in moto, so its entries are checked the same way.

And one rule of DeleteMessage: a receipt handle belongs to one receive, and a DeleteMessage with a handle older than
the message's most recent receive succeeds without deleting it. moto deletes the message with any handle it ever had.
The API reference words it two ways: "the request succeeds, but the message will not be deleted"
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_DeleteMessage.html) and, in older
copies of the same page and the SDK references built from it, "the request will still succeed, but the message might
not be deleted". `stale_receipt_handle_deletes` chooses the reading: False (the default) keeps the message, True
deletes it; a test that depends on the rule runs under both.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from moto.sqs.exceptions import InvalidParameterValue
from moto.sqs.models import Queue, SQSBackend

MAX_MESSAGE_ATTRIBUTES = 10
# The reading of DeleteMessage with an older receipt handle (the module's docstring): False keeps the message.
stale_receipt_handle_deletes = False


def message_size(body: str, attributes: dict[str, Any] | None) -> int:
    """The size SQS counts: the body's UTF-8 bytes plus each attribute's name, data type and value bytes."""
    size = len(body.encode("utf-8"))
    for name, value in (attributes or {}).items():
        size += len(name.encode("utf-8")) + len(str(value.get("DataType", "")).encode("utf-8"))
        size += len(_value_bytes(value))
    return size


def violation(body: str, attributes: dict[str, Any] | None, maximum_size: int) -> str | None:
    """Why SQS would refuse this SendMessage, or None when it would accept it."""
    attributes = attributes or {}
    if len(attributes) > MAX_MESSAGE_ATTRIBUTES:
        return (
            f"Number of message attributes [{len(attributes)}] exceeds the allowed maximum [{MAX_MESSAGE_ATTRIBUTES}]."
        )
    for name, value in attributes.items():
        data_type = str(value.get("DataType") or "")
        if not name or not data_type:
            return f"Message (user) attribute {name!r} must have a non-empty name and data type."
        if not _value_bytes(value):
            kind = "Binary" if data_type.startswith("Binary") else "String"
            return f"Message (user) attribute {name!r} must contain a non-empty value of type {kind!r}."
    size = message_size(body, attributes)
    if size > maximum_size:
        return (
            f"One or more parameters are invalid. Reason: Message must be shorter than {maximum_size} bytes "
            f"(it is {size} bytes, message attributes included)."
        )
    return None


def install_sqs_rules() -> Callable[[], None]:
    """Check every SendMessage against SQS's rules before moto takes it, and DeleteMessage's receipt handle; returns
    the undo function."""
    send_message = SQSBackend.send_message

    def checked_send_message(
        self: SQSBackend,
        queue_name: str,
        message_body: str,
        message_attributes: dict[str, Any] | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        queue = self.get_queue(queue_name)
        problem = violation(message_body, message_attributes, int(queue.maximum_message_size))  # type: ignore[attr-defined]
        if problem is not None:
            raise InvalidParameterValue(problem)
        return send_message(self, queue_name, message_body, message_attributes, *args, **kwargs)

    delete_message = Queue.delete_message

    def receipt_checked_delete_message(self: Queue, receipt_handle: str) -> None:
        message = next((m for m in self._messages if m.had_receipt_handle(receipt_handle)), None)
        if message is not None and message.receipt_handle != receipt_handle and not stale_receipt_handle_deletes:
            return  # an older receive's handle: the request succeeds, the message stays
        delete_message(self, receipt_handle)

    SQSBackend.send_message = checked_send_message  # type: ignore[method-assign]
    Queue.delete_message = receipt_checked_delete_message  # type: ignore[method-assign]

    def undo() -> None:
        SQSBackend.send_message = send_message  # type: ignore[method-assign]
        Queue.delete_message = delete_message  # type: ignore[method-assign]

    return undo


def _value_bytes(value: dict[str, Any]) -> bytes:
    """The attribute's value as SQS counts it: a Binary's decoded bytes (moto holds them base64), a string's UTF-8."""
    data_type = str(value.get("DataType") or "")
    if data_type.startswith("Binary"):
        binary = value.get("BinaryValue")
        if isinstance(binary, str):
            return base64.b64decode(binary)
        return bytes(binary or b"")
    text = value.get("StringValue")
    return text.encode("utf-8") if isinstance(text, str) else b""
