"""Lambda's asynchronous invocation as the rehearsal needs it: retries of function errors, then the on-failure target.

EventBridge Scheduler invokes a Lambda target asynchronously
(https://docs.aws.amazon.com/lambda/latest/dg/with-eventbridge-scheduler.html). Once Lambda has accepted the event,
a function error (the code's exception, or the runtime's, e.g. a timeout) is Lambda's to retry, not the
scheduler's: by default two more attempts, or the function's AWS::Lambda::EventInvokeConfig MaximumRetryAttempts
(0-2); an event that fails every attempt goes to the on-failure destination, else the function's dead-letter queue,
else it is discarded (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html,
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html). The waits between attempts
(one, then two minutes) are compressed to nothing. Only an Invoke call that fails itself (throttled or a 5xx
before Lambda queued the event) is reported back to the caller, whose retry policy then applies.
The emulator runs the attempts synchronously through the rehearsal's Lambda, so the caller sees their outcome.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

EVENT_INVOKE_CONFIG = "AWS::Lambda::EventInvokeConfig"
DEFAULT_RETRY_ATTEMPTS = 2


@dataclass(frozen=True)
class AsyncPolicy:
    """A function's asynchronous-invocation settings: retries of function errors and where a failed event goes."""

    retry_attempts: int = DEFAULT_RETRY_ATTEMPTS
    on_failure_queue_url: str | None = None  # an SQS on-failure destination or dead-letter queue


@dataclass
class AsyncOutcome:
    """What became of one accepted event: how many attempts ran, whether one succeeded, where a failure went."""

    attempts: int = 0
    succeeded: bool = False
    errors: list[str] = field(default_factory=list)  # errorType of each failed attempt
    sent_to: str | None = None  # the queue URL the failed event was sent to; None when discarded or succeeded


class AsyncLambda:
    """Runs asynchronous invocations: `invoke` raises ClientError only when the Invoke call itself fails."""

    def __init__(self, lambda_client: Any, sqs: Any, policies: dict[str, AsyncPolicy]) -> None:
        self._lambda = lambda_client
        self._sqs = sqs
        self._policies = policies  # function name -> its policy (absent: Lambda's defaults)

    def invoke(self, function: str, payload: str) -> AsyncOutcome:
        """Invoke `function` (a name or an ARN) asynchronously with `payload`."""
        policy = self._policies.get(function.rsplit(":function:", 1)[-1], AsyncPolicy())
        outcome = AsyncOutcome()
        for attempt in range(1 + policy.retry_attempts):
            try:
                response = self._lambda.invoke(
                    FunctionName=function, InvocationType="RequestResponse", Payload=payload.encode("utf-8")
                )
            except ClientError:
                if attempt == 0:
                    raise  # the event was never accepted: the caller's retry policy decides
                # Lambda keeps retrying throttles and 5xx of its own queue for up to 6 hours: compressed, one more go.
                continue
            outcome.attempts += 1
            body = response["Payload"].read()
            if not response.get("FunctionError"):
                outcome.succeeded = True
                return outcome
            outcome.errors.append(str(json.loads(body or b"{}").get("errorType", "Unhandled")))
        if policy.on_failure_queue_url is not None:
            self._sqs.send_message(
                QueueUrl=policy.on_failure_queue_url,
                MessageBody=json.dumps(
                    {
                        "version": "1.0",
                        "requestContext": {
                            "functionArn": function,
                            "condition": "RetriesExhausted",
                            "approximateInvokeCount": outcome.attempts,
                        },
                        "requestPayload": json.loads(payload) if payload else None,
                        "responseContext": {"functionError": "Unhandled"},
                    }
                ),
            )
            outcome.sent_to = policy.on_failure_queue_url
        return outcome


def read_policies(assembly: Any, stack: Any, queue_urls: dict[str, str]) -> dict[str, AsyncPolicy]:
    """Function name -> its asynchronous-invocation policy, from EventInvokeConfig and the function's
    DeadLetterConfig (an on-failure destination that is not an SQS queue is not emulated: the event is dropped)."""
    policies: dict[str, AsyncPolicy] = {}
    for logical_id, resource in assembly.resources_of_type("AWS::Lambda::Function").items():
        dlq_arn = resource["Properties"].get("DeadLetterConfig", {}).get("TargetArn")
        if dlq_arn is not None and logical_id in stack.physical_ids:
            dlq_url = queue_urls.get(stack.resolve(dlq_arn))
            policies[stack.physical_ids[logical_id]] = AsyncPolicy(on_failure_queue_url=dlq_url)
    for resource in assembly.resources_of_type(EVENT_INVOKE_CONFIG).values():
        props = resource["Properties"]
        name = str(stack.resolve(props["FunctionName"])).rsplit(":function:", 1)[-1]
        destination = props.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
        queue_url = queue_urls.get(stack.resolve(destination)) if destination is not None else None
        fallback = policies.get(name, AsyncPolicy())
        policies[name] = AsyncPolicy(
            retry_attempts=int(props.get("MaximumRetryAttempts", DEFAULT_RETRY_ATTEMPTS)),
            on_failure_queue_url=queue_url or fallback.on_failure_queue_url,
        )
    return policies
