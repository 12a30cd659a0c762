"""The numbers ncclscope shows and judges, computed once: pure functions from the run model to tables.

The detectors (straggler, slow_link, hotspots), the text report and the dashboard all read these,
so that a page and a finding never disagree about one run:

- ``records``: one row per (rank, process group, collective), its state merged over the sources.
- ``per_collective``: one row per (process group, collective): op, bytes, time (min over ranks).
- ``busbw``: nccl-tests' bus bandwidth per collective.
- ``share``: where collective time goes (time share), and where the volume goes (calls, bytes).
- ``waiting``: who waits for whom: late arrivals (arrival order) and the rank x step waiting matrix.
- ``progress``: each rank's process-group status and its state at the stuck collective.
"""
from __future__ import annotations
