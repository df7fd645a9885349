# limits.sh — crafted inputs against the readers (issue 16): checkpoint
# bombs (a sparse tar member, a gzip bomb, oversized and non-regular files
# in a Hugging Face directory, a config whose context no machine holds)
# and harness bombs (a directory over the 64 MiB total, a FIFO, a link to
# /dev/zero, duplicate and traversal members in a tar).  Each must end
# with exit 1 and a one-line error naming the limit, within 100 MB of peak
# RSS (/usr/bin/time; not under ASan, whose shadow memory alone is more).
# The bombs are built here, sparse on disk, so they cost no space.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
EX="$HAT_TOP/examples/harness"
TOK="$HAT_TOP/tests/fuzz/tokenizer.json"
export OMP_NUM_THREADS=1

# bomb NAME PATTERN CMD...: exit 1, one line on stderr matching PATTERN,
# peak RSS under 100 MB.
bomb() {
    n=$1; pat=$2; shift 2
    if [ -x /usr/bin/time ]; then /usr/bin/time -f %M -o "$T/.rss" "$@" >"$T/.out" 2>"$T/.err"; rc=$?
    else "$@" >"$T/.out" 2>"$T/.err"; rc=$?; echo 0 >"$T/.rss"; fi
    lines=$(wc -l <"$T/.err")
    rss=$(tail -n 1 "$T/.rss")
    if [ "$rc" != 1 ]; then flunk "$n" "exit $rc, wanted 1: $(head -c 400 "$T/.err")"
    elif [ "$lines" != 1 ]; then flunk "$n" "$lines lines on stderr: $(head -c 600 "$T/.err")"
    elif ! grep -Eq -- "$pat" "$T/.err"; then flunk "$n" "no /$pat/ in: $(cat "$T/.err")"
    elif [ "${HAT_SAN:-0}" != 1 ] && [ "$rss" -ge 102400 ]; then flunk "$n" "peak RSS $rss kB"
    else pass "$n (peak RSS ${rss} kB)"; fi
}

cat >"$T/cfg.json" <<'J'
{"vocab_size":400,"hidden_size":16,"intermediate_size":32,"num_hidden_layers":1,
 "num_attention_heads":2,"num_key_value_heads":1,"head_dim":8,"max_position_embeddings":64}
J
model-init --config "$T/cfg.json" --tokenizer "$TOK" -o "$T/m.ckpt"
mkdir "$T/m"
tar -xf "$T/m.ckpt" -C "$T/m"
ok "the checkpoint itself loads" ckpt info "$T/m.ckpt"

# --- checkpoints ---------------------------------------------------------------------
mkdir "$T/sp"
cp "$T/m/config.json" "$T/m/model.safetensors" "$T/sp/"
truncate -s 4G "$T/sp/tokenizer.json"
tar --sparse -cf "$T/sparse.ckpt" -C "$T/sp" config.json model.safetensors tokenizer.json
[ "$(wc -c <"$T/sparse.ckpt")" -lt 1000000 ] && pass "sparse tar is small on disk" || flunk "sparse tar size"
bomb "sparse tar member" 'tokenizer.json: a sparse member' ckpt info "$T/sparse.ckpt"

mkdir "$T/gz"
cp "$T/m/config.json" "$T/m/model.safetensors" "$T/gz/"
truncate -s 256M "$T/gz/trainer_state.json"
tar -cf - -C "$T/gz" config.json model.safetensors trainer_state.json | gzip -1 >"$T/bomb.ckpt"
[ "$(wc -c <"$T/bomb.ckpt")" -lt 2000000 ] && pass "gzip bomb is small" || flunk "gzip bomb size"
bomb "gzip bomb: trainer_state.json over its cap" 'trainer_state.json: 268435456 bytes or more; the limit is 67108864 bytes \(64 MiB' ckpt info "$T/bomb.ckpt"

mkdir "$T/cfgbomb"
cp "$T/m/model.safetensors" "$T/cfgbomb/"
truncate -s 2G "$T/cfgbomb/config.json"
tar -cf "$T/cfgbomb.ckpt" -C "$T/cfgbomb" config.json model.safetensors
bomb "config.json over its cap (claimed by the tar header)" 'config.json: 2147483648 bytes or more; the limit is 1048576 bytes' ckpt info "$T/cfgbomb.ckpt"

cp -R "$T/m" "$T/hf"
rm "$T/hf/tokenizer.json"
truncate -s 1G "$T/hf/tokenizer.json"
bomb "HF directory: tokenizer.json over its cap" 'tokenizer.json: 1073741824 bytes or more; the limit is 67108864' ckpt info "$T/hf"
rm "$T/hf/tokenizer.json"
mkfifo "$T/hf/tokenizer.json"
bomb "HF directory: a FIFO is refused, not read" 'tokenizer.json: not a regular file' ckpt info "$T/hf"
rm "$T/hf/tokenizer.json"
ln -s /dev/zero "$T/hf/tokenizer.json"
bomb "HF directory: a link to /dev/zero is refused" 'tokenizer.json: not a regular file' ckpt info "$T/hf"

# A context no machine holds: serve names the option to set, before allocating.
jq '.max_position_embeddings = 1073741824' "$T/cfg.json" >"$T/cfg_huge.json"
model-init --config "$T/cfg_huge.json" --tokenizer "$TOK" -o "$T/huge.ckpt"
world-gen --seed 2 --products 10 -o "$T/w.json"
bomb "max_position_embeddings 2^30: serve says --max-context" 'KV cache would take .*set --max-context' \
    serve --ckpt "$T/huge.ckpt" --world "$T/w.json" --harness "$EX" --stdio </dev/null
echo '{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}' >"$T/one.jsonl"
ok "with --max-context it serves" serve --ckpt "$T/huge.ckpt" --world "$T/w.json" --harness "$EX" --stdio --max-context 128 --slots 1 <"$T/one.jsonl"

# --- harnesses -------------------------------------------------------------------------
cp -R "$EX" "$T/big"
for i in 1 2 3 4 5; do truncate -s 15M "$T/big/prompt/9$i-pad.md"; done
bomb "a directory over 64 MiB in all" 'over 67108864 bytes in all \(a harness.s limit\)' harness-lint "$T/big"
fails "harness-pack refuses it too" 1 harness-pack -o "$T/big.json" "$T/big"
[ ! -e "$T/big.json" ] && pass "harness-pack wrote nothing" || flunk "harness-pack wrote nothing"

cp -R "$EX" "$T/fifo"
mkfifo "$T/fifo/prompt/99-fifo.md"
bomb "a FIFO in a harness directory" '99-fifo.md: not a regular file' harness-lint "$T/fifo"
cp -R "$EX" "$T/zero"
ln -s /dev/zero "$T/zero/tools/zero.json"
bomb "a link to /dev/zero in a harness directory" 'zero.json: not a regular file' harness-lint "$T/zero"
ln -s /dev/zero "$T/zero.json"
bomb "a harness path that is /dev/zero" 'not a regular file or directory' harness-lint "$T/zero.json"

(cd "$EX" && tar -cf "$T/dup.tar" harness.json prompt skills tools)
mkdir "$T/other" && jq '.version = "other"' "$EX/harness.json" >"$T/other/harness.json"
tar -rf "$T/dup.tar" -C "$T/other" harness.json
bomb "a tar with a member twice" 'harness.json: member appears twice' harness-lint "$T/dup.tar"
(cd "$EX" && tar -cf "$T/dup2.tar" harness.json prompt skills tools harness.json)
bomb "a tar with a member twice (as a hard link)" 'harness.json: member appears twice' harness-lint "$T/dup2.tar"
mkdir -p "$T/tv/h" && cp -R "$EX/." "$T/tv/h/" && echo x >"$T/tv/evil.md"
(cd "$T/tv/h" && tar -P -cf "$T/trav.tar" harness.json prompt skills tools ../evil.md)
bomb "a tar with a traversal member" '\.\./evil\.md: member name is absolute or climbs out' harness-lint "$T/trav.tar"

# --- leftovers after crashes ------------------------------------------------------------
# A save killed before its rename leaves PATH.tmpXXXXXX: the next save of
# the path removes ours once stale (10 minutes untouched), nothing else.
: >"$T/s.ckpt.tmpAb3dE9"; touch -d '1 hour ago' "$T/s.ckpt.tmpAb3dE9"
: >"$T/s.ckpt.tmpFresh1"
: >"$T/s.ckpt.tmpother"; touch -d '1 hour ago' "$T/s.ckpt.tmpother"
ok "a save beside stale temporary files" model-init --config "$T/cfg.json" -o "$T/s.ckpt"
[ ! -e "$T/s.ckpt.tmpAb3dE9" ] && pass "the stale temporary file is removed" || flunk "stale temporary file removed"
has "and the removal is said" "$T/.err" 's.ckpt.tmpAb3dE9: removed a stale temporary file'
[ -e "$T/s.ckpt.tmpFresh1" ] && [ -e "$T/s.ckpt.tmpother" ] && pass "a fresh one and a foreign name are kept" ||
    flunk "fresh and foreign temporary files kept"

# ckpt export --hf on a full disk (a file size limit: writes fail with
# EFBIG past 32 KiB, so config.json fits and model.safetensors does not).
full() { (trap '' XFSZ; ulimit -f 64; "$@"); }
full ckpt export --hf "$T/hfx" "$T/m.ckpt" >"$T/.out" 2>"$T/.err"; rc=$?
[ "$rc" = 1 ] && pass "export --hf on a full disk fails" || flunk "export --hf on a full disk" "exit $rc: $(cat "$T/.err")"
[ ! -e "$T/hfx" ] && pass "and leaves no partial directory" || flunk "partial directory" "$(ls "$T/hfx")"
[ -z "$(ls -d "$T"/hfx.tmp* 2>/dev/null)" ] && pass "and no temporary one" || flunk "temporary directory left"
ok "export --hf" ckpt export --hf "$T/hfx" "$T/m.ckpt"
cp -R "$T/hfx" "$T/hfx.before"
full ckpt export --hf "$T/hfx" "$T/s.ckpt" >/dev/null 2>&1 && flunk "the export of another model under the size limit should fail"
diff -r "$T/hfx" "$T/hfx.before" >/dev/null && pass "a failed export over a previous one leaves it whole" ||
    flunk "previous export changed by a failed one"

# sft-step --metrics: a run that fails leaves no empty metrics file.
printf '{"ids":[1,2,3,4,5,6,7,8]}\n{"ids":[3,4,5,6,7,8,9,10]}\n' >"$T/ids.jsonl"
fails "sft-step that cannot save" 1 sft-step --init "$T/m.ckpt" --data "$T/ids.jsonl" --steps 0 --seq 8 \
    --metrics "$T/met.jsonl" -o "$T/nodir/out.ckpt"
[ ! -e "$T/met.jsonl" ] && pass "no empty metrics file left" || flunk "empty metrics file left"

# A gzip bomb in the weights: the safetensors header (zeros here) must
# describe the member's size, checked on its first bytes.
mkdir "$T/stz"
cp "$T/m/config.json" "$T/stz/"
truncate -s 256M "$T/stz/model.safetensors"
tar -cf - -C "$T/stz" config.json model.safetensors | gzip -1 >"$T/stbomb.ckpt"
bomb "gzip bomb in model.safetensors" 'model.safetensors: the tar header says 268435456 bytes, the safetensors header inside describes another size' ckpt info "$T/stbomb.ckpt"
