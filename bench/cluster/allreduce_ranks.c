// Each rank's own time of OpenMPI's in-place MPI_Iallreduce (f32 sum) + MPI_Wait after a barrier, and the time
// to a barrier after it, medians over REPS runs (issue 25, bench/README.md "The fast-rate regression, found"): on
// a 2-rank all-reduce rank 0's wait ends one message before rank 1's, which is why ptrain-calibrate times its
// collective tables to the slowest rank (slowestRankSeconds).
//
//   mpicc -O2 -o allreduce_ranks bench/cluster/allreduce_ranks.c
//   mpirun -np 2 [the bench/cluster mpirun options] ./allreduce_ranks BYTES REPS
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int byValue(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int bytes = argc > 1 ? atoi(argv[1]) : 131072, reps = argc > 2 ? atoi(argv[2]) : 9;
  if (bytes < 4 || reps < 1 || reps > 1000) {
    if (rank == 0)
      fprintf(stderr, "usage: allreduce_ranks BYTES (>= 4) REPS (1-1000)\n");
    MPI_Finalize();
    return 2;
  }
  int n = bytes / 4;
  float *buf = malloc((size_t)n * sizeof(float));
  double *own = malloc(reps * sizeof(double)), *toBarrier = malloc(reps * sizeof(double));
  for (int i = 0; i < reps; ++i) {
    for (int j = 0; j < n; ++j)
      buf[j] = 1.0f;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Request request;
    MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    own[i] = MPI_Wtime() - t0;
    MPI_Barrier(MPI_COMM_WORLD);
    toBarrier[i] = MPI_Wtime() - t0;
  }
  qsort(own, reps, sizeof(double), byValue);
  qsort(toBarrier, reps, sizeof(double), byValue);
  double both[2] = {0, 0};
  MPI_Gather(&own[reps / 2], 1, MPI_DOUBLE, both, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("bytes %d: median own time rank 0 %.3f ms, rank 1 %.3f ms; to the barrier after %.3f ms\n", bytes,
           both[0] * 1e3, both[1] * 1e3, toBarrier[reps / 2] * 1e3);
  free(buf);
  free(own);
  free(toBarrier);
  MPI_Finalize();
  return 0;
}
