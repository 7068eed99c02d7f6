"""The order example's saga as a construct Workflow on a scratch stack, its tasks inline functions: for the tests of
what the construct makes of the saga's definition (the modes, the longest run) without building the example's
dependencies layer."""

from __future__ import annotations

from fire_and_forget.construct import PipelineSettings, Workflow
from stacks.orders.stack import ASL_FILE, CLAIMS_DELIVERY, COMPENSATIONS, UNDO, left_out
from stacks.orders.tasks import TASKS
from tests.pipeline import minimal


def workflow() -> Workflow:
    scope = minimal.stack()
    return Workflow(title="Order saga", definition_file=ASL_FILE,
                    functions={spec.construct_id: minimal.function(scope, spec.construct_id) for spec in TASKS},
                    claims_delivery=CLAIMS_DELIVERY, compensations=COMPENSATIONS, undo=UNDO,
                    leave_out=left_out(PipelineSettings()))
