# tok.sh — tok-encode, tok-decode and tok-train from the command line:
# Hugging Face conformance through the programs, round trips, training a
# tokenizer and using it, and the error paths.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
C="$HAT_CONFORMANCE/tokenizer"
Q="$C/qwen3/tokenizer.json"
need "$Q" "$C/corpus.jsonl" "$C/expected_ids.jsonl" "$C/decode_cases.jsonl" "$C/expected_decode.jsonl"

# --- conformance through the programs ---------------------------------------
ok "encode corpus" tok-encode --tokenizer "$Q" -o "$T/ids.jsonl" "$C/corpus.jsonl"
jq -c '{ids}' "$T/ids.jsonl" >"$T/ids-only.jsonl"
jq -c . "$C/expected_ids.jsonl" >"$T/want-ids.jsonl"
same "encoded ids equal the Hugging Face library's" "$T/ids-only.jsonl" "$T/want-ids.jsonl"
has "other fields are kept" "$T/ids.jsonl" '^\{"ids":\[9707,1879\],"cat":"english"\}$'

ok "decode cases" tok-decode -t "$Q" -o "$T/dec.jsonl" "$C/decode_cases.jsonl"
jq -c '{text}' "$T/dec.jsonl" >"$T/dec-text.jsonl"
jq -c . "$C/expected_decode.jsonl" >"$T/want-dec.jsonl"
same "decoded text equals the Hugging Face library's" "$T/dec-text.jsonl" "$T/want-dec.jsonl"

# decode(encode(x)) == x for the corpus, except its two NFD lines, which
# come back in NFC (the normalizer is part of the tokenizer).
tok-decode -t "$Q" "$T/ids.jsonl" | jq -c '{text}' >"$T/rt.jsonl"
jq -c '{text}' "$C/corpus.jsonl" >"$T/orig.jsonl"
n=$(paste -d '\n' "$T/rt.jsonl" "$T/orig.jsonl" | awk 'NR % 2 { a = $0; next } a != $0' | wc -l)
if [ "$n" -eq 2 ] && [ -s "$T/rt.jsonl" ]; then pass "round trip of the corpus"; else flunk "round trip of the corpus" "$n lines differ"; fi

# --- fields and options ---------------------------------------------------------
printf '{"id":7,"body":"Hello world","ids":"old"}\n' >"$T/f.jsonl"
tok-encode -t "$Q" --field body --keep-text "$T/f.jsonl" >"$T/f.out"
has "--field and --keep-text" "$T/f.out" '^\{"id":7,"body":"Hello world","ids":\[9707,1879\]\}$'
tok-encode -t "$Q" --field body --ids-field toks "$T/f.jsonl" >"$T/f2.out"
has "--ids-field replaces the text in place" "$T/f2.out" '^\{"id":7,"toks":\[9707,1879\],"ids":"old"\}$'
tok-decode -t "$Q" --field toks --text-field body --keep-ids "$T/f2.out" >"$T/f3.out"
has "tok-decode --field --text-field --keep-ids" "$T/f3.out" '^\{"id":7,"toks":\[9707,1879\],"body":"Hello world","ids":"old"\}$'
printf '{"ids":[151644,9707,151645]}\n' | tok-decode -t "$Q" --skip-special >"$T/sp.out"
has "--skip-special drops <|im_start|> and <|im_end|>" "$T/sp.out" '^\{"text":"Hello"\}$'
printf 'Hello world\n你好<|im_end|>\n' | tok-encode -t "$Q" --lines >"$T/lines.out"
has "--lines: plain text lines" "$T/lines.out" '^\{"ids":\[108386,151645\]\}$'

# --- invalid UTF-8 is refused, with the line and byte ----------------------------
printf 'fine\nbad \377 byte\nfine too\n' >"$T/bad.txt"
fails "invalid UTF-8 exits 1" 1 tok-encode -t "$Q" --lines "$T/bad.txt"
has "invalid UTF-8 names file, line and byte" "$T/.err" "bad.txt:2: invalid UTF-8 at byte 4"
fails "--skip-bad skips invalid UTF-8" 0 tok-encode -t "$Q" --lines --skip-bad -o "$T/skip.out" "$T/bad.txt"
has "skipped count reported" "$T/.err" "skipped 1 bad record"
if [ "$(wc -l <"$T/skip.out")" -eq 2 ]; then pass "two good lines kept"; else flunk "two good lines kept"; fi

# --- bad input and usage -----------------------------------------------------------
printf '{"text":"a"}\n{"txt":"b"}\n' >"$T/nofield.jsonl"
fails "missing field exits 1" 1 tok-encode -t "$Q" "$T/nofield.jsonl"
has "missing field message" "$T/.err" 'nofield.jsonl:2: no string field "text"'
printf '{"text":"a"}\n{"text":\n' >"$T/broken.jsonl"
fails "unparseable line exits 1" 1 tok-encode -t "$Q" "$T/broken.jsonl"
has "unparseable line is located" "$T/.err" 'broken.jsonl:2:'
printf '{"ids":[9707,999999]}\n' >"$T/badid.jsonl"
fails "out-of-range id exits 1" 1 tok-decode -t "$Q" "$T/badid.jsonl"
has "out-of-range id message" "$T/.err" 'badid.jsonl:1: ids\[1\]: 999999 is not a token id \(vocabulary size 151669\)'
printf '{"ids":[9707,"x"]}\n' | tok-decode -t "$Q" >/dev/null 2>"$T/.err"
has "non-integer id message" "$T/.err" '<stdin>:1: ids\[1\]: "x" is not a token id'
fails "--tokenizer is required" 2 tok-encode "$T/f.jsonl"
has "usage names --tokenizer" "$T/.err" "--tokenizer FILE is required"
fails "unknown option" 2 tok-decode --frobnicate -t "$Q"
fails "--help exits 0" 0 tok-train --help
has "--help prints usage" "$T/.out" "^usage: tok-train"
fails "--version exits 0" 0 tok-encode --version
fails "missing tokenizer file" 1 tok-encode -t "$T/nope.json" "$T/f.jsonl"
has "missing tokenizer file named" "$T/.err" "nope.json"

# --- training --------------------------------------------------------------------
# Train on the corpus repeated (with its chat lines), then use the result.
for i in 1 2 3 4 5; do cat "$C/corpus.jsonl"; done >"$T/train.jsonl"
ok "tok-train" tok-train --vocab-size 1000 -o "$T/tok.json" "$T/train.jsonl"
ok "trained tokenizer encodes" tok-encode -t "$T/tok.json" -o "$T/tids.jsonl" "$C/corpus.jsonl"
tok-decode -t "$T/tok.json" "$T/tids.jsonl" | jq -c '{text}' >"$T/trt.jsonl"
n=$(paste -d '\n' "$T/trt.jsonl" "$T/orig.jsonl" | awk 'NR % 2 { a = $0; next } a != $0' | wc -l)
if [ "$n" -eq 2 ] && [ -s "$T/trt.jsonl" ]; then pass "trained tokenizer round trips"; else flunk "trained tokenizer round trips" "$n lines differ"; fi
jq -e '(.model.vocab | length) == 991 and (.added_tokens | length) == 9 and .added_tokens[2].content == "<|im_end|>" and .added_tokens[2].id == 993' \
    "$T/tok.json" >/dev/null && pass "vocab size and added tokens" || flunk "vocab size and added tokens"
printf '{"text":"<|im_start|>user\\n<think>"}\n' | tok-encode -t "$T/tok.json" >"$T/sp2.out"
has "chat special tokens are single ids" "$T/sp2.out" '^\{"ids":\[992,[0-9,]+,998\]\}$'
tok-train -n 1000 -o "$T/tok2.json" "$T/train.jsonl"
same "training is deterministic" "$T/tok.json" "$T/tok2.json"
tok-train -n 1000 --field text <"$T/train.jsonl" >"$T/tok3.json"
same "stdin and stdout give the same file" "$T/tok.json" "$T/tok3.json"

printf '%s\n' '{"messages":[{"role":"user","content":"hi there"},{"role":"assistant","content":"hello hello hello"}]}' \
    '{"messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"hi hi"}]}' >"$T/chat.jsonl"
ok "tok-train --chat" tok-train --chat -n 300 --min-frequency 1 -o "$T/chat.json" "$T/chat.jsonl"
jq -e '[.model.merges[] | join("")] | index("hello") != null' "$T/chat.json" >/dev/null \
    && pass "--chat learns from message contents" || flunk "--chat learns from message contents"
jq -e '[.model.merges[] | join("")] | index("im") == null' "$T/chat.json" >/dev/null \
    && pass "--chat does not learn the special tokens' text" || flunk "--chat does not learn the special tokens' text"
# A trajectory's inline harness is part of what the model reads (its
# system prompt and tools): --chat learns from it, so the same records
# encode to fewer tokens than under a tokenizer trained without it.
F="$HAT_TOP/tests/fixtures/hsa/traj.jsonl"
tok-train --chat -n 600 -o "$T/th.json" "$F"
jq -c 'del(.harness)' "$F" | tok-train --chat -n 600 -o "$T/tn.json"
nh=$(tok-encode --chat --tokenizer "$T/th.json" "$F" | jq '.ids | length' | awk '{s += $1} END {print s}')
nn=$(tok-encode --chat --tokenizer "$T/tn.json" "$F" | jq '.ids | length' | awk '{s += $1} END {print s}')
[ "$nh" -lt $((nn * 9 / 10)) ] && pass "--chat renders the inline harness ($nh < $nn tokens)" ||
    flunk "--chat renders the inline harness" "$nh vs $nn tokens"
printf '{"messages":"nope"}\n' >"$T/badchat.jsonl"
fails "--chat with bad messages exits 1" 1 tok-train --chat -n 300 "$T/badchat.jsonl"
has "--chat error is located" "$T/.err" "badchat.jsonl:1:"

fails "vocab too small" 1 tok-train -n 100 -o "$T/small.json" "$T/train.jsonl"
has "vocab too small message" "$T/.err" "vocabulary size 100 is too small"
[ ! -e "$T/small.json" ] && pass "no output on failure" || flunk "no output on failure"
fails "training needs --vocab-size" 2 tok-train "$T/train.jsonl"
fails "training: missing field" 1 tok-train -n 300 "$T/nofield.jsonl"

# A tokenizer.json with an unsupported feature is refused, naming it.
jq '.normalizer = {"type": "Lowercase"}' "$T/tok.json" >"$T/lower.json"
fails "unsupported normalizer exits 1" 1 tok-encode -t "$T/lower.json" "$T/f.jsonl"
has "unsupported normalizer named" "$T/.err" 'lower.json: normalizer "Lowercase" is not supported'
jq '.post_processor = {"type": "TemplateProcessing"}' "$T/tok.json" >"$T/tp.json"
fails "post-processor adding tokens exits 1" 1 tok-decode -t "$T/tp.json" "$T/f2.out"
has "post-processor named" "$T/.err" 'post_processor "TemplateProcessing" is not supported'

# --- chat encoding: ids + loss mask -------------------------------------------
printf '%s\n' '{"id":"c1","messages":[{"role":"user","content":"Lily: hi"},{"role":"assistant","content":"@Lily hello!"}]}' \
    '{"id":"c2","text":"plain text"}' >"$T/chat.jsonl"
ok "tok-encode --chat with a harness" tok-encode --chat -t "$Q" --harness "$HAT_TOP/examples/harness" -o "$T/chat-ids.jsonl" "$T/chat.jsonl"
jq -e -s 'all(.[]; (.ids|length) == (.mask|length))' "$T/chat-ids.jsonl" >/dev/null && pass "mask as long as ids" || flunk "mask as long as ids"
# The masked tokens of the conversation decode to the reply and its end-of-turn
# token (the template's empty think block of the last turn included, man 5 chat).
jq -c '{ids: [.ids as $i | .mask | to_entries[] | select(.value == 1) | $i[.key]]}' "$T/chat-ids.jsonl" | head -1 >"$T/masked.jsonl"
tok-decode -t "$Q" "$T/masked.jsonl" >"$T/masked-text.jsonl"
has "only the reply is masked in" "$T/masked-text.jsonl" '^\{"text":"<think>\\n\\n</think>\\n\\n@Lily hello!<\|im_end\|>"\}$'
has "text records are all targets" "$T/chat-ids.jsonl" '"id":"c2","ids":\[[0-9,]+\],"mask":\[1,1'
printf '%s\n' '{"id":"bad","messages":[{"role":"wizard","content":"x"}]}' >"$T/badchat.jsonl"
fails "unknown role exits 1" 1 tok-encode --chat -t "$Q" "$T/badchat.jsonl"
has "unknown role named with file and line" "$T/.err" 'badchat.jsonl:1: .*wizard'
fails "--lines with --chat is a usage error" 2 tok-encode --chat --lines -t "$Q"
