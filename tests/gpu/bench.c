/* bench.c — the GPU benchmark of tests/gpu/check.sh; JSON lines on stdout.
 *
 *   bench [--matmul] [--train NAME:V,C,I,L,H,KV,D,B,T]... [--decode NAME:V,C,I,L,H,KV,D,CTX]...
 *
 * --matmul   cuBLAS TFLOP/s on large bf16 and fp32 products, and the
 *            device-to-device copy bandwidth, against the peaks.
 * --train    one training step of a Qwen3-shaped decoder built from the
 *            cuda_*_bf16 kernels in the order model.c calls the CPU ones
 *            (forward, cross-entropy, backward, clipping, AdamW with fp32
 *            master weights): tokens/s and MFU = model FLOPs / time / peak,
 *            model FLOPs = 6 * matmul params * tokens + 6 * L*B*H*T*T*D
 *            (causal attention counted once, as is usual).
 * --decode   greedy decoding on the GPU engine's own path
 *            (common/generate_cuda.c: bf16 weights and KV cache, GEMV and
 *            flash-decoding kernels, device sampling) with CTX tokens
 *            already cached, with and without the per-step CUDA graph, at
 *            batch 1 and 4, then through the whole gen_engine: ms per
 *            step and tokens/s against the memory-bandwidth bound (every
 *            bf16 matrix weight and each sequence's cached K/V read once
 *            per step); and the prompt's prefill speed.
 * Weights are hashed uniforms (cuda_fill_uniform; for --decode a
 * model_new model filled the same way): timings, not quality.
 * Peaks: bf16 from device_query's table ("unknown" when not listed) and
 * the datasheet bandwidth for the H200 (4.8 TB/s) or, for other parts,
 * the one computed from the memory clock and bus width. */
#include "util.h"

#ifdef HAT_CUDA
#include "generate.h"
#include "generate_cuda.h"
#include "kernels.h"
#include "model.h"
#include "rng.h"
#include "cuda/device.h"
#include "cuda/kernels_cuda.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char name[64];
    int  V, C, I, L, H, KV, D, B, T;   /* T = cached context for decode */
} shape;

static device_info dev;
static double peak_tf, peak_bw;        /* TFLOP/s, bytes/s */

static void json_peak(void)
{
    if (peak_tf > 0) printf("%.1f", peak_tf);
    else printf("null");
}

/* ------------------------------------------------------------ matmul */

static double time_matmul(int N, int C, int OC, int bf, int bwd, int reps)
{
    size_t ni = (size_t)N * C, nw = (size_t)OC * C, no = (size_t)N * OC;
    float *fi = device_malloc(ni * 4), *fw = device_malloc(nw * 4), *fo = device_malloc(no * 4);
    float *fdw = bwd ? device_malloc(nw * 4) : NULL;
    cuda_fill_uniform(fi, ni, 1, -1, 1);
    cuda_fill_uniform(fw, nw, 2, -1, 1);
    cuda_fill_uniform(fo, no, 3, -1, 1);
    hat_bf16 *hi = NULL, *hw = NULL, *ho = NULL, *hdi = NULL;
    if (bf) {
        hi = device_malloc(ni * 2), hw = device_malloc(nw * 2), ho = device_malloc(no * 2);
        hdi = bwd ? device_malloc(ni * 2) : NULL;
        cuda_f32_to_bf16(hi, fi, ni);
        cuda_f32_to_bf16(hw, fw, nw);
        cuda_f32_to_bf16(ho, fo, no);
    }
    double t = 0;
    for (int r = -2; r < reps; r++) {            /* two warm-ups */
        void *tm = device_timer_start();
        if (bf && !bwd) cuda_matmul_forward_bf16(ho, hi, hw, N, C, OC, 0.0f);
        else if (bf) cuda_matmul_backward_bf16(hdi, fdw, ho, hi, hw, N, C, OC);
        else if (!bwd) cuda_matmul_forward(fo, fi, fw, N, C, OC, 0.0f);
        else cuda_matmul_backward(fi, fdw, fo, fi, fw, N, C, OC);
        double s = device_timer_stop(tm);
        if (r >= 0) t += s;
    }
    device_free(fi); device_free(fw); device_free(fo); device_free(fdw);
    device_free(hi); device_free(hw); device_free(ho); device_free(hdi);
    return t / reps;
}

static void bench_matmul(void)
{
    static const struct { int N, C, OC, bf, bwd; } cases[] = {
        { 8192, 8192, 8192, 1, 0 }, { 16384, 2048, 6144, 1, 0 }, { 16384, 2048, 6144, 1, 1 },
        { 8192, 2048, 32768, 1, 0 }, { 4096, 4096, 4096, 0, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int N = cases[i].N, C = cases[i].C, OC = cases[i].OC;
        double s = time_matmul(N, C, OC, cases[i].bf, cases[i].bwd, 10);
        double fl = 2.0 * N * C * OC * (cases[i].bwd ? 2 : 1), tf = fl / s / 1e12;
        printf("{\"bench\":\"gpu_matmul\",\"dtype\":\"%s\",\"pass\":\"%s\",\"N\":%d,\"C\":%d,\"OC\":%d,"
               "\"ms\":%.4f,\"tflops\":%.1f,\"peak_bf16_tflops\":", cases[i].bf ? "bf16" : "fp32",
               cases[i].bwd ? "backward" : "forward", N, C, OC, s * 1e3, tf);
        json_peak();
        if (cases[i].bf && peak_tf > 0) printf(",\"of_peak\":%.3f", tf / peak_tf);
        printf("}\n");
        fflush(stdout);
    }
    size_t n = (size_t)1 << 29;                  /* 2 GiB copied */
    char *a = device_malloc(n), *b = device_malloc(n);
    double t = 0;
    for (int r = -1; r < 5; r++) {
        void *tm = device_timer_start();
        device_copy(b, a, n);
        double s = device_timer_stop(tm);
        if (r >= 0) t += s;
    }
    t /= 5;
    printf("{\"bench\":\"gpu_copy\",\"bytes\":%zu,\"ms\":%.3f,\"gbs_read_plus_write\":%.0f,"
           "\"peak_gbs\":%.0f}\n", n, t * 1e3, 2.0 * n / t / 1e9, peak_bw / 1e9);
    device_free(a);
    device_free(b);
}

/* ------------------------------------------------------------ the model */

typedef struct {   /* offsets (floats) of one layer's tensors in the flat buffers */
    size_t in_norm, wq, wk, wv, wo, q_norm, k_norm, post_norm, wgate, wup, wdown;
} layer_off;

typedef struct {
    shape      s;
    size_t     n, n_matmul;       /* all parameters; those in matmuls */
    layer_off *lo;
    size_t     wte, norm, lm_head;
    float     *p, *g, *m, *v;     /* fp32 master, grads, moments */
    hat_bf16  *w;                 /* bf16 copy the kernels read */
    float     *cos_t, *sin_t;
} net;

static size_t take(size_t *n, size_t k) { size_t o = *n; *n += (k + 15) / 16 * 16; return o; }

static void net_new(net *x, const shape *s, int train, int P)
{
    memset(x, 0, sizeof *x);
    x->s = *s;
    size_t C = s->C, HD = (size_t)s->H * s->D, KD = (size_t)s->KV * s->D, I = s->I, n = 0;
    x->lo = xcalloc(s->L, sizeof *x->lo);
    for (int l = 0; l < s->L; l++) {
        layer_off *o = &x->lo[l];
        o->in_norm = take(&n, C), o->wq = take(&n, HD * C), o->wk = take(&n, KD * C);
        o->wv = take(&n, KD * C), o->wo = take(&n, C * HD), o->q_norm = take(&n, s->D);
        o->k_norm = take(&n, s->D), o->post_norm = take(&n, C), o->wgate = take(&n, I * C);
        o->wup = take(&n, I * C), o->wdown = take(&n, C * I);
    }
    x->wte = take(&n, (size_t)s->V * C), x->norm = take(&n, C), x->lm_head = take(&n, (size_t)s->V * C);
    x->n = n;
    x->n_matmul = (size_t)s->L * (2 * HD * C + 2 * KD * C + 3 * I * C) + (size_t)s->V * C;
    x->p = device_malloc(n * 4);
    x->w = device_malloc(n * 2);
    cuda_fill_uniform(x->p, n, 7, -0.02f, 0.02f);
    for (int l = 0; l < s->L; l++) {                 /* norms start at 1 */
        cuda_fill_uniform(x->p + x->lo[l].in_norm, C, 0, 1, 1);
        cuda_fill_uniform(x->p + x->lo[l].post_norm, C, 0, 1, 1);
        cuda_fill_uniform(x->p + x->lo[l].q_norm, s->D, 0, 1, 1);
        cuda_fill_uniform(x->p + x->lo[l].k_norm, s->D, 0, 1, 1);
    }
    cuda_fill_uniform(x->p + x->norm, C, 0, 1, 1);
    cuda_f32_to_bf16(x->w, x->p, n);
    if (train) {
        x->g = device_malloc(n * 4), x->m = device_malloc(n * 4), x->v = device_malloc(n * 4);
    }
    float *c = xmalloc((size_t)P * s->D / 2 * 4), *sn = xmalloc((size_t)P * s->D / 2 * 4);
    rope_table(c, sn, P, s->D, 1e6);
    x->cos_t = device_malloc((size_t)P * s->D / 2 * 4);
    x->sin_t = device_malloc((size_t)P * s->D / 2 * 4);
    device_upload(x->cos_t, c, (size_t)P * s->D / 2 * 4);
    device_upload(x->sin_t, sn, (size_t)P * s->D / 2 * 4);
    free(c);
    free(sn);
}

static void net_free(net *x)
{
    device_free(x->p); device_free(x->w); device_free(x->g); device_free(x->m); device_free(x->v);
    device_free(x->cos_t); device_free(x->sin_t);
    free(x->lo);
}

#define W(off) (x->w + (off))
#define G(off) (x->g + (off))

/* ------------------------------------------------------------ training */

typedef struct {   /* one layer's saved activations (bf16) and statistics */
    hat_bf16 *ln1, *q, *k, *v, *qn, *kn, *atty, *res1, *ln2, *gate, *up, *act, *res2;
    float    *rstd1, *rstd2, *q_rstd, *k_rstd, *lse;
} acts;

static void *dm16(size_t n) { return device_malloc(n * 2); }
static void *dm32(size_t n) { return device_malloc(n * 4); }

static void bench_train(const shape *s, int steps)
{
    net x_, *x = &x_;
    net_new(x, s, 1, s->T);
    int B = s->B, T = s->T, N = B * T, C = s->C, I = s->I, H = s->H, KV = s->KV, D = s->D, V = s->V;
    size_t HD = (size_t)H * D, KD = (size_t)KV * D;
    acts *a = xcalloc(s->L, sizeof *a);
    for (int l = 0; l < s->L; l++) {
        a[l].ln1 = dm16((size_t)N * C), a[l].q = dm16(N * HD), a[l].k = dm16(N * KD);
        a[l].v = dm16(N * KD), a[l].qn = dm16(N * HD), a[l].kn = dm16(N * KD);
        a[l].atty = dm16(N * HD), a[l].res1 = dm16((size_t)N * C), a[l].ln2 = dm16((size_t)N * C);
        a[l].gate = dm16((size_t)N * I), a[l].up = dm16((size_t)N * I), a[l].act = dm16((size_t)N * I);
        a[l].res2 = dm16((size_t)N * C);
        a[l].rstd1 = dm32(N), a[l].rstd2 = dm32(N), a[l].q_rstd = dm32((size_t)N * H);
        a[l].k_rstd = dm32((size_t)N * KV), a[l].lse = dm32((size_t)B * H * T);
    }
    hat_bf16 *emb = dm16((size_t)N * C), *lnf = dm16((size_t)N * C), *logits = dm16((size_t)N * V);
    float *rstdf = dm32(N), *losses = dm32(N), *lse = dm32(N);
    hat_bf16 *dres = dm16((size_t)N * C), *dln = dm16((size_t)N * C), *dI1 = dm16((size_t)N * I);
    hat_bf16 *dI2 = dm16((size_t)N * I), *dI3 = dm16((size_t)N * I), *dq = dm16(N * HD);
    hat_bf16 *dq2 = dm16(N * HD), *dk = dm16(N * KD), *dk2 = dm16(N * KD), *dv = dm16(N * KD);
    hat_bf16 *datt = dm16(N * HD);
    float *scr = dm32(cuda_attention_scratch_floats(B, T, H));
    int *tok = xmalloc(N * sizeof(int)), *pos = xmalloc(N * sizeof(int));
    for (int i = 0; i < N; i++) tok[i] = (int)(((uint64_t)i * 2654435761u) % V), pos[i] = i % T;
    int *dtok = dm32(N), *dtgt = dm32(N), *dpos = dm32(N);
    device_upload(dtok, tok, N * sizeof(int));
    device_upload(dpos, pos, N * sizeof(int));
    for (int i = 0; i < N; i++) tok[i] = (i + 1) % T ? tok[(i + 1) % N] : -1;   /* next token */
    device_upload(dtgt, tok, N * sizeof(int));

    double total = 0, loss = 0;
    for (int step = -2; step < steps; step++) {          /* two warm-ups */
        void *tm = device_timer_start();
        device_zero(x->g, x->n * 4);
        cuda_embedding_forward_bf16(emb, dtok, W(x->wte), N, C);
        for (int l = 0; l < s->L; l++) {
            layer_off *o = &x->lo[l];
            acts *A = &a[l];
            hat_bf16 *in = l ? a[l - 1].res2 : emb;
            cuda_rmsnorm_forward_bf16(A->ln1, A->rstd1, in, W(o->in_norm), N, C, 1e-6f);
            cuda_matmul_forward_bf16(A->q, A->ln1, W(o->wq), N, C, HD, 0);
            cuda_matmul_forward_bf16(A->k, A->ln1, W(o->wk), N, C, KD, 0);
            cuda_matmul_forward_bf16(A->v, A->ln1, W(o->wv), N, C, KD, 0);
            cuda_rmsnorm_forward_bf16(A->qn, A->q_rstd, A->q, W(o->q_norm), N * H, D, 1e-6f);
            cuda_rmsnorm_forward_bf16(A->kn, A->k_rstd, A->k, W(o->k_norm), N * KV, D, 1e-6f);
            cuda_rope_forward_bf16(A->qn, dpos, x->cos_t, x->sin_t, N, H, D);
            cuda_rope_forward_bf16(A->kn, dpos, x->cos_t, x->sin_t, N, KV, D);
            cuda_attention_forward_bf16(A->atty, A->lse, scr, A->qn, A->kn, A->v, B, T, H, KV, D);
            cuda_matmul_forward_bf16(A->res1, A->atty, W(o->wo), N, HD, C, 0);
            cuda_add_forward_bf16(A->res1, A->res1, in, (size_t)N * C);
            cuda_rmsnorm_forward_bf16(A->ln2, A->rstd2, A->res1, W(o->post_norm), N, C, 1e-6f);
            cuda_matmul_forward_bf16(A->gate, A->ln2, W(o->wgate), N, C, I, 0);
            cuda_matmul_forward_bf16(A->up, A->ln2, W(o->wup), N, C, I, 0);
            cuda_swiglu_forward_bf16(A->act, A->gate, A->up, (size_t)N * I);
            cuda_matmul_forward_bf16(A->res2, A->act, W(o->wdown), N, I, C, 0);
            cuda_add_forward_bf16(A->res2, A->res2, A->res1, (size_t)N * C);
        }
        hat_bf16 *top = a[s->L - 1].res2;
        cuda_rmsnorm_forward_bf16(lnf, rstdf, top, W(x->norm), N, C, 1e-6f);
        cuda_matmul_forward_bf16(logits, lnf, W(x->lm_head), N, C, V, 0);
        cuda_crossentropy_forward_bf16(losses, lse, logits, dtgt, N, V);
        cuda_crossentropy_backward_bf16(logits, logits, lse, dtgt, N, V, 1.0f / N);
        /* backward */
        device_zero(dln, (size_t)N * C * 2);
        cuda_matmul_backward_bf16(dln, G(x->lm_head), logits, lnf, W(x->lm_head), N, C, V);
        device_zero(dres, (size_t)N * C * 2);
        cuda_rmsnorm_backward_bf16(dres, G(x->norm), dln, top, W(x->norm), rstdf, N, C);
        for (int l = s->L - 1; l >= 0; l--) {
            layer_off *o = &x->lo[l];
            acts *A = &a[l];
            hat_bf16 *in = l ? a[l - 1].res2 : emb;
            device_zero(dI3, (size_t)N * I * 2);
            cuda_matmul_backward_bf16(dI3, G(o->wdown), dres, A->act, W(o->wdown), N, I, C);
            device_zero(dI1, (size_t)N * I * 2);
            device_zero(dI2, (size_t)N * I * 2);
            cuda_swiglu_backward_bf16(dI1, dI2, dI3, A->gate, A->up, (size_t)N * I);
            device_zero(dln, (size_t)N * C * 2);
            cuda_matmul_backward_bf16(dln, G(o->wgate), dI1, A->ln2, W(o->wgate), N, C, I);
            cuda_matmul_backward_bf16(dln, G(o->wup), dI2, A->ln2, W(o->wup), N, C, I);
            cuda_rmsnorm_backward_bf16(dres, G(o->post_norm), dln, A->res1, W(o->post_norm), A->rstd2, N, C);
            device_zero(datt, N * HD * 2);
            cuda_matmul_backward_bf16(datt, G(o->wo), dres, A->atty, W(o->wo), N, HD, C);
            device_zero(dq, N * HD * 2);
            device_zero(dk, N * KD * 2);
            device_zero(dv, N * KD * 2);
            cuda_attention_backward_bf16(dq, dk, dv, scr, datt, A->atty, A->lse, A->qn, A->kn, A->v,
                                         B, T, H, KV, D);
            cuda_rope_backward_bf16(dq, dpos, x->cos_t, x->sin_t, N, H, D);
            cuda_rope_backward_bf16(dk, dpos, x->cos_t, x->sin_t, N, KV, D);
            device_zero(dq2, N * HD * 2);
            device_zero(dk2, N * KD * 2);
            cuda_rmsnorm_backward_bf16(dq2, G(o->q_norm), dq, A->q, W(o->q_norm), A->q_rstd, N * H, D);
            cuda_rmsnorm_backward_bf16(dk2, G(o->k_norm), dk, A->k, W(o->k_norm), A->k_rstd, N * KV, D);
            device_zero(dln, (size_t)N * C * 2);
            cuda_matmul_backward_bf16(dln, G(o->wq), dq2, A->ln1, W(o->wq), N, C, HD);
            cuda_matmul_backward_bf16(dln, G(o->wk), dk2, A->ln1, W(o->wk), N, C, KD);
            cuda_matmul_backward_bf16(dln, G(o->wv), dv, A->ln1, W(o->wv), N, C, KD);
            cuda_rmsnorm_backward_bf16(dres, G(o->in_norm), dln, in, W(o->in_norm), A->rstd1, N, C);
        }
        cuda_embedding_backward_bf16(G(x->wte), dres, dtok, N, C);
        double norm = sqrt(cuda_sumsq(x->g, x->n));     /* clip at 1, as the trainers do */
        if (norm > 1.0) cuda_scale_inplace(x->g, x->n, (float)(1.0 / norm));
        cuda_adamw_update_bf16(x->p, x->w, x->m, x->v, x->g, x->n, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f,
                               step + 3);
        double sec = device_timer_stop(tm);
        if (step >= 0) total += sec;
        if (step == steps - 1) {
            float *l = xmalloc(N * sizeof(float));
            device_download(l, losses, N * sizeof(float));
            for (int i = 0; i < N; i++) loss += l[i];
            loss /= N - B;                               /* the last position of each row has no target */
            free(l);
        }
    }
    double sec = total / steps, tps = N / sec;
    double flops = 6.0 * x->n_matmul * N + 6.0 * s->L * B * H * (double)T * T * D;
    printf("{\"bench\":\"gpu_train_step\",\"config\":\"%s\",\"params\":%zu,\"B\":%d,\"T\":%d,"
           "\"ms_per_step\":%.3f,\"tokens_per_s\":%.0f,\"model_tflops\":%.1f,\"peak_bf16_tflops\":",
           s->name, x->n, B, T, sec * 1e3, tps, flops / sec / 1e12);
    json_peak();
    if (peak_tf > 0) printf(",\"mfu\":%.3f", flops / sec / 1e12 / peak_tf);
    printf(",\"loss\":%.4f}\n", loss);
    fflush(stdout);

    for (int l = 0; l < s->L; l++) {
        void **p = (void **)&a[l];
        for (size_t k = 0; k < sizeof(acts) / sizeof(void *); k++) device_free(p[k]);
    }
    free(a);
    device_free(emb); device_free(lnf); device_free(logits); device_free(rstdf); device_free(losses);
    device_free(lse); device_free(dres); device_free(dln); device_free(dI1); device_free(dI2);
    device_free(dI3); device_free(dq); device_free(dq2); device_free(dk); device_free(dk2);
    device_free(dv); device_free(datt); device_free(scr); device_free(dtok); device_free(dtgt);
    device_free(dpos);
    free(tok); free(pos);
    net_free(x);
}

/* ------------------------------------------------------------ decoding */

/* A model_new model of the shape with hashed uniform(-0.02, 0.02)
 * matrices and unit norms, filled in parallel (model_init_random's
 * Box-Muller would take a minute for 2B parameters). */
static model *decode_model(const shape *s, int max_len)
{
    model_config c = {
        .vocab_size = s->V, .hidden_size = s->C, .intermediate_size = s->I, .n_layers = s->L,
        .n_heads = s->H, .n_kv_heads = s->KV, .head_dim = s->D, .rms_norm_eps = 1e-6,
        .rope_theta = 1e6, .max_position_embeddings = max_len, .tie_word_embeddings = 0,
        .n_mtp = 0, .mtp_loss_weight = 0.3, .bos_token_id = -1, .eos_token_id = -1,
    };
    model *m = model_new(&c);
    for (int i = 0; i < m->n_tensors; i++) {
        const model_tensor *t = &m->tensors[i];
        float *p = m->params + t->offset;
        if (t->ndim == 1) {
            for (size_t k = 0; k < t->numel; k++) p[k] = 1.0f;
            continue;
        }
        uint64_t salt = (uint64_t)(i + 1) << 40;
        #pragma omp parallel for schedule(static)
        for (size_t k = 0; k < t->numel; k++)
            p[k] = (float)((mix64(salt + k) >> 11) * 0x1p-53) * 0.04f - 0.02f;
    }
    return m;
}

/* Seconds per decoding step of R sequences (slots 0..R-1, context ctx0
 * already cached), greedy, sampling included: what a caller waits for.
 * Three warm-up steps first (with graphs, the first one captures). */
static double decode_steps(gen_cuda *g, int R, int ctx0, int n_new, int graphs)
{
    int tok[8], pos[8], slot[8], lr[8], ids[8];
    float lp[8];
    gen_params gp = { .temperature = 0, .top_k = 0, .top_p = 1, .max_tokens = 1, .eos = -1 };
    gen_cuda_set_graphs(g, graphs);
    for (int r = 0; r < R; r++) tok[r] = 1 + r, slot[r] = r, lr[r] = r;
    double t0 = 0;
    for (int t = -3; t < n_new; t++) {
        if (t == 0) t0 = hat_now();
        for (int r = 0; r < R; r++) pos[r] = ctx0 + (t < 0 ? 0 : t);
        gen_cuda_forward(g, tok, pos, slot, R, lr, R);
        gen_cuda_sample(g, 0, R, &gp, NULL, ids, lp);
        memcpy(tok, ids, R * sizeof(int));
    }
    return (hat_now() - t0) / n_new;
}

static void decode_line(const shape *s, const model *m, const char *path, int R, int graphs,
                        int n_new, double sec, size_t wbytes)
{
    double mid = s->T + n_new / 2.0, kv = 2.0 * 2 * s->L * mid * s->KV * s->D;   /* bf16 K and V */
    double bytes = (double)wbytes + R * kv, bound = peak_bw / bytes;            /* steps/s */
    printf("{\"bench\":\"gpu_decode\",\"config\":\"%s\",\"path\":\"%s\",\"params\":%zu,\"batch\":%d,"
           "\"ctx\":%d,\"new_tokens\":%d,\"graph\":%s,\"ms_per_token\":%.4f,\"tokens_per_s\":%.1f,"
           "\"bytes_per_token\":%.0f,\"bound_ms_per_token\":%.4f,\"bound_tokens_per_s\":%.1f,"
           "\"ratio_to_bound\":%.2f}\n",
           s->name, path, m->n_params, R, s->T, n_new, graphs ? "true" : "false", sec * 1e3,
           R / sec, bytes, 1e3 / bound, R * bound, bound * sec);
    fflush(stdout);
}

/* Decoding through the GPU engine's own path (common/generate_cuda.c):
 * bf16 weights and KV cache, GEMV kernels, flash-decoding attention, one
 * CUDA graph per step (and without, for comparison), device sampling;
 * batch 1 and batch 4.  Then the whole gen_engine (what generate
 * --device cuda runs): its decode tokens/s from gen_get_stats.  The
 * bound reads every bf16 matrix weight, one embedding row and the
 * cached K/V of each sequence once per step. */
static void bench_decode(const shape *s, int n_new)
{
    int ctx0 = s->T, S = ctx0 + n_new + 8, RB = 4;
    double t0 = hat_now();
    model *m = decode_model(s, S);
    const char *why = NULL;
    gen_cuda *g = gen_cuda_new(m, RB, S, GEN_CUDA_BF16, &why);
    if (!g) { fprintf(stderr, "gpu-bench: decode: %s\n", why); model_free(m); return; }
    size_t wbytes = gen_cuda_weight_bytes(g);
    int *tok = xmalloc(ctx0 * sizeof(int)), *pos = xmalloc(ctx0 * sizeof(int));
    int *slot = xmalloc(ctx0 * sizeof(int)), last = ctx0 - 1;
    for (int r = 0; r < RB; r++) {                       /* the cached context of each slot */
        for (int i = 0; i < ctx0; i++)
            tok[i] = (int)(mix64((uint64_t)r << 32 | (uint64_t)i) % (uint64_t)s->V), pos[i] = i, slot[i] = r;
        gen_cuda_forward(g, tok, pos, slot, ctx0, &last, 1);
    }
    device_sync();
    fprintf(stderr, "gpu-bench: decode %s: model and prefill ready in %.1f s\n", s->name, hat_now() - t0);
    for (int graphs = 1; graphs >= 0; graphs--)
        for (int R = 1; R <= RB; R += RB - 1)
            decode_line(s, m, "gen_cuda", R, graphs, n_new, decode_steps(g, R, ctx0, n_new, graphs), wbytes);
    gen_cuda_free(g);

    /* the engine: one prompt of ctx0 tokens, n_new tokens of pure decoding */
    gen_engine *e = gen_new_cuda(m, 1, S, GEN_CUDA_BF16, &why);
    if (e) {
        gen_params gp = { .temperature = 0, .top_k = 0, .top_p = 1, .max_tokens = n_new + 1, .eos = -1 };
        gen_add(e, tok, ctx0, &gp, 1, 0);
        while (gen_step(e)) {}
        gen_stats st = gen_get_stats(e);
        double sec = st.decode_tokens ? st.decode_s / st.decode_tokens : 0;
        decode_line(s, m, "gen_engine", 1, 1, (int)st.decode_tokens, sec, wbytes);
        printf("{\"bench\":\"gpu_prefill\",\"config\":\"%s\",\"tokens\":%d,\"ms\":%.2f,\"tokens_per_s\":%.0f}\n",
               s->name, ctx0, st.prefill_s * 1e3, ctx0 / st.prefill_s);
        fflush(stdout);
        gen_free(e);
    }
    free(tok); free(pos); free(slot);
    model_free(m);
}

static int parse_shape(const char *arg, shape *s, int decode)
{
    memset(s, 0, sizeof *s);
    const char *colon = strchr(arg, ':');
    if (!colon || colon - arg >= (long)sizeof s->name) return -1;
    memcpy(s->name, arg, colon - arg);
    int n = sscanf(colon + 1, "%d,%d,%d,%d,%d,%d,%d,%d,%d", &s->V, &s->C, &s->I, &s->L, &s->H,
                   &s->KV, &s->D, decode ? &s->T : &s->B, decode ? &s->B : &s->T);
    if (n != (decode ? 8 : 9)) return -1;
    if (decode) s->B = 1;
    if (s->V < 2 || s->C < 1 || s->I < 1 || s->L < 1 || s->H < 1 || s->KV < 1 || s->H % s->KV
        || s->D < 2 || s->D % 2 || s->B < 1 || s->T < 1)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    hat_prog = "gpu-bench";
    if (device_init(-1) != 0) return 1;
    device_query(&dev);
    peak_tf = dev.peak_bf16_tflops;
    peak_bw = strstr(dev.name, "H200") ? 4.8e12 : dev.mem_bw_gbs * 1e9;
    printf("{\"bench\":\"gpu_device\",\"name\":\"%s\",\"cc\":\"%d.%d\",\"sms\":%d,\"mem_gib\":%.1f,"
           "\"bw_gbs_used\":%.0f,\"bw_gbs_from_clock\":%.0f,\"peak_bf16_tflops\":",
           dev.name, dev.cc_major, dev.cc_minor, dev.sm_count, dev.mem_total / 1073741824.0,
           peak_bw / 1e9, dev.mem_bw_gbs);
    json_peak();
    printf("}\n");
    fflush(stdout);
    for (int i = 1; i < argc; i++) {
        shape s;
        if (!strcmp(argv[i], "--matmul")) bench_matmul();
        else if (!strcmp(argv[i], "--train") && i + 1 < argc && parse_shape(argv[i + 1], &s, 0) == 0)
            bench_train(&s, 5), i++;
        else if (!strcmp(argv[i], "--decode") && i + 1 < argc && parse_shape(argv[i + 1], &s, 1) == 0)
            bench_decode(&s, 64), i++;
        else {
            fprintf(stderr, "usage: bench [--matmul] [--train NAME:V,C,I,L,H,KV,D,B,T]... "
                            "[--decode NAME:V,C,I,L,H,KV,D,CTX]...\n");
            return 2;
        }
    }
    device_shutdown();
    return 0;
}

#else
#include <stdio.h>
int main(void)
{
    fprintf(stderr, "gpu-bench: built without CUDA (make CUDA=1 gpu-bench)\n");
    return 1;
}
#endif
