//! The C ABI of the session life cycle
