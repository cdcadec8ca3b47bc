/* An MPI that is as lazy with puts as the standard allows: a contiguous byte put is only
 * copied when issued (so MPI_Win_flush_local may return at once), and is carried out at
 * the target when the program completes it there: MPI_Win_flush to that rank,
 * MPI_Win_flush_all, MPI_Win_unlock_all or MPI_Win_free. Everything else passes through.
 * MPI orders neither a get nor another put after a put to the same target, so a program
 * that relies on such an order fails under it; one that completes the put first does not.
 * Loaded into the ranks with LD_PRELOAD (the MPI profiling interface); one thread. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

struct deferred {
    void *bytes;
    int count, target;
    MPI_Aint disp;
    MPI_Win win;
};

static struct deferred *queue;
static size_t queued, capacity;

static int is_bytes(MPI_Datatype t) { return t == MPI_BYTE || t == MPI_UINT8_T || t == MPI_CHAR; }

int MPI_Put(const void *origin, int origin_count, MPI_Datatype origin_type, int target,
            MPI_Aint disp, int target_count, MPI_Datatype target_type, MPI_Win win) {
    if (!is_bytes(origin_type) || !is_bytes(target_type) || origin_count != target_count)
        return PMPI_Put(origin, origin_count, origin_type, target, disp, target_count,
                        target_type, win);
    if (queued == capacity) {
        capacity = capacity ? 2 * capacity : 64;
        queue = realloc(queue, capacity * sizeof *queue);
        if (!queue) abort();
    }
    void *copy = malloc(origin_count ? origin_count : 1);
    if (!copy) abort();
    memcpy(copy, origin, origin_count);
    queue[queued++] = (struct deferred){copy, origin_count, target, disp, win};
    return MPI_SUCCESS;
}

/* Issues the deferred puts to `target` (every target: -1) of `win`, in issue order. */
static void issue(MPI_Win win, int target) {
    size_t kept = 0;
    for (size_t k = 0; k < queued; k++) {
        struct deferred d = queue[k];
        if (d.win == win && (target < 0 || d.target == target)) {
            PMPI_Put(d.bytes, d.count, MPI_BYTE, d.target, d.disp, d.count, MPI_BYTE, win);
            PMPI_Win_flush(d.target, win);
            free(d.bytes);
        } else {
            queue[kept++] = d;
        }
    }
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
