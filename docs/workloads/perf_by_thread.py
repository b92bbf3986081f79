"""Share of perf samples by thread, and within one thread by library and function (run 42).
usage: perf script -i perf.data -F comm,tid,ip,sym,dso > s.txt; perf_by_thread.py s.txt THREAD [N]"""
import sys, re, collections
f=sys.argv[1]; comm=sys.argv[2] if len(sys.argv)>2 else None
by_comm=collections.Counter(); by_dso=collections.Counter(); by_sym=collections.Counter()
n=0
for line in open(f):
    parts=line.split()
    if len(parts)<3: continue
    c=parts[0]
    m=re.search(r'\(([^)]*)\)\s*$', line)
    dso=m.group(1).split('/')[-1] if m else '?'
    # symbol: between ip and (dso)
    sym=re.sub(r'^\S+\s+\d+\s+[0-9a-f]+\s+','',line.strip())
    sym=re.sub(r'\s*\([^)]*\)\s*$','',sym)
    sym=re.sub(r'\+0x[0-9a-f]+$','',sym)
    by_comm[c]+=1
    if comm and c!=comm: continue
    n+=1; by_dso[dso]+=1; by_sym[(dso,sym)]+=1
tot=sum(by_comm.values())
print("samples",tot, {k:round(v*100/tot,1) for k,v in by_comm.most_common()})
if comm:
    print(comm, n, {k:round(v*100/n,1) for k,v in by_dso.most_common(6)})
    for (d,s),v in by_sym.most_common(int(sys.argv[3]) if len(sys.argv)>3 else 30):
        print(f"{v*100/n:5.1f}% {d[:20]:20} {s[:110]}")
