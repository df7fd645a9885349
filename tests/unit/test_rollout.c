/* test_rollout.c — the agent loop end to end.  A scripted policy replaying
 * the teacher's turns as text reaches the teacher's exact trajectory, an
 * accepted reply and full marks from the judge; malformed turns are
 * answered through the harness's hooks; max_turns and the token budget
 * end the loop.  With a real (random) tiny model: log-probs are finite,
 * <= 0 and equal what one teacher-forced forward pass over the recorded
 * ids gives; the mask is 1 exactly on sampled ids; the output depends on
 * (seed, stream) only, not on how many conversations share the batch. */
#include "test.h"
#include "chat.h"
#include "harness.h"
#include "judge.h"
#include "jsonl.h"
#include "model.h"
#include "rollout.h"
#include "sim.h"
#include "tasks.h"
#include "teacher.h"
#include "tokenizer.h"
#include "util.h"
#include "world.h"

#include <omp.h>
#include <stdint.h>
#include <string.h>

#define NTASK 24

static json_t *H;
static world *W;
static tokenizer *TK;
static judge *J;
static json_t *tasks[NTASK], *gold[NTASK];   /* tasks and the teacher's messages */

/* What the model would write for an assistant message in the middle of a
 * tool-call chain: its span in the template, less the closing <|im_end|>. */
static char *asst_text(const json_t *msg)
{
    json_t *msgs = json_pack("[{s:s,s:s},O,{s:s,s:s,s:s}]", "role", "user", "content", "q", msg,
                             "role", "tool", "name", "x", "content", "x");
    chat_opts o = CHAT_OPTS_INIT;
    chat_text t;
    char *err = NULL, *out = NULL;
    if (chat_render(&t, msgs, &o, &err) == 0) {
        for (size_t i = 0; i < t.nspans; i++)
            if (t.spans[i].assistant) out = xstrndup(t.text + t.spans[i].off, t.spans[i].len - strlen("<|im_end|>"));
        chat_text_free(&t);
    }
    free(err);
    json_decref(msgs);
    return out;
}

static void setup(void)
{
    H = harness_load(test_example_harness());
    W = world_from_json(world_generate(3, 40), "gen");
    teacher *T = teacher_new();
    taskgen *g = W ? taskgen_new(W, "train") : NULL;
    if (!H || !W || !T || !g) { fprintf(stderr, "setup failed\n"); exit(1); }
    sim *s = sim_new(W);
    sim_set_harness(s, H, NULL);
    teacher_opts to = { 0.4, 0 };
    for (int i = 0; i < NTASK; i++) {
        tasks[i] = taskgen_make(g, 7, i, NULL, 0);
        rng_t r;
        rng_derive(&r, 7, i);
        char *err = NULL;
        gold[i] = teacher_run(T, s, tasks[i], &r, &to, NULL, &err);
        if (!gold[i]) { fprintf(stderr, "teacher: %s\n", err); exit(1); }
    }
    /* A small tokenizer trained on the rendered conversations. */
    char *tp = hat_data_path("tokenizer/template.json");
    json_t *tmpl = tp ? json_load_path(tp) : NULL;
    free(tp);
    char *err = NULL;
    tok_trainer *tr = tmpl ? tok_trainer_new(tmpl, &err) : NULL;
    if (!tr) { fprintf(stderr, "tokenizer template: %s\n", err ? err : "missing"); exit(1); }
    for (int i = 0; i < NTASK; i++) {
        chat_opts o = CHAT_OPTS_INIT;
        chat_text t;
        if (harness_render(&t, H, gold[i], &o, &err) == 0) {
            tok_trainer_add(tr, t.text, t.len);
            chat_text_free(&t);
        }
    }
    tok_train_opts to2 = { .vocab_size = 700, .min_frequency = 2 };
    json_t *tj = tok_trainer_finish(tr, &to2, &err);
    TK = tj ? tok_from_json(tj, &err) : NULL;
    if (!TK) { fprintf(stderr, "tokenizer: %s\n", err); exit(1); }
    J = judge_new(W, NULL, &err);
    if (!J) { fprintf(stderr, "judge: %s\n", err); exit(1); }
    json_decref(tj);
    json_decref(tmpl);
    tok_trainer_free(tr);
    taskgen_free(g);
    teacher_free(T);
    sim_free(s);
}

/* ---- scripted policies -------------------------------------------------------------- */

typedef struct {
    const char *first;    /* text of the first turn instead of the teacher's, or NULL */
    int         loop;     /* always load a skill: never reply */
} script;

static char *script_policy(void *ctx, const json_t *h, const json_t *msgs, void *user)
{
    script *sc = ctx;
    long task = (intptr_t)user;
    int k = 0, bad = 0;
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        if (strcmp(json_string_value(json_object_get(m, "role")), "assistant")) continue;
        k++;
        bad += json_object_get(m, "parse_error") != NULL;
    }
    if (sc->first && k == 0) return xstrdup(sc->first);
    if (sc->loop)
        return xasprintf("<tool_call>\n{\"name\": \"%s\", \"arguments\": {\"%s\": \"engagement\"}}\n</tool_call>",
                         harness_loader_name(h), harness_loader_argument(h));
    int want = k - bad, seen = 0;
    json_array_foreach(gold[task], i, m) {
        if (strcmp(json_string_value(json_object_get(m, "role")), "assistant")) continue;
        if (seen++ == want) return asst_text(m);
    }
    return NULL;
}

/* Run tasks [0, n) with a policy (model NULL) or a model; results by task. */
static void run(const model *mdl, script *sc, judge *j, int n, int batch, const rollout_params *p,
                uint64_t seed, rollout_result **out)
{
    char *err = NULL;
    rollout *r = rollout_new(mdl, TK, W, batch, 0, &err);
    CHECK(r != NULL);
    if (!r) { free(err); return; }
    if (sc) rollout_set_policy(r, script_policy, sc);
    rollout_set_judge(r, j);
    int next = 0;
    while (next < n || rollout_running(r) || rollout_pending(r)) {
        while (next < n && rollout_add(r, tasks[next], H, seed, next, p, (void *)(intptr_t)next, &err) == 0) next++;
        CHECK(err == NULL);
        rollout_step(r);
        for (rollout_result *x; (x = rollout_take(r));) out[(intptr_t)x->user] = x;
    }
    rollout_free(r);
}

/* The teacher's turns as text reach the teacher's exact trajectory; the
 * judge gives full marks; the ids are the template's text of it. */
static void scripted_teacher_reaches_accepted_reply(void)
{
    rollout_result *res[NTASK] = { 0 };
    rollout_params p = ROLLOUT_PARAMS_INIT;
    script sc = { NULL, 0 };
    run(NULL, &sc, J, NTASK, 5, &p, 1, res);
    int thought = 0, nfull = 0;
    for (int i = 0; i < NTASK; i++) {
        rollout_result *x = res[i];
        CHECK(x != NULL);
        if (!x) continue;
        CHECK_EQ_INT(x->finish, ROLLOUT_ACCEPTED);
        CHECK(json_equal(x->messages, gold[i]));
        CHECK_EQ_INT(x->malformed, 0);
        CHECK_STR(json_string_value(json_object_get(x->meta, "finish")), "accepted");
        /* the verdict is the judge's verdict of the teacher's own trajectory */
        CHECK(x->judged);
        judge_verdict direct;
        CHECK_EQ_INT(judge_score(J, tasks[i], H, gold[i], &direct), 0);
        for (int k = 0; k < JUDGE_NCOMP; k++) CHECK_NEAR(x->verdict.score[k], direct.score[k], 0);
        CHECK(json_equal(x->verdict.reasons, direct.reasons));
        int full = x->verdict.score[JUDGE_ACCURACY] == 1 && x->verdict.score[JUDGE_EFFECTIVENESS] == 1 &&
                   x->verdict.score[JUDGE_TOOLS] == 1 && x->verdict.score[JUDGE_SKILLS] == 1 &&
                   x->verdict.score[JUDGE_COT] == 0 && x->verdict.pass;
        nfull += full;
        if (!full) {
            char *why = json_compact(x->verdict.reasons);
            fprintf(stderr, "  note: task %d (%s): the judge does not give the teacher full marks: %s\n", i,
                    json_string_value(json_object_get(tasks[i], "intent")), why);
            free(why);
        }
        judge_verdict_clear(&direct);
        /* tokens: mask 1 exactly on the turns; the text before the last
         * turn is the template's generation prompt for what came before */
        rollout_tokens *t = &x->tok;
        int masked = 0, inturn = 0;
        for (int k = 0; k < t->n; k++) masked += t->mask[k];
        for (int k = 0; k < t->n_turns; k++) inturn += t->turn_len[k];
        CHECK_EQ_INT(masked, inturn);
        CHECK_EQ_INT(t->n_turns, x->turns);
        CHECK_EQ_INT(x->gen_tokens, inturn);
        for (int k = 0; k < t->n_turns; k++)
            for (int q = 0; q < t->turn_len[k]; q++) CHECK(t->mask[t->turn_off[k] + q] == 1);
        CHECK(t->n_turns > 0 && t->ids[t->n - 1] == tok_token_id(TK, "<|im_end|>"));
        json_t *before = json_array();
        size_t last = 0, m;
        json_t *v;
        json_array_foreach(x->messages, m, v)
            if (!strcmp(json_string_value(json_object_get(v, "role")), "assistant")) last = m;
        for (m = 0; m < last; m++) json_array_append(before, json_array_get(x->messages, m));
        chat_opts o = CHAT_OPTS_INIT;
        o.add_generation_prompt = 1;
        chat_text ct;
        char *err = NULL;
        CHECK_EQ_INT(harness_render(&ct, H, before, &o, &err), 0);
        size_t len;
        char *dec = tok_decode(TK, t->ids, t->turn_off[t->n_turns - 1], 0, &len);
        CHECK(dec && len == ct.len && !memcmp(dec, ct.text, len));
        free(dec);
        chat_text_free(&ct);
        json_decref(before);
        json_array_foreach(x->messages, m, v) thought += json_object_get(v, "reasoning_content") != NULL;
        rollout_result_free(x);
    }
    CHECK(thought > 0);               /* reasoning went through the loop too */
    CHECK(nfull >= NTASK * 9 / 10);   /* full marks (all of them once judge and teacher agree) */
}

/* A call that does not parse is shown as a tool_args_check refusal; an
 * unclosed <think> as a reply_format rejection; the loop goes on. */
static void malformed_turns_are_shown_as_errors(void)
{
    rollout_result *res[2] = { 0 };
    rollout_params p = ROLLOUT_PARAMS_INIT;
    p.max_turns = 10;
    script sc = { "<tool_call>\n{\"name\": \"get_product\", \"arguments\": {\"product\": }}\n</tool_call>", 0 };
    run(NULL, &sc, NULL, 2, 2, &p, 1, res);
    for (int i = 0; i < 2; i++) {
        rollout_result *x = res[i];
        CHECK(x != NULL);
        if (!x) continue;
        const json_t *a = json_array_get(x->messages, 1), *note = json_array_get(x->messages, 2);
        CHECK_STR(json_string_value(json_object_get(a, "content")), sc.first);
        CHECK(json_object_get(a, "tool_calls") == NULL);
        const char *pe = json_string_value(json_object_get(a, "parse_error"));
        CHECK(pe && !strncmp(pe, "tool call 1: invalid JSON", 25));
        CHECK_STR(json_string_value(json_object_get(note, "role")), "tool");
        CHECK_STR(json_string_value(json_object_get(note, "name")), "get_product");
        CHECK_STR(json_string_value(json_object_get(note, "hook")), "tool_args_check");
        char *want = xasprintf("Invalid arguments for get_product: %s", pe ? pe : "");
        CHECK_STR(json_string_value(json_object_get(note, "content")), want);
        free(want);
        CHECK_EQ_INT(x->malformed, 1);
        CHECK_EQ_INT(x->finish, ROLLOUT_ACCEPTED);     /* then the teacher's turns finish it */
        CHECK_EQ_INT(json_integer_value(json_object_get(x->meta, "malformed")), 1);
        /* the rest is the teacher's conversation */
        CHECK_EQ_INT(json_array_size(x->messages), json_array_size(gold[i]) + 2);
        CHECK(json_equal(json_array_get(x->messages, 3), json_array_get(gold[i], 1)));
        rollout_result_free(x);
    }
    sc.first = "<think>\nhmm";
    run(NULL, &sc, NULL, 1, 1, &p, 1, res);
    if (res[0]) {
        const json_t *note = json_array_get(res[0]->messages, 2);
        CHECK_STR(json_string_value(json_object_get(note, "role")), "user");
        CHECK_STR(json_string_value(json_object_get(note, "hook")), "reply_format");
        CHECK_STR(json_string_value(json_object_get(note, "content")),
                  "Reply rejected: <think> without </think>: the reasoning was not closed");
        rollout_result_free(res[0]);
    }
    /* without the hooks, the built-in wording */
    json_t *bare = json_object();
    json_t *m = rollout_malformed_note(bare, "<tool_call>\n{\"nam", "tool call 1: <tool_call> without </tool_call>");
    CHECK_STR(json_string_value(json_object_get(m, "content")),
              "Invalid arguments for tool_call: tool call 1: <tool_call> without </tool_call>");
    CHECK_STR(json_string_value(json_object_get(m, "name")), "tool_call");
    json_decref(m);
    json_decref(bare);
}

/* A policy that never replies stops at max_turns: the harness's param,
 * or the caller's override; the token budget stops it earlier. */
static void max_turns_and_budget_end_the_loop(void)
{
    rollout_result *res[1] = { 0 };
    rollout_params p = ROLLOUT_PARAMS_INIT;
    script sc = { NULL, 1 };
    double mt = 0;
    CHECK_EQ_INT(harness_param(H, "max_turns", &mt), 0);
    run(NULL, &sc, NULL, 1, 1, &p, 1, res);
    if (res[0]) {
        CHECK_EQ_INT(res[0]->finish, ROLLOUT_MAX_TURNS_HIT);
        CHECK_EQ_INT(res[0]->turns, (int)mt);
        CHECK_EQ_INT(json_array_size(res[0]->messages), 1 + 2 * (size_t)mt);   /* call + result each */
        CHECK_STR(json_string_value(json_object_get(res[0]->meta, "finish")), "max_turns");
        rollout_result_free(res[0]);
    }
    p.max_turns = 2;
    run(NULL, &sc, NULL, 1, 1, &p, 1, res);
    if (res[0]) { CHECK_EQ_INT(res[0]->turns, 2); rollout_result_free(res[0]); }
    p.max_turns = 0;
    p.max_gen_tokens = 3;     /* one scripted turn is longer than that */
    run(NULL, &sc, NULL, 1, 1, &p, 1, res);
    if (res[0]) {
        CHECK_EQ_INT(res[0]->finish, ROLLOUT_BUDGET);
        CHECK_EQ_INT(res[0]->turns, 1);
        rollout_result_free(res[0]);
    }
}

/* ---- a real tiny model ------------------------------------------------------------- */

static model *tiny_model(void)
{
    model_config c = { .vocab_size = tok_vocab_size(TK), .hidden_size = 32, .intermediate_size = 64,
                       .n_layers = 2, .n_heads = 2, .n_kv_heads = 1, .head_dim = 16, .rms_norm_eps = 1e-6,
                       .rope_theta = 10000, .tie_word_embeddings = 1, .max_position_embeddings = 4096,
                       .bos_token_id = -1, .eos_token_id = -1 };
    model *m = model_new(&c);
    model_init_random(m, 5, 0.5f);   /* a large std: peaked, varied garbage */
    return m;
}

/* Same conversation: messages, meta, ids and mask equal; log-probs
 * within tol (0 = bit for bit). */
static int same_result(const rollout_result *a, const rollout_result *b, double tol)
{
    if (!(a && b && json_equal(a->messages, b->messages) && json_equal(a->meta, b->meta) &&
          a->tok.n == b->tok.n && !memcmp(a->tok.ids, b->tok.ids, a->tok.n * sizeof(int)) &&
          !memcmp(a->tok.mask, b->tok.mask, a->tok.n * sizeof(int))))
        return 0;
    for (int k = 0; k < a->tok.n; k++)
        if (!(fabs(a->tok.logprobs[k] - b->tok.logprobs[k]) <= tol)) return 0;
    return 1;
}

static void model_rollouts_logprobs_mask_determinism(void)
{
    enum { N = 4 };
    model *m = tiny_model();
    rollout_params p = ROLLOUT_PARAMS_INIT;
    p.temperature = 1;
    p.max_tokens = 12;
    p.max_turns = 3;
    rollout_result *a[N] = { 0 }, *b[N] = { 0 }, *c[N] = { 0 }, *d[N] = { 0 };
    run(m, NULL, NULL, N, N, &p, 9, a);
    run(m, NULL, NULL, N, 1, &p, 9, b);
    run(m, NULL, NULL, N, N, &p, 10, c);
    run(m, NULL, NULL, N, N, &p, 9, d);
    int differ = 0, turns = 0;
    for (int i = 0; i < N; i++) {
        CHECK(a[i] && b[i] && c[i]);
        if (!a[i] || !b[i] || !c[i]) continue;
        CHECK(same_result(a[i], d[i], 0));       /* same seed, same bits */
        /* batch 4 == batch 1: the same conversations; the log-probs agree
         * to rounding only, because OpenBLAS sums a row of a 4-row product
         * in another order than a 1-row one (see the report) */
        CHECK(same_result(a[i], b[i], 1e-5));
        differ += !same_result(a[i], c[i], 0);
        rollout_tokens *t = &a[i]->tok;
        turns += t->n_turns;
        CHECK(a[i]->finish != ROLLOUT_ERROR);
        CHECK(t->n_turns >= 1 && t->n_turns == a[i]->turns);
        /* mask: 1 exactly on the sampled ranges */
        unsigned char *in = xcalloc(t->n, 1);
        for (int k = 0; k < t->n_turns; k++)
            for (int q = 0; q < t->turn_len[k]; q++) in[t->turn_off[k] + q] = 1;
        int bad = 0;
        for (int k = 0; k < t->n; k++) {
            bad += t->mask[k] != in[k];
            if (t->mask[k]) bad += !(isfinite(t->logprobs[k]) && t->logprobs[k] <= 0);
            else bad += t->logprobs[k] != 0;
        }
        CHECK_EQ_INT(bad, 0);
        CHECK_EQ_INT(t->mask[t->n_prompt - 1], 0);
        CHECK_EQ_INT(t->mask[t->n_prompt], 1);
        /* one teacher-forced forward over the ids gives the same log-probs */
        int *tg = xmalloc(t->n * sizeof(int));
        for (int k = 0; k < t->n; k++) tg[k] = k + 1 < t->n && t->mask[k + 1] ? t->ids[k + 1] : -1;
        model_forward(m, t->ids, tg, 1, t->n);
        double worst = 0;
        for (int k = 0; k + 1 < t->n; k++)
            if (tg[k] >= 0) worst = fmax(worst, fabs(-m->losses[k] - t->logprobs[k + 1]));
        CHECK(worst < 1e-3);
        free(tg);
        free(in);
    }
    CHECK(differ > 0);         /* another seed, other conversations */
    CHECK(turns > N);          /* some conversations went on after a first turn */
    for (int i = 0; i < N; i++) {
        rollout_result_free(a[i]); rollout_result_free(b[i]); rollout_result_free(c[i]); rollout_result_free(d[i]);
    }
    model_free(m);
}

/* The trajectory line: keys, id, tokens on request. */
static void result_json_line(void)
{
    rollout_result *res[1] = { 0 };
    rollout_params p = ROLLOUT_PARAMS_INIT;
    script sc = { NULL, 0 };
    run(NULL, &sc, J, 1, 1, &p, 3, res);
    if (!res[0]) { CHECK(0); return; }
    json_t *o = rollout_result_json(res[0], NULL, 1);
    char *s = json_compact(o);
    char *want = xasprintf("{\"id\":\"%s.r\",\"task_id\":\"%s\",\"harness\":{", json_string_value(json_object_get(tasks[0], "id")),
                           json_string_value(json_object_get(tasks[0], "id")));
    CHECK(!strncmp(s, want, strlen(want)));
    CHECK(strstr(s, "\"meta\":{\"hsa\":[],\"seed\":3,\"stream\":0,\"intent\":") != NULL);
    CHECK(strstr(s, "\"verdict\":{\"scores\":{\"accuracy\":1") != NULL);
    CHECK_EQ_INT(json_array_size(json_object_get(json_object_get(o, "tokens"), "ids")), res[0]->tok.n);
    free(want);
    free(s);
    json_decref(o);
    rollout_result_free(res[0]);
}

static void bad_setup_is_refused(void)
{
    char *err = NULL;
    model_config c = { .vocab_size = 100, .hidden_size = 16, .intermediate_size = 16, .n_layers = 1,
                       .n_heads = 1, .n_kv_heads = 1, .head_dim = 16, .rms_norm_eps = 1e-6,
                       .rope_theta = 10000, .tie_word_embeddings = 1, .max_position_embeddings = 64,
                       .bos_token_id = -1, .eos_token_id = -1 };
    model *m = model_new(&c);
    CHECK(rollout_new(m, TK, W, 2, 0, &err) == NULL);
    CHECK(err && strstr(err, "the tokenizer has 700 ids but the model only 100"));
    free(err);
    model_free(m);
    rollout *r = rollout_new(NULL, TK, W, 1, 0, &err);
    rollout_params p = ROLLOUT_PARAMS_INIT;
    CHECK_EQ_INT(rollout_add(r, tasks[0], H, 1, 0, &p, NULL, &err), -1);
    CHECK(err && strstr(err, "neither a model nor a policy"));
    free(err);
    rollout_free(r);
}

int main(void)
{
    omp_set_num_threads(1);    /* tiny dims: threads only add overhead */
    setup();
    RUN(scripted_teacher_reaches_accepted_reply);
    RUN(malformed_turns_are_shown_as_errors);
    RUN(max_turns_and_budget_end_the_loop);
    RUN(model_rollouts_logprobs_mask_determinism);
    RUN(result_json_line);
    RUN(bad_setup_is_refused);
    for (int i = 0; i < NTASK; i++) { json_decref(tasks[i]); json_decref(gold[i]); }
    judge_free(J);
    tok_free(TK);
    world_free(W);
    json_decref(H);
    TEST_MAIN_END();
}
