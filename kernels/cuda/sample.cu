/* sample.cu — sample_logits (common/generate.c) on the GPU, so decoding
 * copies back one id per sequence instead of a vocabulary of logits.
 *
 * Per row, with the CPU's arithmetic (double where it uses double):
 *   1. argmax (first index of the maximum) and lse = mx + log sum exp;
 *   2. temperature > 0: pr = (float)exp((z - mx) / temperature), divided
 *      by their double sum; a stable descending radix sort of (pr, id)
 *      with ids ascending gives the CPU's order (ties: lowest id first);
 *   3. one block walks the sorted row with a block-wide prefix sum:
 *      cut to top_k, then to the first prefix reaching top_p, then the
 *      first id whose cumulative mass exceeds u * kept mass.
 * The caller draws u on the host from the sequence's own stream, so the
 * GPU picks what the CPU would from the same stream (up to the last bit
 * of a double sum: a draw within ~1e-15 of a boundary may differ). */
#include "cuda/common.cuh"

#include <cub/cub.cuh>
#include <limits.h>
#include <math.h>

#define SAMPLE_THREADS 1024
/* Kernels launched with SAMPLE_THREADS say so (__launch_bounds__): else
 * the compiler may use more than 64 registers a thread, and a launch of
 * 1024 threads fails with "too many resources requested" (seen on sm_90:
 * pick_kernel's double-precision block scan). */

/* Argmax (lowest index on ties) and log-sum-exp of each row. */
__global__ void __launch_bounds__(SAMPLE_THREADS)
row_stats_kernel(int *arg, float *mxo, double *lse, const float *logits, int V)
{
    __shared__ float sv[32];
    __shared__ int si[32];
    __shared__ double sd[32];
    const float *z = logits + (size_t)blockIdx.x * V;
    float v = -INFINITY;
    int ix = INT_MAX;
    for (int i = threadIdx.x; i < V; i += blockDim.x)
        if (ix == INT_MAX || z[i] > v) { v = z[i]; ix = i; }
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, v, o);
        int oi = __shfl_xor_sync(0xffffffffu, ix, o);
        if (oi != INT_MAX && (ix == INT_MAX || ov > v || (ov == v && oi < ix))) { v = ov; ix = oi; }
    }
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if (lane == 0) { sv[w] = v; si[w] = ix; }
    __syncthreads();
    if (w == 0) {
        v = lane < nw ? sv[lane] : -INFINITY;
        ix = lane < nw ? si[lane] : INT_MAX;
        for (int o = 16; o > 0; o >>= 1) {
            float ov = __shfl_xor_sync(0xffffffffu, v, o);
            int oi = __shfl_xor_sync(0xffffffffu, ix, o);
            if (oi != INT_MAX && (ix == INT_MAX || ov > v || (ov == v && oi < ix))) { v = ov; ix = oi; }
        }
        if (lane == 0) { sv[0] = v; si[0] = ix; }
    }
    __syncthreads();
    float mx = sv[0];
    double s = 0;
    for (int i = threadIdx.x; i < V; i += blockDim.x) s += exp((double)z[i] - mx);
    s = block_sum(s, sd);
    if (threadIdx.x == 0) {
        arg[blockIdx.x] = si[0];
        mxo[blockIdx.x] = mx;
        lse[blockIdx.x] = mx + log(s);
    }
}

/* Tempered probabilities of each row, normalised, and the id list. */
__global__ void __launch_bounds__(SAMPLE_THREADS)
probs_kernel(float *pr, int *idx, const float *logits, const float *mx,
                             int V, float temperature)
{
    __shared__ double sd[32];
    size_t off = (size_t)blockIdx.x * V;
    const float *z = logits + off;
    double m = mx[blockIdx.x], s = 0;
    for (int i = threadIdx.x; i < V; i += blockDim.x) {
        float e = (float)exp(((double)z[i] - m) / (double)temperature);
        pr[off + i] = e;
        idx[off + i] = i;
        s += e;
    }
    s = block_sum(s, sd);
    for (int i = threadIdx.x; i < V; i += blockDim.x)   /* same elements as above */
        pr[off + i] = (float)((double)pr[off + i] / s);
}

__global__ void offsets_kernel(int *off, int R, int V)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= R) off[i] = i * V;
}

/* First i < n whose inclusive prefix sum c_i satisfies c_i >= thr (or
 * thr < c_i when strict); returns it with *c = c_i, or -1 with *c = the
 * sum of all n.  Every thread of the block calls it and gets the same. */
__device__ int scan_find(const float *p, int n, double thr, bool strict, double *c_out)
{
    typedef cub::BlockScan<double, SAMPLE_THREADS> Scan;
    __shared__ typename Scan::TempStorage tmp;
    __shared__ double carry, cfound;
    __shared__ int found;
    if (threadIdx.x == 0) { carry = 0; found = INT_MAX; }
    __syncthreads();
    for (int base = 0; base < n; base += SAMPLE_THREADS) {
        int i = base + threadIdx.x;
        double x = i < n ? (double)p[i] : 0.0, c;
        Scan(tmp).InclusiveSum(x, c);
        c += carry;
        if (i < n && (strict ? thr < c : c >= thr)) atomicMin(&found, i);
        __syncthreads();
        if (found != INT_MAX) {                  /* uniform: all read after the barrier */
            if (i == found) cfound = c;
            __syncthreads();
            int f = found;
            double cf = cfound;
            __syncthreads();                     /* before a later call resets them */
            *c_out = cf;
            return f;
        }
        if (threadIdx.x == SAMPLE_THREADS - 1) carry = c;
        __syncthreads();
    }
    double t = carry;
    __syncthreads();
    *c_out = t;
    return -1;
}

__global__ void __launch_bounds__(SAMPLE_THREADS)
pick_kernel(int *ids, const float *sorted_p, const int *sorted_id, const double *u,
                            int V, int top_k, float top_p)
{
    size_t off = (size_t)blockIdx.x * V;
    const float *p = sorted_p + off;
    const int *id = sorted_id + off;
    int keep = V;
    if (top_k > 0 && top_k < keep) keep = top_k;
    double tot, c;
    int f = scan_find(p, keep, top_p > 0 && top_p < 1 ? (double)top_p : INFINITY, false, &tot);
    if (f >= 0) keep = f + 1;                    /* tot = mass of the kept prefix either way */
    f = scan_find(p, keep, u[blockIdx.x] * tot, true, &c);
    if (threadIdx.x == 0) ids[blockIdx.x] = id[f >= 0 ? f : keep - 1];
}

__global__ void logprob_kernel(float *lp, const int *ids, const float *logits, const double *lse,
                               int R, int V)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < R) lp[r] = (float)((double)logits[(size_t)r * V + ids[r]] - lse[r]);
}

static size_t align256(size_t n) { return (n + 255) / 256 * 256; }

extern "C" void cuda_sample_logits(int *ids, float *logprobs, const float *logits,
                                   const double *u, int R, int V,
                                   float temperature, int top_k, float top_p)
{
    if (R <= 0) return;
    size_t rv = (size_t)R * V, sort_bytes = 0;
    int sampling = temperature > 0;
    if (sampling)
        CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairsDescending(
            NULL, sort_bytes, (const float *)NULL, (float *)NULL, (const int *)NULL, (int *)NULL,
            (int)rv, R, (const int *)NULL, (const int *)NULL, 0, 32, cuda_stream()));
    /* doubles first, then 4-byte arrays, each 256-byte aligned */
    size_t o_lse = 0, o_u = o_lse + align256(R * 8), o_arg = o_u + align256(R * 8);
    size_t o_mx = o_arg + align256(R * 4), o_ids = o_mx + align256(R * 4);
    size_t o_lp = o_ids + align256(R * 4), o_off = o_lp + align256(R * 4);
    size_t o_pr = o_off + align256((R + 1) * 4), o_prs = o_pr + (sampling ? align256(rv * 4) : 0);
    size_t o_ix = o_prs + (sampling ? align256(rv * 4) : 0), o_ixs = o_ix + (sampling ? align256(rv * 4) : 0);
    size_t o_tmp = o_ixs + (sampling ? align256(rv * 4) : 0);
    char *b = (char *)cuda_scratch(o_tmp + sort_bytes);
    double *d_lse = (double *)(b + o_lse), *d_u = (double *)(b + o_u);
    int *d_arg = (int *)(b + o_arg), *d_ids = (int *)(b + o_ids), *d_off = (int *)(b + o_off);
    float *d_mx = (float *)(b + o_mx), *d_lp = (float *)(b + o_lp);

    row_stats_kernel<<<R, SAMPLE_THREADS, 0, cuda_stream()>>>(d_arg, d_mx, d_lse, logits, V);
    CUDA_LAUNCHED();
    int *chosen = d_arg;
    if (sampling) {
        float *pr = (float *)(b + o_pr), *prs = (float *)(b + o_prs);
        int *ix = (int *)(b + o_ix), *ixs = (int *)(b + o_ixs);
        device_upload(d_u, u, (size_t)R * sizeof(double));
        probs_kernel<<<R, SAMPLE_THREADS, 0, cuda_stream()>>>(pr, ix, logits, d_mx, V, temperature);
        CUDA_LAUNCHED();
        offsets_kernel<<<grid_for(R + 1, 256), 256, 0, cuda_stream()>>>(d_off, R, V);
        CUDA_LAUNCHED();
        CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairsDescending(
            b + o_tmp, sort_bytes, pr, prs, ix, ixs, (int)rv, R, d_off, d_off + 1, 0, 32,
            cuda_stream()));
        pick_kernel<<<R, SAMPLE_THREADS, 0, cuda_stream()>>>(d_ids, prs, ixs, d_u, V, top_k, top_p);
        CUDA_LAUNCHED();
        chosen = d_ids;
    }
    logprob_kernel<<<grid_for(R, 128), 128, 0, cuda_stream()>>>(d_lp, chosen, logits, d_lse, R, V);
    CUDA_LAUNCHED();
    device_download(ids, chosen, (size_t)R * sizeof(int));
    device_download(logprobs, d_lp, (size_t)R * sizeof(float));
}
