//! SPSC slot rings over heap, shared memory or RDMA memory: all ring atomics and the spin-then-block wait
