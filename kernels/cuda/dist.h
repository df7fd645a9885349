/* dist.h — data-parallel training over NCCL: one process per GPU, each
 * computing gradients on its share of the batch, then one all-reduce of
 * the flat fp32 gradient buffer (the llm.c layout makes that one call).
 *
 * Who is who comes from the environment, first match wins:
 *   HAT_RANK / HAT_WORLD_SIZE                    (any launcher, or by hand)
 *   OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE  (Open MPI's mpirun)
 *   PMI_RANK / PMI_SIZE                          (MPICH / Hydra)
 *   SLURM_PROCID / SLURM_NTASKS                  (srun)
 *   none of them: rank 0 of 1.
 * The NCCL unique id travels through a rendezvous FILE on a filesystem
 * all ranks see: rank 0 writes it (to FILE.tmp, then rename, so readers
 * never see half an id); the others wait for it (up to HAT_DIST_TIMEOUT
 * seconds, default 300).  Use a fresh path per job: a file left by an
 * earlier job would hand its stale id to the new ranks.  Rank 0 removes
 * it in dist_free.  No MPI library is linked: mpirun only starts the
 * processes.
 * World size 1 is a real one-rank NCCL communicator (so the single-GPU
 * test exercises the same calls); it needs no file.
 * Built only with the CUDA back end (HAT_CUDA); the GPU for this process
 * is picked by device_init from the local rank. */
#ifndef HAT_CUDA_DIST_H
#define HAT_CUDA_DIST_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int   rank, world, local_rank;
    void *comm;            /* ncclComm_t */
    char *file;            /* rendezvous path (rank 0 removes it) */
} hat_dist;

/* Read rank and world size from the environment (see above); no GPU or
 * NCCL needed.  Returns 0, or -1 with a message for inconsistent values. */
int  dist_env(int *rank, int *world, int *local_rank);
/* dist_env, device_init, then the NCCL communicator.  `file` may be NULL
 * when the world size is 1 (else $HAT_DIST_FILE is used).  Returns 0, or
 * -1 after a diagnostic (no GPU, no file, timeout, NCCL error). */
int  dist_init(hat_dist *d, const char *file);
/* In-place sum of buf (n floats, device memory) over all ranks, then
 * times `scale` (1/world for a mean, 1 for a sum); enqueued on the
 * device stream. */
void dist_allreduce_f32(hat_dist *d, float *buf, size_t n, float scale);
/* Sum of a host double over all ranks (losses, token counts for the
 * global mean; synchronises). */
double dist_sum_double(hat_dist *d, double x);
void dist_free(hat_dist *d);

#ifdef __cplusplus
}
#endif
#endif
