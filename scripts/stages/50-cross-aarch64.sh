# Stage: the NEON kernels, cross-built for aarch64 and checked against the
# scalar reference under qemu-aarch64 (scripts/cross-test). Sourced by
# scripts/test, which provides `stage`.
stage cross-aarch64 ./scripts/cross-test
