"""The offline deployment creates the dependencies layer from its uploaded asset, as CloudFormation would."""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from typing import Any

import boto3

from fire_and_forget.rehearsal.rehearsal import Rehearsal
from stacks.orders.tasks import RUNTIME


def test_layer_version_is_created_from_the_uploaded_asset(aws: Rehearsal) -> None:
    (layer_asset,) = (asset for asset in aws.assembly.assets if (asset.source / "python").is_dir())
    uploaded = (
        boto3.client("s3", region_name=aws.region)
        .get_object(Bucket=layer_asset.bucket("123456789012", aws.region), Key=layer_asset.object_key)["Body"]
        .read()
    )
    lambda_: Any = boto3.client("lambda", region_name=aws.region)

    (layer,) = lambda_.list_layers()["Layers"]
    version = lambda_.get_layer_version(LayerName=layer["LayerName"], VersionNumber=1)

    assert version["Content"]["CodeSize"] == len(uploaded)
    assert version["Content"]["CodeSha256"] == base64.b64encode(hashlib.sha256(uploaded).digest()).decode()
    assert version["CompatibleRuntimes"] == [RUNTIME.name]
    assert "pydantic==" in version["Description"]


def test_each_uploaded_archive_holds_its_asset_directory_file_for_file(aws: Rehearsal) -> None:
    # The rehearsal stores its archives rather than deflating them (assembly.py): what CloudFormation unpacks must
    # still be the synthesized asset, every file with its content (but the bytecode the functions' imports wrote
    # into the directory since: the archive is made once per process).
    s3 = boto3.client("s3", region_name=aws.region)
    for asset in aws.assembly.assets:
        body = s3.get_object(Bucket=asset.bucket("123456789012", aws.region), Key=asset.object_key)["Body"].read()
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            assert archive.testzip() is None
            packed = {name: hashlib.sha256(archive.read(name)).hexdigest() for name in archive.namelist()
                      if "__pycache__/" not in name}
        files = {path.relative_to(asset.source).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
                 for path in asset.source.rglob("*") if path.is_file() and "__pycache__" not in path.parts}
        assert packed == files, asset.source.name
