"""A local AWS endpoint for the practice account: HTTP on 127.0.0.1, answered by the rehearsal's own moto backends.

The rehearsal runs moto in-process (mock_aws), with the real handlers, the pipe emulator and the status-change events
living in this process. The gateway lets another process (an operator's `ff-ops`, pointed at it with
AWS_ENDPOINT_URL) reach those same backends: it reads the service and region from each request's SigV4 credential
scope, rewrites the URL to that service's AWS host, and hands the request to moto's own request dispatcher (the one
mock_aws routes boto3 calls through). moto's ThreadedMotoServer would do the same but needs Flask (moto[server]),
which the locked environment does not hold.

Two calls moto 5.2.5 does not implement are answered here:
- SQS StartMessageMoveTask / ListMessageMoveTasks: emulated (every message moved at once, body and attributes kept,
  then the task is COMPLETED), so that runbook R2 (`ff-ops source-dlq redrive`) can be practised;
- Step Functions RedriveExecution: refused with the error `PracticeAccountUnsupported`, whose message says what AWS
  would do and what to do here instead (runbook R3, its last step).
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from botocore.awsrequest import AWSPreparedRequest
from botocore.compat import HTTPHeaders

_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/([a-z0-9-]+)/([a-z0-9-]+)/aws4_request")
REDRIVE_UNSUPPORTED = (
    "the practice account (moto 5.2.5) has no RedriveExecution. On AWS this execution would continue from its "
    "unsuccessful state with the same input and ARN. Here, send its input's [0].body to the source queue instead "
    "(docs/runbook.md, R3, last step)."
)


class MoveTasks:
    """SQS message move tasks, emulated with the rehearsal's in-process SQS client."""

    def __init__(self, sqs: Any) -> None:
        self._sqs = sqs
        self._tasks: dict[str, list[dict[str, Any]]] = {}  # source ARN -> tasks, latest first
        self._lock = threading.Lock()

    def start(self, request: dict[str, Any]) -> dict[str, Any]:
        source, destination = request["SourceArn"], request.get("DestinationArn")
        if destination is None:
            raise ValueError("the practice account needs DestinationArn (ff-ops always passes it)")
        with self._lock:
            moved = self._move(_url(source), _url(destination))
            handle = uuid.uuid4().hex
            task = {
                "TaskHandle": handle,
                "Status": "COMPLETED",
                "SourceArn": source,
                "DestinationArn": destination,
                "ApproximateNumberOfMessagesMoved": moved,
                "ApproximateNumberOfMessagesToMove": moved,
                "StartedTimestamp": int(time.time() * 1000),
            }
            self._tasks.setdefault(source, []).insert(0, task)
        return {"TaskHandle": handle}

    def list(self, request: dict[str, Any]) -> dict[str, Any]:
        tasks = self._tasks.get(request["SourceArn"], [])[: int(request.get("MaxResults", 1))]
        # A finished task has no handle any more (SQS returns one only while it runs).
        return {"Results": [{k: v for k, v in task.items() if k != "TaskHandle"} for task in tasks]}

    def _move(self, source_url: str, destination_url: str) -> int:
        moved = 0
        while True:
            batch = self._sqs.receive_message(
                QueueUrl=source_url, MaxNumberOfMessages=10, VisibilityTimeout=30, MessageAttributeNames=["All"]
            ).get("Messages", [])
            if not batch:
                return moved
            for message in batch:
                attributes = message.get("MessageAttributes", {})
                self._sqs.send_message(
                    QueueUrl=destination_url,
                    MessageBody=message["Body"],
                    **({"MessageAttributes": attributes} if attributes else {}),
                )
                self._sqs.delete_message(QueueUrl=source_url, ReceiptHandle=message["ReceiptHandle"])
                moved += 1


def _url(queue_arn: str) -> str:
    """arn:aws:sqs:REGION:ACCOUNT:NAME -> the queue URL moto gave it."""
    _, _, _, region, account, name = queue_arn.split(":", 5)
    return f"https://sqs.{region}.amazonaws.com/{account}/{name}"


class Gateway:
    """`with Gateway(sqs, port=0) as gateway: gateway.endpoint` serves until the block ends."""

    def __init__(self, sqs: Any, host: str = "127.0.0.1", port: int = 0,
                 on_request: Callable[[], None] | None = None) -> None:
        self.move_tasks = MoveTasks(sqs)
        self.on_request = on_request  # called after each request is answered: what it did may have made work
        self._server = ThreadingHTTPServer((host, port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="practice-gateway", daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Gateway:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def answer(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        """One request: a practice-only answer, or moto's."""
        from moto.core.models import botocore_stubber

        scope = _SCOPE.search(headers.get("Authorization", ""))
        if scope is None:
            return _error(400, "MissingAuthenticationToken", "sign the request (fake credentials are fine)")
        region, service = scope.groups()
        target = headers.get("X-Amz-Target", "")
        special = self._practice_only(target, body)
        if special is not None:
            return special
        request_headers = HTTPHeaders()
        for key, value in headers.items():
            request_headers[key] = value
        request = AWSPreparedRequest(
            method=method,
            url=f"https://{service}.{region}.amazonaws.com{path}",
            headers=request_headers,
            body=body,
            stream_output=False,
        )
        response = botocore_stubber.process_request(request)
        if response is None:
            return _error(400, "UnknownService", f"the practice account does not emulate {service}")
        status, response_headers, response_body = response
        data = response_body.encode("utf-8") if isinstance(response_body, str) else bytes(response_body or b"")
        return status, {str(k): str(v) for k, v in response_headers.items()}, data

    def _practice_only(self, target: str, body: bytes) -> tuple[int, dict[str, str], bytes] | None:
        if target == "AmazonSQS.StartMessageMoveTask":
            return _json(self.move_tasks.start(json.loads(body or b"{}")))
        if target == "AmazonSQS.ListMessageMoveTasks":
            return _json(self.move_tasks.list(json.loads(body or b"{}")))
        if target == "AWSStepFunctions.RedriveExecution":
            return _error(400, "PracticeAccountUnsupported", REDRIVE_UNSUPPORTED)
        return None


def _json(document: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    return 200, {"Content-Type": "application/x-amz-json-1.0"}, json.dumps(document).encode("utf-8")


def _error(status: int, code: str, message: str) -> tuple[int, dict[str, str], bytes]:
    body = json.dumps({"__type": code, "message": message}).encode("utf-8")
    return status, {"Content-Type": "application/x-amz-json-1.0", "x-amzn-query-error": f"{code};Sender"}, body


def _handler(gateway: Gateway) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            try:
                status, headers, data = gateway.answer(self.command, self.path, dict(self.headers.items()), body)
            except Exception as error:  # an emulator bug must reach the caller as a 500, not kill the thread
                status, headers, data = _error(500, "InternalFailure", f"practice account: {error!r}")
            finally:
                if gateway.on_request is not None:
                    gateway.on_request()
            self.send_response(status)
            for key, value in headers.items():
                if key.lower() not in ("content-length", "connection", "transfer-encoding"):
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _serve  # noqa: N815 - http.server's naming

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: the operator reads ff-ops
            return

    return Handler
