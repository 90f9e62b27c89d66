# Sourced by scripts/install-deps.sh: cargo-afl, which builds the fuzz harness of tests/fuzz
# with AFL++ instrumentation on the stable toolchain and runs AFL++ (it builds its own copy of
# AFL++ from the sources it ships when it is installed). Pinned to the `afl` crate of
# tests/fuzz/Cargo.toml.
CARGO_AFL_VERSION=0.18.2
if ! cargo afl --version 2>/dev/null | grep -q "$CARGO_AFL_VERSION"; then
    echo "install-deps: cargo install cargo-afl@$CARGO_AFL_VERSION"
    cargo install --locked --quiet "cargo-afl@$CARGO_AFL_VERSION"
fi
# AFL++ for this toolchain: built by the install above; "already built" is the usual answer.
if ! afl_out=$(cargo afl config --build 2>&1); then
    echo "$afl_out" | grep -q "already built" || { echo "$afl_out" >&2; exit 1; }
fi
