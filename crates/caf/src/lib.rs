//! libcaf_gaspar: the coarray library gfortran programs compiled with `-fcoarray=lib` call
//! (`_gfortran_caf_*`, gfortran 12's ABI), on gaspar's coarray layer. Build a program with
//! `gaspar caf prog.f90` and run it with `gaspar run -n N ./a.out`.
