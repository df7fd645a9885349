/* model_cuda.h — a device copy of a model (model.h) that trains on one
 * NVIDIA GPU: the same forward and backward, op for op, built from the
 * cuda_* kernels (kernels/cuda/kernels_cuda.h).
 *
 * Layout: the fp32 master parameters live on the device in ONE flat
 * buffer laid out exactly like m->params (same table, same offsets, same
 * zero padding), so model_bind on the device base gives every tensor
 * pointer and upload/download are single copies.  Gradients and the two
 * AdamW moments are flat likewise, so clipping, the optimiser and the
 * data-parallel all-reduce each touch one buffer.
 *
 * Two precisions, chosen at creation:
 *   MC_FP32  cuda_X kernels, fp32 everything: the parity path (matches
 *            model.c to rounding; tests/unit/test_model_cuda.c);
 *   MC_BF16  cuda_X_bf16 kernels: a bf16 copy of the weights (refreshed
 *            by every AdamW step), bf16 activations and activation
 *            gradients, fp32 statistics, fp32 weight gradients and fp32
 *            master weights and moments: the fast path.
 *
 * Semantics are model.c's: targets -1 = no loss; forward returns mean CE
 * (+ mtp_loss_weight * MTP mean CE) and leaves loss_sum / n_targets;
 * backward ADDS gradients with the same scales; forward_logits /
 * backward_dlogits run the trunk only (no MTP).  Activation buffers are
 * sized lazily for the largest B*T seen and reused below it.
 *
 * Every function is declared in every build; in a build without the CUDA
 * back end model_cuda_new fails with a message (and nothing else can be
 * reached), so callers need no #ifdef.  Device errors are fatal (device.h). */
#ifndef HAT_MODEL_CUDA_H
#define HAT_MODEL_CUDA_H

#include "model.h"
#include "optim.h"

#include <stddef.h>
#include <stdint.h>

enum { MC_FP32 = 0, MC_BF16 = 1 };

/* "fp32" | "bf16" -> MC_*, or -1. */
int         model_cuda_precision_parse(const char *s);
const char *model_cuda_precision_name(int precision);

typedef struct mc_priv mc_priv;   /* activations, scratch, host staging */

typedef struct {
    model         *m;            /* host model: config, tensor table, host params */
    int            precision;    /* MC_FP32 | MC_BF16 */
    size_t         n_floats;     /* = m->n_floats */
    /* device, flat, laid out like m->params */
    float         *params;       /* fp32 master weights */
    uint16_t      *params16;     /* bf16 copy the MC_BF16 kernels read, else NULL */
    float         *grads;
    float         *exp_avg, *exp_avg_sq;
    model_weights  w, g;         /* device tensor pointers into params / grads */
    /* results of the last forward (as in model.h) */
    int            B, T;
    double         loss_sum, mtp_loss_sum;
    long           n_targets, n_mtp_targets;
    mc_priv       *priv;
} model_cuda;

/* Initialise the GPU (device_init(-1) when not done yet), allocate the
 * flat buffers and upload m->params; moments start at zero.  NULL after
 * a one-line diagnostic when there is no usable GPU or no CUDA build. */
model_cuda *model_cuda_new(model *m, int precision);
/* A forward-only copy (a frozen teacher or reference model): parameters
 * only, no gradients or moments (grads, exp_avg, exp_avg_sq are NULL; a
 * backward or optimiser call on it is a fatal programming error).  m is
 * only read. */
model_cuda *model_cuda_new_frozen(const model *m, int precision);
void        model_cuda_free(model_cuda *d);

/* Host -> device: params (and the bf16 copy) from `params` laid out like
 * m->params (usually m->params itself); moments when not NULL. */
void  model_cuda_upload(model_cuda *d, const float *params);
void  model_cuda_upload_moments(model_cuda *d, const float *exp_avg, const float *exp_avg_sq);
/* Device -> host, each of n_floats floats; NULL skips one.  Downloading
 * into d->m->params bumps d->m->version (the host weights changed). */
void  model_cuda_download(model_cuda *d, float *params, float *grads, float *exp_avg,
                          float *exp_avg_sq);

/* Training forward and backward, as model_forward / model_backward. */
float model_cuda_forward(model_cuda *d, const int *tokens, const int *targets, int B, int T);
void  model_cuda_backward(model_cuda *d, float main_scale, float mtp_scale);
void  model_cuda_backward_mean(model_cuda *d);

/* As model_forward_logits: the logits (B*T, V) in fp32 on the HOST,
 * owned by d and valid until the next call.  model_cuda_backward_dlogits
 * takes d(loss)/d(logits) from the host (it may be that same buffer). */
float *model_cuda_forward_logits(model_cuda *d, const int *tokens, int B, int T);
void   model_cuda_backward_dlogits(model_cuda *d, const float *dlogits);

void   model_cuda_zero_grad(model_cuda *d);
/* As grad_norm / grad_clip / adamw_step (optim.h): global L2 norm in
 * double; clip scales by max_norm / (norm + 1e-6) when norm > max_norm
 * (max_norm > 0); AdamW per tensor, weight decay only where the tensor
 * decays, t 1-based.  The step refreshes the bf16 copy in MC_BF16. */
double model_cuda_grad_norm(model_cuda *d);
double model_cuda_grad_clip(model_cuda *d, float max_norm);
void   model_cuda_adamw_step(model_cuda *d, const optim_config *o, float lr, long t);

/* Free the activations and scratch (the next forward allocates again). */
void   model_cuda_release_acts(model_cuda *d);

/* ---- data parallelism (kernels/cuda/dist.h): one process per GPU. */
typedef struct mc_dist mc_dist;
/* Rank and world size from the launcher's environment (dist.h); world 1
 * when none is set.  0, or -1 after a message (inconsistent values, or
 * a build without CUDA where a world size > 1 was asked for). */
int     model_cuda_dist_env(int *rank, int *world);
/* Join the ranks (NCCL; the rendezvous file from $HAT_DIST_FILE when the
 * world size is > 1).  NULL after a diagnostic. */
mc_dist *model_cuda_dist_open(void);
void     model_cuda_dist_close(mc_dist *x);
int      model_cuda_dist_rank(const mc_dist *x);
int      model_cuda_dist_world(const mc_dist *x);
/* Sum the flat gradient over all ranks (in place), times scale. */
void     model_cuda_allreduce_grads(model_cuda *d, mc_dist *x, float scale);
/* Sum of a host double over all ranks. */
double   model_cuda_dist_sum(mc_dist *x, double v);

#endif
