/* test_world.c — world generation, checking, lookups and tool functions. */
#include "test.h"
#include "jsonl.h"
#include "sim.h"
#include "util.h"
#include "world.h"

#include <string.h>

static world *gen(uint64_t seed, int n)
{
    return world_from_json(world_generate(seed, n), "gen");
}

static void generation_is_deterministic_and_complete(void)
{
    json_t *a = world_generate(7, 120), *b = world_generate(7, 120), *c = world_generate(8, 120);
    char *sa = json_compact(a), *sb = json_compact(b), *sc = json_compact(c);
    CHECK_STR(sa, sb);
    CHECK(strcmp(sa, sc) != 0);
    const json_t *ps = json_object_get(a, "products");
    CHECK_EQ_INT(json_array_size(ps), 120);
    static const char *cats[] = { "apparel", "beauty", "food", "electronics", "home" };
    int per[5] = {0}, eval = 0, sold_out = 0, low = 0, charts = 0, zh = 0;
    size_t i, j;
    json_t *p, *v;
    json_array_foreach(ps, i, p) {
        for (int k = 0; k < 5; k++) per[k] += !strcmp(json_string_value(json_object_get(p, "category")), cats[k]);
        eval += !strcmp(json_string_value(json_object_get(p, "split")), "eval");
        charts += json_object_get(p, "size_chart") != NULL;
        CHECK(json_number_value(json_object_get(p, "list_price")) >= json_number_value(json_object_get(p, "price")));
        const char *name = json_string_value(json_object_get(p, "name"));
        zh += (unsigned char)name[0] >= 0x80;
        json_array_foreach(json_object_get(p, "variants"), j, v) {
            long s = (long)json_integer_value(json_object_get(v, "stock"));
            sold_out += s == 0;
            low += s > 0 && s < WORLD_LOW_STOCK;
        }
    }
    for (int k = 0; k < 5; k++) CHECK(per[k] == 24);
    CHECK(eval > 10 && eval < 40);           /* about 20% held out */
    CHECK_EQ_INT(charts, 24);                /* every apparel product */
    CHECK(sold_out > 0 && low > 0 && zh > 0);
    CHECK(json_array_size(json_object_get(a, "coupons")) >= 14);
    CHECK(json_array_size(json_object_get(a, "orders")) >= 40);
    CHECK(json_object_get(json_object_get(a, "stream"), "flash_sale") != NULL);
    free(sa); free(sb); free(sc);
    json_decref(a); json_decref(b); json_decref(c);
}

static void no_claim_words_in_names_or_specs(void)
{
    world *w = gen(3, 200);
    for (size_t i = 0; i < world_nproducts(w); i++) {
        const json_t *p = world_product(w, i);
        json_t *banned = world_banned_terms(w, json_string_value(json_object_get(p, "category")));
        char *specs = json_compact(json_object_get(p, "specs"));
        CHECK(!sim_banned_term(json_string_value(json_object_get(p, "name")), banned));
        CHECK(!sim_banned_term(specs, banned));
        free(specs);
        json_decref(banned);
    }
    world_free(w);
}

static void lookups(void)
{
    world *w = gen(1, 60);
    const json_t *p = world_product(w, 4);
    const char *name = json_string_value(json_object_get(p, "name"));
    CHECK(world_find_product(w, name) == p);
    CHECK(world_find_product(w, json_string_value(json_object_get(p, "id"))) == p);
    char *up = xstrdup(name);
    for (char *c = up; *c; c++) if (*c >= 'a' && *c <= 'z') *c -= 32;
    CHECK(world_find_product(w, up) == p);
    CHECK(world_find_product(w, "no such thing at all") == NULL);
    CHECK(world_find_product(w, "") == NULL);
    const json_t *v = json_array_get(json_object_get(p, "variants"), 0);
    CHECK(world_variant(p, json_string_value(json_object_get(v, "name"))) == v);
    /* "black / M" is also found as "M black" */
    const json_t *a = world_product(w, 0);      /* apparel: colour / size */
    const json_t *av = json_array_get(json_object_get(a, "variants"), 1);
    char colour[64], size[16];
    CHECK(sscanf(json_string_value(json_object_get(av, "name")), "%63s / %15s", colour, size) == 2);
    char *spoken = xasprintf("%s %s", size, colour);
    CHECK(world_variant(a, spoken) == av);
    free(spoken);
    free(up);
    /* size chart: the larger of the height and weight sizes */
    CHECK_STR(json_string_value(json_object_get(world_size_for(a, 165, 55), "size")), "M");
    CHECK_STR(json_string_value(json_object_get(world_size_for(a, 155, 70), "size")), "L");
    CHECK_STR(json_string_value(json_object_get(world_size_for(a, 200, 120), "size")), "XL");
    CHECK_STR(world_stock_status(0), "sold out");
    CHECK_STR(world_stock_status(3), "low");
    CHECK_STR(world_stock_status(10), "in stock");
    world_free(w);
}

static void tool_functions(void)
{
    world *w = gen(1, 60);
    const json_t *p = world_product(w, 2);
    json_t *args = json_pack("{s:O}", "product", json_object_get(p, "name")), *res;
    const char *fault;
    char *msg;
    CHECK_EQ_INT(world_call(w, "product.lookup", args, &res, &fault, &msg), 1);
    CHECK(json_equal(json_object_get(res, "price"), json_object_get(p, "price")));
    json_decref(res);
    CHECK_EQ_INT(world_call(w, "size.recommend", args, &res, &fault, &msg), 0);   /* beauty: no chart */
    CHECK_STR(fault, "empty");
    free(msg);
    json_decref(args);
    args = json_pack("{s:s,s:s}", "product", "P001", "region", "Lhasa");
    CHECK_EQ_INT(world_call(w, "shipping.estimate", args, &res, &fault, &msg), 1);
    const json_t *p1 = world_product_by_id(w, "P001");
    long base = (long)json_integer_value(json_object_get(json_object_get(p1, "shipping"), "base_days"));
    CHECK_EQ_INT(json_integer_value(json_object_get(res, "days_min")), base + 6);
    CHECK_EQ_INT(json_integer_value(json_object_get(res, "days_max")), base + 8);
    json_decref(res);
    json_object_set_new(args, "region", json_string("Atlantis"));
    CHECK_EQ_INT(world_call(w, "shipping.estimate", args, &res, &fault, &msg), 0);
    CHECK_STR(msg, "no delivery region matches 'Atlantis'");
    free(msg);
    json_decref(args);
    args = json_pack("{s:s}", "order_id", "OD-nope");
    CHECK_EQ_INT(world_call(w, "order.status", args, &res, &fault, &msg), 0);
    free(msg);
    CHECK_EQ_INT(world_call(w, "no.such", args, &res, &fault, &msg), -1);
    json_decref(args);
    /* every product has at least one coupon (the shop-wide one) */
    for (size_t i = 0; i < world_nproducts(w); i++) {
        json_t *cs = world_coupons_for(w, world_product(w, i));
        CHECK(json_array_size(cs) >= 1);
        json_decref(cs);
    }
    world_free(w);
}

static void bad_worlds_are_rejected(void)
{
    CHECK(world_from_json(json_pack("[]"), "x") == NULL);
    CHECK(world_from_json(json_pack("{s:[]}", "products"), "x") == NULL);
    CHECK(world_from_json(json_pack("{s:[{s:s}]}", "products", "id", "P1"), "x") == NULL);
    json_t *w = world_generate(1, 10);
    json_object_del(w, "orders");
    CHECK(world_from_json(w, "x") == NULL);
}

int main(void)
{
    RUN(generation_is_deterministic_and_complete);
    RUN(no_claim_words_in_names_or_specs);
    RUN(lookups);
    RUN(tool_functions);
    RUN(bad_worlds_are_rejected);
    TEST_MAIN_END();
}
