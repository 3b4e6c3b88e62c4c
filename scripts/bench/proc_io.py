"""Runs a command and writes, as one JSON line to OUT, its wall time, peak RSS
and the bytes it read and wrote, for scripts/bench/outofcore.

The bytes come from the kernel's /proc/PID/io of the command (rchar/wchar:
every read and write call, page cache or not; read_bytes/write_bytes: what
went to or came from storage; cancelled_write_bytes: dirty pages dropped
before write-back, e.g. of an unlinked spill file). They are read once the
command has exited but before it is reaped (waitid with WNOWAIT): a zombie's
io file still holds the totals of all its threads (and of any children it
reaped), and the process is gone only when reaped. Peak RSS is the reaped
child's ru_maxrss (wait4), the figure /usr/bin/time -f %M prints.
Under mpirun, run one per rank: mpirun -n 4 python3 proc_io.py OUT.%r CMD...
(a %r in OUT becomes $OMPI_COMM_WORLD_RANK).
Usage: proc_io.py OUT CMD [ARGS...]; exits with the command's status."""
import json
import os
import sys
import time

out = sys.argv[1].replace("%r", os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
cmd = sys.argv[2:]
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(cmd[0], cmd)
    finally:
        os._exit(127)
os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
wall = time.monotonic() - t0
io = {}
with open(f"/proc/{pid}/io") as f:
    for line in f:
        k, v = line.split(":")
        io[k.strip()] = int(v)
_, status, ru = os.wait4(pid, 0)
rc = os.waitstatus_to_exitcode(status)
rec = {"wall_s": round(wall, 4), "peak_rss_kb": ru.ru_maxrss, "rc": rc}
for k in ("rchar", "wchar", "read_bytes", "write_bytes", "cancelled_write_bytes"):
    rec[k] = io.get(k, 0)
with open(out, "w") as f:
    f.write(json.dumps(rec) + "\n")
sys.exit(rc if rc >= 0 else 128 - rc)
