/* excerpt of the test program (own reconstruction of the pattern the thread describes) */
#define NCCLCHECK(cmd) do {                                   \
    ncclResult_t r = (cmd);                                   \
    if (r != ncclSuccess) {                                   \
        fprintf(stderr, "NCCL error %s:%d '%s'\n",            \
                __FILE__, __LINE__, ncclGetErrorString(r));   \
        exit(EXIT_FAILURE);                                   \
    }                                                         \
} while (0)

static void alltoall(const float *sbuf, float *rbuf, size_t count,
                     int nranks, ncclComm_t comm, cudaStream_t s)
{
    NCCLCHECK(ncclGroupStart());
    for (int r = 0; r < nranks; r++) {
        NCCLCHECK(ncclSend(sbuf + r * count, count, ncclFloat, r, comm, s));
        NCCLCHECK(ncclRecv(rbuf + r * count, count, ncclFloat, r, comm, s));
    }
    NCCLCHECK(ncclGroupEnd());
}
