# Sourced by scripts/test (uses its `stage`). Every tracked C file as
# clang-format 14 writes it (.clang-format; regions a file marks
# `// clang-format off` are laid out by hand).
stage format scripts/check-format
