"""Names of the deployed workflow that offline/ and ops/ read too: imports nothing, so neither pulls in CDK."""

from __future__ import annotations

# The Succeed states of statemachines/order_saga.asl.json: an execution that ends in one did nothing, because
# another execution of the same SQS message (or of the same order) owns it and alone decides its fate.
DUPLICATE_ENDS = frozenset({"DuplicateDeliveryIgnored", "DuplicateFailureIgnored"})
