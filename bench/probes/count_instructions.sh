#!/usr/bin/env bash
# Instructions per operation of rank 0's loop in `examples/op_loop.rs` (mpi build, MPI
# calls: GASPAR_MPI_DIRECT=off): callgrind runs rank 0 with N operations and the
# instructions of the program's own code run at least N times are summed per operation
# (Open MPI's own instructions are left out: they are the same for gaspar and the raw
# calls). For a VM without CPU counters; a guide, not a time. Usage:
# bench/probes/count_instructions.sh MODE [N]   (MODE as op_loop takes it; N 100000)
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=$1
n=${2:-100000}
command -v valgrind > /dev/null || { echo "needs valgrind (apt-get install valgrind)"; exit 1; }
cargo build --release -q -p gaspar --features mpi --example op_loop
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/rank0.sh" <<WRAP
#!/bin/sh
if [ "\$OMPI_COMM_WORLD_RANK" = 0 ]; then
    exec valgrind -q --tool=callgrind --dump-instr=yes --callgrind-out-file=$work/out "\$@"
fi
exec "\$@"
WRAP
chmod +x "$work/rank0.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
GASPAR_MPI_DIRECT=off mpirun -n 2 "$work/rank0.sh" "${CARGO_TARGET_DIR:-target}/release/examples/op_loop" "$mode" "$n" > /dev/null
python3 - "$work/out" "$n" "$mode" <<'PY'
import re, sys
path, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
objects, cost, ob, addr, skip = {}, {}, "", 0, False
for line in open(path):
    line = line.rstrip("\n")
    if line.startswith("ob="):
        m = re.match(r"\((\d+)\)(?: (.*))?", line[3:])
        if m and m.group(2):
            objects[m.group(1)] = m.group(2)
        ob = objects.get(m.group(1), "") if m else line[3:]
        continue
    if line.startswith("cob="):
        m = re.match(r"\((\d+)\)(?: (.*))?", line[4:])
        if m and m.group(2):
            objects[m.group(1)] = m.group(2)
        continue
    if line.startswith("calls="):
        skip = True  # the next cost line is the call's inclusive cost
        continue
    m = re.match(r"^(0x[0-9a-f]+|[+-]\d+|\*)\s+\S+\s+(\d+)", line)
    if not m:
        continue
    a = m.group(1)
    addr = int(a, 16) if a.startswith("0x") else addr + int(a) if a[0] in "+-" else addr
    if skip:
        skip = False
        continue
    if ob.endswith("/op_loop"):
        cost[addr] = cost.get(addr, 0) + int(m.group(2))
hot = [c for c in cost.values() if c >= 0.99 * n]
print(f"{mode}: {len(hot)} instructions of op_loop's own code per operation ({sum(hot) / n:.1f} executed)")
PY
