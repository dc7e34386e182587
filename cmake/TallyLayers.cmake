# The layers of the tree, enforced by include paths (docs/design.md, "Layers").
#
# tally_layer(<name> <prefix>=<folder>...) makes the INTERFACE target
# tally_layer_<name>, whose one include directory holds a link named <prefix> to each
# <folder> (relative to the source tree) and nothing else. A target of that layer
# takes its include paths from it alone, so `#include "<prefix>/..."` compiles for
# the prefixes its layer may use, and an include that points up the stack does not
# (tests/layers proves it).
function(tally_layer name)
  set(root ${PROJECT_BINARY_DIR}/layers/${name})
  file(REMOVE_RECURSE ${root})
  file(MAKE_DIRECTORY ${root})
  foreach(entry IN LISTS ARGN)
    string(REPLACE "=" ";" pair "${entry}")
    list(GET pair 0 prefix)
    list(GET pair 1 folder)
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${root}/${prefix} SYMBOLIC)
  endforeach()
  add_library(tally_layer_${name} INTERFACE)
  target_include_directories(tally_layer_${name} INTERFACE ${root})
endfunction()

# From the bottom up. Each layer names what it may include; the public headers
# (tally/) reach the runtime and everything above it through the tally target.
tally_layer(core    core=src/core)                      # the protocol: no MPI, threads, clocks
tally_layer(check   core=src/core check=src/check)      # the explicit-state checker, replays
tally_layer(sim     core=src/core sim=src/sim)          # the discrete-event simulator
tally_layer(runtime core=src/core runtime=src/runtime)  # libtally (+ tally/)
tally_layer(helpers helpers=helpers)                    # benchmarks' and examples' helpers (+ tally/)
tally_layer(bench   core=src/core helpers=helpers)      # tally_bench (+ tally/)
