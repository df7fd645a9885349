/* device.h — which device computes, and the small CUDA runtime around it.
 *
 * Pure C, no CUDA headers: every program can include it.  Two halves:
 *   - selection (device_select.c, built in every configuration):
 *     `--device cpu|cuda|auto` parsing and resolution.  device_available()
 *     is safe anywhere: 0 in a build without CUDA, 0 when the CUDA
 *     runtime finds no driver or no GPU, else the number of GPUs.
 *   - the runtime (device.cu, built only with CUDA, i.e. when HAT_CUDA is
 *     defined): one current GPU, one stream, one cuBLAS handle, for the
 *     whole process (llm.c style).  Every cuda_* kernel enqueues on that
 *     stream, so calls are ordered without explicit synchronisation;
 *     device_download and the reductions that return a host value
 *     synchronise.
 * CUDA errors are fatal: "prog: cuda: FILE:LINE: message" and exit 1 —
 * a failed kernel leaves nothing worth recovering. */
#ifndef HAT_CUDA_DEVICE_H
#define HAT_CUDA_DEVICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    HAT_DEVICE_INVALID = -1,
    HAT_DEVICE_CPU = 0,
    HAT_DEVICE_CUDA = 1,
    HAT_DEVICE_AUTO = 2,
} hat_device;

/* "cpu", "cuda", "auto" (also "gpu" = cuda); anything else INVALID. */
hat_device  device_parse(const char *s);
const char *device_name(hat_device d);          /* "cpu", "cuda", "auto" */
/* Number of usable CUDA GPUs; 0 without CUDA, driver or GPU.  Never
 * fails and never prints. */
int         device_available(void);
/* 1 when this build has the CUDA back end (compiled with HAT_CUDA). */
int         device_compiled(void);
/* Make the GPU that device_init chose current in the calling thread too
 * (the CUDA runtime's current device is per thread: a thread that did
 * not call device_init would use GPU 0).  A no-op before device_init and
 * in a build without CUDA; safe anywhere. */
void        device_bind_thread(void);
/* AUTO -> CUDA when a GPU is available, else CPU.  CUDA without one (or
 * in a build without CUDA) -> INVALID with *why set to the reason. */
hat_device  device_resolve(hat_device d, const char **why);

/* ----- the CUDA runtime (only in builds with HAT_CUDA) */

typedef struct {
    int    ordinal;
    char   name[256];
    int    cc_major, cc_minor;     /* compute capability */
    int    sm_count;
    size_t mem_total, mem_free;    /* bytes */
    double mem_bw_gbs;             /* theoretical: 2 * bus width * clock */
    double peak_bf16_tflops;       /* dense, from a table by name; 0 = unknown */
} device_info;

/* Select GPU `ordinal` (-1: $HAT_CUDA_DEVICE, else the local rank
 * modulo the count, else 0), create the stream and cuBLAS handle.
 * Returns 0, or -1 after a diagnostic when no GPU can be used.
 * Idempotent. */
int    device_init(int ordinal);
int    device_ready(void);             /* 1 after a successful init */
void   device_query(device_info *info);
void   device_shutdown(void);

void  *device_malloc(size_t bytes);    /* zeroed; fatal on failure */
void   device_free(void *p);
void   device_upload(void *dst, const void *src, size_t bytes);
void   device_download(void *dst, const void *src, size_t bytes);   /* syncs */
void   device_copy(void *dst, const void *src, size_t bytes);       /* d -> d */
void   device_zero(void *p, size_t bytes);
void   device_sync(void);
/* Seconds between two points of the stream (CUDA events), for benches:
 * t = device_timer_start(); ...; s = device_timer_stop(t). */
void  *device_timer_start(void);
double device_timer_stop(void *t);

#ifdef __cplusplus
}
#endif
#endif
