/* ckpt.c — .ckpt tar bundles (libarchive) and Hugging Face directories. */
#include "ckpt.h"
#include "jsonl.h"
#include "util.h"

#include <archive.h>
#include <ctype.h>
#include <dirent.h>
#include <libgen.h>
#include <time.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ tensors */

int model_read_tensors(const model *m, float *base, const st_file *f, const char *suffix)
{
    int matched = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const model_tensor *mt = &m->tensors[i];
        char *name = xasprintf("%s%s", mt->name, suffix);
        const st_tensor *t = st_find(f, name);
        if (!t) {
            hat_errat(f->name, 0, "missing tensor %s", name);
            free(name);
            return -1;
        }
        int ok = t->ndim == mt->ndim && t->shape[0] == mt->shape[0] &&
                 (mt->ndim == 1 || t->shape[1] == mt->shape[1]);
        if (!ok) {
            char got[128] = "", *p = got;
            for (int d = 0; d < t->ndim && p < got + 100; d++)
                p += sprintf(p, "%s%lld", d ? "," : "", (long long)t->shape[d]);
            if (mt->ndim == 1)
                hat_errat(f->name, 0, "tensor %s: shape [%s], config.json wants [%d]", name, got, mt->shape[0]);
            else
                hat_errat(f->name, 0, "tensor %s: shape [%s], config.json wants [%d,%d]", name, got,
                          mt->shape[0], mt->shape[1]);
            free(name);
            return -1;
        }
        st_read_f32(f, t, base + mt->offset);
        matched++;
        free(name);
    }
    for (int i = 0; i < f->n; i++) {
        /* A tied checkpoint may still carry lm_head (HF ignores it). */
        if (m->cfg.tie_word_embeddings && !*suffix && !strcmp(f->t[i].name, "lm_head.weight")) continue;
        size_t sl = strlen(suffix), nl = strlen(f->t[i].name);
        int ours = nl > sl && !strcmp(f->t[i].name + nl - sl, suffix);
        char *bare = xstrndup(f->t[i].name, nl - (ours ? sl : 0));
        int known = ours && model_find(m, bare);
        free(bare);
        if (!known) {
            hat_errat(f->name, 0, "unexpected tensor %s (not in this config)", f->t[i].name);
            return -1;
        }
    }
    (void)matched;
    return 0;
}

unsigned char *model_write_tensors(const model *m, const float *base, int dtype,
                                   const char *suffix, size_t *len)
{
    st_entry *e = xcalloc(m->n_tensors + 1, sizeof *e);
    char **names = xcalloc(m->n_tensors + 1, sizeof *names);
    for (int i = 0; i < m->n_tensors; i++) {
        const model_tensor *t = &m->tensors[i];
        names[i] = xasprintf("%s%s", t->name, suffix);
        e[i].name = names[i];
        e[i].ndim = t->ndim;
        e[i].shape[0] = t->shape[0];
        e[i].shape[1] = t->shape[1];
        e[i].data = base + t->offset;
    }
    json_t *meta = json_pack("{s:s}", "format", "pt");
    unsigned char *buf = st_serialize(e, m->n_tensors, dtype, meta, len);
    json_decref(meta);
    for (int i = 0; i < m->n_tensors; i++) free(names[i]);
    free(names);
    free(e);
    return buf;
}

/* ------------------------------------------------------------ members */

enum { M_CONFIG, M_MODEL, M_TOKENIZER, M_OPTIM, M_STATE, N_MEMBERS };
static const char *member_names[N_MEMBERS] = {
    "config.json", "model.safetensors", "tokenizer.json", "optimizer.safetensors", "trainer_state.json",
};

/* The most bytes each member may hold (hat(7), LIMITS), checked before
 * anything is allocated for it: a tar header's size, a file's size, or a
 * gzip stream that keeps expanding.  The weights have no fixed cap (models
 * vary), but their size must match what their safetensors header says. */
static const size_t member_cap[N_MEMBERS] = {
    1u << 20, SIZE_MAX, 64u << 20, SIZE_MAX, 64u << 20,
};

static void cap_error(const char *path, const char *member, double have)
{
    size_t cap = 0;
    for (int i = 0; i < N_MEMBERS; i++)
        if (!strcmp(member, member_names[i])) cap = member_cap[i];
    hat_errat(path, 0, "%s: %.0f bytes or more; the limit is %zu bytes (%zu MiB, hat(7) LIMITS)", member,
              have, cap, cap >> 20);
}

typedef struct { unsigned char *buf[N_MEMBERS]; size_t len[N_MEMBERS]; } members;

static void members_free(members *s)
{
    for (int i = 0; i < N_MEMBERS; i++) free(s->buf[i]);
}

int ckpt_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A Hugging Face directory's file: regular (a FIFO or /dev/zero is
 * refused, not read) and within its member's cap. */
static unsigned char *read_dir_member(const char *dir, int i, size_t *len)
{
    char *p = xasprintf("%s/%s", dir, member_names[i]);
    int fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    unsigned char *b = NULL;
    if (fd < 0 || fstat(fd, &st)) hat_errat(p, 0, "cannot open: %s", strerror(errno));
    else if (!S_ISREG(st.st_mode)) hat_errat(p, 0, "not a regular file");
    else if ((size_t)st.st_size > member_cap[i]) cap_error(dir, member_names[i], (double)st.st_size);
    else {
        b = xmalloc((size_t)st.st_size + 1);
        size_t n = 0;
        ssize_t got = 1;
        while (n < (size_t)st.st_size && (got = read(fd, b + n, (size_t)st.st_size - n)) > 0) n += (size_t)got;
        if (got < 0 || n != (size_t)st.st_size) {
            hat_errat(p, 0, "cannot read: %s", got < 0 ? strerror(errno) : "the file shrank");
            free(b);
            b = NULL;
        } else {
            b[n] = 0;
            *len = n;
        }
    }
    if (fd >= 0) close(fd);
    free(p);
    return b;
}

static int read_dir(members *s, const char *dir)
{
    for (int i = 0; i < N_MEMBERS; i++) {
        char *p = xasprintf("%s/%s", dir, member_names[i]);
        int there = access(p, F_OK) == 0;
        free(p);
        if (there && !(s->buf[i] = read_dir_member(dir, i, &s->len[i]))) return -1;
    }
    return 0;
}

/* The size a safetensors file must have, from its first bytes: 8 + the
 * header's length + the end of its last tensor.  0 while b[0..n) is too
 * short to tell; (size_t)-1 when it is not a safetensors header at all. */
static size_t st_expected(const unsigned char *b, size_t n)
{
    if (n < 8) return 0;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | b[i];
    if (hlen < 2 || hlen > (100u << 20)) return (size_t)-1;
    if (n < 8 + hlen) return 0;
    json_t *h = json_loadb((const char *)b + 8, hlen, 0, NULL);
    double end = 0;
    const char *k;
    json_t *v;
    json_object_foreach(h, k, v) {
        const json_t *off = json_object_get(v, "data_offsets");
        double e = json_number_value(json_array_get(off, 1));
        if (e > end) end = e;
    }
    int ok = json_is_object(h);
    json_decref(h);
    return ok && end < 1e18 ? 8 + (size_t)hlen + (size_t)end : (size_t)-1;
}

/* A member's bytes, read in pieces: the size in a tar header is only a
 * claim, so memory grows with the data actually there, not with the claim,
 * and stops past max (returns -2: over the cap).  A safetensors member
 * must be as long as its own header says: checked as soon as the header
 * is in, so a member of zeros (a gzip bomb) stops after its first bytes
 * (-3: not the size its header describes). */
static int read_member(struct archive *a, la_int64_t claim, size_t max, int safetensors, unsigned char **buf,
                       size_t *len)
{
    size_t cap = claim > 0 && claim < (1 << 24) ? (size_t)claim : 1 << 24, n = 0, want = 0;
    unsigned char *b = xmalloc(cap + 1);
    for (;;) {
        if (n > max) { free(b); return -2; }
        if (safetensors && !want && (want = st_expected(b, n)) && want != (size_t)claim) { free(b); return -3; }
        if (n == cap) b = xrealloc(b, (cap *= 2) + 1);
        la_ssize_t got = archive_read_data(a, b + n, cap - n);
        if (got < 0) { free(b); return -1; }
        if (got == 0) break;
        n += (size_t)got;
    }
    *buf = b;
    *len = n;
    return 0;
}

static int read_tar(members *s, const char *path)
{
    struct archive *a = archive_read_new();
    archive_read_support_format_tar(a);
    archive_read_support_filter_all(a);
    int rc = -1;
    if (archive_read_open_filename(a, path, 1 << 16) != ARCHIVE_OK) {
        hat_errat(path, 0, "cannot open checkpoint: %s", archive_error_string(a));
        goto out;
    }
    struct archive_entry *e;
    int r;
    while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
        const char *name = archive_entry_pathname(e);
        if (!name) continue;
        if (!strncmp(name, "./", 2)) name += 2;
        int k = -1;
        for (int i = 0; i < N_MEMBERS; i++)
            if (!strcmp(name, member_names[i])) k = i;
        if (k < 0 || archive_entry_filetype(e) != AE_IFREG) continue;   /* extra files are ignored */
        la_int64_t sz = archive_entry_size(e);
        if (archive_entry_sparse_count(e) > 0) {   /* holes read as zeros: a bomb, never a checkpoint */
            hat_errat(path, 0, "%s: a sparse member (hat writes none; refused unread)", name);
            goto out;
        }
        if (sz < 0 || (double)sz > (double)member_cap[k]) {
            cap_error(path, name, (double)sz);
            goto out;
        }
        free(s->buf[k]);
        s->buf[k] = NULL;
        int got = read_member(a, sz, member_cap[k], k == M_MODEL || k == M_OPTIM, &s->buf[k], &s->len[k]);
        if (got == -2) {
            cap_error(path, name, (double)member_cap[k] + 1);
            goto out;
        }
        if (got == -3) {
            hat_errat(path, 0, "%s: the tar header says %lld bytes, the safetensors header inside "
                      "describes another size (or is not a safetensors header); refused before reading on",
                      name, (long long)sz);
            goto out;
        }
        if (got < 0 || s->len[k] != (size_t)sz) {
            hat_errat(path, 0, "%s: truncated checkpoint (%s)", name,
                      got < 0 ? archive_error_string(a) : "short member");
            goto out;
        }
    }
    if (r != ARCHIVE_EOF) {
        hat_errat(path, 0, "truncated or corrupt checkpoint: %s", archive_error_string(a));
        goto out;
    }
    rc = 0;
out:
    archive_read_free(a);
    return rc;
}

/* ------------------------------------------------------------ load */

void ckpt_free(ckpt *c)
{
    model_free(c->m);
    free(c->tokenizer);
    free(c->opt_m);
    free(c->opt_v);
    json_decref(c->state);
    memset(c, 0, sizeof *c);
}

/* A config.json is only a claim too: before model_new allocates what it
 * describes, the parameter count it implies (computed in floating point,
 * so no product can wrap) must fit in the tensor data actually present at
 * 2 bytes a parameter (BF16, the smallest dtype), and every dimension the
 * model computes in int (heads x head_dim, 2 x hidden) must fit one. */
static int config_fits(const model_config *c, const st_file *f, const char *path)
{
    double V = c->vocab_size, C = c->hidden_size, I = c->intermediate_size, L = c->n_layers,
           D = c->head_dim, HD = (double)c->n_heads * D, KD = (double)c->n_kv_heads * D;
    double block = 2 * C + 2 * HD * C + 2 * KD * C + 2 * D + 3 * I * C;
    double params = V * C * (c->tie_word_embeddings ? 1 : 2) + L * block + C +
                    (c->n_mtp ? 2 * C + 2 * C * C + block : 0);
    double have = (double)(f->size - f->data_start) / 2;
    if (HD > INT_MAX || KD > INT_MAX || 2 * C > INT_MAX || params > have) {
        hat_errat(path, 0, "config.json describes %.0f parameters, but model.safetensors "
                  "holds %zu bytes of tensor data", params, f->size - f->data_start);
        return -1;
    }
    return 0;
}

static int load_members(ckpt *c, members *s, const char *path)
{
    char *name = NULL;
    if (!s->buf[M_CONFIG]) { hat_errat(path, 0, "no config.json in checkpoint"); return -1; }
    if (!s->buf[M_MODEL]) { hat_errat(path, 0, "no model.safetensors in checkpoint"); return -1; }
    name = xasprintf("%s/config.json", path);
    json_t *cj = json_parse_named((const char *)s->buf[M_CONFIG], s->len[M_CONFIG], name);
    model_config cfg;
    int bad = !cj || model_config_parse(&cfg, cj, name);
    json_decref(cj);
    free(name);
    if (bad) return -1;

    name = xasprintf("%s/model.safetensors", path);
    st_file *f = st_parse(s->buf[M_MODEL], s->len[M_MODEL], name);
    s->buf[M_MODEL] = NULL;          /* owned by f (or freed) now */
    free(name);
    if (!f) return -1;
    if (config_fits(&cfg, f, path)) { st_close(f); return -1; }
    c->m = model_new(&cfg);
    c->dtype = f->n ? f->t[0].dtype : ST_F32;
    bad = model_read_tensors(c->m, c->m->params, f, "");
    st_close(f);
    if (bad) return -1;

    if (s->buf[M_TOKENIZER]) {
        c->tokenizer = (char *)s->buf[M_TOKENIZER];
        c->tokenizer_len = s->len[M_TOKENIZER];
        s->buf[M_TOKENIZER] = NULL;
    }
    if (s->buf[M_OPTIM]) {
        name = xasprintf("%s/optimizer.safetensors", path);
        f = st_parse(s->buf[M_OPTIM], s->len[M_OPTIM], name);
        s->buf[M_OPTIM] = NULL;
        free(name);
        if (!f) return -1;
        c->opt_m = xcalloc(c->m->n_floats, sizeof(float));
        c->opt_v = xcalloc(c->m->n_floats, sizeof(float));
        /* Each moment file reads only its own suffix: check them apart. */
        st_file g = *f;
        st_tensor *keep = xmalloc((f->n + 1) * sizeof *keep);
        for (int pass = 0; pass < 2 && !bad; pass++) {
            const char *suf = pass ? ".exp_avg_sq" : ".exp_avg";
            g.n = 0;
            g.t = keep;
            for (int i = 0; i < f->n; i++)
                if (str_endswith(f->t[i].name, suf) &&
                    (pass || !str_endswith(f->t[i].name, ".exp_avg_sq")))
                    keep[g.n++] = f->t[i];
            bad = model_read_tensors(c->m, pass ? c->opt_v : c->opt_m, &g, suf);
        }
        if (!bad && f->n != 2 * c->m->n_tensors) {
            hat_errat(f->name, 0, "holds %d tensors, expected %d (exp_avg and exp_avg_sq of each parameter)",
                      f->n, 2 * c->m->n_tensors);
            bad = 1;
        }
        free(keep);
        st_close(f);
        if (bad) return -1;
    }
    if (s->buf[M_STATE]) {
        name = xasprintf("%s/trainer_state.json", path);
        c->state = json_parse_named((const char *)s->buf[M_STATE], s->len[M_STATE], name);
        free(name);
        if (!c->state) return -1;
    }
    return 0;
}

int ckpt_load(ckpt *c, const char *path)
{
    memset(c, 0, sizeof *c);
    members s = { 0 };
    int rc = ckpt_is_dir(path) ? read_dir(&s, path) : read_tar(&s, path);
    if (!rc) rc = load_members(c, &s, path);
    members_free(&s);
    if (rc) ckpt_free(c);
    return rc;
}

/* ------------------------------------------------------------ save */

/* Pretty-printed JSON text with a final newline, as the members are. */
static char *json_text(const json_t *j)
{
    char *t = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    char *s = xasprintf("%s\n", t);
    free(t);
    return s;
}

static void put_config(members *s, const model_config *cfg, int dtype)
{
    json_t *cj = model_config_json(cfg);
    if (dtype == ST_BF16) json_object_set_new(cj, "torch_dtype", json_string("bfloat16"));
    free(s->buf[M_CONFIG]);
    s->buf[M_CONFIG] = (unsigned char *)json_text(cj);
    s->len[M_CONFIG] = strlen((char *)s->buf[M_CONFIG]);
    json_decref(cj);
}

static void serialise(const ckpt *c, members *s, int dtype)
{
    put_config(s, &c->m->cfg, dtype);
    s->buf[M_MODEL] = model_write_tensors(c->m, c->m->params, dtype, "", &s->len[M_MODEL]);
    if (c->tokenizer) {
        s->buf[M_TOKENIZER] = xmalloc(c->tokenizer_len + 1);
        memcpy(s->buf[M_TOKENIZER], c->tokenizer, c->tokenizer_len);
        s->len[M_TOKENIZER] = c->tokenizer_len;
    }
    if (c->opt_m && c->opt_v) {
        /* One file, two suffixes: serialise both halves in one table. */
        const model *m = c->m;
        int n = m->n_tensors;
        st_entry *e = xcalloc(2 * n + 1, sizeof *e);
        char **names = xcalloc(2 * n + 1, sizeof *names);
        for (int i = 0; i < 2 * n; i++) {
            const model_tensor *mt = &m->tensors[i % n];
            names[i] = xasprintf("%s%s", mt->name, i < n ? ".exp_avg" : ".exp_avg_sq");
            e[i].name = names[i];
            e[i].ndim = mt->ndim;
            e[i].shape[0] = mt->shape[0];
            e[i].shape[1] = mt->shape[1];
            e[i].data = (i < n ? c->opt_m : c->opt_v) + mt->offset;
        }
        s->buf[M_OPTIM] = st_serialize(e, 2 * n, ST_F32, NULL, &s->len[M_OPTIM]);
        for (int i = 0; i < 2 * n; i++) free(names[i]);
        free(names);
        free(e);
    }
    if (c->state) {
        char *st = json_dumps(c->state, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        s->buf[M_STATE] = (unsigned char *)xasprintf("%s\n", st);
        s->len[M_STATE] = strlen((char *)s->buf[M_STATE]);
        free(st);
    }
}

/* archive_write_data writes at most INT_MAX bytes a call (a short count,
 * no error), and a 270M-parameter model's optimizer member is larger:
 * write in pieces of 1 GiB. */
static int write_data(struct archive *a, const void *data, size_t n)
{
    const char *buf = data;
    while (n) {
        size_t k = n < ((size_t)1 << 30) ? n : (size_t)1 << 30;
        la_ssize_t w = archive_write_data(a, buf, k);
        if (w <= 0) return -1;
        buf += w, n -= (size_t)w;
    }
    return 0;
}

static int write_tar_fd(int fd, members *s, const char *path)
{
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    /* no padding of the last block to 10 KiB: libarchive pads where the
     * fd is not a regular file, and a checkpoint's bytes should not
     * depend on where they go */
    archive_write_set_bytes_in_last_block(a, 1);
    int rc = -1;
    if (archive_write_open_fd(a, fd) != ARCHIVE_OK) goto err;
    for (int i = 0; i < N_MEMBERS; i++) {
        if (!s->buf[i]) continue;
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, member_names[i]);
        archive_entry_set_size(e, (la_int64_t)s->len[i]);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_mtime(e, 0, 0);
        int w = archive_write_header(a, e);
        archive_entry_free(e);
        if (w != ARCHIVE_OK) goto err;
        if (write_data(a, s->buf[i], s->len[i])) goto err;
    }
    if (archive_write_close(a) != ARCHIVE_OK) goto err;
    rc = 0;
err:
    if (rc) {   /* libarchive's text alone is "Write error": add the cause */
        int e = archive_errno(a);
        hat_errat(path, 0, "cannot write checkpoint: %s%s%s", archive_error_string(a),
                  e > 0 ? ": " : "", e > 0 ? strerror(e) : "");
    }
    archive_write_free(a);
    return rc;
}

/* A save killed between mkstemp and rename leaves PATH.tmpXXXXXX behind
 * (9-27 MB each for a small model).  The next save of the same path
 * removes those of our own pattern that nothing has written to for ten
 * minutes: a save in progress touches its file all along. */
static void remove_stale_temps(const char *path)
{
    char *d = xstrdup(path), *b = xstrdup(path);
    const char *dir = dirname(d), *base = basename(b);
    size_t bl = strlen(base);
    DIR *dh = opendir(dir);
    struct dirent *e;
    time_t now = time(NULL);
    while (dh && (e = readdir(dh))) {
        const char *n = e->d_name;
        if (strncmp(n, base, bl) || strncmp(n + bl, ".tmp", 4) || strlen(n + bl + 4) != 6) continue;
        int ours = 1;
        for (const char *q = n + bl + 4; *q; q++) ours &= isalnum((unsigned char)*q) != 0;
        char *full = xasprintf("%s/%s", dir, n);
        struct stat st;
        if (ours && lstat(full, &st) == 0 && S_ISREG(st.st_mode) && now - st.st_mtime > 600 && !unlink(full))
            hat_warn("%s: removed a stale temporary file of an interrupted save", full);
        free(full);
    }
    if (dh) closedir(dh);
    free(d);
    free(b);
}

int ckpt_save(const ckpt *c, const char *path, int dtype)
{
    members s = { 0 };
    serialise(c, &s, dtype);
    char *tmp = NULL;
    int rc = -1;
    if (is_special_path(path)) {             /* a device or FIFO: written in place */
        int fd = open(path, O_WRONLY);
        if (fd < 0) hat_errat(path, 0, "cannot open: %s", strerror(errno));
        else {
            rc = write_tar_fd(fd, &s, path);
            if (close(fd) && !rc) { hat_errat(path, 0, "close: %s", strerror(errno)); rc = -1; }
        }
        goto out;
    }
    remove_stale_temps(path);
    tmp = xasprintf("%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        hat_errat(path, 0, "cannot create temporary file: %s", strerror(errno));
        goto out;
    }
    fchmod(fd, 0644);
    rc = write_tar_fd(fd, &s, path);
    if (!rc && fsync(fd)) { hat_errat(path, 0, "fsync: %s", strerror(errno)); rc = -1; }
    if (close(fd) && !rc) { hat_errat(path, 0, "close: %s", strerror(errno)); rc = -1; }
    if (!rc && rename(tmp, path)) { hat_errat(path, 0, "rename: %s", strerror(errno)); rc = -1; }
    if (rc) unlink(tmp);
out:
    free(tmp);
    members_free(&s);
    return rc;
}

/* ------------------------------------------------------------ export */

/* What Hugging Face tools read beside the weights, so that an export works
 * in them as it is: tokenizer_config.json (the chat template hat renders,
 * the special tokens, EOS and pad) and generation_config.json (the stop
 * ids hat's own decoding uses, greedy like `generate`'s default).  The
 * ids come from the bundled tokenizer.json's added tokens. */
typedef struct {
    json_t *added;        /* tokenizer.json "added_tokens" (borrowed) */
    int     im_end, pad;  /* <|im_end|>, <|endoftext|>; -1 = absent */
} hf_tokens;

static int added_id(const json_t *added, const char *content)
{
    size_t i;
    json_t *a;
    json_array_foreach(added, i, a) {
        const char *s = json_string_value(json_object_get(a, "content"));
        json_t *id = json_object_get(a, "id");
        if (s && !strcmp(s, content) && json_is_integer(id)) return (int)json_integer_value(id);
    }
    return -1;
}

/* The tokens of tokenizer_config.json in the layout Qwen3's own has:
 * added_tokens_decoder keyed by id, and every special added token but
 * the pad token listed as additional. */
static void put_added_tokens(json_t *tc, const json_t *added, const char *pad)
{
    json_t *dec = json_object(), *extra = json_array();
    static const char *flags[] = { "lstrip", "normalized", "rstrip", "single_word", "special" };
    size_t i;
    json_t *a;
    json_array_foreach(added, i, a) {
        const char *s = json_string_value(json_object_get(a, "content"));
        json_t *id = json_object_get(a, "id");
        if (!s || !json_is_integer(id)) continue;
        json_t *e = json_pack("{s:s}", "content", s);
        for (size_t f = 0; f < sizeof flags / sizeof *flags; f++)
            json_object_set_new(e, flags[f], json_boolean(json_is_true(json_object_get(a, flags[f]))));
        char key[24];
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(id));
        json_object_set_new(dec, key, e);
        if (json_is_true(json_object_get(a, "special")) && !(pad && !strcmp(s, pad)))
            json_array_append_new(extra, json_string(s));
    }
    json_object_set_new(tc, "added_tokens_decoder", dec);
    json_object_set_new(tc, "additional_special_tokens", extra);
}

static json_t *tokenizer_config(const hf_tokens *k, const char *template, int max_len)
{
    const char *pad = k->pad >= 0 ? "<|endoftext|>" : NULL;
    json_t *tc = json_object();
    json_object_set_new(tc, "add_bos_token", json_false());
    json_object_set_new(tc, "add_prefix_space", json_false());
    put_added_tokens(tc, k->added, pad);
    json_object_set_new(tc, "bos_token", json_null());
    json_object_set_new(tc, "chat_template", json_string(template));
    json_object_set_new(tc, "clean_up_tokenization_spaces", json_false());
    json_object_set_new(tc, "eos_token", k->im_end >= 0 ? json_string("<|im_end|>") : json_null());
    json_object_set_new(tc, "errors", json_string("replace"));
    json_object_set_new(tc, "model_max_length", json_integer(max_len));
    json_object_set_new(tc, "pad_token", pad ? json_string(pad) : json_null());
    json_object_set_new(tc, "split_special_tokens", json_false());
    /* tokenizer.json as it is, whatever its vocabulary (tok-train's too) */
    json_object_set_new(tc, "tokenizer_class", json_string("PreTrainedTokenizerFast"));
    json_object_set_new(tc, "unk_token", json_null());
    return tc;
}

/* hat stops at <|im_end|> and at the config's EOS when that differs
 * (rollout.c, serve_sched.c): the same list here, first the primary. */
static json_t *generation_config(const model_config *cfg, const hf_tokens *k)
{
    json_t *g = json_object(), *eos = json_array();
    if (k->im_end >= 0) json_array_append_new(eos, json_integer(k->im_end));
    if (cfg->eos_token_id >= 0 && cfg->eos_token_id != k->im_end)
        json_array_append_new(eos, json_integer(cfg->eos_token_id));
    json_object_set_new(g, "bos_token_id", cfg->bos_token_id >= 0 ? json_integer(cfg->bos_token_id) : json_null());
    json_object_set_new(g, "do_sample", json_false());
    json_object_set_new(g, "eos_token_id", json_array_size(eos) == 1 ? json_incref(json_array_get(eos, 0))
                                           : json_array_size(eos) ? json_incref(eos) : json_null());
    json_object_set_new(g, "pad_token_id", k->pad >= 0 ? json_integer(k->pad)
                                           : json_array_size(eos) ? json_incref(json_array_get(eos, 0)) : json_null());
    json_decref(eos);
    return g;
}

static int write_json_file(const char *dir, const char *name, json_t *j)
{
    char *p = xasprintf("%s/%s", dir, name), *t = json_text(j);
    int rc = write_file_atomic(p, t, strlen(t));
    free(t);
    free(p);
    json_decref(j);
    return rc;
}

/* The chat template of tokenizer_config.json: data/tokenizer/
 * chat_template.jinja, Qwen3's template, which chat.c renders. */
static char *chat_template(void)
{
    char *p = hat_data_path("tokenizer/chat_template.jinja");
    char *t = p ? read_file(p, NULL) : NULL;
    if (!p) hat_errat("tokenizer/chat_template.jinja", 0, "data file not found (set HAT_DATA)");
    free(p);
    return t;
}

/* Every file is written into DIR.tmpXXXXXX first, beside DIR: a full disk
 * or a crash then leaves DIR as it was (absent, or the previous export),
 * never a directory holding config.json alone.  Only renames, which need
 * no space, touch DIR: the whole temporary directory when DIR is new,
 * else each file into it. */
static int publish_dir(const char *tmp, const char *dir)
{
    if (rename(tmp, dir) == 0) return 0;
    if (errno != EEXIST && errno != ENOTEMPTY) {
        hat_errat(dir, 0, "rename: %s", strerror(errno));
        return -1;
    }
    DIR *dh = opendir(tmp);
    struct dirent *e;
    int rc = dh ? 0 : -1;
    while (dh && (e = readdir(dh)) && !rc) {
        if (e->d_name[0] == '.') continue;
        char *from = xasprintf("%s/%s", tmp, e->d_name), *to = xasprintf("%s/%s", dir, e->d_name);
        if (rename(from, to)) { hat_errat(to, 0, "rename: %s", strerror(errno)); rc = -1; }
        free(from);
        free(to);
    }
    if (dh) closedir(dh);
    return rc;
}

static void remove_dir(const char *tmp)
{
    DIR *dh = opendir(tmp);
    struct dirent *e;
    while (dh && (e = readdir(dh))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *p = xasprintf("%s/%s", tmp, e->d_name);
        unlink(p);
        free(p);
    }
    if (dh) closedir(dh);
    rmdir(tmp);
}

int ckpt_export_hf(const ckpt *c, const char *dir, int dtype)
{
    hf_tokens k = { .im_end = -1, .pad = -1 };
    json_t *tj = NULL;
    char *template = NULL;
    if (c->tokenizer) {
        if (!(tj = json_parse_named(c->tokenizer, c->tokenizer_len, "tokenizer.json"))) return -1;
        k.added = json_object_get(tj, "added_tokens");
        k.im_end = added_id(k.added, "<|im_end|>");
        k.pad = added_id(k.added, "<|endoftext|>");
        if (!(template = chat_template())) { json_decref(tj); return -1; }
    }
    struct stat st;
    char *tmp = NULL;
    int rc = 0;
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        hat_errat(dir, 0, "exists and is not a directory");
        rc = -1;
    } else {
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/') n--;
        tmp = xasprintf("%.*s.tmpXXXXXX", (int)n, dir);
        if (!mkdtemp(tmp)) {
            hat_errat(dir, 0, "cannot create a temporary directory beside it: %s", strerror(errno));
            rc = -1;
        } else {
            chmod(tmp, 0755 & ~umask(umask(0)));
        }
    }
    if (rc) { free(tmp); json_decref(tj); free(template); return -1; }
    members s = { 0 };
    ckpt pub = *c;
    pub.opt_m = pub.opt_v = NULL;
    pub.state = NULL;
    if (!rc) serialise(&pub, &s, dtype);
    /* config.json's EOS: the one hat stops at, not null (transformers
     * would fall back to a default of its own) */
    model_config cfg = c->m->cfg;
    if (cfg.eos_token_id < 0 && k.im_end >= 0) cfg.eos_token_id = k.im_end;
    if (!rc) put_config(&s, &cfg, dtype);
    for (int i = 0; i < N_MEMBERS && !rc; i++) {
        if (!s.buf[i]) continue;
        char *p = xasprintf("%s/%s", tmp, member_names[i]);
        rc = write_file_atomic(p, s.buf[i], s.len[i]);
        free(p);
    }
    if (!rc) rc = write_json_file(tmp, "generation_config.json", generation_config(&cfg, &k));
    if (!rc && tj)
        rc = write_json_file(tmp, "tokenizer_config.json",
                             tokenizer_config(&k, template, cfg.max_position_embeddings));
    members_free(&s);
    json_decref(tj);
    free(template);
    if (!rc) rc = publish_dir(tmp, dir);
    remove_dir(tmp);          /* empty after a publish; what was written after a failure */
    free(tmp);
    return rc;
}

int ckpt_tokenizer(const ckpt *c, const char *ckpath, const char *tpath, int required,
                   tokenizer **out)
{
    char *err = NULL;
    *out = NULL;
    if (tpath) {
        if (!(*out = tok_load(tpath, &err))) hat_errat(tpath, 0, "%s", err);
    } else if (!c->tokenizer) {
        if (!required) return 0;
        hat_errat(ckpath, 0, "the checkpoint has no tokenizer.json (give --tokenizer FILE, "
                  "or model-init --tokenizer)");
        return -1;
    } else {
        /* the bundled text straight to the tokenizer: the vocabulary and
         * merges are read without a jansson tree (tok_from_text) */
        *out = tok_from_text(c->tokenizer, c->tokenizer_len, &err);
        if (!*out) hat_errat(ckpath, 0, "tokenizer.json: %s", err);
    }
    free(err);
    return *out ? 0 : -1;
}
