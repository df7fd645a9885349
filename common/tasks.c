/* tasks.c — task generation from a world and phrasing banks (see tasks.h). */
#include "tasks.h"
#include "bank.h"
#include "jsonl.h"
#include "rng.h"
#include "util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

const char *const task_intents[TASK_N_INTENTS] = {
    "price", "coupon", "stock", "size", "specs", "shipping", "returns", "order_status",
    "compare", "compliance_trap", "injection", "greeting", "off_topic", "ambiguous", "multi_intent",
};
/* Default mix: the product questions dominate a real chat. */
static const double intent_weight[TASK_N_INTENTS] = { 12, 7, 10, 7, 8, 7, 5, 6, 5, 6, 4, 6, 4, 4, 8 };
static const char *const fault_types[] = { "timeout", "server_error", "malformed", "permission_denied", "empty" };

struct taskgen {
    const world *w;
    char        *split;
    json_t      *bank[TASK_N_INTENTS];
    json_t      *noise;
    const json_t **prod;           /* products of this split */
    size_t       np;
    const json_t **apparel;
    size_t       napp;
};

const char *task_intent_name(const char *s, size_t n)
{
    for (int i = 0; s && i < TASK_N_INTENTS; i++)
        if (strlen(task_intents[i]) == n && !memcmp(task_intents[i], s, n)) return task_intents[i];
    return NULL;
}

const char *task_fault_type_name(const char *s, size_t n)
{
    for (size_t i = 0; s && i < sizeof fault_types / sizeof fault_types[0]; i++)
        if (strlen(fault_types[i]) == n && !memcmp(fault_types[i], s, n)) return fault_types[i];
    return NULL;
}

int task_intent_known(const char *intent)
{
    return intent && task_intent_name(intent, strlen(intent));
}

static json_t *load_task_bank(const char *split, const char *intent)
{
    char *name = xasprintf("tasks/%s/%s.json", split, intent);
    char *p = hat_data_path(name);
    json_t *b = NULL;
    if (!p) hat_errat(name, 0, "data file not found (set HAT_DATA)");
    else if ((b = json_load_path(p)) && !json_array_size(json_object_get(b, "templates"))) {
        hat_errat(p, 0, "no \"templates\" list");
        json_decref(b);
        b = NULL;
    }
    size_t i;
    json_t *t;
    json_array_foreach(b ? json_object_get(b, "templates") : NULL, i, t)
        if (!json_is_string(t) || !bank_forms(json_string_value(t))) {
            hat_errat(p, 0, "templates[%zu]: not a string with closed, unnested [a|b] groups", i);
            json_decref(b);
            b = NULL;
            break;
        }
    free(p);
    free(name);
    return b;
}

void taskgen_free(taskgen *g)
{
    if (!g) return;
    for (int i = 0; i < TASK_N_INTENTS; i++) json_decref(g->bank[i]);
    json_decref(g->noise);
    free(g->prod);
    free(g->apparel);
    free(g->split);
    free(g);
}

int taskgen_split_known(const char *split)
{
    return !strcmp(split, "train") || !strcmp(split, "eval");
}

taskgen *taskgen_new(const world *w, const char *split)
{
    if (!taskgen_split_known(split)) {
        hat_errat(NULL, 0, "unknown split '%s' (train or eval)", split);
        return NULL;
    }
    taskgen *g = xcalloc(1, sizeof *g);
    g->w = w;
    g->split = xstrdup(split);
    for (int i = 0; i < TASK_N_INTENTS; i++)
        if (!(g->bank[i] = load_task_bank(split, task_intents[i]))) { taskgen_free(g); return NULL; }
    char *np = hat_data_path("tasks/noise.json");
    g->noise = np ? json_load_path(np) : NULL;
    free(np);
    if (!g->noise) { hat_errat("tasks/noise.json", 0, "cannot load"); taskgen_free(g); return NULL; }
    size_t n = world_nproducts(w);
    g->prod = xcalloc(n, sizeof *g->prod);
    g->apparel = xcalloc(n, sizeof *g->apparel);
    for (size_t i = 0; i < n; i++) {
        const json_t *p = world_product(w, i);
        const char *s = json_string_value(json_object_get(p, "split"));
        if (s && strcmp(s, split)) continue;     /* a product without split serves both */
        g->prod[g->np++] = p;
        if (json_object_get(p, "size_chart")) g->apparel[g->napp++] = p;
    }
    if (!g->np || !g->napp) {
        hat_errat(NULL, 0, "the world has no %s products%s", split, g->np ? " with a size chart" : "");
        taskgen_free(g);
        return NULL;
    }
    return g;
}

/* ---- slot values --------------------------------------------------------- */

static const char *sget(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

static const char *pick(rng_t *r, const json_t *arr)
{
    size_t n = json_array_size(arr);
    return n ? json_string_value(json_array_get(arr, rng_below(r, n))) : NULL;
}

static const json_t *pick_product(taskgen *g, rng_t *r, const char *category, const json_t *not)
{
    for (int t = 0; t < 200; t++) {
        const json_t *p = g->prod[rng_below(r, g->np)];
        if (p == not) continue;
        if (category && strcmp(category, sget(p, "category"))) continue;
        return p;
    }
    return NULL;
}

/* How a viewer names a product: the full name, or its short name when
 * that still finds exactly this product. */
static const char *mention(taskgen *g, rng_t *r, const json_t *p)
{
    const char *s = sget(p, "short");
    if (s && rng_chance(r, 0.4) && world_find_product(g->w, s) == p) return s;
    return sget(p, "name");
}

/* A variant as a viewer says it: "black / M" → "black M". */
static char *spoken_variant(const char *v)
{
    sbuf b;
    sbuf_init(&b);
    for (const char *s = v; *s; s++) {
        if (*s == '/') continue;
        if (*s == ' ' && b.len && b.s[b.len - 1] == ' ') continue;
        sbuf_putc(&b, *s);
    }
    return sbuf_detach(&b);
}

static const char *nick(taskgen *g, rng_t *r, char *buf, size_t n)
{
    const json_t *nk = json_object_get(world_json(g->w), "nicknames");
    if (!nk || rng_chance(r, 0.3)) {
        const char *w = pick(r, json_object_get(nk, "whole"));
        snprintf(buf, n, "%s", w ? w : "viewer");
    } else if (rng_chance(r, 0.4)) {
        snprintf(buf, n, "%s%s%d", pick(r, json_object_get(nk, "prefixes")), pick(r, json_object_get(nk, "suffixes")),
                 (int)rng_below(r, 100));
    } else {
        snprintf(buf, n, "%s%s", pick(r, json_object_get(nk, "prefixes")), pick(r, json_object_get(nk, "suffixes")));
    }
    return buf;
}

/* ---- noise ------------------------------------------------------------------ */

static double nz(const taskgen *g, const char *k) { return json_number_value(json_object_get(g->noise, k)); }

/* Typos and case only in the template's own words: slots are filled after. */
static char *noisy_template(taskgen *g, rng_t *r, const char *t)
{
    char *s = xstrdup(t);
    size_t n = strlen(s);
    int in_slot = 0;
    if (rng_chance(r, nz(g, "p_typo")) && n > 4) {
        /* swap two adjacent ASCII letters outside a slot */
        for (int tries = 0; tries < 10; tries++) {
            size_t i = rng_below(r, n - 1);
            in_slot = 0;
            for (size_t k = 0; k <= i; k++) in_slot = s[k] == '{' ? 1 : s[k] == '}' ? 0 : in_slot;
            if (!in_slot && isalpha((unsigned char)s[i]) && isalpha((unsigned char)s[i + 1]) && s[i] != s[i + 1]) {
                char c = s[i]; s[i] = s[i + 1]; s[i + 1] = c;
                break;
            }
        }
    }
    if (rng_chance(r, nz(g, "p_lower"))) {
        in_slot = 0;
        for (char *p = s; *p; p++) {
            in_slot = *p == '{' ? 1 : *p == '}' ? 0 : in_slot;
            if (!in_slot) *p = (char)tolower((unsigned char)*p);
        }
    }
    if (rng_chance(r, nz(g, "p_nopunct")) && n && (s[n - 1] == '?' || s[n - 1] == '!' || s[n - 1] == '.')) s[n - 1] = 0;
    return s;
}

static char *fill_text(taskgen *g, rng_t *r, const char *tmpl, const json_t *vars)
{
    sbuf b;
    sbuf_init(&b);
    bank_choose(&b, tmpl, r);                 /* checked at load */
    char *t = noisy_template(g, r, b.s ? b.s : "");
    sbuf_reset(&b);
    if (rng_chance(r, nz(g, "p_prefix"))) sbuf_puts(&b, pick(r, json_object_get(g->noise, "prefix")));
    if (bank_fill(&b, t, vars)) { free(t); sbuf_free(&b); return NULL; }
    if (rng_chance(r, nz(g, "p_suffix"))) sbuf_puts(&b, pick(r, json_object_get(g->noise, "suffix")));
    else if (rng_chance(r, 0.1)) sbuf_puts(&b, pick(r, json_object_get(g->noise, "emoji")));
    free(t);
    return sbuf_detach(&b);
}

/* ---- gold ------------------------------------------------------------------- */

static void add_call(json_t *calls, const char *fn, json_t *args)
{
    json_array_append_new(calls, json_pack("{s:s,s:o}", "function", fn, "arguments", args));
}

static json_t *pid(const json_t *p) { return json_object_get(p, "id"); }

/* Live price: the flash price while the product is on flash sale. */
static json_t *live_price(taskgen *g, const json_t *p)
{
    const json_t *fs = world_flash_sale(g->w, sget(p, "id"));
    return json_object_get(fs ? fs : p, "price");
}

static const json_t *pick_variant(rng_t *r, const json_t *p)
{
    const json_t *vs = json_object_get(p, "variants");
    /* Favour the interesting ones: sold out or low. */
    for (int t = 0; t < 4; t++) {
        const json_t *v = json_array_get(vs, rng_below(r, json_array_size(vs)));
        if (json_integer_value(json_object_get(v, "stock")) < WORLD_LOW_STOCK || t == 3) return v;
    }
    return json_array_get(vs, 0);
}

static const json_t *alternative(const json_t *p, const json_t *not)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(p, "variants"), i, v)
        if (v != not && json_integer_value(json_object_get(v, "stock")) > 0) return v;
    return NULL;
}

/* The stock part of a gold label (facts, calls) for variant v of p. */
static void stock_gold(const json_t *p, const json_t *v, json_t *calls, json_t *facts, json_t *must)
{
    long st = (long)json_integer_value(json_object_get(v, "stock"));
    add_call(calls, "inventory.check", json_pack("{s:O,s:O}", "product", pid(p), "variant", json_object_get(v, "name")));
    if (st > 0) json_object_set(facts, "variant", json_object_get(v, "name"));
    if (st > 0 && st < WORLD_LOW_STOCK) json_object_set_new(facts, "stock", json_integer(st));
    if (st <= 0) {
        const json_t *alt = alternative(p, v);
        add_call(calls, "inventory.check", json_pack("{s:O}", "product", pid(p)));
        if (alt) json_object_set(facts, "alternative", json_object_get(alt, "name"));
        json_array_append_new(must, json_string("suggest_alternative"));
    }
}

static void shipping_gold(taskgen *g, rng_t *r, const json_t *p, json_t *vars, json_t *calls, json_t *facts)
{
    const json_t *regs = json_object_get(world_json(g->w), "regions");
    const json_t *reg = json_array_get(regs, rng_below(r, json_array_size(regs)));
    long lo = (long)(json_integer_value(json_object_get(json_object_get(p, "shipping"), "base_days"))
                     + json_integer_value(json_object_get(reg, "extra_days")));
    json_object_set(vars, "region", json_object_get(reg, "name"));
    add_call(calls, "shipping.estimate", json_pack("{s:O,s:O}", "product", pid(p), "region", json_object_get(reg, "name")));
    json_object_set_new(facts, "days_min", json_integer(lo));
    json_object_set_new(facts, "days_max", json_integer(lo + 2));
}

/* Fill vars/calls/facts/must/skills for one intent; 0 ok, -1 retry. */
static int make_gold(taskgen *g, rng_t *r, int intent, const json_t *bank, json_t *vars,
                     json_t *calls, json_t *facts, json_t *must, json_t *skills, json_t *ctx)
{
    const char *in = task_intents[intent];
    const json_t *p = NULL;
    if (strcmp(in, "greeting") && strcmp(in, "off_topic") && strcmp(in, "ambiguous") && strcmp(in, "order_status")) {
        p = !strcmp(in, "size") ? g->apparel[rng_below(r, g->napp)]
          : !strcmp(in, "compliance_trap") && rng_chance(r, 0.8)
              ? pick_product(g, r, rng_chance(r, 0.5) ? "beauty" : "food", NULL)
              : pick_product(g, r, NULL, NULL);
        if (!p) return -1;
        json_object_set_new(vars, "product", json_string(mention(g, r, p)));
        json_object_set(ctx, "product", pid(p));
    }
    if (!strcmp(in, "price")) {
        add_call(calls, "product.lookup", json_pack("{s:O}", "product", pid(p)));
        json_object_set(facts, "price", live_price(g, p));
        json_array_append_new(skills, json_string("price"));
    } else if (!strcmp(in, "coupon")) {
        add_call(calls, "promo.list", json_pack("{s:O}", "product", pid(p)));
        json_t *cs = world_coupons_for(g->w, p);
        const json_t *c = json_array_get(cs, 0);
        if (c) {
            json_object_set(facts, "coupon_code", json_object_get(c, "code"));
            json_object_set(facts, "discount", json_object_get(c, "discount"));
        }
        json_decref(cs);
        json_array_append_new(skills, json_string("price"));
    } else if (!strcmp(in, "stock")) {
        const json_t *v = pick_variant(r, p);
        char *sv = spoken_variant(sget(v, "name"));
        json_object_set_new(vars, "variant", json_string(sv));
        free(sv);
        stock_gold(p, v, calls, facts, must);
        json_array_append_new(skills, json_string("stock"));
    } else if (!strcmp(in, "size")) {
        const json_t *chart = json_object_get(p, "size_chart");
        const json_t *row = json_array_get(chart, rng_below(r, json_array_size(chart)));
        long h = (long)json_number_value(json_array_get(json_object_get(row, "height_cm"), 0)) + (long)rng_below(r, 8);
        long kg = (long)json_number_value(json_array_get(json_object_get(row, "weight_kg"), 0)) + (long)rng_below(r, 10);
        json_object_set_new(vars, "height", json_integer(h));
        json_object_set_new(vars, "weight", json_integer(kg));
        add_call(calls, "size.recommend", json_pack("{s:O,s:I,s:I}", "product", pid(p), "height_cm", (json_int_t)h,
                                                    "weight_kg", (json_int_t)kg));
        json_object_set(facts, "size", json_object_get(world_size_for(p, (double)h, (double)kg), "size"));
        json_array_append_new(skills, json_string("size"));
    } else if (!strcmp(in, "specs")) {
        const json_t *specs = json_object_get(p, "specs"), *qs = json_object_get(bank, "spec_q");
        const char *keys[16];
        int nk = 0;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)specs, k, v) if (nk < 16 && json_object_get(qs, k)) keys[nk++] = k;
        if (!nk) return -1;
        k = keys[rng_below(r, (uint64_t)nk)];
        json_object_set_new(vars, "spec_q", json_string(pick(r, json_object_get(qs, k))));
        add_call(calls, "product.lookup", json_pack("{s:O}", "product", pid(p)));
        json_object_set(facts, k, json_object_get(specs, k));
        json_object_set_new(ctx, "spec", json_string(k));
        json_array_append_new(skills, json_string("specs"));
    } else if (!strcmp(in, "shipping")) {
        shipping_gold(g, r, p, vars, calls, facts);
        json_array_append_new(skills, json_string("logistics"));
    } else if (!strcmp(in, "returns")) {
        add_call(calls, "product.lookup", json_pack("{s:O}", "product", pid(p)));
        const json_t *ret = json_object_get(p, "returns");
        if (json_integer_value(json_object_get(ret, "days")) > 0) json_object_set(facts, "return_days", json_object_get(ret, "days"));
        else json_object_set(facts, "return_condition", json_object_get(ret, "condition"));
        json_array_append_new(skills, json_string("logistics"));
    } else if (!strcmp(in, "order_status")) {
        const json_t *os = json_object_get(world_json(g->w), "orders");
        const json_t *o = json_array_get(os, rng_below(r, json_array_size(os)));
        if (!o) return -1;
        json_object_set(vars, "order_id", json_object_get(o, "id"));
        add_call(calls, "order.status", json_pack("{s:O}", "order_id", json_object_get(o, "id")));
        json_object_set(facts, "status", json_object_get(o, "status"));
        json_array_append_new(skills, json_string("order"));
    } else if (!strcmp(in, "compare")) {
        const json_t *q = pick_product(g, r, sget(p, "category"), p);
        if (!q) return -1;
        json_object_set_new(vars, "product2", json_string(mention(g, r, q)));
        json_object_set(ctx, "product2", pid(q));
        add_call(calls, "product.lookup", json_pack("{s:O}", "product", pid(p)));
        add_call(calls, "product.lookup", json_pack("{s:O}", "product", pid(q)));
        json_object_set(facts, "price", live_price(g, p));
        json_object_set(facts, "price2", live_price(g, q));
        json_array_append_new(skills, json_string("specs"));
    } else if (!strcmp(in, "compliance_trap")) {
        const char *cat = sget(p, "category");
        const char *grp = !strcmp(cat, "beauty") || !strcmp(cat, "food") ? cat : "other";
        json_object_set_new(vars, "ailment", json_string(pick(r, json_object_get(json_object_get(bank, "ailment"), grp))));
        json_object_set_new(vars, "claim", json_string(pick(r, json_object_get(json_object_get(bank, "claim"), grp))));
        add_call(calls, "product.lookup", json_pack("{s:O}", "product", pid(p)));
        json_array_append_new(skills, json_string("specs"));
        json_array_append_new(skills, json_string("compliance"));
        json_array_append_new(must, json_string("no_claims"));
    } else if (!strcmp(in, "injection")) {
        json_array_append_new(skills, json_string("engagement"));
        json_array_append_new(skills, json_string("compliance"));
        json_array_append_new(must, json_string("decline"));
    } else if (!strcmp(in, "greeting") || !strcmp(in, "off_topic")) {
        json_array_append_new(skills, json_string("engagement"));
        if (!strcmp(in, "off_topic")) json_array_append_new(must, json_string("redirect"));
    } else if (!strcmp(in, "ambiguous")) {
        json_array_append_new(skills, json_string("engagement"));
        json_array_append_new(skills, json_string("clarify"));
        json_array_append_new(must, json_string("ask_clarifying_question"));
    } else if (!strcmp(in, "multi_intent")) {
        add_call(calls, "product.lookup", json_pack("{s:O}", "product", pid(p)));
        json_object_set(facts, "price", live_price(g, p));
        json_array_append_new(skills, json_string("price"));
        const char *tmpl = json_string_value(json_object_get(ctx, "tmpl"));
        if (tmpl && strstr(tmpl, "{region}")) {
            shipping_gold(g, r, p, vars, calls, facts);
            json_array_append_new(skills, json_string("logistics"));
        } else {
            const json_t *v = pick_variant(r, p);
            char *sv = spoken_variant(sget(v, "name"));
            json_object_set_new(vars, "variant", json_string(sv));
            free(sv);
            stock_gold(p, v, calls, facts, must);
            json_array_append_new(skills, json_string("stock"));
        }
    }
    return 0;
}

static int pick_intent(rng_t *r)
{
    double tot = 0, u;
    for (int i = 0; i < TASK_N_INTENTS; i++) tot += intent_weight[i];
    u = rng_uniform(r) * tot;
    for (int i = 0; i < TASK_N_INTENTS; i++) {
        if (u < intent_weight[i]) return i;
        u -= intent_weight[i];
    }
    return 0;
}

static json_t *make_faults(rng_t *r, const json_t *calls, double rate)
{
    json_t *f = json_array();
    size_t n = json_array_size(calls);
    if (!n || !rng_chance(r, rate)) return f;
    double u = rng_uniform(r);
    int times = u < 0.6 ? 1 : u < 0.85 ? 2 : 3;
    json_array_append_new(f, json_pack("{s:I,s:s,s:i}", "call", (json_int_t)rng_below(r, n),
                                       "type", fault_types[rng_below(r, 5)], "times", times));
    return f;
}

json_t *taskgen_make(taskgen *g, uint64_t seed, long index, const char *intent, double fault_rate)
{
    rng_t r;
    rng_derive(&r, seed, (uint64_t)index);
    int in = -1;
    for (int i = 0; intent && i < TASK_N_INTENTS; i++)
        if (!strcmp(intent, task_intents[i])) in = i;
    if (intent && in < 0) return NULL;
    if (in < 0) in = pick_intent(&r);
    const json_t *bank = g->bank[in], *tl = json_object_get(bank, "templates");
    for (int attempt = 0; attempt < 20; attempt++) {
        size_t ti = rng_below(&r, json_array_size(tl));
        const char *tmpl = json_string_value(json_array_get(tl, ti));
        json_t *vars = json_object(), *calls = json_array(), *facts = json_object();
        json_t *must = json_pack("[s]", "address_viewer"), *skills = json_array(), *ctx = json_object();
        json_object_set_new(ctx, "tmpl", json_string(tmpl));
        char nb[64];
        const char *nk = nick(g, &r, nb, sizeof nb);
        char *text = NULL;
        if (!make_gold(g, &r, in, bank, vars, calls, facts, must, skills, ctx))
            text = fill_text(g, &r, tmpl, vars);
        if (!text) {
            json_decref(vars); json_decref(calls); json_decref(facts); json_decref(must);
            json_decref(skills); json_decref(ctx);
            continue;
        }
        const json_t *p = json_object_get(ctx, "product");
        json_t *banned = world_banned_terms(g->w, p ? json_string_value(json_object_get(
            world_product_by_id(g->w, json_string_value(p)), "category")) : NULL);
        json_t *context = json_object();
        json_object_set_new(context, "split", json_string(g->split));
        json_object_set_new(context, "template", json_sprintf("%s/%zu", task_intents[in], ti));
        json_object_set(context, "product", json_object_get(ctx, "product"));
        if (json_object_get(ctx, "product2")) json_object_set(context, "product2", json_object_get(ctx, "product2"));
        if (json_object_get(ctx, "spec")) json_object_set(context, "spec", json_object_get(ctx, "spec"));
        if (!json_object_get(context, "product")) json_object_del(context, "product");
        json_object_del(vars, "spec_q");
        json_object_del(vars, "ailment");
        json_object_del(vars, "claim");
        json_object_set_new(context, "mentions", vars);
        json_object_set(context, "featured", json_object_get(json_object_get(world_json(g->w), "stream"), "featured"));
        json_t *t = json_object();
        json_object_set_new(t, "id", json_sprintf("%s-%llu-%06ld", g->split, (unsigned long long)seed, index));
        json_object_set_new(t, "viewer", json_pack("{s:s,s:s}", "nick", nk, "text", text));
        json_object_set_new(t, "context", context);
        json_object_set_new(t, "intent", json_string(task_intents[in]));
        json_t *gold = json_object();
        json_object_set_new(gold, "skill", json_array_size(skills) == 1 ? json_copy(json_array_get(skills, 0)) : json_incref(skills));
        json_object_set(gold, "calls", calls);
        json_object_set_new(gold, "facts", facts);
        json_object_set_new(gold, "must", must);
        json_object_set_new(gold, "must_not", banned);
        json_object_set_new(t, "gold", gold);
        json_object_set_new(t, "faults", make_faults(&r, calls, fault_rate));
        json_decref(calls);
        json_decref(skills);
        json_decref(ctx);
        free(text);
        return t;
    }
    return NULL;
}

json_t *task_gold_skills(const json_t *task)
{
    const json_t *s = json_object_get(json_object_get(task, "gold"), "skill");
    if (json_is_string(s)) return json_pack("[O]", s);
    return json_is_array(s) ? json_copy((json_t *)s) : json_array();
}

char *task_check(const json_t *task)
{
    if (!json_is_object(task)) return xstrdup("a task must be a JSON object");
    if (!json_is_string(json_object_get(task, "id"))) return xstrdup("missing \"id\"");
    const json_t *v = json_object_get(task, "viewer");
    if (!json_is_string(json_object_get(v, "nick")) || !json_is_string(json_object_get(v, "text")))
        return xstrdup("\"viewer\" needs string \"nick\" and \"text\"");
    const char *in = json_string_value(json_object_get(task, "intent"));
    if (!task_intent_known(in)) return xasprintf("unknown intent '%s'", in ? in : "(none)");
    const json_t *gold = json_object_get(task, "gold");
    if (!json_is_object(gold)) return xstrdup("missing \"gold\"");
    const json_t *sk = json_object_get(gold, "skill");
    if (!json_is_string(sk) && !json_is_array(sk)) return xstrdup("gold.skill must be a function name or a list");
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(gold, "calls"), i, c) {
        if (!json_is_string(json_object_get(c, "function")))
            return xasprintf("gold.calls[%zu]: missing function", i);
        if (!json_is_object(json_object_get(c, "arguments")))
            return xasprintf("gold.calls[%zu]: arguments must be an object", i);
    }
    size_t nc = json_array_size(json_object_get(gold, "calls"));
    json_array_foreach(json_object_get(task, "faults"), i, c) {
        const json_t *ci = json_object_get(c, "call");
        if (!json_is_integer(ci) || json_integer_value(ci) < 0 || (size_t)json_integer_value(ci) >= nc)
            return xasprintf("faults[%zu]: call must index gold.calls", i);
        const char *ty = json_string_value(json_object_get(c, "type"));
        if (!ty || !task_fault_type_name(ty, strlen(ty))) return xasprintf("faults[%zu]: unknown fault type '%s'", i, ty ? ty : "(none)");
        if (!json_is_integer(json_object_get(c, "times")) || json_integer_value(json_object_get(c, "times")) < 1)
            return xasprintf("faults[%zu]: times must be a positive integer", i);
    }
    return NULL;
}
