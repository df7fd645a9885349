/* test_diagnose.c — grouping crafted verdicts by reason and element, the
 * reason-to-element map, and the harness evolution check with a scripted
 * policy that only knows one skill name. */
#include "test.h"
#include "diagnose.h"
#include "harness.h"
#include "jsonl.h"
#include "tasks.h"
#include "util.h"

#include <stdint.h>

static const char *H =
    "{\"tools\":[{\"name\":\"get_item\",\"function\":\"product.lookup\"}],"
    "\"skills\":[{\"name\":\"pp\",\"function\":\"price\"}],"
    "\"system_prompt\":{\"blocks\":[{\"id\":\"fmt\",\"text\":\"x\",\"params\":{\"max_chars\":{\"value\":80}}}]},"
    "\"hooks\":{}}";

static json_t *J(const char *s) { json_t *v = json_loads(s, 0, NULL); CHECK(v != NULL); return v; }

static const json_t *group(const json_t *gs, const char *kind, const char *key)
{
    size_t i;
    json_t *g;
    json_array_foreach(gs, i, g)
        if (!strcmp(json_string_value(json_object_get(g, "group")), kind) &&
            json_object_get(g, "key") && !strcmp(json_string_value(json_object_get(g, "key")), key)) return g;
    return NULL;
}

static void elements_from_reasons(void)
{
    char *err = NULL;
    diag *d = diag_new(2, &err);
    CHECK(d != NULL);
    json_t *h = J(H), *e;
    e = diag_element(d, "missing_call", "needed call product.lookup not made", h, NULL);
    CHECK_STR(json_string_value(json_object_get(e, "key")), "tool:product.lookup");
    CHECK_STR(json_string_value(json_object_get(e, "name")), "get_item");
    json_decref(e);
    e = diag_element(d, "invalid_arguments", "get_item: product is required", h, NULL);
    CHECK_STR(json_string_value(json_object_get(e, "key")), "tool:product.lookup");
    json_decref(e);
    e = diag_element(d, "reply_too_long", "131 characters, at most 80 allowed", h, NULL);
    CHECK_STR(json_string_value(json_object_get(e, "key")), "prompt:fmt.max_chars");
    json_decref(e);
    e = diag_element(d, "unknown_skill", "no skill named 'old_price'", h, NULL);
    CHECK_STR(json_string_value(json_object_get(e, "key")), "skill:old_price");
    json_decref(e);
    e = diag_element(d, "fact_missing", "price 199 not stated", h, "coupon");
    CHECK_STR(json_string_value(json_object_get(e, "key")), "skill:price");
    CHECK_STR(json_string_value(json_object_get(e, "name")), "pp");
    json_decref(e);
    e = diag_element(d, "reply_rejected", "the last reply was held by reply_filter", h, NULL);
    CHECK_STR(json_string_value(json_object_get(e, "key")), "hook:reply_filter");
    json_decref(e);
    e = diag_element(d, "wrong_skill", "loaded stock, the request needs price", h, NULL);
    CHECK_STR(json_string_value(json_object_get(e, "key")), "skill:price");
    json_decref(e);
    json_decref(h);
    diag_free(d);
}

static void groups_count_and_sort(void)
{
    char *err = NULL;
    diag *d = diag_new(1, &err);
    json_t *h = J(H);
    const char *v[] = {
        "{\"id\":\"a\",\"intent\":\"price\",\"pass\":false,\"reasons\":[{\"code\":\"missing_call\",\"component\":\"tool_rationality\",\"detail\":\"needed call product.lookup not made\"},{\"code\":\"reply_too_long\",\"component\":\"effectiveness\",\"detail\":\"99 characters, at most 80 allowed\"}]}",
        "{\"id\":\"b\",\"intent\":\"price\",\"pass\":false,\"reasons\":[{\"code\":\"missing_call\",\"component\":\"tool_rationality\",\"detail\":\"needed call product.lookup not made\"},{\"code\":\"unknown_skill\",\"component\":\"skill_selection\",\"detail\":\"no skill named 'old_price'\"}]}",
        "{\"id\":\"c\",\"intent\":\"price\",\"pass\":true,\"reasons\":[]}" };
    for (int i = 0; i < 3; i++) {
        json_t *x = J(v[i]);
        CHECK_EQ_INT(diag_add(d, x, h, &err), 0);
        json_decref(x);
    }
    json_t *bad = J("{\"id\":\"z\"}");
    CHECK_EQ_INT(diag_add(d, bad, h, &err), -1);
    CHECK(err && strstr(err, "pass"));
    free(err);
    json_decref(bad);
    json_t *gs = diag_groups(d);
    const json_t *s = json_array_get(gs, 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(s, "verdicts")), 3);
    CHECK_EQ_INT(json_integer_value(json_object_get(s, "failed")), 2);
    /* the biggest reason group comes first */
    const json_t *first = json_array_get(gs, 1);
    CHECK_STR(json_string_value(json_object_get(first, "key")), "missing_call");
    CHECK_EQ_INT(json_integer_value(json_object_get(first, "count")), 2);
    CHECK_NEAR(json_number_value(json_object_get(first, "share")), 1.0, 1e-12);
    CHECK_EQ_INT(json_array_size(json_object_get(first, "examples")), 1);   /* --examples 1 */
    const json_t *tool = group(gs, "element", "tool:product.lookup");
    CHECK(tool != NULL);
    CHECK_EQ_INT(json_integer_value(json_object_get(tool, "count")), 2);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(tool, "names"), "get_item")), 2);
    const json_t *p = group(gs, "element", "prompt:fmt.max_chars");
    CHECK(p && json_integer_value(json_object_get(p, "count")) == 1);
    CHECK(group(gs, "element", "skill:old_price") != NULL);
    char *text = diag_text(gs);
    CHECK(strstr(text, "3 verdicts, 2 failed") != NULL);
    CHECK(strstr(text, "tool:product.lookup") != NULL);
    free(text);
    json_decref(gs);
    json_decref(h);
    diag_free(d);
}

/* A policy that memorised one skill name: load "engagement", then greet. */
static char *greeter(void *ctx, const json_t *harness, const json_t *messages, void *user)
{
    size_t n = json_array_size(messages);
    if (n == 1) return xstrdup("<tool_call>\n{\"name\": \"load_skill\", \"arguments\": {\"skill\": \"engagement\"}}\n</tool_call>");
    const char *first = json_string_value(json_object_get(json_array_get(messages, 0), "content"));
    const char *colon = strstr(first, ": ");
    char *nick = xstrndup(first, colon ? (size_t)(colon - first) : 0);
    char *s = xasprintf("@%s welcome!", nick);
    free(nick);
    return s;
}

static void evolve_measures_error_reduction(void)
{
    char *err = NULL;
    json_t *edited = harness_load(test_example_harness()), *wj = world_generate(1, 40);
    CHECK(edited && wj);
    world *w = world_from_json(wj, "world");
    /* The harness before the edit called the engagement skill "hello_desk". */
    json_t *before = json_deep_copy(edited);
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(before, "skills"), i, s)
        if (!strcmp(json_string_value(json_object_get(s, "name")), "engagement"))
            json_object_set_new(s, "name", json_string("hello_desk"));
    taskgen *g = taskgen_new(w, "eval");
    json_t *cases = json_array();
    for (long k = 0; k < 6; k++)
        json_array_append_new(cases, json_pack("{s:s,s:o}", "id", "live-x", "task", taskgen_make(g, 3, k, "greeting", 0)));
    json_array_append_new(cases, json_pack("{s:s}", "id", "ifeval-x"));   /* no task: not played */
    judge *j = judge_new(w, NULL, &err);
    diag_evolve_opts o = { NULL, NULL, w, j, greeter, NULL, ROLLOUT_PARAMS_INIT, 4, 1 };
    json_t *res = diag_evolve(&o, cases, before, edited, &err);
    CHECK(res != NULL);
    if (!res) { fprintf(stderr, "  %s\n", err); free(err); }
    CHECK_EQ_INT(json_integer_value(json_object_get(res, "cases")), 6);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(res, "before"), "errors")), 6);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(res, "after"), "errors")), 0);
    CHECK_NEAR(json_number_value(json_object_get(res, "error_reduction")), 1.0, 1e-12);
    CHECK_EQ_INT(json_integer_value(json_object_get(res, "fixed")), 6);
    CHECK(json_integer_value(json_object_get(json_object_get(json_object_get(res, "before"), "reasons"), "unknown_skill")) >= 6);
    /* The same harness on both sides: nothing changes, reduction 0. */
    json_t *same = diag_evolve(&o, cases, edited, edited, &err);
    CHECK(same && json_is_null(json_object_get(same, "error_reduction")));   /* no errors before */
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(same, "before"), "errors")), 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(same, "broken")), 0);
    json_decref(same);
    json_decref(res);
    judge_free(j);
    taskgen_free(g);
    json_decref(cases);
    json_decref(before);
    json_decref(edited);
    world_free(w);
}

int main(void)
{
    RUN(elements_from_reasons);
    RUN(groups_count_and_sort);
    RUN(evolve_measures_error_reduction);
    TEST_MAIN_END();
}
