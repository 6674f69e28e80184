// Error reporting: every failure carries an exit code and one message that
// names the file, the record, the field and the rule that was broken.
#ifndef CLEF_ERR_H
#define CLEF_ERR_H

enum {
    CLEF_OK = 0,
    CLEF_ERR_RUN = 1,   // a failure while running (non-finite loss, I/O)
    CLEF_ERR_INPUT = 2, // bad usage or bad input: nothing is written
};

typedef struct clef_err {
    int code;
    char msg[1024];
} clef_err;

// Sets err (if non-NULL) and returns code. printf-style message.
int clef_err_set(clef_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

// The usual input error: "FILE: record ID: field FIELD: RULE". Any of file,
// record or field may be NULL and is then left out.
int clef_err_input(clef_err *err, const char *file, const char *record,
                   const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
