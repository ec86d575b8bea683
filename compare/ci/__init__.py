"""The asv CI tools: the one reader and writer of asv's result files (asv_results), the runner of
asv over a list of commits (history), the regression gate (gate), the run-to-run spread check
(repeatability), each a ``python -m compare.ci.NAME`` command. Modules here may import
compare.harness, compare.families and compare.outputs (and third-party libraries), never
compare.cli. failure_notes holds why a benchmark point failed (the benchmark writes, the gate reads).
"""
