/* test_model_cuda.c — the GPU model (common/model_cuda.c) against the CPU
 * model (common/model.c) on tiny random Qwen3s with an MTP head, untied
 * and tied.
 *
 * CPU-side tests run everywhere: --precision names, "no GPU" and "no CUDA
 * build" handling of model_cuda_new / train_device_open, the refusal of a
 * data-parallel launch on the CPU, and the 30-step CPU reference run the
 * GPU run is compared with (so the data is known to be learnable).
 * GPU tests run only where a GPU is present and otherwise print
 * "ok - NAME # skip REASON".  Tolerances, and why:
 *   fp32 path (cuda_X, fp32 cuBLAS without TF32): kernels agree with the
 *     CPU to ~1e-6 relative; through a 2-layer model + MTP:
 *       loss             1e-5 relative
 *       every gradient   1e-4 of the tensor's max |CPU gradient|
 *       logits           1e-5 of max |CPU logit|
 *       AdamW (same gradients in): params and moments 1e-6 of the
 *         tensor's max |value| (only FMA contraction and operation order
 *         differ)
 *       30-step run      loss per step within 1e-3 relative of the CPU's
 *         (Adam normalises small gradient differences upward, so the
 *         curves drift apart slowly, not at rounding level)
 *   bf16 path (bf16 weights/activations, 8-bit mantissa, step 2^-8):
 *       loss             2e-2 relative
 *       every gradient   cosine similarity with the CPU's > 0.99
 *       30-step run      loss lowered as the CPU's: final loss within
 *         5e-2 relative of the CPU's final loss
 *   a forward-only copy's logits are the trainable copy's, bit for bit;
 *   upload/download round trip: bit-exact; a checkpoint written after GPU
 *   steps reloads bit-exactly on the CPU and its next CPU step matches the
 *   GPU's next step (params 1e-5 of max |param|); data parallelism with a
 *   world of 1 (a real one-rank NCCL communicator) gives bit-identical
 *   steps to no communicator.
 * Measured worst errors are printed as "# ..." lines (TAP comments). */
#include "test.h"
#include "ckpt.h"
#include "kernels.h"
#include "model.h"
#include "model_cuda.h"
#include "optim.h"
#include "rng.h"
#include "train.h"
#include "util.h"
#include "cuda/device.h"

#include <stdlib.h>
#include <string.h>

#ifdef HAT_CUDA
#include "cuda/kernels_cuda.h"
#endif

static model_config tiny_cfg(int tied, int mtp)
{
    model_config c = { .vocab_size = 61, .hidden_size = 48, .intermediate_size = 80, .n_layers = 2,
                       .n_heads = 4, .n_kv_heads = 2, .head_dim = 12, .rms_norm_eps = 1e-6,
                       .rope_theta = 10000, .tie_word_embeddings = tied,
                       .max_position_embeddings = 128, .n_mtp = mtp, .mtp_loss_weight = 0.3,
                       .bos_token_id = -1, .eos_token_id = -1 };
    return c;
}

/* A learnable corpus: each sequence follows x -> (5x + 3) mod V from a
 * random start, lengths 10..33, every token after the first a target. */
static train_data pattern_data(int V, int n, uint64_t seed)
{
    train_data d = { 0 };
    rng_t r;
    rng_seed(&r, seed);
    d.n = n;
    d.seq = xcalloc(n, sizeof *d.seq);
    for (int i = 0; i < n; i++) {
        train_seq *q = &d.seq[i];
        q->n = 10 + (int)(rng_uniform(&r) * 24);
        q->ids = xmalloc(q->n * sizeof(int));
        q->mask = xmalloc(q->n);
        q->ids[0] = (int)(rng_uniform(&r) * V);
        for (int t = 1; t < q->n; t++) q->ids[t] = (q->ids[t - 1] * 5 + 3) % V;
        for (int t = 0; t < q->n; t++) q->mask[t] = t > 0;
    }
    return d;
}

static train_state tiny_state(void)
{
    train_state s = { .B = 4, .T = 32, .accum = 2, .bucket = 1, .seed = 3 };
    optim_defaults(&s.opt);
    s.opt.lr = 3e-3f;
    s.opt.warmup = 3;
    s.opt.total_steps = 30;
    rng_seed(&s.rng, 3);
    return s;
}

#define RUN_STEPS 30

/* The CPU reference curve: the GPU runs are compared with it. */
static void cpu_curve(int tied, int mtp, double *loss)
{
    model_config c = tiny_cfg(tied, mtp);
    model *m = model_new(&c);
    model_init_random(m, 11, 0.1f);
    train_data d = pattern_data(c.vocab_size, 40, 5);
    float *ea = xcalloc(m->n_floats, sizeof(float)), *eas = xcalloc(m->n_floats, sizeof(float));
    train_state s = tiny_state();
    for (int i = 0; i < RUN_STEPS; i++) {
        train_result r;
        train_step(m, ea, eas, &d, &s, &r);
        loss[i] = r.loss;
    }
    free(ea);
    free(eas);
    train_data_free(&d);
    model_free(m);
}

/* ================================================== CPU-side tests */

static void precision_names(void)
{
    CHECK_EQ_INT(model_cuda_precision_parse("fp32"), MC_FP32);
    CHECK_EQ_INT(model_cuda_precision_parse("bf16"), MC_BF16);
    CHECK_EQ_INT(model_cuda_precision_parse("fp16"), -1);
    CHECK_EQ_INT(model_cuda_precision_parse(NULL), -1);
    CHECK_STR(model_cuda_precision_name(MC_BF16), "bf16");
    CHECK_STR(model_cuda_precision_name(MC_FP32), "fp32");
}

/* The data is learnable and the CPU run lowers the loss a lot: the GPU
 * comparison below is then about training, not about noise. */
static void cpu_reference_run_learns(void)
{
    double l[RUN_STEPS];
    cpu_curve(0, 1, l);
    printf("# cpu reference (untied, mtp): loss %.4f -> %.4f over %d steps\n", l[0], l[RUN_STEPS - 1], RUN_STEPS);
    CHECK(l[0] > 4.0);
    CHECK(l[RUN_STEPS - 1] < 0.6 * l[0]);
}

/* --device auto falls back to the CPU when no GPU is present; cuda fails
 * with a reason and leaves nothing behind; a data-parallel launch on the
 * CPU is refused. */
static void device_selection_without_gpu(void)
{
    model_config c = tiny_cfg(0, 1);
    ckpt k = { 0 };
    k.m = model_new(&c);
    k.opt_m = xcalloc(k.m->n_floats, sizeof(float));
    k.opt_v = xcalloc(k.m->n_floats, sizeof(float));
    train_device td;
    CHECK_EQ_INT(train_device_open(&td, &k, HAT_DEVICE_CPU, MC_BF16, 1), 0);
    CHECK_EQ_INT(td.cuda, 0);
    CHECK_STR(train_device_name(&td), "cpu");
    train_device_close(&td);
    if (device_available() == 0) {
        CHECK(model_cuda_new(k.m, MC_FP32) == NULL);
        CHECK_EQ_INT(train_device_open(&td, &k, HAT_DEVICE_CUDA, MC_BF16, 1), -1);
        CHECK(td.mc == NULL && td.cuda == 0);
        CHECK_EQ_INT(train_device_open(&td, &k, HAT_DEVICE_AUTO, MC_BF16, 1), 0);
        CHECK_EQ_INT(td.cuda, 0);
        train_device_close(&td);
    }
    setenv("HAT_WORLD_SIZE", "2", 1);
    setenv("HAT_RANK", "1", 1);
    CHECK_EQ_INT(train_device_open(&td, &k, HAT_DEVICE_CPU, MC_FP32, 2), -1);
    setenv("HAT_RANK", "2", 1);                       /* rank out of range */
    int r, w;
    CHECK_EQ_INT(model_cuda_dist_env(&r, &w), -1);
    unsetenv("HAT_WORLD_SIZE");
    unsetenv("HAT_RANK");
    CHECK_EQ_INT(model_cuda_dist_env(&r, &w), 0);
    CHECK_EQ_INT(r, 0);
    CHECK_EQ_INT(w, 1);
    ckpt_free(&k);
}

/* train_step_on on the CPU is train_step, bit for bit. */
static void cpu_step_on_is_train_step(void)
{
    model_config c = tiny_cfg(0, 1);
    ckpt k = { 0 };
    k.m = model_new(&c);
    model_init_random(k.m, 11, 0.1f);
    model *m2 = model_new(&c);
    memcpy(m2->params, k.m->params, k.m->n_floats * sizeof(float));
    k.opt_m = xcalloc(k.m->n_floats, sizeof(float));
    k.opt_v = xcalloc(k.m->n_floats, sizeof(float));
    float *ea = xcalloc(k.m->n_floats, sizeof(float)), *eas = xcalloc(k.m->n_floats, sizeof(float));
    train_data d = pattern_data(c.vocab_size, 20, 5);
    train_state s1 = tiny_state(), s2 = tiny_state();
    train_device td;
    CHECK_EQ_INT(train_device_open(&td, &k, HAT_DEVICE_CPU, MC_FP32, 2), 0);
    for (int i = 0; i < 3; i++) {
        train_result r1, r2;
        train_step_on(&td, &k, &d, &s1, &r1);
        train_step(m2, ea, eas, &d, &s2, &r2);
        CHECK(r1.loss == r2.loss);
    }
    CHECK(!memcmp(k.m->params, m2->params, k.m->n_floats * sizeof(float)));
    CHECK(!memcmp(k.opt_v, eas, k.m->n_floats * sizeof(float)));
    train_device_close(&td);
    free(ea);
    free(eas);
    model_free(m2);
    train_data_free(&d);
    ckpt_free(&k);
}

/* ================================================== GPU tests */

#ifdef HAT_CUDA
static double cosine(const float *a, const float *b, size_t n)
{
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    if (aa == 0 && bb == 0) return 1;
    return ab / sqrt(fmax(aa * bb, 1e-300));
}

/* Every tensor of `got` (laid out like m->params) against `want`:
 * relative error <= tol (tol > 0), or cosine >= -tol (tol < 0).  Each
 * failing tensor is named with its number; the worst is printed. */
static int compare_tensors(const model *m, const float *got, const float *want, double tol,
                           const char *what)
{
    int bad = 0;
    double worst = tol > 0 ? 0 : 1;
    const char *worst_name = "";
    for (int i = 0; i < m->n_tensors; i++) {
        const model_tensor *t = &m->tensors[i];
        double v = tol > 0 ? test_rel_err(got + t->offset, want + t->offset, t->numel)
                           : cosine(got + t->offset, want + t->offset, t->numel);
        int fail = tol > 0 ? !(v <= tol) : !(v >= -tol);
        if (tol > 0 ? v > worst : v < worst) { worst = v; worst_name = t->name; }
        if (fail) {
            fprintf(stderr, "  %s: %s: %s %.3g (limit %.3g)\n", what, t->name,
                    tol > 0 ? "max rel err" : "cosine", v, fabs(tol));
            bad++;
        }
    }
    printf("# %s: worst %s %.3g (%s)\n", what, tol > 0 ? "rel err" : "cosine", worst, worst_name);
    return bad;
}

static void random_batch(int *tok, int *tgt, int n, int V, rng_t *r)
{
    for (int i = 0; i < n; i++) {
        tok[i] = (int)(rng_uniform(r) * V);
        tgt[i] = rng_uniform(r) < 0.2 ? -1 : (int)(rng_uniform(r) * V);
    }
}

static float *dl(const float *dev, size_t n)
{
    float *h = xmalloc(n * sizeof(float));
    device_download(h, dev, n * sizeof(float));
    return h;
}

/* Two micro-batches (B=3: T=17, then T=9 in the buffers sized for 17),
 * gradients accumulated, against model.c.  fp32: 1e-5 loss, 1e-4 grads;
 * bf16: 2e-2 loss, cosine 0.99. */
static void fwd_bwd_case(int tied, int precision)
{
    model_config c = tiny_cfg(tied, 1);
    model *m = model_new(&c);
    model_init_random(m, 7, 0.2f);
    model_alloc_grads(m);
    model_zero_grad(m);
    model_cuda *d = model_cuda_new(m, precision);
    CHECK(d != NULL);
    if (!d) { model_free(m); return; }
    model_cuda_zero_grad(d);
    rng_t r;
    rng_seed(&r, 99);
    static const int Ts[2] = { 17, 9 };
    int B = 3, tok[3 * 17], tgt[3 * 17];
    double ltol = precision == MC_BF16 ? 2e-2 : 1e-5;
    char what[96];
    for (int k = 0; k < 2; k++) {
        int T = Ts[k];
        random_batch(tok, tgt, B * T, c.vocab_size, &r);
        float lc = model_forward(m, tok, tgt, B, T);
        float lg = model_cuda_forward(d, tok, tgt, B, T);
        printf("# %s %s T=%d: loss cpu %.7f gpu %.7f (rel %.2g)\n", tied ? "tied" : "untied",
               model_cuda_precision_name(precision), T, lc, lg, fabs(lg - lc) / lc);
        CHECK(fabs(lg - lc) <= ltol * fabs(lc));
        CHECK_EQ_INT(d->n_targets, m->n_targets);
        CHECK_EQ_INT(d->n_mtp_targets, m->n_mtp_targets);
        CHECK(m->n_mtp_targets > 0);
        model_backward_mean(m);
        model_cuda_backward_mean(d);
    }
    float *g = dl(d->grads, m->n_floats);
    snprintf(what, sizeof what, "%s %s grads", tied ? "tied" : "untied", model_cuda_precision_name(precision));
    CHECK_EQ_INT(compare_tensors(m, g, m->grads, precision == MC_BF16 ? -0.99 : 1e-4, what), 0);
    free(g);
    model_cuda_free(d);
    model_free(m);
}

static void gpu_fp32_forward_backward_untied(void) { fwd_bwd_case(0, MC_FP32); }
static void gpu_fp32_forward_backward_tied(void) { fwd_bwd_case(1, MC_FP32); }
static void gpu_bf16_forward_backward_untied(void) { fwd_bwd_case(0, MC_BF16); }
static void gpu_bf16_forward_backward_tied(void) { fwd_bwd_case(1, MC_BF16); }

/* The same gradients in, then clipping and two AdamW steps: the GPU
 * optimiser is the CPU's (decay only on matrices, bias correction, t). */
static void gpu_adamw_matches_cpu(void)
{
    model_config c = tiny_cfg(0, 1);
    model *m = model_new(&c);
    model_init_random(m, 7, 0.2f);
    model_alloc_grads(m);
    model_cuda *d = model_cuda_new(m, MC_FP32);
    CHECK(d != NULL);
    if (!d) { model_free(m); return; }
    size_t n = m->n_floats;
    float *ea = xcalloc(n, sizeof(float)), *eas = xcalloc(n, sizeof(float));
    optim_config o;
    optim_defaults(&o);
    o.weight_decay = 0.1f;
    rng_t r;
    rng_seed(&r, 5);
    for (int t = 1; t <= 2; t++) {
        model_zero_grad(m);
        for (int i = 0; i < m->n_tensors; i++) {          /* padding stays zero */
            const model_tensor *mt = &m->tensors[i];
            for (size_t j = 0; j < mt->numel; j++) m->grads[mt->offset + j] = (float)(rng_normal(&r) * 0.05);
        }
        device_upload(d->grads, m->grads, n * sizeof(float));
        double nc = grad_clip(m, 0.5f), ng = model_cuda_grad_clip(d, 0.5f);
        CHECK(nc > 0.5);                                  /* clipping did act */
        CHECK(fabs(nc - ng) <= 1e-9 * nc);
        float lr = 1e-2f * t;
        adamw_step(m, ea, eas, &o, lr, t);
        model_cuda_adamw_step(d, &o, lr, t);
    }
    float *p = xmalloc(n * sizeof(float)), *gm = xmalloc(n * sizeof(float)), *gv = xmalloc(n * sizeof(float));
    model_cuda_download(d, p, NULL, gm, gv);
    CHECK_EQ_INT(compare_tensors(m, p, m->params, 1e-6, "adamw params"), 0);
    CHECK_EQ_INT(compare_tensors(m, gm, ea, 1e-6, "adamw exp_avg"), 0);
    CHECK_EQ_INT(compare_tensors(m, gv, eas, 1e-6, "adamw exp_avg_sq"), 0);
    /* a norm (no decay) and a matrix (decay) both moved */
    CHECK(p[model_find(m, "model.norm.weight")->offset] != 1.0f);
    free(p); free(gm); free(gv); free(ea); free(eas);
    model_cuda_free(d);
    model_free(m);
}

/* forward_logits / backward_dlogits against model.c, with a dlogits that
 * touches only some rows (the others zero, as the callers promise). */
static void logits_case(int precision)
{
    model_config c = tiny_cfg(1, 1);
    model *m = model_new(&c);
    model_init_random(m, 8, 0.2f);
    model_alloc_grads(m);
    model_zero_grad(m);
    model_cuda *d = model_cuda_new(m, precision);
    CHECK(d != NULL);
    if (!d) { model_free(m); return; }
    model_cuda_zero_grad(d);
    int B = 2, T = 13, N = B * T, V = c.vocab_size, tok[26], tgt[26];
    rng_t r;
    rng_seed(&r, 4);
    random_batch(tok, tgt, N, V, &r);
    float *zc = model_forward_logits(m, tok, B, T);
    float *zg = model_cuda_forward_logits(d, tok, B, T);
    double e = test_rel_err(zg, zc, (size_t)N * V);
    printf("# logits %s: rel err %.3g\n", model_cuda_precision_name(precision), e);
    CHECK(e <= (precision == MC_BF16 ? 2e-2 : 1e-5));
    /* a forward-only copy (teacher, reference) gives the same bits */
    model_cuda *f = model_cuda_new_frozen(m, precision);
    CHECK(f && !f->grads && !f->exp_avg && !f->exp_avg_sq);
    if (f) {
        float *zf = model_cuda_forward_logits(f, tok, B, T);
        CHECK(zf != zg && !memcmp(zf, zg, (size_t)N * V * sizeof(float)));
        model_cuda_free(f);
    }
    float *dz = xcalloc((size_t)N * V, sizeof(float));
    for (int i = 0; i < N; i++) {
        if (i % 3 == 0) continue;
        for (int v = 0; v < V; v++) dz[(size_t)i * V + v] = (float)(rng_normal(&r) * 0.01);
    }
    model_backward_dlogits(m, dz);
    model_cuda_backward_dlogits(d, dz);
    float *g = dl(d->grads, m->n_floats);
    /* MTP tensors get no gradient on either side */
    CHECK(test_rel_err(g + model_find(m, "mtp.fc.weight")->offset, m->grads + model_find(m, "mtp.fc.weight")->offset,
                  model_find(m, "mtp.fc.weight")->numel) == 0);
    char what[64];
    snprintf(what, sizeof what, "dlogits %s grads", model_cuda_precision_name(precision));
    CHECK_EQ_INT(compare_tensors(m, g, m->grads, precision == MC_BF16 ? -0.99 : 1e-4, what), 0);
    free(g);
    free(dz);
    model_cuda_free(d);
    model_free(m);
}

static void gpu_fp32_logits_and_dlogits(void) { logits_case(MC_FP32); }
static void gpu_bf16_logits_and_dlogits(void) { logits_case(MC_BF16); }

/* Upload then download is bit-exact; the bf16 copy is bf16(params). */
static void gpu_upload_download_roundtrip(void)
{
    model_config c = tiny_cfg(0, 1);
    model *m = model_new(&c);
    model_init_random(m, 9, 0.3f);
    model_cuda *d = model_cuda_new(m, MC_BF16);
    CHECK(d != NULL);
    if (!d) { model_free(m); return; }
    size_t n = m->n_floats;
    float *a = xmalloc(n * 4), *b = xmalloc(n * 4), *p = xmalloc(n * 4), *va = xmalloc(n * 4), *vb = xmalloc(n * 4);
    rng_t r;
    rng_seed(&r, 1);
    for (size_t i = 0; i < n; i++) a[i] = (float)rng_normal(&r), b[i] = (float)rng_uniform(&r);
    model_cuda_upload_moments(d, a, b);
    model_cuda_download(d, p, NULL, va, vb);
    CHECK(!memcmp(p, m->params, n * 4));
    CHECK(!memcmp(va, a, n * 4));
    CHECK(!memcmp(vb, b, n * 4));
    unsigned long v0 = m->version;
    model_cuda_upload(d, a);
    model_cuda_download(d, m->params, NULL, NULL, NULL);
    CHECK(!memcmp(m->params, a, n * 4));
    CHECK(m->version == v0 + 1);
    hat_bf16 *h16 = xmalloc(n * sizeof(hat_bf16));
    device_download(h16, d->params16, n * sizeof(hat_bf16));
    size_t mism = 0;
    for (size_t i = 0; i < n; i++) mism += h16[i] != bf16_from_float(a[i]);
    CHECK_EQ_INT(mism, 0);
    free(h16); free(a); free(b); free(p); free(va); free(vb);
    model_cuda_free(d);
    model_free(m);
}

/* 30 steps of train_step_on (accum 2, length buckets: micro-batches of
 * varying T) from the CPU run's initial state: fp32 tracks the CPU curve,
 * bf16 lowers the loss as far. */
static void run_case(int tied, int precision, const double *cpu)
{
    model_config c = tiny_cfg(tied, 1);
    ckpt k = { 0 };
    k.m = model_new(&c);
    model_init_random(k.m, 11, 0.1f);
    k.opt_m = xcalloc(k.m->n_floats, sizeof(float));
    k.opt_v = xcalloc(k.m->n_floats, sizeof(float));
    train_data d = pattern_data(c.vocab_size, 40, 5);
    train_state s = tiny_state();
    train_device td;
    CHECK_EQ_INT(train_device_open(&td, &k, HAT_DEVICE_CUDA, precision, s.accum), 0);
    if (!td.cuda) { train_data_free(&d); ckpt_free(&k); return; }
    double worst = 0, l[RUN_STEPS];
    for (int i = 0; i < RUN_STEPS; i++) {
        train_result r;
        train_step_on(&td, &k, &d, &s, &r);
        l[i] = r.loss;
        worst = fmax(worst, fabs(l[i] - cpu[i]) / cpu[i]);
    }
    printf("# %s %s run: gpu loss %.4f -> %.4f, cpu %.4f -> %.4f, worst step rel diff %.3g\n",
           tied ? "tied" : "untied", model_cuda_precision_name(precision), l[0], l[RUN_STEPS - 1],
           cpu[0], cpu[RUN_STEPS - 1], worst);
    CHECK(l[RUN_STEPS - 1] < 0.6 * l[0]);
    if (precision == MC_FP32) CHECK(worst <= 1e-3);
    else CHECK(fabs(l[RUN_STEPS - 1] - cpu[RUN_STEPS - 1]) <= 5e-2 * cpu[RUN_STEPS - 1]);
    train_device_close(&td);
    train_data_free(&d);
    ckpt_free(&k);
}

static void gpu_fp32_training_run_tracks_cpu(void)
{
    double cpu[RUN_STEPS];
    cpu_curve(0, 1, cpu);
    run_case(0, MC_FP32, cpu);
    cpu_curve(1, 1, cpu);
    run_case(1, MC_FP32, cpu);
}

static void gpu_bf16_training_run_lowers_loss(void)
{
    double cpu[RUN_STEPS];
    cpu_curve(0, 1, cpu);
    run_case(0, MC_BF16, cpu);
}

/* 5 GPU steps, a checkpoint through train_save, reloaded on the CPU:
 * identical bytes of params, moments and state; then one more step on
 * each device agrees. */
static void gpu_checkpoint_resumes_on_cpu(void)
{
    model_config c = tiny_cfg(0, 1);
    ckpt k = { 0 };
    k.m = model_new(&c);
    model_init_random(k.m, 11, 0.1f);
    train_data d = pattern_data(c.vocab_size, 40, 5);
    train_state s = tiny_state();
    CHECK_EQ_INT(train_begin(&k, &s, 0, NULL, 3, RUN_STEPS, "test"), 0);
    train_device td;
    CHECK_EQ_INT(train_device_open(&td, &k, HAT_DEVICE_CUDA, MC_FP32, s.accum), 0);
    if (!td.cuda) { train_data_free(&d); ckpt_free(&k); return; }
    train_result r;
    for (int i = 0; i < 5; i++) train_step_on(&td, &k, &d, &s, &r);
    char path[600];
    snprintf(path, sizeof path, "%s/gpu.ckpt", test_tmpdir());
    train_device_sync(&td, &k);
    CHECK_EQ_INT(train_save(&k, &s, NULL, NULL, path), 0);
    ckpt k2;
    CHECK_EQ_INT(ckpt_load(&k2, path), 0);
    size_t n = k.m->n_floats;
    CHECK(!memcmp(k2.m->params, k.m->params, n * 4));
    CHECK(k2.opt_m && !memcmp(k2.opt_m, k.opt_m, n * 4));
    CHECK(k2.opt_v && !memcmp(k2.opt_v, k.opt_v, n * 4));
    train_state s2 = { 0 };
    CHECK_EQ_INT(train_begin(&k2, &s2, 1, NULL, 0, 0, path), 0);
    CHECK_EQ_INT(s2.step, 5);
    CHECK_EQ_INT(s2.data_pos, s.data_pos);
    train_result r2;
    train_step_on(&td, &k, &d, &s, &r);                   /* GPU */
    train_step(k2.m, k2.opt_m, k2.opt_v, &d, &s2, &r2);    /* CPU, from the file */
    printf("# resume: step 6 loss gpu %.7f cpu %.7f\n", r.loss, r2.loss);
    CHECK(fabs(r.loss - r2.loss) <= 1e-5 * r2.loss);
    train_device_sync(&td, &k);
    CHECK(test_rel_err(k.m->params, k2.m->params, n) <= 1e-5);
    train_device_close(&td);
    ckpt_free(&k2);
    train_data_free(&d);
    ckpt_free(&k);
}

/* Data parallelism through a real one-rank communicator: the same steps,
 * bit for bit, as without one. */
static void gpu_dist_world1_is_identity(void)
{
    model_config c = tiny_cfg(0, 1);
    ckpt k[2] = { { 0 }, { 0 } };
    train_device td[2];
    train_data d = pattern_data(c.vocab_size, 40, 5);
    train_state s[2] = { tiny_state(), tiny_state() };
    for (int i = 0; i < 2; i++) {
        k[i].m = model_new(&c);
        model_init_random(k[i].m, 11, 0.1f);
        k[i].opt_m = xcalloc(k[i].m->n_floats, sizeof(float));
        k[i].opt_v = xcalloc(k[i].m->n_floats, sizeof(float));
        CHECK_EQ_INT(train_device_open(&td[i], &k[i], HAT_DEVICE_CUDA, MC_BF16, 2), 0);
    }
    if (!td[0].cuda || !td[1].cuda) goto out;
    td[1].dist = model_cuda_dist_open();
    CHECK(td[1].dist != NULL);
    if (!td[1].dist) goto out;
    CHECK_EQ_INT(model_cuda_dist_world(td[1].dist), 1);
    CHECK_EQ_INT(model_cuda_dist_rank(td[1].dist), 0);
    for (int i = 0; i < 4; i++) {
        train_result r0, r1;
        train_step_on(&td[0], &k[0], &d, &s[0], &r0);
        train_step_on(&td[1], &k[1], &d, &s[1], &r1);
        CHECK(r0.loss == r1.loss && r0.grad_norm == r1.grad_norm);
    }
    train_device_sync(&td[0], &k[0]);
    train_device_sync(&td[1], &k[1]);
    CHECK(!memcmp(k[0].m->params, k[1].m->params, k[0].m->n_floats * 4));
    CHECK(!memcmp(k[0].opt_v, k[1].opt_v, k[0].m->n_floats * 4));
out:
    for (int i = 0; i < 2; i++) {
        train_device_close(&td[i]);
        ckpt_free(&k[i]);
    }
    train_data_free(&d);
}
#endif

#define RUN_GPU(fn) do { if (gpu_ok) RUN(fn); \
    else printf("ok - %s # skip %s\n", #fn, skip_why); } while (0)

int main(void)
{
    RUN(precision_names);
    RUN(cpu_reference_run_learns);
    RUN(device_selection_without_gpu);
    RUN(cpu_step_on_is_train_step);
#ifdef HAT_CUDA
    int gpu_ok = device_available() > 0 && device_init(-1) == 0;
    const char *skip_why = "no CUDA GPU or driver";
    RUN_GPU(gpu_upload_download_roundtrip);
    RUN_GPU(gpu_fp32_forward_backward_untied);
    RUN_GPU(gpu_fp32_forward_backward_tied);
    RUN_GPU(gpu_bf16_forward_backward_untied);
    RUN_GPU(gpu_bf16_forward_backward_tied);
    RUN_GPU(gpu_adamw_matches_cpu);
    RUN_GPU(gpu_fp32_logits_and_dlogits);
    RUN_GPU(gpu_bf16_logits_and_dlogits);
    RUN_GPU(gpu_fp32_training_run_tracks_cpu);
    RUN_GPU(gpu_bf16_training_run_lowers_loss);
    RUN_GPU(gpu_checkpoint_resumes_on_cpu);
    RUN_GPU(gpu_dist_world1_is_identity);
    if (gpu_ok) device_shutdown();
#else
    static const char *names[] = {
        "gpu_upload_download_roundtrip", "gpu_fp32_forward_backward_untied",
        "gpu_fp32_forward_backward_tied", "gpu_bf16_forward_backward_untied",
        "gpu_bf16_forward_backward_tied", "gpu_adamw_matches_cpu", "gpu_fp32_logits_and_dlogits",
        "gpu_bf16_logits_and_dlogits", "gpu_fp32_training_run_tracks_cpu",
        "gpu_bf16_training_run_lowers_loss", "gpu_checkpoint_resumes_on_cpu",
        "gpu_dist_world1_is_identity", NULL };
    for (int i = 0; names[i]; i++) printf("ok - %s # skip built without CUDA (make CUDA=1)\n", names[i]);
#endif
    TEST_MAIN_END();
}
