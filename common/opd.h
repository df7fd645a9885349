/* opd.h — on-policy distillation (General OPD, DESIGN §1 stage 2): the
 * student samples K completions per prompt with the shared decoding
 * engine, a frozen teacher scores every completion token, and the loss
 * pulls the student towards the teacher by the per-token reverse KL.
 *
 * Per completion position (the distribution that predicts completion
 * token y, student logits z_s, teacher logits z_t, p = softmax):
 *   full     KL = sum_v p_s,v (log p_s,v - log p_t,v)
 *            d KL / d z_s,k = p_s,k (log p_s,k - log p_t,k - KL)
 *   sampled  a = log p_s(y) - log p_t(y), the one-sample estimate of KL;
 *            loss = -A log p_s(y) with the advantage A = -a held fixed,
 *            d / d z_s = -A (onehot(y) - p_s)
 *   forward  KL(p_t || p_s) = sum_v p_t,v (log p_t,v - log p_s,v) at the
 *            student's own positions, d / d z_s = p_s - p_t.  The reverse
 *            KL's gradient vanishes where the student is sure of a token
 *            the teacher would not write (p_s,k near 1 makes both of its
 *            factors small); the forward one stays p_s - p_t, so a
 *            student that opens every general answer with "@" as the
 *            agent does is pulled to the teacher's first token at once.
 * and the step's loss is the mean over all completion tokens of the step.
 * Prompts are general-gen records (man 5 general.jsonl): the messages up to
 * and including the first user message, rendered with the generation
 * prompt.  Prompt i of the data order draws completions from the streams
 * i * K + k.
 *
 * Teacher samples (teacher_K of the K): on-policy samples teach nothing
 * where the student's own completions are text the teacher never saw (an
 * agent's "@nick" opening run on into noise), so some of each prompt's
 * completions may be the teacher's, scored the same way: with the forward
 * KL that is word-level distillation on the teacher's text, the mixed
 * form of generalised knowledge distillation (Agarwal et al., 2024).
 *
 * Replay (opd_set_replay): OPD towards a base that knows nothing of the
 * domain pulls the student off it long before instruction following
 * comes back (examples/results/small-notes.md), so a step may also take
 * replay_batch sequences of the domain's SFT data and add replay_weight
 * times their mean cross-entropy to the loss: loss = KL + w * CE.  Step j
 * takes the sequences j * replay_batch on of the data's seeded order, so
 * a resumed run replays what an uninterrupted one would. */
#ifndef HAT_OPD_H
#define HAT_OPD_H

#include <jansson.h>

#include "model.h"
#include "tokenizer.h"
#include "train.h"

enum { OPD_KL_SAMPLED, OPD_KL_FULL, OPD_KL_FORWARD };
/* "sampled", "full", "forward" -> OPD_KL_*, or -1 */
int     opd_kl_mode(const char *name);
const char *opd_kl_name(int mode);

typedef struct {
    int   n_prompts, K;      /* prompts per step, completions per prompt */
    float temperature;
    int   top_k;
    float top_p;
    int   max_tokens;        /* completion tokens at most */
    int   kl;                /* OPD_KL_*: the per-position loss */
    int   teacher_K;         /* of the K completions of a prompt, the last teacher_K
                                are the teacher's samples (0: all the student's) */
    int   micro_batch;       /* sequences per forward pass */
    int   enable_thinking;   /* CHAT_THINK_* */
    int   replay_batch;      /* domain sequences per step (0: no replay) */
    int   replay_seq;        /* their length; longer ones are cut */
    float replay_weight;     /* weight of their cross-entropy in the loss */
} opd_config;

void    opd_config_default(opd_config *c);
json_t *opd_config_json(const opd_config *c);
int     opd_config_parse(opd_config *c, const json_t *j, const char *name);

/* KL rows: for each of N rows with tgt[n] >= 0, the student's and the
 * teacher's logits (V each).  Returns the sum of the per-row loss of mode
 * (OPD_KL_*: the reverse KL, a, or the forward KL); with ds set, writes
 * scale * d loss / d z_s into ds (rows with tgt < 0 get 0; ds may alias
 * zs). */
double opd_kl_rows(float *ds, const float *zs, const float *zt, const int *tgt, int N, int V,
                   int mode, float scale);

/* 0 when the two checkpoints' tokenizer.json say the same (compared as
 * JSON) and the vocabularies agree; else a message (malloc'd). */
char   *opd_check_tokenizers(const char *student_tok, size_t sn, const char *teacher_tok,
                             size_t tn, const model *s, const model *t);

typedef struct {
    double kl;               /* mean per completion token (the loss, full) */
    double kl_sampled;       /* mean of log p_s(y) - log p_t(y) */
    double kl_forward;       /* mean forward KL (the loss, forward) */
    double completion_len;
    double ifeval_pass;      /* prompt-level strict, over samples whose prompt has
                                instructions; -1 when none had */
    long   samples, stopped, gen_tokens, train_tokens;
    double grad_norm;
    float  lr;
    double t_gen, t_opt;
    double replay_loss;      /* mean CE over the replay targets; -1 without replay */
} opd_metrics;

typedef struct opd opd;

/* The generation prompt of one prompt record: its messages up to and
 * including the first user message, rendered with enable_thinking
 * (CHAT_THINK_*) and encoded by chat_prompt_encode, so a viewer's
 * "<|im_start|>" or "<tool_call>" stays text.  Appends to ids.  0, or -1
 * with *err (malloc'd). */
int   opd_prompt_ids(const tokenizer *t, const json_t *rec, int enable_thinking, tok_ids *ids,
                     char **err);

/* student and teacher borrowed (teacher's weights never written);
 * prompts an array of records.  NULL with *err on a prompt that cannot be
 * rendered (naming its index). */
opd  *opd_new(const opd_config *c, model *student, model *teacher, const tokenizer *t,
              const json_t *prompts, char **err);
void  opd_free(opd *o);
/* Replay the domain sequences d (borrowed) as c->replay_* say; CPU only:
 * -1 with *err when the student trains on a GPU. */
int   opd_set_replay(opd *o, const train_data *d, char **err);
/* One step: s->data_pos advances by n_prompts, s->step by 1. */
int   opd_step(opd *o, train_state *s, float *exp_avg, float *exp_avg_sq, opd_metrics *M, char **err);
json_t *opd_metrics_json(const opd_metrics *M, long step);
/* Mean per-token full KL(student || teacher) over completions the student
 * samples for prompts first..first+n-1 (K each, streams from stream0);
 * no update. */
double opd_eval_kl(opd *o, uint64_t seed, long first, int n, uint64_t stream0);

#endif
