#!/bin/bash
# Device run 11 (issues 14, 17): capture /proc of real torch processes as test fixtures — maps,
# environ, cgroup, status, cmdline — with the version files their mapped libraries point at
# (torch/version.py, the dist-info METADATA headers of the nvidia-* wheels), and what torch itself
# reports, as the ground truth the reader is tested against. Three processes: a matmul loop with
# CUDA_LAUNCH_BLOCKING=1, a one-rank DDP job over NCCL with NCCL settings, TensorFlow if it
# imports here, and a JAX loop.
R=$OUT/fx; mkdir -p $R; export PYTHONUNBUFFERED=1
date -u > $R/log.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/log.txt
python3 - >> $R/log.txt 2>&1 <<'PY'
import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "nccl", torch.cuda.nccl.version())
for m in ("tensorflow", "jax"):
    try: __import__(m); print(m, "imports")
    except Exception as e: print(m, "absent:", type(e).__name__)
PY
cat > /tmp/blocking.py <<'PY'
import torch, time, sys
a = torch.randn(4096, 4096, device="cuda"); t = time.time()
torch.backends.cudnn.benchmark = False
while time.time() - t < float(sys.argv[1]):
    for _ in range(20): a = torch.tanh(a @ a)
    torch.cuda.synchronize()
PY
cat > /tmp/ddp.py <<'PY'
import torch, time, sys, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29517", rank=0, world_size=1)
m = DDP(torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10)).cuda(), device_ids=[0])
o = torch.optim.SGD(m.parameters(), lr=0.01); x = torch.randn(256, 4096, device="cuda"); t = time.time()
while time.time() - t < float(sys.argv[1]):
    o.zero_grad(); m(x).sum().backward(); o.step()
dist.destroy_process_group()
PY
cat > /tmp/tf.py <<'PY'
import time, sys, tensorflow as tf
a = tf.random.normal((2048, 2048)); t = time.time()
while time.time() - t < float(sys.argv[1]): a = tf.tanh(a @ a)
PY
CUDA_LAUNCH_BLOCKING=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True OMP_NUM_THREADS=4 \
  python3 /tmp/blocking.py 40 & P1=$!
NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=2 TORCH_NCCL_BLOCKING_WAIT=1 \
  python3 /tmp/ddp.py 40 > $R/ddp-stdout.txt 2>&1 & P2=$!
P3=
python3 -c "import tensorflow" 2>/dev/null && { python3 /tmp/tf.py 40 & P3=$!; }
cat > /tmp/jax.py <<'PY'
import time, sys, jax, jax.numpy as jnp
print(jax.devices(), flush=True); a = jnp.ones((2048, 2048)); t = time.time()
while time.time() - t < float(sys.argv[1]): a = jnp.tanh(a @ a).block_until_ready()
PY
python3 /tmp/jax.py 40 > $R/jax-stdout.txt 2>&1 & P4=$!
sleep 20
cap() { # name pid
  local d=$R/root/proc/$2; mkdir -p $d; echo "$1 $2" >> $R/pids.txt
  for f in maps environ cgroup status cmdline stat; do cat /proc/$2/$f > $d/$f 2>/dev/null; done
  ls -l /proc/$2/fd 2>/dev/null | grep -c nvidia > $d/nvidia-fds.txt
  # the files a reader follows from the mapped libraries: version.py and dist-info headers
  grep -oE '/[^ ]*site-packages/' /proc/$2/maps | sort -u | while read sp; do
    for v in "$sp"torch/version.py "$sp"tensorflow/__init__.py "$sp"jax/version.py; do
      [ -f "$v" ] && { mkdir -p $R/root$(dirname $v); head -c 4000 "$v" > $R/root$v; }
    done
    for m in "$sp"*.dist-info/METADATA; do
      case "$m" in *torch-*|*nvidia_*|*tensorflow*|*jax*|*triton*) mkdir -p $R/root$(dirname $m); sed '/^$/q' "$m" | head -30 > $R/root$m;; esac
    done
  done
  awk '{print $6}' /proc/$2/maps | grep -E 'lib(cudart|cudnn|nccl|cublas|cuda)\.so' | sort -u > $d/cuda-libs.txt
}
cap blocking $P1; cap ddp $P2; [ -n "$P3" ] && cap tf $P3; cap jax $P4
cat /proc/self/cgroup > $R/self-cgroup.txt; cat /proc/1/cgroup > $R/init-cgroup.txt
ls -la /proc/$P1/root/ > /dev/null 2>&1
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv >> $R/log.txt
wait $P1 $P2 $P3 $P4 2>/dev/null; cat $R/jax-stdout.txt >> $R/log.txt
tail -5 $R/ddp-stdout.txt >> $R/log.txt
tar czf $OUT/fx.tgz -C $OUT fx; cat $R/log.txt; cat $R/pids.txt; cat $R/root/proc/*/cuda-libs.txt; cat $R/self-cgroup.txt
rm -rf $R/root
