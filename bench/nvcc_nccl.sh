# nvcc_nccl.sh, sourced by the GPU benchmarks: nvcc_nccl SRC BIN LOG builds a bench/*.cu program
# against the NCCL that PyTorch loads (the pip package nvidia-nccl-cu13's headers and library),
# else CUDA's, with an rpath there so that the runtime finds that library, not a second copy.
# Uses CUDA_HOME and PYTHON where set. Returns nvcc's status; its output goes to LOG.
nvcc_nccl() {
  local src=$1 bin=$2 log=$3 d inc lib
  d=$("${PYTHON:-python3}" -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) if nvidia.nccl.__file__ else list(nvidia.nccl.__path__)[0])' 2>/dev/null)
  if [ -n "$d" ] && [ -f "$d/include/nccl.h" ]; then inc=$d/include lib=$d/lib
  else inc=${CUDA_HOME:-/usr/local/cuda}/include lib=${CUDA_HOME:-/usr/local/cuda}/lib64; fi
  mkdir -p "$(dirname "$bin")"
  timeout 180 "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -o "$bin" "$src" \
    -I"$inc" -L"$lib" -l:libnccl.so.2 -Xlinker -rpath="$lib" >"$log" 2>&1
}
