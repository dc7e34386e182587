/* tally/export.h — symbol visibility for libtally (built with hidden visibility). */
#ifndef TALLY_EXPORT_H
#define TALLY_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define TALLY_API __attribute__((visibility("default")))
#else
#define TALLY_API
#endif

#endif /* TALLY_EXPORT_H */
