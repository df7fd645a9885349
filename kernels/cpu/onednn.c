/* onednn.c — one block of a row-major product on oneDNN's matmul, or on
 * OpenBLAS where oneDNN is not the faster (CPU back end).
 *
 * Why a second GEMM library: on AVX-512 CPUs oneDNN's brgemm kernels run
 * the shapes of a training step at 110 GFLOP/s a core where OpenBLAS
 * 0.3.21's sgemm gives 97 (AMD Zen 4, one thread, every product of the
 * small bench config; tests/bench_gemm.c measures it on the machine at
 * hand), and attention's skinny tiles gain more.  On AVX2-only CPUs
 * oneDNN falls back to its older jit gemm, slower than OpenBLAS there, so
 * the choice is made at run time from the kernel oneDNN itself reports
 * for a probe product:
 *   HAT_GEMM=auto     (default) oneDNN where its kernel is a brgemm, else OpenBLAS
 *   HAT_GEMM=onednn   oneDNN whatever its kernel;  HAT_GEMM=openblas  never
 *   HAT_GEMM=bf16     oneDNN, and the dense layers' products (matmul.c) on
 *                     bf16 operands with fp32 accumulation and output, where oneDNN
 *                     has bf16 kernels for the CPU (AVX512-BF16, AMX); an
 *                     error elsewhere
 * fp32 throughout, the libraries differ only in the order of each K-long
 * sum (~1e-7 relative).  bf16 rounds each product's inputs to 8 bits of
 * mantissa (~4e-3 relative): mixed precision as torch's autocast does it,
 * master weights, gradients and optimiser state staying fp32; attention's
 * tiles stay fp32.
 *
 * A product shape is one primitive (a plan), built the first time it is
 * seen (0.15 ms: oneDNN caches the kernels themselves) and kept for the
 * process in a hash table.  Callers split the work between their OpenMP
 * threads and each runs its block on one thread (oneDNN, called from a
 * parallel region, does not thread again): oneDNN threading one product
 * itself gave 3-5% over OpenBLAS on 2 cores where this gives 13%.  Each
 * thread has its own stream, scratchpad (the library's own, one per
 * primitive, made two threads on one plan take turns) and memory objects
 * per plan, so a call creates nothing (a 64x64x32 tile: 4.9 us, OpenBLAS
 * 5.2; at 64x1024x32, 46 against 65).  Results are deterministic for a
 * given thread count. */
#include "kernels.h"
#include "cpu/vecmath.h"
#include "util.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int ta, tb, M, N, K, lda, ldb, ldc, acc, bf16;
    float alpha;                    /* the key is everything so far (KEY bytes) */
    dnnl_primitive_t prim;
    dnnl_memory_desc_t scratch;     /* its scratchpad, which the caller gives */
} plan;
#define KEY (offsetof(plan, alpha) + sizeof(float))   /* no padding inside */

/* Shapes kept at most: a step at T = 3072 has ~350 (attention's tiles
 * take 7 for each multiple of 64 up to T); past it, OpenBLAS. */
#define PLANS 2048                  /* table slots, a power of two */
#define MAX_PLANS (PLANS / 2)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t plans_lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t engine;
static int active, bf16_on;
static char kernel_name[64] = "openblas";
static plan *table[PLANS];
static plan plans[MAX_PLANS];
static int nplans;

/* The (rows, cols) matrix of type t at row-major leading dimension ld,
 * or, trans, its transpose: stored (cols, rows). */
static int desc_t(dnnl_memory_desc_t *d, int rows, int cols, int ld, int trans, dnnl_data_type_t t)
{
    dnnl_dims_t dims = { rows, cols }, st = { trans ? 1 : ld, trans ? ld : 1 };
    return dnnl_memory_desc_init_by_strides(d, 2, dims, t, st) != dnnl_success;
}

static int desc(dnnl_memory_desc_t *d, int rows, int cols, int ld, int trans)
{
    return desc_t(d, rows, cols, ld, trans, dnnl_f32);
}

/* A plan's operands: fp32 as given, or (bf16) their dense bf16 copies. */
static int operands(const plan *q, dnnl_memory_desc_t *a, dnnl_memory_desc_t *b, dnnl_memory_desc_t *c)
{
    dnnl_data_type_t t = q->bf16 ? dnnl_bf16 : dnnl_f32;
    return desc_t(a, q->M, q->K, q->lda, q->ta, t) || desc_t(b, q->K, q->N, q->ldb, q->tb, t) ||
           desc(c, q->M, q->N, q->ldc, 0);
}

/* q's primitive, C (M,N) = alpha A (M,K) B (K,N) [+ C] (acc: a sum
 * post-op; alpha: output scales), and its scratchpad's descriptor into q. */
static dnnl_primitive_t build(plan *q, const char **impl)
{
    dnnl_memory_desc_t a, b, c;
    if (operands(q, &a, &b, &c)) return NULL;
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t p = NULL;
    if (dnnl_matmul_desc_init(&md, &a, &b, NULL, &c) || dnnl_primitive_attr_create(&attr) ||
        dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) ||
        (q->alpha != 1.0f && dnnl_primitive_attr_set_output_scales(attr, 1, 0, &q->alpha)) ||
        (q->acc && (dnnl_post_ops_create(&po) || dnnl_post_ops_append_sum(po, 1.0f) ||
                    dnnl_primitive_attr_set_post_ops(attr, po))))
        goto out;
    if (!dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL)) {
        if (impl) dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, impl);
        if (impl && *impl) snprintf(kernel_name, sizeof kernel_name, "onednn %s", *impl);
        q->scratch = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        if (dnnl_primitive_create(&p, pd)) p = NULL;
        dnnl_primitive_desc_destroy(pd);
    }
out:
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return p;
}

static void init(void)
{
    const char *want = getenv("HAT_GEMM");
    if (!want || !*want) want = "auto";
    int bf16 = !strcmp(want, "bf16");
    if (!bf16 && strcmp(want, "auto") && strcmp(want, "onednn") && strcmp(want, "openblas"))
        hat_die("HAT_GEMM=%s: expected auto, onednn, openblas or bf16", want);
    if (!strcmp(want, "openblas")) return;
    if (dnnl_engine_create(&engine, dnnl_cpu, 0)) {
        if (bf16) hat_die("HAT_GEMM=bf16: oneDNN has no CPU engine here");
        return;
    }
    const char *impl = NULL;
    plan q = { 0, 1, 256, 256, 256, 256, 256, 256, 0, bf16, 1.0f, NULL, { 0 } };
    dnnl_primitive_t probe = build(&q, &impl);
    /* bf16 needs a kernel that computes in it: oneDNN's reference or
     * emulating ones would be slower than fp32 */
    if (bf16 && (!probe || !impl || !(strstr(impl, "bf16") || strstr(impl, "amx"))))
        hat_die("HAT_GEMM=bf16: oneDNN has no bf16 kernel for this CPU (%s); it needs AVX512-BF16 or AMX",
                impl ? impl : "none");
    if (!probe) { dnnl_engine_destroy(engine); return; }
    dnnl_primitive_destroy(probe);
    active = bf16 || !strcmp(want, "onednn") || (impl && !strncmp(impl, "brg", 3));
    bf16_on = bf16;
    if (!active) { strcpy(kernel_name, "openblas"); dnnl_engine_destroy(engine); }
}

int onednn_active(void)
{
    pthread_once(&once, init);
    return active;
}

const char *gemm_kernel_name(void)
{
    pthread_once(&once, init);
    return kernel_name;
}

static uint32_t key_hash(const plan *q)
{
    uint32_t h = 2166136261u;                /* FNV-1a over the key's bytes */
    const unsigned char *b = (const unsigned char *)q;
    for (size_t i = 0; i < KEY; i++) h = (h ^ b[i]) * 16777619u;
    return h;
}

/* The index of the kept plan for q's shape, built the first time; -1 once
 * MAX_PLANS are kept or oneDNN has no kernel for it.  Plans are never
 * freed or moved, so a plan stays good without the lock. */
static int plan_for(plan *q)
{
    uint32_t i = key_hash(q) & (PLANS - 1);
    int at = -1;
    pthread_mutex_lock(&plans_lock);
    for (; table[i]; i = (i + 1) & (PLANS - 1))
        if (!memcmp(table[i], q, KEY)) { at = (int)(table[i] - plans); break; }
    if (at < 0 && nplans < MAX_PLANS && (q->prim = build(q, NULL))) {
        at = nplans++;
        plans[at] = *q;
        table[i] = &plans[at];
    }
    pthread_mutex_unlock(&plans_lock);
    return at;
}

/* What a thread keeps: its stream, scratchpad and, per plan, the memory
 * objects of A, B, C and the scratchpad (their pointers set per call). */
typedef struct {
    dnnl_stream_t stream;
    void *scratch;
    size_t scratch_bytes;
    dnnl_memory_t (*mem)[4];        /* (MAX_PLANS) */
} thread_state;

static __thread thread_state ts;

static int thread_ready(void)
{
    if (!ts.mem) ts.mem = xcalloc(MAX_PLANS, sizeof *ts.mem);
    return ts.stream || !dnnl_stream_create(&ts.stream, engine, dnnl_stream_default_flags);
}

/* A thread's buffer *buf of *have bytes, grown to at least bytes. */
static void *grow(void **buf, size_t *have, size_t bytes)
{
    if (bytes <= *have) return *buf;
    free(*buf);
    if (posix_memalign(buf, 64, bytes)) hat_die("out of memory (a oneDNN buffer of %zu bytes)", bytes);
    *have = bytes;
    return *buf;
}

/* d[0, n) = s[0, n) rounded to bf16 (vecmath.h's rule). */
HAT_CLONES
void bf16_from_f32(uint16_t *d, const float *s, size_t n)
{
    for (size_t j = 0; j < n; j++) d[j] = (uint16_t)bf16_bits(s[j]);
}

/* Plan i's memory objects for this thread, made the first time (no
 * scratchpad object where the plan needs none). */
static dnnl_memory_t *memories(int i)
{
    dnnl_memory_t *m = ts.mem[i];
    if (m[0]) return m;
    const plan *q = &plans[i];
    dnnl_memory_desc_t a, b, c;
    if (operands(q, &a, &b, &c) ||
        dnnl_memory_create(&m[0], &a, engine, DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&m[1], &b, engine, DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&m[2], &c, engine, DNNL_MEMORY_NONE) ||
        (dnnl_memory_desc_get_size(&q->scratch) &&
         dnnl_memory_create(&m[3], &q->scratch, engine, DNNL_MEMORY_NONE)))
        hat_die("oneDNN: cannot describe a %dx%dx%d product", q->M, q->N, q->K);
    return m;
}

/* The product on oneDNN: fp32 operands, or (bf16) operands rounded to
 * bf16 already. */
static int run(int bf16, int ta, int tb, int M, int N, int K, float alpha, const void *A, int lda,
               const void *B, int ldb, float beta, float *C, int ldc)
{
    if (!onednn_active() || (beta != 0.0f && beta != 1.0f) || !thread_ready()) return -1;
    plan q = { ta, tb, M, N, K, lda, ldb, ldc, beta != 0.0f, bf16, alpha, NULL, { 0 } };
    int i = plan_for(&q);
    if (i < 0) return -1;
    const plan *p = &plans[i];
    dnnl_memory_t *m = memories(i);
    dnnl_memory_set_data_handle(m[0], (void *)A);
    dnnl_memory_set_data_handle(m[1], (void *)B);
    dnnl_memory_set_data_handle(m[2], C);
    if (m[3]) dnnl_memory_set_data_handle(m[3], grow(&ts.scratch, &ts.scratch_bytes,
                                                     dnnl_memory_desc_get_size(&p->scratch)));
    dnnl_exec_arg_t args[] = { { DNNL_ARG_SRC, m[0] }, { DNNL_ARG_WEIGHTS, m[1] }, { DNNL_ARG_DST, m[2] },
                               { DNNL_ARG_SCRATCHPAD, m[3] } };
    /* a product that started cannot fall back: C may be half written */
    if (dnnl_primitive_execute(p->prim, ts.stream, m[3] ? 4 : 3, args) || dnnl_stream_wait(ts.stream))
        hat_die("oneDNN matmul %dx%dx%d failed", M, N, K);
    return 0;
}

int onednn_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc)
{
    return run(0, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

int onednn_gemm_bf16(int ta, int tb, int M, int N, int K, const uint16_t *A, int lda,
                     const uint16_t *B, int ldb, float beta, float *C, int ldc)
{
    return bf16_on ? run(1, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc) : -1;
}

int gemm_bf16(void)
{
    return onednn_active() && bf16_on;
}

void gemm_block(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc)
{
    if (!run(0, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
