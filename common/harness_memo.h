/* harness_memo.h — lines that repeat the previous line's inline harness.
 *
 * Every traj.jsonl line carries its harness inline (man 5 traj.jsonl), and
 * consecutive lines nearly always carry the same one byte for byte: ~8.6 KB
 * of a ~9.7 KB line.  Parsing it again per line was most of a reader's
 * time, and a new json_t per line also defeated every cache keyed on the
 * harness object (the simulator's compiled patterns, the judge's limits).
 *
 * The memo remembers the last top-level "harness" value: the exact bytes
 * it had in its line and jansson's parse of those bytes.  For a new line
 * it looks for "harness": followed by exactly those bytes, hands jansson
 * the line with that span replaced by a sentinel integer whose digits
 * occur nowhere else in the line, and accepts the result only when the
 * top-level "harness" of what jansson returned is that sentinel; then the
 * remembered value is attached in its place (a shared reference).  So
 * jansson parses every byte of the line except the remembered span, which
 * is compared byte for byte, and the result equals json_loadb(line) in
 * every case (why: harness_memo.c).  Anything else (no such span, a span
 * that is not the top-level value, bad JSON anywhere) falls back to
 * json_loadb of the whole line, whose error is what the caller reports.
 *
 *     harness_memo *m = harness_memo_new();
 *     json_t *rec = harness_memo_parse(m, line, len, 0, &err);   // as json_loadb
 *     ...  json_decref(rec);
 *     harness_memo_free(m);
 *
 * The same idea serves other repeated values, opt-in: messages of a
 * trajectory (a skill loaded again, a product looked up again) and the
 * values of chosen top-level keys (a task's "gold" and "context"), kept in
 * a bounded cache by their bytes; each stands in the line as another
 * sentinel and is checked the same way.
 *
 * The harness (and shared messages and values) of a returned record may be
 * shared with earlier and later records: treat them as read-only (copy
 * before changing them in place).
 *
 * The writing side is traj_write.h: the harness text made once per
 * distinct harness and spliced into each line. */
#ifndef HAT_HARNESS_MEMO_H
#define HAT_HARNESS_MEMO_H

#include <jansson.h>
#include <stddef.h>

typedef struct harness_memo harness_memo;

harness_memo *harness_memo_new(void);
void          harness_memo_free(harness_memo *m);
/* Share repeated messages too (off by default): each element but the last
 * of the top-level "messages" array whose bytes were seen before (a skill
 * loaded again, the same product looked up again) is the same parsed
 * object, kept in a bounded cache; placed and checked like the harness. */
void          harness_memo_share_messages(harness_memo *m, int on);
/* Share the repeated values (objects or arrays) of top-level key too
 * (traj.jsonl's "meta"), in the same cache; at most 4 keys.  The key is
 * looked for from the end of the line (where such a key follows the
 * harness and the messages) and checked like the others. */
void          harness_memo_share_key(harness_memo *m, const char *key);

/* json_loadb(line, len, flags, e), sharing a top-level "harness" object
 * that is byte-identical to the last one seen.  NULL with *e set exactly
 * as json_loadb sets it when the line does not parse. */
json_t *harness_memo_parse(harness_memo *m, const char *line, size_t len, size_t flags,
                           json_error_t *e);

/* How the lines so far were parsed: hits (the remembered harness reused),
 * fresh (a new harness remembered), full (no harness reused or remembered:
 * none inline, one the memo could not place, or bad JSON); messages and
 * shared keys' values taken from the cache (msg_hits, key_hits) or parsed
 * anew (msg_fresh, key_fresh; kept the second time their bytes are seen). */
typedef struct { long hits, fresh, full, msg_hits, msg_fresh, key_hits, key_fresh; } harness_memo_stats;
harness_memo_stats harness_memo_counts(const harness_memo *m);

#endif
