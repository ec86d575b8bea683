"""One decomposition model (compare/families/decompose.py) for every family: the split-K counts
and stream-K plans of the CUDA and Triton kernels over a grid of shapes are exactly the ones
recorded before the Triton family moved onto the shared model (each family's own parameters:
Triton's 0.90 wave fill over one and two programs per SM, CUDA's 0.95 over its block slots).

The table was written by ``python tests/test_decompose_plans.py --write`` on the tree before
the move (commit "fixture: split-K / stream-K plans before the move")."""
from __future__ import annotations

import json
import os
import sys

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "decompose", "plans_before.json")
SHAPES = [(M, N, K) for M in (1, 64, 127, 1000, 4096) for N in (1, 128, 255, 4096, 11008)
          for K in (7, 300, 1021, 16384, 131072)]


def plans() -> dict:
    from compare.families import decompose as D
    from triton_kernels import split_k as tsk, stream_k as tsm
    out = {"triton_choose_split": [], "triton_split_geometry": [], "triton_decompose": [],
           "cuda_choose_split": [], "cuda_stream_k_plan": []}
    for (M, N, K) in SHAPES:
        for sms in (132, 78):
            for det in (True, False):
                out["triton_choose_split"].append([M, N, K, sms, det, list(tsk.choose_split(M, N, K, sms, det))])
                p = D.choose_split(M, N, K, sms, deterministic=det)
                out["cuda_choose_split"].append([M, N, K, sms, det, [p.splits, p.chunk]])
        for tile in (tsm.Tile(128, 128, 32, 8, 3), tsm.Tile(64, 128, 16, 4, 4), tsm.Tile(16, 64, 32, 4, 3)):
            for mode, prog, align in ((None, None, False), ("hybrid", None, False), ("hybrid", 7, False), ("hybrid", None, True)):
                d = tsm.decompose(M, N, K, tile, 132, mode, prog, align)
                out["triton_decompose"].append([M, N, K, tile.name, 132, mode, prog, align,
                                                [d.tiles, d.iters, d.sk_tiles, d.sk_programs, d.max_segments,
                                                 d.aligned]])
    for K in (1, 7, 64, 65, 300, 1023, 4096, 131072):
        for s in (1, 2, 3, 5, 8, 33, 64, 200):
            out["triton_split_geometry"].append([K, s, list(tsk.split_geometry(K, s))])
    for tiles in (1, 7, 64, 131, 132, 133, 200, 264, 265, 500, 1000):
        for iters in (1, 2, 3, 5, 8, 64, 1000):
            for sms, bps in ((132, 1), (132, 2), (78, 1)):
                for mode, skb in ((None, None), ("dp", None), ("sk", None), ("hybrid", None), ("sk", 5)):
                    p = D.stream_k_plan(tiles, iters, sms, bps, mode=mode, sk_blocks=skb)
                    out["cuda_stream_k_plan"].append([tiles, iters, sms, bps, mode, skb, list(p.as_dict().values())])
    return out


def test_plans_match_the_recorded_table():
    with open(FIXTURE) as f:
        want = json.load(f)
    got = json.loads(json.dumps(plans()))
    assert set(got) == set(want)
    for key in want:
        diff = [(w, g) for w, g in zip(want[key], got[key]) if w != g]
        assert len(got[key]) == len(want[key]) and not diff, f"{key}: {len(diff)} plans differ, e.g. {diff[:3]}"


if __name__ == "__main__" and "--write" in sys.argv:
    # Standalone, without the conftest: importing triton_kernels on a machine without a GPU needs
    # the interpreter. Never at import under pytest, where it would switch every later Triton
    # test of the process to the interpreter on a GPU box.
    os.environ.setdefault("TRITON_INTERPRET", "1")
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(FIXTURE, "w") as f:
        json.dump(plans(), f, separators=(",", ":"))
