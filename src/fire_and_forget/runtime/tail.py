"""The failure tail's state names and the errors they end in: what the construct appends to every workflow
(fire_and_forget/construct/asl/failure_tail.asl.json), and what the Reconciler, ff-ops and the rehearsal read in an
execution's history. One enumeration, so that no part spells a state on its own."""

from __future__ import annotations

from enum import StrEnum


class TailState(StrEnum):
    """The states of the failure tail, as an execution enters them."""

    # The entry every Catch path of the workflow ends in: claims the message's outcome as a failure.
    CLAIM_FAILURE = "ClaimFailure"
    # Keeps the failed message, with its error, in the failure DLQ.
    HANDLE_FAILURE = "HandleFailure"
    # Announce now, or leave it to the automatic redrive (the healing policy, as a Choice).
    ANNOUNCE_UNLESS_RETRIED = "AnnounceUnlessRetried"
    FORMAT_FAILURE_ALERT = "FormatFailureAlert"
    # Publishes the announcement on the alerts topic.
    NOTIFY_FAILURE = "NotifyFailure"
    # The two Fail states, both with the error HANDLED_FAILURE_ERROR; each says in its Cause which it is.
    FAILURE_RECORDED = "FailureRecorded"  # recorded and announced
    FAILURE_RECORDED_FOR_RETRY = "FailureRecordedForRetry"  # recorded; the automatic redrive will retry it
    # The Succeed states: another execution of the same message (or, as the workflow decides, of the same work)
    # owns it and alone decides its fate.
    DUPLICATE_DELIVERY_IGNORED = "DuplicateDeliveryIgnored"
    DUPLICATE_FAILURE_IGNORED = "DuplicateFailureIgnored"


# The tail's Task states: a failure there is the DLQ, the topic or the deliveries table refusing.
TAIL_TASK_STATES = frozenset({TailState.CLAIM_FAILURE, TailState.HANDLE_FAILURE, TailState.NOTIFY_FAILURE})
DUPLICATE_ENDS = frozenset({TailState.DUPLICATE_DELIVERY_IGNORED, TailState.DUPLICATE_FAILURE_IGNORED})
# The REQUEST_RESPONSE tail's ends of an execution that found the message's claim held
# (fire_and_forget/construct/asl/returned_tail.asl.json): a duplicate of a completed delivery, or one returned to the
# queue while its owner has not completed it.
DUPLICATE_OF_COMPLETED_DELIVERY = "DuplicateOfCompletedDelivery"  # succeeds: the pipe deletes this receive
DUPLICATE_RETURNED_TO_QUEUE = "DuplicateReturnedToQueue"  # fails: the message stays for its owner's result
RETURNED_DUPLICATE_ENDS = frozenset({DUPLICATE_OF_COMPLETED_DELIVERY, DUPLICATE_RETURNED_TO_QUEUE})

# The error both Fail states end in once HandleFailure recorded the message in the failure DLQ. The failure rule
# ignores executions that fail with it: their failure is recorded, and announced by whoever records its final state.
HANDLED_FAILURE_ERROR = "FailureRecorded"
# The error the entry task raises for a message another execution already claimed (fire_and_forget.runtime.errors).
DUPLICATE_DELIVERY_ERROR = "DuplicateDelivery"
