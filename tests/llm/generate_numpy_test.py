"""npusim generate against an independent float implementation in NumPy (docs/llm.md "Checks").

A small decoder of each flavour (GPT-2: LayerNorm, GELU, learned positions, tied embedding;
Llama: RMSNorm, SwiGLU, rotary positions, grouped-query attention) gets random weights written
here as a safetensors file with Hugging Face's names; `npusim generate --weights` runs it in bf16
and the NumPy model below (whole-sequence causal attention, no KV cache, float64) recomputes every
step's logits from the same prompt and the ids npusim generated. Each step's logits must have a
cosine >= 0.999 with NumPy's and each generated id must be NumPy's argmax. A third run in int8
must agree with npusim's own reference (exit code 0) and stay close to NumPy (cosine >= 0.98).

usage: generate_numpy_test.py NPUSIM WORKDIR
"""

import json
import math
import os
import subprocess
import sys

import numpy as np

LAYERS, HIDDEN, HEADS, FFN, VOCAB, CONTEXT = 2, 64, 4, 128, 256, 64
PROMPT, NEW = 8, 6


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, dtype=np.float32)
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        blobs.append(a.tobytes())
        offset += a.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for b in blobs:
            f.write(b)


def gpt2_weights(rng):
    u = lambda *s, a: rng.uniform(-a, a, size=s)
    b = 1 / math.sqrt(HIDDEN)
    t = {"wte.weight": u(VOCAB, HIDDEN, a=0.2), "wpe.weight": u(CONTEXT, HIDDEN, a=0.2),
         "ln_f.weight": rng.uniform(0.8, 1.2, HIDDEN), "ln_f.bias": u(HIDDEN, a=0.1)}
    for i in range(LAYERS):
        p = f"h.{i}."
        t[p + "ln_1.weight"] = rng.uniform(0.8, 1.2, HIDDEN)
        t[p + "ln_1.bias"] = u(HIDDEN, a=0.1)
        t[p + "attn.c_attn.weight"] = u(HIDDEN, 3 * HIDDEN, a=b)  # Conv1D: [in, out]
        t[p + "attn.c_attn.bias"] = u(3 * HIDDEN, a=0.05)
        t[p + "attn.c_proj.weight"] = u(HIDDEN, HIDDEN, a=b)
        t[p + "attn.c_proj.bias"] = u(HIDDEN, a=0.05)
        t[p + "ln_2.weight"] = rng.uniform(0.8, 1.2, HIDDEN)
        t[p + "ln_2.bias"] = u(HIDDEN, a=0.1)
        t[p + "mlp.c_fc.weight"] = u(HIDDEN, FFN, a=b)
        t[p + "mlp.c_fc.bias"] = u(FFN, a=0.05)
        t[p + "mlp.c_proj.weight"] = u(FFN, HIDDEN, a=3 / math.sqrt(FFN))
        t[p + "mlp.c_proj.bias"] = u(HIDDEN, a=0.05)
    return t


def llama_weights(rng, kv_heads):
    u = lambda *s, a: rng.uniform(-a, a, size=s)
    b, d = 1 / math.sqrt(HIDDEN), HIDDEN // HEADS
    t = {"model.embed_tokens.weight": u(VOCAB, HIDDEN, a=1.0),
         "model.norm.weight": rng.uniform(0.8, 1.2, HIDDEN),
         "lm_head.weight": u(VOCAB, HIDDEN, a=b)}  # Linear: [out, in]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = rng.uniform(0.8, 1.2, HIDDEN)
        t[p + "post_attention_layernorm.weight"] = rng.uniform(0.8, 1.2, HIDDEN)
        t[p + "self_attn.q_proj.weight"] = u(HIDDEN, HIDDEN, a=b)
        t[p + "self_attn.k_proj.weight"] = u(kv_heads * d, HIDDEN, a=b)
        t[p + "self_attn.v_proj.weight"] = u(kv_heads * d, HIDDEN, a=b)
        t[p + "self_attn.o_proj.weight"] = u(HIDDEN, HIDDEN, a=b)
        t[p + "mlp.gate_proj.weight"] = u(FFN, HIDDEN, a=b)
        t[p + "mlp.up_proj.weight"] = u(FFN, HIDDEN, a=b)
        t[p + "mlp.down_proj.weight"] = u(HIDDEN, FFN, a=1 / math.sqrt(FFN))
    return t


def attention(q, k, v):
    """q [H, T, d], k and v [H, T, d]: causal softmax(q k^T / sqrt(d)) v."""
    T, d = q.shape[1], q.shape[2]
    s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
    s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
    s = np.exp(s - s.max(-1, keepdims=True))
    return (s / s.sum(-1, keepdims=True)) @ v


def gpt2_logits(t, ids):
    """Logits of every position of `ids` (GPT-2, GELU in its tanh approximation, "gelu_new")."""
    T, d = len(ids), HIDDEN // HEADS
    ln = lambda x, g, b: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b
    x = t["wte.weight"][ids] + t["wpe.weight"][:T]
    for i in range(LAYERS):
        p = f"h.{i}."
        h = ln(x, t[p + "ln_1.weight"], t[p + "ln_1.bias"])
        qkv = h @ t[p + "attn.c_attn.weight"] + t[p + "attn.c_attn.bias"]
        q, k, v = (qkv[:, j * HIDDEN:(j + 1) * HIDDEN].reshape(T, HEADS, d).transpose(1, 0, 2)
                   for j in range(3))
        a = attention(q, k, v).transpose(1, 0, 2).reshape(T, HIDDEN)
        x = x + a @ t[p + "attn.c_proj.weight"] + t[p + "attn.c_proj.bias"]
        h = ln(x, t[p + "ln_2.weight"], t[p + "ln_2.bias"])
        f = h @ t[p + "mlp.c_fc.weight"] + t[p + "mlp.c_fc.bias"]
        f = 0.5 * f * (1 + np.tanh(math.sqrt(2 / math.pi) * (f + 0.044715 * f ** 3)))
        x = x + f @ t[p + "mlp.c_proj.weight"] + t[p + "mlp.c_proj.bias"]
    return ln(x, t["ln_f.weight"], t["ln_f.bias"]) @ t["wte.weight"].T


def llama_logits(t, ids, kv_heads):
    T, d = len(ids), HIDDEN // HEADS
    rms = lambda x, g: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * g
    inv = 10000.0 ** (-np.arange(0, d, 2) / d)
    ang = np.arange(T)[:, None] * inv[None, :]
    cos, sin = np.concatenate([np.cos(ang)] * 2, -1), np.concatenate([np.sin(ang)] * 2, -1)
    rope = lambda x: x * cos + np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1) * sin
    x = t["model.embed_tokens.weight"][ids]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        h = rms(x, t[p + "input_layernorm.weight"])
        q = (h @ t[p + "self_attn.q_proj.weight"].T).reshape(T, HEADS, d).transpose(1, 0, 2)
        k = (h @ t[p + "self_attn.k_proj.weight"].T).reshape(T, kv_heads, d).transpose(1, 0, 2)
        v = (h @ t[p + "self_attn.v_proj.weight"].T).reshape(T, kv_heads, d).transpose(1, 0, 2)
        q, k = rope(q), rope(k)
        rep = HEADS // kv_heads
        k, v = np.repeat(k, rep, axis=0), np.repeat(v, rep, axis=0)
        a = attention(q, k, v).transpose(1, 0, 2).reshape(T, HIDDEN)
        x = x + a @ t[p + "self_attn.o_proj.weight"].T
        h = rms(x, t[p + "post_attention_layernorm.weight"])
        g = h @ t[p + "mlp.gate_proj.weight"].T
        f = (g / (1 + np.exp(-g))) * (h @ t[p + "mlp.up_proj.weight"].T)
        x = x + f @ t[p + "mlp.down_proj.weight"].T
    return rms(x, t["model.norm.weight"]) @ t["lm_head.weight"].T


def run_case(npusim, work, flavour, dtype, kv_heads=HEADS, hw="tpu-v4-like-core", new=NEW):
    """Runs npusim generate on `hw` and checks it against NumPy; returns its stats.json."""
    rng = np.random.default_rng(7 if flavour == "gpt2" else 11)
    if flavour == "gpt2":
        t = gpt2_weights(rng)
        cfg = {"norm": "layer", "activation": "gelu_tanh", "positions": "learned", "bias": True,
               "tied_embeddings": True}
        logits_of = lambda ids: gpt2_logits(t, ids)
    else:
        t = llama_weights(rng, kv_heads)
        cfg = {"norm": "rms", "activation": "swiglu", "positions": "rotary", "bias": False,
               "tied_embeddings": False}
        logits_of = lambda ids: llama_logits(t, ids, kv_heads)
    name = f"tiny-{flavour}"
    cfg.update({"schema_version": 1, "kind": "decoder", "name": name, "layers": LAYERS,
                "hidden": HIDDEN, "heads": HEADS, "kv_heads": kv_heads, "ffn": FFN,
                "vocab": VOCAB, "max_context": CONTEXT, "norm_epsilon": 1e-5})
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, f"{name}.json")
    with open(model, "w") as f:
        json.dump(cfg, f)
    weights = os.path.join(work, f"{name}.safetensors")
    write_safetensors(weights, t)
    prompt = rng.integers(0, VOCAB, size=(1, PROMPT)).astype(np.int32)
    ids_file = os.path.join(work, f"{name}-prompt.npy")
    np.save(ids_file, prompt)
    out = os.path.join(work, f"{name}-{dtype}")
    cmd = [npusim, "generate", "--hw", hw, "--workload", model, "--weights",
           weights, "--input", ids_file, "--new-tokens", str(new), "--dtype", dtype, "--out", out]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        raise SystemExit(f"{name} {dtype}: npusim generate exited {p.returncode}")
    tokens = np.load(os.path.join(out, "tokens.npy"))[0]
    logits = np.load(os.path.join(out, "logits.npy"))[:, 0, :]
    stats = json.load(open(os.path.join(out, "stats.json")))
    assert stats["generation"]["ids_equal_reference"], "ids differ from npusim's reference"
    seq = list(prompt[0])
    worst, failures = 1.0, []
    for step in range(new):
        ref = logits_of(np.array(seq))[-1]
        cos = float(ref @ logits[step] / (np.linalg.norm(ref) * np.linalg.norm(logits[step])))
        worst = min(worst, cos)
        top2 = np.sort(ref)[-2:]
        if int(np.argmax(ref)) != int(tokens[step]):
            failures.append(f"step {step}: npusim {tokens[step]}, numpy {np.argmax(ref)} "
                            f"(numpy's top two {top2[1]:.4f}, {top2[0]:.4f})")
        seq.append(int(tokens[step]))
    print(f"{name} {dtype}: tokens {list(tokens)}, worst logits cosine {worst:.6f}")
    bound = 0.999 if dtype == "bf16" else 0.98
    if worst < bound:
        failures.append(f"logits cosine {worst:.6f} < {bound}")
    if dtype == "bf16" and failures:
        raise SystemExit(f"{name} {dtype}: " + "; ".join(failures))
    if dtype == "int8" and worst < bound:
        raise SystemExit(f"{name} {dtype}: " + "; ".join(failures))
    return stats


def main():
    npusim, work = sys.argv[1], sys.argv[2]
    run_case(npusim, work, "gpt2", "bf16")
    run_case(npusim, work, "llama", "bf16", kv_heads=2)
    run_case(npusim, work, "gpt2", "int8")
    print("ok")


if __name__ == "__main__":
    main()
