"""cdk.json sets exactly the feature flags aws-cdk-lib recommends for a new app, each to its recommended value.

A flag in the wrong namespace or one the installed library does not know does nothing, silently; a missing one
makes every synth print "N feature flags are not configured". The installed library's own lists are the reference
(https://docs.aws.amazon.com/cdk/v2/guide/featureflags.html).
"""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path
from typing import Any

import aws_cdk

from tests.support.cdk import cdk_context

_JSII = Path(aws_cdk.__file__).parent / "_jsii"


def _library_file(member: str) -> str:
    (bundle,) = _JSII.glob("aws-cdk-lib@*.jsii.tgz")
    with tarfile.open(bundle) as archive:
        extracted = archive.extractfile(f"package/{member}")
        assert extracted is not None
        return extracted.read().decode("utf-8")


def _flags_in_cdk_json() -> dict[str, Any]:
    return {key: value for key, value in cdk_context().items() if key.startswith("@")}


def test_every_flag_is_one_the_installed_library_knows() -> None:
    known = set(re.findall(r'"(@aws-cdk[a-z-]*/[^"]+)"', _library_file("cx-api/lib/features.js")))
    assert len(known) > 50  # the extraction found the flag table
    assert sorted(set(_flags_in_cdk_json()) - known) == []


def test_the_flags_are_the_recommended_set_with_the_recommended_values() -> None:
    recommended = json.loads(_library_file("recommended-feature-flags.json"))
    assert _flags_in_cdk_json() == recommended
