# Two "hosts" on one machine, for benchmarks that must cross a network: two network
# namespaces joined by a veth pair, one MPI rank in each, talking over TCP (OpenMPI's
# TCP BTL, and osc/ucx restricted to TCP for RMA), so nothing is shared-memory between
# the ranks. The same recipe as crates/gaspar/tests/multihost.rs. Needs root, iproute2
# and OpenMPI. Source this file, then:
#   two_hosts_up          make the namespaces (removed at exit, whatever happens)
#   two_hosts_mpirun P A  run program P with arguments A, one rank on each host
#                         (TWO_HOSTS_RANKS=4: two on each, ranks 0 and 2 on the first)
#   two_hosts_mpiexec_mpich P A   the same under MPICH's mpiexec (hydra; ch4:ucx over TCP),
#                         for a program built against MPICH (MPICC=mpicc.mpich)
# A veth round trip costs what a fast network does (an MPI_Get and flush over it took
# 11-22 us here), not what shared memory does (under 1 us).

two_hosts_dir=""
two_hosts_names=()

two_hosts_down() {
    local ns pid
    for ns in "${two_hosts_names[@]}"; do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill -9 "$pid" 2>/dev/null || true
        done
        ip netns del "$ns" 2>/dev/null || true
    done
    [ -n "$two_hosts_dir" ] && rm -rf "$two_hosts_dir"
    two_hosts_names=()
}

two_hosts_up() {
    local a="gsb$$a" b="gsb$$b" ns
    two_hosts_names=("$a" "$b")
    trap two_hosts_down EXIT
    for ns in "$a" "$b"; do
        ip netns add "$ns"
        ip -n "$ns" link set lo up
    done
    ip link add veth0 netns "$a" type veth peer name veth0 netns "$b"
    ip -n "$a" addr add 10.233.0.1/24 dev veth0
    ip -n "$b" addr add 10.233.0.2/24 dev veth0
    for ns in "$a" "$b"; do
        ip -n "$ns" link set veth0 up
    done
    # The link comes up asynchronously, and UCX refuses a device that is not up yet:
    # poll its state (ip has nothing to wait on).
    local tries
    for ns in "$a" "$b"; do
        for tries in $(seq 100); do
            ip -n "$ns" link show veth0 | grep -q 'state UP' && break
            [ "$tries" = 100 ] && { echo "veth0 in $ns did not come up" >&2; return 1; }
            sleep 0.1
        done
    done
    two_hosts_dir=$(mktemp -d)
    printf '%s slots=2\n%s slots=2\n' "$a" "$b" > "$two_hosts_dir/hostfile"
    cat > "$two_hosts_dir/agent.sh" <<'AGENT'
#!/bin/sh
host=$1; shift
[ -e "/run/netns/$host" ] || { echo "no netns $host" >&2; exit 1; }
exec ip netns exec "$host" unshare --uts sh -c "hostname $host; $*"
AGENT
    chmod +x "$two_hosts_dir/agent.sh"
}

two_hosts_mpirun() {
    local a=${two_hosts_names[0]}
    ip netns exec "$a" unshare --uts sh -c "hostname $a; exec mpirun --allow-run-as-root \
        --hostfile $two_hosts_dir/hostfile --map-by node -np ${TWO_HOSTS_RANKS:-2} --bind-to none \
        --mca mpi_yield_when_idle 1 --mca plm_rsh_agent $two_hosts_dir/agent.sh \
        --mca btl tcp,self --mca btl_tcp_if_include veth0 --mca oob_tcp_if_include veth0 \
        --mca osc ucx --mca osc_ucx_tls any --mca osc_ucx_devices any \
        -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=veth0 $*"
}

two_hosts_mpiexec_mpich() {
    local a=${two_hosts_names[0]} b=${two_hosts_names[1]}
    # Hydra names the hosts by address (no resolver in the namespaces) and starts each
    # proxy through this agent, which enters the namespace holding the address.
    cat > "$two_hosts_dir/mpich-agent.sh" <<AGENT
#!/bin/sh
while [ "\${1#-}" != "\$1" ]; do shift; done
case "\$1" in
    10.233.0.1) ns=$a ;;
    10.233.0.2) ns=$b ;;
    *) echo "mpich-agent: unknown host \$1" >&2; exit 1 ;;
esac
shift
exec ip netns exec "\$ns" sh -c "\$*"
AGENT
    chmod +x "$two_hosts_dir/mpich-agent.sh"
    printf '10.233.0.1:1\n10.233.0.2:1\n' > "$two_hosts_dir/mpich-hosts"
    ip netns exec "$a" mpiexec.mpich -launcher rsh -launcher-exec "$two_hosts_dir/mpich-agent.sh" \
        -f "$two_hosts_dir/mpich-hosts" -iface veth0 -n 2 -ppn 1 \
        -genv UCX_TLS tcp,self -genv UCX_NET_DEVICES veth0 "$@"
}
