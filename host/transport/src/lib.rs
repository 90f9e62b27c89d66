//! Transports (memcpy, shm, udp, rdma) and the session life cycle
