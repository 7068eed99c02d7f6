"""Who the rehearsal lets call a function URL with AuthType AWS_IAM from another account: a principal the function's
resource policy names for both lambda:InvokeFunctionUrl (for that AuthType) and lambda:InvokeFunction
(urls-auth.html: new function URLs require both, from October 2025)."""

from __future__ import annotations

from typing import Any

from fire_and_forget.rehearsal.function_urls import url_answerers

FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:entry"
CARRIER = "arn:aws:iam::210987654321:role/carrier"
OTHER = "arn:aws:iam::111122223333:role/other"


def url_permission(principal: str, auth_type: str = "AWS_IAM", function: str = FUNCTION) -> dict[str, Any]:
    return {"Action": "lambda:InvokeFunctionUrl", "FunctionName": function, "FunctionUrlAuthType": auth_type,
            "Principal": principal}


def invoke_permission(principal: str, function: str = FUNCTION) -> dict[str, Any]:
    return {"Action": "lambda:InvokeFunction", "FunctionName": function, "InvokedViaFunctionUrl": True,
            "Principal": principal}


def test_a_principal_named_for_both_actions_may_call_the_url() -> None:
    permissions = [url_permission(CARRIER), invoke_permission(CARRIER)]
    assert url_answerers(permissions, "entry", "AWS_IAM") == {CARRIER}


def test_either_action_alone_is_not_enough() -> None:
    assert url_answerers([url_permission(CARRIER)], "entry", "AWS_IAM") == frozenset()
    assert url_answerers([invoke_permission(CARRIER)], "entry", "AWS_IAM") == frozenset()
    assert url_answerers([url_permission(CARRIER), invoke_permission(OTHER)], "entry", "AWS_IAM") == frozenset()


def test_a_permission_for_another_auth_type_or_function_does_not_count() -> None:
    other_function = FUNCTION.replace("entry", "other")
    assert url_answerers([url_permission(CARRIER, auth_type="NONE"), invoke_permission(CARRIER)],
                         "entry", "AWS_IAM") == frozenset()
    assert url_answerers([url_permission(CARRIER, function=other_function), invoke_permission(CARRIER)],
                         "entry", "AWS_IAM") == frozenset()
