/* The test programs' check: on failure, ARMCI_Error ends the job with the message. */
#ifndef GASPAR_TEST_CHECK_H
#define GASPAR_TEST_CHECK_H

#include <armci.h>
#include <stdio.h>

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            char msg_[256];                                                \
            snprintf(msg_, sizeof msg_, __VA_ARGS__);                      \
            ARMCI_Error(msg_, 1);                                          \
        }                                                                  \
    } while (0)

#endif
