# linkmon.py SECONDS INTERVAL_MS: run inside a host namespace (ip netns exec hvdsc-h1 ...,
# inside the same "netns_cluster.sh run" as the job, which kills what it leaves);
# prints per interval: seconds, MB/s sent and MB/s received on hvdsc0.
import sys, time
dur, iv = float(sys.argv[1]), float(sys.argv[2]) / 1e3
def rd(n):
    with open("/sys/class/net/hvdsc0/statistics/%s_bytes" % n) as f: return int(f.read())
t0 = time.time(); tx0, rx0, tl = rd("tx"), rd("rx"), t0
out = []
while time.time() - t0 < dur:
    time.sleep(iv)
    t = time.time(); tx, rx = rd("tx"), rd("rx")
    out.append((t - t0, (tx - tx0) / (t - tl) / 1e6, (rx - rx0) / (t - tl) / 1e6)); tx0, rx0, tl = tx, rx, t
for r in out: print("%.3f %.1f %.1f" % r)
