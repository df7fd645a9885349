/* fuzz_serve_sched.c — requests driven through serve's scheduler and a
 * tiny random model, not only its parser: the first byte picks the
 * endpoint (chat or agent) and the sampling seed, the rest is the body.
 * The model (random weights over tests/fuzz/tokenizer.json, whose byte
 * tokens include 0x00) samples whatever it samples, so the answer path
 * sees NUL bytes, broken UTF-8, stray tags and cut tool calls.  Every
 * request must be answered with a status and a JSON object (an error
 * object for statuses of 400 and up); a 200 chat answer holds a message
 * and at most max_tokens completion tokens; nothing may crash or leak.
 * One server lives for the whole run (made on the first input, freed by
 * fuzz_serve_sched_free). */
#include "fuzz.h"
#include "harness.h"
#include "model.h"
#include "serve.h"
#include "tokenizer.h"
#include "world.h"

#include <jansson.h>

static struct {
    tokenizer *t;
    model     *m;
    world     *w;
    json_t    *h;
    serve     *s;
} fss;

static void fuzz_serve_sched_free(void)
{
    serve_free(fss.s);
    model_free(fss.m);
    tok_free(fss.t);
    world_free(fss.w);
    json_decref(fss.h);
    memset(&fss, 0, sizeof fss);
}

static serve *fss_server(void)
{
    if (fss.s) return fss.s;
    if (!getenv("HAT_DATA")) {
        char *d = fuzz_top_path("data");
        setenv("HAT_DATA", d, 1);
        free(d);
    }
    char *tp = fuzz_top_path("tests/fuzz/tokenizer.json"), *hp = fuzz_top_path("examples/harness"), *err = NULL;
    fss.t = tok_load(tp, &err);
    fss.h = harness_load(hp);
    free(tp);
    free(hp);
    json_t *wj = world_generate(2, 20);
    fss.w = wj ? world_from_json(wj, "world") : NULL;     /* takes wj */
    if (!fss.t || !fss.h || !fss.w) { fprintf(stderr, "fuzz_serve_sched: setup: %s\n", err ? err : "?"); abort(); }
    model_config c = {
        .vocab_size = tok_vocab_size(fss.t), .hidden_size = 16, .intermediate_size = 32, .n_layers = 1,
        .n_heads = 2, .n_kv_heads = 1, .head_dim = 8, .rms_norm_eps = 1e-6, .rope_theta = 10000.0,
        .tie_word_embeddings = 1, .max_position_embeddings = 2048, .bos_token_id = -1, .eos_token_id = -1,
    };
    fss.m = model_new(&c);
    model_init_random(fss.m, 7, 1.0f);
    serve_config sc = { 0 };
    sc.m = fss.m;
    sc.t = fss.t;
    sc.w = fss.w;
    sc.slots = 2;
    sc.queue_max = 8;
    sc.max_context = 2048;
    sc.limits = (serve_limits){ 1u << 16, 16, 12, 8, 4, 1024 };
    sc.seed = 1;
    sc.model_name = "fuzz";
    fss.s = serve_new(&sc, fss.h, &err);
    if (!fss.s) { fprintf(stderr, "fuzz_serve_sched: %s\n", err); abort(); }
    return fss.s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    serve *s = fss_server();
    int kind = data[0] & 1 ? SERVE_CHAT : SERVE_AGENT;
    json_t *body = json_loadb((const char *)data + 1, size - 1, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(body)) { json_decref(body); return 0; }
    if (!json_object_get(body, "seed")) json_object_set_new(body, "seed", json_integer(data[0] >> 1));
    json_t *resp = NULL;
    int st = serve_run(s, kind, body, &resp);
    FUZZ_ASSERT(st >= 200 && st < 600);
    FUZZ_ASSERT(json_is_object(resp));
    if (st >= 400) FUZZ_ASSERT(json_is_string(json_object_get(json_object_get(resp, "error"), "message")));
    if (st == 200 && kind == SERVE_CHAT) {
        const json_t *msg = json_object_get(json_array_get(json_object_get(resp, "choices"), 0), "message");
        const json_t *content = json_object_get(msg, "content");
        FUZZ_ASSERT(json_is_string(content) || json_is_null(content));
        FUZZ_ASSERT(json_integer_value(json_object_get(json_object_get(resp, "usage"), "completion_tokens")) <= 12);
    }
    char *text = json_dumps(resp, JSON_COMPACT);   /* every string in it is valid UTF-8 */
    FUZZ_ASSERT(text != NULL);
    free(text);
    json_decref(resp);
    json_decref(body);
    return 0;
}
