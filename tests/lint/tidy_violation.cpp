// A redundant expression: lint.tidy.catches runs clang-tidy on this with the tree's
// .clang-tidy and expects a finding, so that a silent tidy (checks gone, config not
// found) cannot pass for a clean one.
int twice_nothing(int a) { return a - a; }
