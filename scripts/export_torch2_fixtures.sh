#!/bin/bash
# Exports the torch 2.x fixtures of the torch.onnx corpus (issue 21, tests/onnx/torch2/): small
# models written by the exporter users have now (torch.onnx.export(..., dynamo=True), its default
# opset), weights random from the corpus seed, torch's float outputs as the expected values.
# Debian has torch 1.13, whose TorchScript exporter the test-time corpus uses; this script runs
# once, on a machine with torch 2.x, onnx and onnxscript (and transformers for the Hugging Face
# models), and its output is committed. Each model is also run by onnxruntime where it is
# installed, as a check of the export itself (recorded in MANIFEST.json, not used by the tests).
#
#   scripts/export_torch2_fixtures.sh OUT_DIR [MODEL,...]
# EXPORT_FLAGS=--dynamic-batch exports with a symbolic batch (tests/onnx/torch2_batch/).
set -euo pipefail
out=${1:?usage: scripts/export_torch2_fixtures.sh OUT_DIR [MODEL,...]}
here=$(cd "$(dirname "$0")/.." && pwd)
models=${2:-transformer_encoder,transformer_encoder_seq_first,lstm,gru,lstm_bidirectional,gru_bidirectional,gpt2_decoder,llama_decoder,unet,mobilenet_v3_small_w05,mobilenet_v2_w035,shufflenet_v2_x0_5,efficientnet_tiny,regnet_tiny,vit_tiny,swin_tiny,resnet_tiny,hf_gpt2_tiny,hf_llama_tiny}
python=${PYTHON:-python3}
mkdir -p "$out"
"$python" "$here/tests/onnx/torch_corpus.py" export --exporter dynamo --keep-going ${EXPORT_FLAGS:-} \
  --out "$out" --models "$models" 2>&1 | { grep -v -i -E "warn|^\s*$" || true; } | tee "$out/export.log"
"$python" - "$out" <<'PY'
import glob, json, os, sys, platform
import numpy as np
out = sys.argv[1]
import torch, onnx
info = {"torch": torch.__version__, "onnx": onnx.__version__, "python": platform.python_version(),
        "exporter": "torch.onnx.export(model, (x,), path, dynamo=True, external_data=False)",
        "models": {}}
for mod in ("onnxscript", "onnxruntime", "transformers", "torchvision"):
    try:
        info[mod] = __import__(mod).__version__
    except Exception:
        pass
for d in sorted(glob.glob(os.path.join(out, "*", "model.onnx"))):
    name = os.path.basename(os.path.dirname(d))
    m = onnx.load(d)
    entry = {"bytes": os.path.getsize(d), "ir_version": m.ir_version,
             "opsets": {o.domain or "ai.onnx": o.version for o in m.opset_import},
             "ops": sorted({n.op_type for n in m.graph.node}),
             "functions": len(m.functions)}
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(d, providers=["CPUExecutionProvider"])
        x = np.load(os.path.join(os.path.dirname(d), "input.npy"))
        got = sess.run(None, {sess.get_inputs()[0].name: x})
        worst = 0.0
        for o, g in zip(sess.get_outputs(), got):
            want = np.load(os.path.join(os.path.dirname(d), f"expected_{o.name}.npy"))
            worst = max(worst, float(np.max(np.abs(g - want))) / (float(np.ptp(want)) or 1.0))
        entry["onnxruntime_max_error_of_range"] = worst
    except Exception as e:
        entry["onnxruntime_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    info["models"][name] = entry
json.dump(info, open(os.path.join(out, "MANIFEST.json"), "w"), indent=1, sort_keys=True)
for k, v in info["models"].items():
    print(k, v["bytes"], v.get("opsets"), v.get("onnxruntime_max_error_of_range",
                                                v.get("onnxruntime_error")))
PY
