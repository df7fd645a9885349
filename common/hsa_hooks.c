/* hsa_hooks.c — the hooks dimension of HSA: the retry count, the error
 * format, the result envelope (style and key names) and the message
 * templates of the hooks, drawn from hooks.json of the vocabulary.
 *
 * A template is only swapped for one whose {placeholders} can all be filled
 * from what the old one carried, so every hook message of a trajectory can
 * be re-rendered (hsa_relabel.c).  The retry count respects the trajectory:
 * never below the retries it made, and exactly that count when it gave up. */
#include "hsa.h"
#include "jsonl.h"
#include "harness.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* Hooks whose message a trajectory may carry, and the field holding it. */
static const struct { const char *hook, *field; } messages[] = {
    { "input_check", "message" },  { "tool_args_check", "message" },
    { "skill_required", "message" }, { "reply_format", "message" },
    { "factual_risk", "message" }, { "reply_filter", "on_violation" },
};

/* Every key of `small` ("a,b") is a key of `big`. */
static int keys_subset(const char *small, const char *big)
{
    char *s = xstrdup(small), *save = NULL;
    int ok = 1;
    for (char *k = strtok_r(s, ",", &save); k && ok; k = strtok_r(NULL, ",", &save)) {
        char *pat = xasprintf(",%s,", k), *in = xasprintf(",%s,", big);
        ok = strstr(in, pat) != NULL;
        free(pat);
        free(in);
    }
    free(s);
    return ok;
}

/* A template from pool, different from cur, whose keys the old one has
 * (plus `extra`, keys always available).  Borrowed or NULL. */
static const char *pick_template(hsa_ctx *c, const json_t *pool, const char *cur,
                                 const char *extra)
{
    char *have0 = hsa_template_keys(cur);
    char *have = extra ? xasprintf("%s,%s", have0, extra) : xstrdup(have0);
    const char *ok[256];
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(pool, i, e) {
        const char *t = json_string_value(e);
        if (!t || !strcmp(t, cur) || n == 256) continue;
        char *k = hsa_template_keys(t);
        if (keys_subset(k, have)) ok[n++] = t;
        free(k);
    }
    free(have0);
    free(have);
    return n ? ok[rng_below(c->r, n)] : NULL;
}

static void retries(hsa_ctx *c, const json_t *range)
{
    json_t *tr = json_object_get(json_object_get(c->h, "hooks"), "tool_retry");
    json_t *jv = json_object_get(tr, "max_retries");
    if (!json_is_integer(jv) || json_array_size(range) != 2) return;
    json_int_t cur = json_integer_value(jv);
    json_int_t lo = json_integer_value(json_array_get(range, 0));
    json_int_t hi = json_integer_value(json_array_get(range, 1));
    json_int_t nv;
    if (c->need && c->need->gave_up) nv = c->need->retries;   /* exactly what it did */
    else {
        if (c->need && c->need->retries > lo) lo = c->need->retries;
        if (lo > hi) return;
        nv = lo + (json_int_t)rng_below(c->r, (uint64_t)(hi - lo + 1));
    }
    if (nv == cur) return;
    hsa_op(c, HSA_HOOKS, "max_retries", "from", json_integer(cur), "to", json_integer(nv), NULL);
    json_object_set_new(tr, "max_retries", json_integer(nv));
}

static void error_format(hsa_ctx *c, const json_t *pool)
{
    json_t *hooks = json_object_get(c->h, "hooks");
    const char *cur = json_string_value(json_object_get(hooks, "error_format"));
    if (!cur) return;
    const char *to = pick_template(c, pool, cur, "tool");
    if (!to) return;
    hsa_op(c, HSA_HOOKS, "error_format", "from", json_str(cur), "to", json_str(to), NULL);
    json_object_set_new(hooks, "error_format", json_str(to));
}

static void envelope(hsa_ctx *c, const json_t *bank)
{
    json_t *hooks = json_object_get(c->h, "hooks");
    json_t *cur = json_object_get(hooks, "result_envelope");
    if (!json_is_object(cur)) return;
    json_t *env;
    double plain = json_number_value(json_object_get(bank, "plain"));
    if (rng_chance(c->r, plain)) {
        env = json_pack("{s:s}", "style", "plain");
    } else {
        const json_t *ok = json_object_get(bank, "ok_key"), *data = json_object_get(bank, "data_key"),
                     *err = json_object_get(bank, "error_key");
        if (!json_array_size(ok) || !json_array_size(data) || !json_array_size(err)) return;
        const char *k[3];
        k[0] = json_string_value(json_array_get(ok, rng_below(c->r, json_array_size(ok))));
        k[1] = json_string_value(json_array_get(data, rng_below(c->r, json_array_size(data))));
        k[2] = json_string_value(json_array_get(err, rng_below(c->r, json_array_size(err))));
        if (!k[0] || !k[1] || !k[2] || !strcmp(k[0], k[1]) || !strcmp(k[0], k[2]) ||
            !strcmp(k[1], k[2]))
            return;
        env = json_pack("{s:s, s:s, s:s, s:s}", "style", "wrapped", "ok_key", k[0],
                        "data_key", k[1], "error_key", k[2]);
    }
    if (json_equal(env, cur)) { json_decref(env); return; }
    hsa_op(c, HSA_HOOKS, "envelope", "from", json_deep_copy(cur), "to", json_deep_copy(env), NULL);
    json_object_set_new(hooks, "result_envelope", env);
}

static void message(hsa_ctx *c, const char *hook, const char *field, const json_t *pool)
{
    json_t *h = json_object_get(json_object_get(c->h, "hooks"), hook);
    const char *cur = json_string_value(json_object_get(h, field));
    if (!cur) return;
    const char *to = pick_template(c, pool, cur, NULL);
    if (!to) return;
    hsa_op(c, HSA_HOOKS, "message", "hook", json_str(hook), "from", json_str(cur),
           "to", json_str(to), NULL);
    json_object_set_new(h, field, json_str(to));
}

void hsa_hooks(hsa_ctx *c)
{
    double p = c->o->p[HSA_HOOKS];
    const json_t *bank = hsa_vocab_json(c->v, "hooks");
    if (rng_chance(c->r, p)) retries(c, json_object_get(bank, "max_retries"));
    if (rng_chance(c->r, p)) error_format(c, json_object_get(bank, "error_formats"));
    if (rng_chance(c->r, p)) envelope(c, json_object_get(bank, "envelope"));
    const json_t *pools = json_object_get(bank, "messages");
    for (size_t i = 0; i < sizeof messages / sizeof messages[0]; i++)
        if (rng_chance(c->r, p))
            message(c, messages[i].hook, messages[i].field,
                    json_object_get(pools, messages[i].hook));
}
