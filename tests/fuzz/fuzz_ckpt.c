/* fuzz_ckpt.c — ckpt_load (tar bundle through libarchive, config.json,
 * model.safetensors, optimizer.safetensors, trainer_state.json).  Raw tar
 * bytes rarely survive mutation, so byte 0 picks what the rest is:
 *     0  the whole .ckpt file, raw
 *     1  config.json of a bundle whose other members are a tiny model's
 *     2  model.safetensors of such a bundle
 *     3  optimizer.safetensors of such a bundle
 *     4  trainer_state.json of such a bundle
 * The tiny model (2 layers, vocab 32) is built once with model_new and
 * ckpt_save, then its members are repacked around the fuzzed one. */
#include "fuzz.h"
#include "ckpt.h"

#include <archive.h>
#include <archive_entry.h>

static const char *const MEMBERS[] = {
    "config.json", "model.safetensors", "optimizer.safetensors", "trainer_state.json",
};
static unsigned char *good[4];
static size_t good_len[4];

static void ckpt_setup(void)
{
    model_config cfg;
    json_t *cj = json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "vocab_size", 32,
                           "hidden_size", 16, "intermediate_size", 32, "num_hidden_layers", 2,
                           "num_attention_heads", 2, "num_key_value_heads", 1, "head_dim", 8,
                           "max_position_embeddings", 64);
    if (model_config_parse(&cfg, cj, "fuzz")) abort();
    json_decref(cj);
    ckpt c = { 0 };
    c.m = model_new(&cfg);
    for (size_t i = 0; i < c.m->n_floats; i++) c.m->params[i] = (float)(i % 7) * 0.01f;
    c.opt_m = calloc(c.m->n_floats, sizeof(float));
    c.opt_v = calloc(c.m->n_floats, sizeof(float));
    c.state = json_pack("{s:i,s:s}", "step", 3, "schedule", "cosine");
    json_t *cjson = model_config_json(&cfg);
    good[0] = (unsigned char *)json_dumps(cjson, JSON_COMPACT);
    json_decref(cjson);
    good_len[0] = strlen((char *)good[0]);
    good[1] = model_write_tensors(c.m, c.m->params, ST_F32, "", &good_len[1]);
    /* optimizer.safetensors as ckpt_save lays it out: both moments, one file */
    char *tmp = xasprintf("%s/hat-fuzz-ckptXXXXXX", getenv("HAT_TEST_TMP") ? getenv("HAT_TEST_TMP") : "/tmp");
    int fd = mkstemp(tmp);
    if (fd < 0) abort();
    close(fd);
    if (ckpt_save(&c, tmp, ST_F32)) abort();
    ckpt_free(&c);
    struct archive *a = archive_read_new();
    archive_read_support_format_tar(a);
    if (archive_read_open_filename(a, tmp, 1 << 16) != ARCHIVE_OK) abort();
    struct archive_entry *e;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
        for (int k = 2; k < 4; k++)
            if (!strcmp(archive_entry_pathname(e), MEMBERS[k])) {
                good_len[k] = (size_t)archive_entry_size(e);
                good[k] = malloc(good_len[k] + 1);
                if (archive_read_data(a, good[k], good_len[k]) != (la_ssize_t)good_len[k]) abort();
            }
    }
    archive_read_free(a);
    unlink(tmp);
    free(tmp);
    if (!good[2] || !good[3]) abort();
}

static const char *bundle(int which, const uint8_t *data, size_t size)
{
    size_t cap = size + 4096 * 4, used = 0;
    for (int k = 0; k < 4; k++) cap += good_len[k] + 1024;
    char *buf = malloc(cap);
    if (!buf) abort();
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    archive_write_set_bytes_in_last_block(a, 1);
    if (archive_write_open_memory(a, buf, cap, &used) != ARCHIVE_OK) abort();
    for (int k = 0; k < 4; k++) {
        const void *p = k == which ? data : good[k];
        size_t n = k == which ? size : good_len[k];
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, MEMBERS[k]);
        archive_entry_set_size(e, (la_int64_t)n);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        if (archive_write_header(a, e) != ARCHIVE_OK) abort();
        if (n && archive_write_data(a, p, n) != (la_ssize_t)n) abort();
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
    const char *path = fuzz_file(0, buf, used);
    free(buf);
    return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    if (!good[0]) ckpt_setup();
    int mode = data[0] % 5;
    const char *path = mode == 0 ? fuzz_file(0, data + 1, size - 1)
                                 : bundle(mode - 1, data + 1, size - 1);
    ckpt c;
    if (ckpt_load(&c, path) == 0) {
        FUZZ_ASSERT(c.m && c.m->params);
        ckpt_free(&c);
    }
    return 0;
}
