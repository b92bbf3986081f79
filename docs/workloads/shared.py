"""Processes that share one GPU, for the `shared` rule (run 67). One process of a kind:

    python3 shared.py train SECONDS [BATCH]   # an MLP trained in bf16 on `cuda` (the device
                                              # every rank picks when none sets it)
    python3 shared.py matmul SECONDS          # bf16 8192² products back to back
    python3 shared.py probe SECONDS           # a tiny kernel every 0.5 s (an eval/monitor sidecar)
    python3 shared.py spin SECONDS            # one spinning kernel at a time (a hung collective)

Prints `start` and `ready` lines with the wall-clock time, as the corpus marks do."""
import os, sys, time, torch

kind, secs = sys.argv[1], float(sys.argv[2])
dev = torch.device("cuda")  # not cuda:LOCAL_RANK: the bug the rule names
rank = os.environ.get("RANK")
print(f"start {kind} pid {os.getpid()} rank {rank} {time.time():.3f}", flush=True)


def train(batch):
    model = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(6)]).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(batch, 4096, device=dev)
    yield
    while True:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        yield


def matmul():
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    yield
    while True:
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()
        yield


def probe():
    x = torch.randn(1024, device=dev)
    yield
    while True:
        float((x * 2).sum())
        time.sleep(0.5)
        yield


def spin():
    yield
    while True:
        torch.cuda._sleep(200_000_000)
        torch.cuda.synchronize()
        yield


steps = {"train": lambda: train(int(sys.argv[3]) if len(sys.argv) > 3 else 4096),
         "matmul": matmul, "probe": probe, "spin": spin}[kind]()
next(steps)
torch.cuda.synchronize()
print(f"ready {kind} pid {os.getpid()} {time.time():.3f}", flush=True)
t = time.time()
while time.time() - t < secs:
    next(steps)
torch.cuda.synchronize()
print(f"end {kind} pid {os.getpid()} {time.time():.3f}", flush=True)
