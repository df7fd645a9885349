/* world.c — generating, checking and indexing the simulated shop, and the
 * tool functions that answer from it (see world.h). */
#include "world.h"
#include "jsonl.h"
#include "rng.h"
#include "util.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WORLD_TODAY "2026-11-29"

struct world {
    json_t  *root;
    json_t  *products;           /* borrowed from root */
    size_t   np;
    char   **lname;              /* lower-cased product names, for matching */
    char   **lid;                /* lower-cased ids */
    json_t  *orders, *regions, *coupons;
    json_t  *index;              /* lower-cased id, name, unique short name → position */
    const char *today;
};

/* ---- small helpers ------------------------------------------------------ */

static void lower_into(char *d, const char *s)
{
    for (; *s; s++) *d++ = (char)tolower((unsigned char)*s);
    *d = 0;
}

static char *xlower(const char *s)
{
    char *d = xmalloc(strlen(s) + 1);
    lower_into(d, s);
    return d;
}

static const char *sget(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static const char *pick_str(rng_t *r, const json_t *arr)
{
    size_t n = json_array_size(arr);
    return n ? json_string_value(json_array_get(arr, rng_below(r, n))) : "";
}

/* A retail price in [lo, hi] ending in 9 (or .9 for cheap items). */
static json_t *price_json(double v)
{
    if (fabs(v - floor(v)) < 1e-9) return json_integer((json_int_t)v);
    return json_real(round(v * 10) / 10);
}

static double retail_price(rng_t *r, double lo, double hi)
{
    double p = lo + rng_uniform(r) * (hi - lo);
    p = floor(p / 10) * 10 + 9;
    if (p < 19) p = 19;
    if (rng_chance(r, 0.2)) p -= 0.1;     /* 89.9 style */
    return p;
}

static char *date_plus(const char *ymd, int days)
{
    struct tm tm = {0};
    if (sscanf(ymd, "%d-%d-%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday) != 3) return xstrdup(ymd);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_hour = 12;
    time_t t = timegm(&tm) + (time_t)days * 86400;
    gmtime_r(&t, &tm);
    return xasprintf("%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}

static json_t *load_data(const char *name)
{
    char *p = hat_data_path(name);
    if (!p) {
        hat_errat(name, 0, "data file not found (set HAT_DATA)");
        return NULL;
    }
    json_t *v = json_load_path(p);
    free(p);
    return v;
}

/* ---- generation ---------------------------------------------------------- */

static json_t *gen_variants(rng_t *r, const char *cat, const json_t *vars)
{
    /* Two variant axes per category (first key, second key), 2-3 x 1-4. */
    const char *k1 = NULL, *k2 = NULL, *k;
    json_t *v;
    json_object_foreach((json_t *)vars, k, v) {
        if (!k1) k1 = k; else if (!k2) k2 = k;
    }
    json_t *a1 = json_object_get(vars, k1), *a2 = json_object_get(vars, k2);
    size_t n1 = 2 + rng_below(r, 2), n2 = strcmp(cat, "apparel") ? 1 + rng_below(r, 2) : json_array_size(a2);
    if (n1 > json_array_size(a1)) n1 = json_array_size(a1);
    if (n2 > json_array_size(a2)) n2 = json_array_size(a2);
    size_t o1 = rng_below(r, json_array_size(a1)), o2 = strcmp(cat, "apparel") ? rng_below(r, json_array_size(a2)) : 0;
    json_t *out = json_array();
    for (size_t i = 0; i < n1; i++)
        for (size_t j = 0; j < n2; j++) {
            const char *x = json_string_value(json_array_get(a1, (o1 + i) % json_array_size(a1)));
            const char *y = json_string_value(json_array_get(a2, (o2 + j) % json_array_size(a2)));
            double u = rng_uniform(r);
            long stock = u < 0.15 ? 0 : u < 0.35 ? 1 + (long)rng_below(r, WORLD_LOW_STOCK - 1)
                                   : 10 + (long)rng_below(r, 490);
            char *name = xasprintf("%s / %s", x, y);
            json_array_append_new(out, json_pack("{s:s,s:I}", "name", name, "stock", (json_int_t)stock));
            free(name);
        }
    /* Every product keeps at least one variant in stock (a sold-out
     * variant then always has an alternative to suggest). */
    int any = 0;
    size_t i;
    json_array_foreach(out, i, v) any |= json_integer_value(json_object_get(v, "stock")) > 0;
    if (!any) json_object_set_new(json_array_get(out, 0), "stock", json_integer(40 + (long)rng_below(r, 100)));
    return out;
}

static json_t *gen_specs(rng_t *r, const json_t *specs, const json_t *item)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)specs, k, v)
        json_object_set(out, k, json_array_get(v, rng_below(r, json_array_size(v))));
    if (json_object_get(item, "fit")) json_object_set(out, "fit", json_object_get(item, "fit"));
    return out;
}

static json_t *gen_product(rng_t *r, int idx, const char *cat, const json_t *c,
                           const json_t *regions, json_t *seen)
{
    const json_t *items = json_object_get(c, "items");
    json_t *item = NULL;
    char *name = NULL, *shortn = NULL;
    for (int tries = 0; tries < 50; tries++) {
        free(name); free(shortn);
        item = json_array_get(items, rng_below(r, json_array_size(items)));
        const char *noun = sget(item, "noun");
        if (rng_chance(r, 0.12) && json_array_size(json_object_get(c, "zh_brands"))) {
            const char *zb = pick_str(r, json_object_get(c, "zh_brands"));
            name = xasprintf("%s%s", zb, sget(item, "zh"));
            shortn = xstrdup(name);
        } else {
            const char *b = pick_str(r, json_object_get(c, "brands"));
            const char *a = pick_str(r, json_object_get(c, "adjectives"));
            name = xasprintf("%s %s %s", b, a, noun);
            shortn = xasprintf("%s %s", b, noun);
        }
        if (!json_object_get(seen, name)) break;
    }
    json_object_set_new(seen, name, json_true());
    const json_t *pr = json_object_get(item, "price");
    double price = retail_price(r, json_number_value(json_array_get(pr, 0)),
                                json_number_value(json_array_get(pr, 1)));
    double list = price;
    if (rng_chance(r, 0.75)) list = floor(price * (1.15 + 0.45 * rng_uniform(r)) / 10) * 10 + 9;
    char id[16];
    snprintf(id, sizeof id, "P%03d", idx + 1);
    json_t *p = json_object();
    json_object_set_new(p, "id", json_string(id));
    json_object_set_new(p, "name", json_string(name));
    json_object_set_new(p, "short", json_string(shortn));
    json_object_set_new(p, "category", json_string(cat));
    json_object_set_new(p, "split", json_string(rng_chance(r, 0.2) ? "eval" : "train"));
    json_object_set_new(p, "price", price_json(price));
    json_object_set_new(p, "list_price", price_json(list));
    json_object_set_new(p, "variants", gen_variants(r, cat, json_object_get(c, "variants")));
    json_object_set_new(p, "specs", gen_specs(r, json_object_get(c, "specs"), item));
    if (json_object_get(c, "size_chart")) json_object_set(p, "size_chart", json_object_get(c, "size_chart"));
    const json_t *wh = json_object_get(regions, "warehouses");
    json_object_set_new(p, "shipping", json_pack("{s:s,s:i,s:i}",
        "from", pick_str(r, wh), "base_days", 1 + (int)rng_below(r, 3),
        "free_over", rng_chance(r, 0.5) ? 0 : 99));
    const json_t *rets = json_object_get(c, "returns");
    json_object_set(p, "returns", json_array_get(rets, rng_below(r, json_array_size(rets))));
    free(name); free(shortn);
    return p;
}

static json_t *gen_coupons(rng_t *r, const json_t *shop, const json_t *products, const char *today)
{
    static const char *cats[] = { "apparel", "beauty", "food", "electronics", "home" };
    const json_t *stems = json_object_get(shop, "coupon_stems");
    json_t *out = json_array(), *seen = json_object();
    int n = 14 + (int)rng_below(r, 6);
    for (int i = 0; i < n; i++) {
        int disc = (int)(5 + 5 * rng_below(r, 8));            /* 5..40 */
        int thr = disc * (4 + (int)rng_below(r, 6)) / 10 * 10 + 9;
        char code[32];
        for (int tries = 0; ; tries++) {
            if (tries < 20) snprintf(code, sizeof code, "%s%d", pick_str(r, stems), disc);
            else snprintf(code, sizeof code, "%s%d%d", pick_str(r, stems), disc, tries);
            if (!json_object_get(seen, code)) break;
        }
        json_object_set_new(seen, code, json_true());
        int days = i == 0 ? 30 : rng_chance(r, 0.15) ? -1 - (int)rng_below(r, 10) : 1 + (int)rng_below(r, 20);
        char *exp = date_plus(today, days);
        json_t *c = json_pack("{s:s,s:i,s:i}", "code", code, "discount", disc, "threshold", thr);
        if (i == 0) {
            json_object_set_new(c, "scope", json_string("all"));   /* every product has one */
        } else if (rng_chance(r, 0.4)) {
            json_object_set_new(c, "scope", json_string("category"));
            json_object_set_new(c, "target", json_string(cats[rng_below(r, 5)]));
        } else {
            json_t *p = json_array_get(products, rng_below(r, json_array_size(products)));
            json_object_set_new(c, "scope", json_string("product"));
            json_object_set(c, "target", json_object_get(p, "id"));
        }
        json_object_set_new(c, "expires", json_string(exp));
        json_array_append_new(out, c);
        free(exp);
    }
    json_decref(seen);
    return out;
}

static json_t *gen_orders(rng_t *r, const json_t *shop, const json_t *regions,
                          const json_t *products, const char *today, int n)
{
    json_t *out = json_array();
    for (int i = 0; i < n; i++) {
        const json_t *p = json_array_get(products, rng_below(r, json_array_size(products)));
        const json_t *v = json_array_get(json_object_get(p, "variants"), 0);
        char *placed = date_plus(today, -1 - (int)rng_below(r, 20));
        char id[40];
        snprintf(id, sizeof id, "OD%.4s%.2s%.2s-%04d", placed, placed + 5, placed + 8, (int)(i * 37 % 9000) + 1000);
        const char *status = pick_str(r, json_object_get(shop, "order_statuses"));
        json_t *o = json_pack("{s:s,s:O,s:O,s:s,s:s}", "id", id, "product", json_object_get(p, "id"),
                              "variant", json_object_get(v, "name"), "status", status, "placed", placed);
        if (!strcmp(status, "shipped") || !strcmp(status, "in transit") || !strcmp(status, "out for delivery")
            || !strcmp(status, "delivered")) {
            char trk[32];
            snprintf(trk, sizeof trk, "SF%010llu", (unsigned long long)(rng_u64(r) % 10000000000ull));
            json_object_set_new(o, "carrier", json_string(pick_str(r, json_object_get(regions, "carriers"))));
            json_object_set_new(o, "tracking", json_string(trk));
            if (strcmp(status, "delivered"))
                json_object_set_new(o, "eta_days", json_integer(strcmp(status, "out for delivery") ? 1 + (int)rng_below(r, 4) : 0));
        }
        json_array_append_new(out, o);
        free(placed);
    }
    return out;
}

json_t *world_generate(uint64_t seed, int n_products)
{
    static const char *cats[] = { "apparel", "beauty", "food", "electronics", "home" };
    json_t *catj = load_data("world/categories.json"), *regions = load_data("world/regions.json");
    json_t *nicks = load_data("world/nicknames.json"), *comp = load_data("world/compliance.json");
    json_t *shop = load_data("world/shop.json");
    json_t *w = NULL;
    if (!catj || !regions || !nicks || !comp || !shop) goto out;
    rng_t r;
    rng_seed(&r, seed);
    const char *today = WORLD_TODAY;
    json_t *products = json_array(), *seen = json_object();
    for (int i = 0; i < n_products; i++) {
        const char *cat = cats[i % 5];     /* balanced categories */
        json_array_append_new(products, gen_product(&r, i, cat, json_object_get(catj, cat), regions, seen));
    }
    json_decref(seen);
    const json_t *hosts = json_object_get(shop, "hosts");
    json_t *host = json_deep_copy(json_array_get(hosts, rng_below(&r, json_array_size(hosts))));
    /* Stream: 3-5 featured products, one flash sale on a featured one. */
    json_t *featured = json_array();
    size_t nf = 3 + rng_below(&r, 3);
    size_t np = json_array_size(products), start = rng_below(&r, np);
    for (size_t i = 0; i < nf && i < np; i++)          /* distinct: a stride through the list */
        json_array_append(featured, json_object_get(json_array_get(products, (start + i * 3) % np), "id"));
    const json_t *fp = json_array_get(products, 0);
    for (size_t i = 0; i < json_array_size(products); i++)
        if (!strcmp(sget(json_array_get(products, i), "id"), json_string_value(json_array_get(featured, 0))))
            fp = json_array_get(products, i);
    double fprice = floor(json_number_value(json_object_get(fp, "price")) * 0.8 / 10) * 10 + 9;
    if (fprice >= json_number_value(json_object_get(fp, "price"))) fprice = json_number_value(json_object_get(fp, "price")) - 10;
    json_t *stream = json_pack("{s:o,s:{s:O,s:o,s:s,s:i}}", "featured", featured, "flash_sale",
                               "product", json_object_get(fp, "id"), "price", price_json(fprice),
                               "ends", "21:30", "quota", 50 + (int)rng_below(&r, 150));
    json_t *nickgen = json_pack("{s:O,s:O,s:O}", "prefixes", json_object_get(nicks, "prefixes"),
                                "suffixes", json_object_get(nicks, "suffixes"), "whole", json_object_get(nicks, "whole"));
    w = json_object();
    json_object_set_new(w, "seed", json_integer((json_int_t)seed));
    json_object_set_new(w, "today", json_string(today));
    json_object_set_new(w, "currency", json_string("¥"));
    json_object_set(w, "shop", json_array_get(json_object_get(shop, "shops"), rng_below(&r, json_array_size(json_object_get(shop, "shops")))));
    json_object_set_new(w, "host", host);
    json_object_set_new(w, "stream", stream);
    json_object_set_new(w, "coupons", gen_coupons(&r, shop, products, today));
    json_object_set_new(w, "orders", gen_orders(&r, shop, regions, products, today, 40 + n_products / 2));
    json_object_set(w, "regions", json_object_get(regions, "regions"));
    json_object_set(w, "faq", json_object_get(shop, "faq"));
    json_object_set_new(w, "compliance", json_pack("{s:O,s:O}", "absolute", json_object_get(comp, "absolute"),
                                                  "by_category", json_object_get(comp, "by_category")));
    json_object_set_new(w, "nicknames", nickgen);
    json_object_set_new(w, "products", products);
out:
    json_decref(catj); json_decref(regions); json_decref(nicks); json_decref(comp); json_decref(shop);
    return w;
}

/* ---- loading and checking ---------------------------------------------- */

static int bad(const char *name, const char *fmt, const char *what, long i)
{
    char *m = xasprintf(fmt, what, i);
    hat_errat(name, 0, "%s", m);
    free(m);
    return -1;
}

static int check_product(const char *name, const json_t *p, long i)
{
    static const char *strs[] = { "id", "name", "category" };
    for (int k = 0; k < 3; k++)
        if (!json_is_string(json_object_get(p, strs[k])))
            return bad(name, "products[%2$ld]: missing or non-string \"%1$s\"", strs[k], i);
    if (!json_is_number(json_object_get(p, "price")) || json_number_value(json_object_get(p, "price")) < 0)
        return bad(name, "products[%2$ld]: missing or bad \"%1$s\"", "price", i);
    if (!json_is_array(json_object_get(p, "variants")))
        return bad(name, "products[%2$ld]: missing \"%1$s\" array", "variants", i);
    size_t j;
    json_t *v;
    json_array_foreach(json_object_get(p, "variants"), j, v)
        if (!json_is_string(json_object_get(v, "name")) || !json_is_integer(json_object_get(v, "stock")))
            return bad(name, "products[%2$ld]: a variant needs \"%1$s\" and an integer stock", "name", i);
    return 0;
}

world *world_from_json(json_t *root, const char *name)
{
    if (!json_is_object(root)) {
        hat_errat(name, 0, "not a world: expected a JSON object");
        json_decref(root);
        return NULL;
    }
    json_t *products = json_object_get(root, "products");
    if (!json_is_array(products) || !json_array_size(products)) {
        hat_errat(name, 0, "not a world: no \"products\" array");
        json_decref(root);
        return NULL;
    }
    size_t i;
    json_t *p;
    json_array_foreach(products, i, p)
        if (check_product(name, p, (long)i)) { json_decref(root); return NULL; }
    static const char *arrs[] = { "orders", "regions", "coupons" };
    for (int k = 0; k < 3; k++)
        if (!json_is_array(json_object_get(root, arrs[k]))) {
            hat_errat(name, 0, "not a world: no \"%s\" array", arrs[k]);
            json_decref(root);
            return NULL;
        }
    world *w = xcalloc(1, sizeof *w);
    w->root = root;
    w->products = products;
    w->np = json_array_size(products);
    w->lname = xcalloc(w->np, sizeof *w->lname);
    w->lid = xcalloc(w->np, sizeof *w->lid);
    w->index = json_object();
    json_t *shorts = json_object();
    json_array_foreach(products, i, p) {
        w->lname[i] = xlower(sget(p, "name"));
        w->lid[i] = xlower(sget(p, "id"));
        json_object_set_new(w->index, w->lid[i], json_integer((json_int_t)i));
        json_object_set_new(w->index, w->lname[i], json_integer((json_int_t)i));
        if (sget(p, "short")) {
            char *ls = xlower(sget(p, "short"));
            json_object_set_new(shorts, ls, json_integer(json_object_get(shorts, ls) ? -1 : (json_int_t)i));
            free(ls);
        }
    }
    const char *k;
    json_t *v;
    /* A short name shared by two products stays out: it must scan (and fail). */
    json_object_foreach(shorts, k, v)
        if (json_integer_value(v) >= 0 && !json_object_get(w->index, k)) json_object_set(w->index, k, v);
    json_decref(shorts);
    w->orders = json_object_get(root, "orders");
    w->regions = json_object_get(root, "regions");
    w->coupons = json_object_get(root, "coupons");
    w->today = sget(root, "today") ? sget(root, "today") : WORLD_TODAY;
    return w;
}

world *world_load(const char *path)
{
    json_t *root = json_load_path(path);
    if (!root) return NULL;
    return world_from_json(root, is_stdio_path(path) ? "<stdin>" : path);
}

void world_free(world *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->np; i++) { free(w->lname[i]); free(w->lid[i]); }
    free(w->lname);
    free(w->lid);
    json_decref(w->index);
    json_decref(w->root);
    free(w);
}

/* ---- lookups -------------------------------------------------------------- */

const json_t *world_json(const world *w) { return w->root; }
size_t world_nproducts(const world *w) { return w->np; }
const json_t *world_product(const world *w, size_t i) { return json_array_get(w->products, i); }

const json_t *world_product_by_id(const world *w, const char *id)
{
    char buf[64];
    if (id && strlen(id) < sizeof buf) {
        lower_into(buf, id);
        const json_t *ix = json_object_get(w->index, buf);
        size_t i = (size_t)json_integer_value(ix);
        if (ix && !strcmp(w->lid[i], buf)) return json_array_get(w->products, i);
    }
    return NULL;
}

const json_t *world_find_product(const world *w, const char *text)
{
    if (!text || !*text) return NULL;
    const json_t *p = world_product_by_id(w, text);
    if (p) return p;
    char buf[512];
    size_t n = strlen(text);
    if (n >= sizeof buf) return NULL;
    lower_into(buf, text);
    /* Trim blanks the model may leave around a name. */
    char *s = buf;
    while (*s == ' ') s++;
    for (char *e = s + strlen(s); e > s && e[-1] == ' '; ) *--e = 0;
    if (!*s) return NULL;
    const json_t *ix = json_object_get(w->index, s);
    if (ix) return json_array_get(w->products, (size_t)json_integer_value(ix));
    long hit = -1, nhit = 0;
    for (size_t i = 0; i < w->np; i++) {
        if (!strcmp(w->lname[i], s)) return json_array_get(w->products, i);
        if (strstr(w->lname[i], s) || (strlen(s) > strlen(w->lname[i]) && strstr(s, w->lname[i]))) {
            hit = (long)i;
            nhit++;
        }
    }
    return nhit == 1 ? json_array_get(w->products, (size_t)hit) : NULL;
}

const json_t *world_order(const world *w, const char *id)
{
    size_t i;
    json_t *o;
    json_array_foreach(w->orders, i, o)
        if (!strcasecmp(sget(o, "id"), id)) return o;
    return NULL;
}

const json_t *world_region(const world *w, const char *name)
{
    size_t i;
    json_t *o;
    json_array_foreach(w->regions, i, o)
        if (!strcasecmp(sget(o, "name"), name)) return o;
    return NULL;
}

/* Words of a variant name, lower-cased and sorted: "black / M" and
 * "M, black" both become "black m", so viewers' spellings match. */
static void variant_key(const char *s, char *out, size_t n)
{
    char words[16][32];
    int nw = 0;
    while (*s && nw < 16) {
        while (*s && !isalnum((unsigned char)*s) && !((unsigned char)*s & 0x80)) s++;
        size_t k = 0;
        while (*s && (isalnum((unsigned char)*s) || ((unsigned char)*s & 0x80))) {
            if (k < 31) words[nw][k++] = (char)tolower((unsigned char)*s);
            s++;
        }
        if (k) words[nw++][k] = 0;
    }
    qsort(words, (size_t)nw, sizeof words[0], (int (*)(const void *, const void *))strcmp);
    out[0] = 0;
    size_t len = 0;
    for (int i = 0; i < nw; i++) {
        int m = snprintf(out + len, n - len, "%s%s", i ? " " : "", words[i]);
        if (m < 0 || (size_t)m >= n - len) break;
        len += (size_t)m;
    }
}

const json_t *world_variant(const json_t *product, const char *name)
{
    size_t i;
    json_t *v;
    char want[512], have[512];
    if (!name) return NULL;
    json_array_foreach(json_object_get(product, "variants"), i, v)
        if (!strcasecmp(sget(v, "name"), name)) return v;
    variant_key(name, want, sizeof want);
    json_array_foreach(json_object_get(product, "variants"), i, v) {
        variant_key(sget(v, "name"), have, sizeof have);
        if (!strcmp(want, have)) return v;
    }
    return NULL;
}

const json_t *world_flash_sale(const world *w, const char *product_id)
{
    const json_t *fs = json_object_get(json_object_get(w->root, "stream"), "flash_sale");
    const char *p = sget(fs, "product");
    return p && product_id && !strcmp(p, product_id) ? fs : NULL;
}

static int coupon_applies(const world *w, const json_t *c, const json_t *p)
{
    const char *exp = sget(c, "expires"), *scope = sget(c, "scope"), *t = sget(c, "target");
    if (exp && strcmp(exp, w->today) < 0) return 0;     /* ISO dates compare as text */
    if (!scope || !strcmp(scope, "all")) return 1;
    if (!p || !t) return 0;
    if (!strcmp(scope, "category")) return !strcmp(t, sget(p, "category"));
    return !strcmp(t, sget(p, "id"));
}

json_t *world_coupons_for(const world *w, const json_t *product)
{
    json_t *out = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(w->coupons, i, c)
        if (coupon_applies(w, c, product)) {
            json_t *x = json_pack("{s:O,s:O,s:O,s:O}", "code", json_object_get(c, "code"),
                                  "discount", json_object_get(c, "discount"),
                                  "threshold", json_object_get(c, "threshold"),
                                  "expires", json_object_get(c, "expires"));
            /* Insert keeping the biggest discount first (stable). */
            size_t at = json_array_size(out);
            while (at > 0 && json_integer_value(json_object_get(json_array_get(out, at - 1), "discount"))
                             < json_integer_value(json_object_get(c, "discount"))) at--;
            json_array_insert_new(out, at, x);
        }
    return out;
}

static double range_lo(const json_t *row, const char *k) { return json_number_value(json_array_get(json_object_get(row, k), 0)); }
static double range_hi(const json_t *row, const char *k) { return json_number_value(json_array_get(json_object_get(row, k), 1)); }

const json_t *world_size_for(const json_t *product, double height_cm, double weight_kg)
{
    const json_t *chart = json_object_get(product, "size_chart");
    size_t n = json_array_size(chart), bh = n, bw = n;
    if (!n) return NULL;
    for (size_t i = 0; i < n; i++) {
        const json_t *row = json_array_get(chart, i);
        if (bh == n && height_cm < range_hi(row, "height_cm")) bh = i;
        if (bw == n && weight_kg < range_hi(row, "weight_kg")) bw = i;
    }
    if (bh == n) bh = n - 1;
    if (bw == n) bw = n - 1;
    (void)range_lo;
    return json_array_get(chart, bh > bw ? bh : bw);
}

json_t *world_banned_terms(const world *w, const char *category)
{
    const json_t *c = json_object_get(w->root, "compliance");
    json_t *out = json_array();
    json_array_extend(out, json_object_get(c, "absolute"));
    const json_t *bc = json_object_get(json_object_get(c, "by_category"), category ? category : "");
    if (json_is_array(bc)) json_array_extend(out, (json_t *)bc);
    return out;
}

const char *world_stock_status(long stock)
{
    return stock <= 0 ? "sold out" : stock < WORLD_LOW_STOCK ? "low" : "in stock";
}

/* ---- tool functions ------------------------------------------------------- */

static int not_found(const char **fault, char **message, const char *what, const char *v)
{
    *fault = "empty";
    *message = xasprintf("no %s matches '%s'", what, v ? v : "");
    return 0;
}

static json_t *product_head(const json_t *p)
{
    return json_pack("{s:O,s:O}", "id", json_object_get(p, "id"), "name", json_object_get(p, "name"));
}

static json_t *lookup_result(const world *w, const json_t *p)
{
    json_t *r = product_head(p);
    json_object_set(r, "category", json_object_get(p, "category"));
    json_object_set(r, "price", json_object_get(p, "price"));
    json_object_set(r, "list_price", json_object_get(p, "list_price"));
    const json_t *fs = world_flash_sale(w, sget(p, "id"));
    if (fs) json_object_set_new(r, "flash_sale", json_pack("{s:O,s:O}", "price", json_object_get(fs, "price"),
                                                           "ends", json_object_get(fs, "ends")));
    json_t *names = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(p, "variants"), i, v) json_array_append(names, json_object_get(v, "name"));
    json_object_set_new(r, "variants", names);
    json_object_set(r, "specs", json_object_get(p, "specs"));
    const json_t *ret = json_object_get(p, "returns");
    json_object_set_new(r, "returns", json_pack("{s:O,s:O}", "days", json_object_get(ret, "days"),
                                                "condition", json_object_get(ret, "condition")));
    return r;
}

static json_t *variant_json(const json_t *v)
{
    long s = (long)json_integer_value(json_object_get(v, "stock"));
    return json_pack("{s:O,s:I,s:s}", "name", json_object_get(v, "name"), "stock", (json_int_t)s,
                     "status", world_stock_status(s));
}

static int call_inventory(const json_t *p, const char *variant, json_t **result,
                          const char **fault, char **message)
{
    json_t *r = product_head(p), *list = json_array();
    size_t i;
    json_t *v;
    if (variant && *variant) {
        const json_t *one = world_variant(p, variant);
        if (!one) { json_decref(r); json_decref(list); return not_found(fault, message, "variant", variant); }
        json_array_append_new(list, variant_json(one));
    } else {
        json_array_foreach(json_object_get(p, "variants"), i, v) json_array_append_new(list, variant_json(v));
    }
    json_object_set_new(r, "variants", list);
    *result = r;
    return 1;
}

static int call_shipping(const world *w, const json_t *p, const char *region, json_t **result,
                         const char **fault, char **message)
{
    const json_t *reg = world_region(w, region ? region : "");
    if (!reg) return not_found(fault, message, "delivery region", region);
    const json_t *sh = json_object_get(p, "shipping");
    long lo = (long)(json_integer_value(json_object_get(sh, "base_days")) + json_integer_value(json_object_get(reg, "extra_days")));
    json_t *r = product_head(p);
    json_object_set(r, "region", json_object_get(reg, "name"));
    json_object_set(r, "ships_from", json_object_get(sh, "from"));
    json_object_set_new(r, "days_min", json_integer(lo));
    json_object_set_new(r, "days_max", json_integer(lo + 2));
    json_object_set(r, "free_shipping_over", json_object_get(sh, "free_over"));
    *result = r;
    return 1;
}

static int call_size(const json_t *p, const json_t *args, json_t **result, const char **fault, char **message)
{
    if (!json_object_get(p, "size_chart")) {
        *fault = "empty";
        *message = xasprintf("%s has no size chart", sget(p, "name"));
        return 0;
    }
    double h = json_number_value(json_object_get(args, "height_cm"));
    double kg = json_number_value(json_object_get(args, "weight_kg"));
    const json_t *row = world_size_for(p, h, kg);
    json_t *r = product_head(p);
    json_object_set(r, "size", json_object_get(row, "size"));
    json_object_set(r, "chest_cm", json_object_get(row, "chest_cm"));
    json_object_set(r, "height_cm", json_object_get(row, "height_cm"));
    json_object_set(r, "weight_kg", json_object_get(row, "weight_kg"));
    *result = r;
    return 1;
}

static int call_faq(const world *w, const char *q, json_t **result, const char **fault, char **message)
{
    json_t *hits = json_array();
    size_t i;
    json_t *f;
    char *lq = xlower(q ? q : "");
    json_array_foreach(json_object_get(w->root, "faq"), i, f) {
        char *k = xlower(sget(f, "q"));
        if (*lq && (strstr(lq, k) || strstr(k, lq))) json_array_append(hits, f);
        free(k);
    }
    free(lq);
    if (!json_array_size(hits)) { json_decref(hits); return not_found(fault, message, "FAQ entry", q); }
    *result = json_pack("{s:o}", "results", hits);
    return 1;
}

int world_call(const world *w, const char *function, const json_t *args,
               json_t **result, const char **fault, char **message)
{
    *result = NULL;
    *message = NULL;
    *fault = NULL;
    static const char *known[] = { "product.lookup", "inventory.check", "promo.list", "shipping.estimate",
                                   "order.status", "size.recommend", "faq.search" };
    int ok = 0;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) ok |= !strcmp(function, known[i]);
    if (!ok) return -1;
    const char *pid = sget(args, "product");
    const json_t *p = pid ? world_find_product(w, pid) : NULL;
    int needs_product = strcmp(function, "order.status") && strcmp(function, "faq.search")
                        && strcmp(function, "promo.list");
    if (needs_product && !p) return not_found(fault, message, "product", pid);
    if (!strcmp(function, "product.lookup")) {
        *result = lookup_result(w, p);
        return 1;
    }
    if (!strcmp(function, "inventory.check")) return call_inventory(p, sget(args, "variant"), result, fault, message);
    if (!strcmp(function, "shipping.estimate")) return call_shipping(w, p, sget(args, "region"), result, fault, message);
    if (!strcmp(function, "size.recommend")) return call_size(p, args, result, fault, message);
    if (!strcmp(function, "faq.search")) return call_faq(w, sget(args, "query"), result, fault, message);
    if (!strcmp(function, "promo.list")) {
        if (pid && !p) return not_found(fault, message, "product", pid);
        json_t *r = p ? product_head(p) : json_object();
        json_object_set_new(r, "coupons", world_coupons_for(w, p));
        const json_t *fs = json_object_get(json_object_get(w->root, "stream"), "flash_sale");
        if (!p || world_flash_sale(w, sget(p, "id"))) json_object_set(r, "flash_sale", (json_t *)fs);
        *result = r;
        return 1;
    }
    if (!strcmp(function, "order.status")) {
        const char *id = sget(args, "order_id");
        const json_t *o = id ? world_order(w, id) : NULL;
        if (!o) return not_found(fault, message, "order", id);
        json_t *r = json_deep_copy(o);
        const json_t *op = world_product_by_id(w, sget(o, "product"));
        if (op) json_object_set(r, "product_name", json_object_get(op, "name"));
        *result = r;
        return 1;
    }
    return -1;
}
