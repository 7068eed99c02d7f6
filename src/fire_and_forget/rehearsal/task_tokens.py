"""Step Functions' task tokens as AWS keeps them, where moto's interpreter differs: a token answers once.

A `.waitForTaskToken` Task closes when it gets its answer, times out (TimeoutSeconds, HeartbeatSeconds) or its
execution ends; from then on SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat with its token fail with
TaskTimedOut ("the task token has either expired or the task associated with the token has already been closed",
API_SendTaskSuccess.html, Errors). moto 5.2.5's interpreter keeps a closed task's endpoint in its pool and takes a
second answer in silence while the execution runs. Here the endpoint is marked closed when its task ends
(CallbackEndpoint.interrupt_all, which the interpreter calls in every case), and a later answer fails with
TaskTimedOut, as in AWS. An answer for a token of an execution that has ended fails with moto's own InvalidToken:
the entry point treats the three error codes alike (fire_and_forget/runtime/callbacks.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moto.stepfunctions.parser.api import TaskTimedOut
from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackEndpoint, CallbackPoolManager

_CLOSED = "_rehearsal_closed"


def install() -> Callable[[], None]:
    """Patch the interpreter's endpoints and pool; returns the function that puts moto's back."""
    interrupt_all = CallbackEndpoint.interrupt_all
    notify = CallbackPoolManager.notify
    heartbeat = CallbackPoolManager.heartbeat

    def closing_interrupt_all(endpoint: CallbackEndpoint) -> None:
        setattr(endpoint, _CLOSED, True)
        interrupt_all(endpoint)

    def refuse_closed(pool: CallbackPoolManager, callback_id: str) -> None:
        endpoint = pool.get(callback_id)
        if endpoint is not None and getattr(endpoint, _CLOSED, False):
            raise TaskTimedOut("Task Timed Out: the task token has either expired or the task associated with the "
                               "token has already been closed")

    def notify_once(pool: CallbackPoolManager, callback_id: str, outcome: Any) -> bool:
        refuse_closed(pool, callback_id)
        return notify(pool, callback_id, outcome)

    def heartbeat_open(pool: CallbackPoolManager, callback_id: str) -> bool:
        refuse_closed(pool, callback_id)
        return heartbeat(pool, callback_id)

    CallbackEndpoint.interrupt_all = closing_interrupt_all  # type: ignore[method-assign,assignment]
    CallbackPoolManager.notify = notify_once  # type: ignore[method-assign,assignment]
    CallbackPoolManager.heartbeat = heartbeat_open  # type: ignore[method-assign,assignment]

    def uninstall() -> None:
        CallbackEndpoint.interrupt_all = interrupt_all  # type: ignore[method-assign]
        CallbackPoolManager.notify = notify  # type: ignore[method-assign]
        CallbackPoolManager.heartbeat = heartbeat  # type: ignore[method-assign]

    return uninstall
