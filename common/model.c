/* model.c — the Qwen3-style decoder: config, parameter table, training
 * forward and backward over one flat buffer (see model.h). */
#include "model.h"
#include "kernels.h"
#include "jsonl.h"
#include "rng.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ config */

static int get_int(const json_t *j, const char *key, int def, int *out,
                   const char *name, int required)
{
    json_t *v = json_object_get(j, key);
    if (!v || json_is_null(v)) {
        if (required) { hat_errat(name, 0, "config: missing required key \"%s\"", key); return -1; }
        *out = def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > (1 << 30)) {
        hat_errat(name, 0, "config: \"%s\" must be a non-negative integer", key);
        return -1;
    }
    *out = (int)json_integer_value(v);
    return 0;
}

static int get_num(const json_t *j, const char *key, double def, double *out, const char *name)
{
    json_t *v = json_object_get(j, key);
    if (!v || json_is_null(v)) { *out = def; return 0; }
    if (!json_is_number(v)) { hat_errat(name, 0, "config: \"%s\" must be a number", key); return -1; }
    *out = json_number_value(v);
    return 0;
}

/* eos/bos may be an id, a list of ids (first one used) or null. */
static int get_token_id(const json_t *j, const char *key, int *out)
{
    json_t *v = json_object_get(j, key);
    if (json_is_array(v)) v = json_array_get(v, 0);
    *out = json_is_integer(v) ? (int)json_integer_value(v) : -1;
    return 0;
}

int model_config_parse(model_config *c, const json_t *j, const char *name)
{
    memset(c, 0, sizeof *c);
    if (!json_is_object(j)) { hat_errat(name, 0, "config: not a JSON object"); return -1; }
    double eps, theta, mtpw;
    json_t *rp = json_object_get(j, "rope_parameters");   /* newer HF layout */
    double theta_def = json_is_object(rp) && json_is_number(json_object_get(rp, "rope_theta"))
                       ? json_number_value(json_object_get(rp, "rope_theta")) : 10000.0;
    if (get_int(j, "vocab_size", 0, &c->vocab_size, name, 1) ||
        get_int(j, "hidden_size", 0, &c->hidden_size, name, 1) ||
        get_int(j, "intermediate_size", 0, &c->intermediate_size, name, 1) ||
        get_int(j, "num_hidden_layers", 0, &c->n_layers, name, 1) ||
        get_int(j, "num_attention_heads", 0, &c->n_heads, name, 1) ||
        get_int(j, "num_key_value_heads", c->n_heads, &c->n_kv_heads, name, 0) ||
        get_int(j, "head_dim", 128, &c->head_dim, name, 0) ||   /* HF Qwen3Config default */
        get_int(j, "max_position_embeddings", 32768, &c->max_position_embeddings, name, 0) ||
        get_int(j, "num_nextn_predict_layers", 0, &c->n_mtp, name, 0) ||
        get_num(j, "rms_norm_eps", 1e-6, &eps, name) ||
        get_num(j, "rope_theta", theta_def, &theta, name) ||
        get_num(j, "mtp_loss_weight", 0.3, &mtpw, name))
        return -1;
    json_t *tie = json_object_get(j, "tie_word_embeddings");
    c->tie_word_embeddings = json_is_true(tie);
    c->rms_norm_eps = eps;
    c->rope_theta = theta;
    c->mtp_loss_weight = mtpw;
    get_token_id(j, "bos_token_id", &c->bos_token_id);
    get_token_id(j, "eos_token_id", &c->eos_token_id);
    const char *bad = NULL;
    if (c->vocab_size < 1 || c->hidden_size < 1 || c->intermediate_size < 1 ||
        c->n_layers < 1 || c->n_heads < 1 || c->n_kv_heads < 1 || c->head_dim < 2 ||
        c->max_position_embeddings < 1)
        bad = "sizes must be positive";
    else if (c->n_heads % c->n_kv_heads)
        bad = "num_attention_heads must be a multiple of num_key_value_heads";
    else if (c->head_dim % 2)
        bad = "head_dim must be even";
    else if (c->n_mtp > 1)
        bad = "num_nextn_predict_layers must be 0 or 1";
    else if (!(eps > 0) || !(theta > 0))
        bad = "rms_norm_eps and rope_theta must be positive";
    else if (json_is_true(json_object_get(j, "attention_bias")))
        bad = "attention_bias is not supported (Qwen3 has no biases)";
    else if (json_is_string(json_object_get(j, "hidden_act")) &&
             strcmp(json_string_value(json_object_get(j, "hidden_act")), "silu"))
        bad = "only hidden_act \"silu\" is supported";
    else if (json_is_true(json_object_get(j, "use_sliding_window")))
        bad = "sliding-window attention is not supported";
    if (bad) { hat_errat(name, 0, "config: %s", bad); return -1; }
    return 0;
}

int model_config_load(model_config *c, const char *path)
{
    json_t *j = json_load_path(path);
    if (!j) return -1;
    int rc = model_config_parse(c, j, path);
    json_decref(j);
    return rc;
}

json_t *model_config_json(const model_config *c)
{
    json_t *j = json_object();
    json_object_set_new(j, "architectures", json_pack("[s]", "Qwen3ForCausalLM"));
    json_object_set_new(j, "model_type", json_string("qwen3"));
    json_object_set_new(j, "vocab_size", json_integer(c->vocab_size));
    json_object_set_new(j, "hidden_size", json_integer(c->hidden_size));
    json_object_set_new(j, "intermediate_size", json_integer(c->intermediate_size));
    json_object_set_new(j, "num_hidden_layers", json_integer(c->n_layers));
    json_object_set_new(j, "num_attention_heads", json_integer(c->n_heads));
    json_object_set_new(j, "num_key_value_heads", json_integer(c->n_kv_heads));
    json_object_set_new(j, "head_dim", json_integer(c->head_dim));
    json_object_set_new(j, "rms_norm_eps", json_real(c->rms_norm_eps));
    json_object_set_new(j, "rope_theta", json_real(c->rope_theta));
    json_object_set_new(j, "tie_word_embeddings", json_boolean(c->tie_word_embeddings));
    json_object_set_new(j, "max_position_embeddings", json_integer(c->max_position_embeddings));
    json_object_set_new(j, "hidden_act", json_string("silu"));
    json_object_set_new(j, "attention_bias", json_false());
    json_object_set_new(j, "attention_dropout", json_real(0));
    json_object_set_new(j, "rope_scaling", json_null());
    json_object_set_new(j, "use_sliding_window", json_false());
    json_object_set_new(j, "initializer_range", json_real(0.02));
    json_object_set_new(j, "bos_token_id", c->bos_token_id >= 0 ? json_integer(c->bos_token_id) : json_null());
    json_object_set_new(j, "eos_token_id", c->eos_token_id >= 0 ? json_integer(c->eos_token_id) : json_null());
    json_object_set_new(j, "torch_dtype", json_string("float32"));
    if (c->n_mtp) {
        json_object_set_new(j, "num_nextn_predict_layers", json_integer(c->n_mtp));
        json_object_set_new(j, "mtp_loss_weight", json_real(c->mtp_loss_weight));
    }
    return j;
}

/* ------------------------------------------------------------ table */

#define ALIGN_FLOATS 16   /* 64 bytes */
static size_t round_up(size_t n) { return (n + ALIGN_FLOATS - 1) / ALIGN_FLOATS * ALIGN_FLOATS; }

/* One walk over every tensor in Hugging Face order.  With build set it
 * appends table entries; with base set it points fields into base. */
typedef struct {
    model *m;
    float *base;
    size_t off;
    int build;
} walk;

static void slot(walk *x, float **field, char *name, int r, int c, int decay)
{
    if (x->build) {
        model *m = x->m;
        m->tensors = xrealloc(m->tensors, (m->n_tensors + 1) * sizeof *m->tensors);
        model_tensor *t = &m->tensors[m->n_tensors++];
        t->name = name;
        t->ndim = c ? 2 : 1;
        t->shape[0] = r;
        t->shape[1] = c ? c : 0;
        t->numel = (size_t)r * (c ? c : 1);
        t->offset = x->off;
        t->decay = decay;
        m->n_params += t->numel;
    } else {
        free(name);
    }
    size_t numel = (size_t)r * (c ? c : 1);
    if (field) *field = x->base ? x->base + x->off : NULL;
    x->off += round_up(numel);
}

static void walk_block(walk *x, block_weights *b, const char *pre)
{
    const model_config *c = &x->m->cfg;
    int C = c->hidden_size, I = c->intermediate_size, D = c->head_dim;
    int HD = c->n_heads * D, KD = c->n_kv_heads * D;
    slot(x, &b->in_norm, xasprintf("%sinput_layernorm.weight", pre), C, 0, 0);
    slot(x, &b->wq, xasprintf("%sself_attn.q_proj.weight", pre), HD, C, 1);
    slot(x, &b->wk, xasprintf("%sself_attn.k_proj.weight", pre), KD, C, 1);
    slot(x, &b->wv, xasprintf("%sself_attn.v_proj.weight", pre), KD, C, 1);
    slot(x, &b->wo, xasprintf("%sself_attn.o_proj.weight", pre), C, HD, 1);
    slot(x, &b->q_norm, xasprintf("%sself_attn.q_norm.weight", pre), D, 0, 0);
    slot(x, &b->k_norm, xasprintf("%sself_attn.k_norm.weight", pre), D, 0, 0);
    slot(x, &b->post_norm, xasprintf("%spost_attention_layernorm.weight", pre), C, 0, 0);
    slot(x, &b->wgate, xasprintf("%smlp.gate_proj.weight", pre), I, C, 1);
    slot(x, &b->wup, xasprintf("%smlp.up_proj.weight", pre), I, C, 1);
    slot(x, &b->wdown, xasprintf("%smlp.down_proj.weight", pre), C, I, 1);
}

static void walk_all(walk *x, model_weights *w)
{
    const model_config *c = &x->m->cfg;
    int V = c->vocab_size, C = c->hidden_size;
    slot(x, &w->wte, xstrdup("model.embed_tokens.weight"), V, C, 1);
    for (int l = 0; l < c->n_layers; l++) {
        char *pre = xasprintf("model.layers.%d.", l);
        walk_block(x, &w->layers[l], pre);
        free(pre);
    }
    slot(x, &w->norm, xstrdup("model.norm.weight"), C, 0, 0);
    if (c->tie_word_embeddings) w->lm_head = w->wte;
    else slot(x, &w->lm_head, xstrdup("lm_head.weight"), V, C, 1);
    if (c->n_mtp) {
        slot(x, &w->mtp_enorm, xstrdup("mtp.pre_fc_norm_embedding.weight"), C, 0, 0);
        slot(x, &w->mtp_hnorm, xstrdup("mtp.pre_fc_norm_hidden.weight"), C, 0, 0);
        slot(x, &w->mtp_fc, xstrdup("mtp.fc.weight"), C, 2 * C, 1);
        walk_block(x, &w->mtp_block, "mtp.layers.0.");
    }
}

void model_bind(const model *m, model_weights *w, float *base)
{
    block_weights *layers = w->layers ? w->layers : xcalloc(m->cfg.n_layers, sizeof *layers);
    memset(w, 0, sizeof *w);
    w->layers = layers;
    walk x = { (model *)m, base, 0, 0 };
    walk_all(&x, w);
}

static float *alloc_floats(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, (n ? n : 1) * sizeof(float))) hat_die("out of memory (%zu floats)", n);
    memset(p, 0, n * sizeof(float));
    return p;
}

model *model_new(const model_config *c)
{
    model *m = xcalloc(1, sizeof *m);
    m->cfg = *c;
    m->w.layers = xcalloc(c->n_layers, sizeof *m->w.layers);
    walk x = { m, NULL, 0, 1 };
    walk_all(&x, &m->w);
    m->n_floats = x.off;
    m->params = alloc_floats(m->n_floats);
    model_bind(m, &m->w, m->params);
    return m;
}

void model_alloc_grads(model *m)
{
    if (m->grads) return;
    m->grads = alloc_floats(m->n_floats);
    model_bind(m, &m->g, m->grads);
}

void model_zero_grad(model *m)
{
    if (m->grads) vzero(m->grads, m->n_floats);
}

const model_tensor *model_find(const model *m, const char *name)
{
    for (int i = 0; i < m->n_tensors; i++)
        if (!strcmp(m->tensors[i].name, name)) return &m->tensors[i];
    return NULL;
}

static void free_head_rows(model *m)
{
    free(m->head.rows);     free(m->head.tgt);
    free(m->mtp_head.rows); free(m->mtp_head.tgt);
}

void model_free(model *m)
{
    if (!m) return;
    for (int i = 0; i < m->n_tensors; i++) free(m->tensors[i].name);
    free(m->tensors);
    free(m->params);
    free(m->grads);
    free(m->w.layers);
    free(m->g.layers);
    free(m->acts);
    free(m->la);
    free(m->scratch);
    free(m->att_scratch);
    free(m->tokens);
    free(m->targets);
    free(m->pos);
    free(m->mtp_tokens);
    free(m->mtp_targets);
    free_head_rows(m);
    free(m->rope_cos);
    free(m->rope_sin);
    free(m);
}

void model_init_random(model *m, uint64_t seed, float std)
{
    float out_scale = 1.0f / sqrtf(2.0f * m->cfg.n_layers);
    for (int i = 0; i < m->n_tensors; i++) {
        const model_tensor *t = &m->tensors[i];
        float *p = m->params + t->offset;
        if (t->ndim == 1) {
            for (size_t k = 0; k < t->numel; k++) p[k] = 1.0f;
            continue;
        }
        float s = std;
        if (str_endswith(t->name, "o_proj.weight") || str_endswith(t->name, "down_proj.weight") ||
            !strcmp(t->name, "mtp.fc.weight"))
            s *= out_scale;
        rng_t r;
        rng_derive(&r, seed, (uint64_t)i);
        for (size_t k = 0; k < t->numel; k++) p[k] = (float)(rng_normal(&r) * s);
    }
}

/* ------------------------------------------------------------ activations */

void model_rope_ensure(model *m, int P)
{
    if (P <= m->rope_len) return;
    int half = m->cfg.head_dim / 2;
    free(m->rope_cos);
    free(m->rope_sin);
    m->rope_cos = xmalloc((size_t)P * half * sizeof(float));
    m->rope_sin = xmalloc((size_t)P * half * sizeof(float));
    rope_table(m->rope_cos, m->rope_sin, P, m->cfg.head_dim, m->cfg.rope_theta);
    m->rope_len = P;
}

static float *carve(float **p, size_t n)
{
    float *r = *p;
    *p += round_up(n);
    return r;
}

static void carve_block(block_acts *a, float **p, const model_config *c, int B, int T)
{
    size_t N = (size_t)B * T, C = c->hidden_size, I = c->intermediate_size;
    size_t HD = (size_t)c->n_heads * c->head_dim, KD = (size_t)c->n_kv_heads * c->head_dim;
    a->ln1 = carve(p, N * C);       a->ln1_rstd = carve(p, N);
    a->q = carve(p, N * HD);        a->k = carve(p, N * KD);     a->v = carve(p, N * KD);
    a->q_rstd = carve(p, N * c->n_heads);   a->k_rstd = carve(p, N * c->n_kv_heads);
    a->qr = carve(p, N * HD);       a->kr = carve(p, N * KD);
    a->att_lse = carve(p, (size_t)B * c->n_heads * T);
    a->atty = carve(p, N * HD);
    a->res_mid = carve(p, N * C);
    a->ln2 = carve(p, N * C);       a->ln2_rstd = carve(p, N);
    a->gate = carve(p, N * I);      a->up = carve(p, N * I);     a->act = carve(p, N * I);
    a->res_out = carve(p, N * C);
}

/* Lay out (or size, with p starting at NULL) every activation. */
static size_t carve_acts(model *m, float *base, int B, int T)
{
    const model_config *c = &m->cfg;
    size_t N = (size_t)B * T, C = c->hidden_size, V = c->vocab_size;
    float *p = base;
    m->encoded = carve(&p, N * C);
    for (int l = 0; l < c->n_layers; l++) carve_block(&m->la[l], &p, c, B, T);
    m->lnf = carve(&p, N * C);
    m->lnf_rstd = carve(&p, N);
    m->logits = carve(&p, N * V);
    m->losses = carve(&p, N);
    m->lse = carve(&p, N);
    m->head.x = carve(&p, N * C);
    m->head.loss = carve(&p, N);
    if (c->n_mtp) {
        m->mtp_emb = carve(&p, N * C);
        m->mtp_en = carve(&p, N * C);   m->mtp_en_rstd = carve(&p, N);
        m->mtp_hn = carve(&p, N * C);   m->mtp_hn_rstd = carve(&p, N);
        m->mtp_cat = carve(&p, N * 2 * C);
        m->mtp_x = carve(&p, N * C);
        carve_block(&m->mtp_la, &p, c, B, T);
        m->mtp_lnf = carve(&p, N * C);  m->mtp_lnf_rstd = carve(&p, N);
        m->mtp_logits = carve(&p, N * V);
        m->mtp_losses = carve(&p, N);
        m->mtp_lse = carve(&p, N);
        m->mtp_head.x = carve(&p, N * C);
        m->mtp_head.loss = carve(&p, N);
    }
    return (size_t)(p - base);
}

/* Backward scratch: gradients of one block's activations (reused by every
 * layer), the residual gradient, and the MTP extras. */
typedef struct {
    float *dres, *dres_mid, *dln, *dact, *dgate, *dup, *datty;
    float *dqr, *dq, *dkr, *dk, *dv;
    float *dh_mtp, *dcat, *dtmp;
} grad_scratch;

static size_t carve_scratch(const model *m, grad_scratch *s, float *base)
{
    const model_config *c = &m->cfg;
    size_t N = (size_t)m->B * m->T, C = c->hidden_size, I = c->intermediate_size;
    size_t HD = (size_t)c->n_heads * c->head_dim, KD = (size_t)c->n_kv_heads * c->head_dim;
    float *p = base;
    s->dres = carve(&p, N * C);  s->dres_mid = carve(&p, N * C);  s->dln = carve(&p, N * C);
    /* The MLP's and the attention's gradients are never live at the same
     * time (block_backward finishes one before starting the other), so
     * they share one region. */
    float *shared = p;
    s->dact = carve(&p, N * I);  s->dgate = carve(&p, N * I);     s->dup = carve(&p, N * I);
    float *mlp_end = p;
    p = shared;
    s->datty = carve(&p, N * HD);
    s->dqr = carve(&p, N * HD);  s->dq = carve(&p, N * HD);
    s->dkr = carve(&p, N * KD);  s->dk = carve(&p, N * KD);       s->dv = carve(&p, N * KD);
    if (p < mlp_end) p = mlp_end;
    s->dh_mtp = carve(&p, c->n_mtp ? N * C : 0);
    s->dcat = carve(&p, c->n_mtp ? N * 2 * C : 0);
    s->dtmp = carve(&p, c->n_mtp ? N * C : 0);
    return (size_t)(p - base);
}

/* The backward scratch for the current B, T, in a buffer that only grows
 * (as the activations'). */
static void ensure_scratch(model *m, grad_scratch *s)
{
    size_t n = carve_scratch(m, s, NULL);
    if (n > m->scratch_cap) {
        free(m->scratch);
        m->scratch = alloc_floats(n);
        m->scratch_cap = n;
    }
    carve_scratch(m, s, m->scratch);
}

void model_release_acts(model *m)
{
    free(m->acts);
    free(m->scratch);
    free(m->att_scratch);
    m->acts = m->scratch = m->att_scratch = NULL;
    m->acts_cap = m->scratch_cap = m->att_scratch_n = 0;
}

/* Attention tiles: sized by the thread count at the time of the call. */
static void ensure_att_scratch(model *m, int T)
{
    size_t n = attention_scratch_floats(T);
    if (n <= m->att_scratch_n) return;
    free(m->att_scratch);
    m->att_scratch = alloc_floats(n);
    m->att_scratch_n = n;
}

static void ensure_acts(model *m, int B, int T)
{
    ensure_att_scratch(m, T);
    if (m->acts && m->B == B && m->T == T) return;
    free(m->la);
    free(m->tokens); free(m->targets); free(m->pos);
    free(m->mtp_tokens); free(m->mtp_targets);
    free_head_rows(m);
    m->B = B; m->T = T;
    m->la = xcalloc(m->cfg.n_layers, sizeof *m->la);
    /* Every stage writes its whole output before it is read, so a buffer
     * kept from a longer micro-batch serves as it is: a new one (fresh
     * pages, each faulted in and cleared by the kernel) every time the
     * length changes made sft-step's bucketed steps ~11% slower (the small
     * profile's shape; examples/results/history.md, session 29). */
    size_t n = carve_acts(m, NULL, B, T);
    if (n > m->acts_cap) {
        free(m->acts);
        m->acts = alloc_floats(n);
        m->acts_cap = n;
    }
    carve_acts(m, m->acts, B, T);
    size_t N = (size_t)B * T;
    m->tokens = xcalloc(N, sizeof(int));
    m->targets = xcalloc(N, sizeof(int));
    m->pos = xcalloc(N, sizeof(int));
    m->mtp_tokens = xcalloc(N, sizeof(int));
    m->mtp_targets = xcalloc(N, sizeof(int));
    m->head.rows = xcalloc(N, sizeof(int));     m->head.tgt = xcalloc(N, sizeof(int));
    m->mtp_head.rows = xcalloc(N, sizeof(int)); m->mtp_head.tgt = xcalloc(N, sizeof(int));
    for (size_t i = 0; i < N; i++) m->pos[i] = (int)(i % T);
    model_rope_ensure(m, T);
}

/* ------------------------------------------------------------ forward */

static void block_forward(model *m, const block_weights *w, block_acts *a, const float *x)
{
    const model_config *c = &m->cfg;
    int B = m->B, T = m->T, N = B * T, C = c->hidden_size, I = c->intermediate_size;
    int H = c->n_heads, KV = c->n_kv_heads, D = c->head_dim, HD = H * D, KD = KV * D;
    float eps = c->rms_norm_eps;
    rmsnorm_forward(a->ln1, a->ln1_rstd, x, w->in_norm, N, C, eps);
    matmul_forward(a->q, a->ln1, w->wq, N, C, HD, 0);
    matmul_forward(a->k, a->ln1, w->wk, N, C, KD, 0);
    matmul_forward(a->v, a->ln1, w->wv, N, C, KD, 0);
    rmsnorm_forward(a->qr, a->q_rstd, a->q, w->q_norm, N * H, D, eps);
    rmsnorm_forward(a->kr, a->k_rstd, a->k, w->k_norm, N * KV, D, eps);
    rope_forward(a->qr, m->pos, m->rope_cos, m->rope_sin, N, H, D);
    rope_forward(a->kr, m->pos, m->rope_cos, m->rope_sin, N, KV, D);
    attention_forward(a->atty, a->att_lse, m->att_scratch, a->qr, a->kr, a->v, B, T, H, KV, D);
    vcopy(a->res_mid, x, (size_t)N * C);
    matmul_forward(a->res_mid, a->atty, w->wo, N, HD, C, 1.0f);
    rmsnorm_forward(a->ln2, a->ln2_rstd, a->res_mid, w->post_norm, N, C, eps);
    matmul_forward(a->gate, a->ln2, w->wgate, N, C, I, 0);
    matmul_forward(a->up, a->ln2, w->wup, N, C, I, 0);
    swiglu_forward(a->act, a->gate, a->up, (size_t)N * I);
    vcopy(a->res_out, a->res_mid, (size_t)N * C);
    matmul_forward(a->res_out, a->act, w->wdown, N, I, C, 1.0f);
}

double model_sum_losses(const float *losses, const int *targets, int N, long *count)
{
    double s = 0;
    long n = 0;
    for (int i = 0; i < N; i++)
        if (targets[i] >= 0) { s += losses[i]; n++; }
    *count = n;
    return s;
}

/* An LM head and its cross-entropy on the rows of x that have a target,
 * gathered into h: SFT trains on the assistant's turns, about a quarter
 * of its positions, and the (N,C)x(C,V) product and the softmax over V
 * on every row cost the small profile's step ~6% for losses thrown away.
 * losses gets each position's loss (0 where none), logits and lse the
 * head rows'. */
static void head_forward(head_rows *h, float *logits, float *lse, float *losses, const float *x,
                         const float *W, const int *targets, int N, int C, int V)
{
    int n = 0;
    for (int i = 0; i < N; i++)
        if (targets[i] >= 0) {
            h->rows[n] = i;
            h->tgt[n] = targets[i];
            memcpy(h->x + (size_t)n * C, x + (size_t)i * C, sizeof(float) * C);
            n++;
        }
    h->n = n;
    if (n) matmul_forward(logits, h->x, W, n, C, V, 0);
    crossentropy_forward(h->loss, lse, logits, h->tgt, n, V);
    memset(losses, 0, sizeof(float) * N);
    for (int k = 0; k < n; k++) losses[h->rows[k]] = h->loss[k];
}

/* d(x) (N,C) of head_forward's loss scaled by scale, d(W) added to dW;
 * logits becomes d(logits). */
static void head_backward(const head_rows *h, float *dx, float *dW, float *logits,
                          const float *lse, const float *W, int N, int C, int V, float scale)
{
    crossentropy_backward(logits, logits, lse, h->tgt, h->n, V, scale);
    if (h->n) matmul_backward_set(dx, dW, logits, h->x, W, h->n, C, V);
    /* Row k of dx belongs at position rows[k] >= k: spread them from the
     * last, zeros between, so that no row is overwritten before it moves. */
    for (int i = N - 1, k = h->n - 1; i >= 0; i--) {
        float *d = dx + (size_t)i * C;
        if (k >= 0 && h->rows[k] == i) {
            if (k != i) memcpy(d, dx + (size_t)k * C, sizeof(float) * C);
            k--;
        } else {
            memset(d, 0, sizeof(float) * C);
        }
    }
}

static void mtp_forward(model *m, const float *h)
{
    const model_config *c = &m->cfg;
    int B = m->B, T = m->T, N = B * T, C = c->hidden_size, V = c->vocab_size;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int i = b * T + t, last = t + 1 >= T;
            m->mtp_tokens[i] = last ? 0 : m->tokens[i + 1];
            m->mtp_targets[i] = last ? -1 : m->targets[i + 1];
        }
    embedding_forward(m->mtp_emb, m->mtp_tokens, m->w.wte, N, C);
    rmsnorm_forward(m->mtp_en, m->mtp_en_rstd, m->mtp_emb, m->w.mtp_enorm, N, C, c->rms_norm_eps);
    rmsnorm_forward(m->mtp_hn, m->mtp_hn_rstd, h, m->w.mtp_hnorm, N, C, c->rms_norm_eps);
    for (int i = 0; i < N; i++) {
        memcpy(m->mtp_cat + (size_t)i * 2 * C, m->mtp_en + (size_t)i * C, sizeof(float) * C);
        memcpy(m->mtp_cat + (size_t)i * 2 * C + C, m->mtp_hn + (size_t)i * C, sizeof(float) * C);
    }
    matmul_forward(m->mtp_x, m->mtp_cat, m->w.mtp_fc, N, 2 * C, C, 0);
    block_forward(m, &m->w.mtp_block, &m->mtp_la, m->mtp_x);
    rmsnorm_forward(m->mtp_lnf, m->mtp_lnf_rstd, m->mtp_la.res_out, m->w.norm, N, C, c->rms_norm_eps);
    head_forward(&m->mtp_head, m->mtp_logits, m->mtp_lse, m->mtp_losses, m->mtp_lnf, m->w.lm_head,
                 m->mtp_targets, N, C, V);
    m->mtp_loss_sum = model_sum_losses(m->mtp_losses, m->mtp_targets, N, &m->n_mtp_targets);
}

float model_forward(model *m, const int *tokens, const int *targets, int B, int T)
{
    const model_config *c = &m->cfg;
    ensure_acts(m, B, T);
    int N = B * T, C = c->hidden_size, V = c->vocab_size;
    memcpy(m->tokens, tokens, sizeof(int) * N);
    memcpy(m->targets, targets, sizeof(int) * N);
    embedding_forward(m->encoded, m->tokens, m->w.wte, N, C);
    const float *x = m->encoded;
    for (int l = 0; l < c->n_layers; l++) {
        block_forward(m, &m->w.layers[l], &m->la[l], x);
        x = m->la[l].res_out;
    }
    rmsnorm_forward(m->lnf, m->lnf_rstd, x, m->w.norm, N, C, c->rms_norm_eps);
    head_forward(&m->head, m->logits, m->lse, m->losses, m->lnf, m->w.lm_head, m->targets, N, C, V);
    m->loss_sum = model_sum_losses(m->losses, m->targets, N, &m->n_targets);
    double loss = m->n_targets ? m->loss_sum / m->n_targets : 0;
    m->mtp_loss_sum = 0;
    m->n_mtp_targets = 0;
    if (c->n_mtp) {
        mtp_forward(m, x);
        if (m->n_mtp_targets) loss += c->mtp_loss_weight * m->mtp_loss_sum / m->n_mtp_targets;
    }
    return (float)loss;
}

/* ------------------------------------------------------------ backward */

/* Gradient buffers are cleared and copied on every thread (vzero,
 * vcopy) where one is needed at all: a product, SwiGLU or RMSNorm whose
 * d(input) would land in a just-cleared or just-copied buffer writes it
 * instead (matmul_backward_set, swiglu_backward, rmsnorm_backward's
 * dadd), with the same bits and one pass over the buffer fewer. */

/* s->dres: on entry d(block output), on exit d(block input x). */
static void block_backward(model *m, const block_weights *w, block_weights *gw,
                           const block_acts *a, const float *x, grad_scratch *s)
{
    const model_config *c = &m->cfg;
    int B = m->B, T = m->T, N = B * T, C = c->hidden_size, I = c->intermediate_size;
    int H = c->n_heads, KV = c->n_kv_heads, D = c->head_dim, HD = H * D, KD = KV * D;
    size_t NI = (size_t)N * I;
    /* MLP */
    matmul_backward_set(s->dact, gw->wdown, s->dres, a->act, w->wdown, N, I, C);
    swiglu_backward(s->dgate, s->dup, s->dact, a->gate, a->up, NI);
    matmul_backward_set(s->dln, gw->wgate, s->dgate, a->ln2, w->wgate, N, C, I);
    matmul_backward(s->dln, gw->wup, s->dup, a->ln2, w->wup, N, C, I);
    rmsnorm_backward(s->dres_mid, s->dres, gw->post_norm, s->dln, a->res_mid, w->post_norm, a->ln2_rstd, N, C);
    /* attention */
    matmul_backward_set(s->datty, gw->wo, s->dres_mid, a->atty, w->wo, N, HD, C);
    vzero(s->dqr, (size_t)N * HD); vzero(s->dkr, (size_t)N * KD); vzero(s->dv, (size_t)N * KD);
    attention_backward(s->dqr, s->dkr, s->dv, m->att_scratch, s->datty, a->atty, a->att_lse,
                       a->qr, a->kr, a->v, B, T, H, KV, D);
    rope_backward(s->dqr, m->pos, m->rope_cos, m->rope_sin, N, H, D);
    rope_backward(s->dkr, m->pos, m->rope_cos, m->rope_sin, N, KV, D);
    rmsnorm_backward(s->dq, NULL, gw->q_norm, s->dqr, a->q, w->q_norm, a->q_rstd, N * H, D);
    rmsnorm_backward(s->dk, NULL, gw->k_norm, s->dkr, a->k, w->k_norm, a->k_rstd, N * KV, D);
    matmul_backward_set(s->dln, gw->wq, s->dq, a->ln1, w->wq, N, C, HD);
    matmul_backward(s->dln, gw->wk, s->dk, a->ln1, w->wk, N, C, KD);
    matmul_backward(s->dln, gw->wv, s->dv, a->ln1, w->wv, N, C, KD);
    rmsnorm_backward(s->dres, s->dres_mid, gw->in_norm, s->dln, x, w->in_norm, a->ln1_rstd, N, C);
}

/* Leaves d(loss)/d(h) from the MTP branch in s->dh_mtp. */
static void mtp_backward(model *m, const float *h, float scale, grad_scratch *s)
{
    const model_config *c = &m->cfg;
    int N = m->B * m->T, C = c->hidden_size, V = c->vocab_size;
    head_backward(&m->mtp_head, s->dln, m->g.lm_head, m->mtp_logits, m->mtp_lse, m->w.lm_head,
                  N, C, V, scale);
    rmsnorm_backward(s->dres, NULL, m->g.norm, s->dln, m->mtp_la.res_out, m->w.norm, m->mtp_lnf_rstd, N, C);
    block_backward(m, &m->w.mtp_block, &m->g.mtp_block, &m->mtp_la, m->mtp_x, s);
    matmul_backward_set(s->dcat, m->g.mtp_fc, s->dres, m->mtp_cat, m->w.mtp_fc, N, 2 * C, C);
    /* split [d emb ; d hidden] */
    for (int i = 0; i < N; i++) {
        memcpy(s->dln + (size_t)i * C, s->dcat + (size_t)i * 2 * C, sizeof(float) * C);
        memcpy(s->dres_mid + (size_t)i * C, s->dcat + (size_t)i * 2 * C + C, sizeof(float) * C);
    }
    rmsnorm_backward(s->dtmp, NULL, m->g.mtp_enorm, s->dln, m->mtp_emb, m->w.mtp_enorm, m->mtp_en_rstd, N, C);
    embedding_backward(m->g.wte, s->dtmp, m->mtp_tokens, N, C);
    rmsnorm_backward(s->dh_mtp, NULL, m->g.mtp_hnorm, s->dres_mid, h, m->w.mtp_hnorm, m->mtp_hn_rstd, N, C);
}

void model_backward(model *m, float main_scale, float mtp_scale)
{
    const model_config *c = &m->cfg;
    model_alloc_grads(m);
    grad_scratch s;
    ensure_scratch(m, &s);
    int N = m->B * m->T, C = c->hidden_size, V = c->vocab_size, L = c->n_layers;
    const float *h = m->la[L - 1].res_out;
    if (c->n_mtp) mtp_backward(m, h, mtp_scale, &s);
    head_backward(&m->head, s.dln, m->g.lm_head, m->logits, m->lse, m->w.lm_head, N, C, V, main_scale);
    rmsnorm_backward(s.dres, c->n_mtp ? s.dh_mtp : NULL, m->g.norm, s.dln, h, m->w.norm, m->lnf_rstd, N, C);
    for (int l = L - 1; l >= 0; l--) {
        const float *x = l ? m->la[l - 1].res_out : m->encoded;
        block_backward(m, &m->w.layers[l], &m->g.layers[l], &m->la[l], x, &s);
    }
    embedding_backward(m->g.wte, s.dres, m->tokens, N, C);
}

void model_backward_mean(model *m)
{
    float ms = m->n_targets ? 1.0f / m->n_targets : 0;
    float ts = m->n_mtp_targets ? m->cfg.mtp_loss_weight / m->n_mtp_targets : 0;
    model_backward(m, ms, ts);
}

/* ------------------------------------------------------------ logits in, gradients out */

/* The trainers whose loss is not a cross-entropy on fixed targets (the
 * policy gradient of grpo-step, the reverse KL of opd-step) run the
 * trunk forward to logits, work out d(loss)/d(logits) themselves and
 * hand it back here.  The MTP head is not involved in either direction. */
float *model_forward_logits(model *m, const int *tokens, int B, int T)
{
    const model_config *c = &m->cfg;
    ensure_acts(m, B, T);
    int N = B * T, C = c->hidden_size, V = c->vocab_size;
    memcpy(m->tokens, tokens, sizeof(int) * N);
    for (int i = 0; i < N; i++) m->targets[i] = -1;
    embedding_forward(m->encoded, m->tokens, m->w.wte, N, C);
    const float *x = m->encoded;
    for (int l = 0; l < c->n_layers; l++) {
        block_forward(m, &m->w.layers[l], &m->la[l], x);
        x = m->la[l].res_out;
    }
    rmsnorm_forward(m->lnf, m->lnf_rstd, x, m->w.norm, N, C, c->rms_norm_eps);
    matmul_forward(m->logits, m->lnf, m->w.lm_head, N, C, V, 0);
    m->head.n = m->mtp_head.n = 0;
    m->loss_sum = m->mtp_loss_sum = 0;
    m->n_targets = m->n_mtp_targets = 0;
    return m->logits;
}

void model_backward_dlogits(model *m, const float *dlogits)
{
    const model_config *c = &m->cfg;
    model_alloc_grads(m);
    grad_scratch s;
    ensure_scratch(m, &s);
    int N = m->B * m->T, C = c->hidden_size, V = c->vocab_size, L = c->n_layers;
    if (dlogits != m->logits) memcpy(m->logits, dlogits, sizeof(float) * (size_t)N * V);
    const float *h = m->la[L - 1].res_out;
    matmul_backward_set(s.dln, m->g.lm_head, m->logits, m->lnf, m->w.lm_head, N, C, V);
    rmsnorm_backward(s.dres, NULL, m->g.norm, s.dln, h, m->w.norm, m->lnf_rstd, N, C);
    for (int l = L - 1; l >= 0; l--) {
        const float *x = l ? m->la[l - 1].res_out : m->encoded;
        block_backward(m, &m->w.layers[l], &m->g.layers[l], &m->la[l], x, &s);
    }
    embedding_backward(m->g.wte, s.dres, m->tokens, N, C);
}
