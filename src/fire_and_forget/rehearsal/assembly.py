"""Reads a synthesized cloud assembly (cdk.out): the template, and the Lambda assets it references."""

from __future__ import annotations

import functools
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fire_and_forget.runtime.outputs import DEFAULT_STACK_NAME

STACK_NAME = DEFAULT_STACK_NAME  # the stack the rehearsal deploys unless it is given another of the assembly


@dataclass(frozen=True)
class FileAsset:
    """A zip asset as `cdk deploy` publishes it: a local directory, uploaded to the bootstrap bucket."""

    source: Path
    bucket_template: str
    object_key: str

    def zipped(self) -> bytes:
        return _zip(self.source)

    def bucket(self, account: str, region: str) -> str:
        return self.bucket_template.replace("${AWS::AccountId}", account).replace("${AWS::Region}", region)


@dataclass(frozen=True)
class CloudAssembly:
    """One stack's template and its zip assets."""

    directory: Path
    template: dict[str, Any]
    assets: tuple[FileAsset, ...]
    stack_name: str = STACK_NAME  # the stack's name in the assembly: the rehearsal deploys it under this name

    @classmethod
    def load(cls, directory: Path, stack_name: str = STACK_NAME) -> CloudAssembly:
        template = json.loads((directory / f"{stack_name}.template.json").read_text(encoding="utf-8"))
        manifest = json.loads((directory / f"{stack_name}.assets.json").read_text(encoding="utf-8"))
        assets = []
        for entry in manifest.get("files", {}).values():
            if entry["source"].get("packaging") != "zip":
                continue
            for destination in entry["destinations"].values():
                assets.append(
                    FileAsset(directory / entry["source"]["path"], destination["bucketName"], destination["objectKey"])
                )
        return cls(directory, template, tuple(assets), stack_name)

    def resources_of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {lid: res for lid, res in self.template["Resources"].items() if res["Type"] == resource_type}


# A bundled asset directory never changes once synthesized (its name is its hash), so it is zipped once per
# process, and stored rather than deflated: the rehearsal runs the functions from their asset directories, and
# nothing reads the archive but moto, which keeps it and reports its size and hash. The dependencies layer (about
# 47 MB unpacked) takes 0.3 s to store and 1.3 s to deflate, in every process that rehearses.
@functools.cache
def _zip(source: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(source).as_posix())
    return buffer.getvalue()
