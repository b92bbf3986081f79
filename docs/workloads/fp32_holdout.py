"""Held-out FP32 phases, other programs than fp32.py's: each phase DUR seconds, 3 s rest.
Prints each phase's span and, for the products, the TFLOP/s it reached."""
import os, sys, time, json, torch
dev = torch.device("cuda")
DUR = float(sys.argv[1]) if len(sys.argv) > 1 else 40.0
only = sys.argv[2].split(",") if len(sys.argv) > 2 and sys.argv[2] else None
out = sys.argv[3] if len(sys.argv) > 3 else None
spans = []
if out and os.path.exists(out):
    spans = json.load(open(out))

def phase(name):
    def deco(fn):
        if only and name not in only:
            return fn
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = True
        torch.set_float32_matmul_precision("highest")
        torch.cuda.synchronize()
        t0 = time.time()
        extra = fn() or {}
        torch.cuda.synchronize()
        spans.append({"name": name, "start": t0, "end": time.time(), **extra})
        print(f"phase {name} {t0:.3f} {time.time():.3f} {extra}", flush=True)
        if out:
            json.dump(spans, open(out, "w"))
        torch.cuda.empty_cache()
        time.sleep(3.0)
        return fn
    return deco

def loop(step, flops=0.0):
    t = time.time(); n = 0
    dur = DUR / 2 if flops else DUR
    while time.time() - t < dur:
        for _ in range(5):
            step()
        n += 5
        torch.cuda.synchronize()
    return {"tflops": round(flops * n / (time.time() - t) / 1e12, 1)} if flops else {}

def products(dtype, tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.randn(8192, 8192, device=dev, dtype=dtype); b = torch.randn(8192, 8192, device=dev, dtype=dtype)
    return loop(lambda: a @ b, 2 * 8192**3)

# Throughput of one product in three precisions (the rule's docs quote it).
@phase("speed_fp32")
def _(): return products(torch.float32, False)
@phase("speed_tf32")
def _(): return products(torch.float32, True)
@phase("speed_bf16")
def _(): return products(torch.bfloat16, False)

class Block(torch.nn.Module):
    """A pre-norm ViT block written by hand: einsum attention, an MLP."""
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.n1 = torch.nn.LayerNorm(d); self.qkv = torch.nn.Linear(d, 3 * d); self.o = torch.nn.Linear(d, d)
        self.n2 = torch.nn.LayerNorm(d); self.f1 = torch.nn.Linear(d, 4 * d); self.f2 = torch.nn.Linear(4 * d, d)
    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, n, 3, self.h, d // self.h).unbind(2)
        a = torch.einsum("bqhd,bkhd->bhqk", q, k).mul(d ** -0.5).softmax(-1)
        x = x + self.o(torch.einsum("bhqk,bkhd->bqhd", a, v).reshape(b, n, d))
        return x + self.f2(torch.nn.functional.gelu(self.f1(self.n2(x))))

def vit(autocast=None):
    patch = torch.nn.Conv2d(3, 768, 16, 16)
    blocks = torch.nn.Sequential(*[Block(768, 12) for _ in range(8)])
    head = torch.nn.Linear(768, 100)
    model = torch.nn.ModuleList([patch, blocks, head]).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler() if autocast == torch.float16 else None
    x = torch.randn(64, 3, 224, 224, device=dev); y = torch.randint(0, 100, (64,), device=dev)
    def fwd():
        z = patch(x).flatten(2).transpose(1, 2)
        return torch.nn.functional.cross_entropy(head(blocks(z).mean(1)), y)
    def step():
        opt.zero_grad(set_to_none=True)
        if autocast is None:
            fwd().backward(); opt.step()
        else:
            with torch.autocast("cuda", dtype=autocast):
                loss = fwd()
            if scaler:
                scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
            else:
                loss.backward(); opt.step()
    return step

@phase("fp32_vit_train")
def _(): loop(vit())

@phase("fp16_vit_train")
def _(): loop(vit(torch.float16))

@phase("tf32_vit_train")
def _():
    torch.set_float32_matmul_precision("high")
    loop(vit())

@phase("fp32_bmm_inference")
def _():
    w = torch.randn(32, 2048, 2048, device=dev); x = torch.randn(32, 1024, 2048, device=dev)
    def step():
        with torch.no_grad():
            torch.relu(torch.bmm(x, w)).sum()
    loop(step)

@phase("fp32_conv_notf32_train")
def _():
    torch.backends.cudnn.allow_tf32 = False
    model = torch.nn.Sequential(torch.nn.Conv2d(32, 128, 3, padding=1), torch.nn.BatchNorm2d(128), torch.nn.ReLU(),
                                torch.nn.Conv2d(128, 128, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(128, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(96, 32, 96, 96, device=dev); y = torch.randint(0, 10, (96,), device=dev)
    def step():
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
    loop(step)

@phase("tf32_env_override")
def _():
    # Run with NVIDIA_TF32_OVERRIDE=0 in the environment: the program asks for TF32, cuBLAS refuses.
    torch.set_float32_matmul_precision("high")
    a = torch.randn(8192, 8192, device=dev); b = torch.randn(8192, 8192, device=dev)
    loop(lambda: a @ b)

@phase("fp32_fft")
def _():
    x = torch.randn(16, 4096, 4096, device=dev)
    def step():
        torch.fft.irfft2(torch.fft.rfft2(x) * 0.5, s=x.shape[-2:])
    loop(step)

@phase("fp32_softmax_reduce")
def _():
    x = torch.randn(8192, 32768, device=dev)
    def step():
        x.softmax(-1).sum(0)
    loop(step)

print(json.dumps(spans))
