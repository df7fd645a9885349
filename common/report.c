/* report.c — the four-set results table: verdicts joined to cases,
 * per-set scores with confidence intervals, breakdowns, Markdown, and the
 * gnuplot plots (report.h). */
#include "report.h"

#include "evalset.h"
#include "jsonl.h"
#include "rng.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const set_titles[EVAL_NSETS] = {
    "Live-Stream QA", "Harness-Variant QA", "Tool/Prompt Robustness", "IFEval-style" };

/* Breakdown keys, in the order the Markdown shows them. */
static const char *const bd_keys[] = { "intent", "fault", "hsa", "kind", "combo", "instruction" };
#define N_BD (sizeof bd_keys / sizeof *bd_keys)

/* ---- statistics ------------------------------------------------------------------- */

void report_wilson(long k, long n, double z, double *lo, double *hi)
{
    if (n <= 0) { *lo = *hi = 0; return; }
    double p = (double)k / n, z2 = z * z, d = 1 + z2 / n;
    double centre = (p + z2 / (2.0 * n)) / d;
    double half = z * sqrt(p * (1 - p) / n + z2 / (4.0 * n * n)) / d;
    *lo = centre - half < 0 ? 0 : centre - half;
    *hi = centre + half > 1 ? 1 : centre + half;
}

double report_quantile(const double *v, size_t n, double q)
{
    if (!n) return 0;
    double pos = q * (double)(n - 1);
    size_t i = (size_t)floor(pos);
    if (i + 1 >= n) return v[n - 1];
    return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void report_bootstrap_mean(const double *x, size_t n, int B, uint64_t seed, double *lo, double *hi)
{
    if (!n || B <= 0) { *lo = *hi = 0; return; }
    double *m = xmalloc((size_t)B * sizeof *m);
    rng_t r;
    rng_derive(&r, seed, 0);
    for (int b = 0; b < B; b++) {
        double s = 0;
        for (size_t i = 0; i < n; i++) s += x[rng_below(&r, n)];
        m[b] = s / (double)n;
    }
    qsort(m, (size_t)B, sizeof *m, cmp_double);
    *lo = report_quantile(m, (size_t)B, 0.025);
    *hi = report_quantile(m, (size_t)B, 0.975);
    free(m);
}

/* ---- state ---------------------------------------------------------------------- */

typedef struct { char *name; json_t *out; } model;             /* out: case id → outcome */
typedef struct { char *name; double *x, *y; size_t n, cap; } run;

struct report {
    json_t *cases;     /* case id → {"set","intent","faults","hsa","kind","combo","ids"} */
    model  *m;
    int     nm;
    run    *runs;
    int     nr;
    char   *metric;
};

report *report_new(void)
{
    report *r = xcalloc(1, sizeof *r);
    r->cases = json_object();
    return r;
}

void report_free(report *r)
{
    if (!r) return;
    json_decref(r->cases);
    for (int i = 0; i < r->nm; i++) { free(r->m[i].name); json_decref(r->m[i].out); }
    for (int i = 0; i < r->nr; i++) { free(r->runs[i].name); free(r->runs[i].x); free(r->runs[i].y); }
    free(r->m);
    free(r->runs);
    free(r->metric);
    free(r);
}

static model *get_model(report *r, const char *name)
{
    for (int i = 0; i < r->nm; i++) if (!strcmp(r->m[i].name, name)) return &r->m[i];
    r->m = xrealloc(r->m, (size_t)(r->nm + 1) * sizeof *r->m);
    model *m = &r->m[r->nm++];
    m->name = xstrdup(name);
    m->out = json_object();
    return m;
}

/* The case meta report reads, from a case line. */
static json_t *case_meta(const json_t *c, int set)
{
    const json_t *meta = json_object_get(c, "meta");
    json_t *o = json_pack("{s:s}", "set", evalset_names[set]);
    static const char *const keys[] = { "intent", "faults", "hsa", "kind", "combo" };
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        json_t *v = json_object_get(meta, keys[i]);
        if (v) json_object_set(o, keys[i], v);
    }
    json_t *ids = json_object_get(c, "instruction_id_list");
    if (ids) json_object_set(o, "ids", ids);
    return o;
}

int report_add_cases(report *r, const char *path, int skip_bad)
{
    jsonl_reader *rd = jsonl_open(path, skip_bad);
    if (!rd) return -1;
    json_t *c;
    int k, rc = 0;
    long bad = 0;
    while ((k = jsonl_next(rd, &c)) == 1) {
        const char *id = json_string_value(json_object_get(c, "id"));
        const char *set = json_string_value(json_object_get(c, "set"));
        int s = set ? evalset_set_index(set) : -1;
        if (!id || s < 0) {
            hat_errat(jsonl_name(rd), jsonl_line(rd), "a case needs an \"id\" and a \"set\" (live, variant, robust, ifeval)");
            json_decref(c);
            bad++;
            if (!skip_bad) { rc = -1; break; }
            continue;
        }
        json_object_set_new(r->cases, id, case_meta(c, s));
        json_decref(c);
    }
    if (k < 0) rc = -1;
    if (jsonl_close(rd)) rc = -1;
    if (skip_bad && bad) hat_warn("%s: skipped %ld bad cases", path, bad);
    return rc;
}

/* ---- verdict lines ----------------------------------------------------------------- */

static json_t *bool_list(const json_t *v)
{
    json_t *l = json_object_get(v, "follow_instruction_list");
    return json_is_array(l) ? json_incref(l) : json_array();
}

/* Outcome of an IFEval verdict line. */
static json_t *ifeval_outcome(const json_t *line, const char **id, char **err)
{
    const json_t *key = json_object_get(line, "key");
    if (!key) key = json_object_get(line, "id");   /* self-contained records */
    static char num[32];
    if (json_is_string(key)) *id = json_string_value(key);
    else if (json_is_integer(key)) { snprintf(num, sizeof num, "%lld", (long long)json_integer_value(key)); *id = num; }
    else { *err = xstrdup("an IFEval verdict needs a \"key\" or an \"id\""); return NULL; }
    const json_t *st = json_object_get(line, "strict"), *lo = json_object_get(line, "loose");
    if (!json_is_object(st) || !json_is_object(lo)) { *err = xstrdup("an IFEval verdict needs \"strict\" and \"loose\""); return NULL; }
    return json_pack("{s:s,s:b,s:b,s:O,s:o,s:o}", "set", "ifeval",
                     "pass", json_is_true(json_object_get(st, "follow_all_instructions")),
                     "loose", json_is_true(json_object_get(lo, "follow_all_instructions")),
                     "ids", json_object_get(line, "instruction_id_list") ?: json_array(),
                     "strict_list", bool_list(st), "loose_list", bool_list(lo));
}

/* Outcome of a judge verdict (v) for a case; meta from the verdict line. */
static json_t *agent_outcome(const json_t *v, const json_t *meta, const char *intent, char **err)
{
    const json_t *total = json_object_get(v, "total"), *pass = json_object_get(v, "pass");
    if (!json_is_number(total) || !json_is_boolean(pass)) {
        *err = xstrdup("a verdict needs a numeric \"total\" and a boolean \"pass\"");
        return NULL;
    }
    json_t *o = json_pack("{s:b,s:f}", "pass", json_is_true(pass), "total", json_number_value(total));
    if (intent) json_object_set_new(o, "intent", json_string(intent));
    json_t *f = json_object_get(meta, "faults"), *h = json_object_get(meta, "hsa");
    if (json_is_array(f)) json_object_set(o, "faults", f);
    if (json_is_array(h)) {   /* dims, or the ops of a trajectory's meta.hsa */
        json_t *dims = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(h, i, x) {
            json_t *d = json_is_string(x) ? x : json_object_get(x, "dim");
            size_t j;
            json_t *y;
            int seen = !json_is_string(d);
            json_array_foreach(dims, j, y) if (json_equal(y, d)) seen = 1;
            if (!seen) json_array_append(dims, d);
        }
        json_object_set_new(o, "hsa", dims);
    }
    return o;
}

int report_add_line(report *r, const char *name, const json_t *line, char **err)
{
    *err = NULL;
    if (!json_is_object(line)) { *err = xstrdup("a verdict must be a JSON object"); return -1; }
    const char *id = NULL;
    json_t *out;
    const json_t *v = json_object_get(line, "verdict");
    if (json_object_get(line, "strict")) out = ifeval_outcome(line, &id, err);
    else if (json_is_object(v)) {   /* rollout --judge: the trajectory carries it */
        const json_t *meta = json_object_get(line, "meta");
        id = json_string_value(json_object_get(json_object_get(meta, "case"), "id"));
        if (!id) id = json_string_value(json_object_get(line, "task_id"));
        json_t *m2 = json_pack("{s:O}", "hsa", json_object_get(meta, "hsa") ?: json_array());
        out = agent_outcome(v, m2, json_string_value(json_object_get(meta, "intent")), err);
        json_decref(m2);
    } else {
        id = json_string_value(json_object_get(line, "task_id"));
        out = agent_outcome(line, json_object_get(line, "meta"), json_string_value(json_object_get(line, "intent")), err);
    }
    if (!out) return -1;
    if (!id) { json_decref(out); *err = xstrdup("no case id (task_id, key or meta.case.id)"); return -1; }
    const json_t *cm = json_object_get(r->cases, id);
    const char *set = cm ? json_string_value(json_object_get(cm, "set")) : NULL;
    if (!set) {
        int s = evalset_id_set(id);
        if (s < 0) {
            json_decref(out);
            /* With cases loaded, the id is simply not one of them: most
             * often verdicts of training tasks (judge on traj-gen output)
             * instead of a model's rollouts of the evaluation cases. */
            *err = json_object_size(r->cases)
                 ? xasprintf("case '%s' is not in --cases (verdicts of training tasks? report scores "
                             "the evaluation cases: rollout --tasks-are-cases --judge on cases.jsonl)", id)
                 : xasprintf("case '%s': unknown set (give --cases)", id);
            return -1;
        }
        set = evalset_names[s];
    }
    if (!json_object_get(out, "set")) json_object_set_new(out, "set", json_string(set));
    json_object_set_new(get_model(r, name)->out, id, out);
    return 0;
}

int report_add_verdicts(report *r, const char *name, const char *path, int skip_bad)
{
    get_model(r, name);
    jsonl_reader *rd = jsonl_open(path, skip_bad);
    if (!rd) return -1;
    json_t *line;
    int k, rc = 0;
    long bad = 0;
    while ((k = jsonl_next(rd, &line)) == 1) {
        char *err = NULL;
        if (report_add_line(r, name, line, &err)) {
            hat_errat(jsonl_name(rd), jsonl_line(rd), "%s", err);
            free(err);
            bad++;
            if (!skip_bad) { json_decref(line); rc = -1; break; }
        }
        json_decref(line);
    }
    if (k < 0) rc = -1;
    if (jsonl_close(rd)) rc = -1;
    if (skip_bad && bad) hat_warn("%s: skipped %ld bad verdicts", path, bad);
    return rc;
}

int report_add_metrics(report *r, const char *name, const char *path, const char *key)
{
    if (!r->metric) r->metric = xstrdup(key);
    jsonl_reader *rd = jsonl_open(path, 1);
    if (!rd) return -1;
    r->runs = xrealloc(r->runs, (size_t)(r->nr + 1) * sizeof *r->runs);
    run *u = &r->runs[r->nr++];
    memset(u, 0, sizeof *u);
    u->name = xstrdup(name);
    json_t *l;
    int k;
    while ((k = jsonl_next(rd, &l)) == 1) {
        json_t *x = json_object_get(l, "step"), *y = json_object_get(l, key);
        if (json_is_number(x) && json_is_number(y)) {
            if (u->n == u->cap) {
                u->cap = u->cap ? 2 * u->cap : 256;
                u->x = xrealloc(u->x, u->cap * sizeof *u->x);
                u->y = xrealloc(u->y, u->cap * sizeof *u->y);
            }
            u->x[u->n] = json_number_value(x);
            u->y[u->n++] = json_number_value(y);
        }
        json_decref(l);
    }
    int rc = k < 0 || jsonl_close(rd) ? -1 : 0;
    if (!rc && !u->n) { hat_errat(path, 0, "no line has both \"step\" and \"%s\"", key); rc = -1; }
    return rc;
}

/* ---- aggregation ----------------------------------------------------------------- */

/* Counters of one breakdown cell: n cases, k passed. */
static void bump(json_t *bd, const char *key, const char *val, const char *model, int pass)
{
    json_t *byk = json_object_get(bd, key);
    if (!byk) json_object_set_new(bd, key, byk = json_object());
    json_t *byv = json_object_get(byk, val);
    if (!byv) json_object_set_new(byk, val, byv = json_object());
    json_t *c = json_object_get(byv, model);
    if (!c) json_object_set_new(byv, model, c = json_pack("{s:I,s:I}", "n", (json_int_t)0, "pass", (json_int_t)0));
    json_object_set_new(c, "n", json_integer(json_integer_value(json_object_get(c, "n")) + 1));
    json_object_set_new(c, "pass", json_integer(json_integer_value(json_object_get(c, "pass")) + pass));
}

static void bump_list(json_t *bd, const char *key, const json_t *list, const char *model, int pass)
{
    if (!json_array_size(list)) { bump(bd, key, "none", model, pass); return; }
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) if (json_is_string(v)) bump(bd, key, json_string_value(v), model, pass);
}

/* The breakdown rows of one agent case: meta from the case when known. */
static void agent_breakdown(json_t *bd, const json_t *cm, const json_t *o, const char *model, int pass)
{
    const json_t *src = cm ? cm : o;
    const char *intent = json_string_value(json_object_get(src, "intent"));
    if (!intent && o) intent = json_string_value(json_object_get(o, "intent"));
    if (intent) bump(bd, "intent", intent, model, pass);
    const json_t *f = json_object_get(src, "faults"), *h = json_object_get(src, "hsa");
    if (!f && o) f = json_object_get(o, "faults");
    if (!h && o) h = json_object_get(o, "hsa");
    if (f || h || cm) { bump_list(bd, "fault", f, model, pass); bump_list(bd, "hsa", h, model, pass); }
    const char *kind = json_string_value(json_object_get(cm, "kind"));
    const char *combo = json_string_value(json_object_get(cm, "combo"));
    if (kind) bump(bd, "kind", kind, model, pass);
    if (combo) bump(bd, "combo", combo, model, pass);
}

/* IFEval breakdown: each instruction by category, strict. */
static void ifeval_breakdown(json_t *bd, const json_t *ids, const json_t *follow, const char *model)
{
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v) {
        const char *s = json_string_value(v);
        if (!s) continue;
        const char *c = strchr(s, ':');
        char *cat = c ? xstrndup(s, (size_t)(c - s)) : xstrdup(s);
        bump(bd, "instruction", cat, model, json_is_true(json_array_get(follow, i)));
        free(cat);
    }
}

typedef struct {
    long n, k, missing, loose, ins_n, ins_strict, ins_loose;
    double *totals;
    size_t nt;
} tally;

static void tally_outcome(tally *t, const json_t *o)
{
    t->n++;
    t->k += json_is_true(json_object_get(o, "pass"));
    t->loose += json_is_true(json_object_get(o, "loose"));
    json_t *tot = json_object_get(o, "total");
    t->totals[t->nt++] = json_is_number(tot) ? json_number_value(tot) : 0;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(o, "strict_list"), i, v) {
        t->ins_n++;
        t->ins_strict += json_is_true(v);
        t->ins_loose += json_is_true(json_array_get(json_object_get(o, "loose_list"), i));
    }
}

static double r1(double x) { return round(x * 1000.0) / 1000.0; }   /* 3 decimals, stable text */

static json_t *set_score(const tally *t, int set, int B, uint64_t seed)
{
    double lo, hi;
    report_wilson(t->k, t->n, REPORT_Z95, &lo, &hi);
    json_t *s = json_pack("{s:I,s:I,s:I,s:f,s:f,s:f}", "n", (json_int_t)t->n, "pass", (json_int_t)t->k,
                          "missing", (json_int_t)t->missing, "score", r1(100.0 * t->k / t->n),
                          "lo", r1(100 * lo), "hi", r1(100 * hi));
    if (set == EVAL_IFEVAL) {
        json_object_set_new(s, "prompt_loose", json_real(r1(100.0 * t->loose / t->n)));
        json_object_set_new(s, "instruction_strict", json_real(t->ins_n ? r1(100.0 * t->ins_strict / t->ins_n) : 0));
        json_object_set_new(s, "instruction_loose", json_real(t->ins_n ? r1(100.0 * t->ins_loose / t->ins_n) : 0));
    } else {
        double m = 0;
        for (size_t i = 0; i < t->nt; i++) m += t->totals[i];
        report_bootstrap_mean(t->totals, t->nt, B, seed, &lo, &hi);
        json_object_set_new(s, "total", json_real(r1(100 * m / (double)t->nt)));
        json_object_set_new(s, "total_lo", json_real(r1(100 * lo)));
        json_object_set_new(s, "total_hi", json_real(r1(100 * hi)));
    }
    return s;
}

/* Does model m have a verdict in set s? */
static int has_set(const model *m, const char *set)
{
    const char *id;
    json_t *o;
    json_object_foreach(m->out, id, o)
        if (!strcmp(json_string_value(json_object_get(o, "set")) ?: "", set)) return 1;
    return 0;
}

/* Scores and breakdown counts of one model. */
static json_t *model_scores(const report *r, const model *m, json_t *bd, int B, uint64_t seed)
{
    json_t *scores = json_object();
    double sum = 0;
    int nsum = 0;
    size_t ncases = json_object_size(r->cases) + json_object_size(m->out);
    for (int s = 0; s < EVAL_NSETS; s++) {
        const char *set = evalset_names[s];
        if (!has_set(m, set)) continue;
        tally t = { 0 };
        t.totals = xmalloc((ncases + 1) * sizeof *t.totals);
        const char *id;
        json_t *cm, *o;
        /* Every known case of the set (missing = failed), then verdicts
         * for cases the case file does not list. */
        json_object_foreach(r->cases, id, cm) {
            if (strcmp(json_string_value(json_object_get(cm, "set")), set)) continue;
            o = json_object_get(m->out, id);
            json_t *miss = NULL;
            if (!o) { t.missing++; o = miss = json_pack("{s:b,s:f,s:b}", "pass", 0, "total", 0.0, "loose", 0); }
            tally_outcome(&t, o);
            int pass = json_is_true(json_object_get(o, "pass"));
            if (s == EVAL_IFEVAL) ifeval_breakdown(bd, miss ? json_object_get(cm, "ids") : json_object_get(o, "ids"),
                                                   json_object_get(o, "strict_list"), m->name);
            else agent_breakdown(bd, cm, miss ? NULL : o, m->name, pass);
            json_decref(miss);
        }
        json_object_foreach(m->out, id, o) {
            if (strcmp(json_string_value(json_object_get(o, "set")), set) || json_object_get(r->cases, id)) continue;
            tally_outcome(&t, o);
            if (s == EVAL_IFEVAL) ifeval_breakdown(bd, json_object_get(o, "ids"), json_object_get(o, "strict_list"), m->name);
            else agent_breakdown(bd, NULL, o, m->name, json_is_true(json_object_get(o, "pass")));
        }
        if (t.n) {
            json_t *sc = set_score(&t, s, B, seed);
            sum += json_number_value(json_object_get(sc, "score"));
            nsum++;
            json_object_set_new(scores, set, sc);
        }
        free(t.totals);
    }
    if (nsum) json_object_set_new(scores, "mean", json_real(r1(sum / nsum)));
    return scores;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Counters → {n, pass, score, lo, hi}, values in sorted order. */
static json_t *finish_breakdowns(const json_t *bd)
{
    json_t *out = json_object();
    for (size_t k = 0; k < N_BD; k++) {
        const json_t *byk = json_object_get(bd, bd_keys[k]);
        if (!byk) continue;
        size_t nv = json_object_size(byk), i = 0;
        const char **vals = xmalloc(nv * sizeof *vals);
        const char *v;
        json_t *x;
        json_object_foreach((json_t *)byk, v, x) vals[i++] = v;
        qsort(vals, nv, sizeof *vals, cmp_str);
        json_t *ko = json_object();
        for (i = 0; i < nv; i++) {
            json_t *row = json_object(), *c;
            const char *mname;
            json_object_foreach(json_object_get(byk, vals[i]), mname, c) {
                long n = (long)json_integer_value(json_object_get(c, "n"));
                long p = (long)json_integer_value(json_object_get(c, "pass"));
                double lo, hi;
                report_wilson(p, n, REPORT_Z95, &lo, &hi);
                json_object_set_new(row, mname, json_pack("{s:I,s:I,s:f,s:f,s:f}", "n", (json_int_t)n,
                                    "pass", (json_int_t)p, "score", r1(100.0 * p / n), "lo", r1(100 * lo), "hi", r1(100 * hi)));
            }
            json_object_set_new(ko, vals[i], row);
        }
        free(vals);
        json_object_set_new(out, bd_keys[k], ko);
    }
    return out;
}

json_t *report_json(const report *r, int B, uint64_t seed)
{
    json_t *models = json_array(), *sets = json_array(), *scores = json_object(), *bd = json_object();
    for (int s = 0; s < EVAL_NSETS; s++)
        json_array_append_new(sets, json_pack("{s:s,s:s}", "name", evalset_names[s], "title", set_titles[s]));
    for (int i = 0; i < r->nm; i++) {
        json_array_append_new(models, json_string(r->m[i].name));
        json_object_set_new(scores, r->m[i].name, model_scores(r, &r->m[i], bd, B, seed));
    }
    json_t *method = json_pack("{s:s,s:s,s:s,s:I,s:I}",
        "score", "100 x pass rate (judge pass; IFEval prompt-level strict)",
        "ci", "95% Wilson score interval",
        "total_ci", "95% percentile bootstrap of the mean judge total",
        "bootstrap", (json_int_t)B, "seed", (json_int_t)seed);
    json_t *rep = json_pack("{s:o,s:o,s:o,s:o,s:o}", "models", models, "sets", sets, "method", method,
                            "scores", scores, "breakdowns", finish_breakdowns(bd));
    json_decref(bd);
    return rep;
}

/* ---- Markdown ------------------------------------------------------------------- */

static void md_cell(sbuf *b, const json_t *sc)
{
    if (!sc) { sbuf_puts(b, " n/a |"); return; }
    sbuf_printf(b, " %.1f [%.1f, %.1f] |", json_number_value(json_object_get(sc, "score")),
                json_number_value(json_object_get(sc, "lo")), json_number_value(json_object_get(sc, "hi")));
}

char *report_markdown(const json_t *rep)
{
    sbuf b;
    sbuf_init(&b);
    const json_t *models = json_object_get(rep, "models"), *scores = json_object_get(rep, "scores");
    size_t i, j;
    json_t *mv, *sv;
    sbuf_puts(&b, "| model |");
    json_array_foreach(json_object_get(rep, "sets"), j, sv)
        sbuf_printf(&b, " %s |", json_string_value(json_object_get(sv, "title")));
    sbuf_puts(&b, " mean |\n|---|");
    for (j = 0; j <= EVAL_NSETS; j++) sbuf_puts(&b, "---:|");
    sbuf_putc(&b, '\n');
    json_array_foreach(models, i, mv) {
        const json_t *ms = json_object_get(scores, json_string_value(mv));
        sbuf_printf(&b, "| %s |", json_string_value(mv));
        for (int s = 0; s < EVAL_NSETS; s++) md_cell(&b, json_object_get(ms, evalset_names[s]));
        json_t *mean = json_object_get(ms, "mean");
        if (mean) sbuf_printf(&b, " %.1f |\n", json_number_value(mean)); else sbuf_puts(&b, " n/a |\n");
    }
    sbuf_puts(&b, "\nScore: 100 x pass rate (IFEval: prompt-level strict) [95% Wilson interval]; cases per set:");
    for (int s = 0; s < EVAL_NSETS; s++) {
        long n = -1, miss = 0;
        json_array_foreach(models, i, mv) {
            const json_t *sc = json_object_get(json_object_get(scores, json_string_value(mv)), evalset_names[s]);
            if (sc && n < 0) n = (long)json_integer_value(json_object_get(sc, "n"));
            if (sc) miss += (long)json_integer_value(json_object_get(sc, "missing"));
        }
        if (n >= 0) sbuf_printf(&b, " %s %ld%s", evalset_names[s], n, miss ? " (some missing: counted failed)" : "");
    }
    sbuf_puts(&b, ".\n\n| model | set | mean judge total [95% bootstrap] | IFEval prompt loose | instruction strict | instruction loose |\n|---|---|---:|---:|---:|---:|\n");
    json_array_foreach(models, i, mv) {
        const json_t *ms = json_object_get(scores, json_string_value(mv));
        for (int s = 0; s < EVAL_NSETS; s++) {
            const json_t *sc = json_object_get(ms, evalset_names[s]);
            if (!sc) continue;
            sbuf_printf(&b, "| %s | %s |", json_string_value(mv), evalset_names[s]);
            if (s == EVAL_IFEVAL)
                sbuf_printf(&b, " | %.1f | %.1f | %.1f |\n", json_number_value(json_object_get(sc, "prompt_loose")),
                            json_number_value(json_object_get(sc, "instruction_strict")),
                            json_number_value(json_object_get(sc, "instruction_loose")));
            else
                sbuf_printf(&b, " %.1f [%.1f, %.1f] | | | |\n", json_number_value(json_object_get(sc, "total")),
                            json_number_value(json_object_get(sc, "total_lo")), json_number_value(json_object_get(sc, "total_hi")));
        }
    }
    const json_t *bd = json_object_get(rep, "breakdowns");
    for (size_t k = 0; k < N_BD; k++) {
        const json_t *byk = json_object_get(bd, bd_keys[k]);
        if (!byk) continue;
        sbuf_printf(&b, "\n### By %s\n\n| %s |", bd_keys[k], bd_keys[k]);
        json_array_foreach(models, i, mv) sbuf_printf(&b, " %s |", json_string_value(mv));
        sbuf_puts(&b, "\n|---|");
        json_array_foreach(models, i, mv) sbuf_puts(&b, "---:|");
        sbuf_putc(&b, '\n');
        const char *val;
        json_t *row;
        json_object_foreach((json_t *)byk, val, row) {
            sbuf_printf(&b, "| %s |", val);
            json_array_foreach(models, i, mv) {
                const json_t *c = json_object_get(row, json_string_value(mv));
                if (c) sbuf_printf(&b, " %.1f (%lld) |", json_number_value(json_object_get(c, "score")),
                                   (long long)json_integer_value(json_object_get(c, "n")));
                else sbuf_puts(&b, " |");
            }
            sbuf_putc(&b, '\n');
        }
    }
    return sbuf_detach(&b);
}

/* ---- plots ---------------------------------------------------------------------- */

static int put_file(const char *dir, const char *name, const char *text, char **err)
{
    char *p = xasprintf("%s/%s", dir, name);
    int rc = write_file_atomic(p, text, strlen(text));
    if (rc) *err = xasprintf("%s: cannot write", p);
    free(p);
    return rc;
}

/* Run gnuplot on script (a file in dir) with dir as the working directory. */
static int run_gnuplot(const char *dir, const char *script, char **err)
{
    const char *prog = getenv("GNUPLOT");
    if (!prog || !*prog) prog = "gnuplot";
    pid_t pid = fork();
    if (pid < 0) { *err = xasprintf("fork: %s", strerror(errno)); return -1; }
    if (pid == 0) {
        if (chdir(dir)) _exit(126);
        execlp(prog, prog, script, (char *)NULL);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0) { *err = xasprintf("waitpid: %s", strerror(errno)); return -1; }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127) { *err = xasprintf("%s: not found (install gnuplot, or set GNUPLOT)", prog); return -1; }
    if (!WIFEXITED(st) || WEXITSTATUS(st)) { *err = xasprintf("%s %s/%s failed", prog, dir, script); return -1; }
    return 0;
}

/* Both terminals from one script: PNG (cairo when there, else libgd) and SVG. */
static void gp_terminals(sbuf *g, const char *base, const char *plot)
{
    sbuf_printf(g, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 960,540 } "
                   "else { set terminal png size 960,540 }\nset output '%s.png'\n%s\n"
                   "set terminal svg size 960,540\nset output '%s.svg'\n%s\nset output\n", base, plot, base, plot);
}

static char *gp_quote(const char *s)   /* a gnuplot single-quoted string */
{
    sbuf b;
    sbuf_init(&b);
    sbuf_putc(&b, '\'');
    for (; *s; s++) { if (*s == '\'') sbuf_putc(&b, '\''); sbuf_putc(&b, *s); }
    sbuf_putc(&b, '\'');
    return sbuf_detach(&b);
}

static int scores_plot(const json_t *rep, const char *dir, char **err)
{
    const json_t *models = json_object_get(rep, "models"), *scores = json_object_get(rep, "scores");
    sbuf d, p, g;
    sbuf_init(&d); sbuf_init(&p); sbuf_init(&g);
    sbuf_puts(&d, "# set");
    size_t i;
    json_t *mv;
    json_array_foreach(models, i, mv) sbuf_printf(&d, " \"%s\" lo hi", json_string_value(mv));
    sbuf_putc(&d, '\n');
    for (int s = 0; s < EVAL_NSETS; s++) {
        sbuf_printf(&d, "\"%s\"", set_titles[s]);
        json_array_foreach(models, i, mv) {
            const json_t *sc = json_object_get(json_object_get(scores, json_string_value(mv)), evalset_names[s]);
            if (sc) sbuf_printf(&d, " %.3f %.3f %.3f", json_number_value(json_object_get(sc, "score")),
                                json_number_value(json_object_get(sc, "lo")), json_number_value(json_object_get(sc, "hi")));
            else sbuf_puts(&d, " NaN NaN NaN");
        }
        sbuf_putc(&d, '\n');
    }
    sbuf_puts(&p, "plot ");
    json_array_foreach(models, i, mv) {
        char *t = gp_quote(json_string_value(mv));
        sbuf_printf(&p, "%s'scores.dat' using %zu:%zu:%zu title %s", i ? ", " : "", 2 + 3 * i, 3 + 3 * i, 4 + 3 * i, t);
        /* gnuplot cycles 8 colours: the ninth model on is hatched, so no
         * two bars look alike (the small profile's table has 11 rows). */
        if (i >= 8) sbuf_printf(&p, " fs pattern %zu border -1", 4 + (i / 8) % 4);
        free(t);
    }
    /* A clustered histogram centres cluster k on x = k, so the set names
     * are tics there, on two lines (the first space broken): the long
     * names overlap on one line.  The key sits in the headroom above 100,
     * leaving the plot the full width. */
    sbuf_puts(&g, "set style data histogram\nset style histogram errorbars gap 1 lw 1\n"
                  "set style fill solid 0.7 border -1\nset yrange [0:120]\nset ytics 0,20,100\n"
                  "set ylabel 'score (0-100), 95% CI'\nset grid ytics\n"
                  "set key inside top center horizontal\nset title 'HAT evaluation: four sets'\n"
                  "set bmargin 4\n");
    sbuf_printf(&g, "set xrange [-0.5:%d.5]\nset xtics nomirror (", EVAL_NSETS - 1);
    for (int s = 0; s < EVAL_NSETS; s++) {
        const char *t = set_titles[s], *sp = strchr(t, ' ');
        if (sp) sbuf_printf(&g, "%s\"%.*s\\n%s\" %d", s ? ", " : "", (int)(sp - t), t, sp + 1, s);
        else sbuf_printf(&g, "%s\"%s\" %d", s ? ", " : "", t, s);
    }
    sbuf_puts(&g, ")\n");
    gp_terminals(&g, "scores", p.s);
    int rc = put_file(dir, "scores.dat", d.s, err) || put_file(dir, "scores.gp", g.s, err) ||
             run_gnuplot(dir, "scores.gp", err) ? -1 : 0;
    sbuf_free(&d); sbuf_free(&p); sbuf_free(&g);
    return rc;
}

static int curves_plot(const report *r, const char *dir, char **err)
{
    sbuf d, p, g;
    sbuf_init(&d); sbuf_init(&p); sbuf_init(&g);
    sbuf_puts(&p, "plot ");
    for (int i = 0; i < r->nr; i++) {
        const run *u = &r->runs[i];
        sbuf_printf(&d, "# %s\n", u->name);
        for (size_t k = 0; k < u->n; k++) sbuf_printf(&d, "%.17g %.9g\n", u->x[k], u->y[k]);
        sbuf_puts(&d, "\n\n");
        char *t = gp_quote(u->name);
        sbuf_printf(&p, "%s'curves.dat' index %d using 1:2 with lines lw 2 title %s", i ? ", " : "", i, t);
        free(t);
    }
    char *ylab = gp_quote(r->metric ? r->metric : "loss");
    sbuf_printf(&g, "set xlabel 'step'\nset ylabel %s\nset grid\nset key outside right top\n"
                    "set title 'training curves'\n", ylab);
    free(ylab);
    gp_terminals(&g, "curves", p.s);
    int rc = put_file(dir, "curves.dat", d.s, err) || put_file(dir, "curves.gp", g.s, err) ||
             run_gnuplot(dir, "curves.gp", err) ? -1 : 0;
    sbuf_free(&d); sbuf_free(&p); sbuf_free(&g);
    return rc;
}

int report_plots(const report *r, const json_t *rep, const char *dir, char **err)
{
    *err = NULL;
    if (mkdir(dir, 0777) && errno != EEXIST) { *err = xasprintf("%s: %s", dir, strerror(errno)); return -1; }
    if (json_array_size(json_object_get(rep, "models")) && scores_plot(rep, dir, err)) return -1;
    if (r->nr && curves_plot(r, dir, err)) return -1;
    return 0;
}
