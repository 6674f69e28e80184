// Bias add and its gradient (the column sum), NEON.
#include "neon.h"
#include "vec.h"

// y (rows, n) += b (n) on every row.
void clef_f32_bias_add__neon(int rows, int n, const float *b, float *y)
{
    for (int r = 0; r < rows; r++) {
        float *yr = y + (size_t)r * n; // (n)
        int c = 0;
        for (; c + 4 <= n; c += 4)
            vst1q_f32(yr + c, vaddq_f32(vld1q_f32(yr + c), vld1q_f32(b + c)));
        for (; c < n; c++)
            yr[c] += b[c];
    }
}

// db (n) += Σ_rows dy (rows, n). Vectorised across columns: each column sums
// from zero over increasing rows (the reference's order), then adds once.
void clef_f32_colsum__neon(int rows, int n, const float *dy, float *db)
{
    int c = 0;
    for (; c + 16 <= n; c += 16) {
        vf s0 = v_zero(), s1 = v_zero(), s2 = v_zero(), s3 = v_zero();
        for (int r = 0; r < rows; r++) {
            const float *g = dy + (size_t)r * n + c;
            s0 = vaddq_f32(s0, vld1q_f32(g));
            s1 = vaddq_f32(s1, vld1q_f32(g + 4));
            s2 = vaddq_f32(s2, vld1q_f32(g + 8));
            s3 = vaddq_f32(s3, vld1q_f32(g + 12));
        }
        vst1q_f32(db + c, vaddq_f32(vld1q_f32(db + c), s0));
        vst1q_f32(db + c + 4, vaddq_f32(vld1q_f32(db + c + 4), s1));
        vst1q_f32(db + c + 8, vaddq_f32(vld1q_f32(db + c + 8), s2));
        vst1q_f32(db + c + 12, vaddq_f32(vld1q_f32(db + c + 12), s3));
    }
    for (; c + 4 <= n; c += 4) {
        vf s = v_zero();
        for (int r = 0; r < rows; r++)
            s = vaddq_f32(s, vld1q_f32(dy + (size_t)r * n + c));
        vst1q_f32(db + c, vaddq_f32(vld1q_f32(db + c), s));
    }
    for (; c < n; c++) {
        float s = 0.0f;
        for (int r = 0; r < rows; r++)
            s += dy[(size_t)r * n + c];
        db[c] += s;
    }
}
