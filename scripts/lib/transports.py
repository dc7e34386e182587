"""scripts/lib/transports.py — scripts/lib/transports.tsv for Python tools.

read() gives {name: {"pml", "btl", "osc", "ucx_tls", "mpich_env"}} with "" for
nothing set; mca(row) the Open MPI parameters a row sets; name_of(pml, btl) the
transport whose Open MPI settings those are (the table read backwards: a run's
context records its settings, not always the name it was launched with).
"""
import os

LIB = os.path.dirname(os.path.abspath(__file__))  # scripts/lib
TABLE = os.path.join(LIB, "transports.tsv")
COLUMNS = ("pml", "btl", "osc", "ucx_tls", "mpich_env")


def read(path=TABLE):
    rows = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            if len(words) != 1 + len(COLUMNS):
                raise ValueError(f"{path}: {line.strip()!r} does not have {1 + len(COLUMNS)} columns")
            rows[words[0]] = {k: ("" if v == "-" else v) for k, v in zip(COLUMNS, words[1:])}
    return rows


def mca(row):
    return {k: row[k] for k in ("pml", "btl", "osc") if row[k]}


def components(btl):
    """A btl list as a set; Open MPI 5's "sm" is 4.x's "vader"."""
    return {"vader" if c == "sm" else c for c in btl.split(",") if c}


def name_of(pml, btl, table=None):
    """The transport launched with Open MPI's pml and btl as a run recorded them
    ("default" where it set none): the row with that pml whose btl list has the
    same components, or sets none; a run that set no pml, the row with its btl list;
    "default" if no row matches."""
    for name, row in (table or read()).items():
        same_btl = bool(row["btl"]) and components(row["btl"]) == components(btl)
        if (row["pml"] and row["pml"] == pml and (same_btl or not row["btl"])) or \
                (pml == "default" and same_btl):
            return name
    return "default"
