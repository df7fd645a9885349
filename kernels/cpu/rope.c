/* rope.c — rotary position embedding, Hugging Face rotate-half layout:
 * for j < D/2 the pair (x[j], x[j+D/2]) is rotated by pos * inv_freq[j]. */
#include "kernels.h"

#include <math.h>

void rope_table(float *cos_t, float *sin_t, int P, int D, double theta)
{
    int half = D / 2;
    for (int p = 0; p < P; p++)
        for (int j = 0; j < half; j++) {
            double inv = pow(theta, -(2.0 * j) / D);
            double a = (double)p * inv;
            cos_t[(size_t)p * half + j] = (float)cos(a);
            sin_t[(size_t)p * half + j] = (float)sin(a);
        }
}

static void rotate(float *x, const int *pos, const float *cos_t,
                   const float *sin_t, int N, int nh, int D, float sign)
{
    int half = D / 2;
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *c = cos_t + (size_t)pos[n] * half;
        const float *s = sin_t + (size_t)pos[n] * half;
        for (int h = 0; h < nh; h++) {
            float *v = x + ((size_t)n * nh + h) * D;
            for (int j = 0; j < half; j++) {
                float a = v[j], b = v[j + half], sn = sign * s[j];
                v[j] = a * c[j] - b * sn;
                v[j + half] = b * c[j] + a * sn;
            }
        }
    }
}

void rope_forward(float *x, const int *pos, const float *cos_t,
                  const float *sin_t, int N, int nh, int D)
{
    rotate(x, pos, cos_t, sin_t, N, nh, D, 1.0f);
}

void rope_backward(float *dx, const int *pos, const float *cos_t,
                   const float *sin_t, int N, int nh, int D)
{
    rotate(dx, pos, cos_t, sin_t, N, nh, D, -1.0f);
}
