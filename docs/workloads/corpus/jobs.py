"""One labelled single-GPU job for the gpuwatch corpus.

usage: python3 jobs.py KIND DURATION_S MARKFILE [--gpu N]

Runs ONE job of kind KIND on GPU N (default 0) and appends JSON lines to MARKFILE:
  {"job": KIND, "mark": M, "t": time.time(), "pid": PID, "gpu": N, ...}
with M one of: start (before `import torch`), ready (steady state begins), onset (the labelled
problem begins; same t as ready where the problem is there from the start; absent for healthy
and start-up kinds), end (normal exit, after a synchronize), note, error.
The steady state lasts DURATION_S seconds after "ready" (cut short if start-up was so long that
the job would otherwise run into the driver's `timeout`: it never runs past start + DURATION_S + 50 s).
See README.md in this folder for the kinds and their labels.
"""
import time, sys, json, os

T0 = time.time()


def _parse_args(argv):
    args = list(argv[1:])
    gpu = 0
    rest = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--gpu" and i + 1 < len(args):
            gpu = int(args[i + 1])
            i += 2
            continue
        if a.startswith("--gpu="):
            gpu = int(a.split("=", 1)[1])
            i += 1
            continue
        rest.append(a)
        i += 1
    if len(rest) != 3:
        sys.stderr.write(__doc__)
        sys.exit(2)
    return rest[0], float(rest[1]), rest[2], gpu


KIND, DURATION, MARKFILE, GPU = _parse_args(sys.argv)


def mark(m, t=None, **extra):
    rec = {"job": KIND, "mark": m, "t": time.time() if t is None else t, "pid": os.getpid(), "gpu": GPU}
    rec.update(extra)
    line = (json.dumps(rec) + "\n").encode()
    fd = os.open(MARKFILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)   # one write of one line with O_APPEND: lines of concurrent jobs do not interleave
    finally:
        os.close(fd)


mark("start")

import threading, random, math, traceback, signal, shutil, mmap, warnings  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# Hard limits: the driver runs each job under `timeout DURATION+60`; the job must end first.
STARTUP_LIMIT = DURATION + 50.0      # steady state never runs past T0 + this
WATCHDOG_LIMIT = DURATION + 56.0     # forced exit (with an "error" mark) past T0 + this

STATE = {"ready": None, "deadline": None}


def _watchdog():
    while True:
        time.sleep(0.5)
        now = time.time()
        limit = T0 + WATCHDOG_LIMIT
        if STATE["ready"] is not None:
            limit = min(limit, STATE["deadline"] + 25.0)
        if now > limit:
            try:
                mark("error", msg="watchdog: job overran its time limit, forced exit")
            finally:
                os._exit(3)


MAIN_PID = os.getpid()


def _on_sigterm(signum, frame):
    if os.getpid() != MAIN_PID:       # a forked DataLoader worker: just go
        os._exit(128 + signum)
    try:
        mark("error", msg="killed by signal %d" % signum)
    finally:
        os._exit(128 + signum)


def ready(onset=False, **extra):
    """Start-up is over: synchronize, write "ready" (and "onset" at the same t if the problem is
    there from the start), fix the deadline of the steady state."""
    torch.cuda.synchronize()
    t = time.time()
    STATE["ready"] = t
    STATE["deadline"] = min(t + DURATION, T0 + STARTUP_LIMIT)
    mark("ready", t=t, **extra)
    if onset:
        mark("onset", t=t)
    return t


def deadline():
    return STATE["deadline"]


def running():
    return time.time() < STATE["deadline"]


def free_bytes(dev):
    free, _total = torch.cuda.mem_get_info(dev)
    return free


GiB = 1 << 30
MiB = 1 << 20


# ----------------------------------------------------------------------------------- models
class SmallCNN(nn.Module):
    """A small conv net for the starved kinds (the GPU part of a step takes a few ms)."""

    def __init__(self, classes=10):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, classes))

    def forward(self, x):
        return self.net(x)


class ConvBNNet(nn.Module):
    """A VGG-ish conv net with batch norm (healthy phase of spin_hang_b)."""

    def __init__(self, classes=100):
        super().__init__()

        def block(cin, cout):
            return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]

        self.net = nn.Sequential(
            *block(3, 64), *block(64, 64), nn.MaxPool2d(2),
            *block(64, 128), *block(128, 128), nn.MaxPool2d(2),
            *block(128, 256), *block(256, 256), nn.MaxPool2d(2),
            *block(256, 512), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes))

    def forward(self, x):
        return self.net(x)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride=1):
        super().__init__()
        cout = width * self.expansion
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return self.relu(y + idt)


class HandResNet50(nn.Module):
    """ResNet-50 layout written by hand (used when torchvision is missing or broken)."""

    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(3, stride=2, padding=1))
        layers = []
        cin = 64
        for width, n, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(n):
                layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = width * Bottleneck.expansion
        self.layers = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes))

    def forward(self, x):
        return self.head(self.layers(self.stem(x)))


class Block(nn.Module):
    """Pre-norm transformer block with scaled_dot_product_attention (inference kind)."""

    def __init__(self, d, heads):
        super().__init__()
        self.h = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q = q.view(b, s, self.h, d // self.h).transpose(1, 2)
        k = k.view(b, s, self.h, d // self.h).transpose(1, 2)
        v = v.view(b, s, self.h, d // self.h).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class ResMLP(nn.Module):
    """Residual MLP blocks (startup_compile)."""

    def __init__(self, d, hidden, n):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(d), nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d)) for _ in range(n))
        self.out = nn.Linear(d, d)

    def forward(self, x):
        for b in self.blocks:
            x = x + b(x)
        return self.out(x)


def make_grad_scaler():
    try:
        return torch.amp.GradScaler("cuda")
    except (AttributeError, TypeError):
        return torch.cuda.amp.GradScaler()


# ------------------------------------------------------------------------------------ kinds
def healthy_transformer_bf16(dev):
    torch.backends.cuda.matmul.allow_tf32 = True
    V, D, L, H, B, S = 8192, 1024, 8, 16, 32, 512

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, D)
            self.pos = nn.Parameter(torch.zeros(S, D))
            layer = nn.TransformerEncoderLayer(D, H, 4 * D, dropout=0.1, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.enc = nn.TransformerEncoder(layer, L, enable_nested_tensor=False)
            self.head = nn.Linear(D, V)

        def forward(self, tok):
            return self.head(self.enc(self.emb(tok) + self.pos))

    model = LM().to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)

    def step():
        tok = torch.randint(0, V, (B, S), device=dev)
        tgt = torch.roll(tok, -1, dims=1)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            logits = model(tok)
        loss = F.cross_entropy(logits.float().view(-1, V), tgt.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):
        step()
    ready()
    i = 0
    while running():
        loss = step()
        i += 1
        if i % 25 == 0:
            loss.item()


def healthy_cnn_fp16(dev):
    torch.backends.cudnn.benchmark = True
    arch = "hand-resnet50"
    model = None
    try:
        import torchvision
        try:
            model = torchvision.models.resnet50(weights=None)
        except TypeError:
            model = torchvision.models.resnet50()
        arch = "torchvision-resnet50"
    except Exception as e:  # missing or mismatched torchvision
        mark("note", msg="torchvision unavailable, using the hand-written ResNet-50: %s" % str(e)[:300])
        model = None
    if model is None:
        model = HandResNet50()
    model = model.to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    scaler = make_grad_scaler()
    x = torch.randn(128, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (128,), device=dev)

    def step():
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    for _ in range(5):       # cudnn.benchmark autotunes here, inside start-up
        step()
    ready(arch=arch)
    i = 0
    while running():
        loss = step()
        i += 1
        if i % 20 == 0:
            loss.item()


def healthy_membound(dev):
    n = 1 << 30
    x = torch.rand(n, device=dev)
    z = torch.rand(n, device=dev)
    y = torch.empty_like(x)
    for _ in range(5):
        torch.add(z, x, alpha=1.0001, out=y)     # y = x * 1.0001 + z in one elementwise kernel
    ready()
    while running():
        for _ in range(50):
            torch.add(z, x, alpha=1.0001, out=y)
        torch.cuda.synchronize()


def healthy_infer_bs(dev):
    D, H, L, B, S = 1024, 16, 6, 256, 128
    model = nn.Sequential(*[Block(D, H) for _ in range(L)], nn.LayerNorm(D), nn.Linear(D, 1000))
    model = model.to(dev, dtype=torch.bfloat16).eval()
    xs = [torch.randn(B, S, D, device=dev, dtype=torch.bfloat16) for _ in range(4)]
    with torch.inference_mode():
        for i in range(5):
            model(xs[i % 4])
        ready()
        i = 0
        acc = torch.zeros((), device=dev, dtype=torch.float32)
        while running():
            out = model(xs[i % 4])
            acc += out[:, 0, :].float().mean()
            i += 1
            if i % 50 == 0:
                acc.item()               # the only host sync: every 50 steps


def _calibrate_spin(cycles):
    """Seconds that torch.cuda._sleep(cycles) takes (second of two tries)."""
    dt = 0.0
    for _ in range(2):
        torch.cuda.synchronize()
        t = time.time()
        torch.cuda._sleep(int(cycles))
        torch.cuda.synchronize()
        dt = time.time() - t
    return max(dt, 1e-4)


def spin_hang_a(dev):
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    for _ in range(20):
        c = a @ b
    rate = 2e8 / _calibrate_spin(2e8)          # clock cycles per second of the spinning kernel
    t_ready = ready(spin_cycles_per_s=round(rate))
    onset_at = t_ready + 8.0
    while running() and time.time() < onset_at:    # healthy lead-in
        for _ in range(20):
            c = a @ b
        torch.cuda.synchronize()
    mark("onset")
    while True:
        left = deadline() - time.time()
        if left < 0.05:
            break
        torch.cuda._sleep(int(rate * min(1.5, left)))   # one kernel spinning on one thread
        torch.cuda.synchronize()
    del c


def spin_hang_b(dev):
    torch.backends.cudnn.benchmark = True
    model = ConvBNNet().to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(64, 3, 128, 128, device=dev)
    y = torch.randint(0, 100, (64,), device=dev)

    def step():
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for _ in range(5):
        step()
    CYC = 500_000_000
    t_sleep = _calibrate_spin(CYC)
    t_ready = ready(sleep_s=round(t_sleep, 4))
    onset_at = t_ready + 8.0
    i = 0
    while running() and time.time() < onset_at:     # healthy lead-in
        loss = step()
        i += 1
        if i % 10 == 0:
            loss.item()
    torch.cuda.synchronize()
    mark("onset")
    side = torch.cuda.Stream(device=dev)
    with torch.cuda.stream(side):
        while True:
            left = deadline() - time.time()
            n = min(8, int(left / t_sleep))
            if n < 1:
                break
            for _ in range(n):                     # queued without host syncs on a side stream
                torch.cuda._sleep(CYC)
                torch.ones(1, device=dev).sum()
            torch.cuda.synchronize()               # the main thread blocks here
    torch.cuda.synchronize()


class CpuHeavyDataset(torch.utils.data.Dataset):
    """Decode/augment-like numpy work on one core: several passes over a 3x128x128 image."""

    def __init__(self, passes=40):
        self.passes = passes

    def __len__(self):
        return 10 ** 7

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = rng.integers(0, 256, size=(3, 128, 128), dtype=np.uint8)   # "decoded" bytes
        x = img.astype(np.float32) / 255.0
        for _ in range(self.passes):
            x = np.sqrt(x * x + 0.25) * 0.95
            x = x * 1.01 - 0.005
        return torch.from_numpy(np.ascontiguousarray(x)), int(img[0, 0, 0] % 10)


def _train_loader(dev, loader, model, opt, warm_batches, onset=True, bf16=False):
    it = iter(loader)
    for _ in range(warm_batches):
        xb, yb = next(it)
        _cls_step(dev, model, opt, xb, yb, bf16)
    ready(onset=onset)
    steps = 0
    try:
        while running():
            xb, yb = next(it)
            _cls_step(dev, model, opt, xb, yb, bf16)
            steps += 1
    finally:
        del it       # shuts DataLoader workers down
    return steps


def _cls_step(dev, model, opt, xb, yb, bf16):
    xb = xb.to(dev)
    yb = yb.to(dev)
    if bf16:
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(xb), yb)
    else:
        loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss


def starved_cpu_a(dev):
    model = SmallCNN().to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = torch.utils.data.DataLoader(CpuHeavyDataset(), batch_size=64, shuffle=False, num_workers=0)
    _train_loader(dev, loader, model, opt, warm_batches=2)


class RollAugmentDataset(torch.utils.data.Dataset):
    """Convolution-like augmentation with np.roll over 3x160x160 (runs in DataLoader workers)."""

    def __init__(self, rounds=12):
        self.rounds = rounds

    def __len__(self):
        return 10 ** 7

    def __getitem__(self, i):
        rng = np.random.default_rng(i + 12345)
        x = rng.random((3, 160, 160), dtype=np.float32)
        for _ in range(self.rounds):
            x = (x + np.roll(x, 1, axis=1) + np.roll(x, -1, axis=1)
                 + np.roll(x, 1, axis=2) + np.roll(x, -1, axis=2)) * 0.2
        return torch.from_numpy(x.reshape(-1)), int(i % 10)


def _worker_init(_wid):
    torch.set_num_threads(1)


def starved_cpu_b(dev):
    model = nn.Sequential(nn.Linear(3 * 160 * 160, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(),
                          nn.Linear(1024, 10)).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loader = torch.utils.data.DataLoader(RollAugmentDataset(), batch_size=64, shuffle=False, num_workers=2,
                                         prefetch_factor=2, worker_init_fn=_worker_init)
    _train_loader(dev, loader, model, opt, warm_batches=2, bf16=True)


class SlowStorageDataset(torch.utils.data.Dataset):
    """Each sample 'fetched' from slow remote storage: 20-40 ms of sleeping, little CPU."""

    def __len__(self):
        return 10 ** 7

    def __getitem__(self, i):
        time.sleep(random.uniform(0.020, 0.040))
        rng = np.random.default_rng(i)
        x = rng.standard_normal((3, 96, 96), dtype=np.float32)
        return torch.from_numpy(x), int(i % 10)


def starved_io_a(dev):
    model = SmallCNN().to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = torch.utils.data.DataLoader(SlowStorageDataset(), batch_size=32, shuffle=False, num_workers=0)
    _train_loader(dev, loader, model, opt, warm_batches=1)


def starved_io_b(dev):
    FILE = 64 * MiB
    root = "/tmp/corpus_io"
    d = os.path.join(root, "job-%d" % os.getpid())
    os.makedirs(d, exist_ok=True)
    files = []
    try:
        n_files = 64
        try:
            free = shutil.disk_usage(d).free
            n_files = max(8, min(64, int((free - 8 * GiB) // FILE)))
        except OSError:
            pass
        block = bytearray(np.random.default_rng(0).integers(0, 256, size=FILE, dtype=np.uint8).tobytes())
        for k in range(n_files):
            block[0:8] = k.to_bytes(8, "little")
            p = os.path.join(d, "shard-%03d.bin" % k)
            with open(p, "wb") as f:
                f.write(block)
                f.flush()
                os.fsync(f.fileno())
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            files.append(p)
        del block
        buf = mmap.mmap(-1, FILE)          # page-aligned, as O_DIRECT wants
        mv = memoryview(buf)
        direct = [hasattr(os, "O_DIRECT")]

        def read_into(path):
            fd = None
            if direct[0]:
                try:
                    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
                except OSError:
                    direct[0] = False
                    fd = None
            if fd is None:
                fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                got = 0
                while got < FILE:
                    try:
                        n = os.readv(fd, [mv[got:]])
                    except OSError:
                        if direct[0]:              # O_DIRECT refused at read time: go buffered
                            direct[0] = False
                            os.close(fd)
                            fd = os.open(path, os.O_RDONLY)
                            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                            os.lseek(fd, got, os.SEEK_SET)
                            continue
                        raise
                    if n <= 0:
                        break
                    got += n
                return got
            finally:
                os.close(fd)

        model = nn.Sequential(nn.Linear(4096, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                              nn.Linear(1024, 10)).to(dev).train()
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
        arr = np.frombuffer(buf, dtype=np.uint8)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            host = torch.from_numpy(arr)

        def step(k):
            read_into(files[k % len(files)])
            time.sleep(0.05)                      # the "storage" latency on top of the read
            x = host.to(dev).view(-1, 4096).float().div_(255.0)     # blocking pageable copy
            yb = x[:, 0].mul(255.0).long() % 10
            loss = F.cross_entropy(model(x), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss

        for k in range(2):
            step(k)
        ready(onset=True, files=len(files), o_direct=bool(direct[0]))
        k = 2
        loss = None
        while running():
            loss = step(k)
            k += 1
        if loss is not None:
            loss.item()
        mark("note", msg="read %d files, O_DIRECT=%s" % (k, bool(direct[0])))
    finally:
        for p in files:
            try:
                os.remove(p)
            except OSError:
                pass
        try:
            os.rmdir(d)
            os.rmdir(root)
        except OSError:
            pass


def sync_a(dev):
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []

    def step():
        x = torch.randn(8, 256, device=dev)
        y = torch.randint(0, 10, (8,), device=dev)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())                 # host sync every step

    for _ in range(10):
        step()
    ready(onset=True)
    while running():
        step()


def sync_b(dev):
    cell = nn.GRUCell(64, 128).to(dev)
    head = nn.Linear(128, 10).to(dev)
    params = list(cell.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=1e-3)
    stats = {"right": 0, "seen": 0}

    def step():
        xs = torch.randn(32, 1, 64, device=dev)
        labels = [random.randrange(10) for _ in range(32)]
        y = torch.tensor(labels, device=dev)
        h = torch.zeros(1, 128, device=dev)
        loss = 0.0
        for t in range(32):                        # unrolled in Python, batch size 1
            h = cell(xs[t], h)
            out = head(h)
            loss = loss + F.cross_entropy(out, y[t:t + 1])
            o = out.detach().cpu()                 # a device-to-host copy every time step
            pred = max(range(10), key=lambda j: float(o[0, j]))
            stats["right"] += int(pred == labels[t])
            stats["seen"] += 1
        opt.zero_grad(set_to_none=True)
        (loss / 32).backward()
        opt.step()

    for _ in range(3):
        step()
    ready(onset=True)
    while running():
        step()
    mark("note", msg="accuracy %.3f over %d" % (stats["right"] / max(1, stats["seen"]), stats["seen"]))


def leak_a(dev):
    torch.backends.cuda.matmul.allow_tf32 = True
    B, DIN, HID = 4096, 4096, 16384          # hidden activation: 4096 x 16384 fp32 = 256 MiB
    fc1 = nn.Linear(DIN, HID).to(dev)
    fc2 = nn.Linear(HID, DIN).to(dev)
    opt = torch.optim.AdamW(list(fc1.parameters()) + list(fc2.parameters()), lr=1e-4)
    x = torch.randn(B, DIN, device=dev)
    tgt = torch.randn(B, DIN, device=dev)
    kept = []                               # the leak: activations kept "for later analysis"
    CHUNK = B * HID * 4
    TARGET = 40 * GiB
    CAP = 60 * GiB
    RATE = 6.0                              # chunks per second once the leak starts

    def step():
        h = F.gelu(fc1(x))
        loss = F.mse_loss(fc2(h), tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss, h

    for _ in range(3):
        step()
    t_ready = ready()
    onset_at = t_ready + 6.0
    leaking = False
    full = False
    i = 0
    while running():
        loss, h = step()
        i += 1
        now = time.time()
        if not leaking and now >= onset_at:
            mark("onset")
            leaking = True
            t_onset = now
        if leaking and not full:
            want = int((now - t_onset) * RATE) + 1
            held = len(kept) * CHUNK
            if held + CHUNK > min(TARGET, CAP) or free_bytes(dev) < 12 * GiB:
                full = True
                mark("note", msg="leak stopped growing at %.1f GiB" % (held / GiB))
            elif len(kept) < want:
                kept.append(h.detach())
        del h
        if i % 10 == 0:
            loss.item()
    torch.cuda.synchronize()
    mark("note", msg="held %.1f GiB in %d activations" % (len(kept) * CHUNK / GiB, len(kept)))


def leak_b(dev):
    M, K, N = 6144, 4096, 8192               # output: 6144 x 8192 bf16 = 96 MiB
    bf = torch.bfloat16
    w1 = torch.randn(K, K, device=dev, dtype=bf) / math.sqrt(K)
    w2 = torch.randn(K, N, device=dev, dtype=bf) / math.sqrt(K)
    wx = torch.randn(8192, 8192, device=dev, dtype=bf) / math.sqrt(8192)
    xx = torch.randn(8192, 8192, device=dev, dtype=bf)
    a = torch.randn(M, K, device=dev, dtype=bf)
    cache = {}                               # the leak: outputs cached by step, never evicted
    ENTRY = M * N * 2
    CAP = 60 * GiB
    RATE = 10.0

    def step():
        y = F.gelu(a @ w1) @ w2              # the "model output"
        z = xx
        for _ in range(6):                   # the real compute between
            z = torch.tanh(z @ wx)
        return y, z

    for _ in range(3):
        step()
    t_ready = ready()
    onset_at = t_ready + 5.0
    leaking = False
    full = False
    i = 0
    while running():
        y, z = step()
        i += 1
        now = time.time()
        if not leaking and now >= onset_at:
            mark("onset")
            leaking = True
            t_onset = now
        if leaking and not full:
            want = int((now - t_onset) * RATE) + 1
            if (len(cache) + 1) * ENTRY > CAP or free_bytes(dev) < 12 * GiB:
                full = True
                mark("note", msg="cache stopped growing at %.1f GiB" % (len(cache) * ENTRY / GiB))
            elif len(cache) < want:
                cache[i] = y
        del y
        if i % 20 == 0:
            z.sum().item()
    torch.cuda.synchronize()
    mark("note", msg="cache held %.1f GiB in %d entries" % (len(cache) * ENTRY / GiB, len(cache)))


def pageable_copy_a(dev):
    host = torch.empty(256 * 2 ** 20, dtype=torch.float32)    # 1 GiB, pageable (not pinned)
    host.fill_(1.0)
    total = torch.zeros((), device=dev)
    for _ in range(2):
        g = host.to(dev)
        total += g.sum()
    ready(onset=True)
    i = 0
    while running():
        g = host.to(dev)                  # blocking host-to-device copy through staging buffers
        total += g.sum()
        i += 1
        if i % 10 == 0:
            total.item()


def pageable_copy_b(dev):
    n = 384 * MiB // 4                     # 384 MiB of float32
    arr = np.empty(n, dtype=np.float32)
    rng = np.random.default_rng(0)
    arr[:] = rng.standard_normal(n, dtype=np.float32)
    conv = nn.Conv2d(3, 16, 3, padding=1).to(dev)
    opt = torch.optim.SGD(conv.parameters(), lr=1e-3)
    SL = 1 * MiB // 4

    def step(k):
        off = (k * SL) % (n - SL)
        arr[off:off + SL] = rng.standard_normal(SL, dtype=np.float32)   # cheap refresh of a slice
        x = torch.from_numpy(arr).cuda()                                # pageable, blocking
        xb = x.view(64, 3, 512, 1024)[:4]
        loss = conv(xb).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for k in range(2):
        step(k)
    ready(onset=True)
    k = 2
    while running():
        loss = step(k)
        k += 1
        if k % 10 == 0:
            loss.item()


def startup_compile(dev):
    torch.backends.cuda.matmul.allow_tf32 = True
    model = ResMLP(2048, 8192, 6).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(16, 512, 2048, device=dev)

    def step(m):
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            out = m(x)
        loss = out.float().square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    compiled = False
    use = model
    t_c = time.time()
    try:
        cm = torch.compile(model)
        for _ in range(3):                    # the compile happens in the first calls
            step(cm)
        torch.cuda.synchronize()
        use = cm
        compiled = True
    except Exception as e:
        traceback.print_exc()
        mark("note", msg="torch.compile failed, eager instead: %s: %s" % (type(e).__name__, str(e)[:500]))
        opt.zero_grad(set_to_none=True)
        for _ in range(2):
            step(model)
    ready(compiled=compiled, compile_s=round(time.time() - t_c, 1))
    i = 0
    while running():
        loss = step(use)
        i += 1
        if i % 20 == 0:
            loss.item()


def startup_bigload(dev):
    torch.backends.cuda.matmul.allow_tf32 = True
    D, L = 8192, 24                        # 24 x 8192 x 8192 fp32 = 6 GiB
    t_c = time.time()
    cpu = [torch.randn(D, D) for _ in range(L)]          # "initialise a large model" on the host
    t_m = time.time()
    ws = []
    for k in range(L):                      # moved to the GPU tensor by tensor
        ws.append(cpu[k].to(dev))
        cpu[k] = None
    del cpu
    x = torch.randn(4096, D, device=dev)
    scale = 1.0 / math.sqrt(D)
    for w in ws[:2]:
        x = torch.tanh((x @ w) * scale)
    ready(init_s=round(t_m - t_c, 1), move_s=round(time.time() - t_m, 1))
    while running():
        for w in ws:
            x = torch.tanh((x @ w) * scale)
        torch.cuda.synchronize()


def healthy_unet_autotune(dev):
    """A U-Net-like encoder/decoder in bf16 with cudnn.benchmark on, fed three input sizes in
    turn during start-up (every new shape autotunes again), then trained on one size."""
    torch.backends.cudnn.benchmark = True

    def block(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(),
                             nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.d1, self.d2, self.d3 = block(3, 64), block(64, 128), block(128, 256)
            self.u2, self.u1 = block(256 + 128, 128), block(128 + 64, 64)
            self.out = nn.Conv2d(64, 4, 1)

        def forward(self, x):
            a = self.d1(x)
            b = self.d2(F.max_pool2d(a, 2))
            c = self.d3(F.max_pool2d(b, 2))
            b2 = self.u2(torch.cat([F.interpolate(c, scale_factor=2.0), b], 1))
            a2 = self.u1(torch.cat([F.interpolate(b2, scale_factor=2.0), a], 1))
            return self.out(a2)

    model = UNet().to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step(x):
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for size in (160, 224, 288, 256):            # autotune once per shape, inside start-up
        x = torch.randn(48, 3, size, size, device=dev)
        for _ in range(3):
            step(x)
    ready()
    i = 0
    while running():
        loss = step(x)
        i += 1
        if i % 25 == 0:
            loss.item()


def pageable_copy_c(dev):
    """Each step: a 512 MiB uint8 numpy batch (filled once, pageable) sent with
    torch.from_numpy(...).cuda(), then normalised on the GPU and summed."""
    batch = np.random.randint(0, 255, size=(512 * 1024 * 1024,), dtype=np.uint8)
    host = torch.from_numpy(batch)
    ready(onset=True)
    i = 0
    while running():
        x = host.cuda()                         # pageable: staged, blocking
        y = (x.float() * (1.0 / 255.0)).sum()
        i += 1
        if i % 4 == 0:
            y.item()


# ------------------------------------------------------------------ holdout3: a third program
# of each kind, written after the rules were done and recorded once (one GPU).

def healthy_ckpt_c(dev):
    """A bf16 GPT-like training loop that checkpoints (state dict to host, torch.save to /tmp)
    every 10 s: a second or so of idle GPU in every ten, as real jobs do. Healthy."""
    d, layers = 1024, 12
    layer = nn.TransformerEncoderLayer(d, 16, 4 * d, batch_first=True, norm_first=True)
    model = nn.TransformerEncoder(layer, layers).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(16, 512, d, device=dev)
    path = "/tmp/corpus_ckpt_c.pt"

    def step():
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for _ in range(5):
        step()
    ready()
    last = time.time()
    saves = []
    i = 0
    while running():
        loss = step()
        i += 1
        if i % 20 == 0:
            loss.item()
        if time.time() - last >= 10.0:
            t = time.time()
            torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
            saves.append(round(time.time() - t, 2))
            last = time.time()
    torch.cuda.synchronize()
    try:
        os.remove(path)
    except OSError:
        pass
    mark("note", msg="checkpoints took %s s" % saves)


_WORDS = ["the", "model", "gradient", "token", "batch", "loss", "layer", "tensor", "kernel",
          "memory", "stream", "device", "optimizer", "schedule", "attention", "embedding"]


def _bpe_like(word, merges):
    """Pure-Python merges over a word's characters, as a naive BPE tokenizer does."""
    parts = list(word)
    changed = True
    while changed and len(parts) > 1:
        changed = False
        for i in range(len(parts) - 1):
            pair = parts[i] + parts[i + 1]
            if pair in merges:
                parts[i:i + 2] = [pair]
                changed = True
                break
    return parts


class TextDataset(torch.utils.data.Dataset):
    """Sentences made and tokenized in Python in the training process (num_workers=0)."""

    def __init__(self):
        self.merges = {w[:k] for w in _WORDS for k in range(2, len(w) + 1)}
        self.vocab = {}

    def __len__(self):
        return 10 ** 7

    def __getitem__(self, i):
        rng = random.Random(i)
        text = " ".join(rng.choice(_WORDS) + rng.choice(["", "s", "ed", "ing"]) for _ in range(256))
        ids = []
        for word in __import__("re").findall(r"\w+", text.lower()):
            for piece in _bpe_like(word, self.merges):
                ids.append(self.vocab.setdefault(piece, len(self.vocab)) % 8192)
        ids = (ids + [0] * 256)[:256]
        return torch.tensor(ids), rng.randrange(4)


def starved_tokenize_c(dev):
    """A text classifier fed by a DataLoader(num_workers=0) that tokenizes in Python."""
    emb = nn.Embedding(8192, 256).to(dev)
    layer = nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2).to(dev).train()
    head = nn.Linear(256, 4).to(dev)
    params = list(emb.parameters()) + list(enc.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4)
    loader = torch.utils.data.DataLoader(TextDataset(), batch_size=32, num_workers=0)
    it = iter(loader)

    def step(xb, yb):
        xb, yb = xb.to(dev, non_blocking=True), yb.to(dev, non_blocking=True)
        loss = F.cross_entropy(head(enc(emb(xb)).mean(1)), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):
        step(*next(it))
    ready(onset=True)
    n = 0
    while running():
        loss = step(*next(it))
        n += 1
        if n % 10 == 0:
            loss.item()
    mark("note", msg="%d batches" % n)


def sync_c(dev):
    """Training with per-class metrics read back every step: boolean-mask indexing and .item()
    for each of 10 classes (tens of host syncs a step, each after a few tiny kernels)."""
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    acc = [0.0] * 10

    def step():
        x = torch.randn(256, 512, device=dev)
        y = torch.randint(0, 10, (256,), device=dev)
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        pred = out.argmax(1)
        for c in range(10):
            sel = pred[y == c]                    # data-dependent shape: a sync
            acc[c] = 0.9 * acc[c] + 0.1 * (sel == c).float().mean().item() if sel.numel() else acc[c]

    for _ in range(5):
        step()
    ready(onset=True)
    while running():
        step()


def leak_c(dev):
    """A language-model training loop that keeps its last positions' logits, cast to fp32, "for
    the epoch's metrics" (~24 MiB, 16 times a second: ~0.4 GiB/s, slower than leak_a and _b)."""
    vocab, d = 32000, 1024
    emb = nn.Embedding(vocab, d).to(dev)
    layer = nn.TransformerEncoderLayer(d, 16, 4 * d, batch_first=True, norm_first=True)
    body = nn.TransformerEncoder(layer, 4).to(dev).train()
    head = nn.Linear(d, vocab).to(dev)
    params = list(emb.parameters()) + list(body.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4)
    tokens = torch.randint(0, vocab, (16, 257), device=dev)
    kept = []                                       # the leak: [16, 12, vocab] fp32 each
    RATE = 16.0                                     # appends per second (~24 MiB each)

    def step():
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            logits = head(body(emb(tokens[:, :-1])))
            loss = F.cross_entropy(logits.reshape(-1, vocab).float(), tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss, logits

    for _ in range(3):
        step()
    t_ready = ready()
    onset_at = t_ready + 6.0
    leaking = False
    full = False
    i = 0
    while running():
        loss, logits = step()
        i += 1
        now = time.time()
        if not leaking and now >= onset_at:
            mark("onset")
            leaking = True
            t_onset = now
        if leaking and not full:
            if free_bytes(dev) < 16 * GiB:
                full = True
                mark("note", msg="logits stopped growing at %.1f GiB" % (len(kept) * 16 * 12 * vocab * 4 / GiB))
            elif len(kept) < int((now - t_onset) * RATE) + 1:
                kept.append(logits[:, -12:].detach().float())
        del logits
        if i % 10 == 0:
            loss.item()
    torch.cuda.synchronize()
    mark("note", msg="kept %.1f GiB of logits in %d appends" % (len(kept) * 16 * 12 * vocab * 4 / GiB, len(kept)))


def spin_hang_c(dev):
    """8 s of bf16 matmuls, then a Triton kernel on 8 blocks polling a flag in GPU memory that
    no one sets (as a collective polls for a peer), relaunched every ~1.5 s. Falls back to
    torch.cuda._sleep spread over 8 streams if Triton cannot compile here (noted)."""
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    flag = torch.zeros(1, device=dev, dtype=torch.int32)
    out = torch.zeros(8, device=dev, dtype=torch.int32)
    try:
        import triton
        import triton.language as tl

        @triton.jit
        def poll(flag_ptr, out_ptr, n):
            i = 0
            seen = tl.load(flag_ptr, volatile=True)
            while (seen == 0) & (i < n):
                seen = tl.load(flag_ptr, volatile=True)
                i += 1
            tl.store(out_ptr + tl.program_id(0), i)

        def spin(n):
            poll[(8,)](flag, out, n)

        spin(1000)
        torch.cuda.synchronize()
        t = time.time()
        spin(2_000_000)
        torch.cuda.synchronize()
        per_iter = max(time.time() - t, 1e-4) / 2_000_000
        how = "triton"
    except Exception as e:                      # noqa: BLE001
        mark("note", msg="triton unavailable (%s): _sleep instead" % str(e)[:200])
        rate = 2e8 / _calibrate_spin(2e8)

        def spin(n):
            torch.cuda._sleep(int(n))

        per_iter = 1.0 / rate
        how = "_sleep"
    for _ in range(20):
        c = a @ a
    t_ready = ready(spin=how, per_iter_ns=round(per_iter * 1e9, 3))
    onset_at = t_ready + 8.0
    while running() and time.time() < onset_at:
        for _ in range(20):
            c = a @ a
        torch.cuda.synchronize()
    mark("onset")
    while True:
        left = deadline() - time.time()
        if left < 0.05:
            break
        spin(int(min(1.5, left) / per_iter))
        torch.cuda.synchronize()
    del c


# ------------------------------------------------------------- holdout4: healthy, but uneven
# Healthy jobs with the irregularities real ones have (epoch boundaries, evaluation passes, a
# second process on the GPU, memory-bound sparse work), written after the rules were done:
# nothing may fire on any of them.

class SynthImages(torch.utils.data.Dataset):
    """uint8 images made per sample (little CPU): the loader keeps up, between epochs too."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randint(0, 256, (3, 96, 96), dtype=torch.uint8, generator=g), i % 100


def healthy_epochs_d(dev):
    """Conv-net training over short epochs (~6 s) with 4 workers that are not persistent: each
    epoch's end shuts them down and the next forks new ones (a stall of a second or so)."""
    torch.backends.cudnn.benchmark = True
    model = ConvBNNet().to(dev).to(memory_format=torch.channels_last).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = torch.utils.data.DataLoader(SynthImages(128 * 300), batch_size=128, num_workers=4,
                                         persistent_workers=False, pin_memory=True,
                                         worker_init_fn=_worker_init)

    def step(xb, yb):
        xb = xb.to(dev, non_blocking=True).float().div_(255).contiguous(memory_format=torch.channels_last)
        yb = yb.to(dev, non_blocking=True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    it = iter(loader)
    for _ in range(10):
        step(*next(it))
    del it
    ready()
    epochs, steps = 0, 0
    while running():
        for xb, yb in loader:
            loss = step(xb, yb)
            steps += 1
            if steps % 50 == 0:
                loss.item()
            if not running():
                break
        epochs += 1
    mark("note", msg="%d epochs, %d steps" % (epochs, steps))


def healthy_eval_d(dev):
    """Transformer training that evaluates every 8 s: 40 batches under no_grad, each one's
    accuracy read back with .item() (a second or two of lighter, synchronous work)."""
    d = 768
    layer = nn.TransformerEncoderLayer(d, 12, 4 * d, batch_first=True)
    enc = nn.TransformerEncoder(layer, 6).to(dev)
    head = nn.Linear(d, 10).to(dev)
    params = list(enc.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4)
    x = torch.randn(24, 512, d, device=dev)
    y = torch.randint(0, 10, (24,), device=dev)
    xe = torch.randn(40, 8, 512, d, device=dev)
    ye = torch.randint(0, 10, (40, 8), device=dev)

    def step():
        enc.train()
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(head(enc(x).mean(1)), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    def evaluate():
        enc.eval()
        right = 0
        with torch.no_grad(), torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            for b in range(40):
                right += (head(enc(xe[b]).mean(1)).argmax(1) == ye[b]).sum().item()
        return right / 320

    for _ in range(5):
        step()
    evaluate()
    ready()
    last = time.time()
    took = []
    i = 0
    while running():
        loss = step()
        i += 1
        if i % 20 == 0:
            loss.item()
        if time.time() - last >= 8.0:
            t = time.time()
            evaluate()
            took.append(round(time.time() - t, 2))
            last = time.time()
    mark("note", msg="evaluations took %s s" % took)


_SIDE_PROCESS = r"""
import sys, time, torch
dev = torch.device("cuda", int(sys.argv[1]))
m = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).to(dev)
m(torch.randn(4, 1024, device=dev)).sum().item()
print("up", flush=True)
end = time.time() + float(sys.argv[2])
with torch.no_grad():
    while time.time() < end:
        m(torch.randn(4, 1024, device=dev)).sum().item()   # one small request, answered at once
        time.sleep(0.02)
"""


def healthy_two_procs_d(dev):
    """bf16 matmul training sharing the GPU with a second process that answers a small
    inference request every ~20 ms (a notebook or a serving sidecar): two processes, one busy."""
    import subprocess
    side = subprocess.Popen([sys.executable, "-c", _SIDE_PROCESS, str(GPU), str(DURATION + 20)],
                            stdout=subprocess.PIPE, text=True)
    w = [torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3)]
    opt = torch.optim.SGD(w, lr=1e-6)
    x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)

    def step():
        h = x
        for m in w:
            h = torch.tanh(h @ m)
        loss = h.float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):
        step()
    side.stdout.readline()                        # the side process holds its context
    ready()
    i = 0
    while running():
        loss = step()
        i += 1
        if i % 10 == 0:
            loss.item()
    torch.cuda.synchronize()
    side.terminate()
    side.wait()


def healthy_embbag_d(dev):
    """Recommender-style training: 8 EmbeddingBag tables of 4 M rows x 128 (16 GiB) with sparse
    gradients, 65536 samples x 64 lookups a table each step, and a small MLP: memory-bound
    gathers and scatters, SMs far from full, DRAM busy."""
    tables = nn.ModuleList([nn.EmbeddingBag(4_000_000, 128, mode="sum", sparse=True, device=dev)
                            for _ in range(8)])
    top = nn.Sequential(nn.Linear(8 * 128, 512), nn.ReLU(), nn.Linear(512, 1)).to(dev)
    sparse_opt = torch.optim.SGD(tables.parameters(), lr=0.01)
    dense_opt = torch.optim.AdamW(top.parameters(), lr=1e-3)
    B, L = 65536, 64
    offsets = torch.arange(0, B * L, L, device=dev)

    def step():
        feats = [t(torch.randint(0, 4_000_000, (B * L,), device=dev), offsets) for t in tables]
        pred = top(torch.cat(feats, 1)).squeeze(1)
        loss = F.binary_cross_entropy_with_logits(pred, torch.rand(B, device=dev))
        sparse_opt.zero_grad(set_to_none=True)
        dense_opt.zero_grad(set_to_none=True)
        loss.backward()
        sparse_opt.step()
        dense_opt.step()
        return loss

    for _ in range(3):
        step()
    ready()
    i = 0
    while running():
        loss = step()
        i += 1
        if i % 10 == 0:
            loss.item()
    mark("note", msg="%d steps" % i)


# ------------------------------------------------------- stack classes (e: tune, f: held out)
# Written for issue 24: jobs that counters alone cannot tell apart, and whose Python stacks do.

class AugmentDatasetE(torch.utils.data.Dataset):
    """Heavy CPU augmentation of 3x224x224 images in numpy (blur passes, noise, gamma), for
    DataLoader workers: a worker makes a sample in ~15 ms."""

    def __len__(self):
        return 10 ** 7

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        x = rng.random((3, 224, 224), dtype=np.float32)
        for _ in range(6):
            x = (x + np.roll(x, 1, axis=1) + np.roll(x, 1, axis=2)) / 3.0
        x = np.power(np.abs(x + 0.01 * rng.standard_normal(x.shape, dtype=np.float32)), 1.1,
                     dtype=np.float32)
        return torch.from_numpy(np.ascontiguousarray(x)), int(i % 100)


class MidCNN(nn.Module):
    """A conv net whose step on a 224x224 batch of 64 keeps an H200 busy for tens of ms."""

    def __init__(self, classes=100):
        super().__init__()
        layers, c = [], 3
        for w in (64, 128, 256, 512):
            layers += [nn.Conv2d(c, w, 3, stride=2, padding=1), nn.BatchNorm2d(w), nn.ReLU(inplace=True),
                       nn.Conv2d(w, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(inplace=True)]
            c = w
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(c, classes)

    def forward(self, x):
        return self.head(self.body(x).mean((2, 3)))


def starved_aug_e(dev):
    """Two DataLoader workers doing heavy augmentation for a conv net that would take 4x more:
    util in the tens of %, power well above the idle floor, the main process mostly waiting."""
    model = MidCNN().to(dev).to(memory_format=torch.channels_last).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = torch.utils.data.DataLoader(AugmentDatasetE(), batch_size=64, num_workers=2, prefetch_factor=2,
                                         worker_init_fn=_worker_init, persistent_workers=True)
    _train_loader(dev, loader, model, opt, warm_batches=3, bf16=True)


class FileReadDatasetE(torch.utils.data.Dataset):
    """Each sample read from a file on 'network storage': 25 ms of latency, then a small read."""

    def __init__(self, path):
        self.path = path

    def __len__(self):
        return 10 ** 7

    def __getitem__(self, i):
        time.sleep(0.025)                      # the storage's latency
        with open(self.path, "rb") as f:
            f.seek((i * 65536) % (64 * MiB))
            raw = f.read(3 * 64 * 64 * 4)
        x = np.frombuffer(raw, dtype=np.float32).reshape(3, 64, 64).copy()
        return torch.from_numpy(np.nan_to_num(x)), int(i % 10)


def starved_io_e(dev):
    path = "/tmp/corpus_io_e-%d.bin" % os.getpid()
    with open(path, "wb") as f:
        f.write(np.random.default_rng(0).random(16 * MiB, dtype=np.float32).tobytes())
    try:
        model = SmallCNN().to(dev).train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        loader = torch.utils.data.DataLoader(FileReadDatasetE(path), batch_size=16, num_workers=0)
        _train_loader(dev, loader, model, opt, warm_batches=1)
    finally:
        os.unlink(path)


class TinyLM(nn.Module):
    def __init__(self, d=512, layers=4):
        super().__init__()
        self.emb = nn.Embedding(8192, d)
        self.blocks = nn.ModuleList([Block(d, 8) for _ in range(layers)])
        self.out = nn.Linear(d, 8192)

    def forward(self, t):
        x = self.emb(t)
        for b in self.blocks:
            x = b(x)
        return self.out(x)


def _next_request(rng, q, stop):
    """A client: requests arrive at random, 0.15 to 1.2 s apart."""
    while not stop.is_set():
        time.sleep(rng.uniform(0.15, 1.2))
        q.put(rng.integers(0, 8192, size=(8, 64)))


def serve_idle_e(dev):
    """An inference server idle between requests: the main loop sleeps on a queue, then runs one
    batch-8 forward (bf16) per request and returns the answer to the host."""
    import queue as _queue
    model = TinyLM().to(dev).eval()
    q, stop = _queue.Queue(), threading.Event()
    with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
        for _ in range(3):
            model(torch.zeros(8, 64, dtype=torch.long, device=dev)).argmax(-1).cpu()
        threading.Thread(target=_next_request, args=(np.random.default_rng(5), q, stop), daemon=True,
                         name="client").start()
        ready()
        n = 0
        while running():
            try:
                req = q.get(timeout=0.5)       # idle: waiting for the next request
            except _queue.Empty:
                continue
            tokens = torch.from_numpy(req).to(dev)
            model(tokens).argmax(-1).cpu()     # the answer goes back to the client
            n += 1
        stop.set()
    mark("note", msg="%d requests" % n)


def sync_item_e(dev):
    """A conv net at batch 16 whose loop logs the loss with .item() and a Python running mean
    every step."""
    model = SmallCNN().to(dev).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(16, 3, 64, 64, device=dev)
    y = torch.randint(0, 10, (16,), device=dev)
    hist = []
    for _ in range(20):
        F.cross_entropy(model(x), y).backward()
    ready(onset=True)
    while running():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        hist.append(loss.item())               # a host sync every step
        if len(hist) > 100:
            hist = hist[-100:]


class SyntheticImagesE(torch.utils.data.Dataset):
    def __len__(self):
        return 10 ** 7

    def __getitem__(self, i):
        return torch.from_numpy(np.full((3, 128, 128), i % 251, dtype=np.uint8)), int(i % 100)


def healthy_loader_e(dev):
    """A conv net fed by six workers that keep up (uint8 images made cheaply, pinned, non-blocking
    copies): the main thread runs the model; nothing is wrong."""
    model = MidCNN().to(dev).to(memory_format=torch.channels_last).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = torch.utils.data.DataLoader(SyntheticImagesE(), batch_size=256, num_workers=6, pin_memory=True,
                                         prefetch_factor=4, persistent_workers=True, worker_init_fn=_worker_init)
    it = iter(loader)

    def step():
        xb, yb = next(it)
        xb = xb.to(dev, non_blocking=True).float().div_(255).contiguous(memory_format=torch.channels_last)
        yb = yb.to(dev, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for _ in range(5):
        step()
    ready()
    i = 0
    while running():
        loss = step()
        i += 1
        if i % 50 == 0:
            loss.item()
    del it


def healthy_ckpt_e(dev):
    """bf16 matmul training that writes a synchronous 1 GiB checkpoint every 12 s (the GPU idles
    while torch.save writes)."""
    w = [torch.randn(8192, 8192, device=dev, requires_grad=True) for _ in range(4)]
    opt = torch.optim.SGD(w, lr=1e-6)
    x = torch.randn(4096, 8192, device=dev)
    path = "/tmp/corpus_ckpt_e-%d.pt" % os.getpid()

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            h = x
            for m in w:
                h = h @ m
            loss = h.float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    ready()
    last = time.time()
    try:
        while running():
            step()
            if time.time() - last > 12:
                torch.cuda.synchronize()
                torch.save({"w": [t.detach().cpu() for t in w]}, path)
                last = time.time()
    finally:
        if os.path.exists(path):
            os.unlink(path)


def startup_compile_e(dev):
    """torch.compile of a conv net: dynamo traces and inductor compiles in the first steps, before
    "ready"; then it trains compiled."""
    model = MidCNN().to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 3, 160, 160, device=dev)
    y = torch.randint(0, 100, (64,), device=dev)
    compiled = True
    t0 = time.time()
    try:
        cmodel = torch.compile(model)
        for _ in range(3):
            F.cross_entropy(cmodel(x), y).backward()
    except Exception as e:   # noqa: BLE001
        mark("note", msg="torch.compile failed, eager: %s" % str(e)[:300])
        cmodel, compiled = model, False
    ready(compiled=compiled, compile_s=round(time.time() - t0, 1))
    while running():
        loss = F.cross_entropy(cmodel(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


class CropFlipDatasetF(torch.utils.data.Dataset):
    """Random crops, flips and colour jitter of 3x256x256 images, then a 192x192 crop: numpy on
    each of three workers (~20 ms a sample)."""

    def __len__(self):
        return 10 ** 7

    def __getitem__(self, i):
        rng = np.random.default_rng(i * 7 + 1)
        img = rng.random((3, 256, 256), dtype=np.float32)
        for _ in range(4):
            img = 0.5 * img + 0.25 * (np.roll(img, 2, axis=1) + np.roll(img, -2, axis=2))
        y0, x0 = rng.integers(0, 64, size=2)
        crop = img[:, y0:y0 + 192, x0:x0 + 192]
        if rng.random() < 0.5:
            crop = crop[:, :, ::-1]
        crop = crop * rng.uniform(0.8, 1.2, size=(3, 1, 1)).astype(np.float32)
        return torch.from_numpy(np.ascontiguousarray(crop)), int(i % 100)


class PatchNetF(nn.Module):
    """A small vision transformer: 16x16 patches, 6 blocks of width 384."""

    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 384, 16, stride=16)
        self.blocks = nn.Sequential(*[Block(384, 6) for _ in range(6)])
        self.head = nn.Linear(384, 100)

    def forward(self, x):
        h = self.patch(x).flatten(2).transpose(1, 2)
        return self.head(self.blocks(h).mean(1))


def starved_aug_f(dev):
    model = PatchNetF().to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loader = torch.utils.data.DataLoader(CropFlipDatasetF(), batch_size=96, num_workers=3, prefetch_factor=2,
                                         worker_init_fn=_worker_init)
    _train_loader(dev, loader, model, opt, warm_batches=2, bf16=True)


class PreadDatasetF(torch.utils.data.Dataset):
    """Samples read with os.pread from a file dropped from the page cache, behind 15 ms of
    'network' latency, in the training process (num_workers=0)."""

    def __init__(self, path):
        self.path = path
        self.fd = None

    def __len__(self):
        return 10 ** 7

    def __getitem__(self, i):
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDONLY)
        off = (i * 1048576) % (256 * MiB)
        try:
            os.posix_fadvise(self.fd, off, 1048576, os.POSIX_FADV_DONTNEED)
        except (AttributeError, OSError):
            pass
        time.sleep(0.015)
        raw = os.pread(self.fd, 1048576, off)
        x = np.frombuffer(raw[: 4 * 128 * 128 * 4], dtype=np.float32).reshape(4, 128, 128).copy()
        return torch.from_numpy(np.nan_to_num(x)), int(i % 10)


def starved_io_f(dev):
    path = "/tmp/corpus_io_f-%d.bin" % os.getpid()
    with open(path, "wb") as f:
        f.write(np.random.default_rng(1).random(64 * MiB, dtype=np.float32).tobytes())
    try:
        model = nn.Sequential(nn.Conv2d(4, 64, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(64, 128, 3, stride=2, padding=1),
                              nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).to(dev).train()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loader = torch.utils.data.DataLoader(PreadDatasetF(path), batch_size=24, num_workers=0)
        _train_loader(dev, loader, model, opt, warm_batches=1)
    finally:
        os.unlink(path)


def serve_idle_f(dev):
    """A socket server (selectors, as an HTTP server's loop is) answering a client process that
    sends a request 0.2 to 1.5 s apart; each answer is a batch-4 forward of a small LM and 16
    greedy tokens."""
    import selectors
    import socket
    model = TinyLM(d=384, layers=3).to(dev).eval()
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    client = os.fork()
    if client == 0:                         # the client: no CUDA here
        rng = random.Random(9)
        try:
            c = socket.create_connection(("127.0.0.1", port))
            while True:
                time.sleep(rng.uniform(0.2, 1.5))
                c.sendall(b"q")
                c.recv(1)
        except OSError:
            os._exit(0)
    sel = selectors.DefaultSelector()
    with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
        t = torch.zeros(4, 32, dtype=torch.long, device=dev)
        for _ in range(2):
            model(t).argmax(-1).cpu()
        conn, _ = srv.accept()
        sel.register(conn, selectors.EVENT_READ)
        ready()
        n = 0
        while running():
            if not sel.select(timeout=0.5):    # idle: waiting for a request
                continue
            if not conn.recv(1):
                break
            toks = t
            for _ in range(16):
                nxt = model(toks)[:, -1].argmax(-1, keepdim=True)
                toks = torch.cat([toks[:, 1:], nxt], 1)
            toks.cpu()
            conn.sendall(b"a")
            n += 1
    conn.close()
    os.kill(client, signal.SIGTERM)
    os.waitpid(client, 0)
    mark("note", msg="%d requests" % n)


def sync_f(dev):
    """A small MLP whose loop reads back, every step, which samples were misclassified
    (torch.nonzero) and their indices as a Python list."""
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(64, 128, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    wrong_total = 0
    for _ in range(10):
        F.cross_entropy(model(x), y).backward()
    ready(onset=True)
    while running():
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        wrong = torch.nonzero(out.argmax(1) != y).flatten().tolist()
        wrong_total += len(wrong)


class TokenDatasetF(torch.utils.data.Dataset):
    def __len__(self):
        return 10 ** 7

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randint(0, 8192, (257,), generator=g)


def healthy_loader_f(dev):
    """A small LM trained on token batches from four pinned workers that keep up."""
    model = TinyLM(d=768, layers=6).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loader = torch.utils.data.DataLoader(TokenDatasetF(), batch_size=32, num_workers=4, pin_memory=True,
                                         persistent_workers=True, worker_init_fn=_worker_init)
    it = iter(loader)

    def step():
        b = next(it).to(dev, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(b[:, :-1])
            loss = F.cross_entropy(logits.float().flatten(0, 1), b[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for _ in range(5):
        step()
    ready()
    i = 0
    while running():
        loss = step()
        i += 1
        if i % 25 == 0:
            loss.item()
    del it


def healthy_ckpt_f(dev):
    """Transformer training that saves model and optimizer state every 10 s (state_dict moved to
    the host first, then torch.save)."""
    model = TinyLM(d=1024, layers=8).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    t = torch.randint(0, 8192, (16, 257), device=dev)
    path = "/tmp/corpus_ckpt_f-%d.pt" % os.getpid()

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(t[:, :-1]).float().flatten(0, 1), t[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    ready()
    last = time.time()
    try:
        while running():
            step()
            if time.time() - last > 10:
                state = {"model": {k: v.cpu() for k, v in model.state_dict().items()},
                         "opt": opt.state_dict()}
                torch.save(state, path)
                last = time.time()
    finally:
        if os.path.exists(path):
            os.unlink(path)


KINDS = {
    "healthy_transformer_bf16": healthy_transformer_bf16,
    "healthy_cnn_fp16": healthy_cnn_fp16,
    "healthy_membound": healthy_membound,
    "healthy_infer_bs": healthy_infer_bs,
    "spin_hang_a": spin_hang_a,
    "spin_hang_b": spin_hang_b,
    "starved_cpu_a": starved_cpu_a,
    "starved_cpu_b": starved_cpu_b,
    "starved_io_a": starved_io_a,
    "starved_io_b": starved_io_b,
    "sync_a": sync_a,
    "sync_b": sync_b,
    "leak_a": leak_a,
    "leak_b": leak_b,
    "pageable_copy_a": pageable_copy_a,
    "pageable_copy_b": pageable_copy_b,
    "startup_compile": startup_compile,
    "startup_bigload": startup_bigload,
    "healthy_unet_autotune": healthy_unet_autotune,
    "pageable_copy_c": pageable_copy_c,
    "healthy_ckpt_c": healthy_ckpt_c,
    "starved_tokenize_c": starved_tokenize_c,
    "sync_c": sync_c,
    "leak_c": leak_c,
    "spin_hang_c": spin_hang_c,
    "healthy_epochs_d": healthy_epochs_d,
    "healthy_eval_d": healthy_eval_d,
    "healthy_two_procs_d": healthy_two_procs_d,
    "healthy_embbag_d": healthy_embbag_d,
    "starved_aug_e": starved_aug_e,
    "starved_io_e": starved_io_e,
    "serve_idle_e": serve_idle_e,
    "sync_item_e": sync_item_e,
    "healthy_loader_e": healthy_loader_e,
    "healthy_ckpt_e": healthy_ckpt_e,
    "startup_compile_e": startup_compile_e,
    "starved_aug_f": starved_aug_f,
    "starved_io_f": starved_io_f,
    "serve_idle_f": serve_idle_f,
    "sync_f": sync_f,
    "healthy_loader_f": healthy_loader_f,
    "healthy_ckpt_f": healthy_ckpt_f,
}


def main():
    fn = KINDS.get(KIND)
    if fn is None:
        raise ValueError("unknown kind %r (known: %s)" % (KIND, ", ".join(sorted(KINDS))))
    torch.cuda.set_device(GPU)
    dev = torch.device("cuda", GPU)
    fn(dev)
    torch.cuda.synchronize()
    mark("end")


if __name__ == "__main__":
    threading.Thread(target=_watchdog, name="watchdog", daemon=True).start()
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        main()
    except BaseException as e:   # any error, KeyboardInterrupt included: mark it and exit 1
        traceback.print_exc()
        try:
            mark("error", msg=("%s: %s" % (type(e).__name__, e))[:2000])
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(0)
