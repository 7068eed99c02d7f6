"""The edges of a step done by someone else (fire_and_forget.construct.callbacks): the answerer's signed request to the
entry point's function URL, the entry point's SendTask* calls, the hand-over task's token and request, and the
answerer reading the requests."""

from __future__ import annotations

from dataclasses import replace

from tests.permissions.architecture import lambda_policy
from tests.permissions.checks import SQS_SEND_KEY, TLS, Check, kms_via
from tests.permissions.resolver import arn
from tests.permissions.shapes import CheckShapes

ENTRY_POINT = "CarrierAnswersEntryPointFunction"
HAND_OVER = "SagaTasksBookCarrierFunction"
ENTRY_POINT_TABLE_CALLS = ("dynamodb:GetItem", "dynamodb:UpdateItem")
HAND_OVER_TABLE_CALLS = ("dynamodb:PutItem",)
ANSWERS = ("states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat")
# What the answerer's own account lets it do: everything; only our policies bound it.
ANSWERER_IDENTITY = ({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]},)
URL_CONTEXT = {"lambda:FunctionUrlAuthType": "AWS_IAM"}
THIRD_ACCOUNT = "111122223333"  # neither this account nor the answerer's


class CallbackEdges(CheckShapes):
    """Mixed into MatrixBuilder: `callbacks()` adds every edge below, for each function URL of the template."""

    def callback_table_calls(self, function: str) -> tuple[str, ...] | None:
        for prefix, calls in ((ENTRY_POINT, ENTRY_POINT_TABLE_CALLS), (HAND_OVER, HAND_OVER_TABLE_CALLS)):
            if function.startswith(prefix):
                return calls
        return None

    def callbacks(self) -> None:
        for url, res in self.a.of_type("AWS::Lambda::Url").items():
            function = self.a.lid(res["Properties"]["TargetFunctionArn"])
            self.a.covered.add(("function-url", url))
            self._answerers(url, function)
            self._answers(function)
        for function in self.a.of_type("AWS::Lambda::Function"):
            if function.startswith(HAND_OVER):
                self._hand_over(function)

    def _answerers(self, url: str, function: str) -> None:
        policy = lambda_policy(self.a, function)
        function_arn = self.a.att(function)
        answerers = sorted({s["Principal"]["AWS"] for s in (policy or {}).get("Statement", [])
                            if "AWS" in s["Principal"] and s["Action"] == "lambda:InvokeFunctionUrl"})
        for answerer in answerers:
            edge = f"{answerer} answers through {url}"
            base = Check(edge, answerer, "lambda:InvokeFunctionUrl", function_arn, True,
                         "the answerer the deployment names", dict(TLS) | URL_CONTEXT, ANSWERER_IDENTITY, policy)
            self._add(base)
            # The dual authorization Lambda requires for a URL (urls-auth.html): InvokeFunction, through the URL only.
            self._add(replace(base, action="lambda:InvokeFunction", why="the URL's own invocation",
                              context=dict(TLS) | {"lambda:InvokedViaFunctionUrl": "true"}))
            self._add(replace(base, action="lambda:InvokeFunction", allowed=False,
                              why="invoking the function past its URL", context=dict(TLS)))
            self._add(replace(base, allowed=False, why="a URL without IAM auth",
                              context=dict(TLS) | {"lambda:FunctionUrlAuthType": "NONE"}))
            self._add(replace(base, principal=f"arn:aws:iam::{THIRD_ACCOUNT}:role/someone-else",
                              allowed=False, why="a principal the deployment does not name"))
            self._requests(answerer)

    def _requests(self, answerer: str) -> None:
        """The answerer reads the requests from the queue the hand-over task sends them to, and nothing else."""
        for function in self.a.of_type("AWS::Lambda::Function"):
            if not function.startswith(HAND_OVER):
                continue
            queue = self.a.lid(self.a.props(function)["Environment"]["Variables"]["CARRIER_REQUESTS_QUEUE_URL"])
            edge = f"{answerer} reads {queue}"
            policy = self.a.resource_policy(queue)
            for action in ("sqs:ReceiveMessage", "sqs:DeleteMessage"):
                self._add(Check(edge, answerer, action, self.a.att(queue), True, "the answerer's inbox", dict(TLS),
                                ANSWERER_IDENTITY, policy))
            key = self.a.key_of(queue)
            assert key is not None
            self._add(Check(edge, answerer, "kms:Decrypt", self.a.att(key), True, "the inbox is encrypted",
                            dict(TLS) | kms_via("sqs"), ANSWERER_IDENTITY, self.a.resource_policy(key)))
            for other in self.a.of_type("AWS::SQS::Queue"):
                if other != queue:
                    self._add(Check(edge, answerer, "sqs:ReceiveMessage", self.a.att(other), False,
                                    "a queue that is not its inbox", dict(TLS), ANSWERER_IDENTITY,
                                    self.a.resource_policy(other)))

    def _answers(self, function: str) -> None:
        """SendTask* take no resource-level permission (list_awsstepfunctions.html: no resource types, so "*"): the
        entry point may answer, and only answer; which tokens it answers is bounded by its waits table."""
        role = self.a.lid(self.a.props(function)["Role"])
        edge = f"entry point {function} answers waiting tasks"
        for action in ANSWERS:
            self.role_call(edge, role, action, None, "*", negatives=False)
        for machine in self.a.of_type("AWS::StepFunctions::StateMachine"):
            machine_arn = self.a.att(machine, "Ref")
            execution = machine_arn.replace(":stateMachine:", ":execution:") + ":exec-1"
            self.denied(edge, role, "states:StartExecution", machine_arn, "the entry point only answers")
            self.denied(edge, role, "states:StopExecution", execution, "the entry point only answers")
            # An answer whose sending had no clear outcome is judged by the history of the execution that waits.
            self.role_call(f"entry point {function} reads the history of {machine}'s executions", role,
                           "states:GetExecutionHistory", None, execution)
        self.denied(edge, role, "states:GetExecutionHistory", arn("states", "execution:AnotherStateMachine:exec-1"),
                    "another state machine's executions")

    def _hand_over(self, function: str) -> None:
        role = self.a.lid(self.a.props(function)["Role"])
        queue = self.a.lid(self.a.props(function)["Environment"]["Variables"]["CARRIER_REQUESTS_QUEUE_URL"])
        edge = f"hand-over {function} sends the request to {queue}"
        self.role_call(edge, role, "sqs:SendMessage", queue, self.a.att(queue), key_actions=SQS_SEND_KEY, via="sqs")
        for other in self.a.of_type("AWS::SQS::Queue"):
            if other != queue:
                self.denied(edge, role, "sqs:SendMessage", self.a.att(other), "a queue it does not hand work to",
                            other)
