"""The offline rehearsal: a synthesized app deployed into moto, run with its real handlers on one virtual clock,
with faults, the pattern's own accounting of where every message ended, and the cost model (docs/testing.md).

    from fire_and_forget.rehearsal import Rehearsal, account

The names below are the public API; the submodules are not. Needs the `rehearsal` extra.
"""

from fire_and_forget.rehearsal import cost
from fire_and_forget.rehearsal.accounting import Ledger, Place, account, advance_past_retries, caller_of
from fire_and_forget.rehearsal.assembly import STACK_NAME, CloudAssembly
from fire_and_forget.rehearsal.capacity import CapacityMeter, Units
from fire_and_forget.rehearsal.cost import (
    LAMBDA_BILLED_MS,
    PRICES,
    PRICES_READ_ON,
    REGION,
    Usage,
    add,
    per_million,
    usage_of_execution,
)
from fire_and_forget.rehearsal.deployment import ACCOUNT
from fire_and_forget.rehearsal.faults import Fault, FaultKind, FaultPlan
from fire_and_forget.rehearsal.lambda_runtime import Invocation
from fire_and_forget.rehearsal.load import LoadResult, Phase, send_at_rate, settle
from fire_and_forget.rehearsal.pipe import DuplicateTiming, ThrottleReading
from fire_and_forget.rehearsal.practice_gateway import Gateway
from fire_and_forget.rehearsal.quotas import (
    Concurrency,
    Quota,
    Slots,
    TokenBucket,
    lambda_concurrency_quota,
    partition_write_quota,
    start_execution_quota,
)
from fire_and_forget.rehearsal.rehearsal import MAX_IN_FLIGHT, Execution, Rehearsal

__all__ = [
    "ACCOUNT", "LAMBDA_BILLED_MS", "MAX_IN_FLIGHT", "PRICES", "PRICES_READ_ON", "REGION", "STACK_NAME",
    "CapacityMeter", "CloudAssembly", "Concurrency", "DuplicateTiming", "Execution", "Fault", "FaultKind",
    "FaultPlan", "Gateway", "Invocation", "Ledger", "LoadResult", "Phase", "Place", "Quota", "Rehearsal", "Slots",
    "ThrottleReading", "TokenBucket", "Units", "Usage", "account", "add", "advance_past_retries", "caller_of", "cost",
    "lambda_concurrency_quota", "partition_write_quota", "per_million", "send_at_rate", "settle",
    "start_execution_quota", "usage_of_execution",
]
