/* test_grpo.c — GRPO arithmetic against hand-computed examples: group
 * advantages (std-scaled or not, GDPO), the clipped per-token loss and its
 * gradient (token and sequence level, k3 KL), the four loss aggregations;
 * the token units (tool responses and prompts are never trained; split
 * segments); and the policy-gradient loss's gradient through a tiny model
 * (grpo_dlogits + model_backward_dlogits) against finite differences. */
#include "test.h"
#include "grpo.h"
#include "model.h"
#include "rng.h"
#include "util.h"

static void test_advantages(void)
{
    double r[8] = { 1, 0, 0, 1,   0.5, 0.5, 0.5, 0.5 }, a[8];
    int zero = grpo_advantages(r, 2, 4, 1, a);
    CHECK_EQ_INT(zero, 1);
    double sd = sqrt(1.0 / 3.0);   /* unbiased: sum of squares 1, n - 1 = 3 */
    CHECK_NEAR(a[0], 0.5 / (sd + 1e-4), 1e-12);
    CHECK_NEAR(a[1], -0.5 / (sd + 1e-4), 1e-12);
    for (int i = 4; i < 8; i++) CHECK_NEAR(a[i], 0, 0);
    grpo_advantages(r, 2, 4, 0, a);
    CHECK_NEAR(a[0], 0.5, 1e-15);
    CHECK_NEAR(a[2], -0.5, 1e-15);
}

static void test_gdpo(void)
{
    /* one group of 2, two components: (1,0) and (0,10).  Each component
     * normalised in the group gives +-1/sqrt(2)-ish; weights 1 and 0.1;
     * the batch normalisation then maps the sums to +-1/sqrt(2)*sqrt(2). */
    double comp[4] = { 1, 0,   0, 10 }, w[2] = { 1, 0.1 }, a[2];
    grpo_gdpo_advantages(comp, w, 2, 1, 2, 1, a);
    /* component 0: (+.5, -.5) / (std .7071 + 1e-4); component 1: (-5, +5) / (7.071 + 1e-4) */
    double c0 = 0.5 / (sqrt(0.5) + 1e-4), c1 = 5 / (sqrt(50) + 1e-4);
    double s0 = c0 - 0.1 * c1, s1 = -c0 + 0.1 * c1, mu = 0, sd = sqrt((s0 * s0 + s1 * s1) / 1);
    CHECK_NEAR(a[0], (s0 - mu) / (sd + 1e-4), 1e-9);
    CHECK_NEAR(a[1], (s1 - mu) / (sd + 1e-4), 1e-9);
    /* plain GRPO on the weighted sum would favour sample 0 less: here the
     * rarer component is not drowned by the larger scale of the other */
    CHECK(a[0] > 0 && a[1] < 0);
}

/* tokens: t0 unit 0 r=1.1, t1 unit 0 r=1.5, t2 unit 1 r=0.5, t3 untrained */
static const int U4[4] = { 0, 0, 1, -1 };
static void ex_lp(float *lp, float *old)
{
    old[0] = -1; old[1] = -2; old[2] = -0.5f; old[3] = -3;
    lp[0] = old[0] + logf(1.1f); lp[1] = old[1] + logf(1.5f); lp[2] = old[2] + logf(0.5f); lp[3] = -7;
}

static void test_loss_token(void)
{
    float lp[4], old[4], dlp[4];
    ex_lp(lp, old);
    double adv[2] = { 1, -1 }, w[2];
    int mb[2] = { 0, 0 }, len[2] = { 2, 1 };
    grpo_loss_cfg c = { 0, 0.2f, 0.2f, 0 };
    /* per-token losses: -1.1, -min(1.5, 1.2) = -1.2, -min(-0.5, -0.8) = 0.8 */
    struct { int type; double w0, w1, loss; } want[4] = {
        { GRPO_LOSS_GRPO, 0.25, 0.5, 0.25 * -2.3 + 0.5 * 0.8 },
        { GRPO_LOSS_BNPO, 1.0 / 3, 1.0 / 3, -1.5 / 3 },
        { GRPO_LOSS_DR_GRPO, 1.0 / 8, 1.0 / 8, -1.5 / 8 },
        { GRPO_LOSS_DAPO, 1.0 / 3, 1.0 / 3, -1.5 / 3 } };
    for (int i = 0; i < 4; i++) {
        grpo_unit_weights(want[i].type, 2, mb, len, 1, 4, w);
        CHECK_NEAR(w[0], want[i].w0, 1e-12);
        CHECK_NEAR(w[1], want[i].w1, 1e-12);
        grpo_loss_stats st = { 0 };
        double L = grpo_token_loss(&c, 4, lp, old, NULL, U4, adv, w, 2, dlp, &st);
        CHECK_NEAR(L, want[i].loss, 1e-6);
        CHECK_NEAR(dlp[0], -1.1 * want[i].w0, 1e-6);   /* unclipped: -A r w */
        CHECK_NEAR(dlp[1], 0, 0);                      /* clipped high, A > 0 */
        CHECK_NEAR(dlp[2], 0, 0);                      /* clipped low, A < 0 */
        CHECK_NEAR(dlp[3], 0, 0);
        CHECK_EQ_INT(st.clipped, 2);
        CHECK_EQ_INT(st.tokens, 3);
    }
    /* two micro-batches: units in mb 0 and 1 */
    int mb2[2] = { 0, 1 };
    grpo_unit_weights(GRPO_LOSS_GRPO, 2, mb2, len, 2, 4, w);
    CHECK_NEAR(w[0], 1.0 / (2 * 1 * 2), 1e-12);
    CHECK_NEAR(w[1], 1.0 / (1 * 1 * 2), 1e-12);
    grpo_unit_weights(GRPO_LOSS_BNPO, 2, mb2, len, 2, 4, w);
    CHECK_NEAR(w[0], 1.0 / (2 * 2), 1e-12);
    CHECK_NEAR(w[1], 1.0 / (1 * 2), 1e-12);
    grpo_unit_weights(GRPO_LOSS_DAPO, 2, mb2, len, 2, 4, w);
    CHECK_NEAR(w[0], 1.0 / 3, 1e-12);
    grpo_unit_weights(GRPO_LOSS_DR_GRPO, 2, mb2, len, 2, 4, w);
    CHECK_NEAR(w[1], 1.0 / (1 * 4 * 2), 1e-12);
}

static void test_loss_kl_and_sequence(void)
{
    float lp[4], old[4], dlp[4], ref[4];
    ex_lp(lp, old);
    for (int i = 0; i < 4; i++) ref[i] = lp[i] - 0.1f;
    double adv[2] = { 1, -1 }, w[2] = { 1, 1 };
    grpo_loss_cfg c = { 0, 0.2f, 0.2f, 0.5f };
    grpo_loss_stats st = { 0 };
    double L = grpo_token_loss(&c, 4, lp, old, ref, U4, adv, w, 2, dlp, &st);
    double k3 = exp(-0.1) + 0.1 - 1;
    CHECK_NEAR(L, -1.5 + 3 * 0.5 * k3, 1e-6);
    CHECK_NEAR(st.kl, 3 * k3, 1e-6);
    CHECK_NEAR(dlp[1], 0.5 * (1 - exp(-0.1)), 1e-6);   /* clipped: only the KL term */
    /* GSPO: unit 0 weight s = sqrt(1.1 * 1.5) = 1.2845 > 1.2 with A > 0: clipped,
     * both tokens lose 1.2; unit 1 s = 0.5 clipped low: +0.8 */
    grpo_loss_cfg g = { 1, 0.2f, 0.2f, 0 };
    grpo_loss_stats s2 = { 0 };
    L = grpo_token_loss(&g, 4, lp, old, NULL, U4, adv, w, 2, dlp, &s2);
    CHECK_NEAR(L, -2.4 + 0.8, 1e-6);
    CHECK_EQ_INT(s2.clipped, 3);
    /* widen the clip range: s = 1.2845 unclipped, dlp = -A s per token */
    grpo_loss_cfg g2 = { 1, 0.6f, 0.6f, 0 };
    grpo_loss_stats s3 = { 0 };
    L = grpo_token_loss(&g2, 4, lp, old, NULL, U4, adv, w, 2, dlp, &s3);
    double s = sqrt(1.1 * 1.5);
    CHECK_NEAR(L, -2 * s + 0.5, 1e-5);
    CHECK_NEAR(dlp[0], -s, 1e-5);
    CHECK_NEAR(dlp[1], -s, 1e-5);
    CHECK_NEAR(dlp[2], 0.5, 1e-5);
}

/* d loss / d lp by central differences, token and sequence level with KL. */
static void test_loss_fd(void)
{
    rng_t r;
    rng_seed(&r, 5);
    int n = 9, unit[9] = { 0, 0, 1, 1, 1, -1, 2, 2, 0 };
    float lp[9], old[9], ref[9], dlp[9];
    double adv[3] = { 0.7, -1.3, 0.4 }, w[3] = { 0.3, 0.2, 0.5 };
    for (int i = 0; i < n; i++) {
        old[i] = (float)(-1 - rng_uniform(&r));
        lp[i] = old[i] + (float)(0.1 * (rng_uniform(&r) - 0.5));
        ref[i] = lp[i] + (float)(0.3 * (rng_uniform(&r) - 0.5));
    }
    for (int seq = 0; seq < 2; seq++) {
        grpo_loss_cfg c = { seq, 0.2f, 0.28f, 0.3f };
        grpo_loss_stats st = { 0 };
        grpo_token_loss(&c, n, lp, old, ref, unit, adv, w, 3, dlp, &st);
        for (int i = 0; i < n; i++) {
            float keep = lp[i], h = 1e-3f, tmp[9];
            lp[i] = keep + h;
            double up = grpo_token_loss(&c, n, lp, old, ref, unit, adv, w, 3, tmp, &st);
            lp[i] = keep - h;
            double dn = grpo_token_loss(&c, n, lp, old, ref, unit, adv, w, 3, tmp, &st);
            lp[i] = keep;
            CHECK_NEAR(dlp[i], (up - dn) / (2 * h), 2e-4);
        }
    }
}

/* A conversation: prompt (0..2), tool-call turn (3..5), tool response and
 * header (6..7, mask 0), reply turn (8..10), nothing after. */
static void test_units(void)
{
    rollout_result x;
    memset(&x, 0, sizeof x);
    x.messages = json_pack("[{s:s,s:s},{s:s,s:s,s:[{s:s,s:{s:s,s:{}}}]},{s:s,s:s,s:s},{s:s,s:s}]",
        "role", "user", "content", "hi",
        "role", "assistant", "content", "", "tool_calls", "type", "function", "function", "name", "t", "arguments",
        "role", "tool", "name", "t", "content", "{}",
        "role", "assistant", "content", "@a hello");
    int ids[11] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 }, mask[11] = { 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1 };
    int off[2] = { 3, 8 }, tl[2] = { 3, 3 };
    x.tok.ids = ids; x.tok.mask = mask; x.tok.n = 11; x.tok.n_prompt = 3;
    x.tok.turn_off = off; x.tok.turn_len = tl; x.tok.n_turns = 2;
    int unit[11], len[2] = { 0, 0 };
    grpo_token_units(&x, 0, 7, unit, len);
    for (int t = 0; t < 11; t++) CHECK_EQ_INT(unit[t], mask[t] ? 7 : -1);
    CHECK_EQ_INT(len[0], 6);
    len[0] = len[1] = 0;
    grpo_token_units(&x, 1, 4, unit, len);
    for (int t = 3; t < 6; t++) CHECK_EQ_INT(unit[t], 4);
    for (int t = 8; t < 11; t++) CHECK_EQ_INT(unit[t], 5);
    CHECK_EQ_INT(unit[6], -1);   /* the tool response is never trained */
    CHECK_EQ_INT(unit[7], -1);
    CHECK_EQ_INT(len[0], 3);
    CHECK_EQ_INT(len[1], 3);
    json_decref(x.messages);
}

/* ---- through a tiny model ------------------------------------------------ */

static model *tiny(uint64_t seed)
{
    model_config c = { 0 };
    c.vocab_size = 16; c.hidden_size = 8; c.intermediate_size = 16; c.n_layers = 1;
    c.n_heads = 2; c.n_kv_heads = 1; c.head_dim = 4; c.rms_norm_eps = 1e-6; c.rope_theta = 10000;
    c.max_position_embeddings = 32; c.bos_token_id = c.eos_token_id = -1;
    model *m = model_new(&c);
    model_init_random(m, seed, 0.5f);
    return m;
}

enum { FB = 2, FT = 6, FN = FB * FT };
static int ftok[FN], ftgt[FN], funit[FN];
static float fold[FN], fref[FN];
static double fadv[3] = { 0.9, -0.6, 0.3 }, fw[3] = { 1, 1, 1 };

static double model_loss(model *m, int grads, grpo_loss_cfg *c)
{
    float lp[FN], lse[FN], dlp[FN];
    float *lg = model_forward_logits(m, ftok, FB, FT);
    grpo_gather_logprobs(lg, ftgt, FN, m->cfg.vocab_size, lp, lse);
    grpo_loss_stats st = { 0 };
    double L = grpo_token_loss(c, FN, lp, fold, fref, funit, fadv, fw, 3, dlp, &st);
    if (grads) {
        grpo_dlogits(lg, ftgt, dlp, lse, FN, m->cfg.vocab_size);
        model_backward_dlogits(m, lg);
    }
    return L;
}

static void test_model_fd(void)
{
    model *m = tiny(3);
    rng_t r;
    rng_seed(&r, 9);
    for (int i = 0; i < FN; i++) {
        ftok[i] = (int)rng_below(&r, 16);
        int t = i % FT;
        ftgt[i] = t < FT - 1 && t >= 1 ? ftok[i + 1] : -1;
        funit[i] = ftgt[i] < 0 ? -1 : (i < FT ? (t < 3 ? 0 : 1) : 2);
    }
    /* old and ref near the current log-probs: ratios stay inside the clip */
    float lp[FN], lse[FN];
    float *lg = model_forward_logits(m, ftok, FB, FT);
    grpo_gather_logprobs(lg, ftgt, FN, 16, lp, lse);
    for (int i = 0; i < FN; i++) {
        fold[i] = lp[i] + (float)(0.05 * (rng_uniform(&r) - 0.5));
        fref[i] = lp[i] + (float)(0.4 * (rng_uniform(&r) - 0.5));
    }
    for (int seq = 0; seq < 2; seq++) {
        grpo_loss_cfg c = { seq, 0.2f, 0.2f, 0.2f };
        model_alloc_grads(m);
        model_zero_grad(m);
        model_loss(m, 1, &c);
        int worst = 0, checked = 0;
        for (int k = 0; k < 40; k++) {
            size_t i = (size_t)rng_below(&r, m->n_params);
            /* skip padding: only indices inside a tensor */
            int in = 0;
            for (int j = 0; j < m->n_tensors; j++)
                if (i >= m->tensors[j].offset && i < m->tensors[j].offset + m->tensors[j].numel) in = 1;
            if (!in) continue;
            checked++;
            float keep = m->params[i], h = 2e-3f;
            m->params[i] = keep + h;
            double up = model_loss(m, 0, &c);
            m->params[i] = keep - h;
            double dn = model_loss(m, 0, &c);
            m->params[i] = keep;
            double fd = (up - dn) / (2 * h), an = m->grads[i];
            if (fabs(fd - an) > 2e-3 + 2e-2 * fabs(fd)) {
                worst++;
                fprintf(stderr, "  param %zu: fd %.6g analytic %.6g\n", i, fd, an);
            }
        }
        CHECK_EQ_INT(worst, 0);
        CHECK(checked >= 20);
    }
    model_free(m);
}

/* Logits of model_forward_logits equal those the training forward makes. */
static void test_forward_logits(void)
{
    model *m = tiny(4);
    int tok[FN], tgt[FN];
    for (int i = 0; i < FN; i++) { tok[i] = (i * 7) % 16; tgt[i] = (i * 3) % 16; }
    model_forward(m, tok, tgt, FB, FT);
    double ce = m->loss_sum;
    float *lg = model_forward_logits(m, tok, FB, FT), lp[FN], lse[FN];
    grpo_gather_logprobs(lg, tgt, FN, 16, lp, lse);
    double s = 0;
    for (int i = 0; i < FN; i++) s -= lp[i];
    CHECK_NEAR(s, ce, 1e-4 * fabs(ce));
    model_free(m);
}

int main(void)
{
    RUN(test_advantages);
    RUN(test_gdpo);
    RUN(test_loss_token);
    RUN(test_loss_kl_and_sequence);
    RUN(test_loss_fd);
    RUN(test_units);
    RUN(test_forward_logits);
    RUN(test_model_fd);
    TEST_MAIN_END();
}
