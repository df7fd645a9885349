/* world.h — the simulated shop and live stream (man 5 world.json).
 *
 * A world is one JSON object: products (with variants and stock, specs,
 * size charts, shipping and return policies), coupons, orders, regions,
 * the host persona, the stream state (featured products, flash sale) and
 * the compliance rules.  world_generate composes one from the name parts in
 * data/world/; world_load reads one from a file, checks it and builds the
 * indexes every lookup uses, so lookups never scan the JSON tree.
 *
 * world_call executes a tool *function* (product.lookup, inventory.check,
 * ...) against the world.  It is the one back end of the simulator, so a
 * tool's behaviour is defined here and nowhere else. */
#ifndef HAT_WORLD_H
#define HAT_WORLD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct world world;

/* A new world from the data files; NULL + diagnostic if they are missing. */
json_t *world_generate(uint64_t seed, int n_products);

/* Load and check a world file ("-" = stdin).  NULL + "prog: FILE: ..." */
world  *world_load(const char *path);
/* Check and index an object; the world takes over the caller's reference
 * (steals root, like json_object_set_new), even on failure.  name is for
 * messages. */
world  *world_from_json(json_t *root, const char *name);
void    world_free(world *w);

const json_t *world_json(const world *w);
size_t        world_nproducts(const world *w);
const json_t *world_product(const world *w, size_t i);
const json_t *world_product_by_id(const world *w, const char *id);
/* An id, a full name or an unambiguous part of one (case-insensitive);
 * NULL when nothing or more than one product matches. */
const json_t *world_find_product(const world *w, const char *text);
const json_t *world_order(const world *w, const char *id);
const json_t *world_region(const world *w, const char *name);
const json_t *world_variant(const json_t *product, const char *name);
/* The flash sale object when product is on flash sale, else NULL. */
const json_t *world_flash_sale(const world *w, const char *product_id);
/* Coupons valid today for a product (new array, best discount first). */
json_t       *world_coupons_for(const world *w, const json_t *product);
/* The size chart row for height and weight (larger of the two fits). */
const json_t *world_size_for(const json_t *product, double height_cm, double weight_kg);
/* Compliance terms for a category: absolute claims then the category's
 * own (new array). */
json_t       *world_banned_terms(const world *w, const char *category);

/* Execute a tool function.  args maps parameter *functions* (product,
 * variant, region, order_id, height_cm, weight_kg, query) to values.
 * Returns 1 with *result (new ref) on success; 0 with *fault set to a
 * fault type ("empty" for nothing found) and *message (malloc'd) when the
 * world has no answer; -1 for an unknown function. */
int world_call(const world *w, const char *function, const json_t *args,
               json_t **result, const char **fault, char **message);

/* Stock status words used by inventory results and the teacher. */
const char *world_stock_status(long stock);   /* "sold out" | "low" | "in stock" */
#define WORLD_LOW_STOCK 10

#endif
