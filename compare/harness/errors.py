"""The one usage error of the project.

A ``UsageError`` means "the run could not start": a bad argument, an unreadable input file, no
GPU, a shape that does not fit, an option a kernel does not declare. Every command-line entry
point (``python -m compare``, ``compare.ci.gate``, ``compare.ci.history``) prints its message on one
line and exits 2. It is raised before any GPU work wherever the problem can be seen up front.
"""
from __future__ import annotations


class UsageError(ValueError):
    """The run could not start; the message names the problem and, where it helps, the fix."""
