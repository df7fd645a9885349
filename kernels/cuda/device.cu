/* device.cu — the CUDA runtime of the back end: one GPU, one stream, one
 * cuBLAS handle per process; allocation and copies; fatal error reports
 * with file:line; the scratch buffer; a peak table for MFU.
 * device_available() must work on machines with no driver at all (the
 * CPU-only CI): cudaGetDeviceCount then fails and we say 0. */
#include "cuda/common.cuh"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "util.h"
}

static int            g_ready;
static int            g_ordinal = -1;
static int            g_sms;
static cudaStream_t   g_stream;
static cublasHandle_t g_blas;
static void          *g_scratch;
static size_t         g_scratch_n;

extern "C" void cuda_fatal(const char *file, int line, const char *what, const char *msg)
{
    fprintf(stderr, "%s: cuda: %s:%d: %s: %s\n", hat_prog ? hat_prog : "hat", file, line, what, msg);
    exit(1);
}

extern "C" int device_compiled(void) { return 1; }

extern "C" int device_available(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();          /* clear the sticky "no driver" error */
        return 0;
    }
    return n;
}

/* The rank of this process on its node, from the launchers we know. */
static int local_rank(void)
{
    static const char *vars[] = { "HAT_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                  "MPI_LOCALRANKID", "SLURM_LOCALID", NULL };
    for (int i = 0; vars[i]; i++) {
        const char *s = getenv(vars[i]);
        if (s && *s) return atoi(s);
    }
    return 0;
}

extern "C" int device_init(int ordinal)
{
    if (g_ready) return 0;
    int n = device_available();
    if (n <= 0) {
        hat_warn("cuda: no CUDA GPU or driver found");
        return -1;
    }
    if (ordinal < 0) {
        const char *s = getenv("HAT_CUDA_DEVICE");
        ordinal = s && *s ? atoi(s) : local_rank() % n;
    }
    if (ordinal >= n) {
        hat_warn("cuda: device %d requested, %d present", ordinal, n);
        return -1;
    }
    CUDA_CHECK(cudaSetDevice(ordinal));
    CUDA_CHECK(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, ordinal));
    CUDA_CHECK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&g_blas));
    CUBLAS_CHECK(cublasSetStream(g_blas, g_stream));
    /* fp32 GEMMs stay fp32: no silent TF32 (the parity path needs it). */
    CUBLAS_CHECK(cublasSetMathMode(g_blas, CUBLAS_DEFAULT_MATH));
    g_ordinal = ordinal;
    g_ready = 1;
    return 0;
}

extern "C" int device_ready(void) { return g_ready; }

extern "C" void device_bind_thread(void)
{
    if (g_ready) CUDA_CHECK(cudaSetDevice(g_ordinal));
}

/* Dense bf16 tensor-core peaks (TFLOP/s) by product name, from vendor
 * datasheets; anything not listed is "unknown" (0), never a guess. */
static double peak_bf16(const char *name)
{
    static const struct { const char *pat; double tf; } t[] = {
        { "H200", 989.4 }, { "H100 SXM", 989.4 }, { "H100 80GB HBM3", 989.4 },
        { "H100 PCIe", 756.0 }, { "H100 NVL", 835.0 }, { "A100", 312.0 },
        { "L40S", 362.0 }, { "A10G", 70.0 }, { NULL, 0 },
    };
    for (int i = 0; t[i].pat; i++)
        if (strstr(name, t[i].pat)) return t[i].tf;
    return 0;
}

extern "C" void device_query(device_info *info)
{
    memset(info, 0, sizeof *info);
    if (!g_ready) return;
    cudaDeviceProp p;
    CUDA_CHECK(cudaGetDeviceProperties(&p, g_ordinal));
    info->ordinal = g_ordinal;
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->sm_count = p.multiProcessorCount;
    CUDA_CHECK(cudaMemGetInfo(&info->mem_free, &info->mem_total));
    int khz = 0, bits = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, g_ordinal));
    CUDA_CHECK(cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, g_ordinal));
    info->mem_bw_gbs = 2.0 * khz * 1e3 * (bits / 8.0) / 1e9;
    info->peak_bf16_tflops = peak_bf16(p.name);
}

extern "C" void device_shutdown(void)
{
    if (!g_ready) return;
    CUDA_CHECK(cudaStreamSynchronize(g_stream));
    if (g_scratch) CUDA_CHECK(cudaFree(g_scratch));
    g_scratch = NULL;
    g_scratch_n = 0;
    CUBLAS_CHECK(cublasDestroy(g_blas));
    CUDA_CHECK(cudaStreamDestroy(g_stream));
    g_ready = 0;
}

static void need_ready(const char *fn)
{
    if (!g_ready) {
        fprintf(stderr, "%s: cuda: %s before device_init\n", hat_prog ? hat_prog : "hat", fn);
        exit(1);
    }
}

extern "C" void *device_malloc(size_t bytes)
{
    need_ready("device_malloc");
    void *p = NULL;
    if (bytes == 0) bytes = 1;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s (%zu bytes)", cudaGetErrorString(e), bytes);
        cuda_fatal(__FILE__, __LINE__, "cudaMalloc", msg);
    }
    CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, g_stream));
    return p;
}

extern "C" void device_free(void *p)
{
    if (p) CUDA_CHECK(cudaFree(p));   /* cudaFree waits for pending work */
}

/* Host <-> device copies are synchronous: host buffers may be reused or
 * freed as soon as these return (no pinned staging to manage). */
extern "C" void device_upload(void *dst, const void *src, size_t bytes)
{
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g_stream));
    CUDA_CHECK(cudaStreamSynchronize(g_stream));
}

extern "C" void device_download(void *dst, const void *src, size_t bytes)
{
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, g_stream));
    CUDA_CHECK(cudaStreamSynchronize(g_stream));
}

extern "C" void device_copy(void *dst, const void *src, size_t bytes)
{
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, g_stream));
}

extern "C" void device_zero(void *p, size_t bytes)
{
    CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, g_stream));
}

extern "C" void device_sync(void)
{
    CUDA_CHECK(cudaStreamSynchronize(g_stream));
}

extern "C" void *device_timer_start(void)
{
    cudaEvent_t *ev = (cudaEvent_t *)xmalloc(2 * sizeof(cudaEvent_t));
    CUDA_CHECK(cudaEventCreate(&ev[0]));
    CUDA_CHECK(cudaEventCreate(&ev[1]));
    CUDA_CHECK(cudaEventRecord(ev[0], g_stream));
    return ev;
}

extern "C" double device_timer_stop(void *t)
{
    cudaEvent_t *ev = (cudaEvent_t *)t;
    float ms = 0;
    CUDA_CHECK(cudaEventRecord(ev[1], g_stream));
    CUDA_CHECK(cudaEventSynchronize(ev[1]));
    CUDA_CHECK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
    CUDA_CHECK(cudaEventDestroy(ev[0]));
    CUDA_CHECK(cudaEventDestroy(ev[1]));
    free(ev);
    return ms / 1e3;
}

cudaStream_t cuda_stream(void) { need_ready("cuda kernel"); return g_stream; }
cublasHandle_t cuda_blas(void) { need_ready("cuda kernel"); return g_blas; }
int cuda_sm_count(void) { return g_sms; }

void *cuda_scratch(size_t bytes)
{
    if (bytes > g_scratch_n) {
        if (g_scratch) CUDA_CHECK(cudaFree(g_scratch));
        g_scratch_n = bytes + bytes / 4;
        CUDA_CHECK(cudaMalloc(&g_scratch, g_scratch_n));
    }
    return g_scratch;
}

/* ------------------------------------------------------------ bf16 */

extern "C" hat_bf16 bf16_from_float(float x)
{
    bf16 b = __float2bfloat16_rn(x);
    hat_bf16 r;
    memcpy(&r, &b, sizeof r);
    return r;
}

extern "C" float bf16_to_float(hat_bf16 x)
{
    uint32_t u = (uint32_t)x << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

template <typename A, typename B>
__global__ void convert_kernel(B *out, const A *in, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) st(out + i, ld(in[i]));
}

extern "C" void cuda_f32_to_bf16(hat_bf16 *out, const float *in, size_t n)
{
    convert_kernel<float, bf16><<<grid_for(n, 256), 256, 0, cuda_stream()>>>((bf16 *)out, in, n);
    CUDA_LAUNCHED();
}

extern "C" void cuda_bf16_to_f32(float *out, const hat_bf16 *in, size_t n)
{
    convert_kernel<bf16, float><<<grid_for(n, 256), 256, 0, cuda_stream()>>>(out, (const bf16 *)in, n);
    CUDA_LAUNCHED();
}
