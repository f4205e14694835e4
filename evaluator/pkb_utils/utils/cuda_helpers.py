"""``compile_cuda_extension``: JIT-compile CUDA/C++ sources into an importable extension, one build cache per rank.

Ranks of one job compile concurrently; a shared cache directory would make them race on the same lock and objects,
so each rank builds under its own directory (``TORCH_EXTENSIONS_DIR`` points into the rank's private scratch).
Compilation happens when the candidate module is imported, before any timing: build time never enters a sample.
"""
from __future__ import annotations

import hashlib
import os
from typing import Iterable, Optional, Sequence


def _build_dir(name: str, fingerprint: str) -> str:
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(os.environ.get("PKB_SCRATCH", "/tmp"), "ext")
    rank = os.environ.get("LOCAL_RANK", os.environ.get("RANK", "0"))
    path = os.path.join(root, f"rank{rank}", f"{name}_{fingerprint[:12]}")
    os.makedirs(path, exist_ok=True)
    return path


def compile_cuda_extension(name: str, cuda_source: str = "", cpp_source: str = "",
                           functions: Optional[Sequence[str]] = None, *,
                           extra_cuda_cflags: Optional[Iterable[str]] = None,
                           extra_cflags: Optional[Iterable[str]] = None,
                           extra_ldflags: Optional[Iterable[str]] = None,
                           extra_include_paths: Optional[Iterable[str]] = None,
                           with_cuda: bool = True, verbose: bool = False, **kwargs):
    """Build (or load from this rank's cache) an extension module from inline sources or source files.

    ``cuda_source``/``cpp_source`` are source text, or paths to ``.cu``/``.cpp`` files. ``functions`` lists the
    functions to bind when no PYBIND11_MODULE is given (torch's ``load_inline`` convention).
    """
    from torch.utils import cpp_extension

    cuda_flags = list(extra_cuda_cflags or ["-O3", "--use_fast_math"])
    cflags = list(extra_cflags or ["-O3"])
    sources = [s for s in (cuda_source, cpp_source) if s]
    if sources and all(os.path.isfile(s) for s in sources if "\n" not in s and len(s) < 4096):
        paths = [s for s in sources if os.path.isfile(s)]
        if len(paths) == len(sources):
            fingerprint = hashlib.sha256(b"".join(open(p, "rb").read() for p in paths)).hexdigest()
            return cpp_extension.load(name=name, sources=paths, extra_cuda_cflags=cuda_flags, extra_cflags=cflags,
                                      extra_ldflags=list(extra_ldflags or []),
                                      extra_include_paths=list(extra_include_paths or []),
                                      build_directory=_build_dir(name, fingerprint), verbose=verbose, **kwargs)
    fingerprint = hashlib.sha256((cuda_source + "\0" + cpp_source + repr(functions)).encode()).hexdigest()
    return cpp_extension.load_inline(
        name=name, cpp_sources=[cpp_source] if cpp_source else [""],
        cuda_sources=[cuda_source] if cuda_source else None, functions=list(functions) if functions else None,
        extra_cuda_cflags=cuda_flags, extra_cflags=cflags, extra_ldflags=list(extra_ldflags or []),
        extra_include_paths=list(extra_include_paths or []), with_cuda=with_cuda and bool(cuda_source),
        build_directory=_build_dir(name, fingerprint), verbose=verbose, **kwargs)
