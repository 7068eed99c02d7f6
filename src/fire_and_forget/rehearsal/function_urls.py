"""The template's Lambda function URLs, which moto cannot create: a signed HTTPS request to one becomes the
invocation AWS makes of its function, with the request as a payload format 2.0 event
(urls-invocation.html, "Request payload format"), and AuthType AWS_IAM is enforced the way the URL's resource policy
reads (urls-auth.html): a principal of another account must be named by a lambda:InvokeFunctionUrl permission with
FunctionUrlAuthType AWS_IAM and, as "new function URLs will require both lambda:InvokeFunctionUrl and
lambda:InvokeFunction permissions" (from October 2025), by a lambda:InvokeFunction permission too; one of the
account's own may call it when its identity policy allows (assumed here, the permission matrix judges identity
policies). Anything else gets 403 without reaching the function.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fire_and_forget.rehearsal.assembly import CloudAssembly
from fire_and_forget.rehearsal.deployment import OfflineStack


@dataclass(frozen=True)
class FunctionUrl:
    logical_id: str
    function_name: str
    auth_type: str
    answerers: frozenset[str]  # principals named by the resource policy's InvokeFunctionUrl statements


@dataclass(frozen=True)
class HttpReply:
    status: int
    body: dict[str, Any]


def read_function_urls(assembly: CloudAssembly, stack: OfflineStack) -> dict[str, FunctionUrl]:
    """Every AWS::Lambda::Url of the template, by its logical id."""
    permissions = [stack.resolve(resource["Properties"])
                   for resource in assembly.resources_of_type("AWS::Lambda::Permission").values()]
    urls = {}
    for logical_id, resource in assembly.resources_of_type("AWS::Lambda::Url").items():
        props = stack.resolve(resource["Properties"])
        function = props["TargetFunctionArn"].split(":function:", 1)[-1]
        urls[logical_id] = FunctionUrl(logical_id, function, props["AuthType"],
                                       url_answerers(permissions, function, props["AuthType"]))
    return urls


def url_answerers(permissions: list[dict[str, Any]], function: str, auth_type: str) -> frozenset[str]:
    """The principals the function's resource policy lets call its URL: named by both an InvokeFunctionUrl
    permission for the URL's AuthType and an InvokeFunction permission."""
    def named(action: str, **conditions: Any) -> set[str]:
        return {p["Principal"] for p in permissions
                if p.get("Action") == action and p["FunctionName"].split(":function:", 1)[-1] == function
                and all(p.get(name) == value for name, value in conditions.items())}

    return frozenset(named("lambda:InvokeFunctionUrl", FunctionUrlAuthType=auth_type) & named("lambda:InvokeFunction"))


def call(url: FunctionUrl, lambda_client: Any, *, caller_arn: str, account: str, body: dict[str, Any],
         moment: datetime, method: str = "POST", path: str = "/") -> HttpReply:
    """`caller_arn` sends `body` as JSON to `url`: the reply's status and JSON body."""
    caller_account = caller_arn.split(":")[4]
    if url.auth_type == "AWS_IAM" and caller_account != account and caller_arn not in url.answerers \
            and f"arn:aws:iam::{caller_account}:root" not in url.answerers:
        return HttpReply(403, {"Message": "Forbidden"})
    response = lambda_client.invoke(FunctionName=url.function_name,
                                    Payload=json.dumps(_event(caller_arn, caller_account, body, moment, method, path)))
    result = json.loads(response["Payload"].read())
    if "FunctionError" in response:
        return HttpReply(502, {"Message": "Internal Server Error", "error": result})
    text = result.get("body") or "{}"
    return HttpReply(int(result.get("statusCode", 200)), json.loads(text))


def _event(caller_arn: str, caller_account: str, body: dict[str, Any], moment: datetime, method: str,
           path: str) -> dict[str, Any]:
    request_id = str(uuid.uuid4())
    return {
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
        "headers": {"content-type": "application/json", "host": "offline.lambda-url.us-east-1.on.aws"},
        "requestContext": {
            "accountId": "anonymous", "apiId": "offline", "domainName": "offline.lambda-url.us-east-1.on.aws",
            "domainPrefix": "offline", "requestId": request_id, "routeKey": "$default", "stage": "$default",
            "time": moment.strftime("%d/%b/%Y:%H:%M:%S +0000"), "timeEpoch": int(moment.timestamp() * 1000),
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "203.0.113.7",
                     "userAgent": "rehearsal"},
            "authorizer": {"iam": {"accessKey": "ASIAOFFLINE", "accountId": caller_account,
                                   "callerId": "AROAOFFLINE", "userArn": caller_arn, "userId": "AROAOFFLINE"}},
        },
        "body": json.dumps(body), "isBase64Encoded": False,
    }
