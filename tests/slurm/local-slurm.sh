# shellcheck shell=bash
# A private, single-node Slurm cluster on loopback for tests (sourced, never run).
#
# local_slurm_start DIR [EMU...]
#                         starts munged, slurmctld and slurmd with every file under DIR
#                         (an empty private directory): own munge key and socket, own
#                         slurm.conf, state, spool, logs, TmpFS, and free TCP ports.
#                         Exports SLURM_CONF so that sbatch/squeue/scontrol talk to this
#                         cluster only, and LOCAL_SLURM_NODE (the first node's name).
#                         Without EMU: one node, this host, on loopback. With EMU (the
#                         words of a scripts/emu-cluster command for a cluster that is
#                         up): one slurmd per emulated node, in the node's namespaces,
#                         and slurmctld here on the bridge's host address.
# local_slurm_stop        cancels its jobs, stops the daemons by PID and ends any
#                         process still carrying this cluster's marker. Safe to call
#                         more than once, and after a partial start.
# local_slurm_env         prints NAME=VALUE words to put before commands whose
#                         processes (e.g. submitted jobs) must be ended by
#                         local_slurm_stop if they outlive the test.
# The system's own Slurm and munge configuration is never read or changed.

LOCAL_SLURM_DIR=''

_ls_log() { printf 'local-slurm: %s\n' "$*" >&2; }

# True when a TCP socket on this host is bound to port $1 (any address, any state).
_ls_port_used() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v h=":$hex" 'NR > 1 && substr($2, length($2) - 4) == h { found = 1 } END { exit !found }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# Prints two free consecutive ports, starting from Slurm's defaults 6817/6818.
_ls_free_ports() {
  local p
  for ((p = 6817; p < 6817 + 2000; p += 2)); do
    if ! _ls_port_used "$p" && ! _ls_port_used "$((p + 1))"; then
      echo "$p $((p + 1))"
      return 0
    fi
  done
  return 1
}

# Alive and not a zombie.
_ls_alive() {
  local state
  [[ -r "/proc/$1/stat" ]] || return 1
  state=$(sed -n 's/^[0-9]* (.*) \([A-Za-z]\) .*/\1/p' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n "$state" && "$state" != Z && "$state" != X ]]
}

# _ls_wait_for SECONDS COMMAND [ARGS...]: polls COMMAND every 0.1 s until it succeeds;
# fails after SECONDS.
_ls_wait_for() {
  local tenths=$(($1 * 10)) i
  shift
  for ((i = 0; i < tenths; i++)); do
    if "$@"; then return 0; fi
    sleep 0.1
  done
  return 1
}

_ls_munge_ok() { munge -S "$1" -n 2>/dev/null | unmunge -S "$1" >/dev/null 2>&1; }
_ls_ctld_up() { [[ "$(scontrol ping 2>/dev/null)" == *"is UP"* ]]; }
_ls_node_idle() { [[ "$(sinfo -h -o %T 2>/dev/null | sort -u)" == idle ]]; }
_ls_no_jobs() { [[ -z "$(squeue -h -o %i 2>/dev/null)" ]]; }
_ls_gone() { ! _ls_alive "$1"; }

# PIDs of processes whose environment carries this cluster's marker.
_ls_marked_pids() {
  local marker="TALLY_LOCAL_SLURM=$LOCAL_SLURM_DIR" f pid
  for f in /proc/[0-9]*/environ; do
    pid=${f#/proc/}
    pid=${pid%/environ}
    [[ "$pid" != "$$" && "$pid" != "$BASHPID" ]] || continue
    if grep -qzxF -- "$marker" "$f" 2>/dev/null; then
      echo "$pid"
    fi
  done
}

local_slurm_env() {
  printf 'TALLY_LOCAL_SLURM=%s\n' "$LOCAL_SLURM_DIR"
}

local_slurm_start() {
  local dir=$1 host ports ctld_port slurmd_port node_line first_job ctld_addr
  shift
  local -a emu=("$@") nodes=() addrs=()
  local i
  LOCAL_SLURM_DIR=$(cd -- "$dir" && pwd -P)
  dir=$LOCAL_SLURM_DIR

  # munged insists on a world-searchable socket directory and a private key directory.
  chmod 0755 "$dir"
  if ! runuser -u munge -- test -x "$dir"; then
    _ls_log "user munge cannot reach $dir; every parent directory must be searchable"
    return 1
  fi
  install -d -o munge -g munge -m 0755 "$dir/munge"
  install -d -o munge -g munge -m 0700 "$dir/munge/private"
  install -d -m 0755 "$dir/state" "$dir/spool" "$dir/log" "$dir/run"
  install -d -m 1777 "$dir/tmp"
  head -c 1024 /dev/urandom >"$dir/munge/private/munge.key"
  chown munge:munge "$dir/munge/private/munge.key"
  chmod 0400 "$dir/munge/private/munge.key"

  env "TALLY_LOCAL_SLURM=$dir" runuser -u munge -- /usr/sbin/munged \
    --socket="$dir/munge/munge.socket" \
    --key-file="$dir/munge/private/munge.key" \
    --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/munge/private/munged.log" \
    --seed-file="$dir/munge/private/munged.seed" ||
    { _ls_log "munged failed to start"; return 1; }
  if ! _ls_wait_for 20 _ls_munge_ok "$dir/munge/munge.socket"; then
    _ls_log "munged does not answer on $dir/munge/munge.socket"
    return 1
  fi

  ports=$(_ls_free_ports) || { _ls_log "no free TCP port pair found"; return 1; }
  read -r ctld_port slurmd_port <<<"$ports"
  # The node as slurmd sees it, minus the boot-time-dependent and memory fields.
  node_line=$(slurmd -C | sed -n 1p | sed -e 's/ UpTime=[^ ]*//' -e 's/ RealMemory=[^ ]*//')
  [[ "$node_line" == NodeName=* ]] || { _ls_log "unexpected 'slurmd -C' output: $node_line"; return 1; }
  host=${node_line#NodeName=}
  host=${host%% *}
  ctld_addr=127.0.0.1
  local nodes_conf="$node_line NodeAddr=127.0.0.1 State=UNKNOWN" name addr
  if ((${#emu[@]} > 0)); then
    while read -r name addr; do
      nodes+=("$name")
      addrs+=("$addr")
    done < <("${emu[@]}" nodes)
    ((${#nodes[@]} > 0)) || { _ls_log "the emulated cluster has no nodes"; return 1; }
    ctld_addr=${addrs[0]%.*}.1
    nodes_conf=''
    for ((i = 0; i < ${#nodes[@]}; i++)); do
      nodes_conf+="${node_line/NodeName=$host/NodeName=${nodes[i]}} NodeAddr=${addrs[i]} State=UNKNOWN"$'\n'
      install -d -m 1777 "$dir/tmp/${nodes[i]}"
    done
  else
    nodes=("$host")
  fi
  LOCAL_SLURM_NODE=${nodes[0]}
  export LOCAL_SLURM_NODE
  : >"$dir/plugstack.conf"
  first_job=$((1000 + RANDOM % 90000))
  cat >"$dir/slurm.conf" <<EOF
# Generated by tally's tests/slurm/local-slurm.sh; private to $dir.
ClusterName=tallytest
SlurmctldHost=$host($ctld_addr)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
# Generous timeouts: a loaded 2-core CI machine can starve the daemons for seconds.
MessageTimeout=60
TCPTimeout=10
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=600
SchedulerParameters=batch_sched_delay=0
EnforcePartLimits=ALL
PlugStackConfig=$dir/plugstack.conf
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
# Job-scoped files (PMIx) here, one folder per node (two slurmstepds of one job
# would collide in a shared one), and job ids unlikely to match another cluster's.
TmpFS=$dir/tmp$( ((${#emu[@]} > 0)) && echo /%n)
FirstJobId=$first_job
$nodes_conf
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF="$dir/slurm.conf"

  env "TALLY_LOCAL_SLURM=$dir" slurmctld -i || { _ls_log "slurmctld failed to start"; return 1; }
  if ! _ls_wait_for 30 _ls_ctld_up; then
    _ls_log "slurmctld is not UP after 30 s"
    return 1
  fi
  for name in "${nodes[@]}"; do
    install -d -m 0755 "$dir/spool/$name"
    if ((${#emu[@]} > 0)); then
      # In the node's network namespace and with its hostname (emu-cluster exec).
      "${emu[@]}" exec "$name" -- env "TALLY_LOCAL_SLURM=$dir" "SLURM_CONF=$SLURM_CONF" \
        slurmd -N "$name" || { _ls_log "slurmd on $name failed to start"; return 1; }
    else
      env "TALLY_LOCAL_SLURM=$dir" slurmd -N "$name" || { _ls_log "slurmd failed to start"; return 1; }
    fi
  done
  if ! _ls_wait_for 30 _ls_node_idle; then
    _ls_log "nodes are not idle after 30 s: $(sinfo -h -o '%N %T %E' 2>&1)"
    return 1
  fi
  _ls_log "up: ${nodes[*]}, ports $ctld_port/$slurmd_port, SLURM_CONF=$SLURM_CONF"
}

# Prints the daemon logs (for failure reports).
local_slurm_dump_logs() {
  local f
  [[ -n "$LOCAL_SLURM_DIR" ]] || return 0
  for f in "$LOCAL_SLURM_DIR"/log/slurmctld.log "$LOCAL_SLURM_DIR"/log/slurmd-*.log; do
    [[ -f "$f" ]] || continue
    echo "----- $f (last 40 lines)"
    tail -n 40 "$f"
  done
}

# Returns 1 when something could not be stopped.
local_slurm_stop() {
  local dir=$LOCAL_SLURM_DIR pid name f ids rc=0
  [[ -n "$dir" ]] || return 0
  if [[ -f "$dir/run/slurmctld.pid" ]] && _ls_alive "$(cat "$dir/run/slurmctld.pid")"; then
    ids=$(squeue -h -o %i 2>/dev/null || true)
    if [[ -n "$ids" ]]; then
      # shellcheck disable=SC2086 # job ids, one per word
      scancel $ids 2>/dev/null || true
      _ls_wait_for 15 _ls_no_jobs ||
        _ls_log "jobs still listed after scancel: $(squeue -h -o '%i %T' 2>&1 | tr '\n' ' ')"
    fi
  fi
  for f in "$dir"/run/slurmd-*.pid "$dir/run/slurmctld.pid" "$dir/munge/munged.pid"; do
    name=${f##*/}
    name=${name%.pid}
    [[ -f "$f" ]] || continue
    pid=$(cat "$f")
    [[ "$pid" =~ ^[0-9]+$ ]] || continue
    _ls_alive "$pid" || continue
    kill -TERM "$pid" 2>/dev/null || true
    if ! _ls_wait_for 10 _ls_gone "$pid"; then
      _ls_log "$name (pid $pid) ignored SIGTERM; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      _ls_wait_for 5 _ls_gone "$pid" || { _ls_log "$name (pid $pid) survives"; rc=1; }
    fi
  done
  # Job steps and ranks outlive slurmd when a job was still running; end them too.
  for pid in $(_ls_marked_pids); do
    _ls_alive "$pid" || continue
    _ls_log "ending leftover process $pid: $({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null)"
    kill -KILL "$pid" 2>/dev/null || true
  done
  for pid in $(_ls_marked_pids); do
    if _ls_wait_for 5 _ls_gone "$pid"; then continue; fi
    _ls_log "process $pid survives"
    rc=1
  done
  LOCAL_SLURM_DIR=''
  return "$rc"
}
