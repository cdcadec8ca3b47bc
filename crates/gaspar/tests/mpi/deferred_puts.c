/* An MPI that is as lazy with puts and accumulates as the standard allows: a put or an
 * accumulate is only copied when it is issued (so MPI_Win_flush_local may return at
 * once), and is carried out at the target when the program completes it there
 * (MPI_Win_flush to that rank, MPI_Win_flush_all, MPI_Win_unlock_all, MPI_Win_free), the
 * pending ones in the reverse of their issue order. MPI orders neither a get nor a put
 * after a put or an accumulate to the same target (only accumulates among themselves:
 * reversing those is allowed here because gaspar's are sums, which commute), so a program
 * that relies on such an order fails under it; one that completes the earlier operation
 * first does not. Loaded into the ranks with LD_PRELOAD (the MPI profiling interface); one
 * thread; an operation whose origin spans more than 1 MiB passes through. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

struct deferred {
    char *bytes; /* a copy of the origin's span, at the origin type's true lower bound */
    MPI_Aint lower;
    int origin_count, target, target_count;
    MPI_Datatype origin_type, target_type;
    MPI_Aint disp;
    MPI_Op op; /* MPI_OP_NULL: a put */
    MPI_Win win;
};

static struct deferred *queue;
static size_t queued, capacity;

/* Carries out one operation now. */
static int carry_out(const void *origin, int origin_count, MPI_Datatype origin_type,
                     int target, MPI_Aint disp, int target_count, MPI_Datatype target_type,
                     MPI_Op op, MPI_Win win) {
    if (op == MPI_OP_NULL)
        return PMPI_Put(origin, origin_count, origin_type, target, disp, target_count,
                        target_type, win);
    return PMPI_Accumulate(origin, origin_count, origin_type, target, disp, target_count,
                           target_type, op, win);
}

/* Queues a put (op MPI_OP_NULL) or an accumulate. */
static int defer(const void *origin, int origin_count, MPI_Datatype origin_type, int target,
                 MPI_Aint disp, int target_count, MPI_Datatype target_type, MPI_Op op,
                 MPI_Win win) {
    MPI_Aint lower, extent, type_lower, type_extent;
    PMPI_Type_get_true_extent(origin_type, &lower, &extent);
    PMPI_Type_get_extent(origin_type, &type_lower, &type_extent);
    MPI_Aint span = origin_count > 0 ? extent + (origin_count - 1) * type_extent : 0;
    if (span > (1 << 20))
        return carry_out(origin, origin_count, origin_type, target, disp, target_count,
                         target_type, op, win);
    if (queued == capacity) {
        capacity = capacity ? 2 * capacity : 64;
        queue = realloc(queue, capacity * sizeof *queue);
        if (!queue) abort();
    }
    struct deferred d = {malloc(span ? span : 1), lower, origin_count, target, target_count,
                         MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, disp, op, win};
    if (!d.bytes) abort();
    memcpy(d.bytes, (const char *)origin + lower, span);
    PMPI_Type_dup(origin_type, &d.origin_type);
    PMPI_Type_dup(target_type, &d.target_type);
    queue[queued++] = d;
    return MPI_SUCCESS;
}

int MPI_Put(const void *origin, int origin_count, MPI_Datatype origin_type, int target,
            MPI_Aint disp, int target_count, MPI_Datatype target_type, MPI_Win win) {
    return defer(origin, origin_count, origin_type, target, disp, target_count, target_type,
                 MPI_OP_NULL, win);
}

int MPI_Accumulate(const void *origin, int origin_count, MPI_Datatype origin_type,
                   int target, MPI_Aint disp, int target_count, MPI_Datatype target_type,
                   MPI_Op op, MPI_Win win) {
    return defer(origin, origin_count, origin_type, target, disp, target_count, target_type,
                 op, win);
}

/* Carries out the deferred operations to `target` (every target: -1) of `win`, last first. */
static void issue(MPI_Win win, int target) {
    size_t kept = 0;
    for (size_t k = queued; k-- > 0;) {
        struct deferred d = queue[k];
        if (d.win == win && (target < 0 || d.target == target)) {
            carry_out(d.bytes - d.lower, d.origin_count, d.origin_type, d.target, d.disp,
                      d.target_count, d.target_type, d.op, win);
            PMPI_Win_flush(d.target, win);
            PMPI_Type_free(&d.origin_type);
            PMPI_Type_free(&d.target_type);
            free(d.bytes);
            queue[k].win = MPI_WIN_NULL;
        }
    }
    for (size_t k = 0; k < queued; k++)
        if (queue[k].win != MPI_WIN_NULL) queue[kept++] = queue[k];
    queued = kept;
}

int MPI_Win_flush(int target, MPI_Win win) {
    issue(win, target);
    return PMPI_Win_flush(target, win);
}

int MPI_Win_flush_all(MPI_Win win) {
    issue(win, -1);
    return PMPI_Win_flush_all(win);
}

int MPI_Win_unlock_all(MPI_Win win) {
    issue(win, -1);
    return PMPI_Win_unlock_all(win);
}

int MPI_Win_free(MPI_Win *win) {
    issue(*win, -1);
    return PMPI_Win_free(win);
}
