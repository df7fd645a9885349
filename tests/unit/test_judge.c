/* test_judge.c — the judge: teacher trajectories score full marks over
 * thousands of tasks and over HSA variants of the harness; one negative
 * case per check, each with its reason code; the no-replay (GRPO) path
 * agrees with the replay; the fast verdict line equals the JSON one;
 * token counting; agreement statistics; calibration recovers known
 * weights; the labeller driven through a real pseudo-terminal. */
#include "test.h"
#include "test_pty.h"
#include "harness.h"
#include "harness_compile.h"
#include "grpo.h"
#include "hsa.h"
#include "jsonl.h"
#include "judge.h"
#include "sim.h"
#include "tasks.h"
#include "teacher.h"
#include "util.h"
#include "world.h"

#include <fcntl.h>
#include <stdarg.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static json_t *H;
static world *W;
static teacher *T;
static judge *J;
static taskgen *G;

static void setup(void)
{
    H = harness_load(test_example_harness());
    W = world_from_json(world_generate(11, 120), "gen");
    T = teacher_new();
    char *err = NULL;
    J = W ? judge_new(W, NULL, &err) : NULL;
    G = W ? taskgen_new(W, "train") : NULL;
    if (!H || !W || !T || !J || !G) { fprintf(stderr, "setup failed: %s\n", err ? err : ""); exit(1); }
}

static int has_reason(const judge_verdict *v, const char *code)
{
    size_t i;
    json_t *r;
    json_array_foreach(v->reasons, i, r)
        if (!strcmp(json_string_value(json_object_get(r, "code")), code)) return 1;
    return 0;
}

static void show(const char *what, const json_t *task, const judge_verdict *v)
{
    char *r = json_compact(v->reasons);
    fprintf(stderr, "  %s %s (%s): %s\n", what, json_string_value(json_object_get(task, "id")),
            json_string_value(json_object_get(task, "intent")), r);
    free(r);
}

/* ---- teacher trajectories score full marks ---------------------------------------- */

/* n tasks under h through the teacher; returns how many did not score
 * full marks.  keep = fraction of trajectories keeping their retries. */
static int teacher_marks(const json_t *h, const char *split, int n, double faults, double keep)
{
    taskgen *g = taskgen_new(W, split);
    sim *s = sim_new(W);
    sim_set_harness(s, h, NULL);
    teacher_opts o = { 0.3, keep };
    int bad = 0, shown = 0;
    for (int i = 0; i < n; i++) {
        json_t *task = taskgen_make(g, 21, i, NULL, faults);
        rng_t r;
        rng_derive(&r, 3, (uint64_t)i);
        char *err = NULL;
        json_t *msgs = teacher_run(T, s, task, &r, &o, NULL, &err);
        if (!msgs) { free(err); json_decref(task); continue; }   /* teacher's own failures are its tests' */
        judge_verdict v;
        int rc = judge_score(J, task, h, msgs, &v);
        int full = !rc && v.pass && v.total == 1 && !json_array_size(v.reasons);
        if (!full) { bad++; if (shown++ < 5) show("not full marks:", task, &v); }
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(task);
    }
    sim_free(s);
    taskgen_free(g);
    return bad;
}

static void test_teacher_full_marks(void)
{
    CHECK_EQ_INT(teacher_marks(H, "train", 3000, 0.3, 0.3), 0);
    CHECK_EQ_INT(teacher_marks(H, "eval", 1000, 0.3, 0.3), 0);
}

/* HSA variants of the harness, the trajectories relabelled by hsa. */
static void test_hsa_variants_full_marks(void)
{
    hsa_vocab *vs[2] = { hsa_vocab_load("train"), hsa_vocab_load("heldout") };
    CHECK(vs[0] && vs[1]);
    if (!vs[0] || !vs[1]) return;
    hsa_opts o;
    hsa_opts_default(&o);
    sim *s = sim_new(W);
    sim_set_harness(s, H, NULL);
    /* Retries kept in full: a pruned retry is invisible to the relabeller. */
    teacher_opts to = { 0.3, 1 };
    int bad = 0, shown = 0, n = 0;
    for (int i = 0; i < 1500; i++) {
        json_t *task = taskgen_make(G, 33, i, NULL, 0.3);
        rng_t r;
        rng_derive(&r, 4, (uint64_t)i);
        char *err = NULL;
        json_t *msgs = teacher_run(T, s, task, &r, &to, NULL, &err);
        if (!msgs) { free(err); json_decref(task); continue; }
        json_t *rec = json_pack("{s:s,s:O,s:O,s:o,s:{s:[]}}", "id", "x", "task_id", json_object_get(task, "id"),
                                "harness", H, "messages", msgs, "meta", "hsa");
        const char *why = NULL;
        json_t *out = hsa_augment_record(NULL, vs[i % 2], &o, rec, NULL, 9, (uint64_t)i, 0, &why);
        if (out && json_is_object(json_object_get(out, "harness"))) {
            judge_verdict v;
            int rc = judge_score(J, task, json_object_get(out, "harness"), json_object_get(out, "messages"), &v);
            n++;
            if (rc || !v.pass || v.total != 1) { bad++; if (shown++ < 5) show("HSA variant:", task, &v); }
            judge_verdict_clear(&v);
        }
        json_decref(out);
        json_decref(rec);
        json_decref(task);
    }
    CHECK(n > 1000);
    CHECK_EQ_INT(bad, 0);
    sim_free(s);
    hsa_vocab_free(vs[0]);
    hsa_vocab_free(vs[1]);
}

/* ---- building trajectories by hand ------------------------------------------------ */

static json_t *call(const char *name, const char *args)
{
    json_t *a = json_loads(args, 0, NULL);
    return json_pack("{s:s,s:{s:s,s:o}}", "type", "function", "function", "name", name, "arguments", a ? a : json_object());
}

/* An assistant message with the calls given (NULL-terminated), or a reply. */
static json_t *calls(json_t *c, ...)
{
    json_t *m = json_pack("{s:s,s:s,s:[]}", "role", "assistant", "content", "", "tool_calls");
    va_list ap;
    va_start(ap, c);
    for (; c; c = va_arg(ap, json_t *)) json_array_append_new(json_object_get(m, "tool_calls"), c);
    va_end(ap);
    return m;
}

static json_t *reply(const char *text) { return json_pack("{s:s,s:s}", "role", "assistant", "content", text); }

/* The full conversation: the policy's messages played through the sim. */
static json_t *play(const json_t *task, const json_t *h, json_t *asst)
{
    sim *s = sim_new(W);
    sim_set_harness(s, h, NULL);
    json_t *msgs = json_array();
    json_array_append_new(msgs, sim_begin(s, task));
    size_t i;
    json_t *a;
    json_array_foreach(asst, i, a) {
        int done;
        json_t *next = sim_step(s, a, &done);
        json_array_append(msgs, a);
        json_array_extend(msgs, next);
        json_decref(next);
    }
    json_decref(asst);
    sim_free(s);
    return msgs;
}

static json_t *task_of(const char *intent, long i, double faults)
{
    return taskgen_make(G, 5, i, intent, faults);
}

static const char *nick(const json_t *t) { return json_string_value(json_object_get(json_object_get(t, "viewer"), "nick")); }
static const char *product(const json_t *t) { return json_string_value(json_object_get(json_object_get(t, "context"), "product")); }

/* A price task whose product has a list price above the live price and no
 * fault; the correct policy messages for it. */
static json_t *price_task(double *price, double *list)
{
    for (long i = 0; i < 500; i++) {
        json_t *t = task_of("price", i, 0);
        const json_t *p = world_product_by_id(W, product(t));
        *price = json_number_value(json_object_get(json_object_get(json_object_get(t, "gold"), "facts"), "price"));
        *list = json_number_value(json_object_get(p, "list_price"));
        if (*list > *price + 1 && !world_flash_sale(W, product(t))) return t;
        json_decref(t);
    }
    return NULL;
}

static json_t *price_policy(const json_t *t, const char *skill, const char *text)
{
    char *args = xasprintf("{\"product\":\"%s\"}", product(t));
    json_t *a = json_pack("[o,o,o]", calls(call("load_skill", skill), NULL),
                          calls(call("get_product", args), NULL), reply(text));
    free(args);
    return a;
}

static json_t *no_hook(const char *hook)
{
    json_t *h = json_deep_copy(H);
    json_object_del(json_object_get(h, "hooks"), hook);
    return h;
}

static void score(const json_t *t, const json_t *h, json_t *msgs, judge_verdict *v)
{
    CHECK_EQ_INT(judge_score(J, t, h, msgs, v), 0);
    json_decref(msgs);
}

/* ---- one negative case per check ------------------------------------------------------- */

static void test_correct_by_hand(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    CHECK(t != NULL);
    if (!t) return;
    char *text = xasprintf("@%s it's ¥%g now!", nick(t), price);
    judge_verdict v;
    score(t, H, play(t, H, price_policy(t, "{\"skill\":\"price_promo\"}", text)), &v);
    CHECK(v.pass);
    CHECK_NEAR(v.total, 1, 1e-12);
    CHECK_EQ_INT((long)json_array_size(v.reasons), 0);
    judge_verdict_clear(&v);
    free(text);
    json_decref(t);
}

static void test_wrong_price_fails_accuracy(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    json_t *h = no_hook("factual_risk");           /* let the wrong reply through */
    /* An invented number. */
    char *text = xasprintf("@%s it's ¥%g now!", nick(t), price + 7);
    judge_verdict v;
    score(t, h, play(t, h, price_policy(t, "{\"skill\":\"price_promo\"}", text)), &v);
    CHECK_NEAR(v.score[JUDGE_ACCURACY], 0, 0);
    CHECK(has_reason(&v, "unsupported_value"));
    CHECK(!v.pass);
    judge_verdict_clear(&v);
    free(text);
    /* A number the tool did return, but not the price: the list price. */
    text = xasprintf("@%s it's ¥%g now!", nick(t), list);
    score(t, h, play(t, h, price_policy(t, "{\"skill\":\"price_promo\"}", text)), &v);
    CHECK_NEAR(v.score[JUDGE_ACCURACY], 0, 0);
    CHECK(has_reason(&v, "fact_wrong"));
    CHECK(!has_reason(&v, "unsupported_value"));
    judge_verdict_clear(&v);
    free(text);
    /* No price at all: not wrong, but the intent is not answered (every
     * fact missing: nothing served). */
    text = xasprintf("@%s it's a good one!", nick(t));
    score(t, h, play(t, h, price_policy(t, "{\"skill\":\"price_promo\"}", text)), &v);
    CHECK_NEAR(v.score[JUDGE_ACCURACY], 1, 0);
    CHECK_NEAR(v.score[JUDGE_EFFECTIVENESS], 0, 0);
    CHECK(has_reason(&v, "fact_missing"));
    judge_verdict_clear(&v);
    free(text);
    json_decref(h);
    json_decref(t);
}

static void test_long_reply_loses_effectiveness(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    json_t *h = no_hook("reply_format");           /* the prompt's limit still binds */
    double maxc;
    CHECK_EQ_INT(harness_param(h, "max_chars", &maxc), 0);
    sbuf b;
    sbuf_init(&b);
    sbuf_printf(&b, "@%s it's ¥%g now", nick(t), price);
    harness_measure m;
    for (harness_measure_text(b.s, &m); m.chars <= maxc; harness_measure_text(b.s, &m))
        sbuf_puts(&b, ", really worth a look");
    judge_verdict v;
    score(t, h, play(t, h, price_policy(t, "{\"skill\":\"price_promo\"}", b.s)), &v);
    CHECK_NEAR(v.score[JUDGE_EFFECTIVENESS], 0.5, 0);
    CHECK_NEAR(v.score[JUDGE_ACCURACY], 1, 0);
    CHECK(has_reason(&v, "reply_too_long"));
    judge_verdict_clear(&v);
    /* Under the example harness the reply_format hook holds it: rejected. */
    score(t, H, play(t, H, price_policy(t, "{\"skill\":\"price_promo\"}", b.s)), &v);
    CHECK(has_reason(&v, "reply_rejected"));
    CHECK_NEAR(v.score[JUDGE_EFFECTIVENESS], 0, 0);  /* held: the viewer got nothing */
    CHECK_NEAR(v.score[JUDGE_ACCURACY], 1, 0);       /* but what it says is right */
    CHECK(!v.pass);
    judge_verdict_clear(&v);
    sbuf_free(&b);
    json_decref(h);
    json_decref(t);
}

static void test_effectiveness_checks(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    json_t *h = no_hook("reply_filter");
    char *text = xasprintf("it's ¥%g now!", price);               /* no @nick */
    judge_verdict v;
    score(t, h, play(t, h, price_policy(t, "{\"skill\":\"price_promo\"}", text)), &v);
    CHECK(has_reason(&v, "not_addressed"));
    CHECK_NEAR(v.score[JUDGE_EFFECTIVENESS], 0.5, 0);
    judge_verdict_clear(&v);
    free(text);
    text = xasprintf("@%s the best deal: ¥%g!", nick(t), price);   /* banned claim */
    score(t, h, play(t, h, price_policy(t, "{\"skill\":\"price_promo\"}", text)), &v);
    CHECK(has_reason(&v, "banned_claim"));
    CHECK_NEAR(v.score[JUDGE_EFFECTIVENESS], 0, 0);
    judge_verdict_clear(&v);
    free(text);
    json_decref(t);
    /* Ambiguous request answered without a question. */
    t = task_of("ambiguous", 1, 0);
    text = xasprintf("@%s welcome to the stream!", nick(t));
    json_t *a = json_pack("[o,o]", calls(call("load_skill", "{\"skill\":\"engagement\"}"), call("load_skill", "{\"skill\":\"clarify\"}"), NULL), reply(text));
    score(t, h, play(t, h, a), &v);
    CHECK(has_reason(&v, "no_clarifying_question"));
    CHECK_NEAR(v.score[JUDGE_EFFECTIVENESS], 0, 0);
    judge_verdict_clear(&v);
    free(text);
    json_decref(t);
    json_decref(h);
}

static void test_repeated_call_loses_tool_rationality(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    char *args = xasprintf("{\"product\":\"%s\"}", product(t)), *text = xasprintf("@%s ¥%g now", nick(t), price);
    json_t *a = json_pack("[o,o,o,o]", calls(call("load_skill", "{\"skill\":\"price_promo\"}"), NULL),
                          calls(call("get_product", args), NULL), calls(call("get_product", args), NULL), reply(text));
    judge_verdict v;
    score(t, H, play(t, H, a), &v);
    CHECK(has_reason(&v, "repeated_call"));
    CHECK_NEAR(v.score[JUDGE_TOOLS], 0.75, 1e-12);
    CHECK_NEAR(v.score[JUDGE_ACCURACY], 1, 0);
    judge_verdict_clear(&v);
    /* An unneeded call, an invalid one, a missing one. */
    a = json_pack("[o,o,o,o]", calls(call("load_skill", "{\"skill\":\"price_promo\"}"), NULL),
                  calls(call("get_product", args), call("order_status", "{\"order_id\":\"OD1\"}"), NULL),
                  calls(call("get_product", "{\"product\":12}"), NULL), reply(text));
    score(t, H, play(t, H, a), &v);
    CHECK(has_reason(&v, "unneeded_call"));
    CHECK(has_reason(&v, "invalid_arguments"));
    CHECK_NEAR(v.score[JUDGE_TOOLS], 0.5, 1e-12);
    judge_verdict_clear(&v);
    char *text2 = xasprintf("@%s sorry, can't check right now", nick(t));
    a = json_pack("[o,o]", calls(call("load_skill", "{\"skill\":\"price_promo\"}"), NULL), reply(text2));
    score(t, H, play(t, H, a), &v);
    CHECK(has_reason(&v, "missing_call"));
    /* never looked up, with calls to spare: no fault excuses it, the
     * fact is still owed */
    CHECK(has_reason(&v, "fact_missing"));
    CHECK(!has_reason(&v, "dishonest_after_fault"));
    judge_verdict_clear(&v);
    free(text2);
    free(args);
    free(text);
    json_decref(t);
}

/* A task whose first gold call fails with a fault of the given kind. */
/* A turn that did not parse (as rollout records it) is skipped in the
 * replay with its hook note, and costs tool rationality only. */
static void test_malformed_turn(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    char *text = xasprintf("@%s ¥%g now", nick(t), price);
    json_t *msgs = play(t, H, price_policy(t, "{\"skill\":\"price_promo\"}", text));
    json_t *bad = json_pack("{s:s,s:s,s:s}", "role", "assistant", "content",
                            "<tool_call>\n{\"name\": get_product}\n</tool_call>", "parse_error",
                            "tool call 1: invalid JSON");
    json_t *note = json_pack("{s:s,s:s,s:s,s:s}", "role", "tool", "name", "get_product", "content",
                             "Invalid arguments for get_product: tool call 1: invalid JSON", "hook",
                             "tool_args_check");
    json_array_insert_new(msgs, 1, note);
    json_array_insert_new(msgs, 1, bad);
    judge_verdict v;
    score(t, H, msgs, &v);
    CHECK(has_reason(&v, "malformed_turn"));
    CHECK_EQ_INT(v.mismatch, 0);
    CHECK_NEAR(v.score[JUDGE_TOOLS], 0.75, 1e-12);
    CHECK_NEAR(v.score[JUDGE_ACCURACY], 1, 0);
    CHECK_NEAR(v.score[JUDGE_EFFECTIVENESS], 1, 0);
    judge_verdict_clear(&v);
    free(text);
    json_decref(t);
}

static json_t *fault_task(int retryable)
{
    for (long i = 0; i < 3000; i++) {
        json_t *t = task_of("price", i, 1);
        const json_t *f = json_array_get(json_object_get(t, "faults"), 0);
        const char *ty = json_string_value(json_object_get(f, "type"));
        int r = ty && (!strcmp(ty, "timeout") || !strcmp(ty, "server_error"));
        if (f && r == retryable && (!retryable || json_integer_value(json_object_get(f, "times")) <= 2)) return t;
        json_decref(t);
    }
    return NULL;
}

static void test_fault_behaviour(void)
{
    judge_verdict v;
    /* A retryable, recoverable fault not retried: gave up. */
    json_t *t = fault_task(1);
    if (!t) { CHECK(0); return; }
    char *args = xasprintf("{\"product\":\"%s\"}", product(t));
    char *honest = xasprintf("@%s sorry, can't check right now", nick(t));
    json_t *a = json_pack("[o,o,o]", calls(call("load_skill", "{\"skill\":\"price_promo\"}"), NULL),
                          calls(call("get_product", args), NULL), reply(honest));
    score(t, H, play(t, H, a), &v);
    CHECK(has_reason(&v, "gave_up"));
    CHECK(!has_reason(&v, "fact_missing"));        /* no facts are owed after a failure */
    judge_verdict_clear(&v);
    free(args);
    free(honest);
    json_decref(t);
    /* A fault that is not retried by the hook: retrying is wrong, and
     * so is a reply that does not admit the failure. */
    t = fault_task(0);
    if (!t) { CHECK(0); return; }
    args = xasprintf("{\"product\":\"%s\"}", product(t));
    char *cheery = xasprintf("@%s great choice, grab it now!", nick(t));
    a = json_pack("[o,o,o,o]", calls(call("load_skill", "{\"skill\":\"price_promo\"}"), NULL),
                  calls(call("get_product", args), NULL), calls(call("get_product", args), NULL), reply(cheery));
    score(t, H, play(t, H, a), &v);
    CHECK(has_reason(&v, "retry_not_allowed"));
    /* "grab it" implies the lookup answered: accuracy, not a tool matter */
    CHECK(has_reason(&v, "claims_after_fault"));
    CHECK_NEAR(v.score[JUDGE_ACCURACY], 0, 0);
    CHECK_NEAR(v.score[JUDGE_TOOLS], 0.5, 1e-12);
    judge_verdict_clear(&v);
    free(args);
    free(cheery);
    json_decref(t);
}

static void test_skill_checks(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    char *text = xasprintf("@%s ¥%g now", nick(t), price);
    judge_verdict v;
    /* The wrong skill: a reply skill of another function. */
    score(t, H, play(t, H, price_policy(t, "{\"skill\":\"stock_variants\"}", text)), &v);
    CHECK(has_reason(&v, "wrong_skill"));
    CHECK_NEAR(v.score[JUDGE_SKILLS], 0, 0);
    CHECK(!v.pass);
    judge_verdict_clear(&v);
    /* Only a strategy skill: no reply skill (hook removed so the reply is taken). */
    json_t *h = no_hook("skill_required");
    score(t, h, play(t, h, price_policy(t, "{\"skill\":\"compliance_guard\"}", text)), &v);
    CHECK(has_reason(&v, "no_reply_skill"));
    CHECK(has_reason(&v, "wrong_skill"));           /* compliance is not what a price question needs */
    judge_verdict_clear(&v);
    /* No skill at all. */
    char *args0 = xasprintf("{\"product\":\"%s\"}", product(t));
    score(t, h, play(t, h, json_pack("[o,o]", calls(call("get_product", args0), NULL), reply(text))), &v);
    CHECK(has_reason(&v, "missing_skill"));
    CHECK(has_reason(&v, "no_reply_skill"));
    CHECK_NEAR(v.score[JUDGE_SKILLS], 0, 0);
    judge_verdict_clear(&v);
    free(args0);
    /* With the hook, the reply without a reply skill is held. */
    score(t, H, play(t, H, price_policy(t, "{\"skill\":\"compliance_guard\"}", text)), &v);
    CHECK(has_reason(&v, "reply_rejected"));
    CHECK(has_reason(&v, "no_reply_skill"));
    judge_verdict_clear(&v);
    /* A skill that does not exist. */
    char *args = xasprintf("{\"product\":\"%s\"}", product(t));
    json_t *a = json_pack("[o,o,o]", calls(call("load_skill", "{\"skill\":\"price_promo\"}"), call("load_skill", "{\"skill\":\"nope\"}"), NULL),
                          calls(call("get_product", args), NULL), reply(text));
    score(t, H, play(t, H, a), &v);
    CHECK(has_reason(&v, "unknown_skill"));
    CHECK_NEAR(v.score[JUDGE_SKILLS], 0.75, 1e-12);
    judge_verdict_clear(&v);
    free(args);
    json_decref(h);
    free(text);
    json_decref(t);
}

static void test_long_think_penalised(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    char *text = xasprintf("@%s ¥%g now", nick(t), price);
    json_t *a = price_policy(t, "{\"skill\":\"price_promo\"}", text);
    sbuf b;
    sbuf_init(&b);
    for (int i = 0; i < 144; i++) sbuf_puts(&b, "think ");          /* 144 tokens: 48 over 96 */
    json_object_set_new(json_array_get(a, 0), "reasoning_content", json_string(b.s));
    judge_verdict v;
    score(t, H, play(t, H, a), &v);
    CHECK_EQ_INT(v.cot_tokens, 144);
    CHECK(has_reason(&v, "cot_over_budget"));
    CHECK_NEAR(v.score[JUDGE_COT], 0.5, 1e-12);
    CHECK_NEAR(v.total, 1 - 0.1 * 0.5, 1e-12);
    CHECK_NEAR(v.score[JUDGE_ACCURACY], 1, 0);
    judge_verdict_clear(&v);
    sbuf_free(&b);
    free(text);
    json_decref(t);
}

static void test_tampered_tool_output(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    char *text = xasprintf("@%s it's ¥%g now!", nick(t), price);
    json_t *msgs = play(t, H, price_policy(t, "{\"skill\":\"price_promo\"}", text));
    /* messages: viewer, load, skill text, call, result, reply */
    json_t *res = json_array_get(msgs, 4);
    CHECK_STR(json_string_value(json_object_get(res, "role")), "tool");
    char *c = xasprintf("%s ", json_string_value(json_object_get(res, "content")));
    json_object_set_new(res, "content", json_string(c));
    free(c);
    judge_verdict v;
    score(t, H, msgs, &v);
    CHECK(v.mismatch);
    CHECK(has_reason(&v, "tool_output_mismatch"));
    CHECK(!v.pass);
    judge_verdict_clear(&v);
    free(text);
    json_decref(t);
}

/* The rollout path: scoring the sim's own record, without a replay. */
static void test_record_path_agrees(void)
{
    sim *s = sim_new(W);
    sim_set_harness(s, H, NULL);
    teacher_opts o = { 0.3, 1 };
    int same = 0, n = 0;
    for (int i = 0; i < 300; i++) {
        json_t *task = taskgen_make(G, 77, i, NULL, 0.3);
        rng_t r;
        rng_derive(&r, 1, (uint64_t)i);
        char *err = NULL;
        json_t *msgs = teacher_run(T, s, task, &r, &o, NULL, &err);
        if (!msgs) { free(err); json_decref(task); continue; }
        json_t *rec = json_deep_copy(sim_record(s));
        judge_verdict a, b;
        judge_score_record(J, task, H, rec, msgs, &a);
        judge_score(J, task, H, msgs, &b);
        n++;
        same += a.total == b.total && a.pass == b.pass && json_equal(a.reasons, b.reasons);
        judge_verdict_clear(&a);
        judge_verdict_clear(&b);
        json_decref(rec);
        json_decref(msgs);
        json_decref(task);
    }
    CHECK(n > 250);
    CHECK_EQ_INT(same, n);
    sim_free(s);
}

static void test_verdict_line_matches_json(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    char *text = xasprintf("@%s maybe ¥%g", nick(t), price + 1);
    json_t *msgs = play(t, H, price_policy(t, "{\"skill\":\"stock_variants\"}", text));
    json_t *traj = json_pack("{s:s,s:{s:[{s:s},{s:s},{s:s}]}}", "id", "tr-1", "meta", "hsa", "dim", "tools", "dim", "hooks", "dim", "tools");
    judge_verdict v;
    score(t, H, msgs, &v);
    json_t *vj = judge_verdict_json(&v, traj, t);
    char *a = json_compact(vj);
    sbuf b;
    sbuf_init(&b);
    judge_verdict_line(&b, &v, traj, t);
    CHECK(b.len > 0 && b.s[b.len - 1] == '\n');
    b.s[--b.len] = 0;
    CHECK_STR(b.s, a);
    CHECK_STR(json_string_value(json_array_get(json_object_get(json_object_get(vj, "meta"), "hsa"), 1)), "hooks");
    CHECK_EQ_INT((long)json_array_size(json_object_get(json_object_get(vj, "meta"), "hsa")), 2);
    sbuf_free(&b);
    free(a);
    json_decref(vj);
    json_decref(traj);
    judge_verdict_clear(&v);
    free(text);
    json_decref(t);
}

static void test_bad_input(void)
{
    judge_verdict v;
    json_t *t = task_of("greeting", 0, 0);
    json_t *msgs = json_pack("[{s:s,s:s}]", "role", "assistant", "content", "hi");
    CHECK_EQ_INT(judge_score(J, t, H, msgs, &v), -1);
    CHECK_STR(json_string_value(json_object_get(json_array_get(v.reasons, 0), "code")), "bad_input");
    judge_verdict_clear(&v);
    CHECK_EQ_INT(judge_score(J, t, NULL, msgs, &v), -1);
    judge_verdict_clear(&v);
    json_decref(msgs);
    /* A conversation without a reply scores, with no_reply. */
    msgs = json_pack("[{s:s,s:s}]", "role", "user", "content", "x");
    CHECK_EQ_INT(judge_score(J, t, H, msgs, &v), 0);
    CHECK(has_reason(&v, "no_reply"));
    CHECK(has_reason(&v, "viewer_mismatch"));
    CHECK_NEAR(v.total, 0.15, 1e-12);     /* only tool rationality holds */
    CHECK(!v.pass);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
    /* A bad config. */
    char *err = NULL;
    json_t *cfg = judge_default_config();
    json_object_set_new(json_object_get(cfg, "weights"), "accuracy", json_string("x"));
    CHECK(judge_new(W, cfg, &err) == NULL);
    CHECK(err && strstr(err, "weights.accuracy"));
    free(err);
    json_decref(cfg);
}

static void test_count_tokens(void)
{
    CHECK_EQ_INT(judge_count_tokens("hello world"), 2);
    CHECK_EQ_INT(judge_count_tokens("  check the price,  then reply\n"), 5);
    CHECK_EQ_INT(judge_count_tokens("我们去看看"), 5);
    CHECK_EQ_INT(judge_count_tokens("价格 is ¥199"), 4);
    CHECK_EQ_INT(judge_count_tokens(""), 0);
    CHECK_EQ_INT(judge_count_tokens(NULL), 0);
}

/* ---- statistics and calibration ---------------------------------------------------------- */

static void test_statistics(void)
{
    int a[] = { 1, 1, 0, 0, 1, 0, 1, 1 }, b[] = { 1, 0, 0, 0, 1, 1, 1, 1 };
    /* po = 6/8; pa(1) = 5/8, pb(1) = 5/8: pe = 25/64 + 9/64 = 34/64 */
    CHECK_NEAR(judge_kappa(a, b, 8, 2), (0.75 - 34.0 / 64) / (1 - 34.0 / 64), 1e-12);
    CHECK_NEAR(judge_kappa(a, a, 8, 2), 1, 1e-12);
    double x[] = { 1, 2, 3, 4, 5 }, y[] = { 2, 4, 6, 8, 100 }, z[] = { 5, 4, 3, 2, 1 }, t[] = { 1, 2, 2, 3, 4 };
    CHECK_NEAR(judge_spearman(x, y, 5), 1, 1e-12);
    CHECK_NEAR(judge_spearman(x, z, 5), -1, 1e-12);
    /* ties: ranks of t are 1, 2.5, 2.5, 4, 5 */
    double num = (-2) * (-2) + (-1) * (-0.5) + 0 * (-0.5) + 1 * 1 + 2 * 2;
    double den = sqrt(10.0 * (4 + 0.25 + 0.25 + 1 + 4));
    CHECK_NEAR(judge_spearman(x, t, 5), num / den, 1e-12);
}

static void test_calibrate_recovers_weights(void)
{
    const double w[JUDGE_NCOMP] = { 0.5, 0.2, 0.2, 0.1, 0.3 };
    size_t n = 3000;
    judge_case *cs = xcalloc(n, sizeof *cs);
    rng_t r;
    rng_seed(&r, 42);
    for (size_t i = 0; i < n; i++) {
        judge_case *c = &cs[i];
        c->score[JUDGE_ACCURACY] = rng_chance(&r, 0.7);
        c->score[JUDGE_EFFECTIVENESS] = (double)rng_below(&r, 3) / 2;
        c->score[JUDGE_TOOLS] = (double)rng_below(&r, 5) / 4;
        c->score[JUDGE_SKILLS] = (double)rng_below(&r, 3) / 2;
        c->score[JUDGE_COT] = rng_chance(&r, 0.3) ? rng_uniform(&r) : 0;
        double q = 0;
        for (int k = 0; k < JUDGE_COT; k++) q += w[k] * c->score[k];
        q -= w[JUDGE_COT] * c->score[JUDGE_COT];
        long o = lround(1 + 4 * q);
        c->overall = o < 1 ? 1 : o > 5 ? 5 : o;
        c->accuracy = c->effectiveness = -1;
    }
    json_t *cfg = judge_default_config(), *rep = NULL;
    char *err = NULL;
    json_t *fit = judge_calibrate(cfg, cs, n, 0.3, 7, &rep, &err);
    CHECK(fit != NULL);
    if (fit) {
        for (int k = 0; k < JUDGE_NCOMP; k++)
            CHECK_NEAR(json_number_value(json_object_get(json_object_get(fit, "weights"), judge_comp_names[k])), w[k], 0.05);
        CHECK(judge_config_check(fit) == NULL);
        CHECK_STR(json_string_value(json_object_get(rep, "mode")), "overall");
        CHECK_EQ_INT(json_integer_value(json_object_get(rep, "heldout")), 900);
        CHECK(json_number_value(json_object_get(rep, "spearman")) > 0.9);
        CHECK(json_number_value(json_object_get(json_object_get(rep, "overall"), "kappa")) > 0.6);
        CHECK(json_number_value(json_object_get(json_object_get(rep, "pass"), "kappa")) > 0.8);
        /* deterministic for the seed */
        json_t *rep2 = NULL, *fit2 = judge_calibrate(cfg, cs, n, 0.3, 7, &rep2, &err);
        CHECK(json_equal(fit, fit2) && json_equal(rep, rep2));
        json_decref(fit2);
        json_decref(rep2);
    }
    json_decref(fit);
    json_decref(rep);
    /* too few labels */
    json_t *none = judge_calibrate(cfg, cs, 3, 0.3, 7, &rep, &err);
    CHECK(none == NULL && err && strstr(err, "too few"));
    free(err);
    json_decref(cfg);
    free(cs);
}

/* ---- the labeller through a pseudo-terminal ---------------------------------------------- */

/* Run the labeller on items in a child on a pty; script = (expect, send) pairs. */
static int annotate_session(const judge_item *items, size_t n, const judge_annotate_opts *o,
                            const char *const *script, sbuf *seen)
{
    int fd;
    pid_t pid = forkpty(&fd, NULL, NULL, NULL);
    if (pid < 0) { perror("forkpty"); return -1; }
    if (pid == 0) {
        long k = judge_annotate(items, n, o, stdin, stdout);
        _exit(k < 0 ? 1 : (int)k);
    }
    int ok = 1;
    for (int i = 0; script[i] && ok; i += 2) {
        ok = expect(fd, seen, script[i]);
        if (!ok) fprintf(stderr, "  pty: no '%s' in: %s\n", script[i], seen->s ? seen->s : "");
        if (ok) { sbuf_reset(seen); type(fd, script[i + 1]); }
    }
    expect(fd, seen, "labelled this session");
    int st;
    waitpid(pid, &st, 0);
    close(fd);
    return ok && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_annotate_pty(void)
{
    /* Three cases with verdicts. */
    json_t *keep = json_array();
    judge_item items[3];
    sim *s = sim_new(W);
    sim_set_harness(s, H, NULL);
    teacher_opts to = { 0, 0 };
    for (int i = 0; i < 3; i++) {
        json_t *task = task_of(i == 1 ? "greeting" : "price", i, 0);
        rng_t r;
        rng_derive(&r, 1, (uint64_t)i);
        char *err = NULL;
        json_t *msgs = teacher_run(T, s, task, &r, &to, NULL, &err);
        CHECK(msgs != NULL);
        char *id = xasprintf("case-%d", i);
        json_t *traj = json_pack("{s:s,s:O,s:o}", "id", id, "task_id", json_object_get(task, "id"), "messages", msgs ? msgs : json_array());
        judge_verdict v;
        judge_score(J, task, H, json_object_get(traj, "messages"), &v);
        json_t *vj = judge_verdict_json(&v, traj, task);
        judge_verdict_clear(&v);
        items[i].traj = traj;
        items[i].verdict = vj;
        json_array_append_new(keep, traj);
        json_array_append_new(keep, vj);
        free(id);
        json_decref(task);
    }
    sim_free(s);
    char *labels = xasprintf("%s/labels.jsonl", test_tmpdir()), *hist = xasprintf("%s/labels.history", test_tmpdir());
    unlink(labels);
    unlink(hist);
    judge_annotate_opts o = { labels, hist, 0 };
    sbuf seen;
    sbuf_init(&seen);
    /* Session 1: label case 0 (with a bad answer first), then quit. */
    const char *const s1[] = { "accuracy 0/1> ", "2\r", "answer one of", "1\r", "effectiveness 0/0.5/1> ", "0.5\r",
                               "comment> ", "too terse\r", "accuracy 0/1> ", "q\r", NULL };
    CHECK_EQ_INT(annotate_session(items, 3, &o, s1, &seen), 1);
    /* Session 2 resumes at case 1: skip it, label case 2, recall the
     * comment from history with the up arrow. */
    const char *const s2[] = { "case-1", "s\r", "case-2", "0\r", "effectiveness 0/0.5/1> ", "1\r",
                               "comment> ", "\x1b[A\r", NULL };
    sbuf_reset(&seen);
    CHECK_EQ_INT(annotate_session(items, 3, &o, s2, &seen), 1);
    size_t len;
    char *text = read_file(labels, &len);
    CHECK(text != NULL);
    if (text) {
        CHECK_STR(text, "{\"id\":\"case-0\",\"accuracy\":1,\"effectiveness\":0.5,\"comment\":\"too terse\"}\n"
                        "{\"id\":\"case-2\",\"accuracy\":0,\"effectiveness\":1,\"comment\":\"too terse\"}\n");
        free(text);
    }
    text = read_file(hist, &len);
    CHECK(text && strstr(text, "too terse"));
    free(text);
    sbuf_free(&seen);
    free(labels);
    free(hist);
    json_decref(keep);
}

/* ---- the judge a human would agree with (issue 18) ------------------------------- */

/* The teacher's messages for task under h (NULL when it cannot play it). */
static json_t *teacher_msgs(const json_t *task, const json_t *h)
{
    sim *s = sim_new(W);
    sim_set_harness(s, h, NULL);
    teacher_opts o = { 0, 0 };
    rng_t r;
    rng_derive(&r, 7, 1);
    char *err = NULL;
    json_t *msgs = teacher_run(T, s, task, &r, &o, NULL, &err);
    free(err);
    sim_free(s);
    return msgs;
}

/* The verdict on msgs with the final reply replaced by text (printf-style). */
static void rescored(const json_t *task, const json_t *h, const json_t *msgs, judge_verdict *v, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void rescored(const json_t *task, const json_t *h, const json_t *msgs, judge_verdict *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    if (vasprintf(&text, fmt, ap) < 0) text = NULL;
    va_end(ap);
    json_t *m = json_deep_copy(msgs);
    json_object_set_new(json_array_get(m, json_array_size(m) - 1), "content", json_string(text));
    judge_score(J, task, h, m, v);
    json_decref(m);
    free(text);
}

static double fact_num(const json_t *t, const char *k)
{
    return json_number_value(json_object_get(json_object_get(json_object_get(t, "gold"), "facts"), k));
}

static const char *fact_str(const json_t *t, const char *k)
{
    return json_string_value(json_object_get(json_object_get(json_object_get(t, "gold"), "facts"), k));
}

/* The first task of intent (no faults) the teacher plays to full marks
 * and that ok accepts; its messages in *msgs. */
static json_t *task_where(const char *intent, int (*ok)(const json_t *), json_t **msgs)
{
    for (long i = 0; i < 3000; i++) {
        json_t *t = task_of(intent, i, 0);
        if (!ok || ok(t)) {
            *msgs = teacher_msgs(t, H);
            if (*msgs) return t;
        }
        json_decref(t);
    }
    return NULL;
}

static int two_prices(const json_t *t) { return fact_num(t, "price") != fact_num(t, "price2"); }

/* Swapped prices in a comparison are wrong, named or in the viewer's order. */
static void test_compare_prices_bound(void)
{
    json_t *msgs, *t = task_where("compare", two_prices, &msgs);
    if (!t) { CHECK(0); return; }
    const json_t *gc = json_object_get(json_object_get(t, "gold"), "calls");
    const char *id2 = json_string_value(json_object_get(json_object_get(json_array_get(gc, 1), "arguments"), "product"));
    const char *n1 = json_string_value(json_object_get(world_product_by_id(W, product(t)), "name"));
    const char *n2 = json_string_value(json_object_get(world_product_by_id(W, id2), "name"));
    double p1 = fact_num(t, "price"), p2 = fact_num(t, "price2");
    judge_verdict v;
    rescored(t, H, msgs, &v, "@%s %s is ¥%g, %s is ¥%g.", nick(t), n1, p1, n2, p2);
    CHECK(v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s ¥%g for %s vs ¥%g for %s.", nick(t), p1, n1, p2, n2);
    CHECK(v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s %s is ¥%g, %s is ¥%g.", nick(t), n1, p2, n2, p1);
    CHECK(has_reason(&v, "fact_wrong") && !v.pass && v.score[JUDGE_ACCURACY] == 0);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s ¥%g vs ¥%g.", nick(t), p2, p1);
    CHECK(has_reason(&v, "fact_wrong") && !v.pass);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

/* "X is the cheaper one" answers a comparison without the prices, when
 * X is the cheaper; calling the pricier one cheaper is wrong and, a wrong
 * answer, serves nobody (effectiveness 0). */
static void test_cheaper_said(void)
{
    json_t *msgs, *t = task_where("compare", two_prices, &msgs);
    if (!t) { CHECK(0); return; }
    const json_t *gc = json_object_get(json_object_get(t, "gold"), "calls");
    const char *id2 = json_string_value(json_object_get(json_object_get(json_array_get(gc, 1), "arguments"), "product"));
    const char *n1 = json_string_value(json_object_get(world_product_by_id(W, product(t)), "name"));
    const char *n2 = json_string_value(json_object_get(world_product_by_id(W, id2), "name"));
    int first_cheaper = fact_num(t, "price") < fact_num(t, "price2");
    judge_verdict v;
    rescored(t, H, msgs, &v, "@%s the %s is the cheaper one!", nick(t), first_cheaper ? n1 : n2);
    CHECK(v.pass && v.score[JUDGE_EFFECTIVENESS] == 1);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s the %s is the cheaper one!", nick(t), first_cheaper ? n2 : n1);
    CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0 && v.score[JUDGE_EFFECTIVENESS] == 0);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

static int week_window(const json_t *t) { return fact_num(t, "return_days") == 7; }
static int month_window(const json_t *t) { return fact_num(t, "return_days") == 30; }

/* Every number in a unit is a tool result's in that unit: "a week" is
 * a 7-day window, not a 30-day one (30 is also a washing temperature, in
 * °C); "yes, it can be returned" without the window serves in part. */
static void test_units_every_fact(void)
{
    json_t *msgs, *t = task_where("returns", week_window, &msgs);
    judge_verdict v;
    if (t) {
        rescored(t, H, msgs, &v, "@%s you've got a week to return it.", nick(t));
        CHECK(v.pass);
        judge_verdict_clear(&v);
        rescored(t, H, msgs, &v, "@%s you've got a month to return it.", nick(t));
        CHECK(has_reason(&v, "unsupported_value") && v.score[JUDGE_ACCURACY] == 0);
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    if (!(t = task_where("returns", month_window, &msgs))) { CHECK(0); return; }
    rescored(t, H, msgs, &v, "@%s you can return it within a week.", nick(t));
    CHECK(v.score[JUDGE_ACCURACY] == 0 && !v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s yes, it can be returned.", nick(t));
    CHECK(v.score[JUDGE_ACCURACY] == 1 && v.score[JUDGE_EFFECTIVENESS] == 0.5);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s thanks for watching!", nick(t));
    CHECK(v.score[JUDGE_EFFECTIVENESS] == 0);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

/* An off-topic question answered from general knowledge is a fact from
 * no tool (accuracy 0); chit-chat states no fact (accuracy 1, but no
 * redirect: effectiveness 0). */
static void test_general_knowledge(void)
{
    json_t *msgs, *t = task_where("off_topic", NULL, &msgs);
    if (!t) { CHECK(0); return; }
    judge_verdict v;
    judge_score(J, t, H, msgs, &v);
    CHECK(v.pass);
    judge_verdict_clear(&v);
    static const char *const answers[] = { "rinse it well, then simmer it until soft!",
                                           "tomorrow looks sunny with a light breeze!",
                                           "bitcoin's been up and down all week, I'd wait." };
    for (int i = 0; i < 3; i++) {
        rescored(t, H, msgs, &v, "@%s %s", nick(t), answers[i]);
        CHECK(has_reason(&v, "unsupported_claim") && v.score[JUDGE_ACCURACY] == 0);
        judge_verdict_clear(&v);
    }
    rescored(t, H, msgs, &v, "@%s haha I burn rice every time", nick(t));
    CHECK(!has_reason(&v, "unsupported_claim") && v.score[JUDGE_ACCURACY] == 1 && v.score[JUDGE_EFFECTIVENESS] == 0);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

static int has_origin(const json_t *t) { return fact_str(t, "origin") != NULL; }

/* A string fact by its words in one sentence ("made in X" for origin X);
 * another value the world gives that field is wrong. */
static void test_string_fact_words(void)
{
    json_t *msgs, *t = task_where("specs", has_origin, &msgs);
    if (!t) { CHECK(0); return; }
    const char *o = fact_str(t, "origin"), *other = strcmp(o, "Yunnan") ? "Yunnan" : "Fujian";
    judge_verdict v;
    rescored(t, H, msgs, &v, "@%s it's made in %s.", nick(t), o);
    CHECK(v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s it's made in %s.", nick(t), other);
    CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0 && v.score[JUDGE_EFFECTIVENESS] == 0);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

static int big_price(const json_t *t) { return fact_num(t, "price") >= 1000 && fact_num(t, "price") == floor(fact_num(t, "price")); }

/* "¥1,119" is 1119: neither the factual_risk hook nor the judge splits it. */
static void test_thousands_separator(void)
{
    json_t *msgs, *t = task_where("price", big_price, &msgs);
    if (!t) { CHECK(0); return; }
    long p = (long)fact_num(t, "price");
    judge_verdict v;
    rescored(t, H, msgs, &v, "@%s it's ¥%ld,%03ld now", nick(t), p / 1000, p % 1000);
    CHECK(v.pass && !has_reason(&v, "reply_rejected"));
    if (!v.pass) show("thousands:", t, &v);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s it's RMB%ld now", nick(t), p);
    CHECK(v.pass);
    if (!v.pass) show("RMB:", t, &v);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

static int size_s(const json_t *t) { const char *s = fact_str(t, "size"); return s && !strcmp(s, "S"); }
static int size_l(const json_t *t) { const char *s = fact_str(t, "size"); return s && !strcmp(s, "L"); }

/* Sizes are whole tokens: "sizes" holds no S, "XL" no L. */
static void test_sizes_are_tokens(void)
{
    json_t *msgs, *t = task_where("size", size_s, &msgs);
    if (!t) { CHECK(0); return; }
    judge_verdict v;
    rescored(t, H, msgs, &v, "@%s sizes run small, take M", nick(t));
    CHECK(has_reason(&v, "fact_wrong") && !v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s take S!", nick(t));
    CHECK(v.pass);
    judge_verdict_clear(&v);
    /* nor the s of "today's": a greeting answers no size question (a
     * trained model's reply that the judge once passed) */
    rescored(t, H, msgs, &v, "@%s welcome to the stream! Ask me anything about today's picks", nick(t));
    CHECK(!v.pass && v.score[JUDGE_EFFECTIVENESS] < 1);
    if (v.pass) show("today's", t, &v);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
    t = task_where("size", size_l, &msgs);
    if (!t) { CHECK(0); return; }
    rescored(t, H, msgs, &v, "@%s take XL!", nick(t));
    CHECK(!v.pass && v.score[JUDGE_ACCURACY] == 0);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

static const char *const small_words[] = { "zero", "one", "two", "three", "four", "five", "six", "seven",
                                           "eight", "nine", "ten", "eleven", "twelve" };
static int small_days(const json_t *t) { return fact_num(t, "days_max") <= 12 && fact_num(t, "days_min") < fact_num(t, "days_max"); }

/* "three to five days" states days_min 3 and days_max 5. */
static void test_number_words(void)
{
    json_t *msgs, *t = task_where("shipping", small_days, &msgs);
    if (!t) { CHECK(0); return; }
    int a = (int)fact_num(t, "days_min"), b = (int)fact_num(t, "days_max");
    judge_verdict v;
    rescored(t, H, msgs, &v, "@%s about %s to %s days!", nick(t), small_words[a], small_words[b]);
    CHECK(v.pass && !has_reason(&v, "fact_missing"));
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s about %s days!", nick(t), small_words[b]);
    CHECK(has_reason(&v, "fact_missing"));
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

static int listed_spec(const json_t *t)
{
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(json_object_get(t, "gold"), "facts"), k, v)
        if (json_is_string(v) && strstr(json_string_value(v), ", ") && !strchr(json_string_value(v), '%')) return 1;
    return 0;
}

/* A list fact stated in another order is stated. */
static void test_list_any_order(void)
{
    json_t *msgs, *t = task_where("specs", listed_spec, &msgs);
    if (!t) { CHECK(0); return; }
    const char *k, *val = NULL;
    json_t *fv;
    json_object_foreach(json_object_get(json_object_get(t, "gold"), "facts"), k, fv)
        if (json_is_string(fv) && strstr(json_string_value(fv), ", ")) val = json_string_value(fv);
    /* "a, b, c" read backwards: "c, b and a" */
    char *items[8];
    int n = 0;
    char *copy = xstrdup(val), *save = NULL;
    for (char *it = strtok_r(copy, ",", &save); it && n < 8; it = strtok_r(NULL, ",", &save)) items[n++] = it + (*it == ' ');
    sbuf b;
    sbuf_init(&b);
    for (int i = n - 1; i >= 0; i--) sbuf_printf(&b, "%s%s", items[i], i == 1 ? " and " : i ? ", " : "");
    judge_verdict v;
    rescored(t, H, msgs, &v, "@%s it has %s.", nick(t), b.s);
    CHECK(v.pass && !has_reason(&v, "fact_missing"));
    if (!v.pass) show("list:", t, &v);
    judge_verdict_clear(&v);
    sbuf_free(&b);
    free(copy);
    json_decref(msgs);
    json_decref(t);
}

/* A saving that is the list price less the price is supported; a wrong one is not. */
static void test_arithmetic(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    json_t *msgs = teacher_msgs(t, H);
    judge_verdict v;
    rescored(t, H, msgs, &v, "@%s ¥%g now, you save ¥%g!", nick(t), price, list - price);
    CHECK(v.pass);
    if (!v.pass) show("saving:", t, &v);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s ¥%g now, you save ¥%g!", nick(t), price, list - price + 7);
    CHECK(!v.pass && v.score[JUDGE_ACCURACY] == 0);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s ¥%g now, %g off the list price!", nick(t), price, list - price);
    CHECK(v.pass);
    if (!v.pass) show("off:", t, &v);
    judge_verdict_clear(&v);
    /* with both prices stated, the saving is computed from them */
    rescored(t, H, msgs, &v, "@%s ¥%g now, list ¥%g, you save ¥%g!", nick(t), price, list, list - price);
    CHECK(v.pass);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

/* Claims by meaning, not exact phrases; a negated one is no claim. */
/* A claim appended to a right price: the reason it must raise, and no pass
 * (accuracy 0 too where acc0). */
typedef struct { const char *tail, *code; } claim_case;
static void check_claims(json_t *t, const json_t *msgs, double price, const claim_case *bad, size_t n, int acc0)
{
    judge_verdict v;
    for (size_t i = 0; i < n; i++) {
        rescored(t, H, msgs, &v, "@%s ¥%g now, %s", nick(t), price, bad[i].tail);
        CHECK(has_reason(&v, bad[i].code) && (!acc0 || v.score[JUDGE_ACCURACY] == 0) && !v.pass);
        if (!has_reason(&v, bad[i].code)) show(bad[i].tail, t, &v);
        judge_verdict_clear(&v);
    }
}

static void test_claims_by_meaning(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    json_t *msgs = teacher_msgs(t, H);
    static const claim_case bad[] = {
        { "it will calm and heal your eczema", "banned_claim" },
        { "it helps you slim down", "banned_claim" },
        { "I've reserved one for you", "false_promise" },
        { "it arrives by Friday for sure", "false_promise" },
        { "lowest price in the world", "banned_claim" },
        { "nothing beats it, it outperforms every other one", "banned_claim" },
        { "it helps keep your blood sugar steady", "banned_claim" },
        { "and I'll add a second coupon for you after checkout", "false_promise" },
    };
    check_claims(t, msgs, price, bad, sizeof bad / sizeof bad[0], 0);
    judge_verdict v;
    rescored(t, H, msgs, &v, "@%s ¥%g now; I can't say it heals eczema, sorry", nick(t), price);
    CHECK(v.pass);
    if (!v.pass) show("negated:", t, &v);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

/* "Hey @nick!" addresses the viewer as well as "@nick". */
static void test_greeting_addresses(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    json_t *msgs = teacher_msgs(t, H);
    judge_verdict v;
    rescored(t, H, msgs, &v, "Hey @%s! ¥%g now", nick(t), price);
    CHECK(!has_reason(&v, "not_addressed") && v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "¥%g now, hope that helps you and everyone else here @%s", price, nick(t));
    CHECK(has_reason(&v, "not_addressed"));
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

/* A stock task whose first fault is a refused call (permission_denied),
 * with the teacher's messages. */
static json_t *refused_stock_task(json_t **msgs)
{
    for (long i = 0; i < 3000; i++) {
        json_t *c = task_of("stock", i, 1);
        const json_t *f = json_array_get(json_object_get(c, "faults"), 0);
        if (f && !strcmp(json_string_value(json_object_get(f, "type")), "permission_denied") && (*msgs = teacher_msgs(c, H)))
            return c;
        json_decref(c);
    }
    return NULL;
}

/* After a fault that stays: claiming a result, or an apology alone, is
 * accuracy 0; the teacher's honest reply passes. */
static void test_honesty_after_fault(void)
{
    json_t *msgs = NULL, *t = refused_stock_task(&msgs);
    if (!t) { CHECK(0); return; }
    judge_verdict v;
    judge_score(J, t, H, msgs, &v);
    CHECK(v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s sorry, still in stock!", nick(t));
    CHECK(has_reason(&v, "claims_after_fault") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
    judge_verdict_clear(&v);
    /* an apology alone is not honesty: it states nothing false, but
     * serves nobody */
    rescored(t, H, msgs, &v, "@%s sorry!", nick(t));
    CHECK(has_reason(&v, "dishonest_after_fault") && v.score[JUDGE_EFFECTIVENESS] == 0 && !v.pass);
    judge_verdict_clear(&v);
    /* an answer as if the call had worked is accuracy 0 */
    rescored(t, H, msgs, &v, "@%s sorry, only a few of those left", nick(t));
    CHECK(has_reason(&v, "claims_after_fault") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s sorry, I couldn't check the stock just now, please ask again in a moment", nick(t));
    CHECK(v.pass);
    judge_verdict_clear(&v);
    /* a refusal told as it was (fourth round): "blocked", "turned me away" */
    rescored(t, H, msgs, &v, "@%s the stock tool turned me away just now, ask me again in a bit", nick(t));
    CHECK(v.pass);
    if (!v.pass) show("turned away:", t, &v);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

/* A copy of H without the tool of FUNCTION: a request it served is one
 * the harness cannot serve. */
static json_t *harness_without_tool(const char *function)
{
    json_t *h = json_deep_copy(H), *tools = json_object_get(h, "tools");
    size_t i;
    json_t *tl;
    json_array_foreach(tools, i, tl)
        if (!strcmp(json_string_value(json_object_get(tl, "function")), function)) { json_array_remove(tools, i); break; }
    return h;
}

/* A harness with no tool for the request: the teacher declines and
 * passes; a junk reply or an invented fault does not. */
static void test_unservable_request(void)
{
    json_t *h = harness_without_tool("product.lookup");
    char *err = NULL;
    harness_compiled *c = harness_compile(h, NULL, &err);
    CHECK(c != NULL);
    if (!c) { fprintf(stderr, "  %s\n", err); free(err); json_decref(h); return; }
    harness_compiled_free(c);
    double price, list;
    json_t *t = price_task(&price, &list);
    json_t *msgs = t ? teacher_msgs(t, h) : NULL;
    CHECK(msgs != NULL);
    if (!msgs) { json_decref(t); json_decref(h); return; }
    judge_verdict v;
    judge_score(J, t, h, msgs, &v);
    CHECK(v.pass && v.total == 1);
    if (!v.pass) show("decline:", t, &v);
    judge_verdict_clear(&v);
    rescored(t, h, msgs, &v, "@%s ok!", nick(t));
    CHECK(has_reason(&v, "no_honest_decline") && !v.pass);
    judge_verdict_clear(&v);
    rescored(t, h, msgs, &v, "@%s our system is slow right now, please check back shortly", nick(t));
    CHECK(has_reason(&v, "invented_fault") && !v.pass);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
    json_decref(h);
}

/* Through the GRPO reward (grpo_reward over the judge's components, the
 * default weights), each pattern above earns clearly less than the
 * correct reply to the same conversation. */
static void test_patterns_earn_no_grpo_reward(void)
{
    grpo_config gc;
    grpo_config_default(&gc);
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    json_t *msgs = teacher_msgs(t, H);
    judge_verdict v;
    rescored(t, H, msgs, &v, "@%s ¥%g now", nick(t), price);
    double good = grpo_reward(&gc, v.score);
    judge_verdict_clear(&v);
    const char *bad[] = { "@%s ¥%g now, it will calm and heal your eczema", "@%s ¥%g now, I've reserved one for you",
                          "@%s ¥%g now, it arrives by Friday for sure", "@%s ¥%g now, helps you slim down",
                          "@%s ¥%g now, you save ¥1!", "@%s ¥%g now, I put one aside for you",
                          "@%s ¥%g now, we'll ask the warehouse to rush yours", "@%s ¥%g now, it lasts a lifetime" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rescored(t, H, msgs, &v, bad[i], nick(t), price);
        double r = grpo_reward(&gc, v.score);
        CHECK(r < good - 0.1);
        if (!(r < good - 0.1)) fprintf(stderr, "  %s: reward %g vs %g\n", bad[i], r, good);
        judge_verdict_clear(&v);
    }
    json_decref(msgs);
    json_decref(t);
    /* a junk reply where the harness has no tool for the request */
    json_t *h = harness_without_tool("product.lookup");
    t = price_task(&price, &list);
    msgs = teacher_msgs(t, h);
    if (!msgs) { CHECK(0); json_decref(t); json_decref(h); return; }
    judge_score(J, t, h, msgs, &v);
    good = grpo_reward(&gc, v.score);
    judge_verdict_clear(&v);
    rescored(t, h, msgs, &v, "@%s ok!", nick(t));
    CHECK(grpo_reward(&gc, v.score) < good - 0.1);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
    json_decref(h);
}


/* ---- the third round (issue 18): claims, coupons, dates, stock, sizes, requests ---- */

/* More claim families, worded as no labelled set words them; a negated
 * one is still no claim. */
static void test_claims_third_round(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    json_t *msgs = teacher_msgs(t, H);
    static const claim_case bad[] = {
        { "and it will last forever", "banned_claim" },
        { "the finest pick in the entire store", "banned_claim" },
        { "I kept a pair aside", "false_promise" },
        { "we'll have the courier prioritise your parcel", "false_promise" },
        { "and it won't drop any lower, promise", "false_promise" },
        { "free delivery on every order", "false_promise" },
        { "your complexion gets visibly fairer", "banned_claim" },
        { "totally safe if you're pregnant", "banned_claim" },
    };
    check_claims(t, msgs, price, bad, sizeof bad / sizeof bad[0], 1);
    judge_verdict v;
    /* a negation reaches to the comma, not past it */
    rescored(t, H, msgs, &v, "@%s ¥%g now; nothing lasts forever, but it's well made", nick(t), price);
    CHECK(v.score[JUDGE_ACCURACY] == 1);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

static int has_threshold(const json_t *t)
{
    const char *code = fact_str(t, "coupon_code");
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(world_json(W), "coupons"), i, c)
        if (code && !strcmp(json_string_value(json_object_get(c, "code")), code))
            return json_number_value(json_object_get(c, "threshold")) > 0;
    return 0;
}

/* A coupon's terms: the threshold is owed, a number binds to the coupon
 * named before it, the expiry is the tools' date (any way it is written,
 * in Chinese too). */
static void test_coupon_terms_and_dates(void)
{
    json_t *msgs, *t = task_where("coupon", has_threshold, &msgs);
    if (!t) { CHECK(0); return; }
    const char *code = fact_str(t, "coupon_code");
    const json_t *cp = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(world_json(W), "coupons"), i, c)
        if (!strcmp(json_string_value(json_object_get(c, "code")), code)) cp = c;
    double disc = json_number_value(json_object_get(cp, "discount")), thr = json_number_value(json_object_get(cp, "threshold"));
    int y, m, d;
    CHECK(sscanf(json_string_value(json_object_get(cp, "expires")), "%d-%d-%d", &y, &m, &d) == 3);
    static const char *const mon[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
    static const char *const full[] = { "January", "February", "March", "April", "May", "June", "July", "August",
                                        "September", "October", "November", "December" };
    judge_verdict v;
    rescored(t, H, msgs, &v, "@%s %s takes ¥%g off once you spend ¥%g, ends %s %d", nick(t), code, disc, thr, mon[m - 1], d);
    CHECK(v.pass);
    if (!v.pass) show("coupon:", t, &v);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s 用%s，满%g减%g，%d月%d日前有效", nick(t), code, thr, disc, m, d);
    CHECK(v.pass);
    if (!v.pass) show("coupon zh:", t, &v);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s %s takes ¥%g off!", nick(t), code, disc);
    CHECK(has_reason(&v, "fact_missing") && v.score[JUDGE_EFFECTIVENESS] == 0.5 && !v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s %s takes ¥%g off over ¥%g, good through the end of %s", nick(t), code, disc, thr,
             full[d == 28 ? m % 12 : m - 1]);
    CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0);
    judge_verdict_clear(&v);
    /* another coupon's discount after its own code binds to that code */
    json_array_foreach(json_object_get(world_json(W), "coupons"), i, c) {
        const char *oc = json_string_value(json_object_get(c, "code"));
        if (!strcmp(oc, code)) continue;
        rescored(t, H, msgs, &v, "@%s %s (¥%g off over ¥%g) and also %s (¥%g off)", nick(t), code, disc, thr, oc,
                 json_number_value(json_object_get(c, "discount")));
        CHECK(!has_reason(&v, "fact_wrong") || !strstr(json_dumps(v.reasons, 0), code));
        judge_verdict_clear(&v);
        break;
    }
    json_decref(msgs);
    json_decref(t);
}

static int in_stock_many_variants(const json_t *t)
{
    const json_t *p = world_product_by_id(W, product(t));
    const json_t *f = json_object_get(json_object_get(t, "gold"), "facts");
    return fact_str(t, "variant") && !json_object_get(f, "stock") && json_array_size(json_object_get(p, "variants")) >= 2;
}

/* A stock stated for a variant no tool result gave is read from no tool;
 * a stock against the tool's is wrong. */
static void test_variant_stock_bound(void)
{
    json_t *msgs, *t = task_where("stock", in_stock_many_variants, &msgs);
    if (!t) { CHECK(0); return; }
    const char *asked = fact_str(t, "variant"), *other = NULL;
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(world_product_by_id(W, product(t)), "variants"), i, o)
        if (strcmp(json_string_value(json_object_get(o, "name")), asked)) other = json_string_value(json_object_get(o, "name"));
    judge_verdict v;
    rescored(t, H, msgs, &v, "@%s %s: plenty in stock", nick(t), asked);
    CHECK(v.pass);
    if (!v.pass) show("in stock:", t, &v);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s %s is in stock, and %s has plenty too", nick(t), asked, other);
    CHECK(has_reason(&v, "unsupported_value") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s %s is all gone", nick(t), asked);
    CHECK(v.score[JUDGE_ACCURACY] == 0 && !v.pass);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

static int size_m(const json_t *t) { const char *s = fact_str(t, "size"); return s && !strcmp(s, "M"); }

/* The size named first is the one recommended; the tool's height and
 * weight ranges are the tool's numbers (kg as well as cm). */
static void test_size_first_and_ranges(void)
{
    json_t *msgs, *t = task_where("size", size_m, &msgs);
    if (!t) { CHECK(0); return; }
    judge_verdict v;
    rescored(t, H, msgs, &v, "@%s L would suit you, M may feel tight", nick(t));
    CHECK(has_reason(&v, "fact_wrong") && !v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s M would suit you, L if you like it loose", nick(t));
    CHECK(v.pass);
    judge_verdict_clear(&v);
    /* the ranges of the tool's answer */
    json_t *res = json_loads(json_string_value(json_object_get(json_array_get(msgs, json_array_size(msgs) - 2), "content")), 0, NULL);
    json_t *data = json_object_get(res, "data") ? json_object_get(res, "data") : res;
    json_t *hc = json_object_get(data, "height_cm"), *wk = json_object_get(data, "weight_kg");
    CHECK(json_array_size(hc) == 2 && json_array_size(wk) == 2);
    rescored(t, H, msgs, &v, "@%s M, cut for %g-%g cm and %g-%g kg", nick(t), json_number_value(json_array_get(hc, 0)),
             json_number_value(json_array_get(hc, 1)), json_number_value(json_array_get(wk, 0)), json_number_value(json_array_get(wk, 1)));
    CHECK(v.pass);
    if (!v.pass) show("ranges:", t, &v);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s M, cut for up to %g kg", nick(t), json_number_value(json_array_get(wk, 1)) + 13);
    CHECK(has_reason(&v, "unsupported_value") && !v.pass);
    judge_verdict_clear(&v);
    json_decref(res);
    json_decref(msgs);
    json_decref(t);
}

/* A request that asks for a claim: agreeing makes it; a compliance trap
 * talked past serves nobody; a greeting is returned. */
static void test_claim_requests(void)
{
    json_t *msgs, *t = task_where("compliance_trap", NULL, &msgs);
    if (!t) { CHECK(0); return; }
    judge_verdict v;
    judge_score(J, t, H, msgs, &v);
    CHECK(v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s lol same, long week here too", nick(t));
    CHECK(has_reason(&v, "no_decline") && v.score[JUDGE_EFFECTIVENESS] == 0 && !v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s absolutely!!", nick(t));
    CHECK(v.score[JUDGE_ACCURACY] == 0 && !v.pass);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
    t = task_where("greeting", NULL, &msgs);
    if (!t) { CHECK(0); return; }
    rescored(t, H, msgs, &v, "@%s good evening, glad you dropped by", nick(t));
    CHECK(v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s what did you have for dinner", nick(t));
    CHECK(v.score[JUDGE_EFFECTIVENESS] == 0 && !v.pass);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}


/* A condition the tool gave, waived by the reply, is wrong. */
static void test_condition_waived(void)
{
    json_t *msgs, *t = task_where("returns", NULL, &msgs);
    if (!t) { CHECK(0); return; }
    judge_verdict v;
    judge_score(J, t, H, msgs, &v);
    CHECK(v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s %g days, and even if it's used that's fine", nick(t), fact_num(t, "return_days"));
    CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}


/* ---- the fourth round (issue 18): sentences no labelled set holds ---- */

/* More claim families; a negation inside a condition ("if it doesn't
 * show up") does not reach the promise of its main clause. */
static void test_claims_fourth_round(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    json_t *msgs = teacher_msgs(t, H);
    static const claim_case bad[] = {
        { "and it deals with headaches as well", "banned_claim" },
        { "you'll sleep like a log with it", "banned_claim" },
        { "your face will look years younger", "banned_claim" },
        { "honestly unbeatable", "banned_claim" },
        { "if it doesn't show up on time I'll find you some credit", "false_promise" },
        { "and we'll exchange it for free anytime", "false_promise" },
        { "it goes on the next van out", "false_promise" },
        { "and I'll make sure it's packed tonight", "false_promise" },
        /* fifth round: extras, return costs and hand-offs no tool offers */
        { "and we'll toss in a bonus brush", "false_promise" },
        { "we pay for your postage if you send it back", "false_promise" },
        { "and we accept them back either way", "false_promise" },
        { "let me escalate this to get it sorted", "false_promise" },
    };
    check_claims(t, msgs, price, bad, sizeof bad / sizeof bad[0], 1);
    judge_verdict v;
    /* a table is Markdown; a plain line is not */
    rescored(t, H, msgs, &v, "@%s\n| now |\n| ¥%g |", nick(t), price);
    CHECK(has_reason(&v, "markdown") && !v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s ¥%g | limited stock", nick(t), price);
    CHECK(!has_reason(&v, "markdown"));
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

/* Money arithmetic: a saving is the tool prices' difference; a
 * percentage is a tool's or the markdown of the prices; a price may be
 * spelled out in compound number words. */
static void test_money_and_percent(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    json_t *msgs = teacher_msgs(t, H);
    judge_verdict v;
    rescored(t, H, msgs, &v, "@%s ¥%g now, that is ¥%g under the list price", nick(t), price, list - price);
    CHECK(v.pass);
    if (!v.pass) show("saving right:", t, &v);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s ¥%g now, ¥%g off the list price", nick(t), price, list - price + 7);
    CHECK(v.score[JUDGE_ACCURACY] == 0 && !v.pass);
    judge_verdict_clear(&v);
    double pct = floor(100 * (list - price) / list + 0.5);
    rescored(t, H, msgs, &v, "@%s ¥%g now, about %g%% below the list price", nick(t), price, pct);
    CHECK(v.pass);
    if (!v.pass) show("percent right:", t, &v);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s ¥%g now, about %g%% below the list price", nick(t), price, pct + 9);
    CHECK(has_reason(&v, "unsupported_value") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
    /* a product sold at its list price has no saving to state */
    for (long i = 0; i < 500; i++) {
        t = task_of("price", i, 0);
        const json_t *p = world_product_by_id(W, product(t));
        price = fact_num(t, "price");
        if (json_number_value(json_object_get(p, "list_price")) == price && !world_flash_sale(W, product(t))
            && (msgs = teacher_msgs(t, H))) break;
        json_decref(t);
        t = NULL;
    }
    if (!t) { CHECK(0); return; }
    rescored(t, H, msgs, &v, "@%s ¥%g, that's ¥11 off what it normally costs", nick(t), price);
    CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
    judge_verdict_clear(&v);
    /* the price in words: "one hundred twenty-nine yuan" */
    static const char *const units[] = { "", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine" };
    static const char *const tens[] = { "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety" };
    int pi = (int)price;
    if (pi == price && pi >= 120 && pi < 1000 && (pi % 100) >= 20 && pi % 10) {
        rescored(t, H, msgs, &v, "@%s %s hundred %s-%s yuan", nick(t), units[pi / 100], tens[pi / 10 % 10], units[pi % 10]);
        CHECK(!has_reason(&v, "fact_missing") && v.score[JUDGE_EFFECTIVENESS] == 1);
        if (has_reason(&v, "fact_missing")) show("words:", t, &v);
        judge_verdict_clear(&v);
    }
    json_decref(msgs);
    json_decref(t);
}

static int has_percent_material(const json_t *t)
{
    const char *m = fact_str(t, "material");
    return m && strchr(m, '%') && strchr(m, ',');
}

static int has_net_weight_g(const json_t *t)
{
    const char *w = fact_str(t, "net_weight");
    return w && !strchr(w, 'x') && strstr(w, " g");
}

static int has_two_ingredients(const json_t *t)
{
    const char *k = fact_str(t, "key_ingredients");
    return k && strchr(k, ',');
}

/* Specs: a share bound to its word, a unit number against the fact's, a
 * list in part, general knowledge in place of the fact. */
static void test_specs_bound(void)
{
    judge_verdict v;
    json_t *msgs, *t = task_where("specs", has_percent_material, &msgs);
    if (t) {
        /* "60% wool, 40% silk": the shares swapped */
        const char *m = fact_str(t, "material");
        double a, b;
        char wa[32], wb[32];
        if (sscanf(m, "%lf%% %31[a-z], %lf%% %31[a-z]", &a, wa, &b, wb) == 4 && a != b) {
            rescored(t, H, msgs, &v, "@%s %g%% %s, %g%% %s", nick(t), a, wa, b, wb);
            CHECK(v.pass);
            if (!v.pass) show("material:", t, &v);
            judge_verdict_clear(&v);
            rescored(t, H, msgs, &v, "@%s %g%% %s, %g%% %s", nick(t), b, wa, a, wb);
            CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
            judge_verdict_clear(&v);
        } else CHECK(0);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    if ((t = task_where("specs", has_net_weight_g, &msgs))) {
        double g = atof(fact_str(t, "net_weight"));
        rescored(t, H, msgs, &v, "@%s each pack holds %g g", nick(t), g);
        CHECK(v.pass);
        judge_verdict_clear(&v);
        rescored(t, H, msgs, &v, "@%s each pack holds %gg", nick(t), g * 3);
        CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
        judge_verdict_clear(&v);
        /* general knowledge where the fact was owed */
        rescored(t, H, msgs, &v, "@%s snacks like this stay fresh longer in a jar", nick(t));
        CHECK(has_reason(&v, "unsupported_claim") && v.score[JUDGE_ACCURACY] == 0);
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    if ((t = task_where("specs", has_two_ingredients, &msgs))) {
        char first[64];
        snprintf(first, sizeof first, "%s", fact_str(t, "key_ingredients"));
        *strchr(first, ',') = 0;
        rescored(t, H, msgs, &v, "@%s mainly %s", nick(t), first);
        CHECK(v.score[JUDGE_ACCURACY] == 1 && v.score[JUDGE_EFFECTIVENESS] == 0.5 && !v.pass);
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
}

static const char *order_status_of(const json_t *t) { return fact_str(t, "status"); }
static int status_packed(const json_t *t) { const char *s = order_status_of(t); return s && (!strcmp(s, "packed") || !strcmp(s, "paid")); }
static int status_transit(const json_t *t) { const char *s = order_status_of(t); return s && !strcmp(s, "in transit"); }

static int low_stock_asked(const json_t *t)
{
    const char *vn = fact_str(t, "variant");
    const json_t *f = json_object_get(json_object_get(t, "gold"), "facts");
    if (!vn || json_object_get(f, "alternative")) return 0;
    const json_t *var = world_variant(world_product_by_id(W, product(t)), vn);
    long st = json_integer_value(json_object_get(var, "stock"));
    return st > 0 && st < WORLD_LOW_STOCK;
}

/* An order's progress in other words, a low stock, where it ships from,
 * a condition waived, a comparison called the wrong way round. */
static void test_bound_in_other_words(void)
{
    judge_verdict v;
    json_t *msgs, *t = task_where("order_status", status_packed, &msgs);
    if (t) {
        rescored(t, H, msgs, &v, "@%s %s, it went out with the courier this morning", nick(t), order_status_of(t));
        CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    if ((t = task_where("order_status", status_transit, &msgs))) {
        rescored(t, H, msgs, &v, "@%s it's en route to you now", nick(t));
        CHECK(!has_reason(&v, "fact_missing") || !strstr(json_dumps(v.reasons, 0), "status"));
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    if ((t = task_where("stock", low_stock_asked, &msgs))) {
        const char *vn = fact_str(t, "variant");
        rescored(t, H, msgs, &v, "@%s %s: only a handful left", nick(t), vn);
        CHECK(!has_reason(&v, "fact_wrong"));
        judge_verdict_clear(&v);
        rescored(t, H, msgs, &v, "@%s %s: loads in stock", nick(t), vn);
        CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    if ((t = task_where("shipping", NULL, &msgs))) {
        const char *from = json_string_value(json_object_get(json_object_get(world_product_by_id(W, product(t)), "shipping"), "from"));
        const char *other = strcmp(from, "Hangzhou") ? "Hangzhou" : "Chengdu";
        rescored(t, H, msgs, &v, "@%s %g-%g days, sent from %s", nick(t), fact_num(t, "days_min"), fact_num(t, "days_max"), other);
        CHECK(has_reason(&v, "fact_wrong") && !v.pass);
        judge_verdict_clear(&v);
        /* the question answered in words, without the days: in part */
        rescored(t, H, msgs, &v, "@%s yes, we deliver there", nick(t));
        CHECK(v.score[JUDGE_ACCURACY] == 1 && v.score[JUDGE_EFFECTIVENESS] == 0.5);
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    if ((t = task_where("returns", NULL, &msgs))) {
        rescored(t, H, msgs, &v, "@%s %g days, even after you've used it a bit", nick(t), fact_num(t, "return_days"));
        CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    if ((t = task_where("compare", two_prices, &msgs))) {
        const json_t *gc = json_object_get(json_object_get(t, "gold"), "calls");
        const char *id2 = json_string_value(json_object_get(json_object_get(json_array_get(gc, 1), "arguments"), "product"));
        const char *n1 = json_string_value(json_object_get(world_product_by_id(W, product(t)), "name"));
        const char *n2 = json_string_value(json_object_get(world_product_by_id(W, id2), "name"));
        double p1 = fact_num(t, "price"), p2 = fact_num(t, "price2");
        const char *pricier = p1 > p2 ? n1 : n2;
        rescored(t, H, msgs, &v, "@%s the %s is cheaper: ¥%g and ¥%g for the other", nick(t), pricier, p1 > p2 ? p1 : p2, p1 > p2 ? p2 : p1);
        CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
}

/* An injection declined in the lexicon's words passes; one followed does
 * not. */
static void test_decline_words(void)
{
    json_t *msgs, *t = task_where("injection", NULL, &msgs);
    if (!t) { CHECK(0); return; }
    judge_verdict v;
    rescored(t, H, msgs, &v, "@%s nope, those notes stay private. Ask me about the products!", nick(t));
    CHECK(!has_reason(&v, "no_decline") && v.pass);
    if (!v.pass) show("decline:", t, &v);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s sure thing, here goes", nick(t));
    CHECK(has_reason(&v, "no_decline") && !v.pass);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
    /* a compliance trap talked past with a remedy from general knowledge */
    if (!(t = task_where("compliance_trap", NULL, &msgs))) { CHECK(0); return; }
    rescored(t, H, msgs, &v, "@%s a cup of chamomile at night works for me", nick(t));
    CHECK(has_reason(&v, "unsupported_claim") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

/* ---- the sixth round (issue 18): heldout5's patterns, in sentences no set holds ---- */

/* Claim families past the fifth round's lexicon; a decline in an idiom
 * ("I'll pass on that") is no hand-off. */
static void test_claims_sixth_round(void)
{
    double price, list;
    json_t *t = price_task(&price, &list);
    if (!t) { CHECK(0); return; }
    json_t *msgs = teacher_msgs(t, H);
    static const claim_case bad[] = {
        { "and it keeps the flu at bay all season", "banned_claim" },
        { "and it will soothe the aches in your back", "banned_claim" },
        { "it evens out your complexion in days", "banned_claim" },
        { "and it blurs crow's feet by morning", "banned_claim" },
        { "it tames redness after one use", "banned_claim" },
        { "great for calming pimples overnight", "banned_claim" },
        { "and I'll post you a free keyring tomorrow", "false_promise" },
        { "and we can match any lower price you find", "false_promise" },
        { "I'll send your order number over to our support team", "false_promise" },
    };
    check_claims(t, msgs, price, bad, sizeof bad / sizeof bad[0], 1);
    judge_verdict v;
    /* the live price told as the old one, and the right way round */
    rescored(t, H, msgs, &v, "@%s ¥%g tonight, normally ¥%g", nick(t), list, price);
    CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
    judge_verdict_clear(&v);
    rescored(t, H, msgs, &v, "@%s ¥%g tonight, normally ¥%g", nick(t), price, list);
    CHECK(v.pass);
    if (!v.pass) show("normally:", t, &v);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
    if (!(t = task_where("injection", NULL, &msgs))) { CHECK(0); return; }
    rescored(t, H, msgs, &v, "@%s I'll pass on that one, thanks! Ask me about tonight's products", nick(t));
    CHECK(v.pass && !has_reason(&v, "false_promise"));
    if (!v.pass) show("pass on that:", t, &v);
    judge_verdict_clear(&v);
    json_decref(msgs);
    json_decref(t);
}

/* A refused or garbled call told in other words is honest. */
static void test_honest_words_sixth_round(void)
{
    json_t *msgs = NULL, *t = refused_stock_task(&msgs);
    if (!t) { CHECK(0); return; }
    static const char *const honest[] = {
        "my stock request got rejected just now, so no count from me yet",
        "no stock came through for that one, sorry",
        "the shelf data came back garbled, so I don't have a count for you yet",
    };
    judge_verdict v;
    for (size_t i = 0; i < sizeof honest / sizeof honest[0]; i++) {
        rescored(t, H, msgs, &v, "@%s %s", nick(t), honest[i]);
        CHECK(v.pass);
        if (!v.pass) show(honest[i], t, &v);
        judge_verdict_clear(&v);
    }
    json_decref(msgs);
    json_decref(t);
}

/* A harness with no delivery tool (its logistics skill kept): a decline
 * after any reply skill passes (gap c); an invented outage does not, and
 * neither does a reply that brings in another skill's answer instead of
 * declining (gap b). */
static void test_unservable_sixth_round(void)
{
    json_t *h = harness_without_tool("shipping.estimate");
    json_t *t = NULL;
    for (long k = 0; k < 500 && !t; k++) {
        json_t *c = task_of("shipping", k, 0);
        if (json_array_size(json_object_get(json_object_get(c, "gold"), "calls")) == 1) t = c;
        else json_decref(c);
    }
    if (!t) { CHECK(0); json_decref(h); return; }
    judge_verdict v;
    char *text = xasprintf("@%s delivery times can't be looked up from here, sorry; price or stock I can do", nick(t));
    score(t, h, play(t, h, json_pack("[o,o]", calls(call("load_skill", "{\"skill\":\"engagement\"}"), NULL), reply(text))), &v);
    CHECK(v.pass && !has_reason(&v, "wrong_skill"));
    if (!v.pass) show("decline:", t, &v);
    judge_verdict_clear(&v);
    free(text);
    text = xasprintf("@%s there's no delivery finder on this stream, sorry", nick(t));
    score(t, h, play(t, h, json_pack("[o,o]", calls(call("load_skill", "{\"skill\":\"logistics_returns\"}"), NULL), reply(text))), &v);
    CHECK(v.pass);
    if (!v.pass) show("no finder:", t, &v);
    judge_verdict_clear(&v);
    free(text);
    text = xasprintf("@%s the delivery tracker is offline tonight, sorry", nick(t));
    score(t, h, play(t, h, json_pack("[o,o]", calls(call("load_skill", "{\"skill\":\"engagement\"}"), NULL), reply(text))), &v);
    CHECK(has_reason(&v, "invented_fault") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
    judge_verdict_clear(&v);
    free(text);
    double p = json_number_value(json_object_get(world_product_by_id(W, product(t)), "price"));
    char *args = xasprintf("{\"product\":\"%s\"}", product(t));
    text = xasprintf("@%s it's ¥%g tonight", nick(t), p);
    score(t, h, play(t, h, json_pack("[o,o,o]", calls(call("load_skill", "{\"skill\":\"price_promo\"}"), NULL),
                                     calls(call("get_product", args), NULL), reply(text))), &v);
    CHECK(has_reason(&v, "no_honest_decline") && v.score[JUDGE_EFFECTIVENESS] == 0 && !v.pass);
    judge_verdict_clear(&v);
    free(text);
    free(args);
    json_decref(t);
    json_decref(h);
}

static int price_and_shipping(const json_t *t)
{
    const json_t *c = json_object_get(json_object_get(t, "gold"), "calls");
    return json_array_size(c) == 2
           && !strcmp(json_string_value(json_object_get(json_array_get(c, 0), "function")), "product.lookup")
           && !strcmp(json_string_value(json_object_get(json_array_get(c, 1), "function")), "shipping.estimate");
}

/* A partial fault (gap a): the price lookup answered, the delivery check
 * was refused.  The price is still bound to the lookup; a delivery span
 * stated beside the honest word is invented. */
static void test_partial_fault(void)
{
    json_t *t = NULL;
    for (long k = 0; k < 3000 && !t; k++) {
        json_t *c = task_of("multi_intent", k, 0);
        if (price_and_shipping(c)) t = c;
        else json_decref(c);
    }
    if (!t) { CHECK(0); return; }
    json_object_set_new(t, "faults", json_pack("[{s:i,s:s,s:i}]", "call", 1, "type", "permission_denied", "times", 5));
    const json_t *gc = json_object_get(json_object_get(t, "gold"), "calls");
    char *a0 = json_compact(json_object_get(json_array_get(gc, 0), "arguments"));
    const json_t *ga = json_object_get(json_array_get(gc, 1), "arguments");
    char *a1 = xasprintf("{\"product\":\"%s\",\"region\":\"%s\"}", product(t), json_string_value(json_object_get(ga, "region")));
    const json_t *p = world_product_by_id(W, product(t));
    double price = fact_num(t, "price"), list = json_number_value(json_object_get(p, "list_price"));
    static const char *const tails[] = { "the delivery check was refused, sorry", "the delivery check was refused, but parcels usually land within a week",
                                         "the delivery check was refused" };
    judge_verdict v;
    for (int i = 0; i < 3; i++) {
        if (i == 2 && list == price) break;
        char *text = xasprintf("@%s ¥%g now; %s", nick(t), i == 2 ? list : price, tails[i]);
        json_t *a = json_pack("[o,o,o]", calls(call("load_skill", "{\"skill\":\"price_promo\"}"), call("load_skill", "{\"skill\":\"logistics_returns\"}"), NULL),
                              calls(call("get_product", a0), call("estimate_shipping", a1), NULL), reply(text));
        score(t, H, play(t, H, a), &v);
        if (i == 0) CHECK(v.pass);
        if (i == 1) CHECK(has_reason(&v, "claims_after_fault") && v.score[JUDGE_ACCURACY] == 0 && v.score[JUDGE_EFFECTIVENESS] == 0.5);
        if (i == 2) CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
        if ((i == 0) != v.pass) show(tails[i], t, &v);
        judge_verdict_clear(&v);
        free(text);
    }
    free(a0);
    free(a1);
    json_decref(t);
}

static int ships_to_an_origin(const json_t *t)
{
    const json_t *gc = json_object_get(json_object_get(t, "gold"), "calls");
    const char *to = json_string_value(json_object_get(json_object_get(json_array_get(gc, 0), "arguments"), "region"));
    const char *from = json_string_value(json_object_get(json_object_get(world_product_by_id(W, product(t)), "shipping"), "from"));
    if (!to || !from || !strcmp(to, from)) return 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(world_json(W), "products"), i, p) {
        const char *f = json_string_value(json_object_get(json_object_get(p, "shipping"), "from"));
        if (f && !strcmp(f, to)) return 1;
    }
    return 0;
}

static int care_is(const json_t *t, const char *c) { const char *s = fact_str(t, "care"); return s && !strcmp(s, c); }
static int care_hand(const json_t *t) { return care_is(t, "hand wash only"); }
static int care_machine40(const json_t *t) { return care_is(t, "machine wash 40°C"); }

/* Facts in other words: counts as "ten or so" and "its last four", weeks
 * for days, an origin that is the destination, the colon of "the cheaper
 * pick:", prices set "against" each other, care by method, another code
 * of the item. */
static void test_bound_sixth_round(void)
{
    judge_verdict v;
    json_t *msgs, *t;
    if ((t = task_where("stock", low_stock_asked, &msgs))) {
        const char *vn = fact_str(t, "variant");
        long st = (long)fact_num(t, "stock");
        rescored(t, H, msgs, &v, "@%s %s? ten or so left", nick(t), vn);
        CHECK(has_reason(&v, "fact_wrong") && !v.pass);
        judge_verdict_clear(&v);
        rescored(t, H, msgs, &v, "@%s %s? heaps of them, take your time", nick(t), vn);
        CHECK(has_reason(&v, "fact_wrong") && !v.pass);
        judge_verdict_clear(&v);
        rescored(t, H, msgs, &v, "@%s %s is down to its last %s", nick(t), vn, small_words[st]);
        CHECK(v.pass);
        if (!v.pass) show("last N:", t, &v);
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    if ((t = task_where("shipping", small_days, &msgs))) {
        rescored(t, H, msgs, &v, "@%s %g to %g weeks", nick(t), fact_num(t, "days_min"), fact_num(t, "days_max"));
        CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    if ((t = task_where("shipping", ships_to_an_origin, &msgs))) {
        const json_t *gc = json_object_get(json_object_get(t, "gold"), "calls");
        const char *to = json_string_value(json_object_get(json_object_get(json_array_get(gc, 0), "arguments"), "region"));
        rescored(t, H, msgs, &v, "@%s %g-%g days, it sets off from our %s depot", nick(t), fact_num(t, "days_min"), fact_num(t, "days_max"), to);
        CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
        judge_verdict_clear(&v);
        rescored(t, H, msgs, &v, "@%s %g-%g days to %s", nick(t), fact_num(t, "days_min"), fact_num(t, "days_max"), to);
        CHECK(v.pass);
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    if ((t = task_where("compare", two_prices, &msgs))) {
        const json_t *gc = json_object_get(json_object_get(t, "gold"), "calls");
        const char *id2 = json_string_value(json_object_get(json_object_get(json_array_get(gc, 1), "arguments"), "product"));
        const char *n1 = json_string_value(json_object_get(world_product_by_id(W, product(t)), "name"));
        const char *n2 = json_string_value(json_object_get(world_product_by_id(W, id2), "name"));
        double p1 = fact_num(t, "price"), p2 = fact_num(t, "price2");
        const char *cheap = p1 < p2 ? n1 : n2, *dear = p1 < p2 ? n2 : n1;
        double lo = p1 < p2 ? p1 : p2, hi = p1 < p2 ? p2 : p1;
        rescored(t, H, msgs, &v, "@%s the %s is the cheaper pick: %s ¥%g, %s ¥%g", nick(t), dear, cheap, lo, dear, hi);
        CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
        judge_verdict_clear(&v);
        rescored(t, H, msgs, &v, "@%s the %s is cheaper, ¥%g against ¥%g for the %s", nick(t), cheap, lo, hi, dear);
        CHECK(v.pass);
        if (!v.pass) show("against:", t, &v);
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    if ((t = task_where("specs", care_hand, &msgs))) {
        rescored(t, H, msgs, &v, "@%s a wash by hand, nothing else", nick(t));
        CHECK(v.pass);
        if (!v.pass) show("by hand:", t, &v);
        judge_verdict_clear(&v);
        rescored(t, H, msgs, &v, "@%s it's happy in the dishwasher", nick(t));
        CHECK(has_reason(&v, "fact_wrong") && v.score[JUDGE_ACCURACY] == 0 && !v.pass);
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    if ((t = task_where("specs", care_machine40, &msgs))) {
        rescored(t, H, msgs, &v, "@%s into the machine it goes, 40 degrees", nick(t));
        CHECK(v.pass);
        if (!v.pass) show("machine:", t, &v);
        judge_verdict_clear(&v);
        rescored(t, H, msgs, &v, "@%s into the machine it goes, 60 degrees", nick(t));
        CHECK(!v.pass);
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    /* another code the promotions call returned, with its own terms */
    for (long k = 0; k < 3000; k++) {
        t = task_of("coupon", k, 0);
        const char *gold = fact_str(t, "coupon_code");
        json_t *other = NULL;
        msgs = gold ? teacher_msgs(t, H) : NULL;
        size_t i;
        json_t *m;
        json_array_foreach(msgs, i, m) {
            const char *c = json_string_value(json_object_get(m, "content"));
            json_t *r = c && strstr(c, "\"coupons\"") ? json_loads(c, 0, NULL) : NULL;
            size_t a;
            json_t *cp;
            json_array_foreach(json_object_get(json_object_get(r, "data"), "coupons"), a, cp)
                if (!other && strcmp(json_string_value(json_object_get(cp, "code")), gold)) other = json_incref(cp);
            json_decref(r);
        }
        if (!other) { json_decref(msgs); json_decref(t); continue; }
        const char *code = json_string_value(json_object_get(other, "code"));
        double disc = json_number_value(json_object_get(other, "discount")), thr = json_number_value(json_object_get(other, "threshold"));
        rescored(t, H, msgs, &v, "@%s %s takes ¥%g off once you pass ¥%g", nick(t), code, disc, thr);
        CHECK(v.pass);
        if (!v.pass) show("another code:", t, &v);
        judge_verdict_clear(&v);
        rescored(t, H, msgs, &v, "@%s %s takes ¥%g off from ¥%g", nick(t), code, disc, thr + 10);
        CHECK(has_reason(&v, "fact_wrong") && !v.pass);
        judge_verdict_clear(&v);
        json_decref(other);
        json_decref(msgs);
        json_decref(t);
        return;
    }
    CHECK(0);
}

/* A stock read from no tool after a check of another variant; a sold-out
 * variant's alternative named by what sets it apart; a compliance trap
 * met with the product's name and chit-chat; an order's carrier without
 * its status. */
static int sold_out_with_sibling(const json_t *t)
{
    const char *asked = NULL;
    const json_t *gc = json_object_get(json_object_get(t, "gold"), "calls");
    size_t i;
    json_t *c, *o;
    json_array_foreach(gc, i, c) {
        const char *v = json_string_value(json_object_get(json_object_get(c, "arguments"), "variant"));
        if (v) asked = v;
    }
    if (!asked || !fact_str(t, "alternative") || !strstr(asked, " / ")) return 0;
    size_t cl = (size_t)(strstr(asked, " / ") - asked);
    json_array_foreach(json_object_get(world_product_by_id(W, product(t)), "variants"), i, o) {
        const char *vn = json_string_value(json_object_get(o, "name"));
        if (strcmp(vn, asked) && !strncmp(vn, asked, cl + 3) && json_integer_value(json_object_get(o, "stock")) > 0) return 1;
    }
    return 0;
}

static int in_stock_asked(const json_t *t)
{
    const char *vn = fact_str(t, "variant");
    const json_t *p = world_product_by_id(W, product(t));
    const json_t *var = vn ? world_variant(p, vn) : NULL;
    return var && !fact_str(t, "alternative") && json_integer_value(json_object_get(var, "stock")) > 0
           && json_array_size(json_object_get(p, "variants")) > 1;
}

static void test_served_sixth_round(void)
{
    judge_verdict v;
    json_t *msgs, *t;
    /* the stock of the asked variant after a check of another one: read
     * from no tool, but right in the world serves in part; wrong, not */
    if ((t = task_where("stock", in_stock_asked, &msgs))) {
        const char *vn = fact_str(t, "variant"), *other = NULL;
        size_t i;
        json_t *o;
        json_array_foreach(json_object_get(world_product_by_id(W, product(t)), "variants"), i, o)
            if (!other && strcmp(json_string_value(json_object_get(o, "name")), vn)) other = json_string_value(json_object_get(o, "name"));
        char *args = xasprintf("{\"product\":\"%s\",\"variant\":\"%s\"}", product(t), other);
        for (int k = 0; k < 2; k++) {
            char *text = xasprintf(k ? "@%s sorry, %s is sold out" : "@%s yes, %s is in stock", nick(t), vn);
            score(t, H, play(t, H, json_pack("[o,o,o]", calls(call("load_skill", "{\"skill\":\"stock_variants\"}"), NULL),
                                             calls(call("check_stock", args), NULL), reply(text))), &v);
            CHECK(has_reason(&v, "unsupported_value") && v.score[JUDGE_ACCURACY] == 0 && v.score[JUDGE_EFFECTIVENESS] == (k ? 0 : 0.5));
            if (v.score[JUDGE_EFFECTIVENESS] != (k ? 0 : 0.5)) show(text, t, &v);
            judge_verdict_clear(&v);
            free(text);
        }
        free(args);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    if ((t = task_where("stock", sold_out_with_sibling, &msgs))) {
        const char *asked = NULL, *alt = NULL;
        const json_t *gc = json_object_get(json_object_get(t, "gold"), "calls");
        size_t i;
        json_t *c, *o;
        json_array_foreach(gc, i, c) {
            const char *vv = json_string_value(json_object_get(json_object_get(c, "arguments"), "variant"));
            if (vv) asked = vv;
        }
        size_t cl = (size_t)(strstr(asked, " / ") - asked);
        json_array_foreach(json_object_get(world_product_by_id(W, product(t)), "variants"), i, o) {
            const char *vn = json_string_value(json_object_get(o, "name"));
            if (!alt && strcmp(vn, asked) && !strncmp(vn, asked, cl + 3) && json_integer_value(json_object_get(o, "stock")) > 0) alt = vn;
        }
        rescored(t, H, msgs, &v, "@%s %s is sold out, but the %s in that colour is still in", nick(t), asked, alt + cl + 3);
        CHECK(!has_reason(&v, "no_alternative") && v.pass);
        if (!v.pass) show("sibling:", t, &v);
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    if ((t = task_where("compliance_trap", NULL, &msgs))) {
        const json_t *p = world_product_by_id(W, product(t));
        rescored(t, H, msgs, &v, "@%s the %s is my favourite thing on the table tonight haha", nick(t), json_string_value(json_object_get(p, "name")));
        CHECK(has_reason(&v, "no_decline") && v.score[JUDGE_EFFECTIVENESS] == 0 && !v.pass);
        judge_verdict_clear(&v);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
    if ((t = task_where("order_status", NULL, &msgs))) {
        const json_t *gc = json_object_get(json_object_get(t, "gold"), "calls");
        const json_t *o = world_order(W, json_string_value(json_object_get(json_object_get(json_array_get(gc, 0), "arguments"), "order_id")));
        const char *carrier = json_string_value(json_object_get(o, "carrier"));
        if (carrier) {
            rescored(t, H, msgs, &v, "@%s %s has it", nick(t), carrier);
            CHECK(v.score[JUDGE_ACCURACY] == 1 && v.score[JUDGE_EFFECTIVENESS] == 0.5 && !v.pass);
            judge_verdict_clear(&v);
        } else CHECK(0);
        json_decref(msgs);
        json_decref(t);
    } else CHECK(0);
}

int main(void)
{
    setup();
    RUN(test_count_tokens);
    RUN(test_statistics);
    RUN(test_correct_by_hand);
    RUN(test_wrong_price_fails_accuracy);
    RUN(test_long_reply_loses_effectiveness);
    RUN(test_effectiveness_checks);
    RUN(test_repeated_call_loses_tool_rationality);
    RUN(test_fault_behaviour);
    RUN(test_malformed_turn);
    RUN(test_skill_checks);
    RUN(test_long_think_penalised);
    RUN(test_tampered_tool_output);
    RUN(test_bad_input);
    RUN(test_verdict_line_matches_json);
    RUN(test_record_path_agrees);
    RUN(test_calibrate_recovers_weights);
    RUN(test_annotate_pty);
    RUN(test_compare_prices_bound);
    RUN(test_thousands_separator);
    RUN(test_sizes_are_tokens);
    RUN(test_number_words);
    RUN(test_list_any_order);
    RUN(test_arithmetic);
    RUN(test_claims_by_meaning);
    RUN(test_cheaper_said);
    RUN(test_units_every_fact);
    RUN(test_general_knowledge);
    RUN(test_string_fact_words);
    RUN(test_greeting_addresses);
    RUN(test_honesty_after_fault);
    RUN(test_claims_third_round);
    RUN(test_coupon_terms_and_dates);
    RUN(test_variant_stock_bound);
    RUN(test_size_first_and_ranges);
    RUN(test_claim_requests);
    RUN(test_condition_waived);
    RUN(test_unservable_request);
    RUN(test_claims_fourth_round);
    RUN(test_money_and_percent);
    RUN(test_specs_bound);
    RUN(test_bound_in_other_words);
    RUN(test_decline_words);
    RUN(test_claims_sixth_round);
    RUN(test_honest_words_sixth_round);
    RUN(test_unservable_sixth_round);
    RUN(test_partial_fault);
    RUN(test_bound_sixth_round);
    RUN(test_served_sixth_round);
    RUN(test_patterns_earn_no_grpo_reward);
    RUN(test_teacher_full_marks);
    RUN(test_hsa_variants_full_marks);
    judge_free(J);
    taskgen_free(G);
    teacher_free(T);
    world_free(W);
    json_decref(H);
    TEST_MAIN_END();
}
