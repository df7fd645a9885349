/* test_tokenizer.c — the byte-level BPE tokenizer: Hugging Face
 * conformance (Qwen3's tokenizer.json, ids and decoded text from the
 * library), round trips over random UTF-8, added-token flags, invalid
 * UTF-8, refusal of unsupported features, and training then encoding. */
#include "test.h"
#include "jsonl.h"
#include "rng.h"
#include "tok_internal.h"
#include "tokenizer.h"
#include "util.h"

#include <unistd.h>
#include <utf8proc.h>

static tokenizer *qwen;

static char *shared(const char *rel)
{
    return test_conformance("tokenizer", rel);
}

static tokenizer *load_qwen(void)
{
    if (qwen) return qwen;
    char *p = shared("qwen3/tokenizer.json"), *err = NULL;
    qwen = tok_load(p, &err);
    if (!qwen) fprintf(stderr, "  cannot load %s: %s\n", p, err);
    free(p);
    free(err);
    return qwen;
}

static int ids_equal(const tok_ids *a, const json_t *want)
{
    if (a->n != json_array_size(want)) return 0;
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i] != json_integer_value(json_array_get(want, i))) return 0;
    return 1;
}

/* Every corpus line encodes to the library's ids, id for id. */
static void qwen3_encode_conformance(void)
{
    tokenizer *t = load_qwen();
    CHECK(t != NULL);
    if (!t) return;
    char *cp = shared("corpus.jsonl"), *ep = shared("expected_ids.jsonl");
    jsonl_reader *c = jsonl_open(cp, 0), *e = jsonl_open(ep, 0);
    CHECK(c && e);
    json_t *x, *y;
    int n = 0, bad = 0;
    while (c && e && jsonl_next(c, &x) == 1) {
        CHECK_EQ_INT(jsonl_next(e, &y), 1);
        const json_t *s = json_object_get(x, "text");
        tok_ids ids = { 0 };
        CHECK_EQ_INT(tok_encode(t, json_string_value(s), json_string_length(s), &ids), 0);
        if (!ids_equal(&ids, json_object_get(y, "ids"))) {
            bad++;
            fprintf(stderr, "  corpus line %d differs\n", n + 1);
        }
        n++;
        tok_ids_free(&ids);
        json_decref(x);
        json_decref(y);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(n >= 170);
    if (c) jsonl_close(c);
    if (e) jsonl_close(e);
    free(cp);
    free(ep);
}

/* Decoding: round trips, split UTF-8 (U+FFFD), special tokens, random ids. */
static void qwen3_decode_conformance(void)
{
    tokenizer *t = load_qwen();
    if (!t) { CHECK(t != NULL); return; }
    char *cp = shared("decode_cases.jsonl"), *ep = shared("expected_decode.jsonl");
    jsonl_reader *c = jsonl_open(cp, 0), *e = jsonl_open(ep, 0);
    CHECK(c && e);
    json_t *x, *y;
    int n = 0, bad = 0, replaced = 0;
    while (c && e && jsonl_next(c, &x) == 1) {
        CHECK_EQ_INT(jsonl_next(e, &y), 1);
        const json_t *a = json_object_get(x, "ids");
        size_t k = json_array_size(a), len;
        int *v = xmalloc((k + 1) * sizeof *v);
        for (size_t i = 0; i < k; i++) v[i] = (int)json_integer_value(json_array_get(a, i));
        char *d = tok_decode(t, v, k, 0, &len);
        const json_t *w = json_object_get(y, "text");
        if (!d || len != json_string_length(w) || memcmp(d, json_string_value(w), len)) {
            bad++;
            fprintf(stderr, "  decode case %d differs\n", n + 1);
        }
        if (d && strstr(d, "\xEF\xBF\xBD")) replaced++;
        n++;
        free(d);
        free(v);
        json_decref(x);
        json_decref(y);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(n >= 200);
    CHECK(replaced > 0);      /* the split-UTF-8 cases were exercised */
    if (c) jsonl_close(c);
    if (e) jsonl_close(e);
    free(cp);
    free(ep);
}

static char *decode_all(const tokenizer *t, const tok_ids *ids, size_t *len)
{
    return tok_decode(t, ids->v, ids->n, 0, len);
}

/* Pieces of random text: ASCII, Latin, CJK, emoji (with ZWJ and variation
 * selectors), Unicode spaces, whitespace runs, digits of other scripts,
 * added tokens and near misses. */
static const char *pieces[] = {
    "a", "Z", "the", " ", "  ", "\t", "\n", "\r\n", "\n\n\n", "'s", "'LL", "0", "42", "!", "?!",
    "é", "ß", "Ω", "ж", "中", "直播间", "优惠券", "¥", "😍", "👍🏽", "👨‍👩‍👧", "❤️", "🇨🇳",
    "\xC2\xA0", "\xE3\x80\x80", "\xE2\x80\x83", "\xC2\x85", "٣", "१२", "ا", "ש", "ก", "\xE2\x80\x8B",
    "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "<|im_", "<", "|>", "{\"a\": 1}",
    "\x01", "\x7F", "e\xCC\x81", "\xEF\xBF\xBD", "𝕏", "\xF4\x8F\xBF\xBF",
};

static void random_text(rng_t *r, sbuf *b, int npieces)
{
    sbuf_reset(b);
    for (int i = 0; i < npieces; i++) {
        const char *p = pieces[rng_below(r, sizeof pieces / sizeof *pieces)];
        int rep = rng_chance(r, 0.1) ? 1 + (int)rng_below(r, 20) : 1;
        while (rep--) sbuf_puts(b, p);
    }
    if (!b->s) sbuf_add(b, "", 0);
}

/* decode(encode(x)) == NFC(x) for any valid UTF-8 x (== x for NFC text):
 * the normalizer is part of the tokenizer, as in Hugging Face. */
static void round_trip_random_utf8(void)
{
    tokenizer *t = load_qwen();
    if (!t) { CHECK(t != NULL); return; }
    rng_t r;
    rng_seed(&r, 7);
    sbuf b;
    sbuf_init(&b);
    int bad = 0;
    for (int iter = 0; iter < 3000; iter++) {
        random_text(&r, &b, (int)rng_below(&r, 30));
        tok_ids ids = { 0 };
        CHECK_EQ_INT(tok_encode(t, b.s, b.len, &ids), 0);
        size_t len;
        char *d = decode_all(t, &ids, &len);
        utf8proc_uint8_t *nfc = NULL;
        utf8proc_ssize_t k = utf8proc_map((const utf8proc_uint8_t *)b.s, (utf8proc_ssize_t)b.len, &nfc,
                                          UTF8PROC_STABLE | UTF8PROC_COMPOSE);
        if (k < 0 || len != (size_t)k || memcmp(d, nfc, len)) {
            if (!bad++) fprintf(stderr, "  round trip fails on \"%s\"\n", b.s);
        }
        /* Without the combining sequence the text is NFC: exact identity. */
        if (!strstr(b.s, "e\xCC\x81") && (len != b.len || memcmp(d, b.s, len))) bad++;
        free(nfc);
        free(d);
        tok_ids_free(&ids);
    }
    CHECK_EQ_INT(bad, 0);
    sbuf_free(&b);
}

/* Random raw bytes are valid only by luck; those that are must round trip,
 * the others are refused without output. */
static void invalid_utf8_is_refused(void)
{
    tokenizer *t = load_qwen();
    if (!t) { CHECK(t != NULL); return; }
    struct { const char *s; long at; } cases[] = {
        { "ab\xFF", 2 }, { "\xC0\xAF", 0 }, { "x\xED\xA0\x80", 1 },  /* overlong, surrogate */
        { "\xF4\x90\x80\x80", 0 }, { "ok\xE4\xB8", 2 }, { "\x80", 0 }, { "fine 中", -1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t n = strlen(cases[i].s);
        CHECK_EQ_INT(tok_utf8_check(cases[i].s, n), cases[i].at);
        tok_ids ids = { 0 };
        tok_ids_push(&ids, 5);
        CHECK_EQ_INT(tok_encode(t, cases[i].s, n, &ids), cases[i].at < 0 ? 0 : -1);
        if (cases[i].at >= 0) CHECK_EQ_INT(ids.n, 1);      /* nothing appended */
        tok_ids_free(&ids);
    }
}

/* Bytes that are not UTF-8 decode to U+FFFD, one per maximal invalid
 * subsequence: "\xE4\xB8" (a truncated 中) is one, "\xF0\x80" is two. */
static void decode_replaces_invalid_bytes(void)
{
    tokenizer *t = load_qwen();
    if (!t) { CHECK(t != NULL); return; }
    sbuf b;
    sbuf_init(&b);
    const char *bytes[] = { "\xE4", "\xB8", "\xF0", "\x80", "A" };
    int ids[5];
    for (int i = 0; i < 5; i++) {
        sbuf_reset(&b);
        /* the byte-level token of a single byte */
        utf8proc_uint8_t e[4];
        tok_bytelevel_init();
        utf8proc_ssize_t k = utf8proc_encode_char(tok_byte_cp[(unsigned char)bytes[i][0]], e);
        sbuf_add(&b, (const char *)e, (size_t)k);
        ids[i] = tok_token_id(t, b.s);
        CHECK(ids[i] >= 0);
    }
    size_t len;
    char *d = tok_decode(t, ids, 5, 0, &len);
    CHECK_STR(d, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "A");
    free(d);
    d = tok_decode(t, ids, 2, 0, &len);
    CHECK_STR(d, "\xEF\xBF\xBD");
    free(d);
    int out_of_range[] = { 9707, 151669 };
    CHECK(tok_decode(t, out_of_range, 2, 0, &len) == NULL);
    /* what a model generated: an id past the tokenizer (Qwen3's model has
     * 151,936 rows for 151,669 ids) is U+FFFD, the rest decodes */
    int generated[] = { 9707, 151700, 9707 };
    char *w = tok_decode(t, generated, 1, 0, &len);
    char *want = xasprintf("%s\xEF\xBF\xBD%s", w, w);
    d = tok_decode_model(t, generated, 3, 0, &len);
    CHECK_STR(d, want);
    CHECK_EQ_INT((long long)len, (long long)strlen(want));
    free(d);
    free(w);
    free(want);
    sbuf_free(&b);
}

static void special_tokens_and_lookup(void)
{
    tokenizer *t = load_qwen();
    if (!t) { CHECK(t != NULL); return; }
    CHECK_EQ_INT(tok_vocab_size(t), 151669);
    CHECK_EQ_INT(tok_token_id(t, "<|im_end|>"), 151645);
    CHECK_EQ_INT(tok_token_id(t, "<think>"), 151667);
    CHECK_EQ_INT(tok_token_id(t, "Hello"), 9707);
    CHECK_EQ_INT(tok_token_id(t, "no such token"), -1);
    CHECK_STR(tok_token_str(t, 151644), "<|im_start|>");
    CHECK(tok_is_special(t, 151645));
    CHECK(!tok_is_special(t, 151667));       /* <think> is added but not special */
    const char *s = "a<|im_end|>b<think>c";
    tok_ids ids = { 0 };
    tok_encode(t, s, strlen(s), &ids);
    size_t len;
    char *d = tok_decode(t, ids.v, ids.n, TOK_SKIP_SPECIAL, &len);
    CHECK_STR(d, "ab<think>c");
    free(d);
    tok_ids_free(&ids);
}

static void empty_and_long_inputs(void)
{
    tokenizer *t = load_qwen();
    if (!t) { CHECK(t != NULL); return; }
    tok_ids ids = { 0 };
    CHECK_EQ_INT(tok_encode(t, "", 0, &ids), 0);
    CHECK_EQ_INT(ids.n, 0);
    size_t len;
    char *d = tok_decode(t, ids.v, 0, 0, &len);
    CHECK_STR(d, "");
    free(d);
    /* 200 000 spaces, a long word and long CJK: linear-ish, exact round trip. */
    sbuf b;
    sbuf_init(&b);
    for (int i = 0; i < 200000; i++) sbuf_putc(&b, ' ');
    for (int i = 0; i < 50000; i++) sbuf_puts(&b, i % 7 ? "ab" : "c");
    for (int i = 0; i < 20000; i++) sbuf_puts(&b, "直播");
    sbuf_puts(&b, "<|im_end|>");
    CHECK_EQ_INT(tok_encode(t, b.s, b.len, &ids), 0);
    CHECK(ids.n > 100 && ids.n < b.len / 2);
    CHECK_EQ_INT(ids.v[ids.n - 1], 151645);
    d = tok_decode(t, ids.v, ids.n, 0, &len);
    CHECK(len == b.len && !memcmp(d, b.s, len));
    free(d);
    tok_ids_free(&ids);
    sbuf_free(&b);
}

/* Segments: ids equal the whole text's when boundaries touch added tokens,
 * and the mask marks exactly the assistant's tokens. */
static void segments_give_ids_and_mask(void)
{
    tokenizer *t = load_qwen();
    if (!t) { CHECK(t != NULL); return; }
    const char *a = "<|im_start|>user\n你好，这件多少钱？<|im_end|>\n<|im_start|>assistant\n";
    const char *b = "<think>\n查价格\n</think>\n\n¥129 亲！<|im_end|>";
    const char *c = "\n";
    tok_segment seg[] = { { a, strlen(a), 0, NULL, 0 }, { b, strlen(b), 1, NULL, 0 }, { c, 1, 0, NULL, 0 } };
    tok_ids ids = { 0 }, mask = { 0 }, whole = { 0 };
    CHECK_EQ_INT(tok_encode_segments(t, seg, 3, &ids, &mask), 0);
    char *all = xasprintf("%s%s%s", a, b, c);
    tok_encode(t, all, strlen(all), &whole);
    CHECK_EQ_INT(ids.n, whole.n);
    CHECK(ids.n == whole.n && !memcmp(ids.v, whole.v, ids.n * sizeof(int)));
    CHECK_EQ_INT(mask.n, ids.n);
    tok_ids part = { 0 };
    tok_encode(t, a, strlen(a), &part);
    int ok = 1;
    for (size_t i = 0; i < mask.n; i++) ok &= mask.v[i] == (i >= part.n && i + 1 < mask.n);
    CHECK(ok);
    CHECK_EQ_INT(ids.v[ids.n - 2], 151645);    /* <|im_end|> is the assistant's */
    CHECK_EQ_INT(mask.v[ids.n - 2], 1);
    free(all);
    tok_ids_free(&ids);
    tok_ids_free(&mask);
    tok_ids_free(&whole);
    tok_ids_free(&part);
}

/* --- small hand-made tokenizers ------------------------------------------ */

/* The 256 byte tokens (ids in codepoint order) plus given merges. */
static json_t *tiny(const char *merges_json, const char *added_json)
{
    tok_bytelevel_init();
    json_error_t e;
    json_t *root = json_loads(
        "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":[],"
        "\"normalizer\":{\"type\":\"NFC\"},"
        "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":["
        "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\s+|\\\\S+\"},\"behavior\":\"Isolated\",\"invert\":false},"
        "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":false,\"use_regex\":false}]},"
        "\"post_processor\":null,\"decoder\":{\"type\":\"ByteLevel\"},"
        "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"vocab\":{},\"merges\":[]}}",
        0, &e);
    json_t *vocab = json_object_get(json_object_get(root, "model"), "vocab");
    int id = 0;
    for (int cp = 0; cp < 400; cp++)
        for (int b = 0; b < 256; b++)
            if (tok_byte_cp[b] == cp) {
                utf8proc_uint8_t s[5] = { 0 };
                utf8proc_encode_char(cp, s);
                json_object_set_new(vocab, (char *)s, json_integer(id++));
            }
    json_t *merges = json_loads(merges_json, 0, &e);
    for (size_t i = 0; i < json_array_size(merges); i++) {
        json_t *m = json_array_get(merges, i);
        const char *a = json_string_value(json_array_get(m, 0)), *b = json_string_value(json_array_get(m, 1));
        char *s = json_is_string(m) ? NULL : xasprintf("%s%s", a, b);
        if (json_is_string(m)) {
            s = xstrdup(json_string_value(m));
            char *sp = strchr(s, ' ');
            memmove(sp, sp + 1, strlen(sp));
        }
        if (!json_object_get(vocab, s)) json_object_set_new(vocab, s, json_integer(id++));
        free(s);
    }
    json_object_set_new(json_object_get(root, "model"), "merges", merges);
    if (added_json) json_object_set_new(root, "added_tokens", json_loads(added_json, 0, &e));
    return root;
}

static void encode_str(const tokenizer *t, const char *s, sbuf *out)
{
    tok_ids ids = { 0 };
    tok_encode(t, s, strlen(s), &ids);
    sbuf_reset(out);
    for (size_t i = 0; i < ids.n; i++) sbuf_printf(out, "%s%s", i ? "|" : "", tok_token_str(t, (int)ids.v[i]));
    if (!out->s) sbuf_add(out, "", 0);
    tok_ids_free(&ids);
}

/* Merges as "a b" strings and as pairs mean the same; rank order decides
 * (lower first, leftmost on ties), not the order pairs appear. */
static void merges_both_forms_and_rank_order(void)
{
    const char *forms[] = { "[\"b c\", \"a b\", \"ab c\", \"a bc\"]",
                            "[[\"b\",\"c\"], [\"a\",\"b\"], [\"ab\",\"c\"], [\"a\",\"bc\"]]" };
    for (int f = 0; f < 2; f++) {
        json_t *j = tiny(forms[f], NULL);
        char *err = NULL;
        tokenizer *t = tok_from_json(j, &err);
        CHECK(t != NULL);
        if (!t) { fprintf(stderr, "  %s\n", err); free(err); json_decref(j); continue; }
        sbuf o;
        sbuf_init(&o);
        encode_str(t, "abc", &o);        /* "b c" has rank 0: a|bc, then "a bc" -> abc */
        CHECK_STR(o.s, "abc");
        encode_str(t, "ab abab", &o);
        CHECK_STR(o.s, "ab|Ġ|ab|ab");
        encode_str(t, "cab bcab", &o);
        CHECK_STR(o.s, "c|ab|Ġ|bc|ab");
        sbuf_free(&o);
        tok_free(t);
        json_decref(j);
    }
}

static void added_token_flags(void)
{
    json_t *j = tiny("[]",
        "[{\"id\":300,\"content\":\"<x>\",\"special\":true,\"normalized\":false},"
        " {\"id\":301,\"content\":\"[L]\",\"lstrip\":true,\"normalized\":false},"
        " {\"id\":302,\"content\":\"[R]\",\"rstrip\":true,\"normalized\":false},"
        " {\"id\":303,\"content\":\"cat\",\"single_word\":true,\"normalized\":false},"
        " {\"id\":304,\"content\":\"<x>y\",\"normalized\":false},"
        " {\"id\":305,\"content\":\"\xC3\xA9\",\"normalized\":true}]");
    char *err = NULL;
    tokenizer *t = tok_from_json(j, &err);
    CHECK(t != NULL);
    if (!t) { fprintf(stderr, "  %s\n", err); free(err); json_decref(j); return; }
    sbuf o;
    sbuf_init(&o);
    encode_str(t, "a <x>y<x>b", &o);            /* longest match wins */
    CHECK_STR(o.s, "a|Ġ|<x>y|<x>|b");
    encode_str(t, "a  [L]  b", &o);              /* lstrip eats the spaces before */
    CHECK_STR(o.s, "a|[L]|Ġ|Ġ|b");
    encode_str(t, "a  [R]  b", &o);              /* rstrip eats the spaces after */
    CHECK_STR(o.s, "a|Ġ|Ġ|[R]|b");
    encode_str(t, "cat concat cats cat", &o);    /* single_word: only whole words */
    CHECK_STR(o.s, "cat|Ġ|c|o|n|c|a|t|Ġ|c|a|t|s|Ġ|cat");
    encode_str(t, "e\xCC\x81!", &o);             /* normalized: matched after NFC */
    CHECK_STR(o.s, "\xC3\xA9|!");
    sbuf_free(&o);
    tok_free(t);
    json_decref(j);
}

/* Each unsupported feature is refused with a message that names it. */
static void unsupported_features_are_refused(void)
{
    struct { const char *path, *value, *want; } cases[] = {
        { "model.type", "\"Unigram\"", "model type \"Unigram\" is not supported" },
        { "model.dropout", "0.1", "dropout" },
        { "model.continuing_subword_prefix", "\"##\"", "continuing_subword_prefix" },
        { "model.byte_fallback", "true", "byte_fallback" },
        { "normalizer", "{\"type\":\"Lowercase\"}", "normalizer \"Lowercase\" is not supported" },
        { "pre_tokenizer", "{\"type\":\"Metaspace\"}", "pre_tokenizer \"Metaspace\" is not supported" },
        { "pre_tokenizer", "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Removed\"}",
          "Split behavior \"Removed\"" },
        { "pre_tokenizer", "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Isolated\"}",
          "no ByteLevel" },
        { "pre_tokenizer", "{\"type\":\"ByteLevel\",\"add_prefix_space\":true}", "add_prefix_space" },
        { "pre_tokenizer", "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(\"},\"behavior\":\"Isolated\"}",
          "does not compile" },
        { "post_processor", "{\"type\":\"TemplateProcessing\"}", "post_processor \"TemplateProcessing\"" },
        { "decoder", "{\"type\":\"WordPiece\"}", "decoder \"WordPiece\" is not supported" },
        { "decoder", "null", "decoder is missing" },
        { "truncation", "{\"max_length\":5}", "truncation" },
        { "model.merges", "[\"a zz\"]", "merges[0]: \"zz\" is not in the vocab" },
        { "model.merges", "[\"abc\"]", "merges[0]: not a pair" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *j = tiny("[]", NULL), *obj = j;
        const char *key = cases[i].path, *dot = strchr(key, '.');
        char *k = xstrdup(key);
        if (dot) { k[dot - key] = 0; obj = json_object_get(j, k); key = dot + 1; }
        json_error_t e;
        json_object_set_new(obj, key, json_loads(cases[i].value, JSON_DECODE_ANY, &e));
        char *err = NULL;
        tokenizer *t = tok_from_json(j, &err);
        CHECK(t == NULL);
        if (!err || !strstr(err, cases[i].want)) {
            t_failed_here = 1;
            fprintf(stderr, "  case %zu: error \"%s\", wanted \"%s\"\n", i, err ? err : "(none)", cases[i].want);
        }
        tok_free(t);
        free(err);
        free(k);
        json_decref(j);
    }
    /* a vocabulary without all 256 byte tokens */
    json_t *j = tiny("[]", NULL);
    json_object_del(json_object_get(json_object_get(j, "model"), "vocab"), "Ġ");
    char *err = NULL;
    CHECK(tok_from_json(j, &err) == NULL);
    CHECK(err && strstr(err, "lacks the byte-level token \"Ġ\" for byte 0x20"));
    free(err);
    json_decref(j);
}

/* tok_load's fast path (vocab and merges collected by yajl, the rest of
 * the document spliced) builds what tok_from_json builds from the tree,
 * or fails with its message: every merge form, merges before the vocab,
 * the refusals, a duplicate model key, and Qwen3's own file. */
static void same_tokenizer(const json_t *j, const char *what)
{
    char *path = xasprintf("%s/fast.json", test_tmpdir()), *e1 = NULL, *e2 = NULL;
    json_dump_file(j, path, JSON_PRESERVE_ORDER);
    tokenizer *fast = tok_load(path, &e1), *tree = tok_from_json(j, &e2);
    int ok = (fast != NULL) == (tree != NULL) && (!e1 == !e2) && (!e1 || !strcmp(e1, e2));
    if (ok && fast) {
        ok = tok_vocab_size(fast) == tok_vocab_size(tree);
        for (int id = 0; ok && id < tok_vocab_size(fast); id++) {
            const char *a = tok_token_str(fast, id), *b = tok_token_str(tree, id);
            ok = (!a && !b) || (a && b && !strcmp(a, b));
        }
        sbuf x, y;
        sbuf_init(&x);
        sbuf_init(&y);
        encode_str(fast, "ab abab cab bcab \xC3\xA9 <x>y", &x);
        encode_str(tree, "ab abab cab bcab \xC3\xA9 <x>y", &y);
        ok = ok && !strcmp(x.s, y.s);
        sbuf_free(&x);
        sbuf_free(&y);
    }
    if (!ok) {
        t_failed_here = 1;
        fprintf(stderr, "  %s: fast %s (%s), tree %s (%s)\n", what, fast ? "ok" : "failed", e1 ? e1 : "",
                tree ? "ok" : "failed", e2 ? e2 : "");
    }
    tok_free(fast);
    tok_free(tree);
    free(e1);
    free(e2);
    unlink(path);
    free(path);
}

static void fast_load_matches_tree(void)
{
    const char *forms[] = { "[\"b c\", \"a b\", \"ab c\", \"a bc\"]",
                            "[[\"b\",\"c\"], [\"a\",\"b\"], [\"ab\",\"c\"], [\"a\",\"bc\"]]",
                            "[\"a zz\"]", "[\"abc\"]", "[[\"a\"]]", "[]" };
    for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
        json_t *j = tiny(f < 2 ? forms[f] : "[]", "[{\"id\":300,\"content\":\"<x>\",\"special\":true}]");
        if (f >= 2) json_object_set_new(json_object_get(j, "model"), "merges", json_loads(forms[f], 0, NULL));
        same_tokenizer(j, forms[f]);
        /* merges first, then the vocab */
        json_t *m = json_object_get(j, "model"), *m2 = json_object();
        json_object_set(m2, "merges", json_object_get(m, "merges"));
        const char *k;
        json_t *v;
        json_object_foreach(m, k, v) if (strcmp(k, "merges")) json_object_set(m2, k, v);
        json_object_set_new(j, "model", m2);
        same_tokenizer(j, "merges before vocab");
        json_decref(j);
    }
    json_t *j = tiny("[]", NULL);
    json_object_set_new(json_object_get(j, "model"), "type", json_string("Unigram"));
    same_tokenizer(j, "Unigram");
    json_object_set_new(json_object_get(j, "model"), "type", json_string("BPE"));
    json_object_set_new(json_object_get(json_object_get(j, "model"), "vocab"), "zz", json_string("7"));
    same_tokenizer(j, "a vocab id that is a string");
    json_decref(j);
    /* Qwen3: the fast path against the tree, id for id */
    char *p = shared("qwen3/tokenizer.json");
    json_t *q = json_load_file(p, 0, NULL);
    free(p);
    CHECK(q != NULL);
    if (q) same_tokenizer(q, "qwen3");
    json_decref(q);
}

/* ignore_merges (Llama 3): a word that is in the vocab is one token even
 * when the merges would not build it. */
static void ignore_merges_takes_whole_words(void)
{
    for (int ignore = 0; ignore < 2; ignore++) {
        json_t *j = tiny("[\"a b\"]", NULL);
        json_t *m = json_object_get(j, "model");
        json_object_set_new(json_object_get(m, "vocab"), "abc", json_integer(400));
        json_object_set_new(m, "ignore_merges", json_boolean(ignore));
        char *err = NULL;
        tokenizer *t = tok_from_json(j, &err);
        CHECK(t != NULL);
        if (t) {
            sbuf o;
            sbuf_init(&o);
            encode_str(t, "abc abcd", &o);
            CHECK_STR(o.s, ignore ? "abc|Ġ|ab|c|d" : "ab|c|Ġ|ab|c|d");
            sbuf_free(&o);
        }
        free(err);
        tok_free(t);
        json_decref(j);
    }
}

/* One tokenizer shared by threads (the word cache is the only shared
 * state) gives the same ids as a single thread. */
static void threads_share_a_tokenizer(void)
{
    tokenizer *t = load_qwen();
    if (!t) { CHECK(t != NULL); return; }
    enum { N = 400 };
    static char *texts[N];
    static size_t lens[N];
    static tok_ids one[N], many[N];
    rng_t r;
    rng_seed(&r, 5);
    sbuf b;
    sbuf_init(&b);
    for (int i = 0; i < N; i++) {
        random_text(&r, &b, 60);
        texts[i] = xstrndup(b.s, b.len);
        lens[i] = b.len;
        tok_encode(t, texts[i], lens[i], &one[i]);
    }
    sbuf_free(&b);
    #pragma omp parallel for num_threads(4) schedule(dynamic, 1)
    for (int i = 0; i < N; i++) tok_encode(t, texts[i], lens[i], &many[i]);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        if (one[i].n != many[i].n || memcmp(one[i].v, many[i].v, one[i].n * sizeof(int))) bad++;
        tok_ids_free(&one[i]);
        tok_ids_free(&many[i]);
        free(texts[i]);
    }
    CHECK_EQ_INT(bad, 0);
}

/* --- training ------------------------------------------------------------ */

static json_t *template_json(void)
{
    char *p = hat_data_path("tokenizer/template.json");
    CHECK(p != NULL);
    json_t *j = p ? json_load_path(p) : NULL;
    free(p);
    return j;
}

/* On a tiny corpus the merges are known: counts decide, ties go to the
 * smallest ids (byte tokens in codepoint order). */
static void train_known_merges(void)
{
    json_t *tmpl = template_json();
    if (!tmpl) return;
    char *err = NULL;
    tok_trainer *tr = tok_trainer_new(tmpl, &err);
    CHECK(tr != NULL);
    /* words: "aaab" x3, " aab" x2, " ab" x1 */
    const char *text = "aaab aab aab<|im_end|>aaab<|im_end|>aaab ab";
    CHECK_EQ_INT(tok_trainer_add(tr, text, strlen(text)), 0);
    CHECK_EQ_INT(tok_trainer_add(tr, "\xFF", 1), -1);
    CHECK_EQ_INT(tok_trainer_words(tr), 3);
    tok_train_opts o = { .vocab_size = 256 + 3 + 9, .min_frequency = 1 };
    json_t *out = tok_trainer_finish(tr, &o, &err);
    CHECK(out != NULL);
    json_t *m = json_object_get(json_object_get(out, "model"), "merges");
    /* pairs: aa 3*2+2 = 8, ab 3+2+1 = 6, Ġa 3: "a a" first; then in
     * [aa a b] x3, [Ġ aa b] x2, [Ġ a b]: (a,b) 3+1 = 4 beats (aa,a) 3;
     * then [aa ab] x3: (aa,ab) 3 beats (Ġ,aa) 2 and (aa,b) 2. */
    CHECK_EQ_INT(json_array_size(m), 3);
    const char *want[3][2] = { { "a", "a" }, { "a", "b" }, { "aa", "ab" } };
    for (int i = 0; i < 3 && i < (int)json_array_size(m); i++) {
        CHECK_STR(json_string_value(json_array_get(json_array_get(m, i), 0)), want[i][0]);
        CHECK_STR(json_string_value(json_array_get(json_array_get(m, i), 1)), want[i][1]);
    }
    /* The result loads back, encodes with its merges and round trips. */
    tokenizer *t = tok_from_json(out, &err);
    CHECK(t != NULL);
    if (t) {
        CHECK_EQ_INT(tok_vocab_size(t), 268);
        CHECK_EQ_INT(tok_token_id(t, "<|endoftext|>"), 259);
        CHECK_EQ_INT(tok_token_id(t, "</think>"), 267);
        sbuf s;
        sbuf_init(&s);
        encode_str(t, "aaab<think>aab", &s);
        CHECK_STR(s.s, "aaab|<think>|aa|b");
        sbuf_free(&s);
        tok_free(t);
    }
    json_decref(out);
    tok_trainer_free(tr);
    json_decref(tmpl);
}

/* A tokenizer trained on random text round-trips random text, and the
 * same input gives the same file. */
static void trained_tokenizer_round_trips(void)
{
    json_t *tmpl = template_json();
    if (!tmpl) return;
    char *dump[2] = { 0 };
    tokenizer *t = NULL;
    for (int run = 0; run < 2; run++) {
        char *err = NULL;
        tok_trainer *tr = tok_trainer_new(tmpl, &err);
        rng_t r;
        rng_seed(&r, 11);
        sbuf b;
        sbuf_init(&b);
        for (int i = 0; i < 400; i++) {
            random_text(&r, &b, 40);
            tok_trainer_add(tr, b.s, b.len);
        }
        tok_train_opts o = { .vocab_size = 600, .min_frequency = 2 };
        json_t *out = tok_trainer_finish(tr, &o, &err);
        CHECK(out != NULL);
        dump[run] = json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (run == 1) t = tok_from_json(out, &err);
        json_decref(out);
        tok_trainer_free(tr);
        sbuf_free(&b);
    }
    CHECK(dump[0] && dump[1] && !strcmp(dump[0], dump[1]));
    CHECK(t != NULL);
    if (t) {
        CHECK_EQ_INT(tok_vocab_size(t), 600);
        rng_t r;
        rng_seed(&r, 99);
        sbuf b;
        sbuf_init(&b);
        int bad = 0;
        for (int i = 0; i < 500; i++) {
            random_text(&r, &b, 30);
            if (strstr(b.s, "e\xCC\x81")) continue;
            tok_ids ids = { 0 };
            tok_encode(t, b.s, b.len, &ids);
            size_t len;
            char *d = decode_all(t, &ids, &len);
            if (len != b.len || memcmp(d, b.s, len)) bad++;
            free(d);
            tok_ids_free(&ids);
        }
        CHECK_EQ_INT(bad, 0);
        sbuf_free(&b);
        tok_free(t);
    }
    free(dump[0]);
    free(dump[1]);
    json_decref(tmpl);
}

int main(void)
{
    RUN(qwen3_encode_conformance);
    RUN(qwen3_decode_conformance);
    RUN(round_trip_random_utf8);
    RUN(invalid_utf8_is_refused);
    RUN(decode_replaces_invalid_bytes);
    RUN(special_tokens_and_lookup);
    RUN(empty_and_long_inputs);
    RUN(segments_give_ids_and_mask);
    RUN(merges_both_forms_and_rank_order);
    RUN(added_token_flags);
    RUN(unsupported_features_are_refused);
    RUN(fast_load_matches_tree);
    RUN(ignore_merges_takes_whole_words);
    RUN(threads_share_a_tokenizer);
    RUN(train_known_merges);
    RUN(trained_tokenizer_round_trips);
    tok_free(qwen);
    TEST_MAIN_END();
}
