/* evalset.c — building the four evaluation sets (evalset.h).
 *
 * Everything a set is made of comes from the eval side of the data: the
 * eval phrasing banks and eval products of task-gen, the held-out HSA
 * vocabulary, general-gen's eval split and the banks of data/eval/sets.json.
 * Each agent case is played once by the scripted teacher before it is
 * written (and, for a harness variant, its trajectory relabelled by HSA),
 * so every case is known to be solvable; a draw that is not is redrawn
 * from another index, which keeps case i a function of (seed, set, i). */
#include "evalset.h"

#include "chat.h"
#include "general.h"
#include "hsa.h"
#include "jsonl.h"
#include "progress.h"
#include "sim.h"
#include "tasks.h"
#include "teacher.h"
#include "util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

const char *const evalset_names[EVAL_NSETS] = { "live", "variant", "robust", "ifeval" };

#define MAX_COMBOS 32
#define MAX_DRAWS  64          /* redraws before a case is given up */
#define REDRAW_STRIDE 10000000L /* index offset of redraw k: far past any set size */

typedef struct { char *name; hsa_opts o; } combo;

struct evalset {
    const world  *w;
    const json_t *h;
    json_t       *cfg;          /* data/eval/sets.json, or evalset_src.config */
    char         *cfgname;      /* its name in messages */
    taskgen      *tg;           /* the split's task banks (eval) */
    hsa_vocab    *hv;           /* the variants' vocabulary (held-out) */
    general_gen  *gg;
    teacher      *t;
    sim          *s;
    json_t       *ifeval_in;    /* array of original prompts, or NULL */
    combo         combos[MAX_COMBOS];
    int           ncombos;
    hsa_opts      prompt_opts;
    double        live_faults;
    const char   *intents[TASK_N_INTENTS];   /* evalset_set_intents: the only ones drawn */
    int           nintents;
};

/* ---- names and ids ------------------------------------------------------------------ */

int evalset_set_index(const char *name)
{
    for (int i = 0; i < EVAL_NSETS; i++)
        if (!strcmp(name, evalset_names[i])) return i;
    return -1;
}

int evalset_parse_sets(const char *list, char **bad)
{
    int mask = 0;
    char *copy = xstrdup(list), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "all")) { mask = (1 << EVAL_NSETS) - 1; continue; }
        int s = evalset_set_index(tok);
        if (s < 0) { *bad = xstrdup(tok); free(copy); return -1; }
        mask |= 1 << s;
    }
    free(copy);
    if (!mask) { *bad = xstrdup(list); return -1; }
    return mask;
}

char *evalset_case_id(int set, long i) { return xasprintf("%s-%06ld", evalset_names[set], i); }

int evalset_id_set(const char *id)
{
    const char *dash = id ? strchr(id, '-') : NULL;
    if (!dash) return -1;
    for (int i = 0; i < EVAL_NSETS; i++)
        if ((size_t)(dash - id) == strlen(evalset_names[i]) && !strncmp(id, evalset_names[i], dash - id))
            return i;
    return -1;
}

/* ---- loading ------------------------------------------------------------------------ */

static int load_combo(combo *c, const json_t *j, const char *cfgname, char **err)
{
    const char *name = json_string_value(json_object_get(j, "name"));
    const char *dims = json_string_value(json_object_get(j, "dims"));
    json_t *p = json_object_get(j, "p");
    if (!name || !dims || !json_is_number(p)) {
        *err = xasprintf("%s: a combo needs name, dims and p", cfgname);
        return -1;
    }
    const char *bad = NULL;
    hsa_opts_default(&c->o);
    if (hsa_opts_dims(&c->o, dims, json_number_value(p), &bad)) {
        *err = xasprintf("%s: combo %s: unknown dimension '%s'", cfgname, name, bad ? bad : dims);
        return -1;
    }
    c->name = xstrdup(name);
    return 0;
}

static json_t *load_ifeval_input(const char *path, char **err)
{
    jsonl_reader *r = jsonl_open(path, 0);
    if (!r) { *err = xasprintf("%s: cannot read", path); return NULL; }
    json_t *all = json_array(), *v;
    int k;
    while ((k = jsonl_next(r, &v)) == 1) {
        if (!json_is_string(json_object_get(v, "prompt")) ||
            !json_is_array(json_object_get(v, "instruction_id_list")) ||
            !json_is_array(json_object_get(v, "kwargs"))) {
            *err = xasprintf("%s:%ld: an IFEval prompt needs prompt, instruction_id_list and kwargs",
                             jsonl_name(r), jsonl_line(r));
            json_decref(v);
            k = -2;
            break;
        }
        json_array_append_new(all, v);
    }
    if (jsonl_close(r) || k < 0) {
        if (!*err) *err = xasprintf("%s: cannot read", path);
        json_decref(all);
        return NULL;
    }
    return all;
}

evalset *evalset_new(const world *w, const json_t *h, const evalset_src *src, char **err)
{
    static const evalset_src none;
    if (!src) src = &none;
    *err = NULL;
    evalset *e = xcalloc(1, sizeof *e);
    e->w = w;
    e->h = h;
    if (src->config) {
        e->cfgname = xstrdup(src->config);
        e->cfg = json_load_path(src->config);
    } else {
        char *path = hat_data_path("eval/sets.json");
        if (!path) { *err = xstrdup("data file eval/sets.json not found (set HAT_DATA)"); goto fail; }
        e->cfgname = xstrdup("eval/sets.json");
        e->cfg = json_load_path(path);
        free(path);
    }
    if (!json_is_object(e->cfg)) { *err = xasprintf("%s: cannot load (a JSON object)", e->cfgname); goto fail; }
    const char *split = src->split ? src->split : "eval";
    if (!(e->tg = taskgen_new(w, split))) { *err = xasprintf("cannot load the %s task banks", split); goto fail; }
    const json_t *var = json_object_get(e->cfg, "variant");
    const char *vocab = json_string_value(json_object_get(var, "vocab"));
    if (!(e->hv = hsa_vocab_load(vocab ? vocab : "heldout"))) {
        *err = xasprintf("%s: cannot load the HSA vocabulary '%s'", e->cfgname, vocab ? vocab : "heldout");
        goto fail;
    }
    size_t i;
    json_t *cj;
    json_array_foreach(json_object_get(var, "combos"), i, cj) {
        if (e->ncombos == MAX_COMBOS || load_combo(&e->combos[e->ncombos], cj, e->cfgname, err)) {
            if (!*err) *err = xasprintf("%s: too many combos", e->cfgname);
            goto fail;
        }
        e->ncombos++;
    }
    if (!e->ncombos) { *err = xasprintf("%s: no variant combos", e->cfgname); goto fail; }
    combo pc;
    if (load_combo(&pc, json_object_get(json_object_get(e->cfg, "robust"), "prompt"), e->cfgname, err)) {
        free(*err);
        *err = xasprintf("%s: robust.prompt needs name, dims and p", e->cfgname);
        goto fail;
    }
    e->prompt_opts = pc.o;
    free(pc.name);
    json_t *lf = json_object_get(json_object_get(e->cfg, "live"), "faults");
    e->live_faults = json_is_number(lf) ? json_number_value(lf) : 0.15;
    if (!(e->gg = general_load(NULL, err))) goto fail;
    if (!(e->t = teacher_new())) { *err = xstrdup("cannot load the teacher's banks"); goto fail; }
    e->s = sim_new(w);
    if (src->ifeval_input && !(e->ifeval_in = load_ifeval_input(src->ifeval_input, err))) goto fail;
    return e;
fail:
    evalset_free(e);
    return NULL;
}

void evalset_free(evalset *e)
{
    if (!e) return;
    json_decref(e->cfg);
    free(e->cfgname);
    taskgen_free(e->tg);
    hsa_vocab_free(e->hv);
    general_free(e->gg);
    teacher_free(e->t);
    sim_free(e->s);
    json_decref(e->ifeval_in);
    for (int i = 0; i < e->ncombos; i++) free(e->combos[i].name);
    free(e);
}

int evalset_set_intents(evalset *e, const char *list, char **bad)
{
    *bad = NULL;
    e->nintents = 0;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        const char *name = task_intent_name(p, n);
        if (!name) { *bad = xstrndup(p, n); return -1; }
        int dup = 0;
        for (int i = 0; i < e->nintents; i++) dup |= e->intents[i] == name;
        if (!dup) e->intents[e->nintents++] = name;
        p += n + (p[n] == ',');
    }
    if (!e->nintents) { *bad = xstrdup(""); return -1; }
    return 0;
}

/* The intent of case i of a set: NULL (the default mix) unless
 * evalset_set_intents chose some, then each in turn, so that every one is
 * equally represented. */
static const char *intent_of(const evalset *e, long i)
{
    return e->nintents ? e->intents[i % e->nintents] : NULL;
}

/* Whether intent may be drawn: one of those chosen, or any when none was. */
static int intent_chosen(const evalset *e, const char *intent)
{
    for (int i = 0; i < e->nintents; i++) if (!strcmp(e->intents[i], intent)) return 1;
    return !e->nintents;
}

int evalset_add_bank(evalset *e, const char *path)
{
    if (hsa_vocab_add_bank(e->hv, path) < 0) return -1;
    size_t total, covered = hsa_vocab_bank_coverage(e->hv, e->h, &total);
    if (!covered) {
        hat_errat(path, 0, "no %s alternative for any of the harness's %zu texts "
                  "(a bank for another harness?)", hsa_vocab_split(e->hv), total);
        return -1;
    }
    return 0;
}

long evalset_default_size(const evalset *e, int set)
{
    if (set == EVAL_IFEVAL && e->ifeval_in) return (long)json_array_size(e->ifeval_in);
    json_t *v = json_object_get(json_object_get(e->cfg, "sizes"), evalset_names[set]);
    return json_is_integer(v) ? (long)json_integer_value(v) : 0;
}

void evalset_sizes_each(const evalset *e, long n, long size[EVAL_NSETS])
{
    for (int s = 0; s < EVAL_NSETS; s++) size[s] = n;
    if (e->ifeval_in && size[EVAL_IFEVAL] > (long)json_array_size(e->ifeval_in))
        size[EVAL_IFEVAL] = (long)json_array_size(e->ifeval_in);
}

void evalset_sizes(const evalset *e, long n, long size[EVAL_NSETS])
{
    long total = 0;
    for (int s = 0; s < EVAL_NSETS; s++) total += size[s] = evalset_default_size(e, s);
    if (n <= 0 || total <= 0) return;
    for (int s = 0; s < EVAL_NSETS; s++) {
        long k = (long)((double)size[s] * n / total + 0.5);
        size[s] = k < 1 ? 1 : k;
    }
    if (e->ifeval_in && size[EVAL_IFEVAL] > (long)json_array_size(e->ifeval_in))
        size[EVAL_IFEVAL] = (long)json_array_size(e->ifeval_in);
}

/* ---- small helpers -------------------------------------------------------------------- */

static const char *pick(const json_t *arr, rng_t *r)
{
    size_t n = json_array_size(arr);
    return n ? json_string_value(json_array_get(arr, rng_below(r, n))) : "";
}

static const json_t *robust_cfg(const evalset *e, const char *key)
{
    return json_object_get(json_object_get(e->cfg, "robust"), key);
}

/* Seed of a set: mixed so that the sets draw unrelated tasks.  Live uses
 * the seed itself, so its tasks are task-gen --split eval's. */
static uint64_t set_seed(uint64_t seed, int set)
{
    return set == EVAL_LIVE || set == EVAL_IFEVAL ? seed : mix64(seed ^ (0x65766173ull * (uint64_t)(set + 1)));
}

/* The HSA dimensions of an ops list, each once, in hsa_dim_names order. */
static json_t *ops_dims(const json_t *ops)
{
    json_t *dims = json_array();
    for (int d = 0; d < HSA_NDIMS; d++) {
        size_t i;
        json_t *op;
        json_array_foreach(ops, i, op)
            if (!strcmp(json_string_value(json_object_get(op, "dim")) ?: "", hsa_dim_names[d])) {
                json_array_append_new(dims, json_string(hsa_dim_names[d]));
                break;
            }
    }
    return dims;
}

static json_t *fault_types(const json_t *task)
{
    json_t *out = json_array();
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(task, "faults"), i, f)
        json_array_append(out, json_object_get(f, "type"));
    return out;
}

/* The teacher plays task under h: 0 when it can (the trajectory's
 * messages go to *msgs if asked), -1 when no correct play exists. */
static int teacher_can(evalset *e, const json_t *task, const json_t *h, uint64_t seed, json_t **msgs)
{
    char *err = NULL;
    if (sim_set_harness(e->s, h, &err)) { free(err); return -1; }
    rng_t r;
    rng_derive(&r, seed, 0);
    teacher_opts to = { 0, 0 };
    json_t *m = teacher_run(e->t, e->s, task, &r, &to, NULL, &err);
    sim_set_harness(e->s, e->h, NULL);
    free(err);
    if (!m) return -1;
    if (msgs) *msgs = m; else json_decref(m);
    return 0;
}

/* A held-out variant of the production harness that the teacher's play of
 * task relabels into: the new harness (new ref) and its ops, or NULL. */
static json_t *variant_for(evalset *e, const json_t *task, const hsa_opts *o, uint64_t seed,
                           uint64_t stream, json_t **ops)
{
    json_t *msgs = NULL;
    if (teacher_can(e, task, e->h, seed, &msgs)) return NULL;
    json_t *rec = json_pack("{s:O,s:o}", "harness", (json_t *)e->h, "messages", msgs);
    const char *err = NULL;
    json_t *out = hsa_augment_record(NULL, e->hv, o, rec, e->h, seed, stream, 0, &err);
    json_decref(rec);
    if (!out) return NULL;
    json_t *meta = json_object_get(out, "meta"), *h = NULL;
    if (json_is_true(json_object_get(meta, "hsa_valid")) && json_array_size(json_object_get(meta, "hsa"))) {
        h = json_incref(json_object_get(out, "harness"));
        *ops = json_incref(json_object_get(meta, "hsa"));
    }
    json_decref(out);
    if (h && teacher_can(e, task, h, seed, NULL)) {   /* the teacher must manage it too */
        json_decref(h);
        json_decref(*ops);
        h = NULL;
    }
    return h;
}

/* {"id","set","task","harness","meta"} around a task (steals task, h). */
static json_t *agent_case(int set, long i, json_t *task, json_t *h, json_t *ops, json_t *extra)
{
    char *id = evalset_case_id(set, i);
    json_t *src = json_object_get(task, "id");
    json_t *meta = json_pack("{s:O,s:o,s:o,s:O}", "intent", json_object_get(task, "intent"),
                             "faults", fault_types(task), "hsa", ops_dims(ops), "source", src);
    if (extra) json_object_update(meta, extra);
    json_object_set_new(task, "id", json_string(id));
    if (json_array_size(ops)) json_object_set(task, "hsa", ops);
    json_t *c = json_pack("{s:s,s:s,s:o,s:o,s:o}", "id", id, "set", evalset_names[set],
                          "task", task, "harness", h, "meta", meta);
    free(id);
    return c;
}

/* ---- the sets ----------------------------------------------------------------------- */

static json_t *live_case(evalset *e, uint64_t seed, long i)
{
    for (int k = 0; k < MAX_DRAWS; k++) {
        json_t *task = taskgen_make(e->tg, seed, i + k * REDRAW_STRIDE, intent_of(e, i), e->live_faults);
        if (task && !teacher_can(e, task, e->h, seed ^ (uint64_t)i, NULL))
            return agent_case(EVAL_LIVE, i, task, json_deep_copy(e->h), NULL, NULL);
        json_decref(task);
    }
    return NULL;
}

static json_t *variant_case(evalset *e, uint64_t seed, long i)
{
    const combo *c = &e->combos[i % e->ncombos];
    for (int k = 0; k < MAX_DRAWS; k++) {
        json_t *task = taskgen_make(e->tg, seed, i + k * REDRAW_STRIDE, intent_of(e, i / e->ncombos), e->live_faults), *ops = NULL;
        json_t *h = task ? variant_for(e, task, &c->o, seed, (uint64_t)i * MAX_DRAWS + k, &ops) : NULL;
        if (h) {
            json_t *extra = json_pack("{s:s}", "combo", c->name);
            json_t *out = agent_case(EVAL_VARIANT, i, task, h, ops, extra);
            json_decref(ops);
            json_decref(extra);
            return out;
        }
        json_decref(task);
    }
    return NULL;
}

/* Words of text as byte ranges, each marked when it overlaps a mention. */
static int in_mention(const char *text, size_t a, size_t b, const json_t *mentions)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)mentions, k, v) {
        char *s = json_is_string(v) ? xstrdup(json_string_value(v)) : json_is_number(v) ? json_dumps(v, JSON_ENCODE_ANY) : NULL;
        if (!s || !*s) { free(s); continue; }
        size_t n = strlen(s);
        for (const char *p = strstr(text, s); p; p = strstr(p + 1, s)) {
            size_t x = (size_t)(p - text);
            if (x < b && x + n > a) { free(s); return 1; }
        }
        free(s);
    }
    return 0;
}

static int ascii_word(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) if (!isalpha((unsigned char)s[i])) return 0;
    return n > 0;
}

char *evalset_noise(const evalset *e, const char *text, const json_t *mentions, rng_t *r)
{
    const json_t *nz = robust_cfg(e, "noise");
    double pf = json_number_value(json_object_get(nz, "p_filler"));
    double pu = json_number_value(json_object_get(nz, "p_upper"));
    double ps = json_number_value(json_object_get(nz, "p_stretch"));
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, pick(json_object_get(nz, "prefix"), r));
    for (size_t i = 0; text[i];) {
        if (text[i] == ' ') { sbuf_putc(&b, ' '); i++; continue; }
        size_t j = i;
        while (text[j] && text[j] != ' ') j++;
        /* Only plain words outside every slot value are touched. */
        if (ascii_word(text + i, j - i) && !in_mention(text, i, j, mentions)) {
            if (rng_chance(r, pf)) { sbuf_puts(&b, pick(json_object_get(nz, "filler"), r)); sbuf_putc(&b, ' '); }
            int up = rng_chance(r, pu), st = j - i > 1 && rng_chance(r, ps);
            for (size_t k = i; k < j; k++) sbuf_putc(&b, up ? (char)toupper((unsigned char)text[k]) : text[k]);
            if (st) for (int k = 0; k < 2; k++) sbuf_putc(&b, up ? (char)toupper((unsigned char)text[j - 1]) : text[j - 1]);
        } else sbuf_add(&b, text + i, j - i);
        i = j;
    }
    sbuf_puts(&b, pick(json_object_get(nz, "suffix"), r));
    return sbuf_detach(&b);
}

static void set_text(json_t *task, char *text)
{
    json_object_set_new(json_object_get(task, "viewer"), "text", json_string(text));
    free(text);
}

/* One robust task of kind: the eval task with its fault, text or harness
 * changed.  *h receives the harness (new ref), *ops the HSA ops if any. */
static json_t *robust_task(evalset *e, const char *kind, uint64_t seed, long i, int k, rng_t *r,
                           json_t **h, json_t **ops)
{
    long idx = i + k * REDRAW_STRIDE;
    *h = NULL;
    *ops = NULL;
    json_t *task;
    /* Case i is kind i % nkinds: the kind's own count picks the intent. */
    long nkinds = (long)json_array_size(robust_cfg(e, "kinds"));
    const char *intent = intent_of(e, i / nkinds);
    if (!strcmp(kind, "fault")) {
        /* A tool intent, of those chosen when there is one (a task without
         * calls has nothing to fault and is drawn again). */
        const char *ti = pick(robust_cfg(e, "tool_intents"), r);
        task = taskgen_make(e->tg, seed, idx, intent_chosen(e, ti) ? ti : intent_of(e, i / nkinds + k), 0);
        size_t nc = task ? json_array_size(json_object_get(json_object_get(task, "gold"), "calls")) : 0;
        if (!nc) { json_decref(task); return NULL; }
        const json_t *types = robust_cfg(e, "fault_types");
        /* Every type in turn, so each is equally represented. */
        const char *type = json_string_value(json_array_get(types, (size_t)(i / nkinds) % json_array_size(types)));
        json_object_set_new(task, "faults", json_pack("[{s:I,s:s,s:I}]", "call", (json_int_t)rng_below(r, nc),
                                                      "type", type, "times", (json_int_t)(1 + rng_below(r, 3))));
    } else if (!strcmp(kind, "injection")) {
        const json_t *inj = robust_cfg(e, "injection");
        if (rng_chance(r, json_number_value(json_object_get(inj, "p_intent"))) && intent_chosen(e, "injection"))
            task = taskgen_make(e->tg, seed, idx, "injection", 0);
        else {
            task = taskgen_make(e->tg, seed, idx, intent, 0);
            const char *t = json_string_value(json_object_get(json_object_get(task, "viewer"), "text"));
            if (task) set_text(task, xasprintf("%s%s", t ? t : "", pick(json_object_get(inj, "suffix"), r)));
        }
    } else {
        task = taskgen_make(e->tg, seed, idx, intent, 0);
        if (!task) return NULL;
        const char *t = json_string_value(json_object_get(json_object_get(task, "viewer"), "text"));
        if (!t) t = "";
        if (!strcmp(kind, "noisy"))
            set_text(task, evalset_noise(e, t, json_object_get(json_object_get(task, "context"), "mentions"), r));
        else if (!strcmp(kind, "adversarial")) {
            const json_t *adv = robust_cfg(e, "adversarial");
            int which = (int)rng_below(r, 3);   /* prefix, suffix, both */
            set_text(task, xasprintf("%s%s%s", which != 1 ? pick(json_object_get(adv, "prefix"), r) : "", t,
                                     which != 0 ? pick(json_object_get(adv, "suffix"), r) : ""));
        } else if (!strcmp(kind, "prompt")) {
            *h = variant_for(e, task, &e->prompt_opts, seed, (uint64_t)i * MAX_DRAWS + k, ops);
            if (!*h) { json_decref(task); return NULL; }
        }
    }
    if (task && !*h) *h = json_deep_copy(e->h);
    if (task && teacher_can(e, task, *h, seed ^ (uint64_t)i, NULL)) {
        json_decref(task);
        json_decref(*h);
        json_decref(*ops);
        *h = *ops = NULL;
        return NULL;
    }
    return task;
}

static json_t *robust_case(evalset *e, uint64_t seed, long i)
{
    const json_t *kinds = robust_cfg(e, "kinds");
    if (!json_array_size(kinds)) return NULL;
    const char *kind = json_string_value(json_array_get(kinds, (size_t)i % json_array_size(kinds)));
    for (int k = 0; k < MAX_DRAWS; k++) {
        rng_t r;
        rng_derive(&r, seed, (uint64_t)i * MAX_DRAWS + k);
        json_t *h, *ops, *task = robust_task(e, kind, seed, i, k, &r, &h, &ops);
        if (!task) continue;
        json_t *extra = json_pack("{s:s}", "kind", kind);
        json_t *c = agent_case(EVAL_ROBUST, i, task, h, ops, extra);
        json_decref(extra);
        json_decref(ops);
        return c;
    }
    return NULL;
}

/* The instruction categories (the id before ':'), each once. */
static json_t *categories(const json_t *ids)
{
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v) {
        const char *s = json_string_value(v);
        if (!s) continue;
        const char *c = strchr(s, ':');
        json_t *cat = c ? json_stringn(s, (size_t)(c - s)) : json_string(s);
        size_t j;
        json_t *w;
        int seen = 0;
        json_array_foreach(out, j, w) if (json_equal(w, cat)) seen = 1;
        if (seen) json_decref(cat); else json_array_append_new(out, cat);
    }
    return out;
}

static json_t *ifeval_case(evalset *e, uint64_t seed, long i, char **err)
{
    json_t *prompt = NULL, *ids = NULL, *kwargs = NULL, *ref = NULL, *meta;
    if (e->ifeval_in) {
        json_t *p = json_array_get(e->ifeval_in, (size_t)i);
        if (!p) { *err = xasprintf("only %zu IFEval prompts were given", json_array_size(e->ifeval_in)); return NULL; }
        prompt = json_object_get(p, "prompt");
        ids = json_object_get(p, "instruction_id_list");
        kwargs = json_object_get(p, "kwargs");
        meta = json_pack("{s:s,s:O}", "source", "ifeval", "key", json_object_get(p, "key") ?: json_null());
        json_incref(p);
        ref = p;   /* held for the borrowed values */
    } else {
        const json_t *tcfg = json_object_get(json_object_get(e->cfg, "ifeval"), "tries");
        int tries = json_is_integer(tcfg) ? (int)json_integer_value(tcfg) : 20, redraws;
        json_t *rec = NULL;
        /* A record without constraints checks nothing: draw again. */
        for (int k = 0; k < MAX_DRAWS && !rec; k++) {
            rec = general_make(e->gg, general_split("eval"), seed, i + k * REDRAW_STRIDE, tries, &redraws);
            if (rec && !json_array_size(json_object_get(rec, "instruction_id_list"))) { json_decref(rec); rec = NULL; }
        }
        if (!rec) { *err = xasprintf("ifeval case %ld: no record could be drawn", i); return NULL; }
        prompt = json_object_get(rec, "prompt");
        ids = json_object_get(rec, "instruction_id_list");
        kwargs = json_object_get(rec, "kwargs");
        meta = json_pack("{s:O}", "source", json_object_get(rec, "id"));
        ref = rec;
    }
    json_object_set_new(meta, "instructions", categories(ids));
    json_t *msgs = json_pack("[{s:s,s:O}]", "role", "user", "content", prompt);
    char *cerr = NULL, *text = chat_render_generation_prompt(msgs, NULL, CHAT_THINK_OFF, &cerr);
    if (!text) { *err = xasprintf("ifeval case %ld: %s", i, cerr); free(cerr); json_decref(msgs); json_decref(meta); json_decref(ref); return NULL; }
    char *id = evalset_case_id(EVAL_IFEVAL, i);
    /* "text" is for reading; a model is prompted with "messages" and
     * "enable_thinking" (generate, prompt_encode), so that a prompt holding
     * "<|im_start|>" or "<tool_call>" stays text, as every viewer's does. */
    json_t *c = json_pack("{s:s,s:s,s:O,s:O,s:O,s:o,s:b,s:s}", "id", id, "set", "ifeval", "prompt", prompt,
                          "instruction_id_list", ids, "kwargs", kwargs, "messages", msgs,
                          "enable_thinking", 0, "text", text);
    /* The answer general-gen built to satisfy the constraints: what a
     * perfect model could say (report's reference row, diagnose examples). */
    const json_t *amsg = json_array_get(json_object_get(ref, "messages"), 1);
    if (amsg) json_object_set(c, "reference", json_object_get(amsg, "content"));
    json_object_set_new(c, "meta", meta);
    free(id);
    free(text);
    json_decref(ref);
    return c;
}

json_t *evalset_case(evalset *e, int set, uint64_t seed, long i, char **err)
{
    *err = NULL;
    uint64_t s = set_seed(seed, set);
    json_t *c = NULL;
    switch (set) {
    case EVAL_LIVE:    c = live_case(e, s, i); break;
    case EVAL_VARIANT: c = variant_case(e, s, i); break;
    case EVAL_ROBUST:  c = robust_case(e, s, i); break;
    case EVAL_IFEVAL:  return ifeval_case(e, s, i, err);
    default: *err = xasprintf("no set %d", set); return NULL;
    }
    if (!c) *err = xasprintf("%s case %ld: no solvable case in %d draws", evalset_names[set], i, MAX_DRAWS);
    return c;
}

int evalset_build(evalset *e, int mask, const long size[EVAL_NSETS], uint64_t seed,
                  evalset_emit_fn emit, void *arg, char **err)
{
    *err = NULL;
    long total = 0, done = 0;
    for (int s = 0; s < EVAL_NSETS; s++) if (mask & (1 << s)) total += size[s];
    progress *pg = progress_start(NULL, "cases", total);
    int rc = 0;
    for (int s = 0; s < EVAL_NSETS && !rc; s++) {
        if (!(mask & (1 << s))) continue;
        progress_status(pg, "%s", evalset_names[s]);
        for (long i = 0; i < size[s] && !rc; i++) {
            json_t *c = evalset_case(e, s, seed, i, err);
            if (!c) { rc = -1; break; }
            rc = emit(arg, c) ? -1 : 0;
            json_decref(c);
            progress_update(pg, ++done, 0);
        }
    }
    progress_end(pg);
    return rc;
}
