/* optim.c — AdamW, clipping and learning-rate schedules (see optim.h). */
#include "optim.h"
#include "kernels.h"

#include <math.h>
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

void adamw_step(model *m, float *exp_avg, float *exp_avg_sq, const optim_config *o,
                float lr, long t)
{
    for (int i = 0; i < m->n_tensors; i++) {
        const model_tensor *mt = &m->tensors[i];
        size_t off = mt->offset;
        adamw_update(m->params + off, exp_avg + off, exp_avg_sq + off, m->grads + off, mt->numel,
                     lr, o->beta1, o->beta2, o->eps, mt->decay ? o->weight_decay : 0.0f, (int)t);
    }
}
