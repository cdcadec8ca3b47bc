/*
 * armcix.h: ARMCI-MPI's extensions, as its armcix.h declares them (ARMCI-MPI 0.3, Debian
 * libarmci-mpi-dev): groups split by color or duplicated, and handles of mutex sets.
 * A mutex handle is opaque here: ARMCI-MPI's struct holds MPI windows, gaspar's holds its
 * own state, and programs use the handle only through the calls below.
 */
#ifndef _ARMCIX_H_
#define _ARMCIX_H_

#include <armci.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Processor group extensions. ARMCIX_Group_split is MPI_Comm_split over the parent's
 * members: the same color, the same new group, numbered by key (ties by parent rank); a
 * negative color (MPI_UNDEFINED) joins none (rank -1, size 0). Both are collective over
 * the parent and return 0. */
int ARMCIX_Group_split(ARMCI_Group *parent, int color, int key, ARMCI_Group *new_group);
int ARMCIX_Group_dup(ARMCI_Group *parent, ARMCI_Group *new_group);

/* Mutex handles: any number of mutex sets, each created collectively over a group with
 * a count per process. A mutex is named by (mutex, proc), proc being the absolute (world)
 * rank of a group member that created more than `mutex` mutexes. ARMCIX_Trylock_hdl
 * returns 0 when it took the mutex, non-zero when another process holds it. */
struct armcix_mutex_hdl_s;
typedef struct armcix_mutex_hdl_s * armcix_mutex_hdl_t;

armcix_mutex_hdl_t ARMCIX_Create_mutexes_hdl(int count, ARMCI_Group *pgroup);
int  ARMCIX_Destroy_mutexes_hdl(armcix_mutex_hdl_t hdl);
void ARMCIX_Lock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc);
int  ARMCIX_Trylock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc);
void ARMCIX_Unlock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc);

/* ARMCI-MPI pokes MPI's progress engine here; gaspar's operations progress inside their
 * own calls, so this does nothing but is always safe to call. */
void ARMCIX_Progress(void);

#ifdef __cplusplus
}
#endif

#endif /* _ARMCIX_H_ */
