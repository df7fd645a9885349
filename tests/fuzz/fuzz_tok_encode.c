/* fuzz_tok_encode.c — encoding arbitrary bytes with a real tokenizer: the
 * Qwen3 tokenizer.json from $HAT_CONFORMANCE when present, else the small one
 * committed next to this file (tests/fuzz/tokenizer.json, tok-train
 * output).  Invalid UTF-8 is refused with nothing appended; valid text
 * encodes to ids in range, and decodes back to itself when it is ASCII
 * (NFC leaves ASCII alone); segment encoding matches on ChatML boundaries. */
#include "fuzz.h"
#include "tokenizer.h"

static tokenizer *fuzz_tok;

static void load_tokenizer(void)
{
    const char *conf = getenv("HAT_CONFORMANCE");
    char *path = NULL;
    if (conf && *conf) {
        path = xasprintf("%s/tokenizer/qwen3/tokenizer.json", conf);
        if (access(path, R_OK)) { free(path); path = NULL; }
    }
    if (!path) path = fuzz_top_path("tests/fuzz/tokenizer.json");
    char *err = NULL;
    fuzz_tok = tok_load(path, &err);
    if (!fuzz_tok) { fprintf(stderr, "%s: %s\n", path, err); abort(); }
    free(path);
}

static int ascii(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == 0 || s[i] >= 0x80) return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fuzz_tok) load_tokenizer();
    const char *text = (const char *)data;
    tok_ids ids = { 0 };
    int rc = tok_encode(fuzz_tok, text, size, &ids);
    long bad = tok_utf8_check(text, size);
    FUZZ_ASSERT((rc < 0) == (bad >= 0));
    if (rc < 0) {
        FUZZ_ASSERT(ids.n == 0);
        tok_ids_free(&ids);
        return 0;
    }
    int V = tok_vocab_size(fuzz_tok);
    for (size_t k = 0; k < ids.n; k++) FUZZ_ASSERT(ids.v[k] >= 0 && ids.v[k] < V);
    size_t dn;
    char *back = tok_decode(fuzz_tok, ids.v, ids.n, 0, &dn);
    FUZZ_ASSERT(back);
    if (ascii(data, size)) FUZZ_ASSERT(dn == size && !memcmp(back, data, size));
    free(back);
    /* The chat encoder's path: text between two added tokens. */
    tok_segment seg[3] = { { "<|im_start|>assistant\n", 22, 0, NULL, 0 }, { text, size, 1, NULL, 0 },
                           { "<|im_end|>", 10, 1, NULL, 0 } };
    tok_ids sids = { 0 }, mask = { 0 };
    if (tok_encode_segments(fuzz_tok, seg, 3, &sids, &mask) == 0) {
        FUZZ_ASSERT(sids.n == mask.n);
        FUZZ_ASSERT(sids.n >= ids.n);
    }
    tok_ids_free(&sids);
    tok_ids_free(&mask);
    tok_ids_free(&ids);
    return 0;
}
