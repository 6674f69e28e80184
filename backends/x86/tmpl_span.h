// Span mean and its scatter, written once against the vf layer. Vectorised
// over columns with the reference's order (sum over increasing t, then divide;
// scatter adds dY/len row by row): bitwise equal to the scalar kernels.
//   span_mean:    Y (nspan, n)[s] = mean of X (T, n) rows [spans[2s], spans[2s+1])
//   span_scatter: dX[t] += dY[s] / len(s) for t in span s
