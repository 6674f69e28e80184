// Row gather and its backward, written once against the vf layer.
//   gather_rows:      Y (nidx, n)[i] = X[idx[i]]
//   scatter_add_rows: dX[idx[i]] += dY[i], increasing i (bitwise the reference)
