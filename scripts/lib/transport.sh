# shellcheck shell=bash
# scripts/lib/transport.sh — the one table that turns a transport name into MPI
# launcher settings. Sourced by bench/run-local, jobs/lib/tally-job.sh,
# scripts/calibrate-sim and the tests' scripts; never run.
#
#   shm   shared memory, one node: pml ob1, btl self,vader; one-sided through
#         osc/sm (Open MPI 4.1.4's default osc/rdma over vader crashes on
#         MPI_Compare_and_swap here: docs/design.md, "Known environment issue")
#   tcp   Ethernet: pml ob1, btl self,tcp [btl_tcp_if_include IF]; one-sided
#         through osc/ucx restricted to UCX's TCP transport (UCX_TLS=tcp,self;
#         UCX_NET_DEVICES=IF for interface names), osc/pt2pt without UCX. On one
#         node osc/sm and osc/rdma would use shared memory and never touch TCP.
#         No shared-memory windows: topology::automatic runs flat (one rank per
#         "node" is what this transport emulates).
#   shm+tcp  Ethernet between nodes, shared memory inside a node: pml ob1,
#         btl self,vader,tcp [btl_tcp_if_include IF]; one-sided through osc/ucx on
#         UCX's TCP and shared-memory transports (UCX_TLS=tcp,self,sm), which works
#         across nodes where osc/sm cannot and osc/rdma needs RDMA; osc/sm first
#         for windows inside one node (it declines any window with a remote peer),
#         which MPI_Win_allocate_shared needs: osc/ucx and osc/pt2pt cannot make one
#   ucx   InfiniBand or any UCX fabric: pml ucx, osc sm,ucx (sm as for shm+tcp)
#   auto  the MPI library's own choice (and OMPI_MCA_* already in the environment)
#
# tally_transport NAME [IF]   sets TALLY_MCA=(name=value ...) and exports UCX_TLS /
#                             UCX_NET_DEVICES where the transport needs them (a value
#                             already in the environment wins); returns 2 with a
#                             message for an unknown name
# tally_mca_args              prints TALLY_MCA as mpirun arguments, one per line
#                             (--mca NAME VALUE; -x VAR=VALUE for the UCX variables set)
# tally_mca_export            exports TALLY_MCA as OMPI_MCA_* (for srun, or any
#                             launcher that passes the environment on)
# tally_mpi_local_env         exports what Open MPI needs on this machine: running
#                             as root, more ranks than cores
# tally_log_errors FILE       prints the lines of a run's log that report a transport
#                             or MPI failure (UCX errors such as "Endpoint timeout",
#                             BTL/PML errors, aborts, signals); status 0 if any

tally_transports='shm tcp shm+tcp ucx auto'

tally_transport() {
  local name=${1:-} tcp_if=${2:-}
  TALLY_MCA=()
  case "$name" in
    shm) TALLY_MCA=(pml=ob1 'btl=self,vader' 'osc=sm,pt2pt') ;;
    tcp)
      TALLY_MCA=(pml=ob1 'btl=self,tcp' 'osc=ucx,pt2pt')
      export UCX_TLS="${UCX_TLS:-tcp,self}"
      if [[ -n "$tcp_if" ]]; then
        TALLY_MCA+=("btl_tcp_if_include=$tcp_if")
        # UCX takes interface names, not CIDRs.
        [[ "$tcp_if" == */* ]] || export UCX_NET_DEVICES="${UCX_NET_DEVICES:-$tcp_if}"
      fi
      ;;
    shm+tcp)
      TALLY_MCA=(pml=ob1 'btl=self,vader,tcp' 'osc=sm,ucx,pt2pt')
      export UCX_TLS="${UCX_TLS:-tcp,self,sm}"
      [[ -z "$tcp_if" ]] || TALLY_MCA+=("btl_tcp_if_include=$tcp_if")
      ;;
    ucx) TALLY_MCA=(pml=ucx 'osc=sm,ucx') ;;
    auto) ;;
    *)
      printf "transport '%s' is not one of: %s\n" "$name" "$tally_transports" >&2
      return 2
      ;;
  esac
}

tally_mca_args() {
  local kv v
  for kv in "${TALLY_MCA[@]}"; do
    printf '%s\n' --mca "${kv%%=*}" "${kv#*=}"
  done
  for v in UCX_TLS UCX_NET_DEVICES; do
    [[ -z "${!v:-}" ]] || printf '%s\n' -x "$v=${!v}"
  done
}

tally_mca_export() {
  local kv
  for kv in "${TALLY_MCA[@]}"; do
    export "OMPI_MCA_${kv%%=*}=${kv#*=}"
  done
}

tally_mpi_local_env() {
  if [[ "$(id -u)" -eq 0 ]]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  export OMPI_MCA_rmaps_base_oversubscribe=1
}

# What an MPI or transport failure prints, in Open MPI, UCX and MPICH logs. A run
# whose exit status is 0 can still have hit one (a retried UCX endpoint, a BTL
# falling back), and its numbers are then not the transport's.
tally_log_error_re='UCX +ERROR|Endpoint timeout|\bbtl_[a-z]+_[a-z_]*: .*[Ee]rror|mca_[a-z]+_[a-z_]+.*(failed|error)|MPI_ABORT|MPI_Abort|ORTE has lost|PMIX ERROR|Fatal error in|[Ss]egmentation fault|signal [0-9]+ \(|Assertion .* failed|terminate called'

tally_log_errors() {
  grep -E -- "$tally_log_error_re" "$1"
}
