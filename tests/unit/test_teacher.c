/* test_teacher.c — the scripted teacher over thousands of tasks, under the
 * example harness and under HSA-like variants built here (renamed tools,
 * parameters, skills and loader; plain envelope; tighter limits; fewer
 * retries): every reply passes every simulator hook, states the gold
 * facts, and uses only the current surface names; output is deterministic. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* strcasestr */
#endif
#include "test.h"
#include "bank.h"
#include "harness.h"
#include "jsonl.h"
#include "sim.h"
#include "tasks.h"
#include "teacher.h"
#include "util.h"
#include "world.h"

#include <string.h>

static json_t *H;
static world *W;
static teacher *T;

static void setup(void)
{
    H = harness_load(test_example_harness());
    W = world_from_json(world_generate(11, 120), "gen");
    T = teacher_new();
    if (!H || !W || !T) { fprintf(stderr, "setup failed\n"); exit(1); }
}

/* ---- variants ---------------------------------------------------------------- */

static void set_param(json_t *h, const char *name, double v)
{
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(json_object_get(h, "system_prompt"), "blocks"), i, b) {
        json_t *p = json_object_get(json_object_get(b, "params"), name);
        if (p) json_object_set_new(p, "value", json_integer((json_int_t)v));
    }
}

/* Every surface name changed: tools, parameters, skills, the loader. */
static json_t *renamed(void)
{
    json_t *h = json_deep_copy(H);
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(h, "tools"), i, t) {
        char *n = xasprintf("svc_%s_v2", json_string_value(json_object_get(t, "name")));
        json_object_set_new(t, "name", json_string(n));
        free(n);
        json_t *params = json_object_get(t, "parameters"), *props = json_object_get(params, "properties");
        json_t *np = json_object(), *req = json_array(), *v;
        const char *k;
        json_object_foreach(props, k, v) {
            char *nk = xasprintf("%s_arg", k);
            json_object_set(np, nk, v);
            free(nk);
        }
        size_t ri;
        json_array_foreach(json_object_get(params, "required"), ri, v) {
            char *nk = xasprintf("%s_arg", json_string_value(v));
            json_array_append_new(req, json_string(nk));
            free(nk);
        }
        json_object_set_new(params, "properties", np);
        json_object_set_new(params, "required", req);
    }
    json_array_foreach(json_object_get(h, "skills"), i, t) {
        char *n = xasprintf("playbook-%zu", i + 1);
        json_object_set_new(t, "name", json_string(n));
        free(n);
    }
    json_t *l = json_object_get(h, "skill_loader");
    json_object_set_new(l, "name", json_string("open_playbook"));
    json_object_set_new(l, "argument", json_string("playbook_id"));
    json_t *hooks = json_object_get(h, "hooks");
    json_object_set_new(hooks, "result_envelope", json_pack("{s:s}", "style", "plain"));
    json_object_set_new(hooks, "error_format", json_string("[{tool}] failed ({code}): {message}"));
    return h;
}

/* Tight limits: short replies, no emoji, no retries, few turns. */
static json_t *tight(void)
{
    json_t *h = json_deep_copy(H);
    set_param(h, "max_chars", 60);
    set_param(h, "max_emoji", 0);
    set_param(h, "max_turns", 3);
    set_param(h, "max_tool_calls", 2);
    json_object_set_new(json_object_get(json_object_get(h, "hooks"), "tool_retry"), "max_retries", json_integer(0));
    return h;
}

/* Generous retries on every fault, longer replies, a different envelope. */
static json_t *lenient(void)
{
    json_t *h = json_deep_copy(H);
    set_param(h, "max_chars", 200);
    set_param(h, "max_emoji", 3);
    json_t *hooks = json_object_get(h, "hooks");
    json_object_set_new(hooks, "tool_retry", json_pack("{s:i,s:[s,s,s,s,s]}", "max_retries", 3, "retry_on",
                        "timeout", "server_error", "malformed", "empty", "permission_denied"));
    json_object_set_new(hooks, "result_envelope", json_pack("{s:s,s:s,s:s,s:s}", "style", "wrapped",
                        "ok_key", "success", "data_key", "result", "error_key", "message"));
    return h;
}

/* ---- checks -------------------------------------------------------------------- */

static int states(const char *reply, const json_t *v)
{
    if (json_is_string(v)) return strcasestr(reply, json_string_value(v)) != NULL;
    sbuf b;
    sbuf_init(&b);
    bank_number(&b, json_number_value(v));
    int ok = strstr(reply, b.s) != NULL;
    sbuf_free(&b);
    return ok;
}

/* Run n tasks of split under h; returns the number of failures. */
static int play(const json_t *h, const char *split, int n, double faults, const char *forbid)
{
    taskgen *g = taskgen_new(W, split);
    sim *s = sim_new(W);
    sim_set_harness(s, h, NULL);
    teacher_opts o = { 0.3, 0.3 };
    int bad = 0, fact_checked = 0;
    for (int i = 0; i < n; i++) {
        json_t *task = taskgen_make(g, 99, i, NULL, faults);
        rng_t r;
        rng_derive(&r, 5, (uint64_t)i);
        char *err = NULL;
        json_t *msgs = teacher_run(T, s, task, &r, &o, NULL, &err);
        const json_t *rec = sim_record(s);
        int ok = msgs && json_is_true(json_object_get(rec, "accepted"))
                 && json_array_size(json_object_get(rec, "replies")) == 1
                 && json_array_size(json_object_get(rec, "events")) == 0 + (json_array_size(json_object_get(rec, "events")) > 0
                    && !strcmp(json_string_value(json_object_get(json_array_get(json_object_get(rec, "events"), 0), "hook")), "input_check"));
        const char *reply = json_string_value(json_object_get(rec, "reply"));
        const char *nick = json_string_value(json_object_get(json_object_get(task, "viewer"), "nick"));
        if (ok) {
            char *at = xasprintf("@%s", nick);
            ok = strstr(reply, at) == reply;
            free(at);
        }
        /* Gold skills present in the harness were loaded. */
        json_t *want = task_gold_skills(task);
        size_t k, j;
        json_t *f, *g2;
        json_array_foreach(want, k, f) {
            int found = 0;
            json_array_foreach(json_object_get(rec, "skills"), j, g2) found |= json_equal(f, g2);
            ok &= found;
        }
        json_decref(want);
        /* Facts stated when every fault was recovered. */
        int unrecovered = 0;
        json_array_foreach(json_object_get(rec, "faults"), k, f)
            unrecovered |= json_integer_value(json_object_get(f, "failed")) >= json_integer_value(json_object_get(f, "attempts"));
        double maxt;
        if (!harness_param(h, "max_tool_calls", &maxt)
            && json_array_size(json_object_get(json_object_get(task, "gold"), "calls")) > (size_t)maxt)
            unrecovered = 1;                      /* the call budget cannot cover the gold calls */
        if (ok && !unrecovered) {
            const char *key;
            json_object_foreach(json_object_get(json_object_get(task, "gold"), "facts"), key, f) {
                ok &= states(reply, f);
                fact_checked++;
            }
        }
        if (ok && forbid && msgs) {
            char *text = json_compact(msgs);
            ok = strstr(text, forbid) == NULL;
            free(text);
        }
        if (!ok && bad++ < 5) {
            char *t = json_compact(rec), *m = msgs ? json_compact(msgs) : NULL;
            fprintf(stderr, "  teacher failed (%s):\n    task %s\n    msgs %s\n", err ? err : "check", t, m ? m : "-");
            free(t); free(m);
        }
        free(err);
        json_decref(msgs);
        json_decref(task);
    }
    CHECK(fact_checked > n / 2);
    sim_free(s);
    taskgen_free(g);
    return bad;
}

static void teacher_passes_every_hook(void)
{
    CHECK_EQ_INT(play(H, "train", 3000, 0.3, NULL), 0);
    CHECK_EQ_INT(play(H, "eval", 1000, 0.3, NULL), 0);
}

static void teacher_follows_renamed_harness(void)
{
    json_t *h = renamed();
    /* old surface names never appear: tools, loader, skills, envelope */
    CHECK_EQ_INT(play(h, "train", 1500, 0.3, "\"get_product\""), 0);
    CHECK_EQ_INT(play(h, "train", 300, 0.3, "load_skill"), 0);
    CHECK_EQ_INT(play(h, "train", 300, 0.3, "price_promo"), 0);
    CHECK_EQ_INT(play(h, "train", 300, 0.3, "\"ok\":"), 0);
    json_decref(h);
}

static void teacher_respects_tight_and_lenient_limits(void)
{
    json_t *h = tight();
    CHECK_EQ_INT(play(h, "train", 1500, 0.4, NULL), 0);
    json_decref(h);
    h = lenient();
    CHECK_EQ_INT(play(h, "train", 1000, 0.5, NULL), 0);
    json_decref(h);
}

static int tool_msgs(const json_t *msgs, const char *name)
{
    int n = 0;
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m)
        n += json_is_string(json_object_get(m, "name")) && !strcmp(json_string_value(json_object_get(m, "name")), name);
    return n;
}

static void check_recovery(const json_t *e, int call, const char *fn, int attempts, int failed,
                           int pruned, int recovered)
{
    CHECK(e != NULL);
    if (!e) return;
    CHECK_EQ_INT(json_integer_value(json_object_get(e, "call")), call);
    CHECK_STR(json_string_value(json_object_get(e, "function")), fn);
    CHECK_EQ_INT(json_integer_value(json_object_get(e, "attempts")), attempts);
    CHECK_EQ_INT(json_integer_value(json_object_get(e, "failed")), failed);
    CHECK_EQ_INT(json_integer_value(json_object_get(e, "pruned")), pruned);
    CHECK_EQ_INT(json_is_true(json_object_get(e, "recovered")), recovered);
}

static void retries_kept_or_pruned(void)
{
    /* A timeout once: pruned → one call of the tool; kept → two. */
    json_t *task = NULL;
    taskgen *g = taskgen_new(W, "train");
    for (int i = 0; !task; i++) {
        json_t *t = taskgen_make(g, 3, i, "price", 0);
        json_object_set_new(t, "faults", json_pack("[{s:i,s:s,s:i}]", "call", 0, "type", "timeout", "times", 1));
        task = t;
    }
    sim *s = sim_new(W);
    sim_set_harness(s, H, NULL);
    int counts[2];
    for (int keep = 0; keep < 2; keep++) {
        teacher_opts o = { 0, keep };
        rng_t r;
        rng_seed(&r, 1);
        char *err = NULL;
        json_t *meta = json_object();
        json_t *msgs = teacher_run(T, s, task, &r, &o, meta, &err);
        CHECK(msgs != NULL);
        int n = 0;
        size_t i;
        json_t *m;
        json_array_foreach(msgs, i, m)
            n += json_is_string(json_object_get(m, "name")) && !strcmp(json_string_value(json_object_get(m, "name")), "get_product");
        counts[keep] = n;
        CHECK_EQ_INT(json_integer_value(json_object_get(meta, "faults_hit")), 1);
        CHECK_EQ_INT(json_integer_value(json_object_get(meta, "pruned")), keep ? 0 : 1);
        /* per call: two attempts, one failed, pruned unless kept, recovered */
        const json_t *rv = json_object_get(meta, "recovery");
        CHECK_EQ_INT(json_array_size(rv), 1);
        check_recovery(json_array_get(rv, 0), 0, "product.lookup", 2, 1, keep ? 0 : 1, 1);
        json_decref(meta);
        json_decref(msgs);
        free(err);
    }
    CHECK_EQ_INT(counts[0], 1);
    CHECK_EQ_INT(counts[1], 2);
    /* Unrecoverable: the failed call stays and the reply apologises without numbers. */
    json_object_set_new(task, "faults", json_pack("[{s:i,s:s,s:i}]", "call", 0, "type", "permission_denied", "times", 1));
    teacher_opts o = { 0, 0 };
    rng_t r;
    rng_seed(&r, 1);
    char *err = NULL;
    json_t *msgs = teacher_run(T, s, task, &r, &o, NULL, &err);
    CHECK(msgs != NULL);
    const char *reply = json_string_value(json_object_get(sim_record(s), "reply"));
    CHECK(reply && !strpbrk(strchr(reply, ' '), "0123456789"));
    CHECK_EQ_INT(json_integer_value(json_object_get(sim_record(s), "tool_calls")), 1);
    json_decref(msgs);
    json_decref(task);
    sim_free(s);
    taskgen_free(g);
}

/* A retry the budget stops: the failed attempts stay in the trajectory
 * (pruning them would hide a needed call) and the reply apologises.
 * max_tool_calls 2 and a timeout twice: attempt 3 would succeed, but the
 * budget ends it after two.  The same with a retry the retry limit ends. */
static void abandoned_retries_are_kept(void)
{
    taskgen *g = taskgen_new(W, "train");
    json_t *task = taskgen_make(g, 3, 0, "price", 0);
    json_object_set_new(task, "faults", json_pack("[{s:i,s:s,s:i}]", "call", 0, "type", "timeout", "times", 2));
    json_t *h = json_deep_copy(H);
    set_param(h, "max_tool_calls", 2);
    sim *s = sim_new(W);
    for (int round = 0; round < 2; round++) {
        sim_set_harness(s, h, NULL);
        teacher_opts o = { 0, 0 };   /* prune whatever may be pruned */
        rng_t r;
        rng_seed(&r, 1);
        char *err = NULL;
        json_t *meta = json_object();
        json_t *msgs = teacher_run(T, s, task, &r, &o, meta, &err);
        CHECK(msgs != NULL);
        const json_t *rec = sim_record(s);
        /* every call the simulator served is in the messages */
        CHECK_EQ_INT(tool_msgs(msgs, "get_product"), 2 + round);
        CHECK_EQ_INT(json_integer_value(json_object_get(rec, "tool_calls")), 2 + round);
        CHECK_EQ_INT(json_integer_value(json_object_get(meta, "pruned")), 0);
        check_recovery(json_array_get(json_object_get(meta, "recovery"), 0), 0, "product.lookup",
                       2 + round, 2 + round, 0, 0);
        const char *reply = json_string_value(json_object_get(rec, "reply"));
        CHECK(reply && !strpbrk(strchr(reply, ' '), "0123456789"));
        json_decref(msgs);
        json_decref(meta);
        free(err);
        /* round 2: budget to spare, three timeouts against max_retries 2 */
        set_param(h, "max_tool_calls", 6);
        json_object_set_new(json_array_get(json_object_get(task, "faults"), 0), "times", json_integer(3));
        json_t *h2 = json_deep_copy(h);   /* a new object: the simulator rereads it */
        json_decref(h);
        h = h2;
    }
    sim_free(s);
    json_decref(h);
    json_decref(task);
    taskgen_free(g);
}

/* compare under a flash sale: both prices are the live ones, as in
 * gold.facts (tasks.jsonl(5)); the regular price of a product on flash
 * sale is not quoted. */
static void compare_quotes_live_prices(void)
{
    taskgen *g = taskgen_new(W, "train");
    sim *s = sim_new(W);
    sim_set_harness(s, H, NULL);
    int flashed[2] = { 0, 0 };
    for (int i = 0; i < 4000 && (flashed[0] < 3 || flashed[1] < 3); i++) {
        json_t *task = taskgen_make(g, 8, i, "compare", 0);
        const json_t *ctx = json_object_get(task, "context");
        const char *pid[2] = { json_string_value(json_object_get(ctx, "product")),
                               json_string_value(json_object_get(ctx, "product2")) };
        const json_t *fs[2] = { world_flash_sale(W, pid[0] ? pid[0] : ""), world_flash_sale(W, pid[1] ? pid[1] : "") };
        if (!fs[0] && !fs[1]) { json_decref(task); continue; }
        teacher_opts o = { 0, 0 };
        rng_t r;
        rng_derive(&r, 8, (uint64_t)i);
        char *err = NULL;
        json_t *msgs = teacher_run(T, s, task, &r, &o, NULL, &err);
        CHECK(msgs != NULL);
        const char *reply = json_string_value(json_object_get(sim_record(s), "reply"));
        const json_t *facts = json_object_get(json_object_get(task, "gold"), "facts");
        CHECK(reply && states(reply, json_object_get(facts, "price")) && states(reply, json_object_get(facts, "price2")));
        for (int k = 0; k < 2; k++) {
            if (!fs[k]) continue;
            flashed[k]++;
            CHECK_EQ_INT(json_number_value(json_object_get(facts, k ? "price2" : "price")) ==
                         json_number_value(json_object_get(fs[k], "price")), 1);
            const json_t *regular = json_object_get(world_product_by_id(W, pid[k]), "price");
            if (reply && json_number_value(regular) != json_number_value(json_object_get(facts, "price"))
                && json_number_value(regular) != json_number_value(json_object_get(facts, "price2")))
                CHECK(!states(reply, regular));
        }
        json_decref(msgs);
        json_decref(task);
        free(err);
    }
    CHECK(flashed[0] >= 3 && flashed[1] >= 3);
    sim_free(s);
    taskgen_free(g);
}

static void deterministic(void)
{
    char *out[2];
    for (int k = 0; k < 2; k++) {
        taskgen *g = taskgen_new(W, "train");
        sim *s = sim_new(W);
        sim_set_harness(s, H, NULL);
        teacher_opts o = { 0.5, 0.5 };
        sbuf b;
        sbuf_init(&b);
        for (int i = 0; i < 200; i++) {
            json_t *task = taskgen_make(g, 7, i, NULL, 0.3);
            rng_t r;
            rng_derive(&r, 7, (uint64_t)i);
            char *err = NULL;
            json_t *msgs = teacher_run(T, s, task, &r, &o, NULL, &err);
            char *t = json_compact(task), *m = json_compact(msgs);
            sbuf_puts(&b, t);
            sbuf_puts(&b, m);
            free(t); free(m); free(err);
            json_decref(msgs);
            json_decref(task);
        }
        out[k] = sbuf_detach(&b);
        sim_free(s);
        taskgen_free(g);
    }
    CHECK(strcmp(out[0], out[1]) == 0);
    free(out[0]);
    free(out[1]);
}

static void splits_keep_products_and_templates_apart(void)
{
    taskgen *tr = taskgen_new(W, "train"), *ev = taskgen_new(W, "eval");
    json_t *seen = json_object();
    for (int i = 0; i < 2000; i++) {
        json_t *t = taskgen_make(tr, 1, i, NULL, 0);
        const json_t *ctx = json_object_get(t, "context");
        const char *pid = json_string_value(json_object_get(ctx, "product"));
        if (pid) CHECK_STR(json_string_value(json_object_get(world_product_by_id(W, pid), "split")), "train");
        json_object_set_new(seen, json_string_value(json_object_get(ctx, "template")), json_true());
        json_decref(t);
    }
    int intents[TASK_N_INTENTS] = {0};
    for (int i = 0; i < 2000; i++) {
        json_t *t = taskgen_make(ev, 1, i, NULL, 0);
        const json_t *ctx = json_object_get(t, "context");
        const char *pid = json_string_value(json_object_get(ctx, "product"));
        if (pid) CHECK_STR(json_string_value(json_object_get(world_product_by_id(W, pid), "split")), "eval");
        for (int k = 0; k < TASK_N_INTENTS; k++)
            intents[k] += !strcmp(task_intents[k], json_string_value(json_object_get(t, "intent")));
        CHECK(task_check(t) == NULL);
        json_decref(t);
    }
    for (int k = 0; k < TASK_N_INTENTS; k++) CHECK(intents[k] > 0);
    json_decref(seen);
    taskgen_free(tr);
    taskgen_free(ev);
    /* bad task lines are named */
    json_t *t = json_loads("{\"id\":\"x\",\"viewer\":{\"nick\":\"a\",\"text\":\"b\"},\"intent\":\"haggle\",\"gold\":{\"skill\":\"price\"}}", 0, NULL);
    char *e = task_check(t);
    CHECK_STR(e, "unknown intent 'haggle'");
    free(e);
    json_object_set_new(t, "intent", json_string("price"));
    json_object_set_new(json_object_get(t, "gold"), "calls", json_pack("[{s:s,s:{}}]", "function", "product.lookup", "arguments"));
    json_object_set_new(t, "faults", json_pack("[{s:i,s:s,s:i}]", "call", 3, "type", "timeout", "times", 1));
    e = task_check(t);
    CHECK_STR(e, "faults[0]: call must index gold.calls");
    free(e);
    json_decref(t);
}

int main(void)
{
    setup();
    RUN(teacher_passes_every_hook);
    RUN(teacher_follows_renamed_harness);
    RUN(teacher_respects_tight_and_lenient_limits);
    RUN(retries_kept_or_pruned);
    RUN(abandoned_retries_are_kept);
    RUN(compare_quotes_live_prices);
    RUN(deterministic);
    RUN(splits_keep_products_and_templates_apart);
    teacher_free(T);
    world_free(W);
    json_decref(H);
    TEST_MAIN_END();
}
