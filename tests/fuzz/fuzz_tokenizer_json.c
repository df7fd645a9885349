/* fuzz_tokenizer_json.c — tok_from_json on arbitrary JSON: a tokenizer.json
 * is either refused with a message or loads into a tokenizer that encodes
 * and decodes (ids in range; ASCII text decodes back to itself). */
#include "fuzz.h"
#include "tokenizer.h"

static const char *const SAMPLES[] = {
    "hello world", "  spaces\tand\nnewlines  ", "<|im_start|>user\nhi<|im_end|>",
    "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80", "123456789 ,.;:!?", "",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *root = json_loadb((const char *)data, size, 0, &je);
    if (!root) return 0;
    char *err = NULL;
    tokenizer *t = tok_from_json(root, &err);
    json_decref(root);
    if (!t) {
        FUZZ_ASSERT(err && *err);
        free(err);
        return 0;
    }
    FUZZ_ASSERT(!err);
    int V = tok_vocab_size(t);
    for (size_t i = 0; i < sizeof SAMPLES / sizeof *SAMPLES; i++) {
        tok_ids ids = { 0 };
        size_t n = strlen(SAMPLES[i]);
        FUZZ_ASSERT(tok_encode(t, SAMPLES[i], n, &ids) == 0);
        for (size_t k = 0; k < ids.n; k++) FUZZ_ASSERT(ids.v[k] >= 0 && ids.v[k] < V);
        size_t dn;
        char *back = tok_decode(t, ids.v, ids.n, 0, &dn);
        FUZZ_ASSERT(back);
        free(back);
        tok_ids_free(&ids);
    }
    for (int id = 0; id < V && id < 4096; id++) {
        const char *s = tok_token_str(t, id);
        if (s) FUZZ_ASSERT(tok_token_id(t, s) >= 0);
    }
    tok_free(t);
    return 0;
}
