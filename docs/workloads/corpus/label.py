"""Turns the marks the corpus jobs wrote (what each workload *did*, and when) into labelled
phases for tests/corpus/labels.json. Labels come from the workloads, never from gpuwatch.

usage: label.py SET RECORDING_FILE MARKS.jsonl INTERVAL_MS NOTE >> (merged by hand into labels.json)

Each job wrote start (before importing torch), ready (start-up over), onset (the problem began)
and end. Phases per GPU:
  startup     start .. ready                   nothing may fire
  healthy     ready .. onset (when onset is later), or ready .. end for healthy kinds
  <problem>   onset .. end                      the expected finding
  culprit     onset .. end on the GPU of the rank the others wait for (nothing may fire there)
  transition  end .. the next job's start on that GPU (teardown, idle gap)
"""
import json, sys
from collections import defaultdict

KIND_LABEL = {
    "healthy": "healthy", "startup": "healthy", "ddp_healthy": "healthy", "serve_idle": "healthy",
    "spin_hang": "hang", "starved": "starved", "sync": "sync", "leak": "mem-growth",
    "pageable_copy": "transfer", "gloo_": "hang",
}
TWO_GPU_HANGS = {"ddp_dead_rank", "ddp_uneven_steps", "ddp_host_stall"}
# Ranks sharing GPU 0 (gloo.py): the culprit is a process, named by the onset mark it wrote.
ONE_GPU_HANGS = {"gloo_stall_e", "gloo_kernel_f"}


def label_of(kind):
    for prefix, label in KIND_LABEL.items():
        if kind.startswith(prefix):
            return label
    raise SystemExit(f"no label for kind {kind}")


def main():
    set_name, rec, marks_path, interval_ms, note = sys.argv[1:6]
    marks = [json.loads(l) for l in open(marks_path) if l.strip()]
    # One run of a job on one GPU: (job, gpu) in the order they started.
    runs = defaultdict(dict)
    order = []
    # A job's end: the last "end" any of its ranks wrote (a rank that died writes none).
    job_end = defaultdict(float)
    for m in marks:
        if m["mark"] == "end":
            job_end[m["job"]] = max(job_end[m["job"]], m["t"])
    culprit_pid = {}
    for m in marks:
        if m["mark"] == "onset" and m.get("culprit"):
            culprit_pid[m["job"]] = m["pid"]
    for m in marks:
        if m.get("gpu") is None:      # the launcher of a two-GPU job: no GPU of its own
            continue
        key = (m["job"], m["gpu"])
        if key not in runs:
            order.append(key)
        runs[key].setdefault(m["mark"], m["t"])
    ms = lambda t: int(round(t * 1000))
    phases = []
    by_gpu = defaultdict(list)
    for job, gpu in order:
        r = runs[(job, gpu)]
        if "end" not in r and job in TWO_GPU_HANGS and job_end[job]:
            r["end"] = job_end[job]
        if not {"start", "ready", "end"} <= r.keys():
            print(f"skipping {job} on GPU {gpu}: marks {sorted(r)}", file=sys.stderr)
            continue
        start, ready, end = r["start"], r["ready"], r["end"]
        onset = r.get("onset", ready)
        by_gpu[gpu].append((start, end))
        phases.append(dict(job=job, gpu=gpu, label="startup", start_ms=ms(start), end_ms=ms(ready)))
        if job in TWO_GPU_HANGS:
            if gpu == 0:
                if onset > ready + 1:
                    phases.append(dict(job=job, gpu=gpu, label="healthy", start_ms=ms(ready), end_ms=ms(onset)))
                phases.append(dict(job=job, gpu=0, label="hang", start_ms=ms(onset), onset_ms=ms(onset),
                                   end_ms=ms(end), culprit_gpu=1))
            else:
                if onset > ready + 1:
                    phases.append(dict(job=job, gpu=gpu, label="healthy", start_ms=ms(ready), end_ms=ms(onset)))
                phases.append(dict(job=job, gpu=gpu, label="culprit", start_ms=ms(onset), end_ms=ms(end)))
            continue
        label = label_of(job)
        if job in ONE_GPU_HANGS:
            # Ranks start at slightly different times: the phases run from the last start to
            # the last ready, the first onset to the first end.
            if onset > ready + 1:
                phases.append(dict(job=job, gpu=gpu, label="healthy", start_ms=ms(ready), end_ms=ms(onset)))
            phases.append(dict(job=job, gpu=gpu, label="hang", start_ms=ms(onset), onset_ms=ms(onset),
                               end_ms=ms(end), culprit_pid=culprit_pid[job]))
            continue
        if label == "healthy":
            phases.append(dict(job=job, gpu=gpu, label="healthy", start_ms=ms(ready), end_ms=ms(end)))
            continue
        if onset > ready + 1:
            phases.append(dict(job=job, gpu=gpu, label="healthy", start_ms=ms(ready), end_ms=ms(onset)))
        phases.append(dict(job=job, gpu=gpu, label=label, start_ms=ms(onset), onset_ms=ms(onset), end_ms=ms(end)))
    for gpu, spans in by_gpu.items():
        spans.sort()
        for (s0, e0), (s1, _) in zip(spans, spans[1:]):
            if s1 > e0:
                phases.append(dict(job="between jobs", gpu=gpu, label="transition", start_ms=ms(e0), end_ms=ms(s1)))
    phases.sort(key=lambda p: (p["gpu"], p["start_ms"]))
    print(json.dumps(dict(file=rec, set=set_name, interval_ms=int(interval_ms), note=note, phases=phases), indent=1))


if __name__ == "__main__":
    main()
