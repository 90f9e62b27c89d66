# Sourced by the test suites: where the GPU compilers of scripts/deps.d/gpu.sh are, for the
# kernel compilation tests of gpu-responder/ (they fail rather than skip when this is set).
_gpu_site=$(ls -d "$PWD"/.venv-gpu/lib/python3*/site-packages 2>/dev/null | head -1 || true)
if [ -n "$_gpu_site" ]; then
    export BACKLINE_NVRTC="$_gpu_site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
    export BACKLINE_PTXAS="$_gpu_site/nvidia/cuda_nvcc/bin/ptxas"
    export BACKLINE_REQUIRE_GPU_COMPILERS=1
fi
unset _gpu_site
