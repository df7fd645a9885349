/* test_hsa.c — harness-state augmentation: known answers for the helpers,
 * the vocabularies (coverage of the example harness, train/held-out
 * disjointness), and property tests over hundreds of variants: functions
 * never change, names stay unique, harness_lint stays clean, relabelled
 * trajectories stay consistent, constraints hold, same seed → same bytes. */
#include "test.h"
#include "harness.h"
#include "hsa.h"
#include "harness_compile.h"
#include "jsonl.h"
#include "judge.h"
#include "rng.h"
#include "sim.h"
#include "tasks.h"
#include "teacher.h"
#include "util.h"
#include "world.h"

#include <sys/stat.h>

static const char *top(void)
{
    const char *t = getenv("HAT_TOP");
    return t ? t : ".";
}

static json_t *example(void)
{
    char *p = xasprintf("%s/examples/harness", top());
    json_t *h = harness_load(p);
    free(p);
    return h;
}

static json_t *fixture(void)
{
    char *p = xasprintf("%s/tests/fixtures/hsa/traj.jsonl", top());
    jsonl_reader *r = jsonl_open(p, 0);
    json_t *all = json_array(), *v;
    while (r && jsonl_next(r, &v) == 1) json_array_append_new(all, v);
    if (r) jsonl_close(r);
    free(p);
    return all;
}

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* ---- helpers: known answers -------------------------------------------------- */

static void template_match_and_keys(void)
{
    json_t *v = json_object();
    CHECK(hsa_template_match("ERROR {code}: {message}", "ERROR 504: timeout: again", v));
    CHECK_STR(str(v, "code"), "504");
    CHECK_STR(str(v, "message"), "timeout: again");
    json_object_clear(v);
    CHECK(!hsa_template_match("ERROR {code}: {message}", "Error 504: timeout", v));
    json_object_clear(v);
    CHECK(hsa_template_match("{tool} failed ({code})", "get_item failed (500)", v));
    CHECK_STR(str(v, "tool"), "get_item");
    json_decref(v);
    char *k = hsa_template_keys("{tool}: {message} [{code}] {tool}");
    CHECK_STR(k, "code,message,tool");
    free(k);
}

static void style_join_and_replace(void)
{
    const char *w[] = { "live", "price", "helper" };
    char *s;
    CHECK_STR(s = hsa_style_join(HSA_SNAKE, w, 3), "live_price_helper"); free(s);
    CHECK_STR(s = hsa_style_join(HSA_CAMEL, w, 3), "livePriceHelper"); free(s);
    CHECK_STR(s = hsa_style_join(HSA_KEBAB, w, 2), "live-price"); free(s);
    const char *w2[] = { "item", "" };
    CHECK_STR(s = hsa_style_join(HSA_CAMEL, w2, 2), "item"); free(s);
    CHECK_STR(s = hsa_replace_word("call get_product, not get_products or xget_product",
                                   "get_product", "fetchItem"),
              "call fetchItem, not get_products or xget_product");
    free(s);
}

/* ---- vocabularies ---------------------------------------------------------------- */

static int covered(const hsa_vocab *v, const char *section, const char *text)
{
    rng_t r;
    rng_seed(&r, 1);
    const char *alt = hsa_paraphrase(v, &r, section, text);
    if (!alt) fprintf(stderr, "  %s: no paraphrase in %s for \"%s\"\n", hsa_vocab_name(v), section, text);
    return alt && strcmp(alt, text);
}

static void vocab_covers_every_text_of_the_example(void)
{
    json_t *h = example();
    const char *sets[] = { "train", "heldout" };
    for (int s = 0; s < 2; s++) {
        hsa_vocab *v = hsa_vocab_load(sets[s]);
        CHECK(v != NULL);
        if (!v) continue;
        size_t i, j;
        json_t *e, *x;
        json_array_foreach(json_object_get(h, "skills"), i, e) {
            CHECK(covered(v, "skill_descriptions", str(e, "description")));
            json_array_foreach(json_object_get(e, "rules"), j, x)
                CHECK(covered(v, "rules", json_string_value(x)));
        }
        json_array_foreach(json_object_get(h, "tools"), i, e) {
            CHECK(covered(v, "tool_descriptions", str(e, "description")));
            const char *k;
            json_object_foreach(json_object_get(json_object_get(e, "parameters"), "properties"), k, x)
                CHECK(covered(v, "param_descriptions", str(x, "description")));
        }
        const json_t *l = json_object_get(h, "skill_loader");
        CHECK(covered(v, "loader", str(l, "description")));
        CHECK(covered(v, "loader", str(l, "argument_description")));
        CHECK(covered(v, "loader", str(l, "preamble")));
        json_array_foreach(json_object_get(json_object_get(h, "system_prompt"), "blocks"), i, e) {
            char *sec = xasprintf("blocks/%s", str(e, "id"));
            CHECK(covered(v, sec, str(e, "text")));
            json_array_foreach(json_object_get(e, "items"), j, x) CHECK(covered(v, sec, json_string_value(x)));
            free(sec);
        }
        /* Dozens of names for every function. */
        const char *fn;
        json_t *fv;
        json_object_foreach((json_t *)json_object_get(harness_functions(), "skill_functions"), fn, fv) {
            json_t *sp = hsa_name_space(v, strcmp(fn, "distractor") ? "skill" : "distractor", fn);
            CHECK(json_object_size(sp) >= 24);
            json_decref(sp);
        }
        json_object_foreach((json_t *)json_object_get(harness_functions(), "tool_functions"), fn, fv) {
            json_t *sp = hsa_name_space(v, "tool", fn);
            CHECK(json_object_size(sp) >= 24);
            json_decref(sp);
        }
        hsa_vocab_free(v);
    }
    json_decref(h);
}

static int disjoint_sets(const json_t *a, const json_t *b, const char *what)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)a, k, v)
        if (json_object_get(b, k)) {
            fprintf(stderr, "  %s: '%s' in both vocabularies\n", what, k);
            return 0;
        }
    return 1;
}

static json_t *as_set(const json_t *arr)
{
    json_t *s = json_object();
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) if (json_is_string(e)) json_object_set_new(s, json_string_value(e), json_true());
    return s;
}

/* Every alternative list under two parallel JSON trees, compared. */
static int disjoint_lists(const json_t *a, const json_t *b, const char *where)
{
    int ok = 1;
    if (json_is_array(a) && json_is_array(b)) {
        json_t *sa = as_set(a), *sb = as_set(b);
        ok = disjoint_sets(sa, sb, where);
        json_decref(sa); json_decref(sb);
    } else if (json_is_object(a)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v)
            if (json_object_get(b, k)) ok &= disjoint_lists(v, json_object_get(b, k), k);
    }
    return ok;
}

static void vocabularies_are_disjoint(void)
{
    hsa_vocab *t = hsa_vocab_load("train"), *h = hsa_vocab_load("heldout");
    CHECK(t && h);
    if (!t || !h) return;
    const char *kinds[] = { "skill", "tool", "param" };
    const char *groups[] = { "skills", "tools", "params" };
    for (int k = 0; k < 3; k++) {
        const char *fn;
        json_t *e;
        json_object_foreach((json_t *)json_object_get(hsa_vocab_json(t, "names"), groups[k]), fn, e) {
            json_t *a = hsa_name_space(t, kinds[k], fn), *b = hsa_name_space(h, kinds[k], fn);
            CHECK(json_object_size(b) > 0);
            CHECK(disjoint_sets(a, b, fn));
            json_decref(a); json_decref(b);
        }
    }
    /* Across kinds too: no held-out name of any kind is a training name. */
    json_t *all_t = json_object(), *all_h = json_object();
    const char *extra[] = { "loader", "distractor" };
    for (int k = 0; k < 2; k++) {
        json_t *a = hsa_name_space(t, extra[k], NULL), *b = hsa_name_space(h, extra[k], NULL);
        json_object_update(all_t, a); json_object_update(all_h, b);
        json_decref(a); json_decref(b);
    }
    for (int k = 0; k < 3; k++) {
        const char *fn;
        json_t *e;
        json_object_foreach((json_t *)json_object_get(hsa_vocab_json(t, "names"), groups[k]), fn, e) {
            json_t *a = hsa_name_space(t, kinds[k], fn), *b = hsa_name_space(h, kinds[k], fn);
            json_object_update(all_t, a); json_object_update(all_h, b);
            json_decref(a); json_decref(b);
        }
    }
    CHECK(json_object_size(all_t) > 1000 && json_object_size(all_h) > 1000);
    CHECK(disjoint_sets(all_t, all_h, "names"));
    json_decref(all_t); json_decref(all_h);
    /* Paraphrases per text, templates per hook, envelope keys. */
    CHECK(disjoint_lists(hsa_vocab_json(t, "paraphrases"), hsa_vocab_json(h, "paraphrases"), "paraphrases"));
    CHECK(disjoint_lists(hsa_vocab_json(t, "hooks"), hsa_vocab_json(h, "hooks"), "hooks"));
    /* Distractor texts. */
    json_t *dt = json_array(), *dh = json_array();
    const json_t *lists[2] = { json_object_get(hsa_vocab_json(t, "names"), "distractors"),
                               json_object_get(hsa_vocab_json(h, "names"), "distractors") };
    json_t *outs[2] = { dt, dh };
    for (int s = 0; s < 2; s++) {
        size_t i;
        json_t *e;
        json_array_foreach(lists[s], i, e) {
            json_array_extend(outs[s], json_object_get(e, "descriptions"));
            json_array_extend(outs[s], json_object_get(e, "rules"));
        }
    }
    CHECK(json_array_size(dt) >= 40);
    CHECK(disjoint_lists(dt, dh, "distractors"));
    json_decref(dt); json_decref(dh);
    hsa_vocab_free(t);
    hsa_vocab_free(h);
}

static void bad_vocab_is_reported(void)
{
    char *dir = xasprintf("%s/badvocab", test_tmpdir());
    mkdir(dir, 0755);
    char *p;
    p = xasprintf("%s/names.json", dir);
    write_file_atomic(p, "{\"skill_tails\": [\"Bad Word\"]}", 29);
    free(p);
    p = xasprintf("%s/paraphrases.json", dir);
    const char *para = "{\"rules\": {\"At most {n}.\": [\"No more than n.\"]}}";
    write_file_atomic(p, para, strlen(para));
    free(p);
    p = xasprintf("%s/hooks.json", dir);
    write_file_atomic(p, "{}", 2);
    free(p);
    CHECK(hsa_vocab_load(dir) == NULL);   /* both problems are errors */
    CHECK(hsa_vocab_load("no-such-vocabulary") == NULL);
    free(dir);
}

/* ---- property tests -------------------------------------------------------------- */

/* "function" multiset (sorted list) of skills or tools, distractors left out. */
static char *functions_of(const json_t *h, const char *list)
{
    json_t *fns = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(h, list), i, e) {
        const char *f = str(e, "function");
        if (f && strcmp(f, "distractor")) json_array_append_new(fns, json_string(f));
        if (!strcmp(list, "tools")) {   /* with the x-functions of its params */
            const char *k;
            json_t *p;
            json_object_foreach(json_object_get(json_object_get(e, "parameters"), "properties"), k, p)
                json_array_append_new(fns, json_sprintf("%s/%s", f, str(p, "x-function")));
        }
    }
    size_t n = json_array_size(fns);
    const char **a = xmalloc((n + 1) * sizeof *a);
    for (i = 0; i < n; i++) a[i] = json_string_value(json_array_get(fns, i));
    for (size_t x = 1; x < n; x++)
        for (size_t y = x; y > 0 && strcmp(a[y - 1], a[y]) > 0; y--) {
            const char *t = a[y]; a[y] = a[y - 1]; a[y - 1] = t;
        }
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, "");
    for (i = 0; i < n; i++) { sbuf_puts(&b, a[i]); sbuf_putc(&b, ' '); }
    free(a);
    json_decref(fns);
    return sbuf_detach(&b);
}

/* Structural checks of one variant against its source. */
static int variant_ok(const json_t *old, const json_t *nh)
{
    int ok = 1;
    const char *lists[] = { "skills", "tools" };
    for (int l = 0; l < 2; l++) {
        char *a = functions_of(old, lists[l]), *b = functions_of(nh, lists[l]);
        if (l == 1 && strcmp(a, b)) { fprintf(stderr, "  tool functions %s != %s\n", a, b); ok = 0; }
        /* skills: masking may drop some, never add a non-distractor function */
        if (l == 0) {
            char *copy = xstrdup(b), *save = NULL;
            for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
                if (!strstr(a, t)) { fprintf(stderr, "  new skill function %s\n", t); ok = 0; }
            free(copy);
        }
        free(a); free(b);
    }
    json_t *names = json_object();
    size_t i;
    json_t *e;
    int replies = 0;
    json_array_foreach(json_object_get(nh, "skills"), i, e) {
        if (json_object_get(names, str(e, "name"))) { fprintf(stderr, "  dup skill %s\n", str(e, "name")); ok = 0; }
        json_object_set_new(names, str(e, "name"), json_true());
        replies += !strcmp(str(e, "kind"), "reply");
    }
    if (!replies) { fprintf(stderr, "  no reply skill\n"); ok = 0; }
    json_object_clear(names);
    json_object_set_new(names, harness_loader_name(nh), json_true());
    json_array_foreach(json_object_get(nh, "tools"), i, e) {
        if (json_object_get(names, str(e, "name"))) { fprintf(stderr, "  dup tool %s\n", str(e, "name")); ok = 0; }
        json_object_set_new(names, str(e, "name"), json_true());
        json_t *params = json_object_get(e, "parameters");
        size_t j;
        json_t *r;
        json_array_foreach(json_object_get(params, "required"), j, r)
            if (!json_object_get(json_object_get(params, "properties"), json_string_value(r))) {
                fprintf(stderr, "  required %s is no property\n", json_string_value(r));
                ok = 0;
            }
    }
    json_decref(names);
    json_t *problems = harness_lint(nh, NULL);
    if (json_array_size(problems)) {
        char *s = json_compact(problems);
        fprintf(stderr, "  lint: %.400s\n", s);
        free(s);
        ok = 0;
    }
    json_decref(problems);
    return ok;
}

static void harness_variants_keep_functions_and_lint_clean(void)
{
    json_t *h = example();
    hsa_vocab *vs[2] = { hsa_vocab_load("train"), hsa_vocab_load("heldout") };
    hsa_opts o;
    hsa_opts_default(&o);
    int bad = 0, changed = 0;
    for (int s = 0; s < 200; s++) {
        for (int d = 0; d < HSA_NDIMS; d++) o.p[d] = s % 2 ? 1.0 : 0.5;
        json_t *r = hsa_augment_record(NULL, vs[s % 2], &o, NULL, h, 7, (uint64_t)s, 0,
                                       &(const char *){ NULL });
        const json_t *nh = json_object_get(r, "harness");
        if (!variant_ok(h, nh)) bad++;
        changed += json_array_size(json_object_get(json_object_get(r, "meta"), "hsa")) > 10;
        json_decref(r);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(changed >= 190);
    hsa_vocab_free(vs[0]);
    hsa_vocab_free(vs[1]);
    json_decref(h);
}

/* Results (or errors) a tool response carries, under a harness. */
static json_t *payload(const json_t *h, const char *text)
{
    json_t *res = NULL;
    char *err = NULL;
    int u = harness_unwrap(h, text, &res, &err);
    json_t *out;
    if (u == 1) out = json_pack("{s:o}", "result", res);
    else if (u == 0) {
        json_t *vars = json_object();
        if (!hsa_template_match(str(json_object_get(h, "hooks"), "error_format"), err, vars))
            json_object_set_new(vars, "unmatched", json_string(err));
        json_object_del(vars, "tool");
        out = json_pack("{s:o}", "error", vars);
    } else out = json_pack("{s:s}", "not_envelope", text);
    free(err);
    return out;
}

/* Every surface form of the relabelled messages agrees with the new
 * harness, and every tool response means what it meant before. */
static int trajectory_consistent(const json_t *orig, const json_t *out)
{
    const json_t *oh = json_object_get(orig, "harness"), *nh = json_object_get(out, "harness");
    const json_t *om = json_object_get(orig, "messages"), *nm = json_object_get(out, "messages");
    if (json_array_size(om) != json_array_size(nm)) return 0;
    const char *loader = harness_loader_name(nh), *arg = harness_loader_argument(nh);
    json_t *pending = json_array();
    int ok = 1;
    for (size_t i = 0; i < json_array_size(nm); i++) {
        const json_t *m = json_array_get(nm, i), *m0 = json_array_get(om, i);
        const char *role = str(m, "role");
        size_t j;
        json_t *tc;
        json_array_foreach(json_object_get(m, "tool_calls"), j, tc) {
            const json_t *fn = json_object_get(tc, "function");
            const char *name = str(fn, "name");
            const json_t *args = json_object_get(fn, "arguments");
            if (!strcmp(name, loader)) {
                const char *sk = str(args, arg);
                if (!sk || !harness_skill_by_name(nh, sk)) { fprintf(stderr, "  load of %s\n", sk ? sk : "?"); ok = 0; }
                json_array_append_new(pending, json_string(sk ? sk : ""));
                continue;
            }
            const json_t *t = harness_tool_by_name(nh, name);
            if (!t) { fprintf(stderr, "  call of unknown tool %s\n", name); ok = 0; continue; }
            const json_t *props = json_object_get(json_object_get(t, "parameters"), "properties");
            const char *k;
            json_t *v;
            json_object_foreach((json_t *)args, k, v)
                if (!json_object_get(props, k)) { fprintf(stderr, "  %s: key %s\n", name, k); ok = 0; }
            json_array_append_new(pending, json_null());
        }
        if (!strcmp(role, "tool")) {
            json_t *sk = json_incref(json_array_get(pending, 0));
            json_array_remove(pending, 0);
            const char *content = str(m, "content");
            if (str(m, "hook")) {
                json_t *vars = json_object();
                const char *tmpl = str(json_object_get(json_object_get(nh, "hooks"), str(m, "hook")), "message");
                if (!hsa_template_match(tmpl, content, vars)) { fprintf(stderr, "  hook text %s\n", content); ok = 0; }
                json_decref(vars);
            } else if (json_is_string(sk)) {
                char *want = harness_skill_text(nh, harness_skill_by_name(nh, json_string_value(sk)));
                if (strcmp(want, content)) { fprintf(stderr, "  skill text differs\n"); ok = 0; }
                if (strcmp(str(m, "name"), loader)) ok = 0;
                free(want);
            } else {
                json_t *a = payload(oh, str(m0, "content")), *b = payload(nh, content);
                if (!json_equal(a, b) || json_object_get(a, "not_envelope")) {
                    char *sa = json_compact(a), *sb = json_compact(b);
                    fprintf(stderr, "  payload %s != %s\n", sa, sb);
                    free(sa); free(sb);
                    ok = 0;
                }
                if (!harness_tool_by_name(nh, str(m, "name"))) ok = 0;
                json_decref(a); json_decref(b);
            }
            json_decref(sk);
        } else if (!strcmp(role, "user") && str(m, "hook") && strcmp(str(m, "hook"), "input_check")) {
            const char *hook = str(m, "hook");
            const json_t *hk = json_object_get(json_object_get(nh, "hooks"), hook);
            const char *tmpl = str(hk, !strcmp(hook, "reply_filter") ? "on_violation" : "message");
            json_t *vars = json_object();
            if (!hsa_template_match(tmpl, str(m, "content"), vars)) { fprintf(stderr, "  hook %s\n", hook); ok = 0; }
            if (str(vars, "loader") && strcmp(str(vars, "loader"), loader)) ok = 0;
            json_decref(vars);
        } else if (!strcmp(role, "user") && str(m, "hook")) {
            const char *msg = str(json_object_get(json_object_get(nh, "hooks"), "input_check"), "message");
            size_t cl = strlen(str(m, "content")), ml = strlen(msg);
            if (cl < ml || strcmp(str(m, "content") + cl - ml, msg)) { fprintf(stderr, "  input_check\n"); ok = 0; }
        }
    }
    json_decref(pending);
    return ok;
}

/* The final reply fits the new limits when the variant says it is valid. */
static int limits_hold(const json_t *out)
{
    const json_t *nm = json_object_get(out, "messages");
    const char *fin = NULL;
    size_t i;
    json_t *m;
    json_array_foreach(nm, i, m)
        if (!strcmp(str(m, "role"), "assistant") && !json_array_size(json_object_get(m, "tool_calls")))
            fin = str(m, "content");
    double mc, me;
    const json_t *h = json_object_get(out, "harness");
    if (!fin || harness_param(h, "max_chars", &mc) || harness_param(h, "max_emoji", &me)) return 0;
    harness_measure ms;
    harness_measure_text(fin, &ms);
    return ms.chars <= mc && ms.emoji <= me;
}

static void relabelled_trajectories_stay_consistent(void)
{
    json_t *recs = fixture();
    CHECK(json_array_size(recs) == 5);
    hsa_vocab *vs[2] = { hsa_vocab_load("train"), hsa_vocab_load("heldout") };
    hsa_opts o;
    hsa_opts_default(&o);
    hsa_cache *cache = hsa_cache_new();
    int bad = 0, invalid = 0, masked = 0, n = 0;
    for (int s = 0; s < 40; s++) {
        for (int d = 0; d < HSA_NDIMS; d++) o.p[d] = s % 2 ? 1.0 : 0.6;
        for (size_t i = 0; i < json_array_size(recs); i++, n++) {
            const json_t *rec = json_array_get(recs, i);
            const char *err = NULL;
            json_t *out = hsa_augment_record(cache, vs[s % 2], &o, rec, NULL, 3, (uint64_t)(s * 5 + i), 0, &err);
            CHECK(out && !err);
            if (!out) continue;
            const json_t *meta = json_object_get(out, "meta");
            if (!json_is_true(json_object_get(meta, "hsa_valid"))) {
                fprintf(stderr, "  invalid: %s\n", str(meta, "hsa_reason"));
                invalid++;
            }
            if (!trajectory_consistent(rec, out) || !variant_ok(json_object_get(rec, "harness"),
                                                                json_object_get(out, "harness")) ||
                !limits_hold(out))
                bad++;
            size_t j;
            json_t *op;
            json_array_foreach(json_object_get(meta, "hsa"), j, op) masked += !strcmp(str(op, "op"), "mask_skill");
            /* The give-up trajectory made exactly two retries: the count must stay. */
            json_t *mr = json_object_get(json_object_get(json_object_get(json_object_get(out, "harness"), "hooks"),
                                                         "tool_retry"), "max_retries");
            if (i == 4) CHECK_EQ_INT(json_integer_value(mr), 2);
            if (i == 1) CHECK(json_integer_value(mr) >= 1);
            json_decref(out);
        }
    }
    CHECK_EQ_INT(n, 200);
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(invalid, 0);
    CHECK(masked > 0);
    hsa_cache_free(cache);
    hsa_vocab_free(vs[0]);
    hsa_vocab_free(vs[1]);
    json_decref(recs);
}

/* A final reply near or over the max_chars range: resampled, or flagged. */
static void long_reply_constrains_max_chars(void)
{
    json_t *recs = fixture();
    hsa_vocab *v = hsa_vocab_load("train");
    hsa_opts o;
    if (hsa_opts_dims(&o, "prompt", 1.0, &(const char *){ NULL })) CHECK(0);
    o.mix = 0;
    json_t *rec = json_deep_copy(json_array_get(recs, 0));
    json_t *msgs = json_object_get(rec, "messages");
    json_t *fin = json_array_get(msgs, json_array_size(msgs) - 1);
    /* 150 characters: fits max (200) but not every draw from [60, 200]. */
    char buf[256];
    memset(buf, 'a', 150);
    buf[150] = 0;
    json_object_set_new(fin, "content", json_string(buf));
    double mc;
    json_t *p = json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(
        json_object_get(rec, "harness"), "system_prompt"), "blocks"), 1), "params"), "max_chars");
    json_object_set_new(p, "value", json_integer(160));
    int redrawn = 0;
    for (int s = 0; s < 100; s++) {
        const char *err;
        json_t *out = hsa_augment_record(NULL, v, &o, rec, NULL, 5, (uint64_t)s, 0, &err);
        CHECK(!harness_param(json_object_get(out, "harness"), "max_chars", &mc) && mc >= 150 && mc <= 200);
        CHECK(json_is_true(json_object_get(json_object_get(out, "meta"), "hsa_valid")));
        char *m = json_compact(json_object_get(out, "meta"));
        redrawn += strstr(m, "redraws") != NULL;
        free(m);
        json_decref(out);
    }
    CHECK(redrawn > 0);
    /* 250 characters: no value in [60, 200] can hold it. */
    memset(buf, 'b', 250);
    buf[250] = 0;
    json_object_set_new(fin, "content", json_string(buf));
    const char *err;
    json_t *out = hsa_augment_record(NULL, v, &o, rec, NULL, 5, 1, 0, &err);
    CHECK(json_is_false(json_object_get(json_object_get(out, "meta"), "hsa_valid")));
    CHECK(str(json_object_get(out, "meta"), "hsa_reason") != NULL);
    json_decref(out);
    json_decref(rec);
    hsa_vocab_free(v);
    json_decref(recs);
}

static void same_seed_same_bytes_and_mix(void)
{
    json_t *recs = fixture();
    hsa_vocab *v = hsa_vocab_load("train");
    hsa_opts o;
    hsa_opts_default(&o);
    const json_t *rec = json_array_get(recs, 1);
    const char *err;
    json_t *a = hsa_augment_record(NULL, v, &o, rec, NULL, 9, 42, 0, &err);
    hsa_cache *cache = hsa_cache_new();
    json_t *b = hsa_augment_record(cache, v, &o, rec, NULL, 9, 42, 0, &err);
    json_t *c = hsa_augment_record(NULL, v, &o, rec, NULL, 9, 43, 0, &err);
    char *sa = json_compact(a), *sb = json_compact(b), *sc = json_compact(c);
    CHECK_STR(sa, sb);
    CHECK(strcmp(sa, sc) != 0);
    free(sa); free(sb); free(sc);
    json_decref(a); json_decref(b); json_decref(c);
    hsa_cache_free(cache);
    o.mix = 1;   /* every output the original */
    json_t *d = hsa_augment_record(NULL, v, &o, rec, NULL, 9, 42, 0, &err);
    CHECK(json_equal(json_object_get(d, "harness"), json_object_get(rec, "harness")));
    CHECK(json_equal(json_object_get(d, "messages"), json_object_get(rec, "messages")));
    CHECK_EQ_INT(json_array_size(json_object_get(json_object_get(d, "meta"), "hsa")), 0);
    CHECK_STR(str(d, "id"), "fx-stock-timeout-hsa0");
    json_decref(d);
    /* Bad records give a message, not a variant. */
    json_t *bad = json_pack("{s:s}", "id", "x");
    CHECK(hsa_augment_record(NULL, v, &o, bad, NULL, 1, 0, 0, &err) == NULL);
    CHECK(err && strstr(err, "harness"));
    json_decref(bad);
    hsa_vocab_free(v);
    json_decref(recs);
}

/* ---- retries the messages do not show, and calls given up ------------------------ */

static void set_param(json_t *h, const char *name, long v)
{
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(json_object_get(h, "system_prompt"), "blocks"), i, b) {
        json_t *p = json_object_get(json_object_get(b, "params"), name);
        if (p) json_object_set_new(p, "value", json_integer(v));
    }
}

static long param(const json_t *h, const char *name)
{
    double v;
    return harness_param(h, name, &v) ? -1 : (long)v;
}

static long max_retries(const json_t *h)
{
    return (long)json_integer_value(json_object_get(json_object_get(json_object_get(h, "hooks"),
                                                                    "tool_retry"), "max_retries"));
}

/* A teacher trajectory of a price task whose lookup times out `times`
 * times under h, as traj-gen writes it (meta included). */
static json_t *teacher_traj(world *w, teacher *t, taskgen *g, const json_t *h, int times,
                            int keep, json_t **task)
{
    *task = taskgen_make(g, 3, 0, "price", 0);
    json_object_set_new(*task, "faults", json_pack("[{s:i,s:s,s:i}]", "call", 0, "type", "timeout", "times", times));
    sim *s = sim_new(w);
    sim_set_harness(s, h, NULL);
    teacher_opts o = { 0, keep };
    rng_t r;
    rng_seed(&r, 1);
    char *err = NULL;
    json_t *meta = json_pack("{s:[]}", "hsa");
    json_t *msgs = teacher_run(t, s, *task, &r, &o, meta, &err);
    CHECK(msgs != NULL);
    free(err);
    sim_free(s);
    return json_pack("{s:s,s:O,s:O,s:o,s:o}", "id", "r", "task_id", json_object_get(*task, "id"),
                     "harness", h, "messages", msgs ? msgs : json_array(), "meta", meta);
}

/* Variants of rec, the `dims` dimensions at p 1: how many the judge does
 * not give full marks; check() sees each harness.  The judge caches its
 * harness by pointer, so every variant stays alive until the judge is
 * freed: a new harness at a freed one's address would read stale. */
static int judged_variants(const world *w, const json_t *task, const json_t *rec, const char *dims,
                           void (*check)(const json_t *old, const json_t *nh))
{
    hsa_vocab *vs[2] = { hsa_vocab_load("train"), hsa_vocab_load("heldout") };
    hsa_opts o;
    hsa_opts_dims(&o, dims, 1.0, &(const char *){ NULL });
    char *jerr = NULL;
    judge *j = judge_new(w, NULL, &jerr);
    CHECK(j != NULL);
    free(jerr);
    json_t *alive = json_array();
    int bad = 0;
    for (int i = 0; j && i < 60; i++) {
        const char *err = NULL;
        json_t *out = hsa_augment_record(NULL, vs[i % 2], &o, rec, NULL, 17, (uint64_t)i, 0, &err);
        CHECK(out && json_is_true(json_object_get(json_object_get(out, "meta"), "hsa_valid")));
        if (!out) continue;
        const json_t *nh = json_object_get(out, "harness");
        if (check) check(json_object_get(rec, "harness"), nh);
        judge_verdict v;
        int rc = judge_score(j, task, nh, json_object_get(out, "messages"), &v);
        if (rc || !v.pass || v.total != 1) {
            if (bad++ < 3) {
                char *r = json_compact(v.reasons);
                fprintf(stderr, "  variant %d: %s\n", i, r);
                free(r);
            }
        }
        judge_verdict_clear(&v);
        json_array_append_new(alive, out);
    }
    judge_free(j);
    json_decref(alive);
    hsa_vocab_free(vs[0]);
    hsa_vocab_free(vs[1]);
    return bad;
}

static void pruned_retries_at_least(const json_t *old, const json_t *nh)
{
    (void)old;
    CHECK(max_retries(nh) >= 2);
    CHECK(param(nh, "max_tool_calls") >= 3);
}

static void budgets_unmoved(const json_t *old, const json_t *nh)
{
    CHECK_EQ_INT(param(nh, "max_tool_calls"), param(old, "max_tool_calls"));
    CHECK_EQ_INT(param(nh, "max_turns"), param(old, "max_turns"));
}

/* The judge replays a pruned retry silently, within max_retries and
 * counting it as a tool call, so HSA must count it too (meta.recovery);
 * a call the budget stopped is right only while the budget stays spent;
 * an error_format without {code} still shows a retry.  Every variant is
 * judged. */
static void hidden_and_abandoned_retries(void)
{
    world *w = world_from_json(world_generate(11, 120), "gen");
    teacher *t = teacher_new();
    CHECK(w && t);
    if (!w || !t) { teacher_free(t); world_free(w); return; }
    taskgen *g = taskgen_new(w, "train");
    json_t *h = example(), *task;
    hsa_needs n;
    const char *why = NULL;

    /* Two timeouts, recovered by the third attempt, both pruned. */
    json_t *rec = teacher_traj(w, t, g, h, 2, 0, &task);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(rec, "meta"), "pruned")), 2);
    CHECK_EQ_INT(hsa_needs_scan(&n, rec, h, &why), 0);
    CHECK_EQ_INT(n.retries, 2);
    CHECK_EQ_INT(n.tool_calls, 4);                /* a skill load, one shown, two replayed */
    CHECK_EQ_INT(n.gave_up, 0);
    hsa_needs_free(&n);
    CHECK_EQ_INT(judged_variants(w, task, rec, "all", pruned_retries_at_least), 0);
    CHECK_EQ_INT(judged_variants(w, task, rec, "hooks", pruned_retries_at_least), 0);
    /* a record with only meta.pruned (no per-call recovery) is read as one call */
    json_object_set_new(json_object_get(rec, "meta"), "recovery", json_array());
    CHECK_EQ_INT(hsa_needs_scan(&n, rec, h, &why), 0);
    CHECK_EQ_INT(n.retries, 2);
    hsa_needs_free(&n);
    /* without meta the retries are invisible: what the relabeller must not rely on */
    json_object_del(rec, "meta");
    CHECK_EQ_INT(hsa_needs_scan(&n, rec, h, &why), 0);
    CHECK_EQ_INT(n.retries, 0);
    hsa_needs_free(&n);
    json_decref(rec);
    json_decref(task);

    /* max_tool_calls 2: two timeouts, the budget ends the call (a third
     * attempt would have succeeded). */
    json_t *h2 = json_deep_copy(h);
    set_param(h2, "max_tool_calls", 2);
    rec = teacher_traj(w, t, g, h2, 2, 0, &task);
    CHECK_EQ_INT(hsa_needs_scan(&n, rec, h2, &why), 0);
    CHECK_EQ_INT(n.gave_up, 1);
    CHECK_EQ_INT(n.budget_spent, 1);
    CHECK_EQ_INT(n.retries, 1);
    hsa_needs_free(&n);
    CHECK_EQ_INT(judged_variants(w, task, rec, "all", NULL), 0);
    CHECK_EQ_INT(judged_variants(w, task, rec, "prompt", budgets_unmoved), 0);
    json_decref(rec);
    json_decref(task);
    json_decref(h2);

    /* Three timeouts against max_retries 2: given up at the retry limit;
     * the budgets are free, max_retries may not grow past 2. */
    rec = teacher_traj(w, t, g, h, 3, 0, &task);
    CHECK_EQ_INT(hsa_needs_scan(&n, rec, h, &why), 0);
    CHECK_EQ_INT(n.gave_up, 1);
    CHECK_EQ_INT(n.budget_spent, 0);
    CHECK_EQ_INT(n.retries, 2);
    hsa_needs_free(&n);
    CHECK_EQ_INT(judged_variants(w, task, rec, "all", NULL), 0);
    json_decref(rec);
    json_decref(task);

    /* An error_format with no {code}: a retry is still a retry. */
    h2 = json_deep_copy(h);
    json_object_set_new(json_object_get(h2, "hooks"), "error_format", json_string("{tool} failed: {message}"));
    rec = teacher_traj(w, t, g, h2, 1, 1, &task);
    json_object_del(rec, "meta");                 /* the messages alone */
    CHECK_EQ_INT(hsa_needs_scan(&n, rec, h2, &why), 0);
    CHECK_EQ_INT(n.retries, 1);
    hsa_needs_free(&n);
    json_decref(rec);
    json_decref(task);
    json_decref(h2);

    json_decref(h);
    taskgen_free(g);
    teacher_free(t);
    world_free(w);
}

/* hsa_reader_line against a model of the gzgets loop it replaced, on
 * lines from empty to 2.5 MB (across its 1 MB reads), with NUL bytes
 * anywhere (one ends the line's text; the next physical line goes on
 * from there), CR, spaces and tabs at the ends, blank lines, and a last
 * line with and without its newline. */
static void reader_lines_as_gzgets_read_them(void)
{
    rng_t r;
    rng_seed(&r, 20261207);
    for (int round = 0; round < 6; round++) {
        sbuf f;
        sbuf_init(&f);
        int nl = 40 + (int)rng_below(&r, 40);
        for (int i = 0; i < nl; i++) {
            size_t n = rng_chance(&r, 0.1) ? 300000 + rng_below(&r, 2200000) : rng_below(&r, 3000);
            if (rng_chance(&r, 0.1)) n = 0;
            for (size_t k = 0; k < n; k++) {
                double u = rng_uniform(&r);
                sbuf_putc(&f, u < 0.00005 || (n < 3000 && u < 0.0003) ? 0 : u < 0.01 ? ' ' : u < 0.015 ? '\t' : (char)('a' + k % 26));
            }
            if (rng_chance(&r, 0.2)) sbuf_puts(&f, " \t");
            if (rng_chance(&r, 0.2)) sbuf_putc(&f, '\r');
            if (i + 1 < nl || round % 2) sbuf_putc(&f, '\n');
        }
        /* the model: physical lines; a NUL cuts one and joins what follows */
        sbuf want;
        sbuf_init(&want);
        size_t at = 0, nwant = 0;
        while (at < f.len) {
            sbuf line;
            sbuf_init(&line);
            for (;;) {
                size_t e = at;
                while (e < f.len && f.s[e] != '\n') e++;
                size_t end = e < f.len ? e + 1 : e;
                const char *z = memchr(f.s + at, 0, end - at);
                sbuf_add(&line, f.s + at, z ? (size_t)(z - (f.s + at)) : end - at);
                at = end;
                if (!z || at >= f.len) break;
            }
            size_t n = line.len, st = 0;
            while (n && strchr("\n\r \t", line.s[n - 1])) n--;
            while (st < n && (line.s[st] == ' ' || line.s[st] == '\t')) st++;
            if (st < n) {
                sbuf_add(&want, line.s + st, n - st);
                sbuf_putc(&want, '\n');
                nwant++;
            }
            sbuf_free(&line);
        }
        char path[1100];
        snprintf(path, sizeof path, "%s/lines%d.txt", test_tmpdir(), round);
        FILE *fp = fopen(path, "wb");
        CHECK(fp && fwrite(f.s, 1, f.len, fp) == f.len);
        if (fp) fclose(fp);
        hsa_reader *rd = hsa_reader_open(path);
        CHECK(rd != NULL);
        sbuf got;
        sbuf_init(&got);
        const char *line;
        size_t len, ngot = 0;
        long ln;
        int k;
        while (rd && (k = hsa_reader_line(rd, &line, &len, &ln)) == 1) {
            CHECK(line[len] == 0);
            sbuf_add(&got, line, len);
            sbuf_putc(&got, '\n');
            ngot++;
        }
        hsa_reader_close(rd);
        CHECK_EQ_INT((long long)ngot, (long long)nwant);
        CHECK(got.len == want.len && !memcmp(got.s, want.s, got.len));
        if (t_failed_here) fprintf(stderr, "  round %d: %zu lines, %zu wanted\n", round, ngot, nwant);
        sbuf_free(&got);
        sbuf_free(&want);
        sbuf_free(&f);
        remove(path);
    }
}

int main(void)
{
    RUN(template_match_and_keys);
    RUN(style_join_and_replace);
    RUN(vocab_covers_every_text_of_the_example);
    RUN(vocabularies_are_disjoint);
    RUN(bad_vocab_is_reported);
    RUN(harness_variants_keep_functions_and_lint_clean);
    RUN(relabelled_trajectories_stay_consistent);
    RUN(long_reply_constrains_max_chars);
    RUN(same_seed_same_bytes_and_mix);
    RUN(hidden_and_abandoned_retries);
    RUN(reader_lines_as_gzgets_read_them);
    TEST_MAIN_END();
}
