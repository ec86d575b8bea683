"""The harness: what a GEMM problem is (problem, shapes), how inputs and the float64 reference are
made (inputs), what "correct" means per precision (check), how a launch is timed (timing), the one
list of kernels (registry), the one pipeline prepare -> check -> measure (runner), the worker
process that runs it isolated from the command's own (worker) with rows streamed as they finish
(checkpoint), and the shared plumbing (errors, files, gpuinfo). It may import only its own modules and third-party libraries,
never compare.families, compare.outputs, compare.ci or compare.cli; the registry loads the
families by module name at run time (``registry._FAMILY_MODULES``), not through an import.
"""
