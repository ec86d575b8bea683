"""A CUDA kernel of your own: python -m compare --plugin docs/examples/my_cuda_kernel.py --kernel my.cuda_sgemm"""
from compare.families.plugin import cuda_gemm

cuda_gemm("my.cuda_sgemm", "my_sgemm.cu", "my_sgemm", tile=(32, 32), block=(32, 32, 1), group="tiled",
          idea="one thread per C element, threadIdx.x along N")
