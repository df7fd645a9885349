/* test_tasks.c — phrasing templates: [a|b] groups, and the train and eval
 * banks (and the dev split's fresh phrasings) kept apart form by form. */
#include "test.h"
#include "bank.h"
#include "jsonl.h"
#include "tasks.h"
#include "util.h"

#include <ctype.h>

static char *form(const char *tmpl, long k)
{
    sbuf b;
    sbuf_init(&b);
    if (bank_form(&b, tmpl, k)) { sbuf_free(&b); return NULL; }
    return b.s ? sbuf_detach(&b) : xstrdup("");
}

static void groups_expand_in_order(void)
{
    const char *t = "[how much|price of] {product}[ pls|]";
    CHECK_EQ_INT(bank_forms(t), 4);
    const char *want[] = { "how much {product} pls", "how much {product}",
                           "price of {product} pls", "price of {product}" };
    for (long k = 0; k < 4; k++) {
        char *s = form(t, k);
        CHECK_STR(s, want[k]);
        free(s);
    }
    CHECK(form(t, 4) == NULL);
    CHECK(form(t, -1) == NULL);
    CHECK_EQ_INT(bank_forms("no groups {product}?"), 1);
    char *s = form("no groups {product}?", 0);
    CHECK_STR(s, "no groups {product}?");
    free(s);
    s = form("[[sic]] [a|b]", 1);                 /* doubled brackets are literal */
    CHECK_STR(s, "[sic] b");
    free(s);
    CHECK_EQ_INT(bank_forms("[|]"), 2);
}

static void bad_groups_have_no_forms(void)
{
    CHECK_EQ_INT(bank_forms("[a|b"), 0);
    CHECK_EQ_INT(bank_forms("a|b]"), 0);
    CHECK_EQ_INT(bank_forms("[a|[b|c]]"), 0);
    /* 10 groups of 10 is 10^10 forms: over BANK_MAX_FORMS, refused */
    CHECK_EQ_INT(bank_forms("[0|1|2|3|4|5|6|7|8|9][0|1|2|3|4|5|6|7|8|9][0|1|2|3|4|5|6|7|8|9]"
                            "[0|1|2|3|4|5|6|7|8|9][0|1|2|3|4|5|6|7|8|9][0|1|2|3|4|5|6|7|8|9]"
                            "[0|1|2|3|4|5|6|7|8|9][0|1|2|3|4|5|6|7|8|9][0|1|2|3|4|5|6|7|8|9]"
                            "[0|1|2|3|4|5|6|7|8|9]"), 0);
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, "keep");
    CHECK(bank_form(&b, "[a|b", 0) == -1);
    CHECK_STR(b.s, "keep");
    sbuf_free(&b);
}

static void choose_is_seeded_and_covers_forms(void)
{
    const char *t = "[a|b|c][x|y]";
    int seen[6] = {0};
    rng_t r1, r2;
    rng_seed(&r1, 5);
    rng_seed(&r2, 5);
    for (int i = 0; i < 300; i++) {
        sbuf a, b;
        sbuf_init(&a);
        sbuf_init(&b);
        CHECK(bank_choose(&a, t, &r1) == 0);
        CHECK(bank_choose(&b, t, &r2) == 0);
        CHECK_STR(a.s, b.s);
        for (long k = 0; k < 6; k++) {
            char *s = form(t, k);
            seen[k] += !strcmp(s, a.s);
            free(s);
        }
        sbuf_free(&a);
        sbuf_free(&b);
    }
    for (int k = 0; k < 6; k++) CHECK(seen[k] > 20);
    /* a template without groups takes nothing from the generator, so the
     * eval banks' tasks are what they were before groups existed */
    rng_t q;
    rng_seed(&q, 5);
    rng_seed(&r1, 5);
    sbuf b;
    sbuf_init(&b);
    bank_choose(&b, "plain", &q);
    CHECK_EQ_INT((long long)rng_u64(&q), (long long)rng_u64(&r1));
    sbuf_free(&b);
}

/* Lower case, letters, digits, slots and non-ASCII only: "How much is
 * the {product}?" and "how much is the {product}" are one phrasing. */
static char *norm(const char *s)
{
    char *o = xstrdup(s), *w = o;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x80 || isalnum(c) || c == '{' || c == '}') *w++ = (char)tolower(c);
    }
    *w = 0;
    return o;
}

static json_t *forms_of(const json_t *list)
{
    json_t *set = json_object();
    size_t i;
    json_t *t;
    json_array_foreach(list, i, t) {
        long n = bank_forms(json_string_value(t));
        CHECK(n > 0);
        for (long k = 0; k < n; k++) {
            char *s = form(json_string_value(t), k), *m = norm(s);
            json_object_set_new(set, m, json_true());
            free(s);
            free(m);
        }
    }
    return set;
}

static json_t *load(const char *name)
{
    char *p = hat_data_path(name);
    json_t *j = p ? json_load_path(p) : NULL;
    if (!j) fprintf(stderr, "  cannot load %s\n", name);
    free(p);
    return j;
}

static void train_and_eval_forms_are_disjoint(void)
{
    const char *top = getenv("HAT_TOP");
    char *fp = xasprintf("%s/examples/tools/fresh-phrasings.json", top ? top : ".");
    json_t *fresh = json_load_path(fp);
    CHECK(fresh != NULL);
    long train_forms = 0;
    for (int i = 0; i < TASK_N_INTENTS; i++) {
        char *tn = xasprintf("tasks/train/%s.json", task_intents[i]);
        char *en = xasprintf("tasks/eval/%s.json", task_intents[i]);
        json_t *tb = load(tn), *eb = load(en);
        CHECK(tb && eb);
        if (tb && eb) {
            json_t *tf = forms_of(json_object_get(tb, "templates"));
            json_t *ef = forms_of(json_object_get(eb, "templates"));
            json_t *ff = forms_of(json_object_get(fresh, task_intents[i]));
            train_forms += (long)json_object_size(tf);
            const char *k;
            json_t *v;
            json_object_foreach(tf, k, v) {
                if (json_object_get(ef, k)) { CHECK(!"a train form is an eval template"); fprintf(stderr, "  %s: %s\n", tn, k); }
                if (json_object_get(ff, k)) { CHECK(!"a train form is a fresh phrasing"); fprintf(stderr, "  %s: %s\n", tn, k); }
            }
            json_decref(tf);
            json_decref(ef);
            json_decref(ff);
        }
        json_decref(tb);
        json_decref(eb);
        free(tn);
        free(en);
    }
    /* the groups give the train split thousands of phrasings, not the ~100
     * templates it had before them (the count README and task-gen(1) give) */
    printf("# %ld train forms\n", train_forms);
    CHECK(train_forms > 2000);
    json_decref(fresh);
    free(fp);
}

int main(void)
{
    RUN(groups_expand_in_order);
    RUN(bad_groups_have_no_forms);
    RUN(choose_is_seeded_and_covers_forms);
    RUN(train_and_eval_forms_are_disjoint);
    TEST_MAIN_END();
}
