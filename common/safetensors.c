/* safetensors.c — strict safetensors reader and writer (see safetensors.h). */
#include "safetensors.h"
#include "jsonl.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Limits (man 5 ckpt): the header length cap is the format's own (the
 * reference reader refuses headers over 100 MB); the tensor count bounds
 * the table built from the header; element counts and byte sizes are
 * checked for overflow before any arithmetic relies on them. */
#define ST_MAX_HEADER  (100u << 20)
#define ST_MAX_TENSORS (1 << 17)

static const char *dtype_names[] = { "F32", "BF16", "F16", "F64" };
static const int dtype_sizes[] = { 4, 2, 2, 8 };

const char *st_dtype_name(int d) { return dtype_names[d]; }
int st_dtype_size(int d) { return dtype_sizes[d]; }

static int dtype_from(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, dtype_names[i])) return i;
    return -1;
}

uint16_t f32_to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if (isnan(x)) return (uint16_t)((u >> 16) | 0x40);   /* keep NaN quiet */
    u += 0x7fff + ((u >> 16) & 1);                      /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static float f16_to_f32(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 0) v = ldexpf((float)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexpf((float)(m + 1024), e - 25);
    return s ? -v : v;
}

void st_close(st_file *f)
{
    if (!f) return;
    for (int i = 0; i < f->n; i++) free(f->t[i].name);
    free(f->t);
    free(f->buf);
    free(f->name);
    json_decref(f->meta);
    free(f);
}

static int by_begin(const void *a, const void *b)
{
    const st_tensor *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* Check one header entry and fill t.  0 or -1 (reported). */
static int parse_entry(st_tensor *t, const char *key, json_t *v, size_t data_len, const char *name)
{
    json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
           *off = json_object_get(v, "data_offsets");
    t->name = xstrdup(key);
    if (!json_is_object(v) || !json_is_string(dt) || !json_is_array(sh) || !json_is_array(off) ||
        json_array_size(off) != 2) {
        hat_errat(name, 0, "tensor %s: header entry needs dtype, shape and data_offsets [begin,end]", key);
        return -1;
    }
    if ((t->dtype = dtype_from(json_string_value(dt))) < 0) {
        hat_errat(name, 0, "tensor %s: unsupported dtype %s", key, json_string_value(dt));
        return -1;
    }
    if (json_array_size(sh) > ST_MAX_DIMS) {
        hat_errat(name, 0, "tensor %s: more than %d dimensions", key, ST_MAX_DIMS);
        return -1;
    }
    t->ndim = (int)json_array_size(sh);
    t->numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        json_t *x = json_array_get(sh, d);
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > (1LL << 40)) {
            hat_errat(name, 0, "tensor %s: bad shape", key);
            return -1;
        }
        t->shape[d] = json_integer_value(x);
        if (t->shape[d] && t->numel > SIZE_MAX / 8 / (size_t)t->shape[d]) {
            hat_errat(name, 0, "tensor %s: shape too large (element count overflows)", key);
            return -1;
        }
        t->numel *= (size_t)t->shape[d];
    }
    json_t *b = json_array_get(off, 0), *e = json_array_get(off, 1);
    if (!json_is_integer(b) || !json_is_integer(e) || json_integer_value(b) < 0 ||
        json_integer_value(e) < json_integer_value(b)) {
        hat_errat(name, 0, "tensor %s: bad data_offsets", key);
        return -1;
    }
    t->begin = (size_t)json_integer_value(b);
    t->end = (size_t)json_integer_value(e);
    size_t want = t->numel * dtype_sizes[t->dtype];
    if (t->end - t->begin != want) {
        hat_errat(name, 0, "tensor %s: data_offsets [%zu,%zu] hold %zu bytes, but %s x %zu elements need %zu",
                  key, t->begin, t->end, t->end - t->begin, dtype_names[t->dtype], t->numel, want);
        return -1;
    }
    if (t->end > data_len) {
        hat_errat(name, 0, "tensor %s: data_offsets end %zu is past the end of the data (%zu bytes): truncated file?",
                  key, t->end, data_len);
        return -1;
    }
    return 0;
}

st_file *st_parse(unsigned char *buf, size_t size, const char *name)
{
    st_file *f = xcalloc(1, sizeof *f);
    f->buf = buf;
    f->size = size;
    f->name = xstrdup(name);
    if (size < 8) { hat_errat(name, 0, "not a safetensors file: %zu bytes", size); goto bad; }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | buf[i];
    if (hlen > ST_MAX_HEADER || hlen > size - 8) {
        hat_errat(name, 0, "header length %llu exceeds the file size %zu: truncated or not safetensors",
                  (unsigned long long)hlen, size);
        goto bad;
    }
    if (hlen < 2 || buf[8] != '{') { hat_errat(name, 0, "header does not start with '{'"); goto bad; }
    json_error_t err;
    json_t *h = json_loadb((const char *)buf + 8, hlen, JSON_REJECT_DUPLICATES, &err);
    if (!h || !json_is_object(h)) {
        hat_errat(name, 0, "bad header JSON: %s", h ? "not an object" : err.text);
        json_decref(h);
        goto bad;
    }
    f->data_start = 8 + hlen;
    size_t data_len = size - f->data_start;
    size_t ntensors = json_object_size(h) - (json_object_get(h, "__metadata__") ? 1 : 0);
    if (ntensors > ST_MAX_TENSORS) {
        hat_errat(name, 0, "header lists %zu tensors; at most %d are accepted",
                  ntensors, ST_MAX_TENSORS);
        goto badh;
    }
    f->t = xcalloc(json_object_size(h) + 1, sizeof *f->t);
    const char *key;
    json_t *v;
    json_object_foreach(h, key, v) {
        if (!strcmp(key, "__metadata__")) {
            if (!json_is_object(v)) { hat_errat(name, 0, "__metadata__ must be an object"); goto badh; }
            f->meta = json_incref(v);
            continue;
        }
        if (parse_entry(&f->t[f->n++], key, v, data_len, name)) goto badh;
    }
    json_decref(h);
    h = NULL;
    /* The data area must be covered exactly: no holes, overlaps or tail. */
    st_tensor *sorted = xmalloc((f->n + 1) * sizeof *sorted);
    memcpy(sorted, f->t, f->n * sizeof *sorted);
    qsort(sorted, f->n, sizeof *sorted, by_begin);
    size_t pos = 0;
    for (int i = 0; i < f->n; i++) {
        if (sorted[i].begin != pos) {
            hat_errat(name, 0, "tensor %s: %s before its data (offset %zu, expected %zu)", sorted[i].name,
                      sorted[i].begin > pos ? "hole" : "overlap", sorted[i].begin, pos);
            free(sorted);
            goto bad;
        }
        pos = sorted[i].end;
    }
    free(sorted);
    if (pos != data_len) {
        hat_errat(name, 0, "%zu trailing bytes after the last tensor", data_len - pos);
        goto bad;
    }
    return f;
badh:
    json_decref(h);
bad:
    st_close(f);
    return NULL;
}

st_file *st_open(const char *path)
{
    size_t n;
    char *buf = read_file(path, &n);
    if (!buf) return NULL;
    return st_parse((unsigned char *)buf, n, path);
}

const st_tensor *st_find(const st_file *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->t[i].name, name)) return &f->t[i];
    return NULL;
}

void st_read_f32(const st_file *f, const st_tensor *t, float *out)
{
    const unsigned char *p = f->buf + f->data_start + t->begin;
    for (size_t i = 0; i < t->numel; i++) {
        switch (t->dtype) {
        case ST_F32: memcpy(&out[i], p + 4 * i, 4); break;
        case ST_BF16: { uint16_t h; memcpy(&h, p + 2 * i, 2); out[i] = bf16_to_f32(h); break; }
        case ST_F16: { uint16_t h; memcpy(&h, p + 2 * i, 2); out[i] = f16_to_f32(h); break; }
        case ST_F64: { double d; memcpy(&d, p + 8 * i, 8); out[i] = (float)d; break; }
        }
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const st_entry *)a)->name, ((const st_entry *)b)->name);
}

unsigned char *st_serialize(const st_entry *e, int n, int dtype, const json_t *meta, size_t *len)
{
    st_entry *s = xmalloc((n + 1) * sizeof *s);
    memcpy(s, e, n * sizeof *s);
    qsort(s, n, sizeof *s, by_name);
    json_t *h = json_object();
    if (meta && json_object_size(meta)) json_object_set_new(h, "__metadata__", json_deep_copy(meta));
    size_t off = 0, esz = dtype_sizes[dtype];
    for (int i = 0; i < n; i++) {
        size_t numel = 1;
        json_t *shape = json_array();
        for (int d = 0; d < s[i].ndim; d++) {
            json_array_append_new(shape, json_integer(s[i].shape[d]));
            numel *= (size_t)s[i].shape[d];
        }
        json_object_set_new(h, s[i].name, json_pack("{s:s,s:o,s:[I,I]}", "dtype", dtype_names[dtype],
                            "shape", shape, "data_offsets", (json_int_t)off, (json_int_t)(off + numel * esz)));
        off += numel * esz;
    }
    char *hs = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(h);
    size_t hl = strlen(hs), pad = (64 - (8 + hl) % 64) % 64;
    size_t total = 8 + hl + pad + off;
    unsigned char *buf = xmalloc(total ? total : 1), *p = buf;
    uint64_t H = hl + pad;
    for (int i = 0; i < 8; i++) *p++ = (unsigned char)(H >> (8 * i));
    memcpy(p, hs, hl);
    memset(p + hl, ' ', pad);
    p += hl + pad;
    free(hs);
    for (int i = 0; i < n; i++) {
        size_t numel = 1;
        for (int d = 0; d < s[i].ndim; d++) numel *= (size_t)s[i].shape[d];
        if (dtype == ST_F32) {
            memcpy(p, s[i].data, numel * 4);
        } else {
            for (size_t k = 0; k < numel; k++) {
                uint16_t b = f32_to_bf16(s[i].data[k]);
                memcpy(p + 2 * k, &b, 2);
            }
        }
        p += numel * esz;
    }
    free(s);
    *len = total;
    return buf;
}

int st_save(const char *path, const st_entry *e, int n, int dtype, const json_t *meta)
{
    size_t len;
    unsigned char *buf = st_serialize(e, n, dtype, meta, &len);
    int rc = write_file_atomic(path, buf, len);
    free(buf);
    return rc;
}
