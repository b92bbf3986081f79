"""The functions of one binary that callgrind profiles saw run, one symbol a line, sorted.

    python3 cg_names.py BINARY_NAME PROFILE...

Profiles are callgrind's output with --demangle=no --compress-strings=no --compress-pos=no
(docs/workloads/link_order.sh here, run70.sh on the GPU machine, where the binary may carry
another name, as gw-relr did)."""
import re, sys


def names(path, binary):
    found, ob, cob = set(), None, None
    for line in open(path, errors="replace"):
        key, _, value = line.rstrip("\n").partition("=")
        if key == "ob":
            ob = value
        elif key == "cob":
            cob = value
        elif key in ("fn", "cfn"):
            obj = (cob if key == "cfn" and cob else ob) or ""
            if obj.endswith("/" + binary) and re.match(r"^[A-Za-z_$.][\w$.]*$", value):
                found.add(value)
            if key == "cfn":
                cob = None
    return found


if __name__ == "__main__":
    binary, profiles = sys.argv[1], sys.argv[2:]
    print("\n".join(sorted(set().union(*(names(p, binary) for p in profiles)))))
