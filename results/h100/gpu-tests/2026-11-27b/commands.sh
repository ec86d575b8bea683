#!/usr/bin/env bash
# The merged branches on a GPU: renamed options (names), batch time after the timing split (rooms),
# a resumed plain run (ckpt), then the fault tests (the fixture's spawn guard) in the time left.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/dask/*.whl && export PYTHONPATH=/tmp/site
L=$OUT/logs; mkdir -p $L
nvidia-smi --query-gpu=name,uuid,clocks.sm,driver_version --format=csv > $L/gpu.txt
timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_cuda.py tests/test_gpu_triton.py \
  -k "wgmma_launch_config_names or operand_modes" > $L/names.log 2>&1; echo "names rc=$?" | tee -a $L/summary.txt
timeout 40 python3 -c "import sys; from compare.harness import registry, runner; from compare.harness.problem import Problem; rows=[runner.run_kernel(registry.get(k), Problem(1024,1024,1024,precision=p)) for k,p in (('cublas','fp32'),('cuda.09_double_buffered','fp32'),('cuda.13_wgmma_tma','tf32'))]; [print(r.kernel, r.status, r.batch_method, r.batch_ms) for r in rows]; ok=all(r.status=='ok' and r.batch_method.startswith('graph x') and r.batch_ms>0 for r in rows); print('PASS' if ok else 'FAIL'); sys.exit(0 if ok else 1)" > $L/batch.log 2>&1; echo "batch rc=$?" | tee -a $L/summary.txt
rm -f /tmp/ck.jsonl /tmp/a.json /tmp/b.json; A="--stage tiled --shape 512 --shape 1024 --budget 0.2 -q"
timeout 60 bash -c "python3 -m compare $A --checkpoint /tmp/ck.jsonl -o /tmp/a.json && python3 -m compare $A --resume /tmp/ck.jsonl -o /tmp/b.json && python3 -c \"import json;a=json.load(open('/tmp/a.json'))['results'];b=json.load(open('/tmp/b.json'));k=lambda rs:[(r['kernel'],r['shape'],r['pct_cublas']) for r in rs];assert b['environment']['resumed']['shapes']==2 and k(a)==k(b['results']);print('PASS')\"" > $L/resume.log 2>&1; echo "resume rc=$?" | tee -a $L/summary.txt
LEFT=$(( ${LIMIT:-330} - ($(date +%s) - T0) ))
echo "faults with ${LEFT} s" >> $L/summary.txt
timeout $LEFT python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_faults.py > $L/faults.log 2>&1; echo "faults rc=$? $(tail -n 1 $L/faults.log)" | tee -a $L/summary.txt
cat $L/summary.txt
