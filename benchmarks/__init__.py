"""wbc's benchmarks, run from the repository root as ``python -m benchmarks.<name>``.

* :mod:`benchmarks.dynamics`: compiled ABA / RNEA / CRBA / Jacobians against Pinocchio;
* :mod:`benchmarks.algorithms`: the PV-OSIMr and IIM papers' comparisons (op counts, slopes, times);
* :mod:`benchmarks.controller`: one control step on Talos standing, against TSID and placo.

They share one timing harness (:mod:`benchmarks.harness`: interleaved rounds, medians, ratio spread)
and one Pinocchio adapter (:mod:`benchmarks.pinocchio_adapter`, also the tests' oracle). Timings
are only meaningful as ratios measured side by side in the same run.
"""
