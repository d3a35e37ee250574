#!/usr/bin/env python3
"""Prints the CPU time and context switches a server has used so far, as one
JSON line, for bench/run.sh to take before and after each wrk run:

    procstat.py PID  ->  {"cpu_ticks": N, "clk_tck": 100, "switches": N, "pids": [...]}

cpu_ticks: user + system time (fields 14 and 15 of /proc/P/stat, which
include the process's exited threads) of PID and every process descended from
it (`spin up` serves from a child process).
switches: the sum of voluntary_ctxt_switches and nonvoluntary_ctxt_switches
over /proc/P/task/*/status of the same processes (live threads only: a thread
that exits during a run takes its count with it; the servers keep theirs).
Standard library only; a process that vanishes meanwhile counts as zero.
"""

import json
import os
import sys


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def stat_fields(pid):
    text = read(f"/proc/{pid}/stat")
    if not text:
        return None
    # The command name (field 2) may hold spaces: fields resume after ')'.
    return text[text.rfind(")") + 2:].split()


def descendants(root):
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = stat_fields(entry)
        if fields:
            children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def switches(pid):
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tasks:
        for line in read(f"/proc/{pid}/task/{tid}/status").splitlines():
            if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                total += int(line.split()[1])
    return total


def main():
    root = int(sys.argv[1])
    pids = descendants(root)
    ticks = 0
    for pid in pids:
        fields = stat_fields(pid)
        if fields:
            # After the name: state is index 0, so utime (field 14) is 11.
            ticks += int(fields[11]) + int(fields[12])
    print(json.dumps({
        "cpu_ticks": ticks,
        "clk_tck": os.sysconf("SC_CLK_TCK"),
        "switches": sum(switches(pid) for pid in pids),
        "pids": pids,
    }))


if __name__ == "__main__":
    main()
