"""The anchors' harness: TSID and placo run the benchmarks' Talos scenarios, side by side with wbc.

TSID and placo each need their own Pinocchio, so they run in side environments (``setup.sh`` builds
them under ``$WBC_ANCHORS``, default ``~/.cache/wbc-anchors``; ``make anchors`` runs it). Their
scripts are this repository's own, run from the repository root by the side environment's Python:

* :mod:`benchmarks.anchors.scenario`: what every side runs (Talos ``talos_reduced``, free-flyer,
  ``half_sitting``, two feet, CoM task weight 1 kp 20, posture weight 1e-3 kp 10, μ 0.3, 1 ms), the
  scenarios (standing, lean, priorities) and the timing record (p50, p99, p99.9, max, first step);
* :mod:`benchmarks.anchors.tsid_talos`, :mod:`benchmarks.anchors.placo_talos`: the two anchors;
* :mod:`benchmarks.anchors.run`: the wbc side's way of running them (``run_anchor``).

Nothing here imports wbc except :mod:`~benchmarks.anchors.run` (the side environments have no wbc).
"""
