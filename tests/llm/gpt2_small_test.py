"""The done-when test of docs/llm.md: gpt2-small generates 32 tokens after a 128-token prompt with
values on (int8 on tpu-v4-like-core): every program's values are checked against the reference
bit for bit and every sampled id equals the reference's greedy id (npusim exits 1 otherwise).

usage: gpt2_small_test.py NPUSIM WORKDIR
"""

import json
import os
import subprocess
import sys

import numpy as np


def main():
    npusim, work = sys.argv[1], sys.argv[2]
    out = os.path.join(work, "gpt2-small")
    p = subprocess.run([npusim, "generate", "--hw", "tpu-v4-like-core", "--workload",
                        "gpt2-small", "--prompt-tokens", "128", "--new-tokens", "32", "--dtype",
                        "int8", "--out", out], capture_output=True, text=True)
    print(p.stdout)
    assert p.returncode == 0, f"exit {p.returncode}\n{p.stderr}"
    s = json.load(open(os.path.join(out, "stats.json")))
    g = s["generation"]
    assert g["ids_equal_reference"] is True
    assert len(s["steps"]) == 32
    assert all(t["functional_check"] == "ok" for t in s["steps"])
    assert all(t["tokens"] == t["reference_tokens"] for t in s["steps"])
    tokens = np.load(os.path.join(out, "tokens.npy"))
    assert tokens.shape == (1, 32) and tokens.dtype == np.int32
    assert [t["tokens"][0] for t in s["steps"]] == list(tokens[0])
    print("ok")


if __name__ == "__main__":
    main()
