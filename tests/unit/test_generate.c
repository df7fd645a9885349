/* test_generate.c — the decoding engine: row-invariant kernels against
 * their references and bit for bit across row counts and threads; batch
 * invariance of ids and log-prob bits; gen_extend and prefix reuse equal
 * to recomputing the whole context; MTP speculative decoding identical to
 * plain greedy decoding (on a model trained here so drafts are often
 * right), and distributed as plain sampling when sampling. */
#include "test.h"
#include "generate.h"
#include "kernels.h"
#include "model.h"
#include "optim.h"
#include "rng.h"
#include "util.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static float *randv(size_t n, rng_t *r, float lo, float hi)
{
    float *x = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * (float)rng_uniform(r);
    return x;
}

static int same_bits(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof(float)) == 0;
}

/* Positions [from, to) of a (T, KV, D) sequence's keys or values as a
 * decoding cache, kv-head major (KV, S, D); the other positions NaN, so
 * that reading one shows. */
static float *head_major(const float *x, int KV, int D, int S, int from, int to)
{
    float *c = xmalloc((size_t)KV * S * D * sizeof(float));
    for (size_t i = 0; i < (size_t)KV * S * D; i++) c[i] = NAN;
    for (int t = from; t < to; t++)
        for (int h = 0; h < KV; h++)
            memcpy(c + ((size_t)h * S + t) * D, x + ((size_t)t * KV + h) * D, D * sizeof(float));
    return c;
}

/* ---- kernels ------------------------------------------------------------------------------ */

static void matmul_rows_invariant(void)
{
    rng_t r;
    rng_seed(&r, 1);
    int shapes[][2] = { { 256, 300 }, { 37, 13 }, { 8, 16 }, { 768, 70 } };
    int nt0 = omp_get_max_threads();
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int C = shapes[s][0], OC = shapes[s][1], N = 13;
        float *x = randv((size_t)N * C, &r, -1, 1), *w = randv((size_t)OC * C, &r, -1, 1);
        float *y = xcalloc((size_t)N * OC, sizeof(float)), *ref = xcalloc((size_t)N * OC, sizeof(float));
        float *one = xcalloc(OC, sizeof(float)), *y2 = xcalloc((size_t)N * OC, sizeof(float));
        matmul_rows(y, x, w, N, C, OC, 0);
        matmul_forward_ref(ref, x, w, N, C, OC, 0);
        double err = 0;
        for (int i = 0; i < N * OC; i++) err = fmax(err, fabs(y[i] - ref[i]));
        CHECK(err < 1e-4 * sqrt(C));
        int ok = 1;
        for (int n = 0; n < N; n++) {          /* each row alone: the same bits */
            matmul_rows(one, x + (size_t)n * C, w, 1, C, OC, 0);
            ok &= same_bits(one, y + (size_t)n * OC, OC);
        }
        CHECK(ok);
        /* rows 0..4 and 5..12 in two calls, another thread count */
        omp_set_num_threads(nt0 > 1 ? 1 : 2);
        matmul_rows(y2, x, w, 5, C, OC, 0);
        matmul_rows(y2 + 5 * OC, x + 5 * C, w, N - 5, C, OC, 0);
        omp_set_num_threads(nt0);
        CHECK(same_bits(y, y2, (size_t)N * OC));
        /* beta = 1 adds */
        memcpy(y2, ref, (size_t)N * OC * sizeof(float));
        matmul_rows(y2, x, w, N, C, OC, 1.0f);
        err = 0;
        for (int i = 0; i < N * OC; i++) err = fmax(err, fabs(y2[i] - 2 * ref[i]));
        CHECK(err < 2e-4 * sqrt(C));
        free(x); free(w); free(y); free(ref); free(one); free(y2);
    }
}

/* bf16 packing rounds to nearest even and keeps NaN; the bf16 matmul
 * equals an fp32 matmul over the rounded weights (up to summation
 * order), bit for bit across row counts and with beta = 1. */
static float bf16_round(float x)
{
    uint32_t p[8];
    bf16_pack_rows(p, (float[16]){ x }, 1, 16);    /* word 0, low half: element 0 */
    union { uint32_t u; float f; } v = { p[0] << 16 };
    return v.f;
}

static void matmul_rows_bf16_matches(void)
{
    CHECK(bf16_round(1.0f) == 1.0f);
    CHECK(bf16_round(1.0f + 0x1p-8f) == 1.0f);               /* tie: to even */
    CHECK(bf16_round(1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);  /* tie: to even, up */
    CHECK(bf16_round(1.0f + 0x1p-8f + 0x1p-12f) == 1.0f + 0x1p-7f);
    CHECK(bf16_round(-2.5f) == -2.5f);
    CHECK(isnan(bf16_round(NAN)));
    rng_t r;
    rng_seed(&r, 2);
    int shapes[][2] = { { 256, 300 }, { 32, 13 }, { 768, 70 } };
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int C = shapes[s][0], OC = shapes[s][1], N = 7;
        float *x = randv((size_t)N * C, &r, -1, 1), *w = randv((size_t)OC * C, &r, -1, 1);
        uint32_t *h = xmalloc((size_t)OC * C / 2 * sizeof(uint32_t));
        bf16_pack_rows(h, w, OC, C);
        float *wr = xmalloc((size_t)OC * C * sizeof(float));
        for (size_t i = 0; i < (size_t)OC * C; i++) wr[i] = bf16_round(w[i]);
        float *y = xcalloc((size_t)N * OC, sizeof(float)), *ref = xcalloc((size_t)N * OC, sizeof(float));
        float *one = xcalloc(OC, sizeof(float));
        matmul_rows_bf16(y, x, h, N, C, OC, 0);
        matmul_forward_ref(ref, x, wr, N, C, OC, 0);
        double err = 0;
        for (int i = 0; i < N * OC; i++) err = fmax(err, fabs(y[i] - ref[i]));
        CHECK(err < 1e-4 * sqrt(C));
        int ok = 1;
        for (int n = 0; n < N; n++) {
            matmul_rows_bf16(one, x + (size_t)n * C, h, 1, C, OC, 0);
            ok &= same_bits(one, y + (size_t)n * OC, OC);
        }
        CHECK(ok);
        memcpy(one, y, OC * sizeof(float));
        matmul_rows_bf16(one, x, h, 1, C, OC, 1.0f);
        err = 0;
        for (int i = 0; i < OC; i++) err = fmax(err, fabs(one[i] - 2 * y[i]));
        CHECK(err < 1e-6 * sqrt(C) * OC);
        free(x); free(w); free(h); free(wr); free(y); free(ref); free(one);
    }
}

/* attention_rows over a cache filled with a whole sequence equals the
 * causal reference, row by row. */
/* Head sizes that take each path of the kernel: 8-wide chunks only, the
 * 64-wide value blocks, and both with a scalar tail; context lengths 1..T
 * cover blocks of 8 keys and the tails. */
static void attention_rows_matches_reference(void)
{
    rng_t r;
    rng_seed(&r, 2);
    int T = 21, H = 4, KV = 2, Ds[] = { 8, 64, 76, 5 };
    for (size_t c = 0; c < sizeof Ds / sizeof *Ds; c++) {
        int D = Ds[c];
        float *q = randv((size_t)T * H * D, &r, -1, 1), *k = randv((size_t)T * KV * D, &r, -1, 1);
        float *v = randv((size_t)T * KV * D, &r, -1, 1);
        float *ref = xmalloc((size_t)T * H * D * sizeof(float)), *att = xmalloc((size_t)H * T * T * sizeof(float));
        attention_forward_ref(ref, att, q, k, v, 1, T, H, KV, D);
        float *out = xmalloc((size_t)T * H * D * sizeof(float)), *one = xmalloc((size_t)H * D * sizeof(float));
        float *scratch = xmalloc(attention_rows_scratch(T, H, KV) * sizeof(float));
        float *kh = head_major(k, KV, D, T, 0, T), *vh = head_major(v, KV, D, T, 0, T);
        float *kc[21], *vc[21];
        int n[21];
        for (int t = 0; t < T; t++) { kc[t] = kh; vc[t] = vh; n[t] = t + 1; }
        attn_rows all = { kc, vc, n, NULL, NULL, NULL, T };
        attention_rows(out, scratch, q, &all, T, H, KV, D, T);
        double err = 0;
        for (int i = 0; i < T * H * D; i++) err = fmax(err, fabs(out[i] - ref[i]));
        CHECK(err < 1e-5);
        int ok = 1;
        for (int t = 0; t < T; t++) {          /* each row alone: the same bits */
            attn_rows a = { kc + t, vc + t, n + t, NULL, NULL, NULL, T };
            attention_rows(one, scratch, q + (size_t)t * H * D, &a, 1, H, KV, D, T);
            ok &= same_bits(one, out + (size_t)t * H * D, (size_t)H * D);
            /* the same keys, [0, np) read from a separate prefix copy: the same bits */
            for (int np = 1; np < n[t]; np += 3) {
                float *kp1 = head_major(k, KV, D, np, 0, np), *vp1 = head_major(v, KV, D, np, 0, np);
                const float *kp = kp1, *vp = vp1;
                /* rows below np unread (NaN) */
                float *kc2 = head_major(k, KV, D, T, np, T), *vc2 = head_major(v, KV, D, T, np, T);
                attn_rows b = { &kc2, &vc2, n + t, &kp, &vp, &np, T };
                attention_rows(one, scratch, q + (size_t)t * H * D, &b, 1, H, KV, D, T);
                ok &= same_bits(one, out + (size_t)t * H * D, (size_t)H * D);
                free(kc2); free(vc2); free(kp1); free(vp1);
            }
        }
        /* all rows at once, those past 5 keys on one 5-row prefix (read in
         * groups of rows): the same bits */
        float *kp5 = head_major(k, KV, D, 5, 0, 5), *vp5 = head_major(v, KV, D, 5, 0, 5);
        const float *kps[21], *vps[21];
        int nps[21];
        for (int t = 0; t < T; t++) { kps[t] = kp5; vps[t] = vp5; nps[t] = n[t] > 5 ? 5 : 0; }
        float *grouped = xmalloc((size_t)T * H * D * sizeof(float));
        attn_rows gr = { kc, vc, n, kps, vps, nps, T };
        attention_rows(grouped, scratch, q, &gr, T, H, KV, D, T);
        ok &= same_bits(grouped, out, (size_t)T * H * D);
        CHECK(ok);
        free(kp5); free(vp5); free(grouped); free(kh); free(vh);
        free(q); free(k); free(v); free(ref); free(att); free(out); free(one); free(scratch);
    }
}

/* The AVX-512 tiles (where the CPU has them) against the 8-lane tiles
 * sized for AVX2's 16 registers, bit for bit: matmul_rows over every row
 * count 1..13 (tiles of 3, 2 and 1 rows, output tails) and beta 1; where
 * the CPU has no AVX-512 both runs take the AVX2 tiles. */
static void matmul_rows_wide_exact(void)
{
    rng_t r;
    rng_seed(&r, 5);
    int shapes[][2] = { { 256, 300 }, { 64, 70 }, { 768, 37 }, { 8, 16 }, { 40, 9 } };
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int C = shapes[s][0], OC = shapes[s][1];
        float *x = randv((size_t)13 * C, &r, -1, 1), *w = randv((size_t)OC * C, &r, -1, 1);
        float *add = randv((size_t)13 * OC, &r, -1, 1);
        float *y = xmalloc((size_t)13 * OC * sizeof(float)), *y8 = xmalloc((size_t)13 * OC * sizeof(float));
        int ok = 1;
        for (int N = 1; N <= 13; N++)
            for (int beta = 0; beta <= 1; beta++) {
                memcpy(y, add, (size_t)N * OC * sizeof(float));
                memcpy(y8, add, (size_t)N * OC * sizeof(float));
                matmul_rows(y, x, w, N, C, OC, (float)beta);
                int was = decode_avx512(0);
                matmul_rows(y8, x, w, N, C, OC, (float)beta);
                decode_avx512(was);
                ok &= same_bits(y, y8, (size_t)N * OC);
            }
        CHECK(ok);
        free(x); free(w); free(add); free(y); free(y8);
    }
}

/* attention_rows with rows on shared prefixes wherever they sit in the
 * batch (two prefix copies interleaved with rows on none, more rows on
 * one prefix than a group holds) gives each row the bits it gets alone
 * with its whole context in its own cache, on the AVX-512 tiles and the
 * 8-lane ones alike, for head sizes of each path and 2 or 4 query heads
 * per kv head. */
static void attention_rows_groups_exact(void)
{
    rng_t r;
    rng_seed(&r, 6);
    enum { T = 40, NP = 7 };
    int cfgs[][3] = { { 4, 2, 64 }, { 4, 2, 16 }, { 4, 2, 48 }, { 8, 2, 128 }, { 4, 2, 8 }, { 2, 2, 32 } };
    for (size_t c = 0; c < sizeof cfgs / sizeof *cfgs; c++) {
        int H = cfgs[c][0], KV = cfgs[c][1], D = cfgs[c][2];
        size_t KD = (size_t)KV * D;
        float *q = randv((size_t)T * H * D, &r, -1, 1);
        float *k = randv((size_t)T * KD, &r, -1, 1), *v = randv((size_t)T * KD, &r, -1, 1);
        /* two copies of the first NP keys, and own caches whose rows below
         * NP are NaN (unread) */
        float *kp[2], *vp[2];
        for (int i = 0; i < 2; i++) {
            kp[i] = head_major(k, KV, D, NP, 0, NP);
            vp[i] = head_major(v, KV, D, NP, 0, NP);
        }
        float *kc2 = head_major(k, KV, D, T, NP, T), *vc2 = head_major(v, KV, D, T, NP, T);
        float *kh = head_major(k, KV, D, T, 0, T), *vh = head_major(v, KV, D, T, 0, T);
        float *kc[T], *vc[T];
        const float *kps[T], *vps[T];
        int n[T], nps[T];
        for (int t = 0; t < T; t++) {
            n[t] = t + 1;
            int on = t >= NP && t % 5 != 3 ? 1 + (t % 3 == 0) : 0;     /* 0: none, 1/2: copy A/B */
            nps[t] = on ? NP : 0;
            kps[t] = on ? kp[on - 1] : NULL;
            vps[t] = on ? vp[on - 1] : NULL;
            kc[t] = on ? kc2 : kh;
            vc[t] = on ? vc2 : vh;
        }
        float *alone = xmalloc((size_t)T * H * D * sizeof(float)), *out = xmalloc((size_t)T * H * D * sizeof(float));
        float *scratch = xmalloc(attention_rows_scratch(T, H, KV) * sizeof(float));
        int ok = 1;
        for (int wide = 1; wide >= 0; wide--) {
            int was = decode_avx512(wide);
            float *kc1[1] = { kh }, *vc1[1] = { vh };
            for (int t = 0; t < T; t++) {
                attn_rows a1 = { kc1, vc1, n + t, NULL, NULL, NULL, T };
                attention_rows(alone + (size_t)t * H * D, scratch, q + (size_t)t * H * D, &a1, 1, H, KV, D, T);
            }
            attn_rows all = { kc, vc, n, kps, vps, nps, T };
            attention_rows(out, scratch, q, &all, T, H, KV, D, T);
            ok &= same_bits(out, alone, (size_t)T * H * D);
            if (wide) {
                float *first = xmalloc((size_t)T * H * D * sizeof(float));
                memcpy(first, alone, (size_t)T * H * D * sizeof(float));
                decode_avx512(0);
                for (int t = 0; t < T; t++) {
                    attn_rows a1 = { kc1, vc1, n + t, NULL, NULL, NULL, T };
                    attention_rows(alone + (size_t)t * H * D, scratch, q + (size_t)t * H * D, &a1, 1, H, KV, D, T);
                }
                ok &= same_bits(first, alone, (size_t)T * H * D);     /* wide = 8-lane */
                free(first);
            }
            decode_avx512(was);
        }
        CHECK(ok);
        double err = 0;
        float *ref = xmalloc((size_t)T * H * D * sizeof(float)), *att = xmalloc((size_t)H * T * T * sizeof(float));
        attention_forward_ref(ref, att, q, k, v, 1, T, H, KV, D);
        for (size_t i = 0; i < (size_t)T * H * D; i++) err = fmax(err, fabs(out[i] - ref[i]));
        CHECK(err < 1e-5);
        for (int i = 0; i < 2; i++) { free(kp[i]); free(vp[i]); }
        free(q); free(k); free(v); free(kc2); free(vc2); free(kh); free(vh); free(alone); free(out); free(scratch); free(ref); free(att);
    }
}

/* ---- models ------------------------------------------------------------------------------- */

static model_config cfg(int mtp)
{
    model_config c = {
        .vocab_size = 16, .hidden_size = 32, .intermediate_size = 64, .n_layers = 2,
        .n_heads = 4, .n_kv_heads = 2, .head_dim = 8, .rms_norm_eps = 1e-6,
        .rope_theta = 10000.0, .max_position_embeddings = 256,
        .n_mtp = mtp, .mtp_loss_weight = 0.5, .bos_token_id = -1, .eos_token_id = -1,
    };
    return c;
}

static model *random_model(int mtp, uint64_t seed)
{
    model_config c = cfg(mtp);
    model *m = model_new(&c);
    model_init_random(m, seed, 0.5f);
    return m;
}

/* The cycle the trained model learns; training data swaps 1 in 8 tokens
 * for a random one, so the model (and the MTP head) are good, not perfect. */
static const int cycle[] = { 3, 7, 1, 9, 4, 12, 5 };
#define NCYC 7

static model *trained_model(void)
{
    model *m = random_model(1, 5);
    optim_config o;
    optim_defaults(&o);
    o.lr = 1e-2f;
    o.warmup = 10;
    o.total_steps = 120;
    o.weight_decay = 0;
    size_t n = m->n_floats;
    float *ea = xcalloc(n, sizeof(float)), *es = xcalloc(n, sizeof(float));
    int B = 4, T = 24, tok[4 * 24], tgt[4 * 24];
    rng_t r;
    rng_seed(&r, 11);
    for (int step = 0; step < 120; step++) {
        for (int b = 0; b < B; b++) {
            int off = (int)(rng_uniform(&r) * NCYC);
            for (int t = 0; t < T; t++) {
                tok[b * T + t] = rng_uniform(&r) < 0.125 ? (int)(rng_uniform(&r) * 16) : cycle[(off + t) % NCYC];
                if (t) tgt[b * T + t - 1] = tok[b * T + t];
            }
            tgt[b * T + T - 1] = -1;
        }
        model_alloc_grads(m);
        model_zero_grad(m);
        model_forward(m, tok, tgt, B, T);
        model_backward_mean(m);
        grad_clip(m, 1.0f);
        adamw_step(m, ea, es, &o, optim_lr(&o, step), step + 1);
    }
    free(ea); free(es);
    model_release_acts(m);
    return m;
}

/* ---- running the engine ------------------------------------------------------------------- */

typedef struct { int ids[64]; float lp[64]; int n, status; } run_out;

/* Generate every prompt (lens[i] tokens from prompts[i]) with `batch`
 * slots, refilling as they finish; prompt i uses stream i. */
static void run(const model *m, int batch, int np, const int *const *prompts, const int *lens,
                const gen_params *p, run_out *out, gen_stats *st)
{
    gen_engine *e = gen_new(m, batch, 128);
    int *job = xmalloc(batch * sizeof(int)), next = 0, live = 0;
    for (int s = 0; s < batch; s++) job[s] = -1;
    while (next < np || live) {
        while (next < np) {
            int s = gen_add(e, prompts[next], lens[next], p, 9, (uint64_t)next);
            if (s < 0) break;
            job[s] = next++;
            live++;
        }
        gen_step(e);
        for (int s = 0; s < batch; s++) {
            if (job[s] < 0 || gen_status(e, s) == GEN_RUNNING) continue;
            run_out *o = &out[job[s]];
            const int *ids = gen_output(e, s, &o->n);
            memcpy(o->ids, ids, o->n * sizeof(int));
            memcpy(o->lp, gen_logprobs(e, s), o->n * sizeof(float));
            o->status = gen_status(e, s);
            gen_remove(e, s);
            job[s] = -1;
            live--;
        }
    }
    if (st) *st = gen_get_stats(e);
    free(job);
    gen_free(e);
}

static int same_out(const run_out *a, const run_out *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i].n != b[i].n || a[i].status != b[i].status ||
            memcmp(a[i].ids, b[i].ids, a[i].n * sizeof(int)) || !same_bits(a[i].lp, b[i].lp, a[i].n))
            return 0;
    return 1;
}

static const int pa[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 }, pb[] = { 3 }, pc[] = { 4, 4, 15, 0, 2 },
                 pd[] = { 3, 7, 1, 9, 4, 12, 5, 3, 7 }, pe[] = { 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4 };
static const int *const prompts[] = { pa, pb, pc, pd, pe };
static const int lens[] = { 11, 1, 5, 9, 14 };

static void batch_invariance(void)
{
    model *m = random_model(1, 3);
    gen_params p = { .temperature = 1.0f, .top_p = 1, .max_tokens = 20, .eos = 15 };
    run_out a[5], b[5], c[5];
    run(m, 1, 5, prompts, lens, &p, a, NULL);
    run(m, 4, 5, prompts, lens, &p, b, NULL);
    CHECK(same_out(a, b, 5));
    int nt = omp_get_max_threads();
    omp_set_num_threads(nt > 1 ? 1 : 2);
    run(m, 3, 5, prompts, lens, &p, c, NULL);
    omp_set_num_threads(nt);
    CHECK(same_out(a, c, 5));
    int stopped = 0;
    for (int i = 0; i < 5; i++) stopped += a[i].status == GEN_STOP;
    CHECK(a[1].n > 1);
    (void)stopped;
    model_free(m);
}

/* Turn 1 from a prompt, then gen_extend with new ids: the same ids and
 * log-prob bits as gen_add of the whole context in a fresh engine. */
static void extend_equals_recompute(void)
{
    model *m = random_model(0, 4);
    gen_params p = { .temperature = 0.8f, .top_k = 8, .top_p = 0.95f, .max_tokens = 9, .eos = -1 };
    gen_engine *e = gen_new(m, 2, 128);
    int s = gen_add(e, pa, 11, &p, 5, 1);
    while (gen_step(e)) {}
    CHECK_EQ_INT(gen_status(e, s), GEN_LENGTH);
    int more[] = { 2, 14, 6 }, nctx;
    CHECK_EQ_INT(gen_extend(e, s, more, 3, &p, 5, 2), 0);
    CHECK_EQ_INT(gen_extend(e, s, more, 3, &p, 5, 2), -1);      /* running */
    const int *ctx = gen_context(e, s, &nctx);
    CHECK_EQ_INT(nctx, 11 + 9 + 3);
    int *whole = xmalloc(nctx * sizeof(int));
    memcpy(whole, ctx, nctx * sizeof(int));
    while (gen_step(e)) {}
    int n1, n2;
    const int *o1 = gen_output(e, s, &n1);
    gen_stats st = gen_get_stats(e);
    CHECK(st.reused >= 19);

    gen_engine *f = gen_new(m, 1, 128);
    gen_set_prefix_reuse(f, 0);
    int t = gen_add(f, whole, nctx, &p, 5, 2);
    while (gen_step(f)) {}
    const int *o2 = gen_output(f, t, &n2);
    CHECK_EQ_INT(n1, 9);
    CHECK(n1 == n2 && !memcmp(o1, o2, n1 * sizeof(int)));
    CHECK(same_bits(gen_logprobs(e, s), gen_logprobs(f, t), n1));
    CHECK_EQ_INT(gen_get_stats(f).reused, 0);
    /* extend a sequence that stopped on a token: a stop id of its own */
    gen_params q = p;
    int stop = o1[3];
    q.eos = stop;
    CHECK_EQ_INT(gen_extend(e, s, NULL, 0, &q, 5, 3), 0);
    while (gen_step(e)) {}
    CHECK(gen_status(e, s) == GEN_STOP || gen_status(e, s) == GEN_LENGTH);
    CHECK_EQ_INT(gen_extend(e, 1, more, 3, &p, 5, 2), -1);         /* unused slot */
    free(whole);
    gen_free(e);
    gen_free(f);
    model_free(m);
}

/* A second prompt sharing a prefix with a live one, and a third reusing a
 * removed slot's cache: outputs equal to an engine without reuse. */
static void prefix_reuse_exact(void)
{
    for (int mtp = 0; mtp <= 1; mtp++) {
        model *m = random_model(mtp, 6);
        gen_params p = { .temperature = 1.0f, .top_p = 1, .max_tokens = 6, .eos = -1, .mtp_k = mtp * 2 };
        int a[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 }, b[] = { 1, 2, 3, 4, 5, 6, 7, 8, 0, 0 };
        int c[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 };
        int *ps[] = { a, b, c }, ls[] = { 12, 10, 13 };
        run_out want[3], got[3];
        for (int reuse = 0; reuse <= 1; reuse++) {
            run_out *o = reuse ? got : want;
            gen_engine *e = gen_new(m, 2, 64);
            gen_set_prefix_reuse(e, reuse);
            int s0 = gen_add(e, a, 12, &p, 1, 0);
            gen_step(e);
            int s1 = gen_add(e, b, 10, &p, 1, 1);
            while (gen_step(e)) {}
            int sl[] = { s0, s1 };
            for (int i = 0; i < 2; i++) {
                const int *ids = gen_output(e, sl[i], &o[i].n);
                memcpy(o[i].ids, ids, o[i].n * sizeof(int));
                memcpy(o[i].lp, gen_logprobs(e, sl[i]), o[i].n * sizeof(float));
                o[i].status = gen_status(e, sl[i]);
            }
            gen_remove(e, s0);
            int s2 = gen_add(e, c, 13, &p, 1, 2);
            while (gen_step(e)) {}
            const int *ids = gen_output(e, s2, &o[2].n);
            memcpy(o[2].ids, ids, o[2].n * sizeof(int));
            memcpy(o[2].lp, gen_logprobs(e, s2), o[2].n * sizeof(float));
            o[2].status = gen_status(e, s2);
            gen_stats st = gen_get_stats(e);
            if (reuse) CHECK(st.reused >= 8 + 12 - 2 * mtp);
            else CHECK_EQ_INT(st.reused, 0);
            gen_free(e);
        }
        CHECK(same_out(want, got, 3));
        (void)ps; (void)ls;
        model_free(m);
    }
}

/* Prompts sharing a long prefix added in the same step: the later ones
 * wait one step and copy the first one's rows; outputs unchanged. */
static void prefix_reuse_same_step(void)
{
    for (int mtp = 0; mtp <= 1; mtp++) {
        model *m = random_model(mtp, 7);
        gen_params p = { .temperature = 1.0f, .top_p = 1, .max_tokens = 5, .eos = -1, .mtp_k = mtp };
        int pr[3][48], ls[] = { 48, 44, 40 };
        const int *ps[3];
        for (int i = 0; i < 3; i++) {
            for (int t = 0; t < 48; t++) pr[i][t] = t < 36 ? (t * 7) % 16 : (t + i * 3) % 16;
            ps[i] = pr[i];
        }
        run_out want[3], got[3];
        gen_stats st;
        run(m, 1, 3, ps, ls, &p, want, NULL);          /* one at a time */
        run(m, 3, 3, ps, ls, &p, got, &st);            /* all in one step */
        CHECK(same_out(want, got, 3));
        CHECK(st.reused >= 2 * (36 - 1 - mtp));
        model_free(m);
    }
}

/* ---- MTP ---------------------------------------------------------------------------------- */

static void mtp_greedy_identical(void)
{
    model *trained = trained_model(), *rnd = random_model(1, 8);
    model *ms[] = { trained, rnd };
    for (int w = 0; w < 2; w++) {
        gen_params p = { .temperature = 0, .top_p = 1, .max_tokens = 40, .eos = -1 };
        run_out base[5], spec[5];
        run(ms[w], 2, 5, prompts, lens, &p, base, NULL);
        for (int k = 1; k <= 4; k += 1 + (k == 2)) {
            gen_params q = p;
            q.mtp_k = k;
            gen_stats st;
            for (int batch = 1; batch <= 4; batch += 3) {
                run(ms[w], batch, 5, prompts, lens, &q, spec, &st);
                CHECK(same_out(base, spec, 5));
            }
            CHECK(st.drafted > 0 && st.accepted <= st.drafted);
            if (w == 0) {   /* the trained model's drafts are mostly right */
                double acc = (double)st.accepted / st.drafted;
                CHECK(acc > 0.5);
                CHECK(st.steps < 5 * 40 * 0.8);
                if (k == 1) printf("# trained, k=1: acceptance %.2f\n", acc);
            }
        }
        /* a stop id inside an accepted block ends there */
        gen_params s = p;
        s.eos = base[3].ids[5];
        s.mtp_k = 3;
        run_out b2[5], s2[5];
        run(ms[w], 2, 5, prompts, lens, &s, s2, NULL);
        s.mtp_k = 0;
        run(ms[w], 2, 5, prompts, lens, &s, b2, NULL);
        CHECK(same_out(b2, s2, 5));
        CHECK_EQ_INT(s2[3].status, GEN_STOP);
    }
    model_free(trained);
    model_free(rnd);
}

/* Sampling with drafts: the token after the first (where drafts are
 * verified) has the same distribution as without drafts. */
static void mtp_sampling_distribution(void)
{
    model_config c = cfg(1);
    model *m = model_new(&c);
    model_init_random(m, 12, 0.25f);
    gen_params p = { .temperature = 1.0f, .top_p = 1, .max_tokens = 3, .eos = -1 };
    enum { RUNS = 3200 };
    double f0[32] = { 0 }, f1[32] = { 0 };
    int prompt[] = { 5, 9, 2 };
    for (int k = 0; k <= 2; k += 2) {
        gen_engine *e = gen_new(m, 16, 16);
        p.mtp_k = k;
        double *f = k ? f1 : f0;
        for (int i = 0; i < RUNS; i += 16) {
            int sl[16];
            for (int j = 0; j < 16; j++) sl[j] = gen_add(e, prompt, 3, &p, 77, (uint64_t)(i + j));
            while (gen_step(e)) {}
            for (int j = 0; j < 16; j++) {
                int n;
                const int *o = gen_output(e, sl[j], &n);
                if (n == 3) { f[o[1]] += 1.0 / RUNS; f[16 + o[2]] += 1.0 / RUNS; }
                gen_remove(e, sl[j]);
            }
        }
        if (k) printf("# drafted %ld accepted %ld\n", gen_get_stats(e).drafted, gen_get_stats(e).accepted);
        if (k) CHECK(gen_get_stats(e).drafted > 0 && gen_get_stats(e).accepted < gen_get_stats(e).drafted);
        gen_free(e);
    }
    double tv1 = 0, tv2 = 0;
    for (int i = 0; i < 16; i++) { tv1 += fabs(f0[i] - f1[i]) / 2; tv2 += fabs(f0[16 + i] - f1[16 + i]) / 2; }
    printf("# tv %.4f %.4f\n", tv1, tv2);
    CHECK(tv1 < 0.05 && tv2 < 0.05);
    model_free(m);
}

/* ---- shared prefixes ------------------------------------------------------------------------ */

static void take(const gen_engine *e, int slot, run_out *o)
{
    const int *ids = gen_output(e, slot, &o->n);
    memcpy(o->ids, ids, o->n * sizeof(int));
    memcpy(o->lp, gen_logprobs(e, slot), o->n * sizeof(float));
    o->status = gen_status(e, slot);
}

/* Prompts that start with one of two 40-token system prompts (differing
 * at token 5), refilled into 3 slots as they finish (continuous
 * batching), with gen_add_shared: ids and log-prob bits equal to gen_add
 * one at a time without any reuse, greedy and sampled; each system
 * prompt computed once while a slot holds it, and again after all let go. */
static void shared_prefix_exact(void)
{
    model *m = random_model(0, 8);
    enum { NP = 9, SYS = 40 };
    int prompt[NP][52], len[NP];
    for (int i = 0; i < NP; i++) {
        for (int t = 0; t < SYS; t++) prompt[i][t] = (t * 7 + 3) % 16;
        if (i % 3 == 1) prompt[i][5] = 0;                     /* system prompt B */
        len[i] = SYS + 1 + i % 4;
        for (int t = SYS; t < len[i]; t++) prompt[i][t] = (i * 5 + t) % 16;
    }
    for (int temp = 0; temp <= 1; temp++) {
        gen_params p = { .temperature = (float)temp, .top_p = 1, .max_tokens = 12, .eos = -1 };
        run_out want[NP], got[NP];
        for (int i = 0; i < NP; i++) {
            gen_engine *f = gen_new(m, 1, 128);
            gen_set_prefix_reuse(f, 0);
            int t = gen_add(f, prompt[i], len[i], &p, 3, (uint64_t)i);
            while (gen_step(f)) {}
            take(f, t, &want[i]);
            gen_free(f);
        }
        gen_engine *e = gen_new(m, 3, 128);
        int job[3] = { -1, -1, -1 }, next = 0, live = 0;
        long rows_at[NP];
        while (next < NP || live) {
            while (next < NP) {
                int sl = gen_add_shared(e, prompt[next], len[next], SYS, &p, 3, (uint64_t)next);
                if (sl < 0) break;
                rows_at[next] = gen_get_stats(e).rows;
                job[sl] = next++;
                live++;
            }
            gen_step(e);
            for (int sl = 0; sl < 3; sl++) {
                if (job[sl] < 0 || gen_status(e, sl) == GEN_RUNNING) continue;
                take(e, sl, &got[job[sl]]);
                gen_remove(e, sl);
                job[sl] = -1;
                live--;
            }
        }
        CHECK(same_out(want, got, NP));
        /* rows computed: every prompt's own tokens and outputs, and the
         * 40 system rows of A and of B once each (all slots go on one of
         * the two, so neither is let go before the end) */
        long own = 0;
        for (int i = 0; i < NP; i++) own += len[i] - SYS + want[i].n - 1;
        CHECK_EQ_INT((int)gen_get_stats(e).rows, (int)(own + 2 * SYS));
        CHECK(rows_at[0] == SYS && rows_at[1] == 2 * SYS);
        CHECK(gen_get_stats(e).reused >= (NP - 2) * SYS);
        gen_free(e);
    }
    /* after every slot lets go of a prefix it is computed again; a plain
     * gen_add that shares only part of it (copied rows) or all of it and
     * more (the prefix shared, own rows copied) gives gen_add's bits */
    gen_params p = { .temperature = 1.0f, .top_p = 1, .max_tokens = 8, .eos = -1 };
    gen_engine *e = gen_new(m, 2, 128);
    int s0 = gen_add_shared(e, prompt[0], len[0], SYS, &p, 4, 0);
    int s1 = gen_add_shared(e, prompt[1], len[1], SYS, &p, 4, 1);    /* B */
    while (gen_step(e)) {}
    gen_remove(e, s0);
    int part[30];
    memcpy(part, prompt[0], 20 * sizeof(int));
    for (int t = 20; t < 30; t++) part[t] = t % 16;
    int whole[64], nw;
    const int *ctx = gen_context(e, s0, &nw);
    memcpy(whole, ctx, nw * sizeof(int));
    whole[nw] = 2; whole[nw + 1] = 9;
    nw += 2;
    int s2 = gen_add(e, part, 30, &p, 4, 2);                           /* into s0: 20 rows from A */
    CHECK(s2 == s0);
    while (gen_step(e)) {}
    run_out a, b, c, d;
    take(e, s2, &a);
    gen_remove(e, s2);
    gen_remove(e, s1);                                                 /* B let go, A already */
    int s3 = gen_add_shared(e, prompt[2], len[2], SYS, &p, 4, 3);      /* A computed again */
    long r0 = gen_get_stats(e).rows;
    while (gen_step(e)) {}
    take(e, s3, &c);
    int s4 = gen_add(e, whole, nw, &p, 4, 4);                          /* none holds s0's rows now */
    while (gen_step(e)) {}
    take(e, s4, &d);
    CHECK(r0 > 0);
    gen_free(e);
    int *ps[] = { part, prompt[2], whole }, ls[] = { 30, len[2], nw }, st[] = { 2, 3, 4 };
    run_out *gs[] = { &a, &c, &d };
    for (int i = 0; i < 3; i++) {
        gen_engine *f = gen_new(m, 1, 128);
        gen_set_prefix_reuse(f, 0);
        int t = gen_add(f, ps[i], ls[i], &p, 4, (uint64_t)st[i]);
        while (gen_step(f)) {}
        take(f, t, &b);
        CHECK(same_out(gs[i], &b, 1));
        gen_free(f);
    }
    model_free(m);
}

int main(void)
{
    RUN(matmul_rows_invariant);
    RUN(matmul_rows_bf16_matches);
    RUN(attention_rows_matches_reference);
    RUN(matmul_rows_wide_exact);
    RUN(attention_rows_groups_exact);
    RUN(batch_invariance);
    RUN(extend_equals_recompute);
    RUN(prefix_reuse_exact);
    RUN(prefix_reuse_same_step);
    RUN(shared_prefix_exact);
    RUN(mtp_greedy_identical);
    RUN(mtp_sampling_distribution);
    TEST_MAIN_END();
}
