"""FP32 phases for a no-tensor-core rule. Each phase prints its span; DUR seconds each, 3 s rest."""
import sys, time, json, torch
dev = torch.device("cuda")
DUR = float(sys.argv[1]) if len(sys.argv) > 1 else 25.0
only = sys.argv[2].split(",") if len(sys.argv) > 2 and sys.argv[2] else None
out = sys.argv[3] if len(sys.argv) > 3 else None
spans = []

def phase(name):
    def deco(fn):
        if only and name not in only:
            return fn
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = True
        torch.cuda.synchronize()
        t0 = time.time()
        fn()
        torch.cuda.synchronize()
        spans.append({"name": name, "start": t0, "end": time.time()})
        print(f"phase {name} {t0:.3f} {time.time():.3f}", flush=True)
        if out:
            json.dump(spans, open(out, "w"))
        torch.cuda.empty_cache()
        time.sleep(3.0)
        return fn
    return deco

def loop(step):
    t = time.time()
    while time.time() - t < DUR:
        for _ in range(5):
            step()
        torch.cuda.synchronize()

@phase("fp32_matmul")
def _():
    a = torch.randn(8192, 8192, device=dev); b = torch.randn(8192, 8192, device=dev)
    loop(lambda: a @ b)

@phase("tf32_matmul")
def _():
    torch.backends.cuda.matmul.allow_tf32 = True
    a = torch.randn(8192, 8192, device=dev); b = torch.randn(8192, 8192, device=dev)
    loop(lambda: a @ b)

def mlp_step(dtype=None, width=4096, batch=2048):
    model = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(width, width), torch.nn.GELU())], torch.nn.Linear(width, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(batch, width, device=dev); y = torch.randint(0, 10, (batch,), device=dev)
    def step():
        if dtype is None:
            loss = torch.nn.functional.cross_entropy(model(x), y)
        else:
            with torch.autocast("cuda", dtype=dtype):
                loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
    return step

@phase("fp32_mlp_train")
def _():
    loop(mlp_step())

@phase("bf16_mlp_train")
def _():
    loop(mlp_step(torch.bfloat16))

@phase("fp32_transformer_train")
def _():
    layer = torch.nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True, dropout=0.0)
    model = torch.nn.TransformerEncoder(layer, 6).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(16, 512, 1024, device=dev)
    def step():
        loss = model(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
    loop(step)

@phase("fp32_conv_train")
def _():
    # cuDNN's TF32 is on by default: convolutions in FP32 still use tensor cores
    model = torch.nn.Sequential(torch.nn.Conv2d(64, 256, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(256, 256, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(256, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(128, 64, 64, 64, device=dev); y = torch.randint(0, 10, (128,), device=dev)
    def step():
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
    loop(step)

@phase("fp32_elementwise")
def _():
    x = torch.randn(256 * 1024**2, device=dev)
    def step():
        nonlocal x
        x = torch.sin(x) * 0.999 + 0.001
    loop(step)

@phase("fp32_small_inference")
def _():
    model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 10)).to(dev).eval()
    x = torch.randn(8, 1024, device=dev)
    def step():
        with torch.no_grad():
            model(x)
    loop(step)

print(json.dumps(spans))
