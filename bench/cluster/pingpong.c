// MPI ping-pong between ranks 0 and 1 (bench/cluster): the link's latency (half the round trip of a 1-byte
// message, median) and its rate (bytes / half the round trip of a large message, median), over whatever
// transport mpirun chose (the emulated cluster: TCP over the shaped veth pair). Prints one JSON line on rank 0.
// With "duplex", also the one-way time of large_bytes while the other direction carries the same size at the
// same time (both ranks MPI_Sendrecv, median): what 1F1B's steady state does, a forward and a backward send
// crossing on the link.
//   pingpong [large_bytes] [reps] [duplex]
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One timed exchange of `bytes` between ranks 0 and 1: a round trip (duplex 0) or both directions at once
   (duplex 1, MPI_Sendrecv, until both messages have arrived). */
static void exchange(int rank, char *buf, char *recv, int bytes, int duplex) {
  if (duplex) {
    MPI_Sendrecv(buf, bytes, MPI_BYTE, 1 - rank, 1, recv, bytes, MPI_BYTE, 1 - rank, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
  } else if (rank == 0) {
    MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
    MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
  }
}

/* The median seconds of `reps` exchanges after two warm-up ones. */
static double median(int rank, char *buf, char *recv, int bytes, int reps, int duplex) {
  double *t = malloc(sizeof(double) * reps);
  for (int i = -2; i < reps; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    exchange(rank, buf, recv, bytes, duplex);
    if (i >= 0)
      t[i] = MPI_Wtime() - t0;
  }
  qsort(t, reps, sizeof(double), cmp);
  double m = t[reps / 2];
  free(t);
  return m;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0)
      fprintf(stderr, "pingpong: needs exactly 2 ranks, got %d\n", size);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int large = argc > 1 ? atoi(argv[1]) : 4 << 20;
  int reps = argc > 2 ? atoi(argv[2]) : 10;
  if (large < 1 || reps < 1) {
    if (rank == 0)
      fprintf(stderr, "pingpong: large_bytes and reps must be >= 1\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int duplex = argc > 3 && strcmp(argv[3], "duplex") == 0;
  char *buf = calloc(large, 1), *recv = calloc(large, 1);
  double small = median(rank, buf, recv, 1, 5 * reps, 0) / 2;
  double big = median(rank, buf, recv, large, reps, 0) / 2;
  double both = duplex ? median(rank, buf, recv, large, reps, 1) : 0;
  if (rank == 0) {
    printf("{\"latency_s\": %.9g, \"large_bytes\": %d, \"large_one_way_s\": %.9g, \"rate_bytes_per_s\": %.9g",
           small, large, big, large / (big - small > 0 ? big - small : big));
    if (duplex)
      printf(", \"duplex_one_way_s\": %.9g", both);
    printf("}\n");
  }
  free(buf);
  free(recv);
  MPI_Finalize();
  return 0;
}
