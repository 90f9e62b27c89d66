# Sourced by scripts/install-deps.sh (repository root, `set -euo pipefail`, `apt_install` defined):
# the GPU compilers the kernel tests of gpu-responder/ use on a machine without a GPU: NVIDIA's
# NVRTC (libnvrtc.so.12, which compiles the kernels to PTX) and ptxas (PTX to SASS for sm_80
# and sm_90) from pip wheels in a venv at .venv-gpu, and Debian's hipcc with the HIP runtime
# headers (gfx90a code objects; hiprtc comes with libamdhip64). Pinned: the PTX shipped in
# gpu-responder/ptx/ is compared with what this NVRTC makes of the sources.
GPU_PY_PACKAGES=("nvidia-cuda-nvrtc-cu12==12.9.86" "nvidia-cuda-nvcc-cu12==12.9.86")
apt_install hipcc libamdhip64-dev
if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
    apt_install python3-venv
fi
if [ ! -x .venv-gpu/bin/python ]; then
    python3 -m venv .venv-gpu
fi
if ! .venv-gpu/bin/python - <<'PY' >/dev/null 2>&1
import importlib.metadata as m
assert m.version("nvidia-cuda-nvrtc-cu12") == "12.9.86"
assert m.version("nvidia-cuda-nvcc-cu12") == "12.9.86"
PY
then
    echo "install-deps: pip (.venv-gpu): ${GPU_PY_PACKAGES[*]}"
    .venv-gpu/bin/pip install -q --disable-pip-version-check "${GPU_PY_PACKAGES[@]}"
fi
