/* test_decode_cuda.c — GPU decoding (kernels/cuda/decode.cu and
 * common/generate_cuda.c) against the CPU.
 *
 *   - kernels: the GEMV (plain, normalised input, residual + rmsnorm
 *     statistic, SwiGLU) against a double-precision reference for odd and
 *     large sizes and 1..8 rows, bit-identical rows whatever the row
 *     count; q/k-norm + RoPE + cache store against rmsnorm_rows and
 *     rope_rows; flash-decoding attention against the CPU's
 *     attention_decode (and cuda_attention_decode) for contexts 1, 17,
 *     1000, 5000, GQA ratios 1..16 and several split counts, fp32 and
 *     bf16 caches;
 *   - the engine: a captured CUDA graph gives the logits of the eager
 *     path bit for bit; in fp32 mode greedy ids equal the CPU engine's
 *     (log-probs within 2e-4) on tiny random models whose sizes take both
 *     the vector and the scalar GEMV, both the GEMV and the cuBLAS paths,
 *     continuous batching, prefix reuse and gen_extend; sampling with a
 *     seed picks the CPU's ids; the weights are uploaded again after the
 *     model changes; in bf16 mode the next-token argmax agrees with the
 *     CPU's on >= 95% of teacher-forced positions.
 * Without a GPU (or in a build without CUDA) the GPU tests print
 * "ok - NAME # skip REASON" and gen_new_cuda must refuse cleanly. */
#include "test.h"
#include "generate.h"
#include "generate_cuda.h"
#include "kernels.h"
#include "model.h"
#include "rng.h"
#include "util.h"
#include "cuda/device.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAT_CUDA
#include "cuda/decode_cuda.h"
#include "cuda/kernels_cuda.h"
#endif

static model_config tiny_cfg(int V, int C, int I, int L, int H, int KV, int D)
{
    model_config c = {
        .vocab_size = V, .hidden_size = C, .intermediate_size = I, .n_layers = L,
        .n_heads = H, .n_kv_heads = KV, .head_dim = D, .rms_norm_eps = 1e-6,
        .rope_theta = 10000.0, .max_position_embeddings = 512,
        .n_mtp = 0, .mtp_loss_weight = 0.3, .bos_token_id = -1, .eos_token_id = -1,
    };
    return c;
}

/* ================================================== everywhere */

/* Without CUDA or a GPU, the GPU engine is refused with a reason. */
static void gpu_engine_refused_without_gpu(void)
{
    model_config c = tiny_cfg(50, 32, 64, 1, 4, 2, 8);
    model *m = model_new(&c);
    const char *why = NULL;
    gen_engine *e = gen_new_cuda(m, 2, 16, GEN_CUDA_FP32, &why);
    CHECK(e == NULL);
    CHECK(why && (strstr(why, "no CUDA back end") || strstr(why, "no CUDA GPU")));
    model_free(m);
}

/* ================================================== GPU */

#ifdef HAT_CUDA
static float *randv(size_t n, rng_t *r, float lo, float hi)
{
    float *p = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * (float)rng_uniform(r);
    return p;
}

static void *up_bytes(const void *h, size_t bytes)
{
    void *d = device_malloc(bytes);
    device_upload(d, h, bytes);
    return d;
}

/* Upload n floats as storage t; for bf16 the host copy is rounded in
 * place first so the reference sees exactly what the GPU reads. */
static void *up_typed(float *h, size_t n, dec_type t)
{
    if (t == DEC_F32) return up_bytes(h, n * sizeof(float));
    hat_bf16 *b = xmalloc(n * sizeof(hat_bf16));
    for (size_t i = 0; i < n; i++) { b[i] = bf16_from_float(h[i]); h[i] = bf16_to_float(b[i]); }
    void *d = up_bytes(b, n * sizeof(hat_bf16));
    free(b);
    return d;
}

static float *down(const void *d, size_t n)
{
    float *h = xmalloc(n * sizeof(float));
    device_download(h, d, n * sizeof(float));
    return h;
}

static float host_rstd(const float *x, int C, float eps)
{
    double ss = 0;
    for (int i = 0; i < C; i++) ss += (double)x[i] * x[i];
    return (float)(1.0 / sqrt(ss / C + eps));
}

/* ref (R, OC) = in W^T in double, in = x or nw * (x * rstd). */
static void ref_gemv(double *ref, const float *x, const float *w, const float *nw,
                     const float *rstd, int R, int C, int OC)
{
    for (int r = 0; r < R; r++)
        for (int o = 0; o < OC; o++) {
            double s = 0;
            for (int k = 0; k < C; k++) {
                float in = x[(size_t)r * C + k];
                if (nw) in = nw[k] * (in * rstd[r]);
                s += (double)in * w[(size_t)o * C + k];
            }
            ref[(size_t)r * OC + o] = s;
        }
}

static double rel_err_d(const float *a, const double *b, size_t n)
{
    double e = 0, mx = 0;
    for (size_t i = 0; i < n; i++) {
        e = fmax(e, fabs(a[i] - b[i]));
        mx = fmax(mx, fabs(b[i]));
    }
    return e / fmax(mx, 1e-30);
}

#define TOL_GEMV 2e-6

static void gpu_gemv_matches_reference(void)
{
    static const int sz[][2] = { { 37, 5 }, { 64, 1000 }, { 200, 3 }, { 1024, 4099 }, { 21, 300 },
                                 { 8, 17 }, { 2048, 40 } };
    static const int rows[] = { 1, 2, 3, 4, 5, 8 };
    rng_t rg;
    rng_seed(&rg, 71);
    float eps = 1e-6f;
    for (int t = 0; t < 2; t++) {
        dec_type wt = t ? DEC_BF16 : DEC_F32;
        for (size_t c = 0; c < sizeof sz / sizeof *sz; c++) {
            int C = sz[c][0], OC = sz[c][1], RM = 8;
            float *x = randv((size_t)RM * C, &rg, -1, 1), *w = randv((size_t)OC * C, &rg, -1, 1);
            float *w2 = randv((size_t)OC * C, &rg, -1, 1), *nw = randv(C, &rg, 0.5f, 1.5f);
            float *o0 = randv((size_t)RM * OC, &rg, -1, 1);
            void *W = up_typed(w, (size_t)OC * C, wt), *W2 = up_typed(w2, (size_t)OC * C, wt);
            float rs[8];
            for (int r = 0; r < RM; r++) rs[r] = host_rstd(x + (size_t)r * C, C, eps);
            float *X = up_bytes(x, (size_t)RM * C * 4), *NW = up_bytes(nw, (size_t)C * 4);
            float *RS = up_bytes(rs, sizeof rs), *OUT = device_malloc((size_t)RM * OC * 4);
            float *RO = device_malloc(8 * 4);
            unsigned *cnt = device_malloc(sizeof(unsigned));
            double *ref = xmalloc((size_t)RM * OC * sizeof(double));
            double *ref2 = xmalloc((size_t)RM * OC * sizeof(double));
            float *row1 = NULL;
            for (size_t ri = 0; ri < sizeof rows / sizeof *rows; ri++) {
                int R = rows[ri];
                size_t n = (size_t)R * OC;
                /* plain */
                dec_gemv(OUT, X, W, wt, R, C, OC, NULL, NULL, 0, NULL, NULL, eps);
                float *y = down(OUT, n);
                ref_gemv(ref, x, w, NULL, NULL, R, C, OC);
                double e = rel_err_d(y, ref, n);
                if (!(e < TOL_GEMV)) {
                    fprintf(stderr, "  gemv %s C=%d OC=%d R=%d: rel err %.3g\n", t ? "bf16" : "fp32", C, OC, R, e);
                    CHECK(e < TOL_GEMV);
                }
                /* a row's bits do not depend on the row count */
                if (R == 1) row1 = y;
                else {
                    CHECK(memcmp(row1, y, OC * sizeof(float)) == 0);
                    free(y);
                }
                /* normalised input */
                dec_gemv(OUT, X, W, wt, R, C, OC, RS, NW, 0, NULL, NULL, eps);
                y = down(OUT, n);
                ref_gemv(ref, x, w, nw, rs, R, C, OC);
                e = rel_err_d(y, ref, n);
                if (!(e < TOL_GEMV)) {
                    fprintf(stderr, "  gemv+norm %s C=%d OC=%d R=%d: rel err %.3g\n", t ? "bf16" : "fp32", C, OC, R, e);
                    CHECK(e < TOL_GEMV);
                }
                free(y);
                /* residual: out += ..., then the statistic of the new rows */
                device_upload(OUT, o0, n * 4);
                dec_gemv(OUT, X, W, wt, R, C, OC, NULL, NULL, 1, RO, cnt, eps);
                y = down(OUT, n);
                ref_gemv(ref, x, w, NULL, NULL, R, C, OC);
                for (size_t i = 0; i < n; i++) ref[i] += o0[i];
                CHECK(rel_err_d(y, ref, n) < TOL_GEMV);
                float ro[8];
                unsigned cv = 1;
                device_download(ro, RO, R * sizeof(float));
                device_download(&cv, cnt, sizeof cv);
                CHECK_EQ_INT(cv, 0);
                for (int r = 0; r < R; r++) {
                    double ss = 0;
                    for (int o = 0; o < OC; o++) ss += ref[(size_t)r * OC + o] * ref[(size_t)r * OC + o];
                    CHECK_NEAR(ro[r], 1.0 / sqrt(ss / OC + eps), 1e-5 * ro[r]);
                }
                free(y);
                /* SwiGLU of two products */
                dec_gemv_swiglu(OUT, X, W, W2, wt, R, C, OC, RS, NW);
                y = down(OUT, n);
                ref_gemv(ref, x, w, nw, rs, R, C, OC);
                ref_gemv(ref2, x, w2, nw, rs, R, C, OC);
                for (size_t i = 0; i < n; i++) ref[i] = ref[i] / (1 + exp(-ref[i])) * ref2[i];
                e = rel_err_d(y, ref, n);
                if (!(e < 4 * TOL_GEMV)) {
                    fprintf(stderr, "  swiglu %s C=%d OC=%d R=%d: rel err %.3g\n", t ? "bf16" : "fp32", C, OC, R, e);
                    CHECK(e < 4 * TOL_GEMV);
                }
                free(y);
            }
            free(row1);
            free(x); free(w); free(w2); free(nw); free(o0); free(ref); free(ref2);
            device_free(W); device_free(W2); device_free(X); device_free(NW); device_free(RS);
            device_free(OUT); device_free(RO); device_free(cnt);
        }
    }
}

/* q/k RMS norm + RoPE in place / into the cache at each row's slot,
 * layer and position; v copied. */
static void gpu_qk_rope_store(void)
{
    static const int shp[][3] = { { 4, 2, 16 }, { 16, 8, 128 }, { 3, 1, 8 } };
    rng_t rg;
    rng_seed(&rg, 72);
    int R = 3, slots = 3, L = 2, S = 120, layer = 1;
    int pos[3] = { 0, 5, 100 }, slot[3] = { 2, 0, 1 };
    float eps = 1e-6f;
    for (int t = 0; t < 2; t++) {
        dec_type ct = t ? DEC_BF16 : DEC_F32;
        for (size_t c = 0; c < sizeof shp / sizeof *shp; c++) {
            int H = shp[c][0], KV = shp[c][1], D = shp[c][2], QS = (H + 2 * KV) * D, KD = KV * D;
            size_t ls = (size_t)S * KD, ss = (size_t)L * ls, ncache = (size_t)slots * ss;
            float *qkv = randv((size_t)R * QS, &rg, -2, 2), *qn = randv(D, &rg, 0.5f, 1.5f);
            float *kn = randv(D, &rg, 0.5f, 1.5f);
            float *ct_ = xmalloc((size_t)S * D / 2 * 4), *st_ = xmalloc((size_t)S * D / 2 * 4);
            rope_table(ct_, st_, S, D, 10000.0);
            float *Q = up_bytes(qkv, (size_t)R * QS * 4), *QN = up_bytes(qn, D * 4), *KN = up_bytes(kn, D * 4);
            float *CT = up_bytes(ct_, (size_t)S * D / 2 * 4), *ST = up_bytes(st_, (size_t)S * D / 2 * 4);
            int *P = up_bytes(pos, sizeof pos), *SL = up_bytes(slot, sizeof slot);
            size_t es = t ? 2 : 4;
            void *K = device_malloc(ncache * es), *V = device_malloc(ncache * es);
            dec_qk_rope_store(Q, P, SL, K, V, ct, ss, layer * ls, QN, KN, CT, ST, R, H, KV, D, eps);
            float *q = down(Q, (size_t)R * QS);
            float *kc = xmalloc(ncache * 4), *vc = xmalloc(ncache * 4);
            if (t) {
                hat_bf16 *b = xmalloc(ncache * 2);
                device_download(b, K, ncache * 2);
                for (size_t i = 0; i < ncache; i++) kc[i] = bf16_to_float(b[i]);
                device_download(b, V, ncache * 2);
                for (size_t i = 0; i < ncache; i++) vc[i] = bf16_to_float(b[i]);
                free(b);
            } else {
                device_download(kc, K, ncache * 4);
                device_download(vc, V, ncache * 4);
            }
            double tol = t ? 1.0 / 128 : 1e-6;      /* bf16: one rounding of the stored value */
            for (int r = 0; r < R; r++) {
                float *row = qkv + (size_t)r * QS;
                rmsnorm_rows(row, row, qn, H, D, eps);
                rmsnorm_rows(row + H * D, row + H * D, kn, KV, D, eps);
                rope_rows(row, &pos[r], ct_, st_, 1, H, D);
                rope_rows(row + H * D, &pos[r], ct_, st_, 1, KV, D);
                CHECK(test_rel_err(q + (size_t)r * QS, row, (size_t)H * D) < 1e-6);
                size_t at = (size_t)slot[r] * ss + layer * ls + (size_t)pos[r] * KD;
                CHECK(test_rel_err(kc + at, row + H * D, KD) < tol);
                CHECK(test_rel_err(vc + at, row + H * D + KD, KD) < tol);
            }
            free(qkv); free(qn); free(kn); free(ct_); free(st_); free(q); free(kc); free(vc);
            device_free(Q); device_free(QN); device_free(KN); device_free(CT); device_free(ST);
            device_free(P); device_free(SL); device_free(K); device_free(V);
        }
    }
}

/* One (shape, context) case: R = 3 rows in different slots at different
 * positions, layer 1 of a 2-layer cache, several split counts. */
static void attention_case(int H, int KV, int D, int ctx, rng_t *rg)
{
    int R = 3, slots = 3, L = 2, S = ctx, QS = (H + 2 * KV) * D, KD = KV * D;
    int pos[3], slot[3] = { 1, 2, 0 };
    for (int r = 0; r < R; r++) {
        pos[r] = ctx - 1 - r * (ctx / 3);
        if (pos[r] < 0) pos[r] = 0;
    }
    size_t ls = (size_t)S * KD, ss = (size_t)L * ls, ncache = (size_t)slots * ss;
    float *qkv = randv((size_t)R * QS, rg, -2, 2);
    float *out = xmalloc((size_t)R * H * D * 4), *scr = xmalloc((size_t)H * ctx * 4);
    float *Q = up_bytes(qkv, (size_t)R * QS * 4), *O = device_malloc((size_t)R * H * D * 4);
    int *P = up_bytes(pos, sizeof pos), *SL = up_bytes(slot, sizeof slot);
    static const int splits[] = { 1, 5, 33 };
    CHECK(dec_attention_supported(H, KV, D));
    for (int t = 0; t < 2; t++) {
        dec_type ct = t ? DEC_BF16 : DEC_F32;
        float *kc = randv(ncache, rg, -1, 1), *vc = randv(ncache, rg, -1, 1);
        void *K = up_typed(kc, ncache, ct), *V = up_typed(vc, ncache, ct);
        for (int r = 0; r < R; r++) {          /* the reference, per row */
            size_t at = (size_t)slot[r] * ss + ls;
            attention_decode(out + (size_t)r * H * D, scr, qkv + (size_t)r * QS, kc + at, vc + at,
                             pos[r] + 1, H, KV, D);
        }
        for (size_t si = 0; si < sizeof splits / sizeof *splits; si++) {
            int ns = splits[si];
            float *part = ns > 1 ? device_malloc(dec_attention_part_floats(R, H, D, ns) * 4) : NULL;
            unsigned *cnt = device_malloc((size_t)R * KV * sizeof(unsigned));
            device_zero(O, (size_t)R * H * D * 4);
            dec_attention(O, Q, P, SL, K, V, ct, ss, ls, R, H, KV, D, ns, part, ns > 1 ? cnt : NULL);
            float *y = down(O, (size_t)R * H * D);
            double e = test_rel_err(y, out, (size_t)R * H * D);
            if (!(e < 2e-5)) {
                fprintf(stderr, "  attention H=%d KV=%d D=%d ctx=%d %s nsplit=%d: rel err %.3g\n",
                        H, KV, D, ctx, t ? "bf16" : "fp32", ns, e);
                CHECK(e < 2e-5);
            }
            unsigned *c = xmalloc((size_t)R * KV * sizeof(unsigned));
            device_download(c, cnt, (size_t)R * KV * sizeof(unsigned));
            for (int i = 0; i < R * KV; i++) CHECK_EQ_INT(c[i], 0);
            free(c); free(y);
            device_free(part); device_free(cnt);
        }
        if (!t) {   /* the generic GPU kernel agrees on row 0 too */
            size_t at = (size_t)slot[0] * ss + ls;
            float *q0 = up_bytes(qkv, (size_t)H * D * 4), *o0 = device_malloc((size_t)H * D * 4);
            float *sc = device_malloc((size_t)H * ctx * 4);
            cuda_attention_decode(o0, sc, q0, (const float *)K + at, (const float *)V + at, pos[0] + 1,
                                  H, KV, D);
            float *y = down(o0, (size_t)H * D);
            CHECK(test_rel_err(y, out, (size_t)H * D) < 2e-5);
            free(y);
            device_free(q0); device_free(o0); device_free(sc);
        }
        free(kc); free(vc);
        device_free(K); device_free(V);
    }
    free(qkv); free(out); free(scr);
    device_free(Q); device_free(O); device_free(P); device_free(SL);
}

static void gpu_attention_matches_cpu(void)
{
    static const int shp[][3] = { { 4, 4, 64 }, { 8, 2, 128 }, { 16, 8, 128 }, { 6, 2, 8 },
                                  { 32, 2, 64 }, { 8, 1, 256 }, { 32, 2, 256 } };
    static const int ctxs[] = { 1, 17, 1000, 5000 };
    rng_t rg;
    rng_seed(&rg, 73);
    for (size_t c = 0; c < sizeof shp / sizeof *shp; c++)
        for (size_t k = 0; k < sizeof ctxs / sizeof *ctxs; k++)
            attention_case(shp[c][0], shp[c][1], shp[c][2], ctxs[k], &rg);
}

/* ---------------------------------------------------------- the engine */

#define NPROMPT 5
static const int plen[NPROMPT] = { 1, 3, 12, 30, 9 };

typedef struct {
    int  n[NPROMPT];
    int  ids[NPROMPT][64];
    float lp[NPROMPT][64];
    int  fin[NPROMPT];
} run_out;

static int *prompt(int i, int V)
{
    int *p = xmalloc(plen[i] * sizeof(int));
    rng_t r;
    rng_derive(&r, 5, (uint64_t)i);
    for (int k = 0; k < plen[i]; k++) p[k] = (int)rng_below(&r, (uint64_t)V);
    return p;
}

/* Every prompt through the engine as generate drives it: fill free
 * slots, step, collect finished sequences. */
static void run_all(gen_engine *e, int max_seqs, const gen_params *gp, uint64_t seed, int V,
                    run_out *o)
{
    int *prompts[NPROMPT], slot_of[64];
    for (int i = 0; i < NPROMPT; i++) prompts[i] = prompt(i, V);
    for (int s = 0; s < max_seqs; s++) slot_of[s] = -1;
    int next = 0, live = 0;
    memset(o, 0, sizeof *o);
    while (next < NPROMPT || live) {
        while (next < NPROMPT) {
            int s = gen_add(e, prompts[next], plen[next], gp, seed, (uint64_t)next);
            if (s < 0) break;
            slot_of[s] = next++;
            live++;
        }
        gen_step(e);
        for (int s = 0; s < max_seqs; s++) {
            int j = slot_of[s];
            if (j < 0 || gen_status(e, s) == GEN_RUNNING) continue;
            int n;
            const int *ids = gen_output(e, s, &n);
            const float *lp = gen_logprobs(e, s);
            o->n[j] = n;
            memcpy(o->ids[j], ids, n * sizeof(int));
            memcpy(o->lp[j], lp, n * sizeof(float));
            o->fin[j] = gen_status(e, s);
            gen_remove(e, s);
            slot_of[s] = -1;
            live--;
        }
    }
    for (int i = 0; i < NPROMPT; i++) free(prompts[i]);
}

/* Same ids, same finish, log-probs within tol; returns the number of
 * mismatching ids. */
static int compare_runs(const run_out *a, const run_out *b, double tol, const char *what)
{
    int bad = 0;
    for (int i = 0; i < NPROMPT; i++) {
        if (a->n[i] != b->n[i] || a->fin[i] != b->fin[i]) {
            fprintf(stderr, "  %s: prompt %d: %d tokens (finish %d) vs %d (finish %d)\n", what, i,
                    a->n[i], a->fin[i], b->n[i], b->fin[i]);
            bad++;
            continue;
        }
        for (int k = 0; k < a->n[i]; k++) {
            if (a->ids[i][k] != b->ids[i][k]) {
                fprintf(stderr, "  %s: prompt %d: first different id at %d (%d vs %d)\n", what, i, k,
                        a->ids[i][k], b->ids[i][k]);
                bad++;
                break;
            }
            if (!(fabs(a->lp[i][k] - b->lp[i][k]) <= tol)) {
                fprintf(stderr, "  %s: prompt %d: log-prob %d: %.7g vs %.7g\n", what, i, k,
                        a->lp[i][k], b->lp[i][k]);
                bad++;
                break;
            }
        }
    }
    return bad;
}

/* Two model shapes: one every GEMV takes with 16-byte loads, one with
 * odd widths (the scalar GEMV, head_dim 8, a single kv head). */
static model *engine_model(int which)
{
    model_config c = which ? tiny_cfg(61, 36, 20, 3, 2, 1, 8) : tiny_cfg(300, 64, 96, 2, 4, 2, 16);
    model *m = model_new(&c);
    model_init_random(m, 11 + which, 0.5f);
    return m;
}

static void gpu_greedy_fp32_matches_cpu(void)
{
    for (int which = 0; which < 2; which++) {
        model *m = engine_model(which);
        int V = m->cfg.vocab_size, maxs = 3, maxlen = 30 + 40 + 1;
        gen_params gp = { .temperature = 0, .top_k = 0, .top_p = 1, .max_tokens = 40, .eos = -1 };
        gen_engine *cpu = gen_new(m, maxs, maxlen);
        const char *why = NULL;
        gen_engine *gpu = gen_new_cuda(m, maxs, maxlen, GEN_CUDA_FP32, &why);
        CHECK(gpu != NULL);
        if (!gpu) { fprintf(stderr, "  %s\n", why); gen_free(cpu); model_free(m); return; }
        CHECK(gen_on_gpu(gpu) && !gen_on_gpu(cpu));
        run_out a, b;
        run_all(cpu, maxs, &gp, 1, V, &a);
        run_all(gpu, maxs, &gp, 1, V, &b);
        CHECK_EQ_INT(compare_runs(&a, &b, 2e-4, which ? "greedy fp32 (odd sizes)" : "greedy fp32"), 0);
        /* a stop id ends the same sequences at the same place */
        gp.eos = a.ids[3][5];
        run_all(cpu, maxs, &gp, 1, V, &a);
        run_all(gpu, maxs, &gp, 1, V, &b);
        CHECK_EQ_INT(compare_runs(&a, &b, 2e-4, "greedy fp32 with eos"), 0);
        CHECK_EQ_INT(b.fin[3], GEN_STOP);
        gen_free(cpu);
        gen_free(gpu);
        model_free(m);
    }
}

static void gpu_sampling_fp32_matches_cpu(void)
{
    model *m = engine_model(0);
    int V = m->cfg.vocab_size, maxs = 2, maxlen = 30 + 40 + 1;
    static const struct { float t; int k; float p; } set[] = { { 1, 0, 1 }, { 0.8f, 20, 1 }, { 1.2f, 0, 0.9f } };
    gen_engine *cpu = gen_new(m, maxs, maxlen);
    gen_engine *gpu = gen_new_cuda(m, maxs, maxlen, GEN_CUDA_FP32, NULL);
    CHECK(gpu != NULL);
    for (int s = 0; gpu && s < 3; s++) {
        gen_params gp = { .temperature = set[s].t, .top_k = set[s].k, .top_p = set[s].p,
                          .max_tokens = 40, .eos = -1 };
        run_out a, b;
        run_all(cpu, maxs, &gp, 7 + s, V, &a);
        run_all(gpu, maxs, &gp, 7 + s, V, &b);
        CHECK_EQ_INT(compare_runs(&a, &b, 2e-4, "sampling fp32"), 0);
    }
    gen_free(cpu);
    gen_free(gpu);
    model_free(m);
}

/* gen_extend (kept cache) and prefix reuse (copied cache) on the GPU give
 * the CPU engine's ids. */
static void gpu_extend_and_prefix_reuse(void)
{
    model *m = engine_model(0);
    int V = m->cfg.vocab_size, maxlen = 128;
    gen_params gp = { .temperature = 0, .top_k = 0, .top_p = 1, .max_tokens = 10, .eos = -1 };
    gen_engine *e[2] = { gen_new(m, 3, maxlen), gen_new_cuda(m, 3, maxlen, GEN_CUDA_FP32, NULL) };
    CHECK(e[1] != NULL);
    if (!e[1]) { gen_free(e[0]); model_free(m); return; }
    int base[50], more[7], out[2][3][20], nout[2][3];
    rng_t r;
    rng_seed(&r, 9);
    for (int i = 0; i < 50; i++) base[i] = (int)rng_below(&r, V);
    for (int i = 0; i < 7; i++) more[i] = (int)rng_below(&r, V);
    for (int k = 0; k < 2; k++) {
        int s = gen_add(e[k], base, 40, &gp, 1, 0);
        while (gen_step(e[k])) {}
        int n;
        const int *o = gen_output(e[k], s, &n);
        memcpy(out[k][0], o, n * sizeof(int));
        nout[k][0] = n;
        CHECK_EQ_INT(gen_extend(e[k], s, more, 7, &gp, 1, 1), 0);   /* multi-turn */
        while (gen_step(e[k])) {}
        o = gen_output(e[k], s, &n);
        memcpy(out[k][1], o, n * sizeof(int));
        nout[k][1] = n;
        /* a new prompt sharing its first 40 tokens with the first one: copied from its slot */
        int s2 = gen_add(e[k], base, 50, &gp, 1, 2);
        CHECK(s2 >= 0 && s2 != s);
        while (gen_step(e[k])) {}
        o = gen_output(e[k], s2, &n);
        memcpy(out[k][2], o, n * sizeof(int));
        nout[k][2] = n;
    }
    CHECK(gen_get_stats(e[1]).reused > 0);
    for (int j = 0; j < 3; j++) {
        CHECK_EQ_INT(nout[1][j], nout[0][j]);
        CHECK(memcmp(out[0][j], out[1][j], nout[0][j] * sizeof(int)) == 0);
    }
    gen_free(e[0]);
    gen_free(e[1]);
    model_free(m);
}

/* A captured step replays with the eager path's logits, bit for bit,
 * also at later positions (the graph reads them from device memory). */
static void gpu_graph_replay_matches_eager(void)
{
    model *m = engine_model(0);
    int V = m->cfg.vocab_size;
    for (int t = 0; t < 2; t++) {
        gen_cuda *g = gen_cuda_new(m, 3, 64, t ? GEN_CUDA_BF16 : GEN_CUDA_FP32, NULL);
        CHECK(g != NULL);
        if (!g) break;
        int tok[16], pos[16], slot[16], lr[3] = { 0, 1, 2 };
        for (int s = 0; s < 3; s++) {             /* prompts of 10, 5 and 12 tokens */
            int n = s == 0 ? 10 : s == 1 ? 5 : 12;
            for (int i = 0; i < n; i++) { tok[i] = (7 * i + 3 * s) % V; pos[i] = i; slot[i] = s; }
            int last = n - 1;
            gen_cuda_forward(g, tok, pos, slot, n, &last, 1);
        }
        float *eager = xmalloc(3 * (size_t)V * 4), *graph = xmalloc(3 * (size_t)V * 4);
        for (int R = 1; R <= 3; R++)
            for (int step = 0; step < 3; step++) {
                int dt[3] = { 5, 6, 7 }, dp[3] = { 10 + step, 5 + step, 12 + step }, ds[3] = { 0, 1, 2 };
                for (int k = 0; k < 2; k++) {     /* the same step twice: eager, then graph */
                    gen_cuda_set_graphs(g, k);
                    gen_cuda_forward(g, dt, dp, ds, R, lr, R);
                    for (int r = 0; r < R; r++) gen_cuda_logits(g, r, (k ? graph : eager) + (size_t)r * V);
                }
                CHECK(memcmp(eager, graph, (size_t)R * V * 4) == 0);
            }
        free(eager);
        free(graph);
        gen_cuda_free(g);
    }
    model_free(m);
}

/* New weights (an optimizer step bumps the version) reach the device. */
static void gpu_weights_follow_the_model(void)
{
    model *m = engine_model(0);
    int V = m->cfg.vocab_size, maxs = 2, maxlen = 80;
    gen_params gp = { .temperature = 0, .top_k = 0, .top_p = 1, .max_tokens = 12, .eos = -1 };
    gen_engine *gpu = gen_new_cuda(m, maxs, maxlen, GEN_CUDA_FP32, NULL);
    CHECK(gpu != NULL);
    if (gpu) {
        run_out a, b, c;
        run_all(gpu, maxs, &gp, 1, V, &a);
        model_init_random(m, 99, 0.5f);
        m->version++;
        gen_engine *cpu = gen_new(m, maxs, maxlen);
        run_all(cpu, maxs, &gp, 1, V, &b);
        run_all(gpu, maxs, &gp, 1, V, &c);
        CHECK(compare_runs(&a, &b, 0, "(must differ)") > 0);
        CHECK_EQ_INT(compare_runs(&b, &c, 2e-4, "after new weights"), 0);
        gen_free(cpu);
        gen_free(gpu);
    }
    model_free(m);
}

/* bf16 weights and cache: the next-token argmax agrees with the CPU's on
 * the CPU's own greedy continuations (teacher forcing, so one early
 * divergence does not count for the rest); the free-running first
 * divergence is reported. */
static void gpu_bf16_agrees_with_cpu(void)
{
    for (int which = 0; which < 2; which++) {
        model *m = engine_model(which);
        int V = m->cfg.vocab_size, maxlen = 30 + 40 + 1;
        gen_params gp = { .temperature = 0, .top_k = 0, .top_p = 1, .max_tokens = 40, .eos = -1 };
        gen_engine *cpu = gen_new(m, 3, maxlen), *gpu = gen_new_cuda(m, 3, maxlen, GEN_CUDA_BF16, NULL);
        CHECK(gpu != NULL);
        if (!gpu) { gen_free(cpu); model_free(m); return; }
        run_out a, b;
        run_all(cpu, 3, &gp, 1, V, &a);
        run_all(gpu, 3, &gp, 1, V, &b);
        int same = 0, total = 0, first = -1;
        for (int i = 0; i < NPROMPT; i++) {
            int k = 0;
            while (k < a.n[i] && k < b.n[i] && a.ids[i][k] == b.ids[i][k]) k++;
            if (k < a.n[i] && (first < 0 || k < first)) first = k;
        }
        gp.max_tokens = 1;
        double lp_err = 0;
        for (int i = 0; i < NPROMPT; i++) {
            int *p = prompt(i, V), ctx[128];
            memcpy(ctx, p, plen[i] * sizeof(int));
            memcpy(ctx + plen[i], a.ids[i], a.n[i] * sizeof(int));
            free(p);
            for (int k = 0; k < a.n[i]; k++) {
                int s = gen_add(gpu, ctx, plen[i] + k, &gp, 1, 0);
                while (gen_step(gpu)) {}
                int n;
                const int *o = gen_output(gpu, s, &n);
                same += n == 1 && o[0] == a.ids[i][k];
                if (n == 1 && o[0] == a.ids[i][k]) lp_err = fmax(lp_err, fabs(gen_logprobs(gpu, s)[0] - a.lp[i][k]));
                total++;
                gen_remove(gpu, s);
            }
        }
        printf("# bf16 %s: teacher-forced argmax agreement %d/%d (%.3f), max |logprob diff| %.4f, "
               "free-running first divergence at token %d of %d\n",
               which ? "odd sizes" : "model", same, total, (double)same / total, lp_err, first, 40);
        CHECK(same >= 0.95 * total);
        gen_free(cpu);
        gen_free(gpu);
        model_free(m);
    }
}
#endif

#define RUN_GPU(fn) do { if (gpu_ok) RUN(fn); \
    else printf("ok - %s # skip %s\n", #fn, skip_why); } while (0)

int main(void)
{
#ifdef HAT_CUDA
    int gpu_ok = device_available() > 0 && device_init(-1) == 0;
    const char *skip_why = "no CUDA GPU or driver";
    if (!gpu_ok) RUN(gpu_engine_refused_without_gpu);
    else printf("ok - gpu_engine_refused_without_gpu # skip a GPU is present\n");
    RUN_GPU(gpu_gemv_matches_reference);
    RUN_GPU(gpu_qk_rope_store);
    RUN_GPU(gpu_attention_matches_cpu);
    RUN_GPU(gpu_graph_replay_matches_eager);
    RUN_GPU(gpu_greedy_fp32_matches_cpu);
    RUN_GPU(gpu_sampling_fp32_matches_cpu);
    RUN_GPU(gpu_extend_and_prefix_reuse);
    RUN_GPU(gpu_weights_follow_the_model);
    RUN_GPU(gpu_bf16_agrees_with_cpu);
    if (gpu_ok) device_shutdown();
#else
    RUN(gpu_engine_refused_without_gpu);
    static const char *names[] = { "gpu_gemv_matches_reference", "gpu_qk_rope_store",
                                   "gpu_attention_matches_cpu", "gpu_graph_replay_matches_eager",
                                   "gpu_greedy_fp32_matches_cpu", "gpu_sampling_fp32_matches_cpu",
                                   "gpu_extend_and_prefix_reuse", "gpu_weights_follow_the_model",
                                   "gpu_bf16_agrees_with_cpu", NULL };
    for (int i = 0; names[i]; i++) printf("ok - %s # skip built without CUDA (make CUDA=1)\n", names[i]);
#endif
    TEST_MAIN_END();
}
