/* jsonl.h — JSON Lines in and out, the currency of every hat program.
 *
 * Reading: one jansson value per line from a file, a .gz file or stdin
 * ("-" or NULL).  Blank lines are skipped.  A line that does not parse is
 * reported as "prog: FILE:LINE: message" and, unless skip_bad is set, ends
 * the read with an error; with skip_bad it is counted and skipped.
 *
 * Writing: compact, one object per line, keys in insertion order, UTF-8
 * unescaped.  A named output file is written to a temporary name in the
 * same directory and renamed into place by out_close, so an interrupted
 * program never leaves a half-written file where a good one was.  Names
 * ending in .gz are compressed. */
#ifndef HAT_JSONL_H
#define HAT_JSONL_H

#include <jansson.h>
#include <stdio.h>

/* Longest accepted line; longer lines are an error naming the limit. */
#define JSONL_MAX_LINE (256u << 20)
/* Deepest accepted nesting of arrays and objects, in a JSONL value and in
 * a document read by json_parse_named; deeper input is an error naming
 * the limit (jansson itself stops at 2048; hat's own code walks values
 * recursively, so it refuses far earlier than any stack could mind). */
#define JSONL_MAX_DEPTH 512

typedef struct jsonl_reader jsonl_reader;

jsonl_reader *jsonl_open(const char *path, int skip_bad);
/* Parse the lines through m (harness_memo.h, borrowed; NULL: plain
 * json_loadb): a record whose inline "harness" (or another value m is set
 * to share) repeats one seen before byte for byte shares that parsed
 * object instead of parsing it again.  Values and diagnostics are the
 * same either way; shared values must not be changed in place. */
struct harness_memo;
void   jsonl_set_memo(jsonl_reader *r, struct harness_memo *m);
/* Next value into *out (caller decrefs).  Returns 1 on a value, 0 at end,
 * -1 on an error (already reported). */
int    jsonl_next(jsonl_reader *r, json_t **out);
/* jsonl_next in two steps, for a reader that takes some lines without a
 * jansson value: the next line that is not blank (its text, valid until
 * the next call: 1, 0 at the end, -1 on an error), then, if wanted, its
 * value as jsonl_next gives it (1; 0 for a bad line with skip_bad, which
 * is reported and counted; -1 for a bad line otherwise). */
int    jsonl_next_line(jsonl_reader *r, const char **text, size_t *len);
int    jsonl_parse_line(jsonl_reader *r, json_t **out);
long   jsonl_line(const jsonl_reader *r);      /* line number of last value */
/* The text of the last value's line (valid until the next jsonl_next). */
const char *jsonl_text(const jsonl_reader *r, size_t *len);
const char *jsonl_name(const jsonl_reader *r); /* "<stdin>" or the path */
long   jsonl_skipped(const jsonl_reader *r);
/* Closes; with skip_bad prints "skipped N bad lines" if any. Returns 0 or -1. */
int    jsonl_close(jsonl_reader *r);

/* 1 if the JSON text nests arrays/objects deeper than max levels (a byte
 * scan that skips strings; fast enough to run before every parse). */
int     json_too_deep(const char *text, size_t len, int max);

/* The loop of every JSONL filter: each value of each input in order
 * (nfiles == 0: stdin) is passed to fn, which returns 0 to go on, 1 for a
 * bad record it has reported (fatal unless skip_bad; the count is reported
 * at the end) or -1 to stop with an error.  Returns 0, or -1. */
typedef int (*jsonl_fn)(void *ctx, json_t *v, const char *file, long line);
int    jsonl_foreach(char *const *files, int nfiles, int skip_bad, jsonl_fn fn, void *ctx);
/* Every value of the inputs (as jsonl_foreach) into one array, each
 * passed by check (NULL, or a malloc'd message reported at its line: a
 * bad record).  NULL on error, or when no value is left ("no WHAT"). */
json_t *jsonl_load_all(char *const *files, int nfiles, int skip_bad, char *(*check)(const json_t *v),
                       const char *what);

/* json_loadb(buf, len, flags, NULL) through yajl's parser (a SAX parser:
 * it builds no tree, so the jansson values are made once, without
 * jansson's own byte-at-a-time lexer; about twice as fast).  Returns the
 * value json_loadb would return, or NULL when it cannot be sure of that:
 * bad JSON, and the few inputs where the two parsers disagree (JSON white
 * space is narrower than yajl's; jansson refuses lone surrogates, NUL in
 * keys, integers beyond 64 bits, nesting past 2048), and a top-level
 * value that is not an object or an array.  Then the caller runs
 * json_loadb, whose value or error is the answer.  flags: any of
 * JSON_DISABLE_EOF_CHECK (*end, if given, receives where the value
 * ended), JSON_ALLOW_NUL and JSON_DECODE_ANY; with any other flag it
 * always returns NULL, and so it does with HAT_SLOW_JSON=1 in the
 * environment (the tests compare a program's output both ways). */
json_t *json_loadb_fast(const char *buf, size_t len, size_t flags, size_t *end);
/* The pieces of json_loadb_fast that a reader of its own on yajl's events
 * needs to agree with jansson as it does (tasks.h, task_view_parse):
 * whether the fast way is on (HAT_SLOW_JSON), whether buf holds none of
 * the bytes on which yajl and jansson part ways, whether s[0..n) is all
 * ASCII, and a number's text (as yajl checked it) as the jansson value
 * json_loadb makes of it, or NULL where that is not certain. */
int     json_fast_on(void);
int     json_fast_plain(const char *buf, size_t len);
int     json_ascii(const char *s, size_t n);
json_t *json_number_text(const char *s, size_t n);
/* json_loadb with json_loadb_fast tried first: the same value or error. */
json_t *json_loadb_quick(const char *buf, size_t len, size_t flags, json_error_t *e);

/* Parse one JSON document from a string (error names file/line/column). */
json_t *json_parse_named(const char *text, size_t len, const char *name);
/* Load a JSON file (plain or .gz, "-" = stdin). */
json_t *json_load_path(const char *path);

/* Output. */
typedef struct hat_out hat_out;

hat_out *out_open(const char *path);           /* NULL or "-" = stdout */
/* A log (trainers' --metrics): appended to in place and flushed line by
 * line, so tail -f follows a run and a resumed run continues the file;
 * out_close and out_abort both keep what was written. */
hat_out *out_open_log(const char *path);
FILE    *out_file(hat_out *o);                 /* raw stream (NULL if .gz) */
int      out_write(hat_out *o, const void *buf, size_t n);
int      out_puts(hat_out *o, const char *s);
/* One compact JSON line.  Returns 0 or -1 (reported). */
int      out_json(hat_out *o, const json_t *v);
/* Flush, fsync and rename into place.  Returns 0, or -1 after a diagnostic;
 * on failure the temporary file is removed and any earlier file is kept. */
int      out_close(hat_out *o);
/* Discard: remove the temporary file, keep whatever was there before. */
void     out_abort(hat_out *o);
/* Close on success (status 0) or abort; returns 0, or -1 if either the run
 * or the close failed.  The usual end of a program. */
int      out_finish(hat_out *o, int status);

/* Flags for compact, order-preserving, UTF-8 output. */
#define HAT_JSON_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))

/* Serialise to a malloc'd compact string. */
char *json_compact(const json_t *v);

/* A copy of v whose objects and arrays are new and whose strings, numbers
 * and literals are v's own (shared, not copied): what json_deep_copy makes,
 * for values whose scalars are never changed in place (hat never calls
 * json_string_set or json_integer_set).  Far fewer allocations, and a
 * shared string keeps the address traj_writer caches its text by. */
json_t *json_copy_containers(const json_t *v);

/* json_string(s) (NULL for NULL or invalid UTF-8), without jansson's
 * byte-by-byte UTF-8 walk when s is ASCII: HSA makes hundreds of strings
 * per variant. */
json_t *json_str(const char *s);

/* Write a whole file atomically (temp + fsync + rename).  0 or -1. */
int write_file_atomic(const char *path, const void *data, size_t len);

#endif
