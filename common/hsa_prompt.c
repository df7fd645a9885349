/* hsa_prompt.c — the system-prompt dimension of HSA: reorder blocks (the
 * persona stays first) and the items inside blocks, move numeric params
 * within [min, max], and paraphrase block texts and items from the bank
 * (keyed by block id; {placeholders} are kept, the bank is checked for it).
 *
 * A moved param must keep the trajectory correct: the final reply must fit
 * the new max_chars / max_emoji, the calls and turns the new limits.  A
 * draw that breaks this is redrawn a few times, then drawn inside the
 * feasible range; when none exists the variant is marked invalid. */
#include "hsa.h"
#include "jsonl.h"
#include "harness.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REDRAWS 3

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void shuffle_array(hsa_ctx *c, json_t *owner, const char *key, size_t first,
                          const char *op, const char *block)
{
    json_t *a = json_object_get(owner, key);
    size_t n = json_array_size(a);
    if (n < first + 2) return;
    size_t m = n - first, *perm = xmalloc(m * sizeof *perm);
    for (size_t i = 0; i < m; i++) perm[i] = i + first;
    rng_shuffle(c->r, perm, m, sizeof *perm);
    json_t *na = json_array(), *order = json_array();
    int moved = 0;
    for (size_t i = 0; i < n; i++) {
        size_t from = i < first ? i : perm[i - first];
        moved |= from != i;
        json_array_append(na, json_array_get(a, from));
        const json_t *e = json_array_get(a, from);
        json_array_append_new(order, block ? json_integer((json_int_t)from)
                                           : json_str(str(e, "id")));
    }
    free(perm);
    if (!moved) { json_decref(na); json_decref(order); return; }
    if (block)
        hsa_op(c, HSA_PROMPT, op, "block", json_str(block), "order", order, NULL);
    else
        hsa_op(c, HSA_PROMPT, op, "order", order, NULL);
    json_object_set_new(owner, key, na);
}

/* The least value a param may take for the trajectory to stay correct;
 * -1 when the param does not constrain it, -2 when it must not move. */
static double lower_bound(const hsa_ctx *c, const char *param)
{
    const hsa_needs *n = c->need;
    if (!n) return -1;
    int lim = !strcmp(param, "max_chars") || !strcmp(param, "max_emoji");
    if (lim && n->format_rejected) return -2;
    int budget = !strcmp(param, "max_tool_calls") || !strcmp(param, "max_turns");
    if (budget && n->budget_spent) return -2;   /* a call was given up for it */
    if (!strcmp(param, "max_chars")) return n->reply_chars;
    if (!strcmp(param, "max_emoji")) return n->reply_emoji;
    if (!strcmp(param, "max_tool_calls")) return n->tool_calls;
    if (!strcmp(param, "max_turns")) return n->turns;
    return -1;
}

static double draw(hsa_ctx *c, double lo, double hi, int integral)
{
    if (integral) return lo + (double)rng_below(c->r, (uint64_t)(hi - lo) + 1);
    return round((lo + rng_uniform(c->r) * (hi - lo)) * 1000) / 1000;
}

static void perturb(hsa_ctx *c, const char *name, json_t *spec, double p)
{
    json_t *jv = json_object_get(spec, "value");
    json_t *jmin = json_object_get(spec, "min"), *jmax = json_object_get(spec, "max");
    if (!json_is_number(jv) || !json_is_number(jmin) || !json_is_number(jmax)) return;
    if (!rng_chance(c->r, p)) return;
    double v = json_number_value(jv), lo = json_number_value(jmin), hi = json_number_value(jmax);
    int integral = json_is_integer(jv) && json_is_integer(jmin) && json_is_integer(jmax);
    double lb = lower_bound(c, name);
    if (lb == -2 || hi < lo) return;
    double nv = draw(c, lo, hi, integral);
    int tries = 0;
    while (nv < lb && ++tries <= REDRAWS) nv = draw(c, lo, hi, integral);
    if (nv < lb) {
        if (lb > hi) {   /* the reply never fitted: no value can make it right */
            if (!c->invalid) c->invalid = "the final reply does not fit any value of a prompt param";
            return;
        }
        nv = draw(c, integral ? ceil(fmax(lb, lo)) : fmax(lb, lo), hi, integral);
    }
    if (nv == v) return;
    json_t *to = integral ? json_integer((json_int_t)nv) : json_real(nv);
    if (tries)
        hsa_op(c, HSA_PROMPT, "param", "param", json_str(name), "from", json_deep_copy(jv),
               "to", json_deep_copy(to), "redraws", json_integer(tries), NULL);
    else
        hsa_op(c, HSA_PROMPT, "param", "param", json_str(name), "from", json_deep_copy(jv),
               "to", json_deep_copy(to), NULL);
    json_object_set_new(spec, "value", to);
}

static void paraphrase_block(hsa_ctx *c, json_t *b, double p)
{
    const char *id = str(b, "id");
    if (!id) return;
    char *section = xasprintf("blocks/%s", id);
    const char *from = str(b, "text");
    if (from && rng_chance(c->r, p)) {
        char *to = hsa_rewrite_text(c, HSA_PROMPT, section, from);
        if (to) {
            hsa_op(c, HSA_PROMPT, "paraphrase_block", "block", json_str(id),
                   "from", json_str(from), "to", json_str(to), NULL);
            json_object_set_new(b, "text", json_str(to));
            free(to);
        }
    }
    json_t *items = json_object_get(b, "items");
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) {
        const char *f = json_string_value(it);
        if (!f || !rng_chance(c->r, p)) continue;
        char *to = hsa_rewrite_text(c, HSA_PROMPT, section, f);
        if (!to) continue;
        hsa_op(c, HSA_PROMPT, "paraphrase_item", "block", json_str(id),
               "from", json_str(f), "to", json_str(to), NULL);
        json_array_set_new(items, i, json_str(to));
        free(to);
    }
    free(section);
}

void hsa_prompt(hsa_ctx *c)
{
    double p = c->o->p[HSA_PROMPT];
    json_t *sp = json_object_get(c->h, "system_prompt");
    if (!json_is_object(sp)) return;
    if (rng_chance(c->r, p)) shuffle_array(c, sp, "blocks", 1, "reorder_blocks", NULL);
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(sp, "blocks"), i, b) {
        if (rng_chance(c->r, p)) shuffle_array(c, b, "items", 0, "reorder_items", str(b, "id"));
        const char *name;
        json_t *spec;
        json_object_foreach(json_object_get(b, "params"), name, spec) perturb(c, name, spec, p);
        paraphrase_block(c, b, p);
    }
}
