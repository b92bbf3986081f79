"""What reading a process's Python stacks costs it, precisely enough to tell 1 % (issue 24).
The target is stepcost.py's training loop (a small MLP, steps of about 1.7 ms with Python
between kernels, .item() every 10 steps); it counts its steps in 100 ms bins of wall time
(time.time()) and writes them at the end. A reader alternates PAIRS times: 2 s of
`gpuwatch stacks PID --samples 20` (reads at 10 Hz, twice an evidence burst's rate) and 2 s of
nothing, and writes when each window began and ended. The rates in the two kinds of window are
compared pair by pair (each read window against the mean of the idle windows on either side,
which removes drift) by stepcost3_report.py.

With `python` as the last argument the target is a pure-Python loop instead (no GPU: a step is
a call ten frames deep doing list and dict work, about 20 µs), the most a read can disturb:
all of its time is the interpreter whose memory is being read.

usage: python3 stepcost3.py GPUWATCH PAIRS OUTDIR [torch|python]
"""
import json, os, subprocess, sys, time

def deep(n, acc):
    if n:
        return deep(n - 1, acc)
    d = {i: i * i for i in range(40)}
    return acc + sum(sorted(d.values())[:10])


if sys.argv[1] == "--python-target":
    # Also the thread's own CPU time per bin: steps per CPU second do not move when the VM
    # or the scheduler takes the core away, only when the work itself gets slower (a read
    # disturbing the interpreter's caches), so they tell a 1 % effect in fewer windows.
    secs, out = float(sys.argv[2]), sys.argv[3]
    print("ready %d" % os.getpid(), flush=True)
    bins, cpu, t0, acc = {}, {}, time.time(), 0
    c_prev, b_prev = time.thread_time_ns(), int(time.time() * 10)
    while time.time() - t0 < secs:
        acc = deep(10, acc) % 1000
        b = int(time.time() * 10)
        bins[b] = bins.get(b, 0) + 1
        if b != b_prev:
            c = time.thread_time_ns()
            cpu[b_prev] = cpu.get(b_prev, 0) + c - c_prev
            c_prev, b_prev = c, b
    json.dump(bins, open(out, "w"))
    json.dump(cpu, open(out.replace("bins", "cpu"), "w"))
    sys.exit(0)

if sys.argv[1] == "--target":
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    secs, out = float(sys.argv[2]), sys.argv[3]
    dev = torch.device("cuda", 0)
    model = nn.Sequential(nn.Linear(1024, 2048), nn.GELU(), nn.Linear(2048, 2048), nn.GELU(),
                          nn.Linear(2048, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(256, 1024, device=dev)
    y = torch.randint(0, 10, (256,), device=dev)
    for _ in range(50):
        F.cross_entropy(model(x), y).backward()
    torch.cuda.synchronize()
    print("ready %d" % os.getpid(), flush=True)
    bins, i, t0 = {}, 0, time.time()
    while time.time() - t0 < secs:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        i += 1
        if i % 10 == 0:
            loss.item()
        b = int(time.time() * 10)
        bins[b] = bins.get(b, 0) + 1
    json.dump(bins, open(out, "w"))
    sys.exit(0)

gw, pairs, outdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
kind = sys.argv[4] if len(sys.argv) > 4 else "torch"
secs = 15 + pairs * 4.6
tgt = subprocess.Popen([sys.executable, __file__, "--target" if kind == "torch" else "--python-target",
                        str(secs), os.path.join(outdir, "stepcost3-bins.json")],
                       stdout=subprocess.PIPE, text=True)
pid = int(tgt.stdout.readline().split()[1])
time.sleep(5)
windows = []
for k in range(pairs):
    a = time.time()
    subprocess.run([gw, "stacks", str(pid), "--samples", "20"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    b = time.time()
    time.sleep(2.0)
    windows.append({"on": [a, b], "off": [b, time.time()]})
tgt.wait()
json.dump({"pid": pid, "windows": windows}, open(os.path.join(outdir, "stepcost3-windows.json"), "w"))
print("done", len(windows))
