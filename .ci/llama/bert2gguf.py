#!/usr/bin/env python3
"""Minimal HF BERT (sentence-transformers) -> GGUF converter without torch/transformers.

Mirrors what llama.cpp's convert_hf_to_gguf.py (BertModel) writes, using only numpy and
llama.cpp's own gguf-py (PYTHONPATH=<llama.cpp>/gguf-py). Usage:
  python bert2gguf.py <hf_model_dir> <out.gguf> [f16|f32]
"""
import json, struct, sys
from pathlib import Path

import numpy as np
import gguf

src, out = Path(sys.argv[1]), sys.argv[2]
outtype = sys.argv[3] if len(sys.argv) > 3 else "f16"

hp = json.loads((src / "config.json").read_text())
assert hp.get("model_type") == "bert", hp.get("model_type")
n_layer = hp["num_hidden_layers"]


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    dt = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        if meta["dtype"] == "BF16":
            a, b = meta["data_offsets"]
            raw = np.frombuffer(mm[base + a:base + b], dtype=np.uint16).astype(np.uint32) << 16
            yield name, raw.view(np.float32).reshape(meta["shape"])
            continue
        a, b = meta["data_offsets"]
        yield name, np.frombuffer(mm[base + a:base + b], dtype=dt[meta["dtype"]]).reshape(meta["shape"])


w = gguf.GGUFWriter(out, gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT])
w.add_name(src.name if src.name != "model" else "all-MiniLM-L6-v2")
w.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if outtype == "f16" else gguf.LlamaFileType.ALL_F32)
w.add_block_count(n_layer)
w.add_context_length(hp["max_position_embeddings"])
w.add_embedding_length(hp["hidden_size"])
w.add_feed_forward_length(hp["intermediate_size"])
w.add_head_count(hp["num_attention_heads"])
w.add_layer_norm_eps(hp["layer_norm_eps"])
w.add_causal_attention(False)

# pooling (sentence-transformers modules.json -> Pooling config)
pool = None
mods = src / "modules.json"
if mods.is_file():
    for m in json.loads(mods.read_text()):
        if m["type"].endswith("Pooling"):
            pc = json.loads((src / m["path"] / "config.json").read_text())
            if pc.get("pooling_mode_mean_tokens"):
                pool = gguf.PoolingType.MEAN
            elif pc.get("pooling_mode_cls_token"):
                pool = gguf.PoolingType.CLS
            elif pc.get("pooling_mode_lasttoken"):
                pool = gguf.PoolingType.LAST
if pool is not None:
    w.add_pooling_type(pool)

# vocab: WordPiece from tokenizer.json, converted to llama.cpp's "phantom space" form
tj = json.loads((src / "tokenizer.json").read_text())
vocab = tj["model"]["vocab"]
added = {t["id"]: t for t in tj.get("added_tokens", [])}
n_vocab = hp.get("vocab_size", len(vocab))
rev = {i: t for t, i in vocab.items()}
for i, t in added.items():
    rev[i] = t["content"]
tokens, toktypes = [], []
for i in range(n_vocab):
    if i not in rev:
        tokens.append(f"[PAD{i}]"); toktypes.append(gguf.TokenType.UNUSED); continue
    tok = rev[i]
    if i in added:
        tt = gguf.TokenType.CONTROL if added[i].get("special") else gguf.TokenType.USER_DEFINED
    else:
        tt = gguf.TokenType.NORMAL
    if tt != gguf.TokenType.CONTROL:
        tok = tok[2:] if tok.startswith("##") else "\u2581" + tok
    tokens.append(tok); toktypes.append(tt)
w.add_token_type_count(hp.get("type_vocab_size", 1))
w.add_tokenizer_model("bert")
w.add_tokenizer_pre("bert-bge")  # same uncased BERT vocab/hash as bge-small-en-v1.5 in convert_hf_to_gguf
w.add_token_list(tokens)
w.add_token_types(toktypes)
gguf.SpecialVocab(src, n_vocab=len(tokens)).add_to_gguf(w)

# tensors
tmap = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, n_layer)
skip = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")
st_files = sorted(src.glob("*.safetensors"))
assert st_files, "no .safetensors in " + str(src)
for f in st_files:
    for name, arr in load_safetensors(f):
        if name.startswith("bert."):
            name = name[5:]
        if name.endswith(".gamma"):
            name = name[:-6] + ".weight"
        if name.endswith(".beta"):
            name = name[:-5] + ".bias"
        if name in skip or name.startswith("cls."):
            continue
        new = tmap.get_name(name, try_suffixes=(".weight", ".bias"))
        if new is None:
            raise SystemExit(f"cannot map tensor {name!r}")
        arr = arr.astype(np.float32)
        keep_f32 = (arr.ndim <= 1 or new.endswith("_norm.weight") or not new.endswith(".weight")
                    or new.startswith((gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.POS_EMBD],
                                       gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.TOKEN_TYPES])))
        if outtype == "f16" and not keep_f32:
            arr = arr.astype(np.float16)
        w.add_tensor(new, np.ascontiguousarray(arr))

w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print("wrote", out)
