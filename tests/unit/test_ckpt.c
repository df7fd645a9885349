/* test_ckpt.c — .ckpt bundles and Hugging Face directories: round trips
 * with optimiser and trainer state, BF16, and refusal of truncated or
 * inconsistent checkpoints. */
#include "test.h"
#include "ckpt.h"
#include "jsonl.h"
#include "util.h"

#include <sys/stat.h>
#include <unistd.h>

static char *tmp(const char *name) { return xasprintf("%s/%s", test_tmpdir(), name); }

static model_config cfg(void)
{
    model_config c = { .vocab_size = 20, .hidden_size = 8, .intermediate_size = 12, .n_layers = 1,
                       .n_heads = 2, .n_kv_heads = 1, .head_dim = 4, .rms_norm_eps = 1e-6,
                       .rope_theta = 10000, .max_position_embeddings = 32, .bos_token_id = -1,
                       .eos_token_id = 3 };
    return c;
}

static void make(ckpt *k, int with_state)
{
    model_config c = cfg();
    memset(k, 0, sizeof *k);
    k->m = model_new(&c);
    model_init_random(k->m, 4, 0.5f);
    k->tokenizer = xstrdup("{\"model\":{}}");
    k->tokenizer_len = strlen(k->tokenizer);
    if (with_state) {
        k->opt_m = xcalloc(k->m->n_floats, 4);
        k->opt_v = xcalloc(k->m->n_floats, 4);
        for (size_t i = 0; i < k->m->n_floats; i++) { k->opt_m[i] = 0.001f * i; k->opt_v[i] = 1e-6f * i; }
        /* padding stays zero, as in training */
        for (int t = 0; t < k->m->n_tensors; t++) {
            const model_tensor *mt = &k->m->tensors[t];
            size_t end = t + 1 < k->m->n_tensors ? k->m->tensors[t + 1].offset : k->m->n_floats;
            for (size_t i = mt->offset + mt->numel; i < end; i++) k->opt_m[i] = k->opt_v[i] = 0;
        }
        k->state = json_pack("{s:i}", "step", 7);
    }
}

static void round_trip_bundle(void)
{
    ckpt a, b;
    make(&a, 1);
    char *p = tmp("a.ckpt");
    CHECK_EQ_INT(ckpt_save(&a, p, ST_F32), 0);
    CHECK_EQ_INT(ckpt_load(&b, p), 0);
    if (b.m) {
        CHECK(!memcmp(a.m->params, b.m->params, a.m->n_floats * 4));
        CHECK(!memcmp(a.opt_m, b.opt_m, a.m->n_floats * 4));
        CHECK(!memcmp(a.opt_v, b.opt_v, a.m->n_floats * 4));
        CHECK_EQ_INT(json_integer_value(json_object_get(b.state, "step")), 7);
        CHECK(b.tokenizer_len == a.tokenizer_len && !memcmp(b.tokenizer, a.tokenizer, a.tokenizer_len));
        CHECK_EQ_INT(b.m->cfg.eos_token_id, 3);
        /* saving again gives the same bytes (fixed order, zero mtimes) */
        char *q = tmp("b.ckpt");
        CHECK_EQ_INT(ckpt_save(&b, q, ST_F32), 0);
        size_t la, lb;
        char *x = read_file(p, &la), *y = read_file(q, &lb);
        CHECK(la == lb && !memcmp(x, y, la));
        free(x); free(y); free(q);
        ckpt_free(&b);
    }
    free(p);
    ckpt_free(&a);
}

static void hf_directory_and_bf16(void)
{
    ckpt a, b;
    make(&a, 1);
    char *dir = tmp("hf");
    CHECK_EQ_INT(ckpt_export_hf(&a, dir, ST_BF16), 0);
    char *opt = xasprintf("%s/optimizer.safetensors", dir);
    CHECK(access(opt, F_OK) != 0);              /* training state is not exported */
    CHECK_EQ_INT(ckpt_load(&b, dir), 0);
    if (b.m) {
        CHECK_EQ_INT(b.dtype, ST_BF16);
        double e = 0;
        for (size_t i = 0; i < a.m->n_floats; i++)
            e = fmax(e, fabs(a.m->params[i] - b.m->params[i]) / fmax(fabs(a.m->params[i]), 1e-3));
        CHECK(e < 4e-3);                        /* bf16 keeps 8 significant bits */
        CHECK(b.opt_m == NULL && b.state == NULL && b.tokenizer != NULL);
        ckpt_free(&b);
    }
    free(opt);
    free(dir);
    ckpt_free(&a);
}

/* Write a modified HF directory from a's config and given tensors. */
static void write_dir(const char *dir, const char *config, const unsigned char *st, size_t stlen)
{
    mkdir(dir, 0755);
    char *p = xasprintf("%s/config.json", dir);
    write_file_atomic(p, config, strlen(config));
    free(p);
    p = xasprintf("%s/model.safetensors", dir);
    write_file_atomic(p, st, stlen);
    free(p);
}

static void refuses_inconsistent(void)
{
    ckpt a, b;
    make(&a, 0);
    size_t len;
    unsigned char *st = model_write_tensors(a.m, a.m->params, ST_F32, "", &len);
    char *dir = tmp("bad1");
    /* config says 2 layers: layer 1 tensors are missing */
    write_dir(dir, "{\"vocab_size\":20,\"hidden_size\":8,\"intermediate_size\":12,\"num_hidden_layers\":2,"
                   "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":4}", st, len);
    CHECK_EQ_INT(ckpt_load(&b, dir), -1);
    free(dir);
    /* wrong vocab: shape mismatch */
    dir = tmp("bad2");
    write_dir(dir, "{\"vocab_size\":21,\"hidden_size\":8,\"intermediate_size\":12,\"num_hidden_layers\":1,"
                   "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":4}", st, len);
    CHECK_EQ_INT(ckpt_load(&b, dir), -1);
    free(dir);
    /* heads not a multiple of kv heads */
    dir = tmp("bad3");
    write_dir(dir, "{\"vocab_size\":20,\"hidden_size\":8,\"intermediate_size\":12,\"num_hidden_layers\":1,"
                   "\"num_attention_heads\":3,\"num_key_value_heads\":2,\"head_dim\":4}", st, len);
    CHECK_EQ_INT(ckpt_load(&b, dir), -1);
    free(dir);
    /* the good config loads */
    dir = tmp("good");
    write_dir(dir, "{\"vocab_size\":20,\"hidden_size\":8,\"intermediate_size\":12,\"num_hidden_layers\":1,"
                   "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":4}", st, len);
    CHECK_EQ_INT(ckpt_load(&b, dir), 0);
    ckpt_free(&b);
    free(dir);
    free(st);

    /* a truncated bundle */
    char *p = tmp("t.ckpt"), *q = tmp("cut.ckpt");
    ckpt_save(&a, p, ST_F32);
    size_t n;
    char *bytes = read_file(p, &n);
    write_file_atomic(q, bytes, n / 2);
    CHECK_EQ_INT(ckpt_load(&b, q), -1);
    write_file_atomic(q, "not a tar file at all", 21);
    CHECK_EQ_INT(ckpt_load(&b, q), -1);
    free(bytes); free(p); free(q);
    ckpt_free(&a);
}

int main(void)
{
    RUN(round_trip_bundle);
    RUN(hf_directory_and_bf16);
    RUN(refuses_inconsistent);
    TEST_MAIN_END();
}
