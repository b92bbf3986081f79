"""Two-GPU labelled jobs for the gpuwatch corpus.

usage: python3 ddp.py KIND DURATION_S MARKFILE

Spawns two rank processes (rank r on GPU r, NCCL) with torch.multiprocessing.spawn. The parent
writes "start" before importing torch and never touches torch.cuda (no CUDA context). Each rank
appends its own marks to MARKFILE: start (rank process start), ready, onset (hang kinds), end;
each line carries "rank" and "gpu". The parent's lines carry "rank": null, "gpu": null: "start",
and "exit" (the ranks' exit codes) when both ranks are gone.
Every rank ends by itself: a timer calls os._exit once the job's time is up, so a rank stuck in
a collective (the hang kinds) cannot outlive the job. See README.md for the kinds.
"""
import time, sys, json, os

T0 = time.time()          # in a rank process: when the rank's interpreter began importing this file

PORTS = {"ddp_healthy_a": 29511, "ddp_healthy_b": 29512, "ddp_dead_rank": 29513,
         "ddp_uneven_steps": 29514, "ddp_host_stall": 29515}


def write_mark(markfile, rec):
    line = (json.dumps(rec) + "\n").encode()
    fd = os.open(markfile, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


if __name__ == "__main__":
    # `--rank R`: this process is one rank, started by a launcher that put RANK, WORLD_SIZE,
    # MASTER_ADDR, MASTER_PORT (and TORCHELASTIC_RUN_ID) in its environment, as torchrun does.
    _RANK = None
    if len(sys.argv) == 6 and sys.argv[4] == "--rank":
        _RANK = int(sys.argv[5])
        del sys.argv[4:]
    if len(sys.argv) != 4:
        sys.stderr.write(__doc__)
        sys.exit(2)
    _KIND, _DUR, _MARKFILE = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    write_mark(_MARKFILE, {"job": _KIND, "mark": "start", "t": time.time(), "pid": os.getpid(),
                           "gpu": None, "rank": None})

import threading, traceback, datetime, math  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

ONSET_AFTER = 10.0          # seconds of healthy steps after "ready" before the hang kinds diverge


class Rank:
    def __init__(self, rank, kind, dur, markfile):
        self.rank, self.kind, self.dur, self.markfile = rank, kind, dur, markfile
        self.ready_t = None
        self.deadline = None
        self._lock = threading.Lock()
        self._ended = False

    def mark(self, m, t=None, **extra):
        rec = {"job": self.kind, "mark": m, "t": time.time() if t is None else t, "pid": os.getpid(),
               "gpu": self.rank, "rank": self.rank}
        rec.update(extra)
        write_mark(self.markfile, rec)

    def end_once(self, **extra):
        with self._lock:
            if self._ended:
                return False
            self._ended = True
        self.mark("end", **extra)
        return True

    def finish(self, code, via):
        """Write "end" (once) and leave at once, whatever the main thread is doing."""
        try:
            self.end_once(via=via)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    def fail(self, code, msg):
        """Write "error" and leave at once (the safety timer: start-up never finished)."""
        try:
            with self._lock:
                self._ended = True
            self.mark("error", msg=msg)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    def ready(self, extra_timer_s=0.0, **extra):
        torch.cuda.synchronize()
        t = time.time()
        self.ready_t = t
        # never past start + dur + 45 s: the parent gives up at dur + 55 s, the driver at dur + 60 s
        self.deadline = min(t + self.dur, T0 + self.dur + 45.0)
        self.mark("ready", t=t, **extra)
        timer = threading.Timer(max(0.0, self.deadline + extra_timer_s - time.time()),
                                self.finish, args=(0, "timer"))
        timer.daemon = True
        timer.start()
        return t


def stop_agreed(R, dev):
    """Both ranks stop at the same step: rank 0's clock decides, broadcast to rank 1."""
    flag = torch.tensor([1 if (R.rank == 0 and time.time() >= R.deadline) else 0], device=dev, dtype=torch.int32)
    dist.broadcast(flag, src=0)
    return bool(flag.item())


def tiny_barrier(dev):
    t = torch.ones(1, device=dev)
    dist.all_reduce(t)
    torch.cuda.synchronize()


def finish_healthy(R, dev):
    tiny_barrier(dev)          # both ranks are past their last collective
    R.finish(0, "normal")


# ------------------------------------------------------------------------------------ kinds
def ddp_healthy_a(R, dev):
    """DDP of a big MLP (134 M fp32 parameters: ~540 MB of gradients all-reduced per step)
    under bf16 autocast, with a small batch so the all-reduce is a large share of the step."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.backends.cuda.matmul.allow_tf32 = True
    layers = []
    for _ in range(8):
        layers += [nn.Linear(4096, 4096), nn.GELU()]
    model = nn.Sequential(*layers, nn.Linear(4096, 10)).to(dev)
    ddp = DDP(model, device_ids=[R.rank], output_device=R.rank)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-5)
    gen = torch.Generator(device=dev)
    gen.manual_seed(1000 + R.rank)

    def step():
        x = torch.randn(1024, 4096, device=dev, generator=gen)
        y = torch.randint(0, 10, (1024,), device=dev, generator=gen)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            out = ddp(x)
        loss = F.cross_entropy(out.float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()               # DDP all-reduces the gradient buckets here
        opt.step()
        return loss

    for _ in range(5):
        step()
    tiny_barrier(dev)
    R.ready(extra_timer_s=20.0, grad_mb=round(sum(p.numel() for p in model.parameters()) * 4 / 1e6))
    i = 0
    while True:
        loss = step()
        i += 1
        if i % 20 == 0:
            loss.item()
            if stop_agreed(R, dev):
                break
    finish_healthy(R, dev)


def ddp_healthy_b(R, dev):
    """FSDP-like by hand: each rank holds half of every layer's weight; all_gather_into_tensor
    before use, reduce_scatter_tensor of the full gradient after; big bf16 buffers."""
    bf = torch.bfloat16
    L, D, B = 8, 8192, 4096
    torch.manual_seed(7 + R.rank)
    shards = [torch.randn(D // 2, D, device=dev, dtype=bf) / math.sqrt(D) for _ in range(L)]
    gshard = torch.empty(D // 2, D, device=dev, dtype=bf)
    x0 = torch.randn(B, D, device=dev, dtype=bf)

    def step():
        acts = []
        h = x0
        for l in range(L):
            full = torch.empty(D, D, device=dev, dtype=bf)
            dist.all_gather_into_tensor(full, shards[l])
            h = torch.tanh(h @ full.t())
            acts.append(h)
        for l in reversed(range(L)):
            prev = acts[l - 1] if l > 0 else x0
            g = acts[l].t() @ prev                # (D x B) @ (B x D): a full-size "gradient"
            dist.reduce_scatter_tensor(gshard, g)
            shards[l].add_(gshard, alpha=-1e-7)
        return h

    for _ in range(3):
        step()
    tiny_barrier(dev)
    R.ready(extra_timer_s=20.0)
    i = 0
    while True:
        h = step()
        i += 1
        if i % 5 == 0:
            h[0, 0].item()
            if stop_agreed(R, dev):
                break
    finish_healthy(R, dev)


def _hang_kind(R, dev, mode):
    """Healthy data-parallel steps (explicit all_reduce of the flattened gradients) for about
    ONSET_AFTER seconds, then the ranks diverge: rank 0 enters the next all_reduce and waits
    there; rank 1 dies (dead), sleeps (uneven) or computes on the host (host_stall)."""
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(1)
    layers = []
    for _ in range(4):
        layers += [nn.Linear(4096, 4096), nn.GELU()]
    model = nn.Sequential(*layers, nn.Linear(4096, 10)).to(dev)
    params = [p for p in model.parameters()]
    sizes = [p.numel() for p in params]
    opt = torch.optim.SGD(params, lr=1e-4, momentum=0.9)
    gen = torch.Generator(device=dev)
    gen.manual_seed(2000 + R.rank)

    def step():
        x = torch.randn(2048, 4096, device=dev, generator=gen)
        y = torch.randint(0, 10, (2048,), device=dev, generator=gen)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            out = model(x)
        loss = F.cross_entropy(out.float(), y)
        opt.zero_grad(set_to_none=False)
        loss.backward()
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        dist.all_reduce(flat)                 # the collective that rank 0 ends up waiting in
        flat.div_(2.0)
        off = 0
        for p, n in zip(params, sizes):
            p.grad.copy_(flat[off:off + n].view_as(p.grad))
            off += n
        opt.step()
        return loss

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    t = time.time()
    for _ in range(10):
        step()
    torch.cuda.synchronize()
    step_s = (time.time() - t) / 10.0
    k = torch.tensor([max(1, int(round(ONSET_AFTER / max(step_s, 1e-4))))], device=dev, dtype=torch.int64)
    dist.broadcast(k, src=0)                  # both ranks agree on the step where they diverge
    K = int(k.item())
    R.ready(steps_before_onset=K, step_s=round(step_s, 5))
    for i in range(K):
        loss = step()
        if i % 20 == 19:
            loss.item()
    torch.cuda.synchronize()
    if R.rank == 1:
        R.mark("onset", what=mode)
        if mode == "dead":
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)                       # the rank dies; no "end" mark
        elif mode == "uneven":
            while True:                       # idle in Python with its CUDA context; the timer ends it
                time.sleep(0.5)
        else:
            s = 0
            while True:                       # a host-side straggler: pure-Python CPU work
                for j in range(200000):
                    s = (s + j * j) % 1000003
    else:
        R.mark("onset", what="waiting in all_reduce")
        step()                                # enqueues the all_reduce that never completes
        torch.cuda.synchronize()              # blocks here until the timer ends the process
        R.mark("note", msg="stuck collective returned")
        while True:
            time.sleep(0.5)


def ddp_dead_rank(R, dev):
    _hang_kind(R, dev, "dead")


def ddp_uneven_steps(R, dev):
    _hang_kind(R, dev, "uneven")


def ddp_host_stall(R, dev):
    _hang_kind(R, dev, "host_stall")


KINDS = {"ddp_healthy_a": ddp_healthy_a, "ddp_healthy_b": ddp_healthy_b, "ddp_dead_rank": ddp_dead_rank,
         "ddp_uneven_steps": ddp_uneven_steps, "ddp_host_stall": ddp_host_stall}


def rank_main(rank, kind, dur, markfile):
    R = Rank(rank, kind, dur, markfile)
    R.mark("start", t=T0)
    safety = threading.Timer(max(1.0, T0 + dur + 50.0 - time.time()), R.fail,
                             args=(3, "safety timer: the rank overran start + duration + 50 s"))
    safety.daemon = True
    safety.start()
    try:
        os.environ["RANK"] = str(rank)
        os.environ["LOCAL_RANK"] = str(rank)
        os.environ["WORLD_SIZE"] = "2"
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ.setdefault("MASTER_PORT", str(PORTS[kind]))
        os.environ["NCCL_NVLS_ENABLE"] = "0"
        torch.cuda.set_device(rank)
        dev = torch.device("cuda", rank)
        dist.init_process_group("nccl", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=300))
        KINDS[kind](R, dev)
        R.finish(0, "return")
    except BaseException as e:
        traceback.print_exc()
        try:
            R.mark("error", msg=("%s: %s" % (type(e).__name__, e))[:2000])
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)


def main():
    kind, dur, markfile = _KIND, _DUR, _MARKFILE
    if kind not in KINDS:
        sys.stderr.write("unknown kind %r (known: %s)\n" % (kind, ", ".join(sorted(KINDS))))
        write_mark(markfile, {"job": kind, "mark": "error", "t": time.time(), "pid": os.getpid(),
                              "gpu": None, "rank": None, "msg": "unknown kind"})
        return 2
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    if _RANK is not None:
        rank_main(_RANK, kind, dur, markfile)     # exits by itself (os._exit)
        return 1
    ctx = mp.spawn(rank_main, args=(kind, dur, markfile), nprocs=2, join=False)
    procs = list(ctx.processes)
    # join by hand: mp.spawn's own join would kill rank 0 as soon as rank 1 exits non-zero
    limit = T0 + dur + 55.0
    while any(p.is_alive() for p in procs) and time.time() < limit:
        for p in procs:
            p.join(timeout=0.5)
    killed = []
    for r, p in enumerate(procs):
        if p.is_alive():
            killed.append(r)
            p.terminate()
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
            p.join(timeout=5)
    codes = [p.exitcode for p in procs]
    write_mark(markfile, {"job": kind, "mark": "exit", "t": time.time(), "pid": os.getpid(), "gpu": None,
                          "rank": None, "codes": codes, "killed": killed})
    print("%s: rank exit codes %s%s" % (kind, codes, (", killed %s" % killed) if killed else ""), flush=True)
    expected = [0, 1] if kind == "ddp_dead_rank" else [0, 0]
    return 0 if codes == expected and not killed else 1


if __name__ == "__main__":
    sys.exit(main())
