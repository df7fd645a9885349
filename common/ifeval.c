/* ifeval.c — scoring a response as evaluation_lib.py does: strict verdicts
 * (the response as given, empty-after-strip fails everything), loose
 * verdicts (any of 8 variants: first / last / both lines removed, and each
 * with every '*' removed), and the accuracy report of print_report, strict
 * and loose: prompt level, instruction level, per category (tier0) and per
 * instruction id (tier1). */
#include "ifeval.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

void ifeval_verdict_free(ifeval_verdict *v)
{
    free(v->strict);
    free(v->loose);
    v->strict = v->loose = NULL;
    v->n = 0;
}

static int blank(const char *s)
{
    char *t = ifeval_strip(s, strlen(s));
    int b = !t[0];
    free(t);
    return b;
}

static char *without_stars(const char *s)
{
    char *t = xstrdup(s), *w = t;
    for (const char *p = s; *p; p++) if (*p != '*') *w++ = *p;
    *w = 0;
    return t;
}

/* "\n".join(lines[from:to]).strip() with Python's negative-index rules for
 * the three cases used: [1:], [:-1], [1:-1]. */
static char *join_strip(const char *s, int drop_first, int drop_last)
{
    const char *a = s, *b = s + strlen(s);
    if (drop_first) {
        const char *nl = strchr(s, '\n');
        a = nl ? nl + 1 : b;
    }
    if (drop_last) {
        const char *nl = strrchr(s, '\n');
        b = nl ? nl : s;
    }
    if (b < a) b = a;
    return ifeval_strip(a, (size_t)(b - a));
}

void ifeval_loose_variants(const char *r, char *out[8])
{
    char *first = join_strip(r, 1, 0), *last = join_strip(r, 0, 1), *both = join_strip(r, 1, 1);
    out[0] = xstrdup(r);
    out[1] = without_stars(r);
    out[2] = first;
    out[3] = last;
    out[4] = both;
    out[5] = without_stars(first);
    out[6] = without_stars(last);
    out[7] = without_stars(both);
}

int ifeval_score(json_t *ids, json_t *kwargs, const char *response, ifeval_verdict *v, char **err)
{
    memset(v, 0, sizeof *v);
    if (!json_is_array(ids)) { *err = xstrdup("instruction_id_list must be a list"); return -1; }
    size_t n = json_array_size(ids);
    if (kwargs && !json_is_null(kwargs) && (!json_is_array(kwargs) || json_array_size(kwargs) != n)) {
        *err = xasprintf("kwargs must be a list of %zu objects, one per instruction", n);
        return -1;
    }
    ifeval_instr **in = xcalloc(n ? n : 1, sizeof *in);
    for (size_t i = 0; i < n; i++) {
        const char *id = json_string_value(json_array_get(ids, i));
        if (!id) { *err = xasprintf("instruction_id_list[%zu] is not a string", i); goto fail; }
        in[i] = ifeval_instr_new(id, json_array_get(kwargs, i), err);
        if (!in[i]) goto fail;
    }
    v->n = (int)n;
    v->strict = xcalloc(n ? n : 1, sizeof *v->strict);
    v->loose = xcalloc(n ? n : 1, sizeof *v->loose);
    char *var[8];
    ifeval_loose_variants(response, var);
    int live[8];
    for (int k = 0; k < 8; k++) live[k] = !blank(var[k]);
    for (size_t i = 0; i < n; i++) {
        v->strict[i] = live[0] && ifeval_instr_check(in[i], response);
        v->loose[i] = v->strict[i];
        for (int k = 1; k < 8 && !v->loose[i]; k++)
            v->loose[i] = live[k] && ifeval_instr_check(in[i], var[k]);
    }
    for (int k = 0; k < 8; k++) free(var[k]);
    for (size_t i = 0; i < n; i++) ifeval_instr_free(in[i]);
    free(in);
    return 0;
fail:
    for (size_t i = 0; i < n; i++) ifeval_instr_free(in[i]);
    free(in);
    return -1;
}

/* ---- the report ------------------------------------------------------- */

typedef struct { char *key; long total, ok[2]; } tally;

struct ifeval_report {
    long prompts, prompt_ok[2], instr, instr_ok[2];
    tally *t0, *t1;
    size_t n0, n1, cap0, cap1;
};

ifeval_report *ifeval_report_new(void) { return xcalloc(1, sizeof(ifeval_report)); }

static tally *tally_get(tally **v, size_t *n, size_t *cap, const char *key, size_t klen)
{
    for (size_t i = 0; i < *n; i++)
        if (strlen((*v)[i].key) == klen && !strncmp((*v)[i].key, key, klen)) return &(*v)[i];
    if (*n == *cap) *v = xrealloc(*v, (*cap = *cap ? *cap * 2 : 32) * sizeof **v);
    tally *t = &(*v)[(*n)++];
    memset(t, 0, sizeof *t);
    t->key = xstrndup(key, klen);
    return t;
}

void ifeval_report_add(ifeval_report *r, json_t *ids, const ifeval_verdict *v)
{
    r->prompts++;
    for (int m = 0; m < 2; m++) {
        const int *f = m ? v->loose : v->strict;
        int all = 1;
        for (int i = 0; i < v->n; i++) { all &= f[i] != 0; r->instr_ok[m] += f[i] != 0; }
        r->prompt_ok[m] += all;
    }
    r->instr += v->n;
    for (int i = 0; i < v->n; i++) {
        const char *id = json_string_value(json_array_get(ids, (size_t)i));
        const char *colon = strchr(id, ':');
        tally *a = tally_get(&r->t0, &r->n0, &r->cap0, id, colon ? (size_t)(colon - id) : strlen(id));
        tally *b = tally_get(&r->t1, &r->n1, &r->cap1, id, strlen(id));
        a->total++;
        b->total++;
        for (int m = 0; m < 2; m++) {
            int f = (m ? v->loose : v->strict)[i] != 0;
            a->ok[m] += f;
            b->ok[m] += f;
        }
    }
}

static int tally_cmp(const void *a, const void *b)
{
    return strcmp(((const tally *)a)->key, ((const tally *)b)->key);
}

static json_t *ratio(long a, long b) { return b ? json_real((double)a / (double)b) : json_null(); }

static json_t *tier(tally *v, size_t n, int m)
{
    qsort(v, n, sizeof *v, tally_cmp);
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++) json_object_set_new(o, v[i].key, ratio(v[i].ok[m], v[i].total));
    return o;
}

json_t *ifeval_report_json(const ifeval_report *r, long inputs, long missing)
{
    json_t *agg = json_object();
    json_object_set_new(agg, "prompt_level_strict", ratio(r->prompt_ok[0], r->prompts));
    json_object_set_new(agg, "instruction_level_strict", ratio(r->instr_ok[0], r->instr));
    json_object_set_new(agg, "prompt_level_loose", ratio(r->prompt_ok[1], r->prompts));
    json_object_set_new(agg, "instruction_level_loose", ratio(r->instr_ok[1], r->instr));
    json_t *counts = json_object();
    json_object_set_new(counts, "inputs", json_integer(inputs));
    json_object_set_new(counts, "scored", json_integer(r->prompts));
    json_object_set_new(counts, "missing", json_integer(missing));
    json_object_set_new(counts, "instructions_scored", json_integer(r->instr));
    json_t *by = json_object();
    for (int m = 0; m < 2; m++) {
        json_t *t = json_object();
        json_object_set_new(t, "tier0", tier(r->t0, r->n0, m));
        json_object_set_new(t, "tier1", tier(r->t1, r->n1, m));
        json_object_set_new(by, m ? "loose" : "strict", t);
    }
    json_t *o = json_object();
    json_object_set_new(o, "aggregate", agg);
    json_object_set_new(o, "counts", counts);
    json_object_set_new(o, "by_instruction", by);
    return o;
}

void ifeval_report_free(ifeval_report *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n0; i++) free(r->t0[i].key);
    for (size_t i = 0; i < r->n1; i++) free(r->t1[i].key);
    free(r->t0);
    free(r->t1);
    free(r);
}
