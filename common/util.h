/* util.h — the small things every program needs: the program name in
 * diagnostics, allocation that cannot return NULL, growable strings and
 * whole-file reads.  Diagnostics follow one shape everywhere:
 *     prog: FILE:LINE: message
 * so editors and grep can jump to the offending input. */
#ifndef HAT_UTIL_H
#define HAT_UTIL_H

#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>

#define HAT_VERSION "0.1.0"

extern const char *hat_prog;            /* set by cli_init from argv[0] */

/* Exit codes shared by every program (DESIGN §2). */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

void  hat_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Seconds on the monotonic clock (for durations). */
double hat_now(void);
void  hat_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* "prog: file:line: message"; line <= 0 omits the line. */
void  hat_errat(const char *file, long line, const char *fmt, ...)
      __attribute__((format(printf, 3, 4)));
void  hat_verrat(const char *file, long line, const char *fmt, va_list ap);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Growable byte string, always NUL-terminated. */
typedef struct {
    char  *s;
    size_t len, cap;
} sbuf;

void sbuf_init(sbuf *b);
void sbuf_free(sbuf *b);
void sbuf_reset(sbuf *b);
void sbuf_add(sbuf *b, const char *s, size_t n);
void sbuf_puts(sbuf *b, const char *s);
void sbuf_putc(sbuf *b, char c);
void sbuf_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *sbuf_detach(sbuf *b);   /* caller frees; b is reset */

/* Read a whole file (NULL or "-" = stdin, ".gz" transparently).
 * Returns a NUL-terminated buffer or NULL with a diagnostic printed. */
char *read_file(const char *path, size_t *len);

int  str_endswith(const char *s, const char *suffix);
int  is_stdio_path(const char *path);   /* NULL or "-" */
/* path exists and is neither a regular file nor a directory (a device
 * such as /dev/null, a FIFO, a socket): outputs write it in place and
 * never rename a temporary file over it, which as root would leave a
 * regular file where /dev/null was. */
int  is_special_path(const char *path);



/* Path of a file under hat's data directory (name generators, paraphrase
 * banks, templates).  Looked up in $HAT_DATA, then <exe>/../data (a source
 * tree), then <exe>/../share/hat and the compiled-in install prefix.
 * Returns a malloc'd path of an existing file, or NULL. */
char *hat_data_path(const char *name);
#endif
