// clef: train, score, validate, fixture, inspect, capture, report (CLI.md).
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_mpi.h"

static const char *usage =
    "usage: clef <command> [flags]\n"
    "\n"
    "commands:\n"
    "  train     train a head on a package's train records\n"
    "  sweep     many trainings over one shared package, with a leaderboard\n"
    "  score     print one ranked reply per question (JSON lines)\n"
    "  validate  check a package against every rule and summarise it\n"
    "  fixture   write a synthetic package (the seed walkthrough's)\n"
    "  inspect   list a safetensors file's tensors and metadata\n"
    "  capture   turn labelled requests into a package through a backbone\n"
    "  report    write a self-contained HTML report of a run or sweep dir\n"
    "\n"
    "clef <command> --help describes a command; clef --version prints the\n"
    "version and the kernels of this build.\n"
    "exit codes: 0 success, 1 failure while running, 2 bad usage or input.\n";

static int run_command(int argc, char **argv);

// Under mpirun / srun, train and sweep join MPI (cli/mpi.h); a build without
// MPI refuses every command there (exit 2) rather than run N copies.
int main(int argc, char **argv)
{
    const char *cmd = argc >= 2 ? argv[1] : "";
    const int dist = !strcmp(cmd, "train") || !strcmp(cmd, "sweep");
    if (dist || (!cli_mpi_built() && cli_mpi_launched())) {
        int rc = cli_mpi_start(&argc, &argv);
        if (rc)
            return rc;
    }
    int rc = run_command(argc, argv);
    cli_mpi_end();
    return rc;
}

static int run_command(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return CLEF_ERR_INPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("clef %s\n", CLEF_VERSION);
        cli_print_backends();
        printf("mpi: %s\n", cli_mpi_built() ? "yes (train and sweep under "
                                              "mpirun or srun)"
                                            : "no (built without MPI)");
        return 0;
    }
    if (!strcmp(cmd, "train"))
        return cli_train(argc - 2, argv + 2);
    if (!strcmp(cmd, "sweep"))
        return cli_sweep(argc - 2, argv + 2);
    if (!strcmp(cmd, "score"))
        return cli_score(argc - 2, argv + 2);
    if (!strcmp(cmd, "validate"))
        return cli_validate(argc - 2, argv + 2);
    if (!strcmp(cmd, "fixture"))
        return cli_fixture(argc - 2, argv + 2);
    if (!strcmp(cmd, "inspect"))
        return cli_inspect(argc - 2, argv + 2);
    if (!strcmp(cmd, "capture"))
        return cli_capture(argc - 2, argv + 2);
    if (!strcmp(cmd, "report"))
        return cli_report(argc - 2, argv + 2);
    fprintf(stderr, "clef: unknown command \"%s\"\n\n%s", cmd, usage);
    return CLEF_ERR_INPUT;
}
