# benchlib.sh — what every benchmark line against a peer carries (sourced
# by tests/bench_model.sh and bench_tok.sh): the CPU, its features and the
# load, and the Python peers of tests/venv.sh.
#   cpu_json          {"model","cores","flags":[avx2, avx512f, avx512_bf16, amx_bf16...]}
#   load_now          the 1-minute load average
#   PEER_PY           the venv's python, or empty (the peer's fields are then null)
#   PEER_WHY          why it is empty
#   median FILE       the median of the numbers in FILE, one a line
cpu_json() {
    m=$(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo)
    f=$(awk -F': ' '/^flags/{print $2; exit}' /proc/cpuinfo | tr ' ' '\n' |
        grep -xE 'avx|avx2|fma|f16c|avx512f|avx512bw|avx512vl|avx512_vnni|avx512_bf16|amx_bf16|amx_tile|amx_int8' | tr '\n' ' ')
    jq -nc --arg m "$m" --arg f "$f" --argjson n "$(getconf _NPROCESSORS_ONLN)" '{model:$m, cores:$n, flags:($f|split(" ")|map(select(. != "")))}'
}
load_now() { cut -d' ' -f1 /proc/loadavg; }
median() { sort -g "$1" | awk '{v[NR]=$1} END{if (NR) print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2); else print "null"}'; }
PEER_PY=$("$HAT_TOP/tests/venv.sh" 2>"${TMPDIR:-/tmp}/venv.why.$$") || PEER_PY=
PEER_WHY=$(head -n 1 "${TMPDIR:-/tmp}/venv.why.$$"); rm -f "${TMPDIR:-/tmp}/venv.why.$$"
peer() { "$PEER_PY" "$HAT_TOP/tests/cli/hf_peer.py" "$@"; }
# {"torch","transformers"} versions of the peer, or nothing.
peer_version() {
    [ -n "$PEER_PY" ] && "$PEER_PY" -c 'import json, torch, transformers
print(json.dumps({"torch": torch.__version__, "transformers": transformers.__version__}))'
}
