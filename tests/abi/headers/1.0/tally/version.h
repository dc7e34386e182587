/* tally/version.h — the version of the tally headers a program is compiled against.
 *
 * The one place the version is written (CMakeLists.txt reads it from here).
 * tally_get_version() (tally/tally.h) gives the library's at run time; a program
 * compares the two to learn what it runs against. README.md, "Versions", says
 * what a release of each kind may change. Needs no MPI.
 */
#ifndef TALLY_VERSION_H
#define TALLY_VERSION_H

#define TALLY_VERSION_MAJOR 1
#define TALLY_VERSION_MINOR 0
#define TALLY_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH, for #if. */
#define TALLY_VERSION (TALLY_VERSION_MAJOR * 10000 + TALLY_VERSION_MINOR * 100 + TALLY_VERSION_PATCH)

#endif /* TALLY_VERSION_H */
