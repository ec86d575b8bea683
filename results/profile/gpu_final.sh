#!/usr/bin/env bash
# The run that produced results/profile/ (H100, one GPU call): the whole CUDA ladder with the
# Triton and cuBLAS rows at 2048^3 fp32, the Triton/cuBLAS tf32 rows, then the GPU claim tests.
pip install --no-deps --no-build-isolation -e . -q 2>&1 | grep -v "as the 'root' user"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
{ ncu --version | tail -1; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/log.txt 2>&1
mkdir -p /tmp/raw/fp32 /tmp/raw/tf32
python -m compare.outputs.profile --stage all --shape 2048 --raw-dir /tmp/raw/fp32 -o $OUT/ladder_2048.json >> $OUT/log.txt 2>&1
echo "ladder rc=$?" >> $OUT/log.txt
python -m compare.outputs.profile --stage tiled --family triton --precision tf32 --shape 2048 --raw-dir /tmp/raw/tf32 -o $OUT/tf32_2048.json >> $OUT/log.txt 2>&1
echo "tf32 rc=$?" >> $OUT/log.txt
timeout 300 python -m pytest -m gpu tests/test_profile.py -q -rxX -p no:cacheprovider >> $OUT/log.txt 2>&1
echo "pytest rc=$?" >> $OUT/log.txt
tar czf $OUT/raw.tgz -C /tmp/raw .
tail -30 $OUT/log.txt
