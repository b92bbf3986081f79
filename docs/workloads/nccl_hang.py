"""Two ranks train with all-reduce for a while; then rank 1 stalls on the host and rank 0 waits
in the collective. usage: nccl_hang.py WARMUP_S STALL_S SPANFILE"""
import os, sys, time, json, datetime, torch, torch.distributed as dist, torch.multiprocessing as mp
WARM, STALL, SPAN = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]

def rank_main(rank):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533", NCCL_NVLS_ENABLE="0")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=600))
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(64 * 1024 * 1024, device="cuda")
    t0 = time.time()
    while time.time() - t0 < WARM:                       # healthy data-parallel steps
        for _ in range(8): c = a @ a
        dist.all_reduce(g); torch.cuda.synchronize()
    t1 = time.time()
    if rank == 1:
        time.sleep(STALL)                                # stuck on the host (a bad batch, I/O, a bug)
    else:
        dist.all_reduce(g)                               # waits in NCCL for rank 1
    torch.cuda.synchronize()
    if rank == 0:
        json.dump({"name": "nccl_hang", "warm_start": t0, "stall_start": t1, "end": time.time()}, open(SPAN, "w"))
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(rank_main, nprocs=2, join=True)
