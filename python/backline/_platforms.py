"""The GPU platforms a Triton decoder compiles for (shared by ``placement`` and ``triton``)."""

from __future__ import annotations

from .errors import CoprocessorFunctionError

#: The platforms a decoder compiles for: ``(backend, arch, warp size)`` of Triton's target.
PLATFORMS = {
    "cuda:sm_80": ("cuda", 80, 32),
    "cuda:sm_90": ("cuda", 90, 32),
    "hip:gfx90a:64": ("hip", "gfx90a", 64),
}


def check_platform(platform: str) -> tuple:
    """Triton's target for a platform string, or a named error listing the known ones."""
    target = PLATFORMS.get(platform)
    if target is None:
        raise CoprocessorFunctionError(
            f"platform={platform!r} names no target (known: {', '.join(PLATFORMS)})"
        )
    return target
