"""Run 39: a training loop whose DataLoader (2 workers, not persistent) forks new workers at
each epoch (about every 6 s) from the main thread, and, 15 s in, a helper thread that starts a
child process of its own. Prints each epoch's worker pids and the helper's child with the time
they were seen from inside, so a recording made beside it can be checked against them."""
import json, os, subprocess, sys, threading, time, torch
from torch.utils.data import DataLoader, Dataset

DUR = float(sys.argv[1]) if len(sys.argv) > 1 else 40.0
out = open(sys.argv[2] if len(sys.argv) > 2 else "/dev/stdout", "w")
dev = torch.device("cuda")

class Slow(Dataset):
    def __len__(self):
        return 48
    def __getitem__(self, i):
        time.sleep(0.05)
        return torch.randn(3, 64, 64), i % 10

def log(**kw):
    kw["t"] = time.time()
    out.write(json.dumps(kw) + "\n"); out.flush()

def helper():
    time.sleep(15)
    p = subprocess.Popen(["sleep", str(DUR)])
    log(event="thread_child", pid=p.pid, tid=threading.get_native_id())
    p.wait()

threading.Thread(target=helper, daemon=True).start()
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 64 * 64, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Slow(), batch_size=8, num_workers=2, persistent_workers=False)
log(event="start", pid=os.getpid())
t0 = time.time()
while time.time() - t0 < DUR:
    it = iter(loader)
    log(event="epoch", workers=[w.pid for w in it._workers])
    for x, y in it:
        loss = torch.nn.functional.cross_entropy(model(x.to(dev)), y.to(dev))
        opt.zero_grad(); loss.backward(); opt.step()
log(event="end")
