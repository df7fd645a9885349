/* dist.cu — rank discovery, the NCCL rendezvous through a shared file,
 * and the gradient all-reduce (dist.h says how it is launched). */
#include "cuda/common.cuh"
#include "cuda/dist.h"

#include <errno.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern "C" {
#include "util.h"
}

#define NCCL_CHECK(call) do { ncclResult_t r_ = (call); \
    if (r_ != ncclSuccess) cuda_fatal(__FILE__, __LINE__, #call, ncclGetErrorString(r_)); } while (0)

static int env_int(const char *name, int *out)
{
    const char *s = getenv(name);
    if (!s || !*s) return 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < 0 || v > 1 << 20) return -1;
    *out = (int)v;
    return 1;
}

extern "C" int dist_env(int *rank, int *world, int *local_rank)
{
    static const char *pairs[][3] = {
        { "HAT_RANK", "HAT_WORLD_SIZE", "HAT_LOCAL_RANK" },
        { "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK" },
        { "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID" },
        { "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID" },
    };
    *rank = 0, *world = 1, *local_rank = 0;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        int r = 0, w = 0, l = -1;
        int hr = env_int(pairs[i][0], &r), hw = env_int(pairs[i][1], &w);
        if (hr == 0 && hw == 0) continue;
        if (hr != 1 || hw != 1 || w < 1 || r >= w) {
            hat_warn("dist: %s/%s must be set together, 0 <= rank < size", pairs[i][0], pairs[i][1]);
            return -1;
        }
        *rank = r, *world = w;
        *local_rank = env_int(pairs[i][2], &l) == 1 ? l : r;
        return 0;
    }
    return 0;
}

/* The id file holds the world size and the id, so a mismatched launch is
 * reported instead of hanging in NCCL. */
static int write_id(const char *path, int world, const ncclUniqueId *id)
{
    char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(&world, sizeof world, 1, f) == 1 && fwrite(id, sizeof *id, 1, f) == 1;
    if (f && fclose(f) != 0) ok = 0;
    if (ok && rename(tmp, path) != 0) ok = 0;
    if (!ok) {
        hat_warn("dist: %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return ok ? 0 : -1;
}

static int read_id(const char *path, int world, ncclUniqueId *id)
{
    int timeout = 300;
    env_int("HAT_DIST_TIMEOUT", &timeout);
    for (long waited_ms = 0;; waited_ms += 50) {
        FILE *f = fopen(path, "rb");
        if (f) {
            int w = 0;
            int ok = fread(&w, sizeof w, 1, f) == 1 && fread(id, sizeof *id, 1, f) == 1;
            fclose(f);
            if (!ok) { hat_warn("dist: %s: truncated rendezvous file", path); return -1; }
            if (w != world) {
                hat_warn("dist: %s: written for %d ranks, this launch has %d (stale file?)", path, w, world);
                return -1;
            }
            return 0;
        }
        if (waited_ms >= timeout * 1000L) {
            hat_warn("dist: %s: no rendezvous file from rank 0 after %d s", path, timeout);
            return -1;
        }
        struct timespec ts = { 0, 50 * 1000000L };
        nanosleep(&ts, NULL);
    }
}

extern "C" int dist_init(hat_dist *d, const char *file)
{
    memset(d, 0, sizeof *d);
    if (dist_env(&d->rank, &d->world, &d->local_rank) != 0) return -1;
    if (!file) file = getenv("HAT_DIST_FILE");
    if (d->world > 1 && (!file || !*file)) {
        hat_warn("dist: %d ranks need a rendezvous file (set HAT_DIST_FILE)", d->world);
        return -1;
    }
    if (device_init(-1) != 0) return -1;
    ncclUniqueId id;
    if (d->rank == 0) {
        NCCL_CHECK(ncclGetUniqueId(&id));
        if (d->world > 1 && write_id(file, d->world, &id) != 0) return -1;
    } else if (read_id(file, d->world, &id) != 0) {
        return -1;
    }
    if (d->world > 1) d->file = xstrdup(file);
    ncclComm_t comm;
    ncclResult_t r = ncclCommInitRank(&comm, d->world, id, d->rank);
    if (r != ncclSuccess) {
        hat_warn("dist: rank %d of %d: ncclCommInitRank: %s", d->rank, d->world, ncclGetErrorString(r));
        return -1;
    }
    d->comm = comm;
    return 0;
}

extern "C" void dist_allreduce_f32(hat_dist *d, float *buf, size_t n, float scale)
{
    if (n == 0) return;
    NCCL_CHECK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, (ncclComm_t)d->comm, cuda_stream()));
    if (scale != 1.0f) cuda_scale_inplace(buf, n, scale);
}

extern "C" double dist_sum_double(hat_dist *d, double x)
{
    double *dx = (double *)device_malloc(sizeof(double));
    device_upload(dx, &x, sizeof x);
    NCCL_CHECK(ncclAllReduce(dx, dx, 1, ncclFloat64, ncclSum, (ncclComm_t)d->comm, cuda_stream()));
    device_download(&x, dx, sizeof x);
    device_free(dx);
    return x;
}

extern "C" void dist_free(hat_dist *d)
{
    if (d->comm) {
        device_sync();
        ncclCommDestroy((ncclComm_t)d->comm);
    }
    if (d->rank == 0 && d->file) unlink(d->file);
    free(d->file);
    memset(d, 0, sizeof *d);
}
