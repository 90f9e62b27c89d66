"""Writes gpu-responder/tests/data/steane_triton.ptx: the Steane decoder of
examples/steane_triton.py compiled by Triton (the pinned release of scripts/deps.d/python.sh)
with backline.triton_decoder, for the Rust linker test, which then needs no Triton.

    .venv-py/bin/python scripts/dev/triton_fixture.py
"""

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import backline  # noqa: E402
from steane_triton import steane_decode  # noqa: E402

f = backline.triton_decoder(steane_decode)
out = ROOT / "gpu-responder/tests/data/steane_triton.ptx"
out.parent.mkdir(parents=True, exist_ok=True)
shutil.copy(f.ptx_path, out)
print(f"wrote {out.relative_to(ROOT)}")
