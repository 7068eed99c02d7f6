"""botocore's models read from disk once for the process (fire_and_forget.rehearsal.client_cache.share_models): what
a second session loads, and what a loader with a model directory of its own reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore import loaders

from fire_and_forget.rehearsal import client_cache


@pytest.fixture
def files_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The model and data files botocore reads from disk from now on."""
    client_cache.share_models()  # the suite's conftest has already; idempotent
    read: list[str] = []
    original = loaders.JSONFileLoader.load_file

    def load_file(loader: loaders.JSONFileLoader, file_path: str) -> Any:
        read.append(file_path)
        return original(loader, file_path)

    monkeypatch.setattr(loaders.JSONFileLoader, "load_file", load_file)
    return read


def test_a_second_session_reads_no_model_the_first_one_loaded(files_read: list[str]) -> None:
    # Given one session's client of a service
    boto3.Session(region_name="eu-west-1").client("lightsail")
    files_read.clear()
    # When another session makes a client of the same service
    client = boto3.Session(region_name="eu-west-1").client("lightsail")
    # Then nothing is read from disk again, and the client has the whole model
    assert files_read == []
    assert "GetInstances" in client.meta.service_model.operation_names


def test_a_loader_with_its_own_model_directory_reads_its_own_files(
    files_read: list[str], tmp_path: Path
) -> None:
    # Given a model directory that holds its own version of a data file every session loads
    builtin = loaders.Loader()
    (tmp_path / "sdk-default-configuration.json").write_text(json.dumps({"version": 1, "base": {}, "modes": {}}))
    builtin.load_data("sdk-default-configuration")
    files_read.clear()
    # When a loader that searches that directory first loads it
    own = loaders.Loader(extra_search_paths=[str(tmp_path)])
    data = own.load_data("sdk-default-configuration")
    # Then it read its file, not the process's shared copy of botocore's
    assert data == {"version": 1, "base": {}, "modes": {}}
    assert files_read and files_read[0].startswith(str(tmp_path))
    assert builtin.load_data("sdk-default-configuration") != data
