// Bias add and its gradient (the column sum), scalar reference.
#include "scalar.h"

// y (rows, n) += b (n) on every row.
void clef_f32_bias_add__scalar(int rows, int n, const float *b, float *y)
{
    for (int r = 0; r < rows; r++) {
        float *yr = y + (size_t)r * n;
        for (int c = 0; c < n; c++)
            yr[c] += b[c];
    }
}

// db (n) += Σ_rows dy (rows, n). Each column owns its sum: accumulated in
// float from zero over increasing rows, then added to db once.
void clef_f32_colsum__scalar(int rows, int n, const float *dy, float *db)
{
    for (int c = 0; c < n; c++) {
        float acc = 0.0f;
        for (int r = 0; r < rows; r++)
            acc += dy[(size_t)r * n + c];
        db[c] += acc;
    }
}
