/* judge_lexicon.h — what a reply *means*, from data/judge/lexicon.json:
 * claim families (medical, absolute, guarantees, reservations, delivery
 * promises) as PCRE2 patterns with their reason code and component, the
 * honesty a reply after a failed call owes, the decline a request the
 * harness cannot serve needs, the words that mark arithmetic, and numbers
 * written as words.  Loaded and compiled once per process (thread-safe);
 * read-only after.  The judge, the simulator's factual_risk hook (for
 * arithmetic) and the tests read it; man 5 verdicts.jsonl documents it.
 *
 *     const judge_lexicon *L = judge_lexicon_get();     // NULL + diagnostic
 *     char what[64];
 *     int f = judge_lexicon_claim(L, md, reply, what, sizeof what);   // family or -1
 */
#ifndef HAT_JUDGE_LEXICON_H
#define HAT_JUDGE_LEXICON_H

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>
#include <stddef.h>

typedef struct judge_lexicon judge_lexicon;

/* Pattern lists other than the claim families. */
enum { LEX_FAULT_HONEST, LEX_SUCCESS_CLAIM, LEX_DECLINE, LEX_INVENTED_FAULT, LEX_GENERAL, LEX_GREETING, LEX_AFFIRM,
       LEX_QUALITY, LEX_WAIVER, LEX_NLISTS };

const judge_lexicon *judge_lexicon_get(void);

/* The first claim of any family in text, negation-aware; its family index
 * (or -1), the matched words copied to what.  md: match data of at least
 * one pair (the caller's, one per thread). */
int  judge_lexicon_claim(const judge_lexicon *L, pcre2_match_data *md, const char *text,
                         char *what, size_t wn);
const char *judge_lexicon_family_name(const judge_lexicon *L, int family);
const char *judge_lexicon_family_code(const judge_lexicon *L, int family);
/* "accuracy" or "effectiveness" */
const char *judge_lexicon_family_component(const judge_lexicon *L, int family);
/* Whether every occurrence of term in text (both lowered) is negated in
 * its clause ("I can't promise any whitening"). */
int  judge_lexicon_negated_term(const judge_lexicon *L, pcre2_match_data *md, const char *text, const char *term);
/* Whether a negation of the lexicon stands anywhere in text. */
int  judge_lexicon_negation(const judge_lexicon *L, pcre2_match_data *md, const char *text);
/* Whether a pattern of list matches text (negated matches count only for
 * LEX_FAULT_HONEST and LEX_DECLINE, which are negations themselves). */
int  judge_lexicon_has(const judge_lexicon *L, pcre2_match_data *md, int list, const char *text,
                       char *what, size_t wn);
/* Whether an arithmetic word ("save", "difference", "total", "off"...)
 * stands within 24 bytes of the number text[at, end), in its clause. */
int  judge_lexicon_arith_near(const judge_lexicon *L, const char *text, size_t at, size_t end);
/* The number word at p (lowercase ASCII compared case-insensitively) with
 * its value and length; 0 when none.  Multi-word entries ("a hundred")
 * too. */
int  judge_lexicon_number_word(const judge_lexicon *L, const char *p, double *v, size_t *len);
/* Whether text speaks of the question gold fact fact answers (the
 * lexicon's topics: "can be returned" for return_days), negation-aware ("couldn't find a
 * return policy" does not). */
/* The facts of fact's topic (fact among them), up to max; their count. */
int  judge_lexicon_topic_facts(const judge_lexicon *L, const char *fact, const char **out, int max);
int  judge_lexicon_topic(const judge_lexicon *L, pcre2_match_data *md, const char *fact, const char *text);
/* What text says of an order whose tool status is status, by the
 * lexicon's status groups ("on its way" fits shipped, in transit, out
 * for delivery): -1 when a phrase fits no status of its group (copied
 * to what), 1 when one fits status, 0 when none is said.  Negation-aware. */
int  judge_lexicon_status(const judge_lexicon *L, pcre2_match_data *md, const char *text, const char *status,
                          char *what, size_t wn);
/* What text says of washing or cleaning an item whose care label (a
 * tool's) is care, by the lexicon's care methods (machine, hand wash,
 * dishwasher...): -1 when it names a method the label does not give
 * (copied to what: "fine in the dishwasher" for "hand wash only"), 1 when
 * every method it names is the label's, 0 when it names none.
 * Negation-aware on both sides ("do not tumble dry" gives no tumble
 * drying). */
int  judge_lexicon_care(const judge_lexicon *L, pcre2_match_data *md, const char *text, const char *care,
                        char *what, size_t wn);
/* Whether text states what a call of tool function function returns
 * (fault_claims: "always arrive within the week" for shipping.estimate, "on
 * a nice discount" for product.lookup), negation-aware; the words copied
 * to what.  Read after that call failed: the result is then invented. */
int  judge_lexicon_fault_claim(const judge_lexicon *L, pcre2_match_data *md, const char *function, const char *text,
                               char *what, size_t wn);
/* The lexicon's synonyms of word[0, n) (lowercase): words that state it
 * as well ("store" for "keep"); their count, the list in *alt. */
int  judge_lexicon_synonyms(const judge_lexicon *L, const char *word, size_t n, const char *const **alt);
/* The unit word at p (after spaces), its length, or 0. */
size_t judge_lexicon_unit(const judge_lexicon *L, const char *p);

#endif
