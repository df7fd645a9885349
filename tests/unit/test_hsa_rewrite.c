/* test_hsa_rewrite.c — the built-in rewriter and the name bookkeeping of
 * HSA: known answers for protection, the rewrite check, renaming mentions
 * and finding undefined ones; property tests over every wording string of
 * two harnesses and hundreds of generated texts (every rewrite keeps its
 * numbers, placeholders, names, quotes and code, counted here by code of
 * its own, not by hsa_protected); train and held-out rewrites disjoint. */
#include "test.h"
#include "harness.h"
#include "hsa.h"
#include "rng.h"
#include "util.h"

#include <ctype.h>
#include <string.h>

static const char *top(void)
{
    const char *t = getenv("HAT_TOP");
    return t ? t : ".";
}

static json_t *load(const char *rel)
{
    char *p = xasprintf("%s/%s", top(), rel);
    json_t *h = harness_load(p);
    free(p);
    return h;
}

static void collect(json_t *parent, const char *key, size_t idx, const char *text,
                    const char *kind, const char *path, void *ud)
{
    (void)parent; (void)key; (void)idx; (void)kind; (void)path;
    json_array_append_new(ud, json_string(text));
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0, l = strlen(needle);
    for (const char *p = hay; l && (p = strstr(p, needle)); p += l) n++;
    return n;
}

/* Independent of hsa_protected: digit runs, {…}, "…" and `…` spans, and
 * each name as a whole word, must occur as often in b as in a. */
static int keeps(const char *a, const char *b, const json_t *names)
{
    for (const char *p = a; *p; p++) {
        size_t l = 0;
        if (isdigit((unsigned char)*p)) while (isdigit((unsigned char)p[l])) l++;
        else if (*p == '{' || *p == '"' || *p == '`') {
            const char *q = strchr(p + 1, *p == '{' ? '}' : *p);
            if (q) l = (size_t)(q - p) + 1;
        }
        if (!l) continue;
        char *s = xstrndup(p, l);
        int ok = count(a, s) == count(b, s);
        free(s);
        if (!ok) return 0;
        p += l - 1;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)names, k, v) {
        char *pad = xasprintf("%s", k);
        size_t ca = 0, cb = 0;
        for (const char *p = a; (p = strstr(p, pad)); p++)
            ca += (p == a || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
                  !(isalnum((unsigned char)p[strlen(k)]) || p[strlen(k)] == '_');
        for (const char *p = b; (p = strstr(p, pad)); p++)
            cb += (p == b || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
                  !(isalnum((unsigned char)p[strlen(k)]) || p[strlen(k)] == '_');
        free(pad);
        if (ca != cb) return 0;
    }
    return 1;
}

static void protection_known_answers(void)
{
    json_t *names = json_pack("{s:b, s:b}", "gear_lookup", 1, "item", 1);
    const char *t = "Call gear_lookup for the item: at most {max_chars} chars, 3 tries, "
                    "one \"@fan\" reply, `code span` and 10% off.";
    hsa_span sp[16];
    int n = hsa_protected(t, names, sp, 16);
    const char *want[] = { "gear_lookup", "item", "{max_chars}", "3", "one", "\"@fan\"",
                           "`code span`", "10%" };
    CHECK_EQ_INT(n, 8);
    for (int i = 0; i < n && i < 8; i++) {
        char *s = xstrndup(t + sp[i].start, sp[i].len);
        CHECK_STR(s, want[i]);
        free(s);
    }
    /* An apostrophe is not a quote. */
    CHECK_EQ_INT(hsa_protected("the viewer's order and the shop's rules", NULL, sp, 16), 0);

    char *why = NULL;
    CHECK(hsa_rewrite_check("Use at most 3 emoji.", "Use no more than 3 emoji.", names, &why));
    free(why);
    const char *bad[][2] = {
        { "Use at most 3 emoji.", "Use at most 4 emoji." },
        { "Keep it within {max_chars}.", "Keep it within {max_emoji}." },
        { "Call gear_lookup first.", "Call the lookup first." },
        { "Say \"hi\" first.", "Say \"hello\" first." },
        { "Ask one question.", "Ask a question." },
        { "Ask one question.", "Ask one question." },
        { "Read the item.", "Read the item and the item." },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(!hsa_rewrite_check(bad[i][0], bad[i][1], names, &why));
        CHECK(why != NULL);
        free(why);
    }
    json_decref(names);
}

static void rename_mentions_whole_word(void)
{
    json_t *map = json_pack("{s:s, s:s, s:s}", "item_info", "fetch_goods", "item", "sku",
                            "clarify", "ask_first");
    char *s = hsa_rename_mentions("Call item_info (not item_info_v2 or pre-item_info) for an item; "
                                  "pass `item` to the item tool. Clarify: the clarify skill.", map);
    CHECK_STR(s, "Call fetch_goods (not item_info_v2 or pre-item_info) for an item; "
                 "pass `sku` to the sku tool. Clarify: the ask_first skill.");
    free(s);
    json_decref(map);

    json_t *known = json_pack("{s:b}", "get_price", 1);
    json_t *u = hsa_unknown_mentions("Call get_price, then `lookup` and old_tool; an iPhone, "
                                     "chit-chat and {max_chars} are fine.", known);
    CHECK_EQ_INT(json_array_size(u), 2);
    CHECK_STR(json_string_value(json_array_get(u, 0)), "lookup");
    CHECK_STR(json_string_value(json_array_get(u, 1)), "old_tool");
    json_decref(u);
    json_decref(known);
}

/* Texts nobody wrote for the lexicon: sentence frames filled at random
 * with numbers, placeholders, quotes, code and names. */
static char *generated(rng_t *r, const char *name)
{
    static const char *const frames[] = {
        "If the viewer asks about %s, call %s and give at most %s options.",
        "Never mention %s unless %s reports more than %s units.",
        "Do not promise %s; check %s first and quote %s exactly.",
        "When a coupon for %s applies, use %s and say %s.",
        "Always keep replies about %s short: %s, then %s.",
        "Recommend %s only when %s returns %s or more.",
    };
    static const char *const fill[] = {
        "3", "{max_chars}", "\"free shipping\"", "`sku_id`", "one", "12.5%", "the price",
        "twenty", "'as listed'", "{host}", "No.1", "stock",
    };
    const char *f = frames[rng_below(r, 6)];
    const char *a = fill[rng_below(r, 12)], *b = rng_chance(r, 0.5) ? name : fill[rng_below(r, 12)],
               *c = fill[rng_below(r, 12)];
    return xasprintf(f, a, b, c);
}

static void rewrites_keep_what_they_must(void)
{
    const char *hs[] = { "tests/fixtures/hsa/fresh", "examples/harness" };
    const char *vs[] = { "train", "heldout" };
    rng_t r;
    rng_derive(&r, 7, 1);
    long drawn = 0, failed = 0, kept = 0;
    for (int hi = 0; hi < 2; hi++) {
        json_t *h = load(hs[hi]);
        CHECK(h != NULL);
        if (!h) continue;
        json_t *texts = json_array(), *names = hsa_harness_names(h);
        hsa_texts(h, 0, collect, texts);
        for (int g = 0; g < 150; g++) {
            json_t *nm = json_array_get(json_object_get(h, "tools"), (size_t)g % 6);
            char *t = generated(&r, json_string_value(json_object_get(nm, "name")));
            json_array_append_new(texts, json_string(t));
            free(t);
        }
        for (int vi = 0; vi < 2; vi++) {
            hsa_vocab *v = hsa_vocab_load(vs[vi]);
            CHECK(v && hsa_vocab_rewriter(v));
            if (!v) continue;
            size_t i;
            json_t *e;
            json_array_foreach(texts, i, e) {
                const char *t = json_string_value(e);
                json_t *a = hsa_rewrite_analyse(hsa_vocab_rewriter(v), t, names);
                for (int k = 0; k < 20; k++) {
                    char *out = hsa_rewrite_draw(a, &r), *why = NULL;
                    drawn++;
                    if (!out) { failed++; continue; }
                    int ok = keeps(t, out, names) && hsa_rewrite_check(t, out, names, &why);
                    kept += ok;
                    if (!ok) fprintf(stderr, "  not kept: \"%s\" -> \"%s\" (%s)\n", t, out, why ? why : "");
                    free(why);
                    free(out);
                }
                json_decref(a);
            }
            hsa_vocab_free(v);
        }
        json_decref(texts);
        json_decref(names);
        json_decref(h);
    }
    CHECK(drawn > 10000);
    CHECK_EQ_INT(kept, drawn - failed);
    CHECK(failed * 50 < drawn);   /* almost every text has a rewrite */
}

/* Small grammar the synonyms must not break: the article before a
 * replaced word, a word repeated from the one before it. */
static void articles_and_repeats(void)
{
    hsa_vocab *v = hsa_vocab_load("train");
    CHECK(v != NULL);
    if (!v) return;
    const char *texts[] = { "Load a reply skill before the final reply.", "Body height of the shopper." };
    rng_t r;
    rng_derive(&r, 5, 5);
    int an = 0;
    for (int t = 0; t < 2; t++) {
        json_t *a = hsa_rewrite_analyse(hsa_vocab_rewriter(v), texts[t], NULL);
        for (int k = 0; k < 200; k++) {
            char *o = hsa_rewrite_draw(a, &r);
            if (!o) continue;
            CHECK(!strstr(o, " a answer") && !strstr(o, "A answer"));
            CHECK(!strcasestr(o, "body body"));
            an += strstr(o, "an answer") != NULL;
            free(o);
        }
        json_decref(a);
    }
    CHECK(an > 0);   /* "reply" was replaced, with "an" */
    hsa_vocab_free(v);
}

static void train_and_heldout_disjoint(void)
{
    hsa_vocab *tv = hsa_vocab_load("train"), *hv = hsa_vocab_load("heldout");
    CHECK(tv && hv);
    if (!tv || !hv) { hsa_vocab_free(tv); hsa_vocab_free(hv); return; }
    CHECK_STR(hsa_vocab_split(tv), "train");
    CHECK_STR(hsa_vocab_split(hv), "heldout");
    json_t *ta = hsa_rewriter_alternatives(hsa_vocab_rewriter(tv));
    json_t *ha = hsa_rewriter_alternatives(hsa_vocab_rewriter(hv));
    const char *k;
    json_t *x;
    json_object_foreach(ta, k, x) {
        if (json_object_get(ha, k)) fprintf(stderr, "  synonym in both splits: %s\n", k);
        CHECK(!json_object_get(ha, k));
    }
    json_decref(ta);
    json_decref(ha);
    json_t *h = load("tests/fixtures/hsa/fresh"), *texts = json_array(), *names = hsa_harness_names(h);
    hsa_texts(h, 0, collect, texts);
    rng_t r;
    rng_derive(&r, 3, 9);
    size_t i;
    json_t *e;
    long both = 0;
    json_array_foreach(texts, i, e) {
        const char *t = json_string_value(e);
        json_t *seen = json_object();
        json_t *a = hsa_rewrite_analyse(hsa_vocab_rewriter(tv), t, names);
        for (int k2 = 0; k2 < 60; k2++) {
            char *o = hsa_rewrite_draw(a, &r);
            if (o) json_object_set_new(seen, o, json_true());
            free(o);
        }
        json_decref(a);
        a = hsa_rewrite_analyse(hsa_vocab_rewriter(hv), t, names);
        for (int k2 = 0; k2 < 60; k2++) {
            char *o = hsa_rewrite_draw(a, &r);
            if (o && json_object_get(seen, o)) {
                fprintf(stderr, "  in both splits: \"%s\"\n", o);
                both++;
            }
            free(o);
        }
        json_decref(a);
        json_decref(seen);
    }
    CHECK_EQ_INT(both, 0);
    json_decref(texts);
    json_decref(names);
    json_decref(h);
    hsa_vocab_free(tv);
    hsa_vocab_free(hv);
}

/* A variant that renames tools, parameters, skills and the loader leaves
 * no mention of an old identifier-like name in any text. */
static void variants_keep_names_in_step(void)
{
    json_t *h = load("tests/fixtures/hsa/fresh");
    hsa_vocab *v = hsa_vocab_load("train");
    CHECK(h && v);
    if (!h || !v) { json_decref(h); hsa_vocab_free(v); return; }
    hsa_opts o;
    hsa_opts_dims(&o, "skill-id,tools", 1, &(const char *){ NULL });
    int renamed = 0;
    for (int k = 0; k < 30; k++) {
        rng_t r;
        rng_derive(&r, 11, (uint64_t)k);
        json_t *ops = json_array();
        json_t *nh = hsa_augment_harness(v, &o, &r, h, NULL, ops, NULL, NULL);
        json_t *lint = harness_lint(nh, NULL);
        size_t i;
        json_t *p;
        json_array_foreach(lint, i, p) {
            const char *m = json_string_value(json_object_get(p, "message"));
            CHECK(!strstr(m, "mentions '"));
        }
        json_t *texts = json_array();
        hsa_texts(nh, HSA_TEXTS_HOOKS, collect, texts);
        char *all = json_dumps(texts, 0);
        json_array_foreach(ops, i, p) {
            const char *op = json_string_value(json_object_get(p, "op"));
            const char *from = json_string_value(json_object_get(p, "from"));
            const char *to = json_string_value(json_object_get(p, "to"));
            if (strcmp(op, "rename_tool") && strcmp(op, "rename_loader")) continue;
            renamed++;
            CHECK(!strstr(all, from));
            CHECK(strstr(all, to) != NULL);   /* every tool and the loader is mentioned */
        }
        free(all);
        json_decref(texts);
        json_decref(lint);
        json_decref(ops);
        json_decref(nh);
    }
    CHECK(renamed > 30);
    json_decref(h);
    hsa_vocab_free(v);
}

int main(void)
{
    RUN(protection_known_answers);
    RUN(rename_mentions_whole_word);
    RUN(rewrites_keep_what_they_must);
    RUN(articles_and_repeats);
    RUN(train_and_heldout_disjoint);
    RUN(variants_keep_names_in_step);
    TEST_MAIN_END();
}
