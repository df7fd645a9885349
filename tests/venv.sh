#!/bin/sh
# venv.sh — the Python peers hat is compared with: pip's torch,
# transformers, tokenizers and safetensors in a virtual environment of the
# build tree (ignored by git; the system python is never touched).
#   tests/venv.sh          print the venv's python when it has all four,
#                          else say what is missing on stderr and exit 1
#   tests/venv.sh --make   create or complete it with pip, then as above
#   HAT_VENV               its directory (default build/venv)
# pip reads its index from its own settings: PIP_INDEX_URL (or
# PIP_EXTRA_INDEX_URL) pointed at PyTorch's CPU wheel index gives a torch
# without the CUDA libraries; the default index works too, larger.
# Used by make bench (tests/bench_model.sh, bench_tok.sh) and by
# tests/cli/interop.sh, which skips its checks when the venv is absent.
top=$(cd "$(dirname "$0")/.." && pwd)
venv=${HAT_VENV:-$top/build/venv}
py=$venv/bin/python
mods="torch transformers tokenizers safetensors"
have() { [ -x "$py" ] && "$py" -c "import $(echo $mods | tr ' ' ',')" 2>/dev/null; }
if [ "${1:-}" = --make ] && ! have; then
    echo "venv: installing $mods into $venv (pip; a few minutes the first time)" >&2
    { [ -x "$py" ] || python3 -m venv "$venv"; } &&
        "$py" -m pip install --quiet --disable-pip-version-check $mods >&2 ||
        { echo "venv: pip failed; the peers are skipped" >&2; exit 1; }
fi
if have; then echo "$py"; exit 0; fi
echo "venv: $venv lacks one of: $mods (tests/venv.sh --make installs them)" >&2
exit 1
