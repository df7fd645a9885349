/* fill.c — zeroing and copying activation-sized buffers on every thread.
 * A training step clears or copies several megabytes per layer (gradient
 * buffers that backward accumulates into, the residual stream that a
 * projection adds onto).  Done by memset/memcpy on the calling thread,
 * the other threads wait in libgomp for each one: on 2 cores that was a
 * serial stretch of every layer.  The split is in whole 64-byte lines;
 * the bytes written are the same as memset/memcpy's. */
#include "kernels.h"

#include <omp.h>
#include <string.h>

/* Below this many floats one thread is quicker than a fork and join. */
#define FILL_SPLIT_MIN 32768

/* Thread t's range of n floats, in whole 16-float lines. */
static void fill_share(size_t n, size_t *lo, size_t *hi)
{
    int nt = omp_get_num_threads(), t = omp_get_thread_num();
    size_t chunk = ((n + nt - 1) / nt + 15) / 16 * 16;
    *lo = t * chunk < n ? t * chunk : n;
    *hi = *lo + chunk < n ? *lo + chunk : n;
}

void vzero(float *x, size_t n)
{
    #pragma omp parallel if (n >= FILL_SPLIT_MIN)
    {
        size_t lo, hi;
        fill_share(n, &lo, &hi);
        if (hi > lo) memset(x + lo, 0, (hi - lo) * sizeof(float));
    }
}

void vcopy(float *dst, const float *src, size_t n)
{
    #pragma omp parallel if (n >= FILL_SPLIT_MIN)
    {
        size_t lo, hi;
        fill_share(n, &lo, &hi);
        if (hi > lo) memcpy(dst + lo, src + lo, (hi - lo) * sizeof(float));
    }
}
