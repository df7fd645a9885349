/* optim.h — training arithmetic around the model: AdamW over the flat
 * parameter buffer (decoupled weight decay, bias correction, no decay on
 * norms and other 1-D tensors), global-norm gradient clipping, and the
 * learning-rate schedule (linear warmup, then cosine, linear or constant).
 * Gradient accumulation needs nothing here: backward adds into the
 * gradient buffer, the trainer scales each micro-batch by 1/(targets of
 * the whole step) and steps once. */
#ifndef HAT_OPTIM_H
#define HAT_OPTIM_H

#include "model.h"

enum { SCHED_COSINE, SCHED_LINEAR, SCHED_CONSTANT };

typedef struct {
    float lr;             /* peak learning rate */
    float min_lr;         /* floor reached at total_steps */
    int   warmup;         /* steps of linear warmup from 0 */
    long  total_steps;    /* length of the decay */
    int   schedule;       /* SCHED_* */
    float beta1, beta2, eps, weight_decay;
    float grad_clip;      /* max global norm; <= 0 = no clipping */
} optim_config;

void  optim_defaults(optim_config *o);
/* "cosine" | "linear" | "constant" -> SCHED_*, or -1. */
int   optim_schedule_parse(const char *s);
const char *optim_schedule_name(int s);
/* Learning rate for 0-based step (the step about to be taken). */
float optim_lr(const optim_config *o, long step);
/* Global L2 norm of the gradients (deterministic order). */
double grad_norm(const model *m);
/* Scale gradients so their global norm is at most max_norm; returns the
 * norm before clipping. */
double grad_clip(model *m, float max_norm);
/* One AdamW update of every tensor; t is the 1-based step count. */
void  adamw_step(model *m, float *exp_avg, float *exp_avg_sq, const optim_config *o,
                 float lr, long t);

#endif
