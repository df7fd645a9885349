/* hsa_tools.c — the tool-definition dimension of HSA: rename tools and
 * their parameters (the x-function of every parameter stays), rewrite
 * tool and parameter descriptions, reorder the tools, and give the skill
 * loader — a tool like the others, and a surface form — a new name,
 * argument name and wording.  A tool's function never changes. */
#include "hsa.h"
#include "jsonl.h"
#include "harness.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* taken: names in use, old ones included (a new name never repeats one). */
static void rename_tool(hsa_ctx *c, json_t *t, json_t *taken)
{
    const char *fn = str(t, "function"), *from = str(t, "name");
    char *to = fn && from ? hsa_name_tool(c->v, c->r, fn, taken) : NULL;
    if (!to) return;
    json_object_set_new(taken, to, json_true());
    hsa_op(c, HSA_TOOLS, "rename_tool", "function", json_str(fn), "from", json_str(from),
           "to", json_str(to), NULL);
    json_object_set_new(t, "name", json_str(to));
    free(to);
}

/* Rebuild properties with new keys in the same order; rename "required". */
static void rename_params(hsa_ctx *c, json_t *t, double p)
{
    json_t *params = json_object_get(t, "parameters");
    json_t *props = json_object_get(params, "properties");
    if (!json_is_object(props)) return;
    json_t *taken = json_object(), *np = json_object(), *map = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(props, k, v) json_object_set_new(taken, k, json_true());
    json_object_foreach(props, k, v) {
        const char *xf = str(v, "x-function");
        char *to = xf && rng_chance(c->r, p) ? hsa_name_param(c->v, c->r, xf, taken) : NULL;
        if (to) {
            hsa_op(c, HSA_TOOLS, "rename_param", "function", json_str(str(t, "function")),
                   "x-function", json_str(xf), "from", json_str(k), "to", json_str(to),
                   NULL);
            json_object_set_new(taken, to, json_true());
            json_object_set_new(map, k, json_str(to));
        }
        json_object_set(np, to ? to : k, v);
        free(to);
    }
    json_t *req = json_object_get(params, "required");
    size_t i;
    json_t *r;
    json_array_foreach(req, i, r) {
        const char *to = str(map, json_string_value(r) ? json_string_value(r) : "");
        if (to) json_array_set_new(req, i, json_str(to));
    }
    json_object_set_new(params, "properties", np);
    json_decref(taken);
    json_decref(map);
}

static void paraphrase(hsa_ctx *c, const char *op, json_t *o, const char *key,
                       const char *section, const char *who_k, const char *who, double p)
{
    const char *from = str(o, key);
    if (!from || !rng_chance(c->r, p)) return;
    char *to = hsa_rewrite_text(c, HSA_TOOLS, section, from);
    if (!to) return;
    hsa_op(c, HSA_TOOLS, op, who_k, json_str(who), "from", json_str(from),
           "to", json_str(to), NULL);
    json_object_set_new(o, key, json_str(to));
    free(to);
}

static void param_descriptions(hsa_ctx *c, json_t *t, double p)
{
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(json_object_get(t, "parameters"), "properties"), k, v) {
        const char *from = str(v, "description");
        if (!from || !rng_chance(c->r, p)) continue;
        char *to = hsa_rewrite_text(c, HSA_TOOLS, "param_descriptions", from);
        if (!to) continue;
        hsa_op(c, HSA_TOOLS, "describe_param", "function", json_str(str(t, "function")),
               "x-function", json_str(str(v, "x-function")), "from", json_str(from),
               "to", json_str(to), NULL);
        json_object_set_new(v, "description", json_str(to));
        free(to);
    }
}

static void reorder_tools(hsa_ctx *c, double p)
{
    json_t *tools = json_object_get(c->h, "tools");
    size_t n = json_array_size(tools);
    if (n < 2 || !rng_chance(c->r, p)) return;
    json_t **items = xmalloc(n * sizeof *items);
    for (size_t i = 0; i < n; i++) items[i] = json_array_get(tools, i);
    rng_shuffle(c->r, items, n, sizeof *items);
    json_t *nt = json_array(), *order = json_array();
    int moved = 0;
    for (size_t i = 0; i < n; i++) {
        moved |= items[i] != json_array_get(tools, i);
        json_array_append(nt, items[i]);
        json_array_append_new(order, json_str(str(items[i], "function")));
    }
    free(items);
    if (!moved) { json_decref(nt); json_decref(order); return; }
    hsa_op(c, HSA_TOOLS, "reorder_tools", "order", order, NULL);
    json_object_set_new(c->h, "tools", nt);
}

/* The preamble names the loader, as {loader} or literally: keep a literal
 * name in step, and paraphrase with the name abstracted to {loader} (how
 * the bank keys it). */
static void loader_preamble(hsa_ctx *c, json_t *l, const char *from, const char *to, double p)
{
    const char *pre = str(l, "preamble");
    if (!pre) return;
    char *now = hsa_replace_word(pre, from, to);
    char *key = hsa_replace_word(pre, from, "{loader}");
    char *alt = rng_chance(c->r, p) ? hsa_rewrite_text(c, HSA_TOOLS, "loader", key) : NULL;
    if (alt) {
        /* A preamble written with {loader} keeps the placeholder. */
        json_t *vars = strstr(pre, "{loader}") ? json_object() : json_pack("{s:s}", "loader", to);
        char *filled = harness_fill(alt, vars);
        json_decref(vars);
        hsa_op(c, HSA_TOOLS, "describe_loader", "field", json_str("preamble"),
               "from", json_str(pre), "to", json_str(filled), NULL);
        free(now);
        now = filled;
        free(alt);
    }
    json_object_set_new(l, "preamble", json_str(now));
    free(now);
    free(key);
}

static void loader(hsa_ctx *c, double p, json_t *taken)
{
    json_t *l = json_object_get(c->h, "skill_loader");
    if (!json_is_object(l) || !str(l, "name")) return;
    char *from = xstrdup(str(l, "name")), *to = NULL;
    if (rng_chance(c->r, p)) to = hsa_name_loader(c->v, c->r, taken);
    if (to) {
        hsa_op(c, HSA_TOOLS, "rename_loader", "from", json_str(from), "to", json_str(to),
               NULL);
        json_object_set_new(l, "name", json_str(to));
    }
    const char *arg = str(l, "argument");
    if (arg && rng_chance(c->r, p)) {
        json_t *taken = json_pack("{s:b}", arg, 1);
        char *na = hsa_name_param(c->v, c->r, "skill", taken);
        json_decref(taken);
        if (na) {
            hsa_op(c, HSA_TOOLS, "rename_loader_argument", "from", json_str(arg),
                   "to", json_str(na), NULL);
            json_object_set_new(l, "argument", json_str(na));
            free(na);
        }
    }
    paraphrase(c, "describe_loader", l, "description", "loader", "field", "description", p);
    paraphrase(c, "describe_loader", l, "argument_description", "loader", "field",
               "argument_description", p);
    loader_preamble(c, l, from, to ? to : from, p);
    free(from);
    free(to);
}

void hsa_tools(hsa_ctx *c)
{
    double p = c->o->p[HSA_TOOLS];
    json_t *taken = hsa_taken_names(c->h);
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(c->h, "tools"), i, t) {
        if (rng_chance(c->r, p)) rename_tool(c, t, taken);
        rename_params(c, t, p);
        paraphrase(c, "describe_tool", t, "description", "tool_descriptions", "function",
                   str(t, "function"), p);
        param_descriptions(c, t, p);
    }
    reorder_tools(c, p);
    loader(c, p, taken);
    json_decref(taken);
}
