"""The analysis of one script: load it, run it to its step (or call its target), trace and
judge that step with :mod:`tfviz.engine`, and hand back an :class:`~tfviz.analysis.diagnose.Analysis`.

It sits above the engine and the program runner, which it drives, and below the Jacobian
session and the worker, which are built from what it returns.
"""
