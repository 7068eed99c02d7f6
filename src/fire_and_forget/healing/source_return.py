"""The Redriver's second duty: the messages the pipe could not hand over, sent back from the source DLQ to the source
queue, paced below the StartExecution quota, a bounded number of times.

SQS moves a message to the source DLQ once the pipe's StartExecution failed for it maxReceiveCount times. A burst
over the account's StartExecution quota can put it there, if the pipe counts a throttled start against
maxReceiveCount (one of the two readings of
https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-error-troubleshooting.html); so can a failure that
lasts (the pipe's role, a deleted state machine). The queue does not say which. Each message is sent back as a copy
carrying the healing attributes (`ffRedriveAttempt` one more, `ffFirstMessageId` the caller's), as the automatic
redrive of the failure DLQ does, and from the same budget: at most HealingPolicy.max_attempts automatic attempts
in all. A message whose attempts are spent, or that SQS would refuse with the two attributes added
(HealingPolicy.resend_problem), stays in the source DLQ for a person (counted in SourceDlqNeedingAPerson, which the
SourceDlqNeedsAPerson alarm reads; runbook R2); so a
failure that lasts costs at most max_attempts rounds of maxReceiveCount receives before it is left there.

Pacing: the k-th message sent back in a run gets DelaySeconds k / `per_second` (SQS delays a message up to 900 s:
sqs-delay-queues.html, SendMessage's DelaySeconds), so the pipe receives them at `per_second` whatever the speed of
the run; a run sends at most `per_second` times the Redriver's period (the next run goes on) and at most MAX_PER_RUN.
Send, then delete, as every redrive here does: a crash in between leaves a copy sent twice, never none, and the
handlers' claims absorb the duplicate.

Imports the runtime and botocore only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from fire_and_forget.runtime.dlq import HeldMessages
from fire_and_forget.runtime.healing_policy import (
    ATTEMPT_ATTRIBUTE,
    FIRST_MESSAGE_ATTRIBUTE,
    HEALING_ATTRIBUTES,
    HealingPolicy,
    attempt_of,
    first_message_id,
)
from fire_and_forget.runtime.records import pipe_record

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef, MessageTypeDef

MAX_DELAY_SECONDS = 900  # SQS's longest DelaySeconds
MAX_PER_RUN = 1000  # what one run sends at most, well within the function's timeout


@dataclass
class ReturnReport:
    """What one run did with the source DLQ."""

    returned: int = 0  # sent back to the source queue (and deleted from the DLQ)
    spent: int = 0  # automatic attempts spent, or the message cannot be resent: left for a person
    later: int = 0  # over this run's budget: the next run sends it
    refused: int = 0  # SQS refused the send: left, the next run tries again
    sent: list[tuple[str, str]] = field(default_factory=list)  # (caller's message id, the copy's message id)


def run_budget(per_second: float, period_seconds: int) -> int:
    """How many messages one run sends back: a period's worth at `per_second`, delays within SQS's 900 s."""
    return max(1, min(MAX_PER_RUN, int(per_second * min(period_seconds, MAX_DELAY_SECONDS))))


def return_to_source(sqs: SQSClient, *, dlq_url: str, source_url: str, policy: HealingPolicy, per_second: float,
                     period_seconds: int, sent: Callable[[str, str], None] | None = None) -> ReturnReport:
    """Send the source DLQ's messages back to `source_url`, paced at `per_second`; `sent(caller's id, copy's id)` is
    told of each (the status link)."""
    report = ReturnReport()
    budget = run_budget(per_second, period_seconds)
    with HeldMessages(sqs, dlq_url, wait_seconds=0) as held:
        while report.returned < budget and (batch := held.receive()):
            for message in batch:
                record = pipe_record(message)
                attempt = attempt_of(record)
                if attempt >= policy.max_attempts or policy.resend_problem(record, attempt) is not None:
                    report.spent += 1
                    continue
                if report.returned >= budget:
                    report.later += 1
                    continue
                caller = first_message_id(record) or message["MessageId"]
                try:
                    copy = sqs.send_message(
                        QueueUrl=source_url, MessageBody=message["Body"],
                        MessageAttributes=_with_attempt(message, attempt + 1, caller),
                        DelaySeconds=min(MAX_DELAY_SECONDS, int(report.returned / per_second)))["MessageId"]
                except ClientError:
                    report.refused += 1
                    continue
                sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=held.receipt(message["MessageId"]))
                held.forget(message["MessageId"])
                report.returned += 1
                report.sent.append((caller, copy))
                if sent is not None:
                    with contextlib.suppress(ClientError):  # the link is a convenience; the copy is on its way
                        sent(caller, copy)
    return report


def _with_attempt(message: MessageTypeDef, attempt: int, caller: str) -> dict[str, MessageAttributeValueTypeDef]:
    """The message's own attributes, the healing attributes replaced by this attempt's."""
    attributes: dict[str, MessageAttributeValueTypeDef] = {}
    for name, value in (message.get("MessageAttributes") or {}).items():
        if name not in HEALING_ATTRIBUTES:  # the value only: SQS accepts no list values (sqs-message-metadata.html)
            kept: MessageAttributeValueTypeDef = {"DataType": value["DataType"]}
            if "BinaryValue" in value:
                kept["BinaryValue"] = value["BinaryValue"]
            else:
                kept["StringValue"] = value.get("StringValue", "")
            attributes[name] = kept
    attributes[ATTEMPT_ATTRIBUTE] = {"DataType": "Number", "StringValue": str(attempt)}
    attributes[FIRST_MESSAGE_ATTRIBUTE] = {"DataType": "String", "StringValue": caller}
    return attributes
