"""One synthesized app per test run (tests/support/cdk.py, `synthesize_once`): the pytest-xdist workers that ask for it
at once get the one the first of them synthesized; a synth that failed leaves nothing another would reuse."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.support import cdk


def test_workers_asking_at_once_share_one_synth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a synth that takes a while (each worker opens the lock file on its own, as separate processes do)
    synths: list[Path] = []
    lock = threading.Lock()

    def synthesize(outdir: Path, context: Any = None) -> Path:
        with lock:
            synths.append(outdir)
        time.sleep(0.2)
        (outdir / "manifest.json").parent.mkdir(parents=True)
        (outdir / "manifest.json").write_text("{}", encoding="utf-8")
        return outdir

    monkeypatch.setattr(cdk, "synthesize", synthesize)
    # When three workers ask for the app at once
    with ThreadPoolExecutor(3) as pool:
        assemblies = list(pool.map(lambda _: cdk.synthesize_once(tmp_path / "cdk.out"), range(3)))
    # Then one synthesized it and all three got that one
    assert synths == [tmp_path / "cdk.out"]
    assert assemblies == [tmp_path / "cdk.out"] * 3
    assert (tmp_path / "cdk.out" / "manifest.json").is_file()


def test_a_failed_synth_is_not_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a first synth that fails halfway, leaving part of an assembly
    def broken(outdir: Path, context: Any = None) -> Path:
        outdir.mkdir(parents=True)
        (outdir / "half.json").write_text("{", encoding="utf-8")
        raise RuntimeError("jsii died")

    monkeypatch.setattr(cdk, "synthesize", broken)
    with pytest.raises(RuntimeError):
        cdk.synthesize_once(tmp_path / "cdk.out")
    # When the next worker asks
    monkeypatch.setattr(cdk, "synthesize", lambda outdir, context=None: outdir.mkdir(parents=True) or outdir)
    assembly = cdk.synthesize_once(tmp_path / "cdk.out")
    # Then it synthesized afresh, into an emptied directory
    assert assembly == tmp_path / "cdk.out"
    assert not (assembly / "half.json").exists()
