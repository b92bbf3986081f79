#!/bin/bash
# Device run 20 (issues 24 and 29), build of this commit: what the H200 in this VM says about
# its health and what each health call costs (health_probe.py), the Python versions there, and
# what reading stacks costs the process read, 40 pairs of 2 s windows (stepcost3.py).
B=$PWD/target/release/gpuwatch; R=$OUT
date -u > $R/log.txt; nvidia-smi --query-gpu=name,driver_version,ecc.mode.current --format=csv,noheader >> $R/log.txt
ls /usr/bin/python3* /usr/local/bin/python3* >> $R/log.txt 2>&1; python3 --version >> $R/log.txt 2>&1
timeout 60 python3 docs/workloads/health_probe.py 0 > $R/health.json 2>>$R/log.txt
nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER > $R/smi-health.txt 2>&1
nvidia-smi nvlink -s >> $R/smi-health.txt 2>&1
timeout 300 python3 docs/workloads/stepcost3.py $B 40 $R >> $R/log.txt 2>&1
python3 docs/workloads/stepcost3_report.py $R > $R/stepcost3.json 2>>$R/log.txt
cat $R/stepcost3.json; head -c 3000 $R/health.json; tail -5 $R/log.txt
