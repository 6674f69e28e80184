// Shape buckets: records grouped by geometry so a batch is records of one
// shape class. A bucket holds records with the same question count and the
// same option count per question; their lengths T are grouped so that, had
// the bucket been executed padded to its longest T, at most `max_waste` of
// every record's padded memory rows would be padding.
//
// clef executes a batch packed (core/acts.h): rows are stacked, never padded,
// so the waste a bucket plan reports is what a padded executor would pay and
// clef does not.
#ifndef CLEF_BUCKETS_H
#define CLEF_BUCKETS_H

#include <stddef.h>

typedef struct clef_geometry {
    int T;           // memory rows
    int Q;           // questions
    const int *nopt; // (Q) options per question
} clef_geometry;

typedef struct clef_bucket_stats {
    int nbuckets;
    size_t real_rows;   // Σ T over the records assigned
    size_t padded_rows; // Σ over buckets of count · longest T
} clef_bucket_stats;

#define CLEF_BUCKET_MAX_WASTE 0.125 // default bound on per-record padding

// Assigns bucket ids (0.., in order of first appearance) to the records with
// use[i] != 0 (use may be NULL: all), −1 to the others. Returns 0, or −1 on
// allocation failure. The bucket a record lands in depends only on the set
// of geometries, never on the order of the records.
int clef_buckets_assign(const clef_geometry *g, int n, const int *use,
                        double max_waste, int *bucket_of,
                        clef_bucket_stats *st);

// padded_rows − real_rows over padded_rows (0 when nothing is assigned).
double clef_bucket_waste(const clef_bucket_stats *st);

#endif
