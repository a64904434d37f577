# threadcpu.py SECONDS [COMM]: samples the CPU time (user + system) of every thread of all the
# processes named COMM on the machine (default hvd_bench; other jobs' too) every 100 ms for
# SECONDS, then prints the totals by thread name and each thread's own (pid, tid, name,
# seconds). Run it beside a launch (same machine; namespaces do not hide /proc) to see which
# threads take the cores; the helper thread of hierarchical allreduce is named hvd-hier-cross.
import collections, os, sys, time

dur = float(sys.argv[1])
comm = sys.argv[2] if len(sys.argv) > 2 else "hvd_bench"
hz = os.sysconf("SC_CLK_TCK")
last = {}
t0 = time.time()
while time.time() - t0 < dur:
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % p) as f:
                if f.read().strip() != comm:
                    continue
            for t in os.listdir("/proc/%s/task" % p):
                with open("/proc/%s/task/%s/stat" % (p, t)) as f:
                    s = f.read()
                fields = s[s.rindex(")") + 2:].split()
                last[(int(p), int(t))] = (s[s.index("(") + 1:s.rindex(")")],
                                          (int(fields[11]) + int(fields[12])) / hz)
        except (OSError, ValueError):
            pass  # the process or thread ended between listing and reading
    time.sleep(0.1)
by = collections.defaultdict(float)
for name, cpu in last.values():
    by[name] += cpu
for name, cpu in sorted(by.items(), key=lambda x: -x[1]):
    print("%-20s %.2f s" % (name, cpu))
for (p, t), (name, cpu) in sorted(last.items()):
    if cpu > 0.05:
        print("  %d %d %-16s %.2f" % (p, t, name, cpu))
