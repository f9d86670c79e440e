"""Resource limits that keep a hostile or absurd model from hanging or exhausting the linter.

Every limit is configurable (``[tool.onnxlint.limits]``) and documented in docs/SECURITY.md.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

#: Protobuf cannot serialise a single message over 2 GiB; a larger file is not a valid model.
PROTOBUF_LIMIT = 2**31 - 1

#: the most subgraph nesting any configuration can allow (see ``Limits.__post_init__``)
MAX_SUBGRAPH_DEPTH_CAP = 256


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = PROTOBUF_LIMIT
    max_subgraph_depth: int = 64
    #: nodes in all graphs and functions, and nodes once model-local functions are
    #: expanded at their call sites (shape inference and ORT inline them); at about 3.5 KB
    #: per node linted for an EP, 200,000 keeps any file under 100 MB within 1 GiB (a
    #: 250,000-node chain peaked at 910 MB with --ep qnn, 400,000 at 1.13 GB without EP)
    max_nodes: int = 200_000
    max_dim: int = 2**40  # a dim above this is treated as a bogus claim in cost estimates
    #: initializers and sparse initializers in all graphs (10^6 tiny ones took 160 s, 2.45 GB)
    max_initializers: int = 250_000
    #: value_info entries in all graphs and functions
    max_value_info: int = 4_000_000
    #: inputs plus outputs of one graph or function (an If declaring 10^6 outputs took 2 GB)
    max_graph_io: int = 65_536
    #: inputs plus outputs of one node
    max_node_io: int = 65_536
    #: characters in one name or other identifier (doc strings and metadata values excepted)
    max_name_length: int = 65_536

    def __post_init__(self) -> None:
        # graph code (the index, rules) recurses once or twice per subgraph level, and
        # protobuf's C code recurses per message: a configured depth above the cap would
        # trade a diagnostic for a RecursionError or a segfault
        if self.max_subgraph_depth > MAX_SUBGRAPH_DEPTH_CAP:
            object.__setattr__(self, "max_subgraph_depth", MAX_SUBGRAPH_DEPTH_CAP)

    @classmethod
    def from_mapping(cls, values: dict[str, Any] | None) -> Limits:
        if not values:
            return cls()
        known = {f.name for f in fields(cls)}
        return cls(**{k: int(v) for k, v in values.items() if k in known})
