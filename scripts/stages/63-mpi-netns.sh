# Sourced by scripts/test (uses its `stage`). MPI between two hosts (issue
# 21): data-parallel clef train and the distributed clef sweep, with one rank
# on each of two "hosts" made of Linux network namespaces joined by a veth
# pair, so the ranks can only talk over Open MPI's TCP transport. The results
# must be the same bits as on one host (one host: 62-mpi.sh). Skips when
# something it needs is missing (ip netns, unshare, mpirun, an MPI build).
#
# The Open MPI options (ns_mpirun):
#   --host A,B            one slot on each host: rank 0 on A, rank 1 on B
#   --mca plm_rsh_agent   Open MPI starts its daemon (orted) on a remote host
#                         with `AGENT [OPTIONS] HOST COMMAND...`, COMMAND being
#                         a shell command line as for ssh; our agent runs it
#                         in HOST's namespace (mpirun runs in A's, so only B's
#                         daemon goes through the agent)
#   --mca btl tcp,self    no shared memory: the ranks talk over TCP only
#   --mca btl_tcp_if_include, --mca oob_tcp_if_include
#                         MPI traffic and the runtime's own (daemon to mpirun)
#                         both on the veth's /24
#   --bind-to none        each daemon thinks it has the machine to itself and
#                         would bind its rank to core 0: both on one core
#   --mca orte_tmpdir_base
#                         the session directories in the work dir, so that a
#                         killed mpirun leaves none in /tmp
# The two namespaces share the machine's UTS hostname, and Open MPI names its
# nodes and session directories (TMPDIR/ompi.HOSTNAME.UID/pid.N/) after it,
# so both daemons would share one session directory. It happens to work that
# way (ranks on two daemons are not "local" to each other), but mpirun and
# B's daemon each run under `unshare --uts` with a hostname of their own
# (the namespace's name), as two real hosts would have.
# (`--mca btl_base_verbose 30` shows "Using tcp btl for send to ... on node
# 10.211.x.2" and the connect() over the veth; the stage runs quiet.)
# Every command is bounded by timeout and the namespaces are deleted on any
# exit, Ctrl-C and TERM included: the stage cannot hang CI or leave them.

# a subshell: its traps are the stage's own, not those of scripts/test
mpi_netns_stage() { (netns_stage); }
netns_stage() {
    set +e # the tests count their failures; scripts/test's set -e would
    # otherwise be back in force in the traps
    local bin=${BUILD:-build}/bin why
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # not local: the EXIT trap runs after this function has returned
    A=clefA$$ B=clefB$$ net=10.211.$((RANDOM % 200 + 20)) running=
    # `ip netns add` bind-mounts /run/netns onto itself the first time; where
    # it then fails (a chroot: "mount --make-rslave /" refused) the mount
    # stays, and would keep the chroot from being removed
    netns_mounted=0
    mountpoint -q /run/netns 2>/dev/null && netns_mounted=1
    w=$(mktemp -d)
    trap 'netns_down; rm -rf "$w"' EXIT
    trap 'kill "$running" 2>/dev/null; wait "$running"; exit 130' INT TERM HUP
    if why=$(netns_missing "$bin") ||
        { ! why=$(netns_up 2>&1) && why="no network namespaces: $why"; }; then
        echo "skip mpi-netns: $why"
        echo "0 passed, 0 failed, 1 skipped"
        return 0
    fi
    netns_agent >"$w/agent"
    chmod +x "$w/agent"
    local p=0 f=0 s=0
    bounded 60 "$bin/clef" fixture --out "$w/pkg" --records 8 >/dev/null
    netns_train_test
    netns_sweep_test
    echo "$p passed, $f failed, $s skipped"
    [[ $f -eq 0 ]]
}

# Why the stage cannot run here (printed, exit 0), or exit 1 when it can.
netns_missing() {
    local bin=$1
    if ! command -v mpirun >/dev/null; then
        echo "no mpirun"
    elif [[ $("$bin/clef" --version 2>/dev/null) != *$'\nmpi: yes'* ]]; then
        echo "this build has no MPI support"
    elif ! command -v ip >/dev/null; then
        echo "no ip (iproute2)"
    elif ! timeout 10 unshare --uts true 2>/dev/null; then
        echo "unshare --uts refused (no CAP_SYS_ADMIN?)"
    else
        return 1
    fi
}

# ok NAME / no NAME: one test passed / failed
netns_ok() { echo "ok   $1"; p=$((p + 1)); }
netns_no() { echo "FAIL $1"; f=$((f + 1)); }

# bounded SECS CMD...: CMD under timeout, in the background so that a signal
# runs the stage's trap at once (which kills it) instead of after it ends
bounded() {
    local rc=0
    timeout -k 5 "$1" "${@:2}" &
    running=$!
    wait "$running" || rc=$?
    running=
    return "$rc"
}

# Namespaces $A and $B, a veth pair between them (veth0 in each, created in
# place: nothing in our own namespace), $net.1/24 on A and $net.2/24 on B.
netns_up() {
    timeout 10 ip netns add "$A" || return 1
    timeout 10 ip netns add "$B" || return 1
    timeout 10 ip link add veth0 netns "$A" type veth \
        peer name veth0 netns "$B" || return 1
    timeout 10 ip -n "$A" addr add "$net.1/24" dev veth0 &&
        timeout 10 ip -n "$B" addr add "$net.2/24" dev veth0 || return 1
    local ns
    for ns in "$A" "$B"; do
        timeout 10 ip -n "$ns" link set lo up &&
            timeout 10 ip -n "$ns" link set veth0 up || return 1
    done
}

# Deletes the namespaces (their veth goes with them); quiet if never made.
# Unmounts /run/netns when the stage mounted it and no namespace is left.
netns_down() {
    timeout 10 ip netns del "$A" 2>/dev/null || true
    timeout 10 ip netns del "$B" 2>/dev/null || true
    # (no mountpoint test here: without /proc it cannot see a bind mount
    # of the same file system; umount of a plain directory just fails)
    if [[ $netns_mounted == 0 && -d /run/netns &&
        -z $(ls -A /run/netns 2>/dev/null) ]]; then
        timeout 10 umount /run/netns 2>/dev/null || true
    fi
}

# The rsh agent Open MPI runs as `AGENT [OPTIONS] HOST COMMAND...`.
netns_agent() {
    cat <<EOF
#!/bin/sh
while [ \$# -gt 0 ]; do case \$1 in -*) shift ;; *) break ;; esac; done
case \$1 in
$net.1) ns=$A ;;
$net.2) ns=$B ;;
*) echo "agent: unknown host \$1" >&2; exit 1 ;;
esac
shift
exec ip netns exec "\$ns" unshare --uts \\
    sh -c 'hostname "\$0" && exec sh -c "\$1"' "\$ns" "\$*"
EOF
}

# ns_mpirun ARGS...: mpirun -np 2 over the two hosts, run from host A
ns_mpirun() {
    # shellcheck disable=SC2016 # $0 and $@ are for sh
    bounded 120 ip netns exec "$A" unshare --uts \
        sh -c 'hostname "$0" && exec "$@"' "$A" \
        mpirun -np 2 --host "$net.1,$net.2" --bind-to none \
        --mca plm_rsh_agent "$w/agent" --mca btl tcp,self \
        --mca btl_tcp_if_include "$net.0/24" \
        --mca oob_tcp_if_include "$net.0/24" --mca orte_tmpdir_base "$w" "$@"
}

# Data-parallel train on the two hosts: the bits of one rank on one host.
netns_train_test() {
    local tr=(train --package "$w/pkg/package.json" --epochs 2 --batch 4
        --threads 1 --quiet)
    bounded 120 mpirun --oversubscribe --bind-to none -np 1 \
        --mca orte_tmpdir_base "$w" "$bin/clef" "${tr[@]}" --run-dir "$w/d1" \
        >/dev/null 2>&1
    ns_mpirun "$bin/clef" "${tr[@]}" --run-dir "$w/d2" >/dev/null 2>&1
    local ranks
    ranks=$(/usr/bin/python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["data_parallel"]["ranks"])' \
        "$w/d2/result.json" 2>/dev/null)
    if cmp -s "$w/d1/weights.safetensors" "$w/d2/weights.safetensors" &&
        [[ $ranks == 2 ]]; then
        netns_ok "train on 2 hosts over TCP: the bits of 1 rank"
    else
        netns_no "train on 2 hosts over TCP: the bits of 1 rank (ranks $ranks)"
    fi
}

# The distributed sweep on the two hosts: every run the bits of one process.
netns_sweep_test() {
    local sw=(sweep --package "$w/pkg/package.json" --grid "lr=1e-3,3e-3"
        --seeds 2 --epochs 2 --batch 2 --threads-per-run 1 --parallel 1)
    bounded 120 "$bin/clef" "${sw[@]}" --sweep-dir "$w/s1" >/dev/null 2>&1
    local rc=0 out d n=0 same=1
    # not out=$(...): in a subshell, the trap could not stop it
    ns_mpirun "$bin/clef" "${sw[@]}" --sweep-dir "$w/s2" >"$w/s2.out" 2>&1 ||
        rc=$?
    out=$(<"$w/s2.out")
    for d in "$w"/s1/runs/*/; do
        [[ -d $d ]] || continue
        n=$((n + 1))
        cmp -s "$d/weights.safetensors" \
            "$w/s2/runs/$(basename "$d")/weights.safetensors" || same=0
    done
    # 4 runs, 2 of them on rank 1 (host B), each the bits of one process
    if [[ $rc -eq 0 && $n -eq 4 && $same -eq 1 &&
        $(grep -c '^rank 1: run' <<<"$out") -eq 2 ]]; then
        netns_ok "sweep on 2 hosts over TCP: the runs of one process"
    else
        netns_no "sweep on 2 hosts over TCP (exit $rc, $n runs): $(
            head -n 1 <<<"$out")"
    fi
}

stage mpi-netns mpi_netns_stage
