/* harness-unpack — the compiled JSON form (or any harness) → a directory.
 * The directory appears whole or not at all: files are written into a
 * temporary sibling directory which is renamed into place at the end. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700   /* nftw, struct FTW */
#endif
#include "cli.h"
#include "harness.h"
#include "harness_compile.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: harness-unpack -o DIR [--force] [HARNESS]\n"
    "Write a harness (compiled JSON, directory or archive; default stdin) as\n"
    "a directory of harness.json, prompt/*.md, skills/*/SKILL.md, tools/*.json.\n"
    "  -o DIR       the directory to create (required)\n"
    "  -f, --force  replace DIR even if it exists and is not empty\n"
    "  -h, --help   this text;  --version  the version\n";

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    return remove(p);
}

static int rm_tree(const char *dir) { return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

static int empty_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n == 0;
}

int main(int argc, char **argv)
{
    cli_init(argc, argv);
    static const struct option longs[] = { { "force", no_argument, NULL, 'f' }, { 0 } };
    cli_spec spec = { usage, "f", longs };
    cli_common c = { 0 };
    int force = 0, opt;
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1)
        if (opt == 'f') force = 1;
    if (!c.output || !strcmp(c.output, "-")) cli_usage_error(&spec, "-o DIR is required");
    if (argc - optind > 1) cli_usage_error(&spec, "one harness at a time");
    const char *dir = c.output;
    struct stat st;
    int exists = stat(dir, &st) == 0;
    if (exists && !S_ISDIR(st.st_mode)) {
        hat_errat(dir, 0, "exists and is not a directory");
        return EXIT_FAIL;
    }
    if (exists && !force && !empty_dir(dir)) {
        hat_errat(dir, 0, "directory exists and is not empty (use --force to replace it)");
        return EXIT_FAIL;
    }
    json_t *h = harness_load_checked(optind < argc ? argv[optind] : "-");
    if (!h) return EXIT_FAIL;
    char *clean = xstrdup(dir);   /* "dir/" names the same place as "dir" */
    for (size_t n = strlen(clean); n > 1 && clean[n - 1] == '/'; n--) clean[n - 1] = 0;
    dir = clean;
    char *tmp = xasprintf("%s.tmpXXXXXX", dir);
    int rc = EXIT_FAIL;
    if (!mkdtemp(tmp)) {
        hat_errat(tmp, 0, "cannot create directory: %s", strerror(errno));
    } else if (chmod(tmp, 0777 & ~umask(umask(0))) || harness_unpack(h, tmp)) {
        rm_tree(tmp);
    } else {
        char *old = NULL;
        if (exists) {   /* move the old one aside, then the new one in */
            old = xasprintf("%s.oldXXXXXX", tmp);
            if (!mkdtemp(old) || rmdir(old) || rename(dir, old)) {
                hat_errat(dir, 0, "cannot replace: %s", strerror(errno));
                rm_tree(tmp);
                free(old);
                old = (char *)1;
            }
        }
        if (old != (char *)1) {
            if (rename(tmp, dir)) {
                hat_errat(dir, 0, "cannot rename into place: %s", strerror(errno));
                rm_tree(tmp);
                if (old) rename(old, dir);
            } else {
                rc = EXIT_OK;
                if (old) rm_tree(old);
            }
            free(old);
        }
    }
    free(tmp);
    free(clean);
    json_decref(h);
    return rc;
}
