#!/bin/bash
# Run 68 (#27, #28): run 64's side-by-side again, with NEW = the build of c8e36b9 (hang's
# scenario in its rule file, the findings pane counting only changed lines) against the same
# OLD (202212f), beside the steady bf16 load, with nvtop -d 1 and -d 10 for the ratios.
# Build and copy the two binaries as run64.sh says.
exec bash docs/workloads/run64.sh
