"""Session fixtures: one synthesized app for the whole run, and fake AWS credentials for moto."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto.core import responses

from fire_and_forget.rehearsal import client_cache, moto_dispatch
from tests.support.cdk import (
    CATALOG_STACK_NAME,
    MAKE_SYNTH_OUTPUT,
    load_template,
    made_since_the_last_change,
    synthesize,
    synthesize_full,
    synthesize_once,
)

# Set before any boto3 client exists, so nothing can reach a real account.
os.environ.update(
    AWS_ACCESS_KEY_ID="testing",
    AWS_SECRET_ACCESS_KEY="testing",  # noqa: S105 - moto's fake credentials
    AWS_SESSION_TOKEN="testing",
    AWS_DEFAULT_REGION="us-east-1",
    AWS_REGION="us-east-1",
)
os.environ.pop("AWS_PROFILE", None)
# Every boto3 session of the run reads botocore's models from one copy, as a rehearsal's do: the tests that build
# moto accounts of their own make clients by the thousand, each from moto's new default session.
client_cache.share_models()
# A request moto answers in the process goes unsigned, as in a rehearsal (SigV4 is a tenth of a moto-backed test).
client_cache.sign_only_what_leaves()
# And moto lists a response class's methods once per class for the whole run, as in a rehearsal: the explorers and
# property tests make their calls on moto accounts of their own, tens of thousands of them (8 % of their time).
MOTO_METHOD_NAMES = vars(responses)["method_names_from_class"]
moto_dispatch.install()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under `make mutation` (FF_MUTATION_RUN), the fast unit tests run before the moto-backed handler tests: pytest
    stops at a mutant's first failing test, so a mutant the Stubber tests catch costs milliseconds, not seconds."""
    if os.environ.get("FF_MUTATION_RUN"):
        items.sort(key=lambda item: 0 if item.nodeid.startswith("tests/unit/") else 1)


@pytest.fixture(scope="session")
def cloud_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cloud assembly (template plus Lambda assets), synthesized once per test run: under pytest-xdist the workers
    of one run share one, in the directory they all have under their base temporary directory (the first worker to
    need it synthesizes, the others wait for it: 8-18 s of CPU each otherwise).

    FF_TEST_CLOUD_ASSEMBLY names one synthesized already from this tree: `make mutation` runs a pytest session per
    mutant, and none of them changes stacks/, so each would otherwise synthesize the same app again (5-8 s). Without
    it, `make synth`'s cdk.out is the assembly when nothing synth reads changed since (as under `make test`, whose
    Checkov step has just written it); tests/infra/test_compliance.py proves it equals an in-process synth.
    """
    prebuilt = os.environ.get("FF_TEST_CLOUD_ASSEMBLY")
    if prebuilt:
        return Path(prebuilt)
    if made_since_the_last_change():
        return MAKE_SYNTH_OUTPUT
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return synthesize_once(tmp_path_factory.getbasetemp().parent / "cdk.out")
    return synthesize(tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="session")
def full_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The app with every optional part (tests/support/cdk.py, FULL_CONTEXT), synthesized once per test run like
    `cloud_assembly`: the permission matrix, cfn-lint and the carrier's rehearsals read it."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return synthesize_once(tmp_path_factory.getbasetemp().parent / "full.out", synthesize_full)
    return synthesize_full(tmp_path_factory.mktemp("full.out"))


@pytest.fixture(scope="session")
def template(cloud_assembly: Path) -> dict[str, Any]:
    """The synthesized CloudFormation template as a dict."""
    return load_template(cloud_assembly)


@pytest.fixture(scope="session")
def catalog_template(cloud_assembly: Path) -> dict[str, Any]:
    """The second example's template (the catalog search index), from the same synthesized app."""
    return load_template(cloud_assembly, CATALOG_STACK_NAME)


@pytest.fixture(scope="session")
def resources(template: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield template["Resources"]


@pytest.fixture
def moto_as_shipped(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's dispatch without this run's economy, for a test that proves a rehearsal installs it by itself: request
    it before the rehearsal."""
    monkeypatch.setattr(responses, "method_names_from_class", MOTO_METHOD_NAMES)
