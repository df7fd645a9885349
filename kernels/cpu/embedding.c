/* embedding.c — token embedding lookup and its scatter-add backward. */
#include "kernels.h"

#include <string.h>

void embedding_forward(float *out, const int *tokens, const float *wte,
                       int N, int C)
{
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        memcpy(out + (size_t)n * C, wte + (size_t)tokens[n] * C, sizeof(float) * C);
}

/* Repeated tokens add into the same row, so threads split the columns,
 * not the rows: no races, and each element sums in token order. */
void embedding_backward(float *dwte, const float *dout, const int *tokens,
                        int N, int C)
{
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < C; i++)
        for (int n = 0; n < N; n++)
            dwte[(size_t)tokens[n] * C + i] += dout[(size_t)n * C + i];
}
