#!/bin/bash
# Device run 13 (issues 15, 17): GPU selection, query and user names on the real H200, and a
# JAX job that preallocates GPU memory and then idles while gpuwatch records: its /proc is
# captured as a fixture (JAX and its CUDA plugin, XLA settings), and the recording's
# idle-mem finding must name JAX's preallocation.
B=$PWD/target/release/gpuwatch; R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1
date -u > $R/log.txt; nvidia-smi --query-gpu=name,driver_version,uuid,pci.bus_id --format=csv,noheader >> $R/log.txt
UUID=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1); BUS=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | head -1)
{
  echo "== -i 0"; $B devices -i 0 | head -2
  echo "== -i ${UUID:0:12}"; $B devices -i "${UUID:0:12}" | head -2
  echo "== -i $BUS"; $B devices -i "$BUS" | head -2
  echo "== -i 1 (no such GPU)"; $B devices -i 1; echo "rc=$?"
  echo "== CUDA_VISIBLE_DEVICES=0 --cuda-visible"; CUDA_VISIBLE_DEVICES=0 $B devices --cuda-visible | head -2
  echo "== query"; $B query
  echo "== query json, watch 1s for 4s"; timeout 4.5 $B query --format json --watch 1s --fields timestamp,index,utilization.gpu,power.draw,memory.used,gpm.sm_active,findings
} >> $R/select.txt 2>&1
cp $R/select.txt $OUT/
mkdir -p /tmp/j13 && cat > /tmp/j13/jaxjob.py <<'PY'
import time, jax, jax.numpy as jnp
print(jax.__version__, jax.devices(), flush=True)
x = jnp.ones((4096, 4096)); (x @ x).block_until_ready()
time.sleep(float(__import__("sys").argv[1]))
PY
timeout 170 $B record -o $R/jax.jsonl --interval 250ms --duration 150s 2>>$R/log.txt & REC=$!
sleep 2
(cd /tmp/j13 && timeout 160 python3 jaxjob.py 150 >> $R/log.txt 2>&1) & J=$!
sleep 30
P=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader | head -1 | tr -d ' ')
echo "jax pid $P" >> $R/log.txt
d=$R/fx/proc/$P; mkdir -p $d
for f in maps environ cgroup status cmdline stat; do cat /proc/$P/$f > $d/$f 2>/dev/null; done
grep -oE '/[^ ]*site-packages/' /proc/$P/maps | sort -u | while read sp; do
  for m in "$sp"jax-*.dist-info "$sp"jaxlib-*.dist-info "$sp"jax_cuda*.dist-info "$sp"nvidia_*.dist-info; do
    [ -d "$m" ] && { mkdir -p $R/fx$m; sed '/^$/q' "$m/METADATA" | head -20 > $R/fx$m/METADATA; }
  done
done
wait $REC; wait $J
$B diagnose --replay $R/jax.jsonl --json > $R/jax-diagnosis.json 2>>$R/log.txt
gzip -9 -k $R/jax.jsonl
tar czf $OUT/jaxfx.tgz -C $R fx
cp $R/jax.jsonl.gz $R/jax-diagnosis.json $R/log.txt $OUT/
cat $R/select.txt; tail -5 $R/log.txt
python3 -c "
import json; d=json.load(open('$R/jax-diagnosis.json'))
for f in d.get('findings',[]): print(f['rule'], f['severity'], '|', f['causes'][0][:110]); print('   ', [e for e in f['evidence'] if 'environ' in e or 'JAX' in e])
"
