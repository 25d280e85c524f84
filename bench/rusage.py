"""Run a command and write its exit status, wall time, CPU time and peak RSS as JSON.

    python bench/rusage.py RESULT.json CMD [ARG ...]

Linux counts a child's peak RSS from before its exec: a process spawned by one holding gigabytes
(a benchmark that just generated a checkpoint) reports at least those. Spawned from this small
process instead, the command's peak is its own (plus this interpreter's few MB at most).
"""

import json
import os
import sys
import time

result, command = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
pid = os.posix_spawnp(command[0], command, os.environ)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
with open(result, "w") as f:
    json.dump(
        {
            "exit_code": os.waitstatus_to_exitcode(status),
            "wall_s": wall,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_kib": usage.ru_maxrss,
        },
        f,
    )
