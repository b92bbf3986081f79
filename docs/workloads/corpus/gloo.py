"""Ranks of one job sharing one GPU over gloo, for gpuwatch's stack evidence (issue 24).

usage: RANK=r WORLD_SIZE=n MASTER_ADDR=127.0.0.1 MASTER_PORT=p TORCHELASTIC_RUN_ID=id \
       python3 gloo.py KIND DURATION_S MARKFILE

Every rank trains a little on GPU 0 (bf16 matmuls) and all-reduces a small CPU tensor over gloo
each step. After ONSET_AFTER seconds of that, one rank stops (the culprit) and the others block
in the next all_reduce. NCCL's kernels spin on the GPU while they wait; gloo's wait is on the
host, so a waiting rank first queues spinning kernels (torch.cuda._sleep) as NCCL's would, so the
GPU reads 100 % busy at its idle power, as in a real stuck collective.

  gloo_stall_e   3 ranks; rank 2 stops stepping and sleeps in Python, holding its context
  gloo_kernel_f  2 ranks; rank 1 launches a kernel that runs for minutes and waits for it in
                 loss.item() (a rank stuck in its own kernel); rank 0 waits in all_reduce

Marks (one JSON line each, with "rank" and "gpu": 0): start, ready, onset (with "culprit": true
on the culprit rank), end (written by a timer that then os._exit()s, since a blocked rank cannot
end by itself).
"""
import json, os, sys, threading, time, datetime

KIND, DUR, MARKS = sys.argv[1], float(sys.argv[2]), sys.argv[3]
RANK, WORLD = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
ONSET_AFTER = 10.0


def mark(m, **extra):
    rec = {"job": KIND, "mark": m, "t": time.time(), "pid": os.getpid(), "gpu": 0, "rank": RANK}
    rec.update(extra)
    fd = os.open(MARKS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(rec) + "\n").encode())
    finally:
        os.close(fd)


mark("start")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group("gloo", rank=RANK, world_size=WORLD, timeout=datetime.timedelta(seconds=600))
dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
x = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
grad = torch.zeros(1024)


def step():
    y = x
    for _ in range(4):
        y = torch.tanh(y @ w)
    grad.fill_(float(y[0, 0]))          # the step's result, on the host
    dist.all_reduce(grad)               # gloo: waits on the host for every rank


for _ in range(5):
    step()
dist.barrier()
torch.cuda.synchronize()
ready_t = time.time()
mark("ready")


def finish():
    time.sleep(max(0.0, ready_t + DUR - time.time()))
    mark("end", via="timer")
    os._exit(0)


threading.Thread(target=finish, daemon=True, name="timer").start()
while time.time() < ready_t + ONSET_AFTER:
    step()

culprit = (KIND == "gloo_stall_e" and RANK == 2) or (KIND == "gloo_kernel_f" and RANK == 1)
mark("onset", culprit=culprit)
if culprit and KIND == "gloo_stall_e":
    while True:
        time.sleep(1.0)                 # stopped stepping: the others wait for it
elif culprit:
    for _ in range(200):
        torch.cuda._sleep(1_000_000_000)   # a kernel that takes minutes in all
    loss = (w.float() ** 2).mean()
    loss.item()                         # waits for it
else:
    for _ in range(200):
        torch.cuda._sleep(1_000_000_000)   # what NCCL's waiting kernel does to the GPU
    dist.all_reduce(grad)               # blocks: the culprit never joins
time.sleep(3600)
