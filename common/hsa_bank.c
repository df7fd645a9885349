/* hsa_bank.c — per-harness rewrite banks from an external rewriter (man 1
 * hsa-bank): every distinct wording string of a harness is sent to a
 * command, one JSON request per line, for train and held-out alternatives;
 * the answers that keep what a rewrite must keep (hsa_rewrite_check) are
 * written to a reviewable bank keyed by content hash, the others listed as
 * rejected.  hsa_vocab_add_bank reads it back for hsa-augment and evalset. */
#include "hsa.h"
#include "jsonl.h"
#include "util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const splits[] = { "train", "heldout" };

char *hsa_text_hash(const char *text)
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    return xasprintf("%016llx", (unsigned long long)h);
}

/* ---- reading ------------------------------------------------------------- */

json_t *hsa_bank_load(const char *path)
{
    json_t *b = json_load_path(path);
    if (!b) return NULL;
    const json_t *texts = json_object_get(b, "texts");
    if (!json_is_object(texts)) {
        hat_errat(path, 0, "not an hsa-bank file: no \"texts\" object");
        json_decref(b);
        return NULL;
    }
    int bad = 0;
    const char *hash;
    json_t *e;
    json_object_foreach((json_t *)texts, hash, e) {
        const char *text = json_string_value(json_object_get(e, "text"));
        char *want = text ? hsa_text_hash(text) : NULL;
        if (!want || strcmp(want, hash)) {
            hat_errat(path, 0, "texts/%s: %s", hash, text ? "the key is not the hash of its text"
                                                          : "no \"text\"");
            bad = 1;
        }
        free(want);
        for (int s = 0; text && s < 2; s++) {
            size_t i;
            json_t *a;
            json_array_foreach(json_object_get(e, splits[s]), i, a) {
                char *why = NULL;
                const char *as = json_string_value(a);
                if (!as || !hsa_rewrite_check(text, as, NULL, &why)) {
                    hat_errat(path, 0, "texts/%s/%s/%zu: %s", hash, splits[s], i,
                              why ? why : "not a string");
                    bad = 1;
                }
                free(why);
            }
        }
    }
    if (bad) { json_decref(b); return NULL; }
    return b;
}

typedef struct {
    const hsa_vocab *v;
    json_t          *seen;     /* distinct texts, as a set */
    size_t           covered;
} coverage;

static void coverage_cb(json_t *parent, const char *key, size_t idx, const char *text,
                        const char *kind, const char *path, void *ud)
{
    (void)parent; (void)key; (void)idx; (void)kind; (void)path;
    coverage *c = ud;
    if (json_object_get(c->seen, text)) return;
    json_object_set_new(c->seen, text, json_true());
    if (hsa_vocab_bank(c->v, text)) c->covered++;
}

size_t hsa_vocab_bank_coverage(const hsa_vocab *v, const json_t *h, size_t *total)
{
    coverage c = { v, json_object(), 0 };
    hsa_texts((json_t *)h, 0, coverage_cb, &c);   /* the texts hsa-bank sends */
    if (total) *total = json_object_size(c.seen);
    json_decref(c.seen);
    return c.covered;
}

/* ---- building ------------------------------------------------------------ */

typedef struct {
    json_t *texts;   /* hash → {text, kind, paths} */
} collect;

static void collect_cb(json_t *parent, const char *key, size_t idx, const char *text,
                       const char *kind, const char *path, void *ud)
{
    (void)parent; (void)key; (void)idx;
    collect *c = ud;
    char *h = hsa_text_hash(text);
    json_t *e = json_object_get(c->texts, h);
    if (!e) {
        e = json_pack("{s:s, s:s, s:[]}", "text", text, "kind", kind, "paths");
        json_object_set_new(c->texts, h, e);
    }
    json_array_append_new(json_object_get(e, "paths"), json_string(path));
    free(h);
}

static json_t *keep_list(const char *text, const json_t *names)
{
    hsa_span sp[64];
    int n = hsa_protected(text, names, sp, 64);
    json_t *a = json_array();
    for (int i = 0; i < n && i < 64; i++) json_array_append_new(a, json_stringn(text + sp[i].start, sp[i].len));
    return a;
}

/* Write the requests to a file the command reads on its stdin. */
static char *write_requests(const json_t *texts, const json_t *names, int n)
{
    const char *dir = getenv("TMPDIR");
    char *path = xasprintf("%s/hsa-bankXXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        hat_errat(path, 0, "cannot create: %s", strerror(errno));
        free(path);
        return NULL;
    }
    const char *hash;
    json_t *e;
    json_object_foreach((json_t *)texts, hash, e) {
        const char *text = json_string_value(json_object_get(e, "text"));
        for (int s = 0; s < 2; s++) {
            char *id = xasprintf("%s:%s", hash, splits[s]);
            json_t *req = json_pack("{s:s, s:s, s:s, s:O, s:s, s:i, s:o}", "id", id, "hash", hash, "split", splits[s], "kind", json_object_get(e, "kind"),
                                    "text", text, "n", n, "keep", keep_list(text, names));
            char *line = json_dumps(req, HAT_JSON_FLAGS);
            free(id);
            fprintf(f, "%s\n", line);
            free(line);
            json_decref(req);
        }
    }
    if (fclose(f) != 0) {
        hat_errat(path, 0, "write error: %s", strerror(errno));
        unlink(path);
        free(path);
        return NULL;
    }
    return path;
}

static void reject(json_t *bank, const char *hash, const char *split, const char *text,
                   const char *alt, const char *why)
{
    hat_warn("rejected a %s alternative of \"%.60s\": \"%.60s\" %s", split, text, alt, why);
    json_array_append_new(json_object_get(bank, "rejected"),
                          json_pack("{s:s, s:s, s:s, s:s, s:s}", "hash", hash, "split", split,
                                    "text", text, "alternative", alt, "why", why));
}

/* One answer line: {"id":"HASH:SPLIT","alternatives":[...]}. */
static int take_answer(json_t *bank, const json_t *texts, const json_t *names, const json_t *ans,
                       const char *cmd, long lineno)
{
    const char *id = json_string_value(json_object_get(ans, "id"));
    const char *colon = id ? strchr(id, ':') : NULL;
    const json_t *alts = json_object_get(ans, "alternatives");
    if (!colon || !json_is_array(alts)) {
        hat_errat(cmd, lineno, "answer needs \"id\" (HASH:SPLIT) and an \"alternatives\" array");
        return -1;
    }
    char *hash = xstrndup(id, (size_t)(colon - id));
    const char *split = colon + 1;
    const json_t *src = json_object_get(texts, hash);
    int s = !strcmp(split, "train") ? 0 : !strcmp(split, "heldout") ? 1 : -1;
    if (!src || s < 0) {
        hat_errat(cmd, lineno, "answer for an id that was not asked: \"%s\"", id);
        free(hash);
        return -1;
    }
    const char *text = json_string_value(json_object_get(src, "text"));
    json_t *e = json_object_get(json_object_get(bank, "texts"), hash);
    size_t i;
    json_t *a;
    json_array_foreach(alts, i, a) {
        const char *as = json_string_value(a);
        char *why = NULL;
        if (!as) { reject(bank, hash, split, text, "", "is not a string"); continue; }
        if (!hsa_rewrite_check(text, as, names, &why)) {
            reject(bank, hash, split, text, as, why);
            free(why);
            continue;
        }
        int dup = 0;
        for (int t = 0; t < 2; t++) {
            size_t k;
            json_t *o;
            json_array_foreach(json_object_get(e, splits[t]), k, o)
                dup |= !strcmp(json_string_value(o), as) ? t + 1 : 0;
        }
        if (dup) {
            reject(bank, hash, split, text, as, dup & (s ? 1 : 2) ? "is also an alternative of the other split"
                                                               : "repeats an alternative");
            continue;
        }
        json_array_append(json_object_get(e, splits[s]), a);
    }
    free(hash);
    return 0;
}

json_t *hsa_bank_build(const json_t *h, const char *cmd, int n)
{
    collect c = { json_object() };
    hsa_texts((json_t *)h, HSA_TEXTS_PATHS, collect_cb, &c);
    json_t *names = hsa_harness_names(h);
    json_t *bank = json_pack("{s:s, s:i, s:s?, s:o, s:[]}", "bank", "hsa", "version", 1, "harness",
                             json_string_value(json_object_get(h, "name")), "texts", json_object(),
                             "rejected");
    const char *hash;
    json_t *e;
    json_object_foreach(c.texts, hash, e)
        json_object_set_new(json_object_get(bank, "texts"), hash,
                            json_pack("{s:O, s:O, s:O, s:[], s:[]}", "text", json_object_get(e, "text"),
                                      "kind", json_object_get(e, "kind"), "paths",
                                      json_object_get(e, "paths"), "train", "heldout"));
    char *req = write_requests(c.texts, names, n);
    int rc = req ? 0 : -1;
    if (req) {
        char *sh = xasprintf("(%s) <'%s'", cmd, req);
        FILE *p = popen(sh, "r");
        free(sh);
        if (!p) { hat_errat(cmd, 0, "cannot run: %s", strerror(errno)); rc = -1; }
        char *line = NULL;
        size_t cap = 0;
        long lineno = 0, bad = 0;
        while (p && getline(&line, &cap, p) > 0) {
            lineno++;
            json_error_t err;
            json_t *ans = json_loads(line, 0, &err);
            if (!ans) { hat_errat(cmd, lineno, "invalid JSON answer: %s", err.text); bad++; }
            else if (take_answer(bank, c.texts, names, ans, cmd, lineno) < 0) bad++;
            json_decref(ans);
        }
        free(line);
        if (p) {
            int st = pclose(p);
            if (st != 0) {
                hat_errat(cmd, 0, "exited with status %d", WIFEXITED(st) ? WEXITSTATUS(st) : st);
                rc = -1;
            }
        }
        if (bad) rc = -1;
        unlink(req);
        free(req);
    }
    json_decref(c.texts);
    json_decref(names);
    if (rc < 0) { json_decref(bank); return NULL; }
    return bank;
}
