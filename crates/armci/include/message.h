/*
 * message.h: ARMCI-MPI's message layer on gaspar (see armci.h).
 */
#ifndef HAVE_ARMCI_MSG_H
#define HAVE_ARMCI_MSG_H

#include <armci.h>

#ifdef __cplusplus
extern "C" {
#endif

enum armci_scope_e { SCOPE_ALL, SCOPE_NODE, SCOPE_MASTERS};
enum armci_type_e  { ARMCI_INT, ARMCI_LONG, ARMCI_LONG_LONG, ARMCI_FLOAT, ARMCI_DOUBLE };

int  armci_msg_me(void);
int  armci_msg_nproc(void);
void armci_msg_abort(int code);
double armci_timer(void);

void armci_msg_snd(int tag, void *buffer, int len, int to);
void armci_msg_rcv(int tag, void *buffer, int buflen, int *msglen, int from);
int  armci_msg_rcvany(int tag, void *buffer, int buflen, int *msglen);

void armci_msg_barrier(void);
void armci_msg_bintree(int scope, int *Root, int *Up, int *Left, int *Right);
void armci_msg_sel(void *x, int n, char *op, int type, int contribute);
void armci_msg_sel_scope(int scope, void *x, int n, char *op, int type, int contribute);
void armci_msg_bcast(void *buffer, int len, int root);
void armci_msg_brdcst(void *buffer, int len, int root);
void armci_msg_bcast_scope(int scope, void *buffer, int len, int root);

void armci_msg_gop_scope(int scope, void *x, int n, char *op, int type);
void armci_msg_igop(int *x, int n, char *op);
void armci_msg_lgop(long *x, int n, char *op);
void armci_msg_llgop(long long *x, int n, char *op);
void armci_msg_fgop(float *x, int n, char *op);
void armci_msg_dgop(double *x, int n, char *op);

void armci_msg_group_barrier(ARMCI_Group *group);
void armci_msg_group_bcast_scope(int scope, void *buf, int len, int root, ARMCI_Group *group);
void armci_msg_group_gop_scope(int scope, void *x, int n, char *op, int type, ARMCI_Group *group);
void armci_msg_group_igop(int *x, int n, char *op, ARMCI_Group *group);
void armci_msg_group_lgop(long *x, int n, char *op, ARMCI_Group *group);
void armci_msg_group_llgop(long long *x, int n, char *op, ARMCI_Group *group);
void armci_msg_group_fgop(float *x, int n, char *op, ARMCI_Group *group);
void armci_msg_group_dgop(double *x, int n, char *op, ARMCI_Group *group);

#ifdef __cplusplus
}
#endif

#endif /* HAVE_ARMCI_MSG_H */
