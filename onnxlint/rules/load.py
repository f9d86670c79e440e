"""Load diagnostics (OL0xx): the file could not be read, or it points somewhere it must not.

These rules are emitted by the loader, not by the graph walk: the reader reports
records by code and message id, and :func:`load_diagnostics` turns them into these
rules' diagnostics. They are rules all the same, so that ``onnxlint rule OL002`` documents them and ``--ignore``
can silence the non-fatal ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from onnxlint.diagnostics import Category, Diagnostic, Severity
from onnxlint.rule import Rule, register

if TYPE_CHECKING:
    from onnxlint.modelfile.problem import LoadProblem


class LoadRule(Rule):
    category = Category.LOAD
    severity = Severity.ERROR
    emitted_by = "loader"


@register
class FileUnreadable(LoadRule):
    """The model file does not exist, is not a regular file, or cannot be read.

    What it does:
        Reports a path that cannot be opened as a model file, and a path that is a
        symlink to a file outside the linted folder (the folder the path names, or the
        folder being searched): such a file is never read, so nothing of its content
        (a credentials file, say) can reach a report or a CI log.

    Why it matters:
        Nothing else can be checked. The exit code is 2.

    Fix:
        Check the path; pass a file (folders are searched for ``*.onnx`` and ``*.onnxtxt``).

    Execution providers:
        All.
    """

    code = "OL001"
    name = "file-unreadable"
    messages = {
        "missing": "file not found: {path}",
        "not_regular": "not a regular file: {path}",
        "os_error": "cannot read {path}: {error}",
        "outside": "{path} is a symlink to a file outside the linted folder; it was not read "
        "(lint the file it points to by its own path)",
    }


@register
class NotOnnx(LoadRule):
    """The file is not a valid ONNX protobuf (corrupt, truncated or another format).

    What it does:
        Reports a file that fails to decode as an ``onnx.ModelProto`` or decodes to
        something with no graph.

    Why it matters:
        ONNX Runtime would fail with an unhelpful protobuf parsing error. The exit code is 2.

    Fix:
        Re-export the model; check that the download or copy finished (a truncated
        file is the usual cause) and that the file is not a Git LFS pointer.

    Execution providers:
        All.
    """

    code = "OL002"
    name = "not-onnx"
    messages = {
        "decode": "not a valid ONNX model: protobuf decoding failed ({error})",
        "no_graph": "not an ONNX model: the file decodes but has no graph and no opset import",
    }


@register
class EmptyFile(LoadRule):
    """The model file is empty.

    What it does:
        Reports a zero-byte model file.

    Why it matters:
        An empty file is usually an interrupted export or copy. The exit code is 2.

    Fix:
        Re-export the model.

    Execution providers:
        All.
    """

    code = "OL003"
    name = "empty-file"
    messages = {"default": "model file is empty: {path}"}


@register
class ModelTooLarge(LoadRule):
    """A single-file model is larger than protobuf's 2 GiB limit (or the configured limit).

    What it does:
        Reports a model file over ``limits.max_file_bytes`` (default 2 GiB - 1) without reading it.

    Why it matters:
        Protobuf cannot parse messages over 2 GiB; ONNX Runtime fails to load such a file.

    Fix:
        Save the weights as external data:
        ``onnx.save(model, path, save_as_external_data=True, location="weights.bin")``.

    Execution providers:
        All.
    """

    code = "OL004"
    name = "model-too-large"
    messages = {"default": "model is {size} bytes, over the {limit}-byte limit for a single file"}


@register
class NestingTooDeep(LoadRule):
    """Subgraphs (If/Loop/Scan bodies) are nested deeper than the configured limit.

    What it does:
        Measures subgraph nesting without recursion and stops at ``limits.max_subgraph_depth``.

    Why it matters:
        Absurd nesting is a sign of a corrupt or hostile file, and would exhaust the stack
        of tools that recurse over graphs.

    Fix:
        Flatten the control flow at export time, or raise ``limits.max_subgraph_depth``
        if the model is genuine.

    Execution providers:
        All.
    """

    code = "OL005"
    name = "nesting-too-deep"
    messages = {
        "default": "subgraphs nested {depth} deep, over the limit of {limit}",
        "parse": "subgraphs nested too deep to decode (limit {limit})",
        "type": "a value's type is nested {depth} deep (sequences, maps, optionals), over "
        "the limit of {limit}",
    }


@register
class TextParseError(LoadRule):
    """An ONNX text-format file does not parse.

    What it does:
        Reports the parser's error for ``.onnxtxt`` files (parsed with ``onnx.parser``).

    Why it matters:
        The model cannot be built from the text.

    Fix:
        Correct the text at the reported position; the syntax is that of ``onnx.printer``.

    Execution providers:
        All.
    """

    code = "OL006"
    name = "text-parse-error"
    messages = {"default": "ONNX text does not parse: {error}"}


@register
class TooManyNodes(LoadRule):
    """The model has more nodes than the configured limit.

    What it does:
        Counts nodes in all graphs and functions and stops at ``limits.max_nodes``.

    Why it matters:
        Bounds the linter's time and memory on absurd or hostile inputs.

    Fix:
        Raise ``limits.max_nodes`` if the model is genuine.

    Execution providers:
        All.
    """

    code = "OL007"
    name = "too-many-nodes"
    messages = {"default": "model has {count} nodes or more, over the limit of {limit}"}


@register
class LimitExceeded(LoadRule):
    """The model declares more of something than the configured limits allow.

    What it does:
        Counts, before any analysis, what makes the linter's work grow without being a
        node: initializers, value_info entries, inputs and outputs of each graph and of
        each node, the length of names, and the nodes that model-local functions expand
        to at their call sites. Past a limit the model is not linted (exit 2).

    Why it matters:
        Bounds time and memory on absurd or hostile inputs: an If declaring a million
        outputs in a 9 MB file took 2 GB, a million tiny initializers 160 s, a 100 MB
        node name an 800 MB report, and functions calling the next twice per level a
        billion shape-inference call sites from a 2.4 KB file.

    Fix:
        Raise the limit named in the message (``[tool.onnxlint.limits]``) if the model is
        genuine.

    Execution providers:
        All.
    """

    code = "OL008"
    name = "limit-exceeded"
    messages = {
        "initializers": "model has {count} initializers or more, over the limit of {limit} "
        "(max-initializers)",
        "value_info": "model has {count} value_info entries or more, over the limit of {limit} "
        "(max-value-info)",
        "graph_io": "graph {where} declares {count} inputs and outputs, over the limit of "
        "{limit} (max-graph-io)",
        "node_io": "a node in {where} has {count} inputs and outputs, over the limit of {limit} "
        "(max-node-io)",
        "name_length": "{field} has {count} characters, over the limit of {limit} "
        "(max-name-length)",
        "expansion": "model-local functions expand to {count} nodes or more at their call "
        "sites, over the limit of {limit} (max-nodes)",
    }


@register
class ExternalDataMissing(LoadRule):
    """An external-data file that the model references does not exist.

    What it does:
        Checks each tensor stored as external data: the file named by ``location`` must
        exist next to the model. The file is only stat'ed, never read.

    Why it matters:
        ONNX Runtime fails at session creation when weights are missing, typically after
        a model was copied without its ``.data`` file.

    Fix:
        Copy the weights file next to the model, keeping the relative path in ``location``.

    Execution providers:
        All.
    """

    code = "OL010"
    name = "external-data-missing"
    messages = {
        "default": "external data file '{location}' does not exist",
        "os_error": "external data file '{location}' cannot be inspected: {error}",
        "no_folder": "external data '{location}' cannot be checked: the model was not loaded from a file",
    }


@register
class ExternalDataOutsideFolder(LoadRule):
    """An external-data location escapes the model's folder (security).

    What it does:
        Flags locations that are absolute, contain ``..``, resolve through a symlink to a
        place outside the model folder, or name something that is not a regular file.
        Such a location is never opened.

    Why it matters:
        A hostile model can make a loader read arbitrary files (``/etc/passwd``,
        ``../../.ssh/id_rsa``) or block forever on a device or FIFO.

    Fix:
        Store weights in a file inside the model's folder and reference it with a plain
        relative path (``onnx.save(..., location="weights.bin")``).

    Execution providers:
        All.
    """

    code = "OL011"
    name = "external-data-outside-folder"
    messages = {
        "default": "external data location '{location}' is not allowed: {why}; it was not opened"
    }


@register
class ExternalDataTooShort(LoadRule):
    """An external-data file is smaller than the offset + length a tensor claims.

    What it does:
        Compares the size of the external file with each tensor's ``offset`` and ``length``
        (or the byte size implied by its dims and dtype).

    Why it matters:
        The weights file is truncated or belongs to another export; loading fails or reads garbage.

    Fix:
        Re-export the model and its weights together.

    Execution providers:
        All.
    """

    code = "OL012"
    name = "external-data-too-short"
    messages = {
        "default": "external data '{location}' has {size} bytes; the tensor needs offset {offset} + length {length}",
        "bad_numbers": "external data '{location}' has a non-numeric offset or length",
    }


def load_diagnostics(problems: Iterable[LoadProblem]) -> list[Diagnostic]:
    """The reader's records as the diagnostics of the load rules that own their codes."""
    by_code = {rule.code: rule for rule in LoadRule.__subclasses__()}
    return [by_code[p.code].make(p.location, p.message_id, **p.args) for p in problems]
