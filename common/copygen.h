/* copygen.h — copy and look-up pre-training records for copy-gen: chats
 * whose answers can only be produced by reading them from the context.
 *
 * A model trained from nothing on the agent task alone memorises the few
 * names and numbers it sees most (README, Results): it has never had to
 * copy.  These records teach that first.  Every record draws fresh product
 * names, nicknames and values (data/copy/copy.json for the surface, the
 * brands and items of data/world/categories.json and the nickname parts of
 * data/world/nicknames.json), so nothing in an answer is worth
 * memorising:
 *   lookup  a product list with prices, stock, shipping days and coupon
 *           codes, then viewer questions; each answer addresses the viewer
 *           and copies one field of one listed product;
 *   call    a viewer question; the assistant calls a tool with the product
 *           name (or, three times in ten, the order id) copied from the
 *           question, the tool returns a JSON record, the answer copies the
 *           asked field out of it;
 *   repeat  say a list of names, nicknames and values back in order;
 *   pick    (a share `pick` of the records; none by default) a system
 *           message lists routines, fresh names each with a line on what
 *           it is for; the assistant opens the one that fits the viewer's
 *           question, copying its name: a name found by its description
 *           (a share `echo` of the questions say that description itself).
 * Half the questions end in chat filler ("tails"), Chinese and twice-said
 * names are among the products: a copy must learn where a name stops.
 * Record i depends only on (seed, i). */
#ifndef HAT_COPYGEN_H
#define HAT_COPYGEN_H

#include <jansson.h>
#include <stdint.h>

typedef struct copy_gen copy_gen;

/* Load the data files (dir NULL = hat_data_path).  NULL with *err
 * (malloc'd) naming the file on failure. */
copy_gen *copy_load(const char *dir, char **err);
void      copy_free(copy_gen *g);

/* What a chat record holds. */
typedef struct {
    int         turns;   /* questions per record */
    double      pick;    /* chance of kind pick (0: the three other kinds only,
                            and the same bytes as without it) */
    double      echo;    /* chance that a pick question is its routine's own
                            line (0: the same bytes as without it) */
    const char *line;    /* a pick list's line, as harness(5)'s
                            skill_loader.line: {name}, {description};
                            NULL: "- {name}: {description}" */
} copy_opts;

/* Record index: {"id","kind","messages":[...]} as o says. */
json_t *copy_make(copy_gen *g, uint64_t seed, long index, const copy_opts *o);

/* The induction curriculum (copy-gen --ids): record index is a run of
 * min_len..max_len token ids drawn uniformly from `ids` (a tokenizer's
 * ordinary ids, no special ones) followed by the same run again,
 * {"id","kind":"induction","ids":[...],"mask":[...]}, mask 1 on every id
 * of the repeat but its first.  Only an induction head (find the earlier
 * occurrence of the current id, say what followed it) lowers that loss,
 * and because the run's length varies no fixed-offset attention can. */
json_t *copy_make_ids(const int *ids, size_t nids, int min_len, int max_len, uint64_t seed,
                      long index);

/* The distance-free form (copy-gen --ids --haystack LEN): LEN ids drawn
 * from `ids`, in which `pairs` runs of min_len..max_len ids each stand
 * twice at random places, the second after the first (runs never
 * overlap; a run with no room left is dropped), {"id","kind":"haystack",
 * "ids","mask"}, mask 1 on every id of a second occurrence but its
 * first.  Neither the run's length nor the distance back is fixed, and
 * the record does not start with the run, so neither a fixed offset nor a
 * position counted from the start predicts a target: only matching the
 * current id against the context does (examples/results/micro-notes.md,
 * e11). */
json_t *copy_make_haystack(const int *ids, size_t nids, int len, int pairs, int min_len,
                           int max_len, uint64_t seed, long index);

#endif
