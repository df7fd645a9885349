/* optim.c — AdamW, clipping and learning-rate schedules (see optim.h). */
#include "optim.h"
#include "kernels.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void optim_defaults(optim_config *o)
{
    memset(o, 0, sizeof *o);
    o->lr = 3e-4f;
    o->min_lr = 0;
    o->warmup = 0;
    o->total_steps = 0;
    o->schedule = SCHED_COSINE;
    o->beta1 = 0.9f;
    o->beta2 = 0.95f;
    o->eps = 1e-8f;
    o->weight_decay = 0.1f;
    o->grad_clip = 1.0f;
}

static const char *sched_names[] = { "cosine", "linear", "constant" };

int optim_schedule_parse(const char *s)
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, sched_names[i])) return i;
    return -1;
}

const char *optim_schedule_name(int s) { return sched_names[s]; }

float optim_lr(const optim_config *o, long step)
{
    if (o->warmup > 0 && step < o->warmup)
        return o->lr * (float)(step + 1) / (float)o->warmup;
    if (o->schedule == SCHED_CONSTANT || o->total_steps <= o->warmup) return o->lr;
    double frac = (double)(step - o->warmup) / (double)(o->total_steps - o->warmup);
    if (frac > 1) frac = 1;
    double k = o->schedule == SCHED_COSINE ? 0.5 * (1 + cos(M_PI * frac)) : 1 - frac;
    return (float)(o->min_lr + (o->lr - o->min_lr) * k);
}

double grad_norm(const model *m)
{
    return sqrt(sumsq(m->grads, m->n_floats));   /* padding is always zero */
}

double grad_clip(model *m, float max_norm)
{
    double n = grad_norm(m);
    if (max_norm > 0 && n > max_norm)
        scale_inplace(m->grads, m->n_floats, (float)(max_norm / (n + 1e-6)));
    return n;
}

/* The whole model in one pass of the kernel (not one call per tensor:
 * one fork and join of the threads instead of one per tensor). */
void adamw_step(model *m, float *exp_avg, float *exp_avg_sq, const optim_config *o,
                float lr, long t)
{
    int n = m->n_tensors;
    size_t *off = xmalloc(n * sizeof *off), *numel = xmalloc(n * sizeof *numel);
    int *decay = xmalloc(n * sizeof *decay);
    for (int i = 0; i < n; i++) {
        off[i] = m->tensors[i].offset;
        numel[i] = m->tensors[i].numel;
        decay[i] = m->tensors[i].decay;
    }
    adamw_update_tensors(m->params, exp_avg, exp_avg_sq, m->grads, off, numel, decay, n,
                         lr, o->beta1, o->beta2, o->eps, o->weight_decay, (int)t);
    free(off); free(numel); free(decay);
    m->version++;
}

int optim_cli(const cli_spec *spec, int opt, const char *arg, optim_config *o)
{
    switch (opt) {
    case OPTIM_OPT_LR: o->lr = (float)cli_double(spec, "--lr", arg, 0, 10); return 1;
    case OPTIM_OPT_MIN_LR: o->min_lr = (float)cli_double(spec, "--min-lr", arg, 0, 10); return 1;
    case OPTIM_OPT_WARMUP: o->warmup = (int)cli_long(spec, "--warmup", arg, 0, 1L << 30); return 1;
    case OPTIM_OPT_SCHEDULE:
        if ((o->schedule = optim_schedule_parse(arg)) < 0)
            cli_usage_error(spec, "--schedule: must be cosine, linear or constant");
        return 1;
    case OPTIM_OPT_TOTAL: o->total_steps = cli_long(spec, "--total-steps", arg, 1, 1L << 40); return 1;
    case OPTIM_OPT_WD: o->weight_decay = (float)cli_double(spec, "--weight-decay", arg, 0, 10); return 1;
    case OPTIM_OPT_BETA2: o->beta2 = (float)cli_double(spec, "--beta2", arg, 0, 0.999999); return 1;
    case OPTIM_OPT_CLIP: o->grad_clip = (float)cli_double(spec, "--clip", arg, 0, 1e9); return 1;
    }
    return 0;
}
