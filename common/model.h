/* model.h — the Qwen3-style dense decoder: configuration, the parameter
 * table, one contiguous parameter buffer, training forward and backward.
 *
 * Architecture (Hugging Face Qwen3, DESIGN §6):
 *   x = embed[tokens]
 *   per layer: h = RMSNorm(x); q,k,v = h Wq^T, h Wk^T, h Wv^T;
 *              q,k = per-head RMSNorm (q_norm/k_norm), then RoPE (rotate-half);
 *              x += softmax(q k^T / sqrt(D) + causal) v  Wo^T   (GQA)
 *              h = RMSNorm(x); x += Wdown (silu(Wgate h) * (Wup h))
 *   logits = RMSNorm(x) lm_head^T  (lm_head = embed when tied)
 * Optional multi-token prediction (num_nextn_predict_layers = 1; tensors
 * under "mtp."): at position t, m = fc [RMSNorm_e(embed[tok t+1]) ;
 * RMSNorm_h(h_t)], one more block, then the SHARED final norm and head
 * predict token t+2.  Its loss is added with weight mtp_loss_weight.
 *
 * Every tensor is described by one table entry (Hugging Face name, shape,
 * offset into the flat buffer, whether weight decay applies); the same
 * table carves parameters, gradients and AdamW moments, and drives
 * safetensors I/O.  Offsets are multiples of 16 floats (64 bytes). */
#ifndef HAT_MODEL_H
#define HAT_MODEL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int    vocab_size;          /* V */
    int    hidden_size;         /* C */
    int    intermediate_size;   /* I */
    int    n_layers;            /* L   num_hidden_layers */
    int    n_heads;             /* H   num_attention_heads */
    int    n_kv_heads;          /* KV  num_key_value_heads */
    int    head_dim;            /* D */
    double rms_norm_eps;
    double rope_theta;
    int    tie_word_embeddings;
    int    max_position_embeddings;
    int    n_mtp;               /* num_nextn_predict_layers: 0 or 1 */
    double mtp_loss_weight;     /* weight of the MTP auxiliary loss */
    int    bos_token_id, eos_token_id;   /* -1 = none */
} model_config;

/* Parse Hugging Face Qwen3 keys.  `name` is used in messages
 * ("prog: NAME: config: ...").  Returns 0, or -1 after a diagnostic. */
int     model_config_parse(model_config *c, const json_t *j, const char *name);
int     model_config_load(model_config *c, const char *path);
/* Full config.json (HF keys, model_type qwen3, architectures...). */
json_t *model_config_json(const model_config *c);

/* Weights of one transformer block, HF layout (out, in). */
typedef struct {
    float *in_norm;     /* (C)        input_layernorm */
    float *wq;          /* (H*D, C)   self_attn.q_proj */
    float *wk;          /* (KV*D, C)  self_attn.k_proj */
    float *wv;          /* (KV*D, C)  self_attn.v_proj */
    float *wo;          /* (C, H*D)   self_attn.o_proj */
    float *q_norm;      /* (D)        self_attn.q_norm */
    float *k_norm;      /* (D)        self_attn.k_norm */
    float *post_norm;   /* (C)        post_attention_layernorm */
    float *wgate;       /* (I, C)     mlp.gate_proj */
    float *wup;         /* (I, C)     mlp.up_proj */
    float *wdown;       /* (C, I)     mlp.down_proj */
} block_weights;

typedef struct {
    float *wte;            /* (V, C)  model.embed_tokens */
    block_weights *layers; /* [L] */
    float *norm;           /* (C)     model.norm */
    float *lm_head;        /* (V, C)  lm_head, or = wte when tied */
    /* multi-token prediction (NULL without it) */
    float *mtp_enorm;      /* (C)     mtp.pre_fc_norm_embedding */
    float *mtp_hnorm;      /* (C)     mtp.pre_fc_norm_hidden */
    float *mtp_fc;         /* (C, 2C) mtp.fc  (input = [emb ; hidden]) */
    block_weights mtp_block;  /*       mtp.layers.0.* */
} model_weights;

typedef struct {
    char  *name;        /* Hugging Face name */
    int    ndim;
    int    shape[2];
    size_t numel;
    size_t offset;      /* in floats, into the flat buffer */
    int    decay;       /* 1 = AdamW weight decay applies (matrices) */
} model_tensor;

/* Activations of one block for a (B,T) batch; N = B*T. */
typedef struct {
    float *ln1, *ln1_rstd;      /* (N,C) (N) */
    float *q, *k, *v;           /* (N,H*D) (N,KV*D) (N,KV*D) before norm */
    float *q_rstd, *k_rstd;     /* (N*H) (N*KV) */
    float *qr, *kr;             /* normed + rotated */
    float *att_lse;             /* (B,H,T) softmax log-sum-exp per query row */
    float *atty;                /* (N,H*D) attention output */
    float *res_mid;             /* (N,C) x + attention */
    float *ln2, *ln2_rstd;
    float *gate, *up, *act;     /* (N,I) */
    float *res_out;             /* (N,C) block output */
} block_acts;

/* An LM head's rows that have a target (model_forward computes the head
 * and its cross-entropy on those alone). */
typedef struct {
    int    n;
    int   *rows, *tgt;          /* (n) positions and their targets */
    float *x;                   /* (n,C) the head's input rows */
    float *loss;                /* (n) */
} head_rows;

typedef struct {
    model_config   cfg;
    model_tensor  *tensors;
    int            n_tensors;
    size_t         n_floats;    /* flat buffer length (with padding) */
    size_t         n_params;    /* real parameter count */
    float         *params;      /* 64-byte aligned */
    unsigned long  version;     /* bumped by every optimizer step: copies of the
                                   weights (the decoder's bf16 drafts) compare it */
    model_weights  w;
    float         *grads;       /* NULL until model_alloc_grads */
    model_weights  g;

    /* training activations for the current B, T, carved from a buffer
     * that only grows (acts_cap floats), so that micro-batches of other
     * lengths (sft-step's buckets) reuse its pages */
    int            B, T;
    float         *acts;
    size_t         acts_cap;
    float         *encoded;     /* (N,C) */
    block_acts    *la;          /* [L] */
    float         *lnf, *lnf_rstd;   /* (N,C) (N) */
    float         *logits;      /* (N,V): every row after model_forward_logits, the
                                   first head.n (head.rows') after model_forward;
                                   dlogits in place after backward */
    float         *losses;      /* (N) loss per position, 0 where no target */
    float         *lse;         /* (head.n) log-sum-exp per head row */
    head_rows      head, mtp_head;
    /* MTP */
    int           *mtp_tokens, *mtp_targets;   /* (N) */
    float         *mtp_emb, *mtp_en, *mtp_en_rstd, *mtp_hn, *mtp_hn_rstd;
    float         *mtp_cat;     /* (N,2C) */
    float         *mtp_x;       /* (N,C) fc output = block input */
    block_acts     mtp_la;
    float         *mtp_lnf, *mtp_lnf_rstd, *mtp_logits, *mtp_losses, *mtp_lse;   /* as above */
    /* backward scratch; attention tiles (forward and backward) */
    float         *scratch;
    size_t         scratch_cap;
    float         *att_scratch;
    size_t         att_scratch_n;
    int           *tokens, *targets, *pos;   /* (N) */
    float         *rope_cos, *rope_sin;      /* (rope_len, D/2) */
    int            rope_len;

    /* results of the last forward */
    double         loss_sum, mtp_loss_sum;
    long           n_targets, n_mtp_targets;
} model;

/* Build the table and allocate zeroed parameters. */
model *model_new(const model_config *c);
void   model_free(model *m);
void   model_alloc_grads(model *m);
void   model_zero_grad(model *m);
const model_tensor *model_find(const model *m, const char *name);
/* Point a weights struct at a flat buffer laid out like m->params. */
void   model_bind(const model *m, model_weights *w, float *base);

/* Random init: N(0, std^2) matrices, output projections (o_proj,
 * down_proj, mtp.fc) scaled by 1/sqrt(2L), norms 1.  Deterministic for a
 * seed: each tensor draws from rng_derive(seed, tensor index). */
void   model_init_random(model *m, uint64_t seed, float std);

/* Training forward over B sequences of T tokens; targets[b*T+t] is the
 * token to predict at (b,t) or -1.  Returns the loss:
 * mean CE over counted targets (+ mtp_loss_weight * MTP mean CE). */
float  model_forward(model *m, const int *tokens, const int *targets, int B, int T);
/* Gradients of (main_scale * sum CE + mtp_scale * sum MTP CE) are ADDED
 * into m->grads.  model_backward_mean uses 1/n_targets and w/n_mtp. */
void   model_backward(model *m, float main_scale, float mtp_scale);
void   model_backward_mean(model *m);

/* Forward over B sequences of T tokens to the logits of every position,
 * no loss and no MTP: returns m->logits (B*T, V), valid until the next
 * forward.  model_backward_dlogits then ADDS into m->grads the gradient
 * of a loss whose derivative with respect to those logits the caller
 * supplies (dlogits (B*T, V); it may be m->logits itself, which is
 * overwritten either way).  Rows the loss does not touch must be zero. */
float *model_forward_logits(model *m, const int *tokens, int B, int T);
void   model_backward_dlogits(model *m, const float *dlogits);

/* Free the training activations and scratch (the next forward
 * allocates them again): call before a checkpoint is serialised so the
 * two never add up in the peak memory. */
void   model_release_acts(model *m);

/* Sum of the per-row losses whose target is counted (>= 0), in row
 * order (deterministic), and the count of those targets. */
double model_sum_losses(const float *losses, const int *targets, int N, long *count);

/* RoPE tables covering positions [0, P). */
void   model_rope_ensure(model *m, int P);

#endif
