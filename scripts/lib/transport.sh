# shellcheck shell=bash
# scripts/lib/transport.sh — turns a transport name into MPI launcher settings,
# from the one table of them, scripts/lib/transports.tsv. Sourced by
# bench/run-local, jobs/lib/tally-job.sh, scripts/calibrate-sim and the tests'
# scripts; never run.
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
# With MPICH (TALLY_MPI_FLAVOR=mpich, or an $MPIEXEC whose --version says MPICH/
# HYDRA) the same names mean: shm, MPICH's default inside a node (ch4 shared
# memory); tcp, MPIR_CVAR_NOLOCAL=1 (no shared-memory path) and UCX on TCP; shm+tcp,
# UCX on TCP between nodes; ucx and auto, MPICH's own choice. MPICH takes no --mca:
# its settings are environment variables, which TALLY_ENV lists.
#
# tally_mpi_flavor [MPIEXEC]  prints openmpi, mpich or other (from MPIEXEC --version;
#                             $TALLY_MPI_FLAVOR wins)
# tally_transport NAME [IF]   sets TALLY_MCA=(name=value ...) for Open MPI or
#                             TALLY_ENV=(VAR=value ...) for MPICH, and exports UCX_TLS
#                             / UCX_NET_DEVICES where the transport needs them (a
#                             value already in the environment wins); returns 2 with
#                             a message for an unknown name
# tally_mca_args              prints the launcher arguments, one per line: Open MPI
#                             --mca NAME VALUE and -x VAR=VALUE for the UCX variables;
#                             MPICH's hydra -genv VAR VALUE
# tally_mca_export            exports TALLY_MCA as OMPI_MCA_* and TALLY_ENV as itself
#                             (for srun, or any launcher that passes the environment on)
# tally_mpi_local_env         exports what Open MPI needs on this machine: running
#                             as root, more ranks than cores
# tally_log_teardown_only FILE  prints FILE's error lines when all are UCX's
#                             disconnect race at MPI_Finalize, after the last
#                             benchmark; fails otherwise
# tally_log_errors FILE       prints the lines of a run's log that report a transport
#                             or MPI failure (UCX errors such as "Endpoint timeout",
#                             BTL/PML errors, aborts, signals); status 0 if any

# The table (scripts/lib/transports.tsv) sits beside this file.
tally_transport_table="$(dirname "${BASH_SOURCE[0]}")/transports.tsv"
tally_transports=$(awk '!/^#/ && NF { printf "%s%s", sep, $1; sep = " " }' "$tally_transport_table")

# tally_transport_row NAME: sets tt_pml, tt_btl, tt_osc, tt_ucx_tls and tt_mpich_env
# from NAME's row ("" for "-"); returns 1 for a name the table lacks.
tally_transport_row() {
  local name pml btl osc ucx mpich
  while read -r name pml btl osc ucx mpich; do
    [[ -n "$name" && "$name" != \#* && "$name" == "$1" ]] || continue
    tt_pml=${pml#-} tt_btl=${btl#-} tt_osc=${osc#-} tt_ucx_tls=${ucx#-} tt_mpich_env=${mpich#-}
    return 0
  done <"$tally_transport_table"
  return 1
}

tally_mpi_flavor() {
  if [[ -n "${TALLY_MPI_FLAVOR:-}" ]]; then
    printf '%s\n' "$TALLY_MPI_FLAVOR"
    return
  fi
  local version
  version=$("${1:-${MPIEXEC:-mpiexec}}" --version 2>&1 || true)
  case "$version" in
    *"Open MPI"* | *OpenRTE*) echo openmpi ;;
    *HYDRA* | *MPICH*) echo mpich ;;
    *) echo other ;;
  esac
}

tally_transport() {
  local name=${1:-} tcp_if=${2:-}
  TALLY_MCA=()
  TALLY_ENV=()
  if ! tally_transport_row "$name"; then
    printf "transport '%s' is not one of: %s\n" "$name" "$tally_transports" >&2
    return 2
  fi
  # An interface goes to UCX only as a name (UCX takes no CIDR), and with Open MPI
  # only for tcp, where UCX carries every one-sided operation.
  local ucx_if=
  [[ -z "$tcp_if" || "$tcp_if" == */* || "$name" != *tcp ]] || ucx_if=$tcp_if
  if [[ "$(tally_mpi_flavor "${MPIEXEC:-mpiexec}")" == mpich ]]; then
    [[ -z "$tt_mpich_env" ]] || TALLY_ENV+=("$tt_mpich_env")
    [[ -z "$tt_ucx_tls" ]] || TALLY_ENV+=("UCX_TLS=${UCX_TLS:-$tt_ucx_tls}")
    [[ -z "$ucx_if" ]] || TALLY_ENV+=("UCX_NET_DEVICES=${UCX_NET_DEVICES:-$ucx_if}")
    return 0
  fi
  [[ -z "$tt_pml" ]] || TALLY_MCA+=("pml=$tt_pml")
  [[ -z "$tt_btl" ]] || TALLY_MCA+=("btl=$tt_btl")
  [[ -z "$tt_osc" ]] || TALLY_MCA+=("osc=$tt_osc")
  [[ -z "$tt_ucx_tls" ]] || export UCX_TLS="${UCX_TLS:-$tt_ucx_tls}"
  [[ -z "$tcp_if" || "$tt_btl" != *tcp* ]] || TALLY_MCA+=("btl_tcp_if_include=$tcp_if")
  [[ -z "$ucx_if" || "$name" != tcp ]] || export UCX_NET_DEVICES="${UCX_NET_DEVICES:-$ucx_if}"
}

tally_mca_args() {
  local kv v
  if [[ "$(tally_mpi_flavor "${MPIEXEC:-mpiexec}")" == mpich ]]; then
    for kv in "${TALLY_ENV[@]}"; do
      printf '%s\n' -genv "${kv%%=*}" "${kv#*=}"
    done
    return 0
  fi
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
  for kv in "${TALLY_ENV[@]}"; do
    export "${kv?}"
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

# UCX's endpoint close at MPI_Finalize over TCP sometimes fails its flush ("error
# during flush: Endpoint timeout", then "disconnect failed"; apparently the peer had
# closed its side first): Open MPI 4.1's osc/ucx with UCX 1.13, in 4 of 7 full
# bench/run-local runs here (tcp, 4 ranks on 2 cores). After the last result it
# changes no figure (docs/benchmarks.md).
tally_log_teardown_re='error during flush: Endpoint timeout|disconnect failed: Endpoint timeout'

# Prints LOG's error lines when every one of them is that teardown race and comes
# after the last finished benchmark (a line starting BM_); fails otherwise.
tally_log_teardown_only() {
  local last errs
  last=$(grep -n '^BM_' "$1" | tail -n 1 | cut -d: -f1)
  errs=$(grep -n -E -- "$tally_log_error_re" "$1") || return 1
  [ -n "$last" ] || return 1
  ! grep -v -E -- "$tally_log_teardown_re" <<<"$errs" >/dev/null || return 1
  while IFS=: read -r n _; do ((n > last)) || return 1; done <<<"$errs"
  cut -d: -f2- <<<"$errs"
}
