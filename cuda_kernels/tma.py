"""Host side of the tensor memory accelerator: a 2-D tensor map (the driver's 128-byte
``CUtensorMap``) of a row-major fp32 matrix, encoded with ``cuTensorMapEncodeTiled`` from
NVIDIA's cuda-bindings and handed to a kernel as a 128-byte ``numpy.void`` scalar (CuPy copies
it into the parameter buffer as is; the kernel takes it as a ``const __grid_constant__``
parameter). cuda-bindings is imported on first use: machines without it (the CPU test machines)
import this module fine.
"""
from __future__ import annotations

import ctypes

import numpy as np

MAP_BYTES = 128
BOX_COLS = 32  # 32 floats = 128 bytes: one row of the 128-byte swizzle the wgmma descriptors expect


def _driver():
    try:
        from cuda.bindings import driver
    except ImportError:
        try:
            from cuda import cuda as driver  # cuda-python < 12.6
        except ImportError:
            raise RuntimeError("TMA descriptors need NVIDIA's cuda-bindings (pip install cuda-bindings)") from None
    return driver


def check_geometry(rows: int, cols: int, ld: int, box_rows: int) -> None:
    """What cuTensorMapEncodeTiled refuses, said before it is asked: the row stride must be a
    multiple of 16 bytes, a box side at most 256 elements, dimensions below 2^32."""
    if (ld * 4) % 16:
        raise ValueError(f"TMA needs 16-byte aligned row strides; got {ld} floats per row")
    if not 1 <= box_rows <= 256:
        raise ValueError(f"TMA box rows must be 1..256; got {box_rows}")
    if not (1 <= rows < 2**32 and 1 <= cols < 2**32 and cols <= ld):
        raise ValueError(f"bad matrix geometry rows={rows} cols={cols} ld={ld}")


def tensor_map(address: int, rows: int, cols: int, ld: int, box_rows: int) -> np.void:
    """Tensor map of the fp32 matrix at device ``address`` (rows x cols, ``ld`` floats per row):
    boxes of ``box_rows`` rows x 32 columns, 128-byte swizzle, zeros for elements outside."""
    check_geometry(rows, cols, ld, box_rows)
    if address % 16:
        raise ValueError(f"TMA needs a 16-byte aligned base address; got {address:#x}")
    d = _driver()
    u32, u64 = d.cuuint32_t, d.cuuint64_t  # cuda-bindings 13 takes no bare ints for these
    err, tmap = d.cuTensorMapEncodeTiled(
        d.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32, u32(2), address,
        [u64(cols), u64(rows)], [u64(ld * 4)], [u32(BOX_COLS), u32(box_rows)], [u32(1), u32(1)],
        d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        d.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        d.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if int(err) != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed ({err}) for rows={rows} cols={cols} ld={ld} "
                           f"box={box_rows}x{BOX_COLS}")
    opaque = getattr(tmap, "opaque", None)
    raw = (np.asarray(opaque, dtype=np.uint64).tobytes() if opaque is not None
           else ctypes.string_at(int(tmap.getPtr()), MAP_BYTES))
    if len(raw) != MAP_BYTES:
        raise RuntimeError(f"CUtensorMap is {len(raw)} bytes, expected {MAP_BYTES}")
    return np.frombuffer(raw, dtype=np.dtype((np.void, MAP_BYTES)))[0]
