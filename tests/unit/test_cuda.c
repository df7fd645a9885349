/* test_cuda.c — the CUDA back end against the CPU kernels.
 *
 * Two kinds of test:
 *   - CPU-side, run everywhere: --device parsing and resolution, the
 *     row-major -> cuBLAS mapping, and the attention plan of
 *     kernels/cuda/layout.h executed with cblas (the same GEMM steps the
 *     GPU runs, on the CPU) against attention_forward_ref/backward_ref;
 *     in CUDA builds also rank discovery and "no GPU" handling.
 *   - GPU parity, run only where a GPU is present: every cuda_ kernel on
 *     random inputs against its CPU counterpart.  Tolerances (max error
 *     over max |reference|): fp32 path 1e-5 (2e-5 for attention), bf16
 *     path 2e-2 (inputs are rounded to bf16 first, so only the kernel's
 *     own rounding is measured; activations are stored in bf16, whose
 *     step is 2^-8 = 3.9e-3).  Without a GPU, or in a build without
 *     CUDA, each of them prints "ok - NAME # skip REASON". */
#include "test.h"
#include "kernels.h"
#include "cuda/device.h"
#include "cuda/layout.h"
#include "generate.h"
#include "rng.h"
#include "util.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAT_CUDA
#include "cuda/dist.h"
#include "cuda/kernels_cuda.h"
#endif

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

/* ================================================== CPU-side tests */

static void device_flag_parsing(void)
{
    CHECK_EQ_INT(device_parse("cpu"), HAT_DEVICE_CPU);
    CHECK_EQ_INT(device_parse("cuda"), HAT_DEVICE_CUDA);
    CHECK_EQ_INT(device_parse("gpu"), HAT_DEVICE_CUDA);
    CHECK_EQ_INT(device_parse("auto"), HAT_DEVICE_AUTO);
    CHECK_EQ_INT(device_parse("CUDA"), HAT_DEVICE_INVALID);
    CHECK_EQ_INT(device_parse(""), HAT_DEVICE_INVALID);
    CHECK_EQ_INT(device_parse(NULL), HAT_DEVICE_INVALID);
    CHECK_STR(device_name(HAT_DEVICE_CUDA), "cuda");
    CHECK_STR(device_name(device_parse("auto")), "auto");
    const char *why = "unset";
    CHECK_EQ_INT(device_resolve(HAT_DEVICE_CPU, &why), HAT_DEVICE_CPU);
    CHECK(why == NULL);
    CHECK_EQ_INT(device_resolve(HAT_DEVICE_INVALID, &why), HAT_DEVICE_INVALID);
    CHECK(why && strstr(why, "expected cpu, cuda or auto"));
    /* device_available() is safe with no driver; it is stable. */
    int n = device_available();
    CHECK(n >= 0);
    CHECK_EQ_INT(device_available(), n);
#ifndef HAT_CUDA
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_INT(device_compiled(), 0);
#else
    CHECK_EQ_INT(device_compiled(), 1);
#endif
    if (n == 0) {
        CHECK_EQ_INT(device_resolve(HAT_DEVICE_AUTO, &why), HAT_DEVICE_CPU);
        CHECK_EQ_INT(device_resolve(HAT_DEVICE_CUDA, &why), HAT_DEVICE_INVALID);
        CHECK(why && (strstr(why, "no CUDA GPU") || strstr(why, "no CUDA back end")));
    } else {
        CHECK_EQ_INT(device_resolve(HAT_DEVICE_AUTO, &why), HAT_DEVICE_CUDA);
        CHECK_EQ_INT(device_resolve(HAT_DEVICE_CUDA, &why), HAT_DEVICE_CUDA);
    }
}

/* Every (transpose, transpose) pair with non-square sizes and padded row
 * strides: the column-major call that gemm_rm_to_cm describes, run by
 * cblas, equals cblas's own row-major product bit for bit or nearly. */
static void gemm_mapping_matches_row_major(void)
{
    rng_t r;
    rng_seed(&r, 31);
    int M = 7, N = 5, K = 9;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            int arows = ta ? K : M, acols = ta ? M : K, brows = tb ? N : K, bcols = tb ? K : N;
            gemm_rm g = { ta, tb, M, N, K, acols + 3, bcols + 2, N + 4 };
            float *A = randv((size_t)arows * g.lda, &r, -1, 1);
            float *B = randv((size_t)brows * g.ldb, &r, -1, 1);
            float *C0 = randv((size_t)M * g.ldc, &r, -1, 1), *C1 = copyv(C0, (size_t)M * g.ldc);
            cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                        M, N, K, 0.5f, A, g.lda, B, g.ldb, 0.25f, C0, g.ldc);
            gemm_cm c = gemm_rm_to_cm(g);
            CHECK_EQ_INT(c.a_is_rm_b, 1);
            cblas_sgemm(CblasColMajor, c.ta ? CblasTrans : CblasNoTrans, c.tb ? CblasTrans : CblasNoTrans,
                        c.m, c.n, c.k, 0.5f, B, c.lda, A, c.ldb, 0.25f, C1, c.ldc);
            CHECK(test_rel_err(C1, C0, (size_t)M * g.ldc) < 1e-6);
            free(A); free(B); free(C0); free(C1);
        }
}

/* The attention plan run on the CPU: GEMM steps through the same
 * column-major mapping, softmax steps written exactly like the CUDA row
 * kernels (attention.cu).  This checks the GPU code's pointer offsets,
 * strides, transposes and GQA grouping without a GPU. */
typedef struct {
    att_dims d;
    float   *buf[ATT_NBUF];
    float   *lse;
} cpu_att;

static void cpu_att_gemm(void *ctx, const att_gemm *g)
{
    cpu_att *x = ctx;
    gemm_cm c = gemm_rm_to_cm(g->g);
    for (int i = 0; i < g->batch; i++) {
        const float *A = x->buf[g->a.buf] + att_offset(&g->a, i);
        const float *B = x->buf[g->b.buf] + att_offset(&g->b, i);
        float *C = x->buf[g->c.buf] + att_offset(&g->c, i);
        cblas_sgemm(CblasColMajor, c.ta ? CblasTrans : CblasNoTrans, c.tb ? CblasTrans : CblasNoTrans,
                    c.m, c.n, c.k, g->alpha, B, c.lda, A, c.ldb, g->beta, C, c.ldc);
    }
}

static void cpu_att_softmax_fwd(void *ctx)
{
    cpu_att *x = ctx;
    int T = x->d.T, rows = x->d.B * x->d.H * T;
    for (int r = 0; r < rows; r++) {
        int n = r % T + 1;
        const float *s = x->buf[ATT_S] + (size_t)r * T;
        float *p = x->buf[ATT_P] + (size_t)r * T, mx = -INFINITY, sum = 0;
        for (int j = 0; j < n; j++) mx = fmaxf(mx, s[j]);
        for (int j = 0; j < n; j++) sum += expf(s[j] - mx);
        for (int j = 0; j < T; j++) p[j] = j < n ? expf(s[j] - mx) / sum : 0;
        x->lse[r] = mx + logf(sum);
    }
}

static void cpu_att_softmax_bwd(void *ctx)
{
    cpu_att *x = ctx;
    int T = x->d.T, H = x->d.H, D = x->d.D, rows = x->d.B * H * T;
    for (int r = 0; r < rows; r++) {
        int t = r % T, bh = r / T, b = bh / H, h = bh % H, n = t + 1;
        size_t o = (((size_t)b * T + t) * H + h) * D;
        float di = 0;
        for (int i = 0; i < D; i++) di += x->buf[ATT_DO][o + i] * x->buf[ATT_O][o + i];
        const float *s = x->buf[ATT_S] + (size_t)r * T, *dp = x->buf[ATT_DP] + (size_t)r * T;
        float *p = x->buf[ATT_P] + (size_t)r * T, *ds = x->buf[ATT_DS] + (size_t)r * T;
        for (int j = 0; j < T; j++) {
            float pr = j < n ? expf(s[j] - x->lse[r]) : 0;
            p[j] = pr;
            ds[j] = j < n ? pr * (dp[j] - di) * x->d.scale : 0;
        }
    }
}

static void attention_plan_matches_reference(void)
{
    static const int cfg[][5] = { { 2, 37, 6, 2, 8 }, { 1, 20, 4, 4, 16 }, { 3, 9, 4, 1, 4 } };
    rng_t r;
    rng_seed(&r, 32);
    for (int c = 0; c < 3; c++) {
        int B = cfg[c][0], T = cfg[c][1], H = cfg[c][2], KV = cfg[c][3], D = cfg[c][4];
        size_t nq = (size_t)B * T * H * D, nk = (size_t)B * T * KV * D, tt = (size_t)B * H * T * T;
        float *q = randv(nq, &r, -2, 2), *k = randv(nk, &r, -2, 2), *v = randv(nk, &r, -1, 1);
        float *go = randv(nq, &r, -1, 1), *o0 = xcalloc(nq, 4), *o1 = xcalloc(nq, 4);
        float *att = xcalloc(tt, 4), *datt = xcalloc(tt, 4), *lse = xcalloc((size_t)B * H * T, 4);
        float *lse_cpu = xcalloc((size_t)B * H * T, 4);
        float *scr = xcalloc(attention_scratch_floats(T), 4);
        cpu_att x = { { B, T, H, KV, D, 1.0f / sqrtf((float)D) }, { 0 }, lse };
        x.buf[ATT_Q] = q; x.buf[ATT_K] = k; x.buf[ATT_V] = v; x.buf[ATT_O] = o0; x.buf[ATT_DO] = go;
        for (int b = ATT_S; b <= ATT_DS; b++) x.buf[b] = xcalloc(tt, 4);
        att_exec e = { cpu_att_gemm, cpu_att_softmax_fwd, cpu_att_softmax_bwd, &x };
        att_plan_forward(&x.d, &e);
        attention_forward_ref(o1, att, q, k, v, B, T, H, KV, D);
        CHECK(test_rel_err(o0, o1, nq) < 1e-5);
        attention_forward(o1, lse_cpu, scr, q, k, v, B, T, H, KV, D);
        CHECK(test_rel_err(lse, lse_cpu, (size_t)B * H * T) < 1e-5);
        float *dq0 = randv(nq, &r, -1, 1), *dq1 = copyv(dq0, nq);
        float *dk0 = randv(nk, &r, -1, 1), *dk1 = copyv(dk0, nk);
        float *dv0 = randv(nk, &r, -1, 1), *dv1 = copyv(dv0, nk);
        x.buf[ATT_DQ] = dq0; x.buf[ATT_DK] = dk0; x.buf[ATT_DV] = dv0;
        att_plan_backward(&x.d, &e);
        attention_backward_ref(dq1, dk1, dv1, datt, go, att, q, k, v, B, T, H, KV, D);
        CHECK(test_rel_err(dq0, dq1, nq) < 1e-5);
        CHECK(test_rel_err(dk0, dk1, nk) < 1e-5);
        CHECK(test_rel_err(dv0, dv1, nk) < 1e-5);
        /* the scratch the GPU asks for holds the plan's buffers */
        CHECK(att_scratch_floats(B, T, H) >= 4 * tt + 6 * (size_t)B * H);
        for (int b = ATT_S; b <= ATT_DS; b++) free(x.buf[b]);
        free(q); free(k); free(v); free(go); free(o0); free(o1); free(att); free(datt);
        free(lse); free(lse_cpu); free(scr); free(dq0); free(dq1); free(dk0); free(dk1);
        free(dv0); free(dv1);
    }
}

#ifdef HAT_CUDA
/* Rank discovery reads the launchers' variables; no GPU needed. */
static void dist_env_from_launchers(void)
{
    static const char *vars[] = { "HAT_RANK", "HAT_WORLD_SIZE", "HAT_LOCAL_RANK",
                                  "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                  "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "PMI_SIZE",
                                  "MPI_LOCALRANKID", "SLURM_PROCID", "SLURM_NTASKS",
                                  "SLURM_LOCALID", NULL };
    char *saved[16] = { 0 };
    for (int i = 0; vars[i]; i++) {
        const char *s = getenv(vars[i]);
        saved[i] = s ? xstrdup(s) : NULL;
        unsetenv(vars[i]);
    }
    int rank, world, local;
    CHECK_EQ_INT(dist_env(&rank, &world, &local), 0);
    CHECK(rank == 0 && world == 1 && local == 0);
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    CHECK_EQ_INT(dist_env(&rank, &world, &local), 0);
    CHECK(rank == 3 && world == 4 && local == 1);
    setenv("HAT_RANK", "0", 1);                  /* HAT_* wins over mpirun's */
    setenv("HAT_WORLD_SIZE", "2", 1);
    CHECK_EQ_INT(dist_env(&rank, &world, &local), 0);
    CHECK(rank == 0 && world == 2 && local == 0);
    setenv("HAT_RANK", "2", 1);                  /* rank >= size */
    CHECK_EQ_INT(dist_env(&rank, &world, &local), -1);
    setenv("HAT_RANK", "x", 1);
    CHECK_EQ_INT(dist_env(&rank, &world, &local), -1);
    unsetenv("HAT_WORLD_SIZE");                  /* half a pair */
    setenv("HAT_RANK", "0", 1);
    CHECK_EQ_INT(dist_env(&rank, &world, &local), -1);
    for (int i = 0; vars[i]; i++) {
        if (saved[i]) setenv(vars[i], saved[i], 1);
        else unsetenv(vars[i]);
        free(saved[i]);
    }
}

/* Without a GPU, initialisation fails with a message instead of dying. */
static void no_gpu_is_an_error_not_a_crash(void)
{
    CHECK_EQ_INT(device_init(-1), -1);
    CHECK_EQ_INT(device_ready(), 0);
    hat_dist d;
    CHECK_EQ_INT(dist_init(&d, NULL), -1);
}
#endif

/* ================================================== GPU parity */

#ifdef HAT_CUDA
static float *up(const float *h, size_t n)
{
    float *d = device_malloc(n * sizeof(float));
    device_upload(d, h, n * sizeof(float));
    return d;
}
static int *upi(const int *h, size_t n)
{
    int *d = device_malloc(n * sizeof(int));
    device_upload(d, h, n * sizeof(int));
    return d;
}
static float *down(const float *d, size_t n)
{
    float *h = xmalloc(n * sizeof(float));
    device_download(h, d, n * sizeof(float));
    return h;
}
/* Round a host array to bf16 in place (the reference then sees exactly
 * the GPU's inputs) and upload the bf16 copy. */
static hat_bf16 *up16(float *h, size_t n)
{
    hat_bf16 *t = xmalloc(n * sizeof(hat_bf16));
    for (size_t i = 0; i < n; i++) { t[i] = bf16_from_float(h[i]); h[i] = bf16_to_float(t[i]); }
    hat_bf16 *d = device_malloc(n * sizeof(hat_bf16));
    device_upload(d, t, n * sizeof(hat_bf16));
    free(t);
    return d;
}
static float *down16(const hat_bf16 *d, size_t n)
{
    hat_bf16 *t = xmalloc(n * sizeof(hat_bf16));
    device_download(t, d, n * sizeof(hat_bf16));
    float *h = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) h[i] = bf16_to_float(t[i]);
    free(t);
    return h;
}

#define TOL32 1e-5
#define TOL16 2e-2

static void gpu_matmul(void)
{
    static const int sz[][3] = { { 5, 7, 3 }, { 70, 64, 80 }, { 3, 300, 400 }, { 129, 256, 96 } };
    rng_t r;
    rng_seed(&r, 41);
    for (int c = 0; c < 4; c++) {
        int N = sz[c][0], C = sz[c][1], OC = sz[c][2];
        size_t nx = (size_t)N * C, nw = (size_t)OC * C, ny = (size_t)N * OC;
        float *x = randv(nx, &r, -1, 1), *w = randv(nw, &r, -1, 1), *y = randv(ny, &r, -1, 1);
        float *dx = randv(nx, &r, -1, 1), *dw = randv(nw, &r, -1, 1);
        float *dx_, *dw_, *y_;
        /* fp32 */
        float *X = up(x, nx), *W = up(w, nw), *Y = up(y, ny), *DX = up(dx, nx), *DW = up(dw, nw);
        y_ = copyv(y, ny);
        matmul_forward_ref(y_, x, w, N, C, OC, 1.0f);
        cuda_matmul_forward(Y, X, W, N, C, OC, 1.0f);
        float *got = down(Y, ny);
        CHECK(test_rel_err(got, y_, ny) < TOL32);
        dx_ = copyv(dx, nx), dw_ = copyv(dw, nw);
        matmul_backward_ref(dx_, dw_, y_, x, w, N, C, OC);
        cuda_matmul_backward(DX, DW, Y, X, W, N, C, OC);
        float *gdx = down(DX, nx), *gdw = down(DW, nw);
        CHECK(test_rel_err(gdx, dx_, nx) < TOL32);
        CHECK(test_rel_err(gdw, dw_, nw) < TOL32);
        free(got); free(gdx); free(gdw); free(y_); free(dx_); free(dw_);
        device_free(X); device_free(W); device_free(Y); device_free(DX); device_free(DW);
        /* bf16: beta 0 forward; dinp bf16 accumulates; dw fp32 accumulates */
        hat_bf16 *X16 = up16(x, nx), *W16 = up16(w, nw), *Y16 = device_malloc(ny * 2);
        hat_bf16 *DX16 = up16(dx, nx);
        float *DW32 = up(dw, nw);
        y_ = xcalloc(ny, 4);
        matmul_forward_ref(y_, x, w, N, C, OC, 0.0f);
        cuda_matmul_forward_bf16(Y16, X16, W16, N, C, OC, 0.0f);
        got = down16(Y16, ny);
        CHECK(test_rel_err(got, y_, ny) < TOL16);
        /* the gradient flowing back is the bf16 output itself */
        dx_ = copyv(dx, nx), dw_ = copyv(dw, nw);
        matmul_backward_ref(dx_, dw_, got, x, w, N, C, OC);
        cuda_matmul_backward_bf16(DX16, DW32, Y16, X16, W16, N, C, OC);
        gdx = down16(DX16, nx), gdw = down(DW32, nw);
        CHECK(test_rel_err(gdx, dx_, nx) < TOL16);
        CHECK(test_rel_err(gdw, dw_, nw) < 1e-3);   /* fp32 accumulation of bf16 products */
        free(got); free(gdx); free(gdw); free(y_); free(dx_); free(dw_);
        device_free(X16); device_free(W16); device_free(Y16); device_free(DX16); device_free(DW32);
        free(x); free(w); free(y); free(dx); free(dw);
    }
}

static void gpu_rmsnorm(void)
{
    static const int sz[][2] = { { 33, 40 }, { 300, 64 }, { 7, 1000 } };
    rng_t r;
    rng_seed(&r, 42);
    for (int c = 0; c < 3; c++) {
        int N = sz[c][0], C = sz[c][1];
        size_t n = (size_t)N * C;
        float *x = randv(n, &r, -3, 3), *w = randv(C, &r, 0.5f, 1.5f), *dy = randv(n, &r, -1, 1);
        float *dx = randv(n, &r, -1, 1), *dw = randv(C, &r, -1, 1);
        float *y_ = xmalloc(n * 4), *rs_ = xmalloc(N * 4), *dx_ = copyv(dx, n), *dw_ = copyv(dw, C);
        rmsnorm_forward_ref(y_, rs_, x, w, N, C, 1e-6f);
        rmsnorm_backward_ref(dx_, dw_, dy, x, w, rs_, N, C);
        float *X = up(x, n), *W = up(w, C), *Y = device_malloc(n * 4), *RS = device_malloc(N * 4);
        float *DY = up(dy, n), *DX = up(dx, n), *DW = up(dw, C);
        cuda_rmsnorm_forward(Y, RS, X, W, N, C, 1e-6f);
        cuda_rmsnorm_backward(DX, DW, DY, X, W, RS, N, C);
        float *gy = down(Y, n), *grs = down(RS, N), *gdx = down(DX, n), *gdw = down(DW, C);
        CHECK(test_rel_err(gy, y_, n) < TOL32);
        CHECK(test_rel_err(grs, rs_, N) < TOL32);
        CHECK(test_rel_err(gdx, dx_, n) < TOL32);
        CHECK(test_rel_err(gdw, dw_, C) < TOL32);
        /* deterministic: the same dw bits again */
        device_upload(DW, dw, C * 4);
        cuda_rmsnorm_backward(DX, DW, DY, X, W, RS, N, C);
        float *gdw2 = down(DW, C);
        CHECK(memcmp(gdw2, gdw, C * 4) == 0);
        /* in place forward */
        cuda_rmsnorm_forward(X, RS, X, W, N, C, 1e-6f);
        float *gx = down(X, n);
        CHECK(memcmp(gx, gy, n * 4) == 0);
        free(gy); free(grs); free(gdx); free(gdw); free(gdw2); free(gx);
        device_free(X); device_free(W); device_free(Y); device_free(RS);
        device_free(DY); device_free(DX); device_free(DW);
        /* bf16 */
        hat_bf16 *X16 = up16(x, n), *W16 = up16(w, C), *DY16 = up16(dy, n), *DX16 = up16(dx, n);
        hat_bf16 *Y16 = device_malloc(n * 2);
        RS = device_malloc(N * 4), DW = up(dw, C);
        free(dx_); free(dw_);
        dx_ = copyv(dx, n), dw_ = copyv(dw, C);
        rmsnorm_forward_ref(y_, rs_, x, w, N, C, 1e-6f);
        rmsnorm_backward_ref(dx_, dw_, dy, x, w, rs_, N, C);
        cuda_rmsnorm_forward_bf16(Y16, RS, X16, W16, N, C, 1e-6f);
        cuda_rmsnorm_backward_bf16(DX16, DW, DY16, X16, W16, RS, N, C);
        gy = down16(Y16, n), grs = down(RS, N), gdx = down16(DX16, n), gdw = down(DW, C);
        CHECK(test_rel_err(gy, y_, n) < TOL16);
        CHECK(test_rel_err(grs, rs_, N) < 1e-5);      /* statistics stay fp32 */
        CHECK(test_rel_err(gdx, dx_, n) < TOL16);
        CHECK(test_rel_err(gdw, dw_, C) < 1e-4);
        free(gy); free(grs); free(gdx); free(gdw);
        device_free(X16); device_free(W16); device_free(DY16); device_free(DX16); device_free(Y16);
        device_free(RS); device_free(DW);
        free(x); free(w); free(dy); free(dx); free(dw); free(y_); free(rs_); free(dx_); free(dw_);
    }
}

static void gpu_rope_swiglu_add(void)
{
    int N = 37, nh = 3, D = 16, P = 64;
    size_t n = (size_t)N * nh * D;
    rng_t r;
    rng_seed(&r, 43);
    float *cs = xmalloc(P * D / 2 * 4), *sn = xmalloc(P * D / 2 * 4);
    rope_table(cs, sn, P, D, 10000.0);
    int pos[37];
    for (int i = 0; i < N; i++) pos[i] = (i * 7) % P;
    float *x = randv(n, &r, -2, 2), *x_ = copyv(x, n);
    float *CS = up(cs, P * D / 2), *SN = up(sn, P * D / 2), *X = up(x, n);
    int *POS = upi(pos, N);
    rope_forward(x_, pos, cs, sn, N, nh, D);
    cuda_rope_forward(X, POS, CS, SN, N, nh, D);
    float *g = down(X, n);
    CHECK(test_rel_err(g, x_, n) < TOL32);
    free(g);
    rope_backward(x_, pos, cs, sn, N, nh, D);   /* backward undoes forward */
    cuda_rope_backward(X, POS, CS, SN, N, nh, D);
    g = down(X, n);
    CHECK(test_rel_err(g, x_, n) < TOL32);
    CHECK(test_rel_err(g, x, n) < 1e-5);
    free(g);
    hat_bf16 *X16 = up16(x, n);
    free(x_);
    x_ = copyv(x, n);
    rope_forward(x_, pos, cs, sn, N, nh, D);
    cuda_rope_forward_bf16(X16, POS, CS, SN, N, nh, D);
    g = down16(X16, n);
    CHECK(test_rel_err(g, x_, n) < TOL16);
    free(g); free(x); free(x_); free(cs); free(sn);
    device_free(CS); device_free(SN); device_free(X); device_free(POS); device_free(X16);

    /* SwiGLU over the saturating range, and the residual add */
    size_t m = 1000;
    float *ga = randv(m, &r, -30, 30), *u = randv(m, &r, -2, 2), *dy = randv(m, &r, -1, 1);
    float *dg = randv(m, &r, -1, 1), *du = randv(m, &r, -1, 1);
    float *y_ = xmalloc(m * 4), *dg_ = copyv(dg, m), *du_ = copyv(du, m), *s_ = xmalloc(m * 4);
    swiglu_forward_ref(y_, ga, u, m);
    swiglu_backward_ref(dg_, du_, dy, ga, u, m);
    add_forward(s_, ga, u, m);
    float *GA = up(ga, m), *U = up(u, m), *DY = up(dy, m), *DG = up(dg, m), *DU = up(du, m);
    float *Y = device_malloc(m * 4), *S = device_malloc(m * 4);
    cuda_swiglu_forward(Y, GA, U, m);
    cuda_swiglu_backward(DG, DU, DY, GA, U, m);
    cuda_add_forward(S, GA, U, m);
    float *gy = down(Y, m), *gdg = down(DG, m), *gdu = down(DU, m), *gs = down(S, m);
    CHECK(test_rel_err(gy, y_, m) < TOL32);
    CHECK(test_rel_err(gdg, dg_, m) < TOL32);
    CHECK(test_rel_err(gdu, du_, m) < TOL32);
    CHECK(memcmp(gs, s_, m * 4) == 0);
    free(gy); free(gdg); free(gdu); free(gs);
    hat_bf16 *GA16 = up16(ga, m), *U16 = up16(u, m), *DY16 = up16(dy, m), *DG16 = up16(dg, m);
    hat_bf16 *DU16 = up16(du, m), *Y16 = device_malloc(m * 2);
    free(dg_); free(du_);
    dg_ = copyv(dg, m), du_ = copyv(du, m);
    swiglu_forward_ref(y_, ga, u, m);
    swiglu_backward_ref(dg_, du_, dy, ga, u, m);
    cuda_swiglu_forward_bf16(Y16, GA16, U16, m);
    cuda_swiglu_backward_bf16(DG16, DU16, DY16, GA16, U16, m);
    gy = down16(Y16, m), gdg = down16(DG16, m), gdu = down16(DU16, m);
    CHECK(test_rel_err(gy, y_, m) < TOL16);
    CHECK(test_rel_err(gdg, dg_, m) < TOL16);
    CHECK(test_rel_err(gdu, du_, m) < TOL16);
    free(gy); free(gdg); free(gdu);
    device_free(GA); device_free(U); device_free(DY); device_free(DG); device_free(DU);
    device_free(Y); device_free(S); device_free(GA16); device_free(U16); device_free(DY16);
    device_free(DG16); device_free(DU16); device_free(Y16);
    free(ga); free(u); free(dy); free(dg); free(du); free(y_); free(dg_); free(du_); free(s_);
}

static void gpu_embedding(void)
{
    int N = 300, C = 40, V = 11;
    rng_t r;
    rng_seed(&r, 44);
    int tok[300];
    for (int i = 0; i < N; i++) tok[i] = (int)(rng_uniform(&r) * 7);   /* many repeats */
    tok[5] = V - 1;
    float *wte = randv((size_t)V * C, &r, -1, 1), *dout = randv((size_t)N * C, &r, -1, 1);
    float *dw = randv((size_t)V * C, &r, -1, 1), *dw_ = copyv(dw, (size_t)V * C);
    float *out_ = xmalloc((size_t)N * C * 4);
    embedding_forward(out_, tok, wte, N, C);
    embedding_backward(dw_, dout, tok, N, C);
    int *TOK = upi(tok, N);
    float *WTE = up(wte, (size_t)V * C), *DOUT = up(dout, (size_t)N * C), *DW = up(dw, (size_t)V * C);
    float *OUT = device_malloc((size_t)N * C * 4);
    cuda_embedding_forward(OUT, TOK, WTE, N, C);
    cuda_embedding_backward(DW, DOUT, TOK, N, C);
    float *go = down(OUT, (size_t)N * C), *gdw = down(DW, (size_t)V * C);
    CHECK(memcmp(go, out_, (size_t)N * C * 4) == 0);
    CHECK(test_rel_err(gdw, dw_, (size_t)V * C) < TOL32);
    device_upload(DW, dw, (size_t)V * C * 4);     /* same bits twice: no atomics */
    cuda_embedding_backward(DW, DOUT, TOK, N, C);
    float *gdw2 = down(DW, (size_t)V * C);
    CHECK(memcmp(gdw2, gdw, (size_t)V * C * 4) == 0);
    free(go); free(gdw); free(gdw2);
    hat_bf16 *WTE16 = up16(wte, (size_t)V * C), *DOUT16 = up16(dout, (size_t)N * C);
    hat_bf16 *OUT16 = device_malloc((size_t)N * C * 2);
    free(dw_);
    dw_ = copyv(dw, (size_t)V * C);
    embedding_forward(out_, tok, wte, N, C);
    embedding_backward(dw_, dout, tok, N, C);
    device_upload(DW, dw, (size_t)V * C * 4);
    cuda_embedding_forward_bf16(OUT16, TOK, WTE16, N, C);
    cuda_embedding_backward_bf16(DW, DOUT16, TOK, N, C);
    go = down16(OUT16, (size_t)N * C), gdw = down(DW, (size_t)V * C);
    CHECK(memcmp(go, out_, (size_t)N * C * 4) == 0);   /* a copy of bf16 values */
    CHECK(test_rel_err(gdw, dw_, (size_t)V * C) < 1e-5);
    free(go); free(gdw);
    device_free(TOK); device_free(WTE); device_free(DOUT); device_free(DW); device_free(OUT);
    device_free(WTE16); device_free(DOUT16); device_free(OUT16);
    free(wte); free(dout); free(dw); free(dw_); free(out_);
}

static void gpu_crossentropy(void)
{
    int N = 6, V = 1003;
    int tgt[6] = { 5, -1, 1002, 0, 77, -1 };
    size_t n = (size_t)N * V;
    rng_t r;
    rng_seed(&r, 45);
    float *z = randv(n, &r, -8, 8), *dz_ = xcalloc(n, 4), l_[6], l2[6], lse_[6];
    crossentropy_forward_backward(l_, dz_, z, tgt, N, V, 0.25f);
    crossentropy_forward(l2, lse_, z, tgt, N, V);
    float *Z = up(z, n), *L = device_malloc(N * 4), *LSE = device_malloc(N * 4);
    int *TG = upi(tgt, N);
    cuda_crossentropy_forward(L, LSE, Z, TG, N, V);
    cuda_crossentropy_backward(Z, Z, LSE, TG, N, V, 0.25f);   /* in place */
    float *gl = down(L, N), *glse = down(LSE, N), *gdz = down(Z, n);
    CHECK(test_rel_err(gl, l_, N) < TOL32);
    CHECK(test_rel_err(glse, lse_, N) < TOL32);
    CHECK(gl[1] == 0 && glse[1] == 0 && gl[5] == 0);
    CHECK(test_rel_err(gdz, dz_, n) < TOL32);
    CHECK(gdz[V] == 0 && gdz[2 * V - 1] == 0);
    free(gl); free(glse); free(gdz);
    hat_bf16 *Z16 = up16(z, n);
    crossentropy_forward_backward(l_, dz_, z, tgt, N, V, 0.25f);
    cuda_crossentropy_forward_bf16(L, LSE, Z16, TG, N, V);
    cuda_crossentropy_backward_bf16(Z16, Z16, LSE, TG, N, V, 0.25f);
    gl = down(L, N), gdz = down16(Z16, n);
    CHECK(test_rel_err(gl, l_, N) < 1e-5);            /* fp32 math on the bf16 logits */
    CHECK(test_rel_err(gdz, dz_, n) < TOL16);
    free(gl); free(gdz);
    device_free(Z); device_free(L); device_free(LSE); device_free(TG); device_free(Z16);
    free(z); free(dz_);
}

static void gpu_attention_case(int B, int T, int H, int KV, int D, rng_t *r)
{
    size_t nq = (size_t)B * T * H * D, nk = (size_t)B * T * KV * D, nl = (size_t)B * H * T;
    float *q = randv(nq, r, -2, 2), *k = randv(nk, r, -2, 2), *v = randv(nk, r, -1, 1);
    float *go = randv(nq, r, -1, 1), *o_ = xcalloc(nq, 4), *lse_ = xcalloc(nl, 4);
    float *att = xcalloc((size_t)B * H * T * T, 4), *datt = xcalloc((size_t)B * H * T * T, 4);
    float *scr = xcalloc(attention_scratch_floats(T), 4);
    float *dq = randv(nq, r, -1, 1), *dk = randv(nk, r, -1, 1), *dv = randv(nk, r, -1, 1);
    float *dq_ = copyv(dq, nq), *dk_ = copyv(dk, nk), *dv_ = copyv(dv, nk);
    attention_forward_ref(o_, att, q, k, v, B, T, H, KV, D);
    attention_forward(dq_, lse_, scr, q, k, v, B, T, H, KV, D);   /* for its lse only */
    memcpy(dq_, dq, nq * 4);
    attention_backward_ref(dq_, dk_, dv_, datt, go, att, q, k, v, B, T, H, KV, D);

    float *Q = up(q, nq), *K = up(k, nk), *Vv = up(v, nk), *GO = up(go, nq);
    float *O = device_malloc(nq * 4), *LSE = device_malloc(nl * 4);
    float *DQ = up(dq, nq), *DK = up(dk, nk), *DV = up(dv, nk);
    float *SCR = device_malloc(cuda_attention_scratch_floats(B, T, H) * 4);
    cuda_attention_forward(O, LSE, SCR, Q, K, Vv, B, T, H, KV, D);
    cuda_attention_backward(DQ, DK, DV, SCR, GO, O, LSE, Q, K, Vv, B, T, H, KV, D);
    float *go_ = down(O, nq), *gl = down(LSE, nl), *gdq = down(DQ, nq), *gdk = down(DK, nk),
          *gdv = down(DV, nk);
    CHECK(test_rel_err(go_, o_, nq) < 2e-5);
    CHECK(test_rel_err(gl, lse_, nl) < 2e-5);
    CHECK(test_rel_err(gdq, dq_, nq) < 2e-5);
    CHECK(test_rel_err(gdk, dk_, nk) < 2e-5);
    CHECK(test_rel_err(gdv, dv_, nk) < 2e-5);
    free(go_); free(gl); free(gdq); free(gdk); free(gdv);
    /* decoding the last token of sequence 0 against its k/v as a cache */
    float *OD = device_malloc((size_t)H * D * 4), *SD = device_malloc((size_t)H * T * 4);
    cuda_attention_decode(OD, SD, Q + (size_t)(T - 1) * H * D, K, Vv, T, H, KV, D);
    float *god = down(OD, (size_t)H * D);
    CHECK(test_rel_err(god, o_ + (size_t)(T - 1) * H * D, (size_t)H * D) < 2e-5);
    free(god);

    /* bf16: inputs rounded, references recomputed on the rounded values */
    hat_bf16 *Q16 = up16(q, nq), *K16 = up16(k, nk), *V16 = up16(v, nk), *GO16 = up16(go, nq);
    hat_bf16 *DQ16 = up16(dq, nq), *DK16 = up16(dk, nk), *DV16 = up16(dv, nk);
    hat_bf16 *O16 = device_malloc(nq * 2), *OD16 = device_malloc((size_t)H * D * 2);
    memcpy(dq_, dq, nq * 4), memcpy(dk_, dk, nk * 4), memcpy(dv_, dv, nk * 4);
    attention_forward_ref(o_, att, q, k, v, B, T, H, KV, D);
    attention_backward_ref(dq_, dk_, dv_, datt, go, att, q, k, v, B, T, H, KV, D);
    cuda_attention_forward_bf16(O16, LSE, SCR, Q16, K16, V16, B, T, H, KV, D);
    cuda_attention_backward_bf16(DQ16, DK16, DV16, SCR, GO16, O16, LSE, Q16, K16, V16, B, T, H, KV, D);
    cuda_attention_decode_bf16(OD16, SD, Q16 + (size_t)(T - 1) * H * D, K16, V16, T, H, KV, D);
    go_ = down16(O16, nq), gdq = down16(DQ16, nq), gdk = down16(DK16, nk), gdv = down16(DV16, nk);
    god = down16(OD16, (size_t)H * D);
    CHECK(test_rel_err(go_, o_, nq) < TOL16);
    CHECK(test_rel_err(gdq, dq_, nq) < 3e-2);   /* P and dS are rounded to bf16 too */
    CHECK(test_rel_err(gdk, dk_, nk) < 3e-2);
    CHECK(test_rel_err(gdv, dv_, nk) < 3e-2);
    CHECK(test_rel_err(god, o_ + (size_t)(T - 1) * H * D, (size_t)H * D) < TOL16);
    free(go_); free(gdq); free(gdk); free(gdv); free(god);
    device_free(Q); device_free(K); device_free(Vv); device_free(GO); device_free(O); device_free(LSE);
    device_free(DQ); device_free(DK); device_free(DV); device_free(SCR); device_free(OD); device_free(SD);
    device_free(Q16); device_free(K16); device_free(V16); device_free(GO16); device_free(DQ16);
    device_free(DK16); device_free(DV16); device_free(O16); device_free(OD16);
    free(q); free(k); free(v); free(go); free(o_); free(lse_); free(att); free(datt); free(scr);
    free(dq); free(dk); free(dv); free(dq_); free(dk_); free(dv_);
}

static void gpu_attention(void)
{
    rng_t r;
    rng_seed(&r, 46);
    gpu_attention_case(2, 70, 4, 2, 8, &r);
    gpu_attention_case(1, 130, 8, 2, 64, &r);
    gpu_attention_case(3, 17, 4, 4, 32, &r);
}

static void gpu_adamw_and_clipping(void)
{
    size_t n = 16 * 5 + 7, big = 100003;
    rng_t r;
    rng_seed(&r, 47);
    float *p = randv(n, &r, -1, 1), *g = randv(n, &r, -1, 1), *m = randv(n, &r, -0.1f, 0.1f);
    float *v = randv(n, &r, 0, 0.01f);
    float *P = up(p, n), *G = up(g, n), *M = up(m, n), *Vv = up(v, n);
    float *P2 = up(p, n), *M2 = up(m, n), *V2 = up(v, n);
    hat_bf16 *P16 = device_malloc(n * 2);
    adamw_update(p, m, v, g, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 3);
    cuda_adamw_update(P, M, Vv, G, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 3);
    cuda_adamw_update_bf16(P2, P16, M2, V2, G, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 3);
    float *gp = down(P, n), *gm = down(M, n), *gv = down(Vv, n), *gp2 = down(P2, n);
    float *gp16 = down16(P16, n);
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(gp[i] - p[i]) + fabs(gm[i] - m[i]) + fabs(gv[i] - v[i]));
    CHECK(worst < 1e-6);
    CHECK(memcmp(gp2, gp, n * 4) == 0);          /* same master update */
    for (size_t i = 0; i < n; i++) CHECK(gp16[i] == bf16_to_float(bf16_from_float(gp[i])));
    free(gp); free(gm); free(gv); free(gp2); free(gp16);
    float *x = randv(big, &r, -1, 1), *X = up(x, big);
    double ref = 0;
    for (size_t i = 0; i < big; i++) ref += (double)x[i] * x[i];
    double s1 = cuda_sumsq(X, big), s2 = cuda_sumsq(X, big);
    CHECK_NEAR(s1, ref, 1e-9 * ref);
    CHECK(s1 == s2);
    CHECK_NEAR(cuda_sumsq(X, 1), (double)x[0] * x[0], 1e-12);
    cuda_scale_inplace(X, big, 0.5f);
    scale_inplace(x, big, 0.5f);
    float *gx = down(X, big);
    CHECK(memcmp(gx, x, big * 4) == 0);
    free(gx); free(x);
    device_free(X); device_free(P); device_free(G); device_free(M); device_free(Vv);
    device_free(P2); device_free(M2); device_free(V2); device_free(P16);
    free(p); free(g); free(m); free(v);
}

/* Device sampling picks what sample_logits picks from the same draw. */
static void gpu_sampling(void)
{
    int R = 3, V = 1003;
    size_t n = (size_t)R * V;
    rng_t r;
    rng_seed(&r, 48);
    float *z = randv(n, &r, -4, 4);
    for (int i = 0; i < V; i++) z[2 * V + i] = roundf(z[2 * V + i]);   /* row 2: many ties */
    float *Z = up(z, n), *scratch = xmalloc(2 * V * sizeof(float));
    static const struct { float t; int k; float p; } set[] = {
        { 0, 0, 1 }, { 1, 0, 1 }, { 0.7f, 50, 1 }, { 1.3f, 0, 0.9f }, { 1, 20, 0.5f }, { 0.5f, 1, 1 },
    };
    for (int s = 0; s < 6; s++) {
        gen_params gp = { .temperature = set[s].t, .top_k = set[s].k, .top_p = set[s].p,
                          .max_tokens = 1, .eos = -1 };
        for (int draw = 0; draw < 40; draw++) {
            double u[3];
            int ids[3], want[3];
            float lp[3], wlp[3];
            for (int i = 0; i < R; i++) {
                rng_t a, b;
                rng_seed(&a, 1000 * s + 10 * draw + i);
                b = a;
                u[i] = rng_uniform(&b);           /* the draw sample_logits makes */
                want[i] = sample_logits(z + (size_t)i * V, V, &gp, &a, &wlp[i], scratch);
            }
            cuda_sample_logits(ids, lp, Z, u, R, V, gp.temperature, gp.top_k, gp.top_p);
            for (int i = 0; i < R; i++) {
                CHECK_EQ_INT(ids[i], want[i]);
                CHECK_NEAR(lp[i], wlp[i], 1e-5);
            }
            if (set[s].t == 0) break;              /* greedy: no draw */
        }
    }
    device_free(Z);
    free(z); free(scratch);
}

/* World size 1: a real one-rank NCCL communicator. */
static void gpu_dist_single_rank(void)
{
    static const char *vars[] = { "HAT_RANK", "HAT_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                                  "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
                                  "SLURM_PROCID", "SLURM_NTASKS", NULL };
    for (int i = 0; vars[i]; i++) unsetenv(vars[i]);
    hat_dist d;
    CHECK_EQ_INT(dist_init(&d, NULL), 0);
    CHECK(d.rank == 0 && d.world == 1);
    float h[1000];
    for (int i = 0; i < 1000; i++) h[i] = (float)i;
    float *D = up(h, 1000);
    dist_allreduce_f32(&d, D, 1000, 0.5f);
    float *g = down(D, 1000);
    for (int i = 0; i < 1000; i++) CHECK(g[i] == 0.5f * i);
    CHECK(dist_sum_double(&d, 3.25) == 3.25);
    free(g);
    device_free(D);
    dist_free(&d);
}
#endif

/* Runs fn, or prints it as skipped when there is no GPU to run it on. */
#define RUN_GPU(fn) do { if (gpu_ok) RUN(fn); \
    else printf("ok - %s # skip %s\n", #fn, skip_why); } while (0)

int main(void)
{
    RUN(device_flag_parsing);
    RUN(gemm_mapping_matches_row_major);
    RUN(attention_plan_matches_reference);
#ifdef HAT_CUDA
    RUN(dist_env_from_launchers);
    if (device_available() == 0) RUN(no_gpu_is_an_error_not_a_crash);
    else printf("ok - no_gpu_is_an_error_not_a_crash # skip a GPU is present\n");
    int gpu_ok = device_available() > 0 && device_init(-1) == 0;
    const char *skip_why = "no CUDA GPU or driver";
    RUN_GPU(gpu_matmul);
    RUN_GPU(gpu_rmsnorm);
    RUN_GPU(gpu_rope_swiglu_add);
    RUN_GPU(gpu_embedding);
    RUN_GPU(gpu_crossentropy);
    RUN_GPU(gpu_attention);
    RUN_GPU(gpu_adamw_and_clipping);
    RUN_GPU(gpu_sampling);
    RUN_GPU(gpu_dist_single_rank);
    if (gpu_ok) device_shutdown();
#else
    static const char *names[] = { "gpu_matmul", "gpu_rmsnorm", "gpu_rope_swiglu_add",
                                   "gpu_embedding", "gpu_crossentropy", "gpu_attention",
                                   "gpu_adamw_and_clipping", "gpu_sampling",
                                   "gpu_dist_single_rank", NULL };
    for (int i = 0; names[i]; i++)
        printf("ok - %s # skip built without CUDA (make CUDA=1)\n", names[i]);
#endif
    TEST_MAIN_END();
}
