/* test_optim.c — AdamW against a hand computation, schedules, clipping,
 * gradient accumulation, and a tiny model learning a fixed sequence. */
#include "test.h"
#include "kernels.h"
#include "model.h"
#include "optim.h"
#include "train.h"
#include "util.h"

/* p=1, g=0.5, lr=0.1, wd=0.1: bias-corrected m/sqrt(v) = 1 at every step,
 * so p1 = 1 - 0.1*(1 + 0.1*1) = 0.89, p2 = 0.89 - 0.1*(1 + 0.089) = 0.7811. */
static void adamw_known_answer(void)
{
    float p = 1, m = 0, v = 0, g = 0.5f;
    adamw_update(&p, &m, &v, &g, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0.1f, 1);
    CHECK_NEAR(p, 0.89, 1e-6);
    CHECK_NEAR(m, 0.05, 1e-7);
    CHECK_NEAR(v, 0.00025, 1e-8);
    adamw_update(&p, &m, &v, &g, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0.1f, 2);
    CHECK_NEAR(p, 0.7811, 1e-6);
    /* no decay: a norm weight with zero gradient stays put */
    float q = 1, mq = 0, vq = 0, z = 0;
    adamw_update(&q, &mq, &vq, &z, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0.0f, 1);
    CHECK_NEAR(q, 1, 0);
}

static void schedules(void)
{
    optim_config o;
    optim_defaults(&o);
    o.lr = 1; o.min_lr = 0.1f; o.warmup = 10; o.total_steps = 110;
    CHECK_NEAR(optim_lr(&o, 0), 0.1, 1e-7);
    CHECK_NEAR(optim_lr(&o, 9), 1.0, 1e-7);
    CHECK_NEAR(optim_lr(&o, 10), 1.0, 1e-7);
    CHECK_NEAR(optim_lr(&o, 60), 0.55, 1e-6);     /* cosine half way */
    CHECK_NEAR(optim_lr(&o, 110), 0.1, 1e-7);
    CHECK_NEAR(optim_lr(&o, 500), 0.1, 1e-7);
    o.schedule = SCHED_LINEAR;
    CHECK_NEAR(optim_lr(&o, 35), 1 - 0.9 * 0.25, 1e-6);
    o.schedule = SCHED_CONSTANT;
    CHECK_NEAR(optim_lr(&o, 80), 1.0, 0);
    CHECK_EQ_INT(optim_schedule_parse("linear"), SCHED_LINEAR);
    CHECK_EQ_INT(optim_schedule_parse("bogus"), -1);
}

static model_config cfg(void)
{
    model_config c = { .vocab_size = 16, .hidden_size = 16, .intermediate_size = 32, .n_layers = 2,
                       .n_heads = 2, .n_kv_heads = 1, .head_dim = 8, .rms_norm_eps = 1e-6,
                       .rope_theta = 10000, .max_position_embeddings = 64, .bos_token_id = -1,
                       .eos_token_id = -1 };
    return c;
}

static void clipping(void)
{
    model_config c = cfg();
    model *m = model_new(&c);
    model_alloc_grads(m);
    m->grads[0] = 3;
    m->grads[m->tensors[1].offset] = 4;
    CHECK_NEAR(grad_norm(m), 5, 1e-9);
    CHECK_NEAR(grad_clip(m, 1.0f), 5, 1e-9);
    CHECK_NEAR(grad_norm(m), 1, 1e-5);
    CHECK_NEAR(m->grads[0], 0.6, 1e-5);
    CHECK_NEAR(grad_clip(m, 2.0f), 1, 1e-5);      /* below the limit: unchanged */
    CHECK_NEAR(m->grads[0], 0.6, 1e-5);
    model_free(m);
}

static train_data fixed_data(int nseq, int len)
{
    train_data d = { 0 };
    d.seq = xcalloc(nseq, sizeof *d.seq);
    d.n = nseq;
    for (int s = 0; s < nseq; s++) {
        d.seq[s].n = len;
        d.seq[s].ids = xmalloc(len * sizeof(int));
        d.seq[s].mask = xmalloc(len);
        for (int i = 0; i < len; i++) {
            d.seq[s].ids[i] = (i * 5 + s * 3 + 1) % 16;
            d.seq[s].mask[i] = i > 0;
        }
    }
    return d;
}

/* Two micro-batches of 2 give the same gradient as one batch of 4. */
static void accumulation_equals_big_batch(void)
{
    model_config c = cfg();
    train_data d = fixed_data(4, 9);
    model *a = model_new(&c), *b = model_new(&c);
    model_init_random(a, 1, 0.2f);
    model_init_random(b, 1, 0.2f);
    float *ma = xcalloc(a->n_floats, 4), *va = xcalloc(a->n_floats, 4);
    float *mb = xcalloc(b->n_floats, 4), *vb = xcalloc(b->n_floats, 4);
    train_state sa = { .B = 4, .T = 8, .accum = 1, .seed = 5 }, sb = sa;
    sb.B = 2; sb.accum = 2;
    optim_defaults(&sa.opt);
    sa.opt.total_steps = 10;
    sb.opt = sa.opt;
    train_result ra, rb;
    train_step(a, ma, va, &d, &sa, &ra);
    train_step(b, mb, vb, &d, &sb, &rb);
    CHECK_NEAR(ra.loss, rb.loss, 1e-5);
    CHECK_NEAR(ra.grad_norm, rb.grad_norm, 1e-4 * ra.grad_norm);
    CHECK_EQ_INT(ra.tokens, 32);
    CHECK_EQ_INT(sb.data_pos, 4);
    double dmax = 0;
    for (size_t i = 0; i < a->n_floats; i++) dmax = fmax(dmax, fabs(a->params[i] - b->params[i]));
    CHECK(dmax < 1e-5);
    free(ma); free(va); free(mb); free(vb);
    model_free(a);
    model_free(b);
    train_data_free(&d);
}

/* A tiny model memorises 4 fixed sequences: loss falls near zero. */
static void learns_fixed_sequences(void)
{
    model_config c = cfg();
    train_data d = fixed_data(4, 13);
    model *m = model_new(&c);
    model_init_random(m, 2, 0.1f);
    float *mm = xcalloc(m->n_floats, 4), *vv = xcalloc(m->n_floats, 4);
    train_state s = { .B = 4, .T = 12, .accum = 1, .seed = 1 };
    optim_defaults(&s.opt);
    s.opt.lr = 1e-2f;
    s.opt.warmup = 5;
    s.opt.total_steps = 150;
    s.opt.weight_decay = 0;
    train_result r;
    train_step(m, mm, vv, &d, &s, &r);
    double first = r.loss;
    for (int i = 1; i < 150; i++) train_step(m, mm, vv, &d, &s, &r);
    fprintf(stderr, "  loss %.4f -> %.4f\n", first, r.loss);
    CHECK(first > 2.0);
    CHECK(r.loss < 0.05);
    free(mm); free(vv);
    model_free(m);
    train_data_free(&d);
}

/* Batches follow a seeded permutation per epoch and cover every
 * sequence once per epoch. */
static void batches_cover_each_epoch(void)
{
    train_data d = fixed_data(5, 4);
    train_state s = { .B = 5, .T = 3, .seed = 9 };
    int tok[15], tgt[15], seen[16] = { 0 };
    train_fill_batch(&d, &s, tok, tgt);
    for (int b = 0; b < 5; b++) seen[tok[b * 3]]++;
    for (int q = 0; q < 5; q++) CHECK_EQ_INT(seen[(q * 3 + 1) % 16], 1);
    for (int b = 0; b < 5; b++)
        for (int t = 0; t < 2; t++) CHECK_EQ_INT(tgt[b * 3 + t], tok[b * 3 + t + 1]);
    CHECK_EQ_INT(s.data_pos, 5);
    int tok2[15], tgt2[15];
    s.data_pos = 0;                      /* same position, same batch */
    train_fill_batch(&d, &s, tok2, tgt2);
    CHECK(!memcmp(tok, tok2, sizeof tok) && !memcmp(tgt, tgt2, sizeof tgt));
    train_data_free(&d);
}

/* Length buckets: every sequence of a chunk is visited exactly as often
 * as without bucketing, batches are as short as their longest sequence
 * (rounded up to 16), and far less padding is fed than with --no-bucket. */
static void buckets_group_by_length(void)
{
    train_data d = fixed_data(64, 4);
    for (int q = 0; q < 64; q++) {                    /* lengths 3..66, id q throughout */
        int len = 3 + (q * 37) % 64;
        d.seq[q].n = len;
        d.seq[q].ids = xrealloc(d.seq[q].ids, len * sizeof(int));
        d.seq[q].mask = xrealloc(d.seq[q].mask, len);
        for (int i = 0; i < len; i++) { d.seq[q].ids[i] = q; d.seq[q].mask[i] = i > 0; }
    }
    enum { B = 4, T = 64, NB = 32 };                 /* one chunk: 32 batches, 2 epochs */
    train_state s = { .B = B, .T = T, .seed = 3, .bucket = 1 };
    int tok[B * T], tgt[B * T], seen[64] = { 0 };
    long padded = 0;
    for (int k = 0; k < NB; k++) {
        int Tb = train_fill_batch(&d, &s, tok, tgt);
        CHECK(Tb <= T && (Tb % 16 == 0 || Tb == T));
        int longest = 0;
        for (int b = 0; b < B; b++) {
            int q = tok[b * Tb];
            CHECK(q >= 0 && q < 64);
            if (q < 0 || q >= 64) continue;
            seen[q]++;
            int want = d.seq[q].n - 1 < T ? d.seq[q].n - 1 : T, n = 0;
            for (int t = 0; t < Tb; t++) n += tgt[b * Tb + t] >= 0;
            CHECK_EQ_INT(n, want);                    /* all its targets fit */
            if (want > longest) longest = want;
        }
        CHECK(Tb >= longest && Tb < longest + 16);
        padded += (long)B * Tb;
    }
    for (int q = 0; q < 64; q++) CHECK_EQ_INT(seen[q], 2);
    CHECK(padded < (long)NB * B * T * 3 / 4);
    /* Same position, same batch. */
    int tok2[B * T], tgt2[B * T];
    s.data_pos = 8;
    int t1 = train_fill_batch(&d, &s, tok, tgt);
    s.data_pos = 8;
    int t2 = train_fill_batch(&d, &s, tok2, tgt2);
    CHECK_EQ_INT(t1, t2);
    CHECK(!memcmp(tok, tok2, sizeof(int) * B * t1));
    train_data_free(&d);
}

int main(void)
{
    RUN(adamw_known_answer);
    RUN(schedules);
    RUN(clipping);
    RUN(accumulation_equals_big_batch);
    RUN(learns_fixed_sequences);
    RUN(batches_cover_each_epoch);
    RUN(buckets_group_by_length);
    TEST_MAIN_END();
}
