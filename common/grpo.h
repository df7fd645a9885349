/* grpo.h — GRPO for the agent in the simulator (HSA-RL, DESIGN §1 stage 3):
 * group-relative advantages, the clipped importance-ratio objective with
 * TRL's loss aggregations and the k3 KL to a reference, and the step that
 * ties rollouts, the judge and AdamW together for grpo-step(1).
 *
 * One step:
 *   1. groups: the next n_groups tasks (a seeded permutation per epoch of
 *      the task list, position data_pos); group j gets one harness: the
 *      original or an HSA variant (hsa_augment_record, harness only,
 *      stream = global group index), chosen by hsa_opts.mix;
 *   2. generation: G rollouts per group through one rollout engine,
 *      temperature sampling, stream = group * G + g;
 *   3. scoring: judge_score of every conversation; reward = sum of the
 *      component weights times the scores, minus weight * cot_penalty;
 *   4. advantages per group (grpo_advantages / grpo_gdpo_advantages), or
 *      per segment with split: the tool-call turns and the reply turns of
 *      each conversation are two units with their own rewards and groups;
 *   5. optimisation: epochs passes over the batch, each one AdamW step;
 *      the old log-probs are the rollout's own (the sampling model's).
 *
 * The loss (TRL GRPOTrainer, man 1 grpo-step), per trained token t of
 * unit u with advantage A_u:
 *   token level      r_t = exp(lp_t - old_t)
 *   sequence level   r_t = s_u = exp(mean over u of (lp - old))   (GSPO)
 *   l_t = -min(r_t A_u, clip(r_t, 1 - eps_low, 1 + eps_high) A_u)
 *         + beta * (exp(ref_t - lp_t) - (ref_t - lp_t) - 1)      (k3)
 * and the batch loss is sum_u w_u sum_{t in u} l_t, the weights w_u set
 * by the aggregation (A = micro-batches in the step, U_mb and T_mb the
 * units and tokens of u's micro-batch, T_all all tokens of the step):
 *   grpo     1 / (|u| U_mb A)     per-unit token mean, averaged
 *   bnpo     1 / (T_mb A)         token mean per micro-batch
 *   dr_grpo  1 / (U_mb L_max A)   L_max = max_completion tokens
 *   dapo     1 / T_all            token mean over the whole step */
#ifndef HAT_GRPO_H
#define HAT_GRPO_H

#include <jansson.h>
#include <stdint.h>

#include "hsa.h"
#include "judge.h"
#include "model.h"
#include "optim.h"
#include "rollout.h"
#include "tokenizer.h"
#include "train.h"
#include "world.h"

enum { GRPO_LOSS_GRPO, GRPO_LOSS_BNPO, GRPO_LOSS_DR_GRPO, GRPO_LOSS_DAPO };
extern const char *const grpo_loss_names[];   /* "grpo" "bnpo" "dr_grpo" "dapo" */
int grpo_loss_parse(const char *s);            /* GRPO_LOSS_* or -1 */

/* ---- advantages -------------------------------------------------------- */

/* Rewards r (n_groups * G, group-major) -> adv: r - group mean, divided
 * by (group std + 1e-4) when std_scale (std unbiased, as torch's).
 * Returns how many groups have zero spread (all rewards equal). */
int  grpo_advantages(const double *r, int n_groups, int G, int std_scale, double *adv);
/* GDPO: each of K reward components (comp[i*K + k]) normalised within its
 * group as above, then summed with weights w[k], then the sums normalised
 * over the whole batch (mean 0, std 1 when the batch has spread). */
void grpo_gdpo_advantages(const double *comp, const double *w, int K, int n_groups, int G,
                          int std_scale, double *adv);

/* ---- the per-token loss ---------------------------------------------------- */

typedef struct {
    int   seq_level;     /* 1 = GSPO sequence-level importance weight */
    float eps_low, eps_high;
    float beta;          /* k3 KL weight; 0 = no reference */
} grpo_loss_cfg;

typedef struct {
    double loss;         /* the weighted loss (what the gradient is of) */
    double kl;           /* sum of k3 over tokens (0 without ref) */
    double ratio;        /* sum of the importance weights over tokens */
    long   clipped;      /* tokens in the clipped region (low or high) */
    long   tokens;
} grpo_loss_stats;

/* n tokens; unit[t] in [0, n_units) or -1 (not trained); lp / old / ref
 * (ref NULL when beta = 0) per token; adv and w per unit.  Writes
 * dlp[t] = d loss / d lp_t (0 for untrained tokens) and ADDS to *st.
 * Returns the loss of these tokens. */
double grpo_token_loss(const grpo_loss_cfg *c, int n, const float *lp, const float *old,
                       const float *ref, const int *unit, const double *adv, const double *w,
                       int n_units, float *dlp, grpo_loss_stats *st);

/* Unit weights of one step (see the top of the file): units of micro-batch
 * mb[u] (0..n_mb-1), len[u] tokens; max_completion for dr_grpo. */
void grpo_unit_weights(int loss_type, int n_units, const int *mb, const int *len, int n_mb,
                       int max_completion, double *w);

/* Which unit each token of a conversation trains: unit[t] = base (whole
 * conversation), or with split base (tool-call turns: the assistant
 * message called tools or the runtime answered it as a call) and base + 1
 * (reply turns); -1 where the rollout mask is 0 (prompt, tool responses,
 * hook notes, headers).  len[0..1] count the tokens added to each. */
void grpo_token_units(const rollout_result *x, int split, int base, int *unit, int *len);

/* ---- log-probabilities and their gradient through the logits ---------------- */

/* For B rows of logits (B, V): lp[b] = log softmax(logits[b])[tgt[b]]
 * (rows with tgt < 0 get 0); lse[b] the log-sum-exp (double precision). */
void grpo_gather_logprobs(const float *logits, const int *tgt, int B, int V, float *lp, float *lse);
/* Turn d loss / d lp into d loss / d logits in place over the logits:
 * row b becomes dlp[b] * (onehot(tgt[b]) - softmax(row)), or 0 when
 * tgt[b] < 0 or dlp[b] = 0.  lse from grpo_gather_logprobs. */
void grpo_dlogits(float *logits, const int *tgt, const float *dlp, const float *lse, int B, int V);

/* ---- the step ------------------------------------------------------------------- */

typedef struct {
    /* groups */
    int      n_groups, G;
    hsa_opts hsa;            /* dimensions and mix (mix = fraction original) */
    int      hsa_on;         /* 0 = every group uses the original harness */
    /* generation */
    rollout_params rp;       /* temperature, max_tokens, max_turns, max_gen_tokens */
    int      max_context;    /* tokens per conversation (0 = model max) */
    int      rollout_batch;  /* conversations in flight (0 = n_groups * G) */
    /* reward */
    double   w[JUDGE_NCOMP]; /* component weights; w[JUDGE_COT] subtracts */
    /* advantages */
    int      std_scale, gdpo, split;
    /* loss */
    int      loss_type;
    grpo_loss_cfg lc;
    int      epochs, micro_batch;
} grpo_config;

void grpo_config_default(grpo_config *c);
/* The reward of one conversation from its judge component scores: the sum
 * of w[k] * comp[k], w[JUDGE_COT] subtracting the CoT penalty. */
double grpo_reward(const grpo_config *c, const double *comp);
/* As a JSON object for trainer_state.json ("grpo" key) and back. */
json_t *grpo_config_json(const grpo_config *c);
int     grpo_config_parse(grpo_config *c, const json_t *j, const char *name);

/* What one step measured (one metrics line). */
typedef struct {
    double reward_mean, reward_std;
    double comp_mean[JUDGE_NCOMP], comp_std[JUDGE_NCOMP];
    double zero_spread;          /* fraction of groups (units' groups with split) */
    double kl, clip_frac, ratio;
    double completion_len, cot_len;
    double tool_calls, tool_error_rate, malformed_rate, accepted_rate;
    double loss, grad_norm;
    float  lr;
    long   gen_tokens, train_tokens, conversations;
    double t_gen, t_score, t_opt;
} grpo_metrics;

/* Everything a step reads (borrowed) and its reusable engines. */
typedef struct grpo grpo;

/* policy and ref (ref NULL when beta = 0) are borrowed; tasks an array of
 * task objects; harness the original; vocab NULL when hsa is off.  NULL
 * with *err (malloc'd). */
grpo *grpo_new(const grpo_config *c, model *policy, const model *ref, const tokenizer *t,
               const world *w, judge *j, const json_t *tasks, const json_t *harness,
               const hsa_vocab *vocab, char **err);
void  grpo_free(grpo *g);
/* One step: s->data_pos advances by n_groups, s->step by 1; AdamW moments
 * in exp_avg/exp_avg_sq.  0, or -1 with *err (malloc'd). */
int   grpo_step(grpo *g, train_state *s, float *exp_avg, float *exp_avg_sq, grpo_metrics *out,
                char **err);
/* The metrics line for step (new ref). */
json_t *grpo_metrics_json(const grpo_metrics *m, long step);

/* Mean reward of the policy on tasks[0..n) under the original harness,
 * G samples each, streams offset by `stream0`, no update (for tests and
 * the learning check). */
double grpo_eval_reward(grpo *g, uint64_t seed, long first, int n, uint64_t stream0);

#endif
