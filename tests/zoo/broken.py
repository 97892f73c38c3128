"""Archives that are wrong in the ways users' files are wrong, each with the words Stickler's
one-line error must contain."""
import json
import os
import zipfile

import torch
from torch import nn


class _Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)

    def forward(self, input_ids):
        return self.embed(input_ids)


class _NeverEnds(nn.Module):
    """A forward whose loop never ends: scripted, so the loop stays in the graph."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)

    def forward(self, input_ids):
        hidden = self.embed(input_ids)
        trips = 0
        while trips >= 0:
            trips = trips + 1
        return hidden


def _save(model, path, card=None):
    extra = {"stickler/model.json": card} if card is not None else {}
    torch.jit.save(torch.jit.trace(model, torch.zeros(1, 3, dtype=torch.long)), path, _extra_files=extra)


def _card(name):
    return json.dumps({"name": "tiny", "inputs": [{"name": name, "shape": [1, 3], "dtype": "int64", "kind": "token_ids", "vocab_size": 10}]})


def write_broken(out_dir):
    torch.manual_seed(3)
    model = _Tiny().eval()
    entries = []

    def add(name, error):
        entries.append({"name": name, "file": "broken/" + name, "error": error})

    _save(model, f"{out_dir}/good.pt", _card("input_ids"))

    with open(f"{out_dir}/not-a-zip.pt", "w") as f:
        f.write("this is not a model\n")
    add("not-a-zip.pt", "not a zip file")

    torch.save(model.state_dict(), f"{out_dir}/legacy-pickle.pt", _use_new_zipfile_serialization=False)
    add("legacy-pickle.pt", "not a zip file")

    torch.save(model.state_dict(), f"{out_dir}/plain-torch-save.pt")
    add("plain-torch-save.pt", "torch.save checkpoint")

    with open(f"{out_dir}/good.pt", "rb") as f:
        data = f.read()
    with open(f"{out_dir}/truncated.pt", "wb") as f:
        f.write(data[: len(data) // 2])
    add("truncated.pt", "truncated or corrupt")

    with zipfile.ZipFile(f"{out_dir}/good.pt") as src, zipfile.ZipFile(f"{out_dir}/too-new-version.pt", "w") as dst:
        for item in src.infolist():
            content = src.read(item.filename)
            if item.filename.endswith(".data/version") or item.filename.endswith("/version"):
                content = b"99\n"
            dst.writestr(item, content)
    add("too-new-version.pt", "newer than this LibTorch")

    # Zip bombs: a small archive whose card or constants inflate to 64 MB (deflate reaches about
    # 1000x; torch.jit.save stores every entry uncompressed).
    for name, target in (("card-bomb.pt", "extra/stickler/model.json"), ("constants-bomb.pt", "constants.pkl")):
        with zipfile.ZipFile(f"{out_dir}/good.pt") as src, zipfile.ZipFile(f"{out_dir}/{name}", "w") as dst:
            for item in src.infolist():
                if item.filename.endswith("/" + target):
                    bomb = zipfile.ZipInfo(item.filename)
                    bomb.compress_type = zipfile.ZIP_DEFLATED
                    dst.writestr(bomb, b" " * (64 << 20))
                else:
                    dst.writestr(item, src.read(item.filename))
        add(name, "refused as a zip bomb")

    _save(model, f"{out_dir}/card-too-large.pt", _card("input_ids")[:-1] + ', "padding": "' + "x" * (2 << 20) + '"}')
    add("card-too-large.pt", "model card is 2097")

    _save(model, f"{out_dir}/card-mismatch.pt", _card("tokens"))
    add("card-mismatch.pt", "named 'tokens' but the model's argument is 'input_ids'")

    _save(model, f"{out_dir}/card-bad-json.pt", "{ not json")
    add("card-bad-json.pt", "model card is not valid JSON")

    _save(model, f"{out_dir}/no-card.pt")
    add("no-card.pt", "no model card")

    with open(f"{out_dir}/empty.pt", "wb"):
        pass
    add("empty.pt", "empty file")

    add("does-not-exist.pt", "no such file")

    # Hostile, not broken: it loads, but its example run never ends. Not in the list above,
    # whose every archive must fail at once; the execution-limit tests use it.
    torch.jit.save(torch.jit.script(_NeverEnds().eval()), f"{out_dir}/forward-never-ends.pt",
                   _extra_files={"stickler/model.json": _card("input_ids")})
    return entries
