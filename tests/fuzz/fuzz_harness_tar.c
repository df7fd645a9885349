/* fuzz_harness_tar.c — the archive form of a harness.  Raw archive bytes
 * rarely survive mutation (tar header checksums), so the input is read as
 * a list of members and packed into a real archive first:
 *     byte 0       bit 0: gzip the tar; bit 1: put the files under a top
 *                  directory "h/"; bit 2: feed the rest as raw bytes instead
 *     then         members "NAME\nCONTENT" separated by "\n@@\n"
 * The packed archive goes through harness_load like a user's .tar.gz. */
#include "fuzz_harness.h"

#include <archive.h>
#include <archive_entry.h>

static const char SEP[] = "\n@@\n";

static void add_member(struct archive *a, const char *top, const char *m, size_t n)
{
    const char *nl = memchr(m, '\n', n);
    size_t nlen = nl ? (size_t)(nl - m) : n;
    const char *body = nl ? nl + 1 : m + n;
    size_t blen = (size_t)(m + n - body);
    char *name = xasprintf("%s%.*s", top, (int)nlen, m);
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, name);
    archive_entry_set_size(e, (la_int64_t)blen);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    if (archive_write_header(a, e) == ARCHIVE_OK && blen) archive_write_data(a, body, blen);
    archive_entry_free(e);
    free(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int flags = data[0];
    const char *rest = (const char *)data + 1;
    size_t n = size - 1;
    if (flags & 4) {
        fuzz_harness_path(fuzz_file(0, rest, n));
        return 0;
    }
    size_t cap = 2 * n + 65536, used = 0;
    char *buf = malloc(cap);
    if (!buf) abort();
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    if (flags & 1) archive_write_add_filter_gzip(a);
    archive_write_set_bytes_in_last_block(a, 1);
    if (archive_write_open_memory(a, buf, cap, &used) != ARCHIVE_OK) abort();
    const char *p = rest, *end = rest + n;
    while (p < end) {
        const char *q = memmem(p, (size_t)(end - p), SEP, sizeof SEP - 1);
        size_t len = q ? (size_t)(q - p) : (size_t)(end - p);
        add_member(a, flags & 2 ? "h/" : "", p, len);
        p += len + (q ? sizeof SEP - 1 : 0);
    }
    archive_write_close(a);
    archive_write_free(a);
    fuzz_harness_path(fuzz_file(0, buf, used));
    free(buf);
    return 0;
}
