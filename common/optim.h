/* optim.h — training arithmetic around the model: AdamW over the flat
 * parameter buffer (decoupled weight decay, bias correction, no decay on
 * norms and other 1-D tensors), global-norm gradient clipping, and the
 * learning-rate schedule (linear warmup, then cosine, linear or constant).
 * Gradient accumulation needs nothing here: backward adds into the
 * gradient buffer, the trainer scales each micro-batch by 1/(targets of
 * the whole step) and steps once. */
#ifndef HAT_OPTIM_H
#define HAT_OPTIM_H

#include "cli.h"

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

/* The optimiser flags every trainer shares (sft-step, opd-step,
 * grpo-step): put OPTIM_LONG_OPTIONS in the program's option table and
 * offer each option to optim_cli first; it returns 1 when it took it. */
enum { OPTIM_OPT_LR = 0x4000, OPTIM_OPT_MIN_LR, OPTIM_OPT_WARMUP, OPTIM_OPT_SCHEDULE,
       OPTIM_OPT_TOTAL, OPTIM_OPT_WD, OPTIM_OPT_BETA2, OPTIM_OPT_CLIP };
#define OPTIM_LONG_OPTIONS \
    { "lr", required_argument, NULL, OPTIM_OPT_LR },             \
    { "min-lr", required_argument, NULL, OPTIM_OPT_MIN_LR },     \
    { "warmup", required_argument, NULL, OPTIM_OPT_WARMUP },     \
    { "schedule", required_argument, NULL, OPTIM_OPT_SCHEDULE }, \
    { "total-steps", required_argument, NULL, OPTIM_OPT_TOTAL }, \
    { "weight-decay", required_argument, NULL, OPTIM_OPT_WD },   \
    { "beta2", required_argument, NULL, OPTIM_OPT_BETA2 },       \
    { "clip", required_argument, NULL, OPTIM_OPT_CLIP }
int optim_cli(const cli_spec *spec, int opt, const char *arg, optim_config *o);

#endif
