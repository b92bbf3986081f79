"""Workloads the rules were not tuned on. usage: variants.py MODE SECONDS SPANFILE"""
import sys, time, json, numpy as np, torch
from torch import nn
mode, dur, spanfile = sys.argv[1], float(sys.argv[2]), sys.argv[3]
dev = torch.device("cuda")
torch.cuda.init(); torch.zeros(1, device=dev)
t0 = time.time()

class SlowDS(torch.utils.data.Dataset):
    # a slow, CPU-bound __getitem__ (decode + augment), as with PIL/JPEG on one core
    def __len__(self): return 10**7
    def __getitem__(self, i):
        x = np.random.rand(3, 96, 96).astype(np.float32)
        for _ in range(6):
            x = np.sqrt(x * x + 0.1) * 0.99
        return torch.from_numpy(x), i % 10

def dataloader():
    model = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(SlowDS(), batch_size=64, num_workers=0, shuffle=False)
    for x, y in loader:
        if time.time() - t0 > dur: break
        x, y = x.to(dev), y.to(dev)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()

def launch_bound():
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    while time.time() - t0 < dur:
        x = torch.randn(8, 256, device=dev); y = torch.randint(0, 10, (8,), device=dev)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        losses.append(loss.item())            # a host sync every step

def healthy_below_cap():
    torch.backends.cuda.matmul.allow_tf32 = False   # plain FP32 on CUDA cores: busy, under the cap
    a = torch.randn(8192, 8192, device=dev); b = torch.randn(8192, 8192, device=dev)
    while time.time() - t0 < dur:
        for _ in range(5): c = a @ b
        torch.cuda.synchronize()

def spin():
    while time.time() - t0 < dur:
        torch.cuda._sleep(500_000_000); torch.cuda.synchronize()

def dataloader_fixed():
    # the same slow dataset, fixed the usual way: workers, pinned memory, prefetch; a model big
    # enough that the GPU, not the loader, sets the pace
    model = nn.Sequential(nn.Conv2d(3, 256, 3, padding=1), nn.ReLU(), nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(SlowDS(), batch_size=64, num_workers=12, pin_memory=True, prefetch_factor=4, persistent_workers=True)
    for x, y in loader:
        if time.time() - t0 > dur: break
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        for _ in range(4):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()

def transformer_inference():
    # healthy, well below the power cap: batched bf16 transformer inference
    layer = nn.TransformerEncoder(nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True), 6).to(dev).eval()
    x = torch.randn(16, 512, 1024, device=dev)
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        while time.time() - t0 < dur:
            for _ in range(10): y = layer(x)
            torch.cuda.synchronize()

{"dataloader_fixed": dataloader_fixed, "transformer_inference": transformer_inference, "dataloader": dataloader, "launch_bound": launch_bound, "healthy_below_cap": healthy_below_cap, "spin": spin}[mode]()
torch.cuda.synchronize()
json.dump({"name": mode, "start": t0, "end": time.time()}, open(spanfile, "w"))
print(mode, "done", round(time.time() - t0, 1), flush=True)
