"""Dask worker preload (``compare.outputs.distributed.PRELOAD``): torch, Triton, CuPy and the
kernel registry are imported while the worker starts, so the first shape's task does not pay
for them. Never fails the worker: a registry that can't load is reported by the task itself."""


def dask_setup(worker) -> None:
    try:
        from compare.harness import registry
        registry.kernels()
    except Exception:
        pass
