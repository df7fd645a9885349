/* test_limits.c — every input size that could grow without bound has a
 * limit (man 7 hat, LIMITS) and a clear error past it: JSONL line length
 * and nesting depth, safetensors header length, tensor count and shape
 * overflow, tokenizer ids and merges, harness file sizes, member counts,
 * total size and list lengths, and checkpoint configs larger than their
 * tensor data.  Each test checks the message, not just the failure. */
#include "test.h"
#include "ckpt.h"
#include "harness.h"
#include "jsonl.h"
#include "safetensors.h"
#include "tokenizer.h"
#include "util.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---- capturing diagnostics ---------------------------------------------- */

static int saved_fd = -1;
static char cap_path[600];

static void capture_begin(void)
{
    snprintf(cap_path, sizeof cap_path, "%s/stderr", test_tmpdir());
    fflush(stderr);
    saved_fd = dup(2);
    int fd = open(cap_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);
}

/* What was printed since capture_begin (malloc'd). */
static char *capture_end(void)
{
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    size_t n;
    char *s = read_file(cap_path, &n);
    return s ? s : xstrdup("");
}

#define CHECK_HAS(s, sub) do { if (!strstr((s), (sub))) { t_failed_here = 1; \
    fprintf(stderr, "  %s:%d: \"%s\" not in: %.300s\n", __FILE__, __LINE__, (sub), (s)); } } while (0)

static char *tmp_path(const char *name) { return xasprintf("%s/%s", test_tmpdir(), name); }

static void put_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, n, f) == n);
    if (f) fclose(f);
}

/* A tar (gzip'd when gz) of members {name, size, fill byte}. */
typedef struct { const char *name; size_t size; char fill; } member;

static void put_tar(const char *path, const member *m, int n, int filter)
{
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    if (filter == 1) archive_write_add_filter_gzip(a);
    if (filter == 2) CHECK(archive_write_add_filter_bzip2(a) == ARCHIVE_OK);
    CHECK(archive_write_open_filename(a, path) == ARCHIVE_OK);
    char *buf = xmalloc(1 << 20);
    for (int i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, m[i].name);
        archive_entry_set_size(e, (la_int64_t)m[i].size);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_write_header(a, e);
        memset(buf, m[i].fill, 1 << 20);
        for (size_t left = m[i].size; left;) {
            size_t k = left < (1 << 20) ? left : (1 << 20);
            archive_write_data(a, buf, k);
            left -= k;
        }
        archive_entry_free(e);
    }
    free(buf);
    archive_write_close(a);
    archive_write_free(a);
}

/* ---- JSONL -------------------------------------------------------------- */

static int read_all(const char *path, long *values)
{
    jsonl_reader *r = jsonl_open(path, 0);
    json_t *v;
    int rc;
    *values = 0;
    while ((rc = jsonl_next(r, &v)) == 1) { json_decref(v); (*values)++; }
    jsonl_close(r);
    return rc;
}

static void jsonl_depth(void)
{
    char *p = tmp_path("deep.jsonl");
    sbuf b;
    sbuf_init(&b);
    for (int i = 0; i < JSONL_MAX_DEPTH; i++) sbuf_puts(&b, i % 2 ? "[" : "{\"k\":");
    sbuf_puts(&b, "1");
    for (int i = JSONL_MAX_DEPTH - 1; i >= 0; i--) sbuf_putc(&b, i % 2 ? ']' : '}');
    sbuf_puts(&b, "\n[\"[[[[ in a string do not count\"]\n");
    put_file(p, b.s, b.len);
    long n;
    CHECK_EQ_INT(read_all(p, &n), 0);          /* 512 levels: fine */
    CHECK_EQ_INT(n, 2);
    sbuf_reset(&b);
    for (int i = 0; i <= JSONL_MAX_DEPTH; i++) sbuf_putc(&b, '[');
    for (int i = 0; i <= JSONL_MAX_DEPTH; i++) sbuf_putc(&b, ']');
    sbuf_putc(&b, '\n');
    put_file(p, b.s, b.len);
    capture_begin();
    CHECK_EQ_INT(read_all(p, &n), -1);
    char *err = capture_end();
    CHECK_HAS(err, "deep.jsonl:1: JSON nested deeper than 512 levels");
    free(err);
    capture_begin();
    CHECK(json_parse_named(b.s, b.len, "doc.json") == NULL);
    err = capture_end();
    CHECK_HAS(err, "doc.json: JSON nested deeper than 512 levels");
    free(err);
    CHECK(!json_too_deep("[[\"]]]]]]]]\\\"[[[[[[[\"]]", 24, 2));
    CHECK(json_too_deep("[[[", 3, 2));
    sbuf_free(&b);
    free(p);
}

static void jsonl_line_length(void)
{
    /* JSONL_MAX_LINE + 1 bytes of one line, gzip'd to a few hundred kB */
    char *p = tmp_path("long.jsonl.gz");
    gzFile gz = gzopen(p, "wb1");
    char *chunk = xmalloc(1 << 20);
    memset(chunk, ' ', 1 << 20);
    gzwrite(gz, "[", 1);
    for (unsigned i = 0; i < JSONL_MAX_LINE >> 20; i++) gzwrite(gz, chunk, 1 << 20);
    gzwrite(gz, "]\n", 2);
    gzclose(gz);
    free(chunk);
    long n;
    capture_begin();
    CHECK_EQ_INT(read_all(p, &n), -1);
    char *err = capture_end();
    CHECK_HAS(err, "long.jsonl.gz:1: line longer than 268435456 bytes");
    free(err);
    free(p);
}

/* ---- safetensors -------------------------------------------------------- */

static st_file *st_from(const char *header, size_t data, char **err)
{
    size_t hl = strlen(header), size = 8 + hl + data;
    unsigned char *buf = xcalloc(size, 1);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(buf + 8, header, hl);
    capture_begin();
    st_file *f = st_parse(buf, size, "x.safetensors");
    *err = capture_end();
    return f;
}

static void safetensors_limits(void)
{
    char *err;
    /* shape whose element count overflows 64 bits */
    st_file *f = st_from("{\"a\":{\"dtype\":\"F32\",\"shape\":[1099511627776,1099511627776,1099511627776],"
                         "\"data_offsets\":[0,0]}}", 0, &err);
    CHECK(!f);
    CHECK_HAS(err, "tensor a: shape too large (element count overflows)");
    free(err);
    /* header length past the 100 MB cap (and the file) */
    unsigned char *buf = xcalloc(16, 1);
    buf[3] = 0x10;   /* 256 MiB */
    buf[8] = '{';
    capture_begin();
    CHECK(!st_parse(buf, 16, "h.safetensors"));
    err = capture_end();
    CHECK_HAS(err, "h.safetensors: header length 268435456 exceeds");
    free(err);
    /* more tensors than ST_MAX_TENSORS (131072), all empty */
    sbuf h;
    sbuf_init(&h);
    sbuf_puts(&h, "{\"__metadata__\":{}");
    for (int i = 0; i <= 131072; i++)
        sbuf_printf(&h, ",\"t%d\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}", i);
    sbuf_putc(&h, '}');
    f = st_from(h.s, 0, &err);
    CHECK(!f);
    CHECK_HAS(err, "header lists 131073 tensors; at most 131072 are accepted");
    free(err);
    sbuf_free(&h);
}

/* ---- tokenizer ---------------------------------------------------------- */

static json_t *small_tokenizer(void)
{
    const char *top = getenv("HAT_TOP");
    char *p = xasprintf("%s/tests/fuzz/tokenizer.json", top ? top : ".");
    json_t *j = json_load_path(p);
    free(p);
    return j;
}

static void tokenizer_limits(void)
{
    json_t *j = small_tokenizer();
    CHECK(j != NULL);
    if (!j) return;
    char *err = NULL;
    tokenizer *t = tok_from_json(j, &err);
    CHECK(t != NULL);
    tok_free(t);
    json_t *vocab = json_object_get(json_object_get(j, "model"), "vocab");
    json_object_set_new(vocab, "huge", json_integer(1 << 21));
    CHECK(!tok_from_json(j, &err));
    CHECK_HAS(err ? err : "", "vocab entry \"huge\": id is not an integer in [0, 2097152)");
    free(err);
    json_object_del(vocab, "huge");
    json_t *added = json_object_get(j, "added_tokens");
    json_t *a0 = json_deep_copy(json_array_get(added, 0));
    json_object_set_new(a0, "id", json_integer(1 << 21));
    json_object_set_new(a0, "content", json_string("<|huge|>"));
    json_array_append_new(added, a0);
    CHECK(!tok_from_json(j, &err));
    CHECK_HAS(err ? err : "", "too large (ids must be below 2097152)");
    free(err);
    json_array_remove(added, json_array_size(added) - 1);
    json_t *merges = json_array();
    for (int i = 0; i <= (1 << 22); i++) json_array_append_new(merges, json_null());
    json_object_set_new(json_object_get(j, "model"), "merges", merges);
    CHECK(!tok_from_json(j, &err));
    CHECK_HAS(err ? err : "", "4194305 merges; at most 4194304 are accepted");
    free(err);
    json_decref(j);
}

/* ---- harness ------------------------------------------------------------ */

static char *load_problems(const char *path)
{
    json_t *problems = json_array();
    json_t *h = harness_load_problems(path, NULL, problems);
    json_decref(h);
    sbuf b;
    sbuf_init(&b);
    size_t i;
    json_t *p;
    json_array_foreach(problems, i, p) {
        sbuf_puts(&b, json_string_value(json_object_get(p, "message")));
        sbuf_putc(&b, '\n');
    }
    json_decref(problems);
    return b.s ? sbuf_detach(&b) : xstrdup("");
}

static void harness_limits(void)
{
    char *p = tmp_path("big.tar.gz");
    member big[] = { { "harness.json", 2, '{' }, { "prompt/10-x.md", (16u << 20) + 1, 'a' } };
    put_tar(p, big, 2, 1);
    char *e = load_problems(p);
    CHECK_HAS(e, "prompt/10-x.md: member of 16777217 bytes; a harness file may hold at most 16777216");
    free(e);

    member bomb[5];
    char names[5][32];
    for (int i = 0; i < 5; i++) {
        snprintf(names[i], sizeof names[i], "tools/t%d.json", i);
        bomb[i] = (member){ names[i], 15u << 20, ' ' };
    }
    put_tar(p, bomb, 5, 1);     /* .gz: unpacked by zlib on the way in */
    e = load_problems(p);
    CHECK_HAS(e, "more than 67108864 bytes (a harness's limit)");
    free(e);
    put_tar(p, bomb, 5, 2);     /* bzip2: unpacked member by member by libarchive */
    e = load_problems(p);
    CHECK_HAS(e, "tools/t4.json: more than 67108864 bytes (the whole harness's limit)");
    free(e);

    member *many = xcalloc(4097, sizeof *many);
    char (*mnames)[32] = xcalloc(4097, sizeof *mnames);
    for (int i = 0; i < 4097; i++) {    /* distinct names: a repeated one is refused sooner */
        snprintf(mnames[i], sizeof mnames[i], "tools/x%d.json", i);
        many[i] = (member){ mnames[i], 0, 0 };
    }
    put_tar(p, many, 4097, 1);
    free(many);
    free(mnames);
    e = load_problems(p);
    CHECK_HAS(e, "archive holds more than 4096 members");
    free(e);
    free(p);

    /* a directory harness with one oversized file (sparse: no disk used) */
    char *d = tmp_path("hdir");
    mkdir(d, 0755);
    char *hj = xasprintf("%s/harness.json", d);
    int fd = open(hj, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && ftruncate(fd, (16 << 20) + 1) == 0);
    close(fd);
    e = load_problems(d);
    CHECK_HAS(e, "file larger than 16777216 bytes (a harness file's limit)");
    free(e);
    free(hj);
    free(d);

    /* a compiled harness with more skills than HARNESS_MAX_ITEMS (1024) */
    json_t *h = json_pack("{s:s,s:[]}", "name", "x", "skills");
    for (int i = 0; i < 1025; i++)
        json_array_append_new(json_object_get(h, "skills"), json_pack("{s:s%}", "name", "s", (size_t)1));
    char *hp = tmp_path("many.json");
    json_dump_file(h, hp, JSON_COMPACT);
    json_decref(h);
    e = load_problems(hp);
    CHECK_HAS(e, "1025 entries; at most 1024 are accepted");
    free(e);
    free(hp);
}

/* ---- checkpoints -------------------------------------------------------- */

static void ckpt_limits(void)
{
    /* a config describing ~4e12 parameters next to a few bytes of tensors */
    char *p = tmp_path("huge.ckpt");
    const char *cfg = "{\"vocab_size\":100000000,\"hidden_size\":1024,\"intermediate_size\":4096,"
                      "\"num_hidden_layers\":2,\"num_attention_heads\":8,\"num_key_value_heads\":8,"
                      "\"head_dim\":128}";
    unsigned char st[16] = { 8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' ' };
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    archive_write_open_filename(a, p);
    const char *names[2] = { "config.json", "model.safetensors" };
    const void *data[2] = { cfg, st };
    size_t len[2] = { strlen(cfg), 16 };
    for (int i = 0; i < 2; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, names[i]);
        archive_entry_set_size(e, (la_int64_t)len[i]);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_write_header(a, e);
        archive_write_data(a, data[i], len[i]);
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
    ckpt c;
    capture_begin();
    CHECK_EQ_INT(ckpt_load(&c, p), -1);
    char *err = capture_end();
    CHECK_HAS(err, "huge.ckpt: config.json describes");
    CHECK_HAS(err, "parameters, but model.safetensors holds 0 bytes of tensor data");
    free(err);
    free(p);
}

int main(void)
{
    hat_prog = "test_limits";
    RUN(jsonl_depth);
    RUN(jsonl_line_length);
    RUN(safetensors_limits);
    RUN(tokenizer_limits);
    RUN(harness_limits);
    RUN(ckpt_limits);
    TEST_MAIN_END();
}
