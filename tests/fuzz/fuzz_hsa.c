/* fuzz_hsa.c — hsa-augment on arbitrary trajectory records: the bytes are
 * one JSONL record (with or without an inline harness; the example harness
 * is the --harness default), augmented with the train vocabulary at every
 * dimension on.  Invariant: HSA never changes a function, so every skill
 * and tool of the new harness has a function of the old one (or is a
 * distractor skill); masking may drop skills, never invent meanings. */
#include "fuzz.h"
#include "harness.h"
#include "hsa.h"
#include "jsonl.h"

static hsa_vocab *vocab;
static json_t *deflt;
static hsa_cache *cache;

static void hsa_setup(void)
{
    if (!getenv("HAT_DATA")) {
        char *d = fuzz_top_path("data");
        setenv("HAT_DATA", d, 1);
        free(d);
    }
    char *hp = fuzz_top_path("examples/harness");
    deflt = harness_load(hp);
    free(hp);
    vocab = hsa_vocab_load("train");
    if (!deflt || !vocab) abort();
    cache = hsa_cache_new();
}

/* Every function of kind (skills|tools) in the new harness b is one of
 * the old harness a's (a missing function stays missing). */
static int functions_kept(const json_t *a, const json_t *b, const char *kind)
{
    size_t i, j;
    json_t *x, *y;
    json_array_foreach(json_object_get(b, kind), i, x) {
        const json_t *f = json_object_get(x, "function");
        if (!f || (json_is_string(f) && !strcmp(json_string_value(f), "distractor"))) continue;
        int found = 0;
        json_array_foreach(json_object_get(a, kind), j, y)
            if (json_equal((json_t *)f, json_object_get(y, "function"))) found = 1;
        if (!found) return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    if (!vocab) hsa_setup();
    json_error_t je;
    json_t *rec = json_loadb((const char *)data + 1, size - 1, 0, &je);
    if (!rec) return 0;
    hsa_opts o;
    hsa_opts_default(&o);
    const char *err = NULL;
    json_t *out = hsa_augment_record(cache, vocab, &o, rec, deflt, data[0] >> 2, data[0] & 3,
                                     data[0] & 3, &err);
    if (out) {
        const json_t *oldh = json_object_get(rec, "harness");
        if (!oldh) oldh = deflt;
        const json_t *newh = json_object_get(out, "harness");
        FUZZ_ASSERT(json_is_object(newh));
        FUZZ_ASSERT(functions_kept(oldh, newh, "skills"));
        FUZZ_ASSERT(functions_kept(oldh, newh, "tools"));
        char *s = json_dumps(out, HAT_JSON_FLAGS);
        FUZZ_ASSERT(s);
        free(s);
    } else {
        FUZZ_ASSERT(err);
    }
    json_decref(out);
    json_decref(rec);
    return 0;
}
