#!/usr/bin/env bash
# First GPU call of H8 (probe + full ladder). Writes under $OUT.
pip install --no-deps --no-build-isolation -e . -q 2>&1 | tail -2
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
{ which ncu; ncu --version; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } > $OUT/log.txt 2>&1
ncu --query-metrics > /tmp/query.txt 2>&1
grep -E "global_op_ld|ldgsts|bank_conflicts|pipe_fma|tensor|warps_active|stalled_barrier|dram__bytes|sector_hit|data_bytes_mem_global|local_op" /tmp/query.txt > $OUT/query_subset.txt
gzip -c /tmp/query.txt > $OUT/query.txt.gz
mkdir -p /tmp/raw
( time timeout 380 python -m compare.profile --stage all --shape 2048 --raw-dir /tmp/raw -o $OUT/ladder_2048.json ) >> $OUT/log.txt 2>&1
echo "rc=$?" >> $OUT/log.txt
cp /tmp/raw/raw.csv /tmp/raw/manifest.json $OUT/ 2>/dev/null
tar czf $OUT/rep.tgz -C /tmp/raw . 2>/dev/null
tail -40 $OUT/log.txt
