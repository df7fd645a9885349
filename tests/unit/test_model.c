/* test_model.c — the decoder: parameter table, finite-difference gradient
 * checks of the whole model (untied, tied, with MTP, with masked
 * targets), each kernel against a simple reference, and agreement with
 * PyTorch numbers stored in tests/fixtures/model/. */
#include "test.h"
#include "model.h"
#include "kernels.h"
#include "cpu/vecmath.h"
#include "rng.h"
#include "util.h"
#include "ckpt.h"
#include "safetensors.h"

#include <cblas.h>
#include <jansson.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static model_config tiny_config(int tie, int mtp)
{
    model_config c = {
        .vocab_size = 11, .hidden_size = 8, .intermediate_size = 12, .n_layers = 2,
        .n_heads = 4, .n_kv_heads = 2, .head_dim = 4, .rms_norm_eps = 1e-6f,
        .rope_theta = 10000.0, .tie_word_embeddings = tie, .max_position_embeddings = 64,
        .n_mtp = mtp, .mtp_loss_weight = 0.5f, .bos_token_id = -1, .eos_token_id = -1,
    };
    return c;
}

/* Weights large enough that every nonlinearity matters; norms != 1. */
static model *random_model(const model_config *c, uint64_t seed)
{
    model *m = model_new(c);
    model_init_random(m, seed, 0.4f);
    rng_t r;
    rng_seed(&r, seed + 99);
    for (int i = 0; i < m->n_tensors; i++) {
        const model_tensor *t = &m->tensors[i];
        if (t->ndim == 1)
            for (size_t k = 0; k < t->numel; k++)
                m->params[t->offset + k] = 1.0f + 0.3f * (float)rng_normal(&r);
    }
    return m;
}

/* Central differences on a sample of every tensor's elements; the error
 * is measured relative to the tensor's largest analytic gradient. */
static double grad_check(model *m, const int *tok, const int *tgt, int B, int T, int per_tensor)
{
    model_alloc_grads(m);
    model_zero_grad(m);
    model_forward(m, tok, tgt, B, T);
    model_backward_mean(m);
    double worst = 0;
    rng_t r;
    rng_seed(&r, 7);
    for (int i = 0; i < m->n_tensors; i++) {
        const model_tensor *t = &m->tensors[i];
        float *p = m->params + t->offset, *g = m->grads + t->offset;
        double gmax = 0, emax = 0;
        for (size_t k = 0; k < t->numel; k++) gmax = fmax(gmax, fabs(g[k]));
        for (int s = 0; s < per_tensor; s++) {
            size_t k = rng_below(&r, t->numel);
            float old = p[k], h = 3e-3f;   /* truncation and fp32 noise balance here */
            p[k] = old + h;
            double lp = model_forward(m, tok, tgt, B, T);
            p[k] = old - h;
            double lm = model_forward(m, tok, tgt, B, T);
            p[k] = old;
            double fd = (lp - lm) / ((double)(old + h) - (double)(old - h));
            emax = fmax(emax, fabs(fd - g[k]));
        }
        double rel = emax / fmax(gmax, 1e-6);
        if (rel > worst) worst = rel;
        if (rel > 1e-2) fprintf(stderr, "  %s: rel err %.3g (gmax %.3g)\n", t->name, rel, gmax);
    }
    return worst;
}

static void batch(int *tok, int *tgt, int B, int T, int V, int masked)
{
    rng_t r;
    rng_seed(&r, 3);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t <= T; t++) {
            int id = (int)rng_below(&r, V);
            if (t < T) tok[b * T + t] = id;
            if (t > 0) tgt[b * T + t - 1] = id;
        }
        if (masked) { tgt[b * T] = -1; tgt[b * T + T - 1] = -1; }
    }
}

static void gradcheck_case(int tie, int mtp, int masked)
{
    model_config c = tiny_config(tie, mtp);
    model *m = random_model(&c, 5 + tie + 2 * mtp);
    int B = 2, T = 6, tok[12], tgt[12];
    batch(tok, tgt, B, T, c.vocab_size, masked);
    double e = grad_check(m, tok, tgt, B, T, 6);
    fprintf(stderr, "  gradcheck tie=%d mtp=%d masked=%d: max rel err %.3g\n", tie, mtp, masked, e);
    CHECK(e < 1e-2);
    model_free(m);
}

static void gradcheck_untied(void) { gradcheck_case(0, 0, 0); }
static void gradcheck_tied_masked(void) { gradcheck_case(1, 0, 1); }
static void gradcheck_mtp(void) { gradcheck_case(0, 1, 1); }

/* ----- agreement with PyTorch (float64) on the fixture model */

static char *fixture(const char *name)
{
    const char *top = getenv("HAT_TOP");
    return xasprintf("%s/tests/fixtures/model/%s", top ? top : ".", name);
}

static const int fx_tokens[16] = { 5, 17, 33, 2, 60, 9, 41, 12, 7, 7, 19, 63, 0, 28, 3, 50 };

static void matches_pytorch(void)
{
    char *dir = fixture("");
    ckpt c;
    CHECK_EQ_INT(ckpt_load(&c, dir), 0);
    if (!c.m) { free(dir); return; }
    model *m = c.m;
    int tgt[16];
    for (int i = 0; i < 16; i++) tgt[i] = (i % 8 == 7) ? -1 : fx_tokens[i + 1];
    model_alloc_grads(m);
    model_zero_grad(m);
    float loss = model_forward(m, fx_tokens, tgt, 2, 8);
    CHECK_NEAR(loss, 4.504704762908414, 2e-6);
    model_backward_mean(m);     /* before model_forward_logits writes the activations again */

    char *p = fixture("logits.safetensors");
    st_file *lf = st_open(p);
    CHECK(lf != NULL);
    if (lf) {
        const st_tensor *t = st_find(lf, "logits");
        CHECK(t && t->numel == 16 * 64);
        float *ref = xmalloc(t->numel * sizeof(float));
        st_read_f32(lf, t, ref);
        /* model_forward's head covers the rows with a target only */
        double e = test_rel_err(model_forward_logits(m, fx_tokens, 2, 8), ref, t->numel);
        fprintf(stderr, "  logits max rel err vs torch float64: %.3g\n", e);
        CHECK(e < 1e-5);
        free(ref);
        st_close(lf);
    }
    free(p);

    p = fixture("grads.safetensors");
    st_file *gf = st_open(p);
    CHECK(gf != NULL);
    if (gf) {
        float *ref = xcalloc(m->n_floats, sizeof(float));
        CHECK_EQ_INT(model_read_tensors(m, ref, gf, ""), 0);
        double worst = 0;
        for (int i = 0; i < m->n_tensors; i++) {
            const model_tensor *t = &m->tensors[i];
            double e = test_rel_err(m->grads + t->offset, ref + t->offset, t->numel);
            if (e > 1e-4) fprintf(stderr, "  %s: grad rel err %.3g\n", t->name, e);
            worst = fmax(worst, e);
        }
        fprintf(stderr, "  grads max rel err vs torch float64: %.3g\n", worst);
        CHECK(worst < 1e-4);
        free(ref);
        st_close(gf);
    }
    free(p);
    ckpt_free(&c);
    free(dir);
}

/* The table carries HF names in HF order and the parameter count. */
static void table_names_and_shapes(void)
{
    model_config c = tiny_config(0, 0);
    model *m = model_new(&c);
    CHECK_STR(m->tensors[0].name, "model.embed_tokens.weight");
    CHECK_STR(m->tensors[2].name, "model.layers.0.self_attn.q_proj.weight");
    const model_tensor *t = model_find(m, "model.layers.1.self_attn.k_proj.weight");
    CHECK(t && t->shape[0] == 8 && t->shape[1] == 8);
    t = model_find(m, "model.layers.0.mlp.down_proj.weight");
    CHECK(t && t->shape[0] == 8 && t->shape[1] == 12 && t->decay);
    t = model_find(m, "model.layers.0.self_attn.q_norm.weight");
    CHECK(t && t->ndim == 1 && t->shape[0] == 4 && !t->decay);
    CHECK(model_find(m, "lm_head.weight") != NULL);
    for (int i = 0; i < m->n_tensors; i++) CHECK(m->tensors[i].offset % 16 == 0);
    /* 2*V*C + L*(2C + 2D + 4*8*C... ) computed directly: */
    long per = 8 + 16 * 8 + 8 * 8 * 2 + 8 * 16 + 4 + 4 + 8 + 3 * 12 * 8;
    CHECK_EQ_INT((long)m->n_params, 2 * 11 * 8 + 2 * per + 8);
    model_free(m);
    c.tie_word_embeddings = 1;
    c.n_mtp = 1;
    m = model_new(&c);
    CHECK(model_find(m, "lm_head.weight") == NULL);
    CHECK(m->w.lm_head == m->w.wte);
    CHECK(model_find(m, "mtp.fc.weight") && model_find(m, "mtp.fc.weight")->shape[1] == 16);
    CHECK(model_find(m, "mtp.layers.0.mlp.up_proj.weight") != NULL);
    model_free(m);
}

/* Each batch row is independent, and padding after a sequence does not
 * change the loss of its real tokens (causal attention). */
static void rows_independent_and_padding_inert(void)
{
    model_config c = tiny_config(0, 0);
    model *m = random_model(&c, 11);
    int tok[12], tgt[12];
    batch(tok, tgt, 2, 6, c.vocab_size, 0);
    model_forward(m, tok, tgt, 2, 6);
    float l0 = m->losses[2], l1 = m->losses[8];
    int tok1[6], tgt1[6];
    memcpy(tok1, tok + 6, sizeof tok1);
    memcpy(tgt1, tgt + 6, sizeof tgt1);
    model_forward(m, tok1, tgt1, 1, 6);
    CHECK_NEAR(m->losses[2], l1, 1e-5);
    tok[4] = 0; tok[5] = 0; tgt[3] = tgt[4] = tgt[5] = -1;    /* pad row 0 after t=3 */
    model_forward(m, tok, tgt, 2, 6);
    CHECK_NEAR(m->losses[2], l0, 1e-5);
    CHECK_EQ_INT(m->n_targets, 9);
    model_free(m);
}

/* Known answers for single kernels. */
static void kernels_known_answers(void)
{
    float x[4] = { 1, 2, 3, 4 }, w[4] = { 1, 1, 2, 0.5f }, y[4], r;
    rmsnorm_forward(y, &r, x, w, 1, 4, 0);
    double rs = 1 / sqrt((1 + 4 + 9 + 16) / 4.0);
    CHECK_NEAR(r, rs, 1e-6);
    CHECK_NEAR(y[2], 2 * 3 * rs, 1e-6);
    /* RoPE at position 0 is the identity; at p it rotates pair (j, j+D/2). */
    float cs[2 * 2], sn[2 * 2], v[4] = { 1, 0, 0, 0 };
    rope_table(cs, sn, 2, 4, 10000.0);
    int pos = 1;
    rope_forward(v, &pos, cs, sn, 1, 1, 4);
    CHECK_NEAR(v[0], cos(1.0), 1e-6);
    CHECK_NEAR(v[2], sin(1.0), 1e-6);
    rope_backward(v, &pos, cs, sn, 1, 1, 4);
    CHECK_NEAR(v[0], 1, 1e-6);
    CHECK_NEAR(v[2], 0, 1e-6);
    /* cross-entropy of uniform logits is log V */
    float z[8] = { 0 }, l;
    int t = 3;
    crossentropy_forward_backward(&l, z, z, &t, 1, 8, 1.0f);
    CHECK_NEAR(l, log(8.0), 1e-6);
    CHECK_NEAR(z[3], 1.0 / 8 - 1, 1e-6);
    CHECK_NEAR(z[0], 1.0 / 8, 1e-6);
}

/* ----- the kernel ladder: every fast kernel against its reference */

static float *randv(size_t n, rng_t *r, float lo, float hi)
{
    float *p = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * (float)rng_uniform(r);
    return p;
}

static float *copyv(const float *a, size_t n)
{
    float *p = xmalloc(n * sizeof(float));
    memcpy(p, a, n * sizeof(float));
    return p;
}

/* Sizes that are not multiples of the SIMD width, sgemm panels or thread
 * splits; the large ones take the threaded paths (rows, then columns). */
static void matmul_matches_reference(void)
{
    static const int sz[][3] = { { 5, 7, 3 }, { 70, 64, 80 }, { 3, 300, 400 }, { 37, 29, 45 } };
    rng_t r;
    rng_seed(&r, 21);
    for (int c = 0; c < 4; c++) {
        int N = sz[c][0], C = sz[c][1], OC = sz[c][2];
        float *x = randv((size_t)N * C, &r, -1, 1), *w = randv((size_t)OC * C, &r, -1, 1);
        float *y0 = randv((size_t)N * OC, &r, -1, 1), *y1 = copyv(y0, (size_t)N * OC);
        matmul_forward(y0, x, w, N, C, OC, 1.0f);
        matmul_forward_ref(y1, x, w, N, C, OC, 1.0f);
        CHECK(test_rel_err(y0, y1, (size_t)N * OC) < 1e-5);
        float *dx0 = randv((size_t)N * C, &r, -1, 1), *dx1 = copyv(dx0, (size_t)N * C);
        float *dw0 = randv((size_t)OC * C, &r, -1, 1), *dw1 = copyv(dw0, (size_t)OC * C);
        matmul_backward(dx0, dw0, y0, x, w, N, C, OC);
        matmul_backward_ref(dx1, dw1, y0, x, w, N, C, OC);
        CHECK(test_rel_err(dx0, dx1, (size_t)N * C) < 1e-5);
        CHECK(test_rel_err(dw0, dw1, (size_t)OC * C) < 1e-5);
        free(x); free(w); free(y0); free(y1); free(dx0); free(dx1); free(dw0); free(dw1);
    }
}

/* matmul_backward_set is "clear d(input), then matmul_backward", to the
 * bit: whatever d(input) held before (here NaN) must not leak through,
 * on the row split, the column split and the single-threaded path.
 * vzero and vcopy write what memset and memcpy would, odd lengths too. */
static void matmul_set_and_fills_exact(void)
{
    static const int sz[][3] = { { 70, 64, 80 }, { 3, 300, 400 }, { 5, 7, 3 }, { 4097, 16, 8 } };
    rng_t r;
    rng_seed(&r, 23);
    for (int c = 0; c < 4; c++) {
        int N = sz[c][0], C = sz[c][1], OC = sz[c][2];
        size_t nx = (size_t)N * C, nw = (size_t)OC * C;
        float *x = randv(nx, &r, -1, 1), *w = randv(nw, &r, -1, 1), *dy = randv((size_t)N * OC, &r, -1, 1);
        float *dx0 = xmalloc(nx * sizeof(float)), *dx1 = xmalloc(nx * sizeof(float));
        float *dw0 = randv(nw, &r, -1, 1), *dw1 = copyv(dw0, nw);
        for (size_t i = 0; i < nx; i++) dx0[i] = NAN;
        memset(dx1, 0, nx * sizeof(float));
        matmul_backward_set(dx0, dw0, dy, x, w, N, C, OC);
        matmul_backward(dx1, dw1, dy, x, w, N, C, OC);
        CHECK(!memcmp(dx0, dx1, nx * sizeof(float)));
        CHECK(!memcmp(dw0, dw1, nw * sizeof(float)));
        vzero(dx0, nx);
        memset(dx1, 0, nx * sizeof(float));
        CHECK(!memcmp(dx0, dx1, nx * sizeof(float)));
        vcopy(dx0, x, nx);
        CHECK(!memcmp(dx0, x, nx * sizeof(float)));
        free(x); free(w); free(dy); free(dx0); free(dx1); free(dw0); free(dw1);
    }
}

/* oneDNN's product is cblas_sgemm's: every transpose pair, beta 0 and
 * 1, alpha 1 and another (attention's scale), dense and strided operands (a block of a larger matrix,
 * as matmul.c's thread split passes them), to ~1e-6 relative; and two
 * threads running one plan at once on their halves write what one
 * thread writes for each half alone (the scratchpad is per thread).
 * HAT_GEMM=onednn is set in main, so this runs on any CPU. */
static void onednn_matches_cblas(void)
{
    CHECK(onednn_active());
    if (!onednn_active()) return;
    rng_t r;
    rng_seed(&r, 24);
    static const int sz[][3] = { { 33, 17, 70 }, { 64, 48, 96 }, { 5, 130, 3 } };
    for (int c = 0; c < 3; c++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int beta = 0; beta < 2; beta++) {
                    int M = sz[c][0], N = sz[c][1], K = sz[c][2], pad = 3 * (c & 1);
                    float alpha = c == 2 ? 0.125f : 1.0f;
                    int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
                    float *A = randv((size_t)(ta ? K : M) * lda, &r, -1, 1);
                    float *B = randv((size_t)(tb ? N : K) * ldb, &r, -1, 1);
                    float *C0 = randv((size_t)M * ldc, &r, -1, 1), *C1 = copyv(C0, (size_t)M * ldc);
                    CHECK(!onednn_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, (float)beta, C0, ldc));
                    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                                M, N, K, alpha, A, lda, B, ldb, (float)beta, C1, ldc);
                    CHECK(test_rel_err(C0, C1, (size_t)M * ldc) < 1e-5);
                    free(A); free(B); free(C0); free(C1);
                }
    int M = 256, N = 192, K = 160;
    float *A = randv((size_t)2 * M * K, &r, -1, 1), *B = randv((size_t)N * K, &r, -1, 1);
    float *C0 = xcalloc((size_t)2 * M * N, sizeof(float)), *C1 = xcalloc((size_t)2 * M * N, sizeof(float));
    for (int h = 0; h < 2; h++)
        CHECK(!onednn_gemm(0, 1, M, N, K, 1.0f, A + (size_t)h * M * K, K, B, K, 0, C0 + (size_t)h * M * N, N));
    int bad = 0;
    #pragma omp parallel num_threads(2) reduction(|:bad)
    bad |= onednn_gemm(0, 1, M, N, K, 1.0f, A + (size_t)omp_get_thread_num() * M * K, K, B, K, 0,
                       C1 + (size_t)omp_get_thread_num() * M * N, N) != 0;
    CHECK(!bad);
    CHECK(!memcmp(C0, C1, (size_t)2 * M * N * sizeof(float)));
    free(A); free(B); free(C0); free(C1);
}

/* T = 70: one full query tile and a ragged one; GQA with 2 heads per kv. */
static void attention_matches_reference(void)
{
    int B = 2, T = 70, H = 4, KV = 2, D = 8;
    size_t nq = (size_t)B * T * H * D, nk = (size_t)B * T * KV * D;
    rng_t r;
    rng_seed(&r, 22);
    float *q = randv(nq, &r, -2, 2), *k = randv(nk, &r, -2, 2), *v = randv(nk, &r, -1, 1);
    float *go = randv(nq, &r, -1, 1);
    float *o0 = xcalloc(nq, sizeof(float)), *o1 = xcalloc(nq, sizeof(float));
    float *lse = xcalloc((size_t)B * H * T, sizeof(float));
    float *att = xcalloc((size_t)B * H * T * T, sizeof(float));
    float *datt = xcalloc((size_t)B * H * T * T, sizeof(float));
    float *scr = xcalloc(attention_scratch_floats(T), sizeof(float));
    attention_forward(o0, lse, scr, q, k, v, B, T, H, KV, D);
    attention_forward_ref(o1, att, q, k, v, B, T, H, KV, D);
    CHECK(test_rel_err(o0, o1, nq) < 1e-5);
    /* lse really is the log-sum-exp: p = exp(s - lse) sums to 1 */
    double s = 0, sc = 1 / sqrt((double)D);
    int b = 1, h = 3, t = 69, kh = h / (H / KV);
    for (int j = 0; j <= t; j++) {
        double d = 0;
        for (int i = 0; i < D; i++)
            d += (double)q[(((size_t)b * T + t) * H + h) * D + i] * k[(((size_t)b * T + j) * KV + kh) * D + i];
        s += exp(d * sc - lse[((size_t)b * H + h) * T + t]);
    }
    CHECK_NEAR(s, 1.0, 1e-5);
    float *dq0 = randv(nq, &r, -1, 1), *dq1 = copyv(dq0, nq);
    float *dk0 = randv(nk, &r, -1, 1), *dk1 = copyv(dk0, nk);
    float *dv0 = randv(nk, &r, -1, 1), *dv1 = copyv(dv0, nk);
    attention_backward(dq0, dk0, dv0, scr, go, o0, lse, q, k, v, B, T, H, KV, D);
    attention_backward_ref(dq1, dk1, dv1, datt, go, att, q, k, v, B, T, H, KV, D);
    CHECK(test_rel_err(dq0, dq1, nq) < 1e-5);
    CHECK(test_rel_err(dk0, dk1, nk) < 1e-5);
    CHECK(test_rel_err(dv0, dv1, nk) < 1e-5);
    /* one decoding step equals the last row of the full computation */
    float *od = xcalloc((size_t)H * D, sizeof(float)), *sd = xcalloc((size_t)H * T, sizeof(float));
    attention_decode(od, sd, q + (((size_t)0 * T + T - 1) * H) * D, k, v, T, H, KV, D);
    CHECK(test_rel_err(od, o1 + ((size_t)T - 1) * H * D, (size_t)H * D) < 1e-5);
    free(q); free(k); free(v); free(go); free(o0); free(o1); free(lse); free(att); free(datt);
    free(scr); free(dq0); free(dq1); free(dk0); free(dk1); free(dv0); free(dv1); free(od); free(sd);
}

static void crossentropy_matches_reference(void)
{
    int N = 6, V = 1003;
    int tgt[6] = { 5, -1, 1002, 0, 77, -1 };
    rng_t r;
    rng_seed(&r, 23);
    float *z = randv((size_t)N * V, &r, -8, 8), *dz = copyv(z, (size_t)N * V);
    float *dz1 = xcalloc((size_t)N * V, sizeof(float));
    float l0[6], l1[6], lse[6];
    crossentropy_forward(l0, lse, z, tgt, N, V);
    crossentropy_forward_backward(l1, dz1, z, tgt, N, V, 0.25f);
    crossentropy_backward(dz, dz, lse, tgt, N, V, 0.25f);   /* in place */
    for (int n = 0; n < N; n++) CHECK_NEAR(l0[n], l1[n], 2e-6 * fmax(1, fabs(l1[n])));
    double e = 0;
    for (size_t i = 0; i < (size_t)N * V; i++) e = fmax(e, fabs(dz[i] - dz1[i]));
    CHECK(e < 1e-7);
    CHECK(dz[V] == 0 && dz[2 * V - 1] == 0);   /* ignored row */
    free(z); free(dz); free(dz1);
}

static void rmsnorm_swiglu_match_reference(void)
{
    int N = 33, C = 40;
    size_t n = (size_t)N * C;
    rng_t r;
    rng_seed(&r, 24);
    float *x = randv(n, &r, -3, 3), *w = randv(C, &r, 0.5f, 1.5f), *dy = randv(n, &r, -1, 1);
    float *y0 = xmalloc(n * sizeof(float)), *y1 = xmalloc(n * sizeof(float)), rs0[33], rs1[33];
    rmsnorm_forward(y0, rs0, x, w, N, C, 1e-6f);
    rmsnorm_forward_ref(y1, rs1, x, w, N, C, 1e-6f);
    CHECK(test_rel_err(y0, y1, n) < 1e-6);
    CHECK(test_rel_err(rs0, rs1, N) < 1e-6);
    float *dx0 = randv(n, &r, -1, 1), *dx1 = copyv(dx0, n), *dw0 = randv(C, &r, -1, 1), *dw1 = copyv(dw0, C);
    float *dadd = copyv(dx0, n), *dx2 = xmalloc(n * sizeof(float)), *dx3 = xmalloc(n * sizeof(float));
    rmsnorm_backward(dx0, dx0, dw0, dy, x, w, rs1, N, C);        /* dadd = dinp: adds */
    rmsnorm_backward_ref(dx1, dw1, dy, x, w, rs1, N, C);
    CHECK(test_rel_err(dx0, dx1, n) < 1e-6);
    CHECK(test_rel_err(dw0, dw1, C) < 1e-6);
    /* dadd elsewhere: dinp = dadd + d(input), whatever dinp held; the
     * bits of copying dadd into dinp and adding */
    for (size_t i = 0; i < n; i++) dx2[i] = NAN;
    rmsnorm_backward(dx2, dadd, NULL, dy, x, w, rs1, N, C);
    CHECK(memcmp(dx2, dx0, n * sizeof(float)) == 0);
    /* no dadd: overwritten, the bits of clearing dinp and adding */
    for (size_t i = 0; i < n; i++) { dx2[i] = NAN; dx3[i] = 0; }
    rmsnorm_backward(dx2, NULL, NULL, dy, x, w, rs1, N, C);
    rmsnorm_backward(dx3, dx3, NULL, dy, x, w, rs1, N, C);
    CHECK(memcmp(dx2, dx3, n * sizeof(float)) == 0);
    free(dadd); free(dx2); free(dx3);
    /* SwiGLU over the saturating range of the sigmoid */
    float *g = randv(n, &r, -30, 30), *u = randv(n, &r, -2, 2);
    swiglu_forward(y0, g, u, n);
    swiglu_forward_ref(y1, g, u, n);
    CHECK(test_rel_err(y0, y1, n) < 1e-6);
    /* backward overwrites (what it held is ignored); the _ref adds onto zeros */
    float *dg0 = xmalloc(n * sizeof(float)), *dg1 = xcalloc(n, sizeof(float)), *du0 = xmalloc(n * sizeof(float)), *du1 = xcalloc(n, sizeof(float));
    for (size_t i = 0; i < n; i++) dg0[i] = du0[i] = NAN;
    swiglu_backward(dg0, du0, dy, g, u, n);
    swiglu_backward_ref(dg1, du1, dy, g, u, n);
    CHECK(test_rel_err(dg0, dg1, n) < 1e-6);
    CHECK(test_rel_err(du0, du1, n) < 1e-6);
    free(x); free(w); free(dy); free(y0); free(y1); free(dx0); free(dx1); free(dw0); free(dw1);
    free(g); free(u); free(dg0); free(dg1); free(du0); free(du1);
}

/* The vector exp against libm's over its whole range. */
static void vexpf_accuracy(void)
{
    double worst = 0;
    for (float x = -87.0f; x <= 88.0f; x += 0.00731f) {
        double e = fabs(vexpf(x) - exp((double)x)) / exp((double)x);
        if (e > worst) worst = e;
    }
    fprintf(stderr, "  vexpf max rel err %.3g\n", worst);
    CHECK(worst < 3e-7);
    CHECK(vexpf(0) == 1.0f);
}

/* The whole-model AdamW pass against one adamw_update per tensor, bit
 * for bit, for 1, 2 and 3 threads: tensor lengths that are not multiples
 * of 16 (so the vector body and the tail meet inside the shares) at
 * 16-aligned offsets, as model.c lays them out, with and without decay. */
static void adamw_tensors_match_per_tensor(void)
{
    enum { NT = 5 };
    size_t numel[NT] = { 7, 20000, 16 * 37 + 9, 1, 12345 }, off[NT];
    int decay[NT] = { 0, 1, 1, 0, 1 };
    size_t n = 0;
    for (int i = 0; i < NT; i++) { off[i] = n; n += (numel[i] + 15) / 16 * 16 + 16 * (i % 2); }
    rng_t r;
    rng_seed(&r, 26);
    float *p = randv(n, &r, -1, 1), *g = randv(n, &r, -1, 1), *m = randv(n, &r, -0.1f, 0.1f);
    float *v = randv(n, &r, 0, 0.01f);
    float *pe = copyv(p, n), *me = copyv(m, n), *ve = copyv(v, n);
    for (int i = 0; i < NT; i++)
        adamw_update(pe + off[i], me + off[i], ve + off[i], g + off[i], numel[i],
                     1e-2f, 0.9f, 0.95f, 1e-8f, decay[i] ? 0.1f : 0.0f, 4);
    int saved = omp_get_max_threads();
    for (int nt = 1; nt <= 3; nt++) {
        float *p1 = copyv(p, n), *m1 = copyv(m, n), *v1 = copyv(v, n);
        omp_set_num_threads(nt);
        adamw_update_tensors(p1, m1, v1, g, off, numel, decay, NT, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 4);
        CHECK(!memcmp(p1, pe, n * sizeof(float)));
        CHECK(!memcmp(m1, me, n * sizeof(float)));
        CHECK(!memcmp(v1, ve, n * sizeof(float)));
        free(p1); free(m1); free(v1);
    }
    omp_set_num_threads(saved);
    free(p); free(g); free(m); free(v); free(pe); free(me); free(ve);
}

/* AdamW over a length with a vector body and a tail, against the
 * formula in double; the grad-norm reduction against a plain sum. */
static void adamw_and_sumsq_match_reference(void)
{
    size_t n = 16 * 5 + 7;
    rng_t r;
    rng_seed(&r, 25);
    float *p = randv(n, &r, -1, 1), *g = randv(n, &r, -1, 1), *m = randv(n, &r, -0.1f, 0.1f);
    float *v = randv(n, &r, 0, 0.01f), *p1 = copyv(p, n), *m1 = copyv(m, n), *v1 = copyv(v, n);
    float lr = 1e-2f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f;
    int t = 3;
    adamw_update(p, m, v, g, n, lr, b1, b2, eps, wd, t);
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double mi = b1 * (double)m1[i] + (1 - b1) * (double)g[i];
        double vi = b2 * (double)v1[i] + (1 - b2) * (double)g[i] * g[i];
        double mh = mi / (1 - pow(b1, t)), vh = vi / (1 - pow(b2, t));
        double pi = p1[i] - lr * (mh / (sqrt(vh) + eps) + wd * p1[i]);
        worst = fmax(worst, fabs(pi - p[i]));
        worst = fmax(worst, fabs(mi - m[i]) + fabs(vi - v[i]));
    }
    CHECK(worst < 1e-6);
    size_t big = 100003;
    float *x = randv(big, &r, -1, 1);
    double ref = 0;
    for (size_t i = 0; i < big; i++) ref += (double)x[i] * x[i];
    CHECK_NEAR(sumsq(x, big), ref, 1e-9 * ref);
    free(p); free(g); free(m); free(v); free(p1); free(m1); free(v1); free(x);
}

int main(void)
{
    setenv("HAT_GEMM", "onednn", 1);   /* before the first product decides */
    RUN(onednn_matches_cblas);
    RUN(matmul_matches_reference);
    RUN(matmul_set_and_fills_exact);
    RUN(attention_matches_reference);
    RUN(crossentropy_matches_reference);
    RUN(rmsnorm_swiglu_match_reference);
    RUN(vexpf_accuracy);
    RUN(adamw_and_sumsq_match_reference);
    RUN(adamw_tensors_match_per_tensor);
    RUN(table_names_and_shapes);
    RUN(kernels_known_answers);
    RUN(rows_independent_and_padding_inert);
    RUN(matches_pytorch);
    RUN(gradcheck_untied);
    RUN(gradcheck_tied_masked);
    RUN(gradcheck_mtp);
    TEST_MAIN_END();
}
