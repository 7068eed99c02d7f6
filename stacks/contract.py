"""Names of the deployed workflow that offline/ and ops/ read too: imports nothing, so neither pulls in CDK."""

from __future__ import annotations

# The Succeed states of the construct's failure tail (stacks/fire_and_forget/asl/failure_tail.asl.json): an
# execution that ends in one did nothing, because another execution of the same SQS message (or, as the workflow
# decides, of the same work) owns it and alone decides its fate.
DUPLICATE_ENDS = frozenset({"DuplicateDeliveryIgnored", "DuplicateFailureIgnored"})

# The error of the two Fail states the failure tail ends in once HandleFailure recorded the message in the failure
# DLQ: FailureRecorded after NotifyFailure announced it, FailureRecordedForRetry when AnnounceUnlessRetried left it to
# the automatic redrive (each says which in its Cause). The failure rule ignores executions that fail with it: their
# failure is recorded, and announced by whoever records its final state.
HANDLED_FAILURE_ERROR = "FailureRecorded"
