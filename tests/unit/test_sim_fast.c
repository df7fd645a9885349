/* test_sim_fast.c — the simulator's shortcuts for the judge give what the
 * plain functions give: sim_tool_content against sim_tool_call (content,
 * hook and the whole record, call after call, faults and refusals
 * included), the harness index against harness.h's lookups,
 * sim_unsupported against sim_unsupported_value, sim_count_measures
 * against the two counters, and the world-answer cache across harness
 * changes against a fresh simulator. */
#include "test.h"
#include "harness.h"
#include "jsonl.h"
#include "sim.h"
#include "util.h"
#include "world.h"

#include <string.h>

static json_t *H;
static world *W;

static void setup(void)
{
    H = harness_load(test_example_harness());
    W = world_from_json(world_generate(5, 40), "gen");
    if (!H || !W) { fprintf(stderr, "setup failed\n"); exit(1); }
}

static json_t *task(const char *text, json_t *calls, json_t *faults)
{
    return json_pack("{s:s,s:{s:s,s:s},s:s,s:{s:s,s:o,s:{},s:[],s:[]},s:o}", "id", "t1",
                     "viewer", "nick", "momo88", "text", text, "intent", "price",
                     "gold", "skill", "price", "calls", calls ? calls : json_array(), "facts", "must", "must_not",
                     "faults", faults ? faults : json_array());
}

/* Calls of every kind: answers, a fault retried, refusals, skills. */
static const struct { const char *tool, *args; } calls[] = {
    { "get_product", "{\"product\":\"P003\"}" },            /* faulted (timeout, twice) */
    { "get_product", "{\"product\":\"P003\"}" },
    { "get_product", "{\"product\":\"P003\"}" },
    { "get_product", "{\"product\":\"P004\"}" },
    { "get_product", "\"{\\\"product\\\":\\\"P002\\\"}\"" },  /* arguments as a JSON string */
    { "get_product", "\"{not json\"" },
    { "get_product", "{\"product\":5}" },
    { "get_product", "{\"product\":\"P001\",\"colour\":\"red\"}" },
    { "recommend_size", "{\"product\":\"P001\",\"height_cm\":170}" },
    { "recommend_size", "{\"product\":\"P001\",\"height_cm\":170,\"weight_kg\":60}" },
    { "fly_drone", "{}" },
    { "load_skill", "{\"skill\":\"price_promo\"}" },
    { "load_skill", "{\"skill\":\"haggling\"}" },
    { "load_skill", "{\"skill\":1}" },
    { "load_skill", "{}" },
    { "load_skill", "[]" },
    { "caf\xc3\xa9", "{}" },                                /* a name that is not ASCII */
    { "", "null" },
};

static void tool_content_is_tool_call(void)
{
    json_t *gold = json_pack("[{s:s,s:{s:s}}]", "function", "product.lookup", "arguments", "product", "P003");
    json_t *t = task("price of P003?", gold, json_pack("[{s:i,s:s,s:i}]", "call", 0, "type", "timeout", "times", 2));
    sim *a = sim_new(W), *b = sim_new(W);
    CHECK_EQ_INT(sim_set_harness(a, H, NULL), 0);
    CHECK_EQ_INT(sim_set_harness(b, H, NULL), 0);
    json_decref(sim_begin(a, t));
    json_decref(sim_begin(b, t));
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        json_t *args = json_loads(calls[i].args, JSON_DECODE_ANY, NULL);
        sim_turn(a);
        sim_turn(b);
        json_t *m = sim_tool_call(a, calls[i].tool, args);
        const char *hook = "unset";
        json_t *c = sim_tool_content(b, calls[i].tool, args, &hook);
        CHECK((m == NULL) == (c == NULL));
        if (m && c) {
            CHECK_STR(json_string_value(c), json_string_value(json_object_get(m, "content")));
            const char *mh = json_string_value(json_object_get(m, "hook"));
            CHECK((mh == NULL) == (hook == NULL));
            if (mh && hook) CHECK_STR(hook, mh);
        }
        CHECK(json_equal(sim_record(a), sim_record(b)));
        if (t_failed_here) fprintf(stderr, "  call %zu: %s %s\n", i, calls[i].tool, calls[i].args);
        json_decref(m);
        json_decref(c);
        json_decref(args);
    }
    /* the replies after them, and the evidence numbers, agree too */
    const char *reply = "@momo88 P003 is 199 now, code LIVE20";
    json_t *na = sim_reply(a, reply), *nb = sim_reply(b, reply);
    CHECK(json_equal(na, nb));
    CHECK(json_equal(sim_record(a), sim_record(b)));
    json_decref(na);
    json_decref(nb);
    json_decref(t);
    sim_free(a);
    sim_free(b);
}

static void harness_index_is_harness_lookup(void)
{
    sim *s = sim_new(W);
    const char *probe[] = { "get_product", "recommend_size", "load_skill", "price_promo", "stock_variants",
                            "product.lookup", "size.recommend", "price", "stock", "reply", "", "nope", NULL };
    CHECK(sim_tool_by_name(s, "get_product") == NULL);          /* no harness yet */
    CHECK_EQ_INT(sim_set_harness(s, H, NULL), 0);
    for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
        const char *p = probe[i];
        CHECK(sim_tool_by_name(s, p) == harness_tool_by_name(H, p));
        CHECK(sim_tool_by_function(s, p) == harness_tool_by_function(H, p));
        CHECK(sim_skill_by_name(s, p) == harness_skill_by_name(H, p));
        CHECK(sim_skill_by_function(s, p) == harness_skill_by_function(H, p));
    }
    CHECK(sim_tool_by_name(s, "get_product") != NULL);
    CHECK(sim_skill_by_name(s, "price_promo") != NULL);
    /* every tool and skill, by both fields, and a harness whose entries
     * repeat a name or lack one: the first match, as harness.h finds it */
    json_t *h2 = json_deep_copy(H);
    json_t *tools = json_object_get(h2, "tools");
    json_array_append_new(tools, json_pack("{s:s,s:s}", "name", "get_product", "function", "other.fn"));
    json_array_insert_new(tools, 0, json_pack("{s:i}", "name", 7));
    CHECK_EQ_INT(sim_set_harness(s, h2, NULL), 0);
    size_t i;
    json_t *v;
    json_array_foreach(tools, i, v) {
        const char *n = json_string_value(json_object_get(v, "name")), *f = json_string_value(json_object_get(v, "function"));
        CHECK(sim_tool_by_name(s, n) == harness_tool_by_name(h2, n));
        CHECK(sim_tool_by_function(s, f) == harness_tool_by_function(h2, f));
    }
    json_array_foreach(json_object_get(h2, "skills"), i, v) {
        const char *n = json_string_value(json_object_get(v, "name")), *f = json_string_value(json_object_get(v, "function"));
        CHECK(sim_skill_by_name(s, n) == harness_skill_by_name(h2, n));
        CHECK(sim_skill_by_function(s, f) == harness_skill_by_function(h2, f));
    }
    CHECK(sim_tool_by_function(s, "other.fn") == json_array_get(tools, json_array_size(tools) - 1));
    sim_free(s);
    json_decref(h2);
}

static void unsupported_is_unsupported_value(void)
{
    json_t *t = task("is 42 ok for SUMMER5 at 3.5?", NULL, NULL);
    sim *s = sim_new(W);
    CHECK_EQ_INT(sim_set_harness(s, H, NULL), 0);
    json_decref(sim_begin(s, t));
    const char *replies[] = { "@momo88 42 it is", "@momo88 it is 199", "3.5 and 42.", "code SUMMER5 works",
                              "code WINTER9 works", "", "@x 7 @y 8", "P003 costs 0.5" };
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < sizeof replies / sizeof replies[0]; i++) {
            char *a = sim_unsupported(s, replies[i]);
            char *b = sim_unsupported_value(replies[i], json_object_get(sim_record(s), "evidence"), "is 42 ok for SUMMER5 at 3.5?");
            CHECK((a == NULL) == (b == NULL));
            if (a && b) CHECK_STR(a, b);
            free(a);
            free(b);
        }
        /* more evidence: an answer, then a refusal (no evidence) */
        json_t *args = json_pack("{s:s}", "product", round ? "P002" : "P003");
        json_decref(sim_tool_call(s, "get_product", args));
        json_decref(sim_tool_call(s, "fly_drone", args));
        json_decref(args);
    }
    json_decref(t);
    sim_free(s);
}

static void measures_in_one_walk(void)
{
    const char *texts[] = { "", "plain", "caf\xc3\xa9 \xf0\x9f\x98\x80\xf0\x9f\x98\x80", "\xe2\x9c\xa8 ok",
                            "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9", "bad \xff tail \xf0\x9f\x98\x80",
                            "\xf0\x9f\x8f\xbb skin", "\xe6\x98\x9f\xe6\x98\x9f!" };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        long c, e;
        sim_count_measures(texts[i], &c, &e);
        CHECK_EQ_INT(c, sim_count_chars(texts[i]));
        CHECK_EQ_INT(e, sim_count_emoji(texts[i]));
    }
    long c, e;
    sim_count_measures("\xf0\x9f\x98\x80 hi \xf0\x9f\x98\x80", &c, &e);
    CHECK_EQ_INT(c, 6);
    CHECK_EQ_INT(e, 2);
}

/* The answer cache keeps only answers under the harness in use: after
 * each switch every call answers as a fresh simulator would. */
static void answers_follow_the_harness(void)
{
    json_t *h2 = json_deep_copy(H), *hooks = json_object_get(h2, "hooks");
    json_object_set_new(hooks, "error_format", json_string("E{code}: {message}"));
    json_object_set_new(json_object_get(hooks, "result_envelope"), "ok_key", json_string("success"));
    json_t *t = task("x", NULL, NULL);
    sim *s = sim_new(W);
    /* the two harnesses answer differently, for answers and for errors */
    for (int k = 0; k < 2; k++) {
        json_t *args = json_pack("{s:s}", "product", k ? "P999" : "P003");
        sim *a = sim_new(W), *b = sim_new(W);
        sim_set_harness(a, H, NULL);
        sim_set_harness(b, h2, NULL);
        json_decref(sim_begin(a, t));
        json_decref(sim_begin(b, t));
        json_t *ma = sim_tool_call(a, "get_product", args), *mb = sim_tool_call(b, "get_product", args);
        CHECK(!json_equal(json_object_get(ma, "content"), json_object_get(mb, "content")));
        json_decref(ma);
        json_decref(mb);
        json_decref(args);
        sim_free(a);
        sim_free(b);
    }
    for (int round = 0; round < 6; round++) {
        json_t *h = round % 2 ? h2 : H;
        CHECK_EQ_INT(sim_set_harness(s, h, NULL), 0);
        json_decref(sim_begin(s, t));
        sim *f = sim_new(W);
        CHECK_EQ_INT(sim_set_harness(f, h, NULL), 0);
        json_decref(sim_begin(f, t));
        for (int k = 0; k < 40; k++) {
            char id[16];
            snprintf(id, sizeof id, "P%03d", 1 + (k * 7 + round) % 45);     /* some not in the world */
            json_t *args = json_pack("{s:s}", "product", id);
            json_t *a = sim_tool_call(s, "get_product", args), *b = sim_tool_call(f, "get_product", args);
            CHECK(json_equal(a, b));
            json_decref(a);
            json_decref(b);
            json_decref(args);
        }
        CHECK(json_equal(sim_record(s), sim_record(f)));
        sim_free(f);
    }
    json_decref(t);
    json_decref(h2);
    sim_free(s);
}

int main(void)
{
    setup();
    RUN(tool_content_is_tool_call);
    RUN(harness_index_is_harness_lookup);
    RUN(unsupported_is_unsupported_value);
    RUN(measures_in_one_walk);
    RUN(answers_follow_the_harness);
    json_decref(H);
    world_free(W);
    TEST_MAIN_END();
}
