//! PNG plots (filled in below).
