/* harness_load.c — reading a harness in any of its three forms.
 *
 * A directory and a tar(.gz) archive are first read into the same thing, a
 * set of named files (harness.json, prompt/NN-ID.md, skills/NAME/SKILL.md,
 * tools/NAME.json), which one compiler turns into the compiled JSON object
 * in the canonical key order of man 5 harness.  The compiled form is just
 * parsed.  Every problem is collected (file, line, JSON path, message) so
 * harness-lint can report them all at once; harness_load prints them and
 * fails when there is any. */
#include "harness.h"
#include "jsonl.h"
#include "util.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* Limits (man 5 harness, LIMITS): a harness is small text edited by
 * people; anything far beyond these is a mistake or an attack, refused
 * with a message before it is read into memory where that is possible. */
#define HARNESS_MAX_FILE  (16u << 20)   /* one file or archive member */
/* HARNESS_MAX_BYTES (harness.h): the whole harness, decompressed */
#define HARNESS_MAX_FILES 4096          /* files in a directory / archive members */
#define HARNESS_MAX_ITEMS 1024          /* skills, tools, prompt blocks (each) */

/* ---- problems ----------------------------------------------------------- */

static void problem(json_t *problems, const char *file, long line, const char *path,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void problem(json_t *problems, const char *file, long line, const char *path,
                    const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sbuf b;
    sbuf_init(&b);
    char tmp[512];
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    sbuf_puts(&b, tmp);
    va_end(ap);
    json_t *p = json_object();
    json_object_set_new(p, "file", json_string(file ? file : ""));
    if (line > 0) json_object_set_new(p, "line", json_integer(line));
    json_object_set_new(p, "path", json_string(path ? path : ""));
    json_object_set_new(p, "severity", json_string("error"));
    json_object_set_new(p, "message", json_string(b.s));
    json_array_append_new(problems, p);
    sbuf_free(&b);
}

/* ---- the file set ------------------------------------------------------- */

typedef struct {
    char  *rel;     /* path inside the harness: "prompt/10-persona.md" */
    char  *shown;   /* name in diagnostics: "DIR/prompt/..." or "A.tar:member" */
    char  *data;
    size_t len;
} hfile;

typedef struct {
    hfile *f;
    size_t n, cap;
    size_t total;   /* bytes of every file read so far (HARNESS_MAX_BYTES) */
    int    over;    /* the total went over: nothing more is read nor compiled */
} hfiles;

static void files_add(hfiles *fs, const char *rel, const char *shown, char *data, size_t len)
{
    if (fs->n == fs->cap) {
        fs->cap = fs->cap ? 2 * fs->cap : 16;
        fs->f = xrealloc(fs->f, fs->cap * sizeof *fs->f);
    }
    fs->f[fs->n++] = (hfile){ xstrdup(rel), xstrdup(shown), data, len };
}

static void files_free(hfiles *fs)
{
    for (size_t i = 0; i < fs->n; i++) {
        free(fs->f[i].rel);
        free(fs->f[i].shown);
        free(fs->f[i].data);
    }
    free(fs->f);
}

static int by_rel(const void *a, const void *b)
{
    return strcmp(((const hfile *)a)->rel, ((const hfile *)b)->rel);
}

/* Open path for reading only if it is a regular file: O_NONBLOCK so that
 * a FIFO does not block the open (a reload would freeze serve), fstat on
 * the opened file so that a symbolic link to /dev/zero is seen for what
 * it is.  -1 with errno (EINVAL: not a regular file). */
static int open_regular(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

/* A regular file of at most cap bytes (EFBIG past it, however the size
 * was reported: the read itself stops at cap + 1). */
static char *slurp(const char *path, size_t cap, size_t *len)
{
    int fd = open_regular(path);
    if (fd < 0) return NULL;
    sbuf b;
    sbuf_init(&b);
    char chunk[1 << 14];
    ssize_t n = 0;
    while (b.len <= cap && (n = read(fd, chunk, sizeof chunk)) > 0) sbuf_add(&b, chunk, (size_t)n);
    int e = n < 0 ? errno : b.len > cap ? EFBIG : 0;
    close(fd);
    if (e) { sbuf_free(&b); errno = e; return NULL; }
    *len = b.len;
    return sbuf_detach(&b);
}

static char *join_path(const char *dir, const char *rel)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    return xasprintf("%.*s/%s", (int)n, dir, rel);
}

static void add_disk_file(hfiles *fs, const char *dir, const char *rel, json_t *problems)
{
    if (fs->over) return;
    char *full = join_path(dir, rel);
    size_t len = 0, left = fs->total < HARNESS_MAX_BYTES ? HARNESS_MAX_BYTES - fs->total : 0;
    char *data = slurp(full, left < HARNESS_MAX_FILE ? left : HARNESS_MAX_FILE, &len);
    if (data) {
        files_add(fs, rel, full, data, len);
        fs->total += len;
    } else if (errno == EFBIG && left < HARNESS_MAX_FILE) {
        problem(problems, full, 0, "", "the harness is over %u bytes in all (a harness's limit)",
                HARNESS_MAX_BYTES);
        fs->over = 1;
    }
    else if (errno == EFBIG)
        problem(problems, full, 0, "", "file larger than %u bytes (a harness file's limit)",
                HARNESS_MAX_FILE);
    else if (errno == EINVAL)
        problem(problems, full, 0, "", "not a regular file (a device, FIFO or socket is never read)");
    else problem(problems, full, 0, "", "cannot read: %s", strerror(errno));
    free(full);
}

static int has_suffix_name(const struct dirent *d, const char *suffix)
{
    return d->d_name[0] != '.' && str_endswith(d->d_name, suffix);
}

/* The files of one subdirectory: sub/NAME.suffix, or sub/NAME/leaf. */
static void read_subdir(hfiles *fs, const char *dir, const char *sub, const char *suffix,
                        const char *leaf, json_t *problems)
{
    char *sdir = join_path(dir, sub);
    struct dirent **ents;
    int n = scandir(sdir, &ents, NULL, alphasort), total = n;
    free(sdir);
    if (n < 0) return;   /* an absent subdirectory is an empty one */
    if (n > HARNESS_MAX_FILES) {
        problem(problems, dir, 0, "", "%s/ holds %d entries; at most %d are read", sub, n,
                HARNESS_MAX_FILES);
        n = HARNESS_MAX_FILES;   /* the rest are freed below, unread */
    }
    for (int i = 0; i < n; i++) {
        if (leaf && ents[i]->d_name[0] != '.') {
            char *rel = xasprintf("%s/%s/%s", sub, ents[i]->d_name, leaf);
            char *full = join_path(dir, rel);
            struct stat st;
            if (stat(full, &st) == 0) add_disk_file(fs, dir, rel, problems);
            free(full);
            free(rel);
        } else if (!leaf && has_suffix_name(ents[i], suffix)) {
            char *rel = xasprintf("%s/%s", sub, ents[i]->d_name);
            add_disk_file(fs, dir, rel, problems);
            free(rel);
        }
        free(ents[i]);
    }
    for (int i = n; i < total; i++) free(ents[i]);
    free(ents);
}

static void read_dir(hfiles *fs, const char *dir, json_t *problems)
{
    add_disk_file(fs, dir, "harness.json", problems);
    read_subdir(fs, dir, "prompt", ".md", NULL, problems);
    read_subdir(fs, dir, "skills", NULL, "SKILL.md", problems);
    read_subdir(fs, dir, "tools", ".json", NULL, problems);
}

/* An archive may hold the files at its root or under one top directory. */
static const char *archive_prefix(const hfiles *fs)
{
    for (size_t i = 0; i < fs->n; i++)
        if (!strcmp(fs->f[i].rel, "harness.json")) return "";
    const char *slash = fs->n ? strchr(fs->f[0].rel, '/') : NULL;
    if (!slash) return "";
    size_t k = (size_t)(slash - fs->f[0].rel) + 1;
    for (size_t i = 1; i < fs->n; i++)
        if (strncmp(fs->f[i].rel, fs->f[0].rel, k)) return "";
    static char prefix[1024];
    snprintf(prefix, sizeof prefix, "%.*s", (int)k, fs->f[0].rel);
    return prefix;
}

/* An archive member that would land outside the harness if unpacked. */
static int unsafe_member(const char *m)
{
    if (m[0] == '/') return 1;
    for (const char *p = m; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.') return 1;
        p += n;
        while (*p == '/') p++;
    }
    return 0;
}

static int read_archive(hfiles *fs, const char *name, const char *data, size_t len,
                        json_t *problems)
{
    struct archive *a = archive_read_new();
    archive_read_support_filter_all(a);
    archive_read_support_format_all(a);
    if (archive_read_open_memory(a, data, len) != ARCHIVE_OK) {
        problem(problems, name, 0, "", "not a harness (JSON, directory or archive): %s",
                archive_error_string(a));
        archive_read_free(a);
        return -1;
    }
    hfiles raw = { 0 };
    json_t *seen = json_object();      /* member names so far */
    struct archive_entry *e;
    int r, rc = 0;
    size_t members = 0, total = 0;
    while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
        if (++members > HARNESS_MAX_FILES) {
            problem(problems, name, 0, "", "archive holds more than %d members", HARNESS_MAX_FILES);
            rc = -1;
            break;
        }
        const char *m = archive_entry_pathname(e);
        if (!m) continue;
        while (m[0] == '.' && m[1] == '/') m += 2;
        /* Checked on every member, links included: unpacked by tar, a
         * second "harness.json" (or a link by that name) would win. */
        if (unsafe_member(m)) {
            problem(problems, name, 0, "", "%s: member name is absolute or climbs out with \"..\"", m);
            rc = -1;
            break;
        }
        if (archive_entry_filetype(e) != AE_IFDIR && json_object_get(seen, m)) {
            problem(problems, name, 0, "", "%s: member appears twice (which one is meant?)", m);
            rc = -1;
            break;
        }
        json_object_set_new(seen, m, json_true());
        if (archive_entry_filetype(e) != AE_IFREG) continue;
        if (archive_entry_size(e) > (la_int64_t)HARNESS_MAX_FILE) {
            problem(problems, name, 0, "", "%s: member of %lld bytes; a harness file may hold "
                    "at most %u", m, (long long)archive_entry_size(e), HARNESS_MAX_FILE);
            rc = -1;
            break;
        }
        sbuf b;
        sbuf_init(&b);
        char chunk[1 << 14];
        la_ssize_t n;
        while ((n = archive_read_data(a, chunk, sizeof chunk)) > 0) {
            sbuf_add(&b, chunk, (size_t)n);
            if (b.len > HARNESS_MAX_FILE || total + b.len > HARNESS_MAX_BYTES) break;
        }
        if (n > 0) {   /* a member without a size, or a decompression bomb */
            problem(problems, name, 0, "", "%s: more than %u bytes (%s limit)", m,
                    b.len > HARNESS_MAX_FILE ? HARNESS_MAX_FILE : HARNESS_MAX_BYTES,
                    b.len > HARNESS_MAX_FILE ? "a harness file's" : "the whole harness's");
            sbuf_free(&b);
            rc = -1;
            break;
        }
        total += b.len;
        if (n < 0) {
            problem(problems, name, 0, "", "%s: %s", m, archive_error_string(a));
            sbuf_free(&b);
            rc = -1;
            break;
        }
        char *shown = xasprintf("%s:%s", name, m);
        size_t blen = b.len;
        files_add(&raw, m, shown, sbuf_detach(&b), blen);
        free(shown);
    }
    if (r != ARCHIVE_EOF && r != ARCHIVE_OK && rc == 0 && members <= HARNESS_MAX_FILES) {
        problem(problems, name, 0, "", "archive: %s", archive_error_string(a));
        rc = -1;
    }
    archive_read_free(a);
    json_decref(seen);
    const char *prefix = archive_prefix(&raw);
    size_t k = strlen(prefix);
    for (size_t i = 0; i < raw.n; i++) {
        files_add(fs, raw.f[i].rel + k, raw.f[i].shown, raw.f[i].data, raw.f[i].len);
        raw.f[i].data = NULL;
    }
    files_free(&raw);
    if (fs->n) qsort(fs->f, fs->n, sizeof *fs->f, by_rel);
    return rc;
}

/* ---- front matter ------------------------------------------------------- */

/* One line of a text buffer; *pos advances past its newline. */
static int next_line(const char *s, size_t len, size_t *pos, const char **line, size_t *n)
{
    if (*pos >= len) return 0;
    const char *p = s + *pos, *nl = memchr(p, '\n', len - *pos);
    size_t l = nl ? (size_t)(nl - p) : len - *pos;
    *pos += l + (nl ? 1 : 0);
    if (l && p[l - 1] == '\r') l--;
    *line = p;
    *n = l;
    return 1;
}

static json_t *fm_value(const char *v, size_t n, const char *file, long line, json_t *problems)
{
    while (n && (*v == ' ' || *v == '\t')) v++, n--;
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
    json_error_t err;
    json_t *j = json_loadb(v, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
    if (j) return j;
    if (n && (*v == '{' || *v == '[' || *v == '"')) {
        problem(problems, file, line, "", "bad JSON value: %s", err.text);
        return NULL;
    }
    return json_stringn(v, n);
}

/* Whether a "---" line follows position pos of f. */
static int closing_after(const hfile *f, size_t pos)
{
    const char *l;
    size_t n;
    while (next_line(f->data, f->len, &pos, &l, &n))
        if (n == 3 && !memcmp(l, "---", 3)) return 1;
    return 0;
}

/* The value of "field: value" in the front matter of a file that did not
 * parse (malloc'd; NULL when there is none): its listing in harness.json
 * is then not a second problem. */
static char *salvage_key(const hfile *f, const char *field)
{
    size_t pos = 0, n, fl = strlen(field);
    const char *l;
    if (!next_line(f->data, f->len, &pos, &l, &n) || n != 3 || memcmp(l, "---", 3)) return NULL;
    while (next_line(f->data, f->len, &pos, &l, &n) && !(n == 3 && !memcmp(l, "---", 3))) {
        if (n <= fl || memcmp(l, field, fl) || l[fl] != ':') continue;
        const char *v = l + fl + 1, *e = l + n;
        while (v < e && (*v == ' ' || *v == '\t')) v++;
        while (e > v && (e[-1] == ' ' || e[-1] == '\t')) e--;
        return e > v ? xstrndup(v, (size_t)(e - v)) : NULL;
    }
    return NULL;
}

/* The key a file's path suggests, for a file that did not parse and
 * whose front matter does not say: skills/NAME/SKILL.md, tools/NAME.json,
 * prompt/[NN-]ID.md (malloc'd). */
static char *key_from_path(const char *rel, int kind)
{
    if (kind == 1) return xstrndup(rel + 7, strlen(rel + 7) - 9);
    if (kind == 2) return xstrndup(rel + 6, strlen(rel + 6) - 5);
    const char *b = rel + 7, *q = b;
    while (*q >= '0' && *q <= '9') q++;
    if (q > b && *q == '-') b = q + 1;
    return xstrndup(b, strlen(b) - 3);
}

/* Split "---\nkey: value\n...\n---\nbody" into an object and the body's
 * lines.  Returns the object (new ref) or NULL after a problem. */
static json_t *front_matter(const hfile *f, size_t *body_pos, long *body_line, json_t *problems)
{
    size_t pos = 0;
    const char *l;
    size_t n;
    long ln = 1;
    if (!next_line(f->data, f->len, &pos, &l, &n) || n != 3 || memcmp(l, "---", 3)) {
        problem(problems, f->shown, 1, "", "expected front matter starting with \"---\"");
        return NULL;
    }
    json_t *fm = json_object();
    for (;;) {
        ln++;
        if (!next_line(f->data, f->len, &pos, &l, &n)) {
            problem(problems, f->shown, ln - 1, "", "front matter not closed by \"---\"");
            json_decref(fm);
            return NULL;
        }
        if (n == 3 && !memcmp(l, "---", 3)) break;
        const char *colon = memchr(l, ':', n);
        size_t kn = colon ? (size_t)(colon - l) : 0;
        if (!colon || !kn || memchr(l, ' ', kn)) {
            /* with no closing line anywhere, that is the one problem */
            if (!closing_after(f, pos)) problem(problems, f->shown, 1, "", "front matter not closed by \"---\"");
            else problem(problems, f->shown, ln, "", "expected \"key: value\" in front matter");
            json_decref(fm);
            return NULL;
        }
        char *key = xstrndup(l, kn);
        if (json_object_get(fm, key)) {
            problem(problems, f->shown, ln, "", "duplicate key \"%s\"", key);
            free(key);
            json_decref(fm);
            return NULL;
        }
        json_t *v = fm_value(colon + 1, n - kn - 1, f->shown, ln, problems);
        if (!v) { free(key); json_decref(fm); return NULL; }
        json_object_set_new(fm, key, v);
        free(key);
    }
    *body_pos = pos;
    *body_line = ln + 1;
    return fm;
}

static int is_item(const char *l, size_t n) { return n >= 2 && l[0] == '-' && l[1] == ' '; }

/* Body lines with trailing blank lines dropped: returns the end offset. */
static size_t body_end(const hfile *f, size_t pos)
{
    size_t end = f->len;
    while (end > pos && (f->data[end - 1] == '\n' || f->data[end - 1] == '\r' ||
                         f->data[end - 1] == ' ' || f->data[end - 1] == '\t')) {
        /* only whole blank lines: back up to just after the last non-blank char's line */
        end--;
    }
    /* keep the rest of the last non-blank line */
    while (end < f->len && f->data[end] != '\n') end++;
    return end;
}

/* Move the keys of src named in order[] first, then the rest, into a new object. */
static json_t *ordered(json_t *src, const char *const *order)
{
    json_t *o = json_object();
    for (size_t i = 0; order[i]; i++) {
        json_t *v = json_object_get(src, order[i]);
        if (v) json_object_set(o, order[i], v);
    }
    const char *k;
    json_t *v;
    json_object_foreach(src, k, v)
        if (!json_object_get(o, k)) json_object_set(o, k, v);
    return o;
}

static const char *const BLOCK_KEYS[] = { "id", "text", "items", "params", NULL };
static const char *const SKILL_KEYS[] = { "name", "function", "kind", "description", "rules", NULL };
static const char *const TOOL_KEYS[] = { "name", "function", "description", "parameters", NULL };
static const char *const LOADER_KEYS[] = { "name", "description", "argument",
                                           "argument_description", "preamble", "line", NULL };
static const char *const TOP_KEYS[] = { "name", "version", "system_prompt", "skill_loader",
                                        "skills", "tools", "hooks", NULL };

static json_t *parse_block(const hfile *f, json_t *problems)
{
    size_t pos;
    long ln;
    json_t *fm = front_matter(f, &pos, &ln, problems);
    if (!fm) return NULL;
    size_t end = body_end(f, pos);
    sbuf text;
    sbuf_init(&text);
    json_t *items = json_array();
    const char *l;
    size_t n;
    int bad = 0;
    int ntext = 0;
    for (; !bad && next_line(f->data, end, &pos, &l, &n); ln++) {
        if (is_item(l, n)) json_array_append_new(items, json_stringn(l + 2, n - 2));
        else if (json_array_size(items) && n == 0) continue;
        else if (json_array_size(items)) {
            problem(problems, f->shown, ln, "", "expected an item line starting with \"- \"");
            bad = 1;
        } else {
            if (ntext++) sbuf_putc(&text, '\n');
            sbuf_add(&text, l, n);
        }
    }
    if (bad) { sbuf_free(&text); json_decref(items); json_decref(fm); return NULL; }
    json_object_set_new(fm, "text", json_string(text.s ? text.s : ""));
    sbuf_free(&text);
    if (json_array_size(items)) json_object_set_new(fm, "items", items);
    else json_decref(items);
    json_t *p = json_object_get(fm, "params");
    if (json_is_object(p) && !json_object_size(p)) json_object_del(fm, "params");
    json_t *b = ordered(fm, BLOCK_KEYS);
    json_decref(fm);
    return b;
}

static json_t *parse_skill(const hfile *f, json_t *problems)
{
    size_t pos;
    long ln;
    json_t *fm = front_matter(f, &pos, &ln, problems);
    if (!fm) return NULL;
    size_t end = body_end(f, pos);
    json_t *rules = json_array();
    const char *l;
    size_t n;
    for (; next_line(f->data, end, &pos, &l, &n); ln++) {
        if (is_item(l, n)) json_array_append_new(rules, json_stringn(l + 2, n - 2));
        else if (n == 0) continue;
        else {
            problem(problems, f->shown, ln, "", "expected a rule line starting with \"- \"");
            json_decref(rules);
            json_decref(fm);
            return NULL;
        }
    }
    json_object_set_new(fm, "rules", rules);
    json_t *s = ordered(fm, SKILL_KEYS);
    json_decref(fm);
    return s;
}

static json_t *parse_json_file(const hfile *f, json_t *problems)
{
    json_error_t err;
    json_t *j = json_loadb(f->data, f->len, JSON_REJECT_DUPLICATES, &err);
    if (!j) {
        problem(problems, f->shown, err.line, "", "%s (column %d)", err.text, err.column);
        return NULL;
    }
    if (!json_is_object(j)) {
        problem(problems, f->shown, 1, "", "expected a JSON object");
        json_decref(j);
        return NULL;
    }
    return j;
}

/* ---- compiling the file set --------------------------------------------- */

/* A parsed element file: its key (block id, skill or tool name) and value. */
typedef struct {
    const hfile *f;
    json_t *v;                 /* NULL: the file did not parse (its problem is reported) */
    int used;
    char *failed_key;          /* then the key its front matter or name gives, if any */
} elem;

static const char *elem_key(const json_t *v, const char *field)
{
    return json_string_value(json_object_get(v, field));
}

static const char *ekey(const elem *e, const char *field)
{
    return e->v ? elem_key(e->v, field) : e->failed_key;
}

/* Gather the parsed files of one kind ("prompt/", ".md"...). */
static elem *gather(const hfiles *fs, int kind, size_t *count, json_t *problems)
{
    elem *es = xcalloc(fs->n + 1, sizeof *es);
    size_t k = 0;
    const char *field = kind == 0 ? "id" : "name";
    for (size_t i = 0; i < fs->n; i++) {
        const char *r = fs->f[i].rel;
        json_t *v = NULL;
        if (kind == 0 && !strncmp(r, "prompt/", 7) && !strchr(r + 7, '/') && str_endswith(r, ".md"))
            v = parse_block(&fs->f[i], problems);
        else if (kind == 1 && !strncmp(r, "skills/", 7) && str_endswith(r, "/SKILL.md") &&
                 strchr(r + 7, '/') == r + strlen(r) - 9)
            v = parse_skill(&fs->f[i], problems);
        else if (kind == 2 && !strncmp(r, "tools/", 6) && !strchr(r + 6, '/') &&
                 str_endswith(r, ".json"))
            v = parse_json_file(&fs->f[i], problems);
        else continue;
        if (!v) {
            char *fk = kind == 2 ? NULL : salvage_key(&fs->f[i], field);
            if (!fk) fk = key_from_path(r, kind);
            if (fk) es[k++] = (elem){ &fs->f[i], NULL, 0, fk };
            continue;
        }
        const char *key = elem_key(v, field);
        if (!key) {
            problem(problems, fs->f[i].shown, 0, "", "no string \"%s\"", field);
            json_decref(v);
            continue;
        }
        for (size_t j = 0; j < k; j++)
            if (es[j].v && !strcmp(elem_key(es[j].v, field), key))
                problem(problems, fs->f[i].shown, 0, "", "%s \"%s\" also defined in %s",
                        field, key, es[j].f->shown);
        es[k++] = (elem){ &fs->f[i], v, 0, NULL };
    }
    *count = k;
    return es;
}

/* Build one compiled list from the order in harness.json and the files. */
static json_t *assemble(const json_t *list, const char *listkey, elem *es, size_t n,
                        const char *field, const char *cpath, const char *hname,
                        json_t *origins, json_t *problems)
{
    json_t *out = json_array();
    if (list && !json_is_array(list)) {
        problem(problems, hname, 0, listkey, "must be an array of names");
        list = NULL;
    }
    size_t i;
    json_t *name;
    json_array_foreach(list, i, name) {
        char path[64];
        snprintf(path, sizeof path, "%s/%zu", listkey, i);
        if (!json_is_string(name)) {
            problem(problems, hname, 0, path, "must be a string");
            continue;
        }
        size_t j;
        for (j = 0; j < n; j++)
            if (!es[j].used && !strcmp(ekey(&es[j], field), json_string_value(name))) break;
        if (j == n) {
            problem(problems, hname, 0, path, "\"%s\" is listed but has no file",
                    json_string_value(name));
            continue;
        }
        es[j].used = 1;
        if (!es[j].v) continue;            /* its own problem says why */
        char *cp = xasprintf("%s/%zu", cpath, json_array_size(out));
        json_object_set_new(origins, cp, json_string(es[j].f->shown));
        free(cp);
        json_array_append(out, es[j].v);
    }
    for (size_t j = 0; j < n; j++)
        if (!es[j].used && es[j].v)
            problem(problems, es[j].f->shown, 0, "", "%s \"%s\" is not listed in harness.json %s",
                    field, elem_key(es[j].v, field), listkey + 1);
    return out;
}

static void free_elems(elem *es, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_decref(es[i].v);
        free(es[i].failed_key);
    }
    free(es);
}

static json_t *compile(const hfiles *fs, json_t *origins, json_t *problems)
{
    const hfile *hf = NULL;
    for (size_t i = 0; i < fs->n; i++)
        if (!strcmp(fs->f[i].rel, "harness.json")) hf = &fs->f[i];
    if (!hf) {
        problem(problems, fs->n ? fs->f[0].shown : "", 0, "", "no harness.json");
        return NULL;
    }
    json_t *top = parse_json_file(hf, problems);
    if (!top) return NULL;
    json_object_set_new(origins, "", json_string(hf->shown));
    size_t nb, ns, nt;
    elem *bs = gather(fs, 0, &nb, problems), *ss = gather(fs, 1, &ns, problems),
         *ts = gather(fs, 2, &nt, problems);
    json_t *h = json_object();
    json_t *v;
    if ((v = json_object_get(top, "name"))) json_object_set(h, "name", v);
    if ((v = json_object_get(top, "version"))) json_object_set(h, "version", v);
    json_t *sp = json_object();
    json_object_set_new(sp, "blocks", assemble(json_object_get(top, "prompt"), "/prompt", bs, nb,
                                               "id", "/system_prompt/blocks", hf->shown,
                                               origins, problems));
    json_object_set_new(h, "system_prompt", sp);
    if ((v = json_object_get(top, "skill_loader"))) json_object_set(h, "skill_loader", v);
    json_object_set_new(h, "skills", assemble(json_object_get(top, "skills"), "/skills", ss, ns,
                                              "name", "/skills", hf->shown, origins, problems));
    json_object_set_new(h, "tools", assemble(json_object_get(top, "tools"), "/tools", ts, nt,
                                             "name", "/tools", hf->shown, origins, problems));
    if ((v = json_object_get(top, "hooks"))) json_object_set(h, "hooks", v);
    const char *k;
    json_object_foreach(top, k, v)
        if (strcmp(k, "prompt") && strcmp(k, "skills") && strcmp(k, "tools") &&
            !json_object_get(h, k))
            json_object_set(h, k, v);
    free_elems(bs, nb);
    free_elems(ss, ns);
    free_elems(ts, nt);
    json_decref(top);
    harness_canonicalize(h);
    return h;
}

/* ---- canonical order ---------------------------------------------------- */

static void reorder(json_t *o, const char *const *order)
{
    if (!json_is_object(o)) return;
    json_t *c = ordered(o, order);
    json_object_clear(o);
    json_object_update(o, c);
    json_decref(c);
}

static void reorder_all(json_t *arr, const char *const *order)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) reorder(v, order);
}

void harness_canonicalize(json_t *h)
{
    reorder(h, TOP_KEYS);
    reorder_all(json_object_get(json_object_get(h, "system_prompt"), "blocks"), BLOCK_KEYS);
    reorder(json_object_get(h, "skill_loader"), LOADER_KEYS);
    reorder_all(json_object_get(h, "skills"), SKILL_KEYS);
    reorder_all(json_object_get(h, "tools"), TOOL_KEYS);
}

/* ---- entry points ------------------------------------------------------- */

static int looks_like_json(const char *s, size_t n)
{
    size_t i = 0;
    if (n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3)) i = 3;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    return i < n && s[i] == '{';
}

/* read_file, but stopping after cap bytes: a .gz (which zlib unpacks on
 * the way in) could otherwise expand without bound before any check. */
static char *read_capped(const char *path, size_t cap, size_t *len)
{
    int fd = is_stdio_path(path) ? dup(0) : open_regular(path);
    gzFile gz = fd >= 0 ? gzdopen(fd, "rb") : NULL;
    if (!gz) { if (fd >= 0) close(fd); return NULL; }
    sbuf b;
    sbuf_init(&b);
    char chunk[1 << 16];
    int n = 0;
    while (b.len < cap && (n = gzread(gz, chunk, sizeof chunk)) > 0) sbuf_add(&b, chunk, (size_t)n);
    int err = 0;
    if (b.len < cap && n < 0) gzerror(gz, &err);
    gzclose(gz);
    if (err) { sbuf_free(&b); return NULL; }
    *len = b.len;
    return b.s ? sbuf_detach(&b) : xstrdup("");
}

static void check_counts(const json_t *h, const char *name, json_t *problems)
{
    const json_t *lists[3] = { json_object_get(json_object_get(h, "system_prompt"), "blocks"),
                               json_object_get(h, "skills"), json_object_get(h, "tools") };
    const char *paths[3] = { "/system_prompt/blocks", "/skills", "/tools" };
    for (int i = 0; i < 3; i++)
        if (json_array_size(lists[i]) > HARNESS_MAX_ITEMS)
            problem(problems, name, 0, paths[i], "%zu entries; at most %d are accepted",
                    json_array_size(lists[i]), HARNESS_MAX_ITEMS);
}

json_t *harness_load_problems(const char *path, json_t **origins, json_t *problems)
{
    json_t *org = json_object();
    json_t *h = NULL;
    const char *name = is_stdio_path(path) ? "<stdin>" : path;
    struct stat st;
    hfiles fs = { 0 };
    if (!is_stdio_path(path) && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        read_dir(&fs, path, problems);
        if (!fs.over) h = compile(&fs, org, problems);   /* one error, not one per file read */
    } else if (!is_stdio_path(path) && stat(path, &st) != 0) {
        problem(problems, name, 0, "", "cannot open: %s", strerror(errno));
    } else if (!is_stdio_path(path) && !S_ISREG(st.st_mode)) {
        problem(problems, name, 0, "", "not a regular file or directory (a device, FIFO or socket is never read)");
    } else if (!is_stdio_path(path) && st.st_size > (off_t)HARNESS_MAX_BYTES) {
        problem(problems, name, 0, "", "%lld bytes; a harness may hold at most %u",
                (long long)st.st_size, HARNESS_MAX_BYTES);
    } else {
        size_t len = 0;
        char *data = read_capped(path, HARNESS_MAX_BYTES + 1, &len);
        if (!data) {
            problem(problems, name, 0, "", "cannot read");
        } else if (len > HARNESS_MAX_BYTES) {
            problem(problems, name, 0, "", "more than %u bytes (a harness's limit)", HARNESS_MAX_BYTES);
        } else if (looks_like_json(data, len)) {
            hfile f = { (char *)"", (char *)name, data, len };
            h = parse_json_file(&f, problems);
            json_object_set_new(org, "", json_string(name));
        } else if (read_archive(&fs, name, data, len, problems) == 0) {
            h = compile(&fs, org, problems);
        }
        free(data);
    }
    files_free(&fs);
    if (h) check_counts(h, name, problems);
    if (origins) *origins = org;
    else json_decref(org);
    return h;
}

json_t *harness_load_ex(const char *path, json_t **origins)
{
    json_t *problems = json_array();
    json_t *org = NULL;
    json_t *h = harness_load_problems(path, &org, problems);
    size_t i;
    json_t *p;
    json_array_foreach(problems, i, p) {
        const char *file = json_string_value(json_object_get(p, "file"));
        const char *jp = json_string_value(json_object_get(p, "path"));
        long line = (long)json_integer_value(json_object_get(p, "line"));
        const char *msg = json_string_value(json_object_get(p, "message"));
        if (jp && *jp) hat_errat(file, line, "%s: %s", jp, msg);
        else hat_errat(file, line, "%s", msg);
    }
    if (json_array_size(problems) || !h) {
        json_decref(h);
        json_decref(org);
        h = NULL;
        org = NULL;
    }
    json_decref(problems);
    if (origins) *origins = org;
    else json_decref(org);
    return h;
}

json_t *harness_load(const char *path) { return harness_load_ex(path, NULL); }
