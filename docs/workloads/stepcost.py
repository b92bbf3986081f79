"""What reading a process's Python stacks costs it: a training loop (a small MLP, a step of a few
ms with Python between kernels, .item() every 10 steps) that writes its steps per second, second
by second, to OUTFILE as JSON lines ({"t": s since ready, "steps": n}). Another process reads its
stacks for part of the run (run18.sh: `gpuwatch stacks PID --samples 200`, 20 s at 10 Hz, more
than any burst) and the rates with and without are compared.

usage: python3 stepcost.py SECONDS OUTFILE
"""
import json, os, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

secs, out = float(sys.argv[1]), sys.argv[2]
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
t0 = time.time()
sec, n, i = 0, 0, 0
with open(out, "w") as f:
    while True:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        i += 1
        if i % 10 == 0:
            loss.item()
        n += 1
        el = time.time() - t0
        if el >= sec + 1:
            f.write(json.dumps({"t": sec, "steps": n}) + "\n")
            f.flush()
            sec, n = sec + 1, 0
            if sec >= secs:
                break
