# Sourced by the reproduce/measure-* scripts after they set PY: Python's bytecode cache on, as any
# installed environment has it (a writable prefix where site-packages is read-only), filled by
# one import pass. "Cold" then means empty compile caches, not a Python that recompiles torch's
# sources in every process (~4 s each on the H100 box, results/h100/main-command/).
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-${TMPDIR:-/tmp}/gemm-pyc}
"$PY" -m compare --list > /dev/null 2>&1
