"""A lint's whole output, kept per command line and printed again by its re-run
(``outputs/`` in the cache folder).

The report cache (:mod:`onnxlint.report_cache`) spares a re-run the lint; this spares it
everything else: the imports of the argument parser, the configuration machinery, the
report's classes and the renderers, the report cache's key, unpickling and rendering.
:func:`onnxlint.cli.run` looks the command line up before it imports anything but this
module and the few it needs (``os``, ``sys``, ``stat``, ``marshal`` and onnxlint's
identity helpers, none of which imports ``re``, ``typing``, ``pathlib``, ``hashlib`` or
``json``), and a hit writes the kept stdout and stderr and exits with the kept code.

What the output depends on is in the key or in the entry, and an entry is used only
while all of it holds:

- **key**: the arguments, the working folder, the environment variables the CLI, its
  renderers or its caches read (every ``ONNXLINT_*`` and ``PYTHON*`` one, ``NO_COLOR``,
  ``FORCE_COLOR``, ``COLUMNS``, ``LINES``, ``TERM``, ``HOME``, ``XDG_CACHE_HOME``,
  ``GITHUB_STEP_SUMMARY``), whether stdout and stderr are terminals and their encodings,
  the terminal's width, the interpreter (executable, version, flags, ``sys.path``), the
  installed onnxlint code and the packages (:mod:`onnxlint.installed`, as the report
  cache).
- **entry**, checked again on every read: the model files each path argument stands
  for (a folder is walked again), each model's real path, size and SHA-256; the
  configuration files the discovery could read (``onnxlint.toml`` and
  ``pyproject.toml`` in the model's folder and every folder above it: absent, or their
  stamp and SHA-256), the ones loaded (``--config``) and the ``ep_profiles`` files; the
  stamps of the other files the lints read (:mod:`onnxlint.lintdeps`).
- **never stored**: a run any of whose reports the report cache would not keep or
  read back (real sessions, a failed worker, a crashed rule, ``--html``, a file it
  cannot read, ``-j N`` lints done in other processes), a run that writes files
  (``-o``, ``--write-baseline``, the GitHub step summary) or reads a baseline or
  ``--source``, a usage error, and a run during which a file it depends on or the
  installed code changed. ``ONNXLINT_NO_CACHE`` or ``--no-cache`` turn it off.

An entry is a header line (schema and the SHA-256 of the rest) and a ``marshal`` of
plain data (strings, numbers, lists, tuples, a dict), checked field by field; it is read
only if it is a regular file of this user (:func:`onnxlint.cachefs.read_entry`), and
one that is not, or that does not check out, is removed and the command runs.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys

from onnxlint.filestamp import regular_file_digest, sha256, stamp, stamp_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

SCHEMA = "onnxlint-output-1"
FOLDER = "outputs"
SUFFIX = ".out"
#: entries kept (most recently used first) and their total size
MAX_ENTRIES = 2000
MAX_BYTES = 256 * 2**20
#: an output larger than this is not kept
MAX_ENTRY_BYTES = 32 * 2**20
#: configuration and profile files larger than this are stamped, not hashed
MAX_HASHED_BYTES = 16 * 2**20
#: the file names configuration discovery looks for in each folder (``onnxlint.config``)
CONFIG_NAMES = ("onnxlint.toml", "pyproject.toml")
#: environment variables that change what a lint prints or where it keeps its caches,
#: besides every ``ONNXLINT_*`` and ``PYTHON*`` one
ENV_NAMES = frozenset(
    {
        "NO_COLOR",
        "FORCE_COLOR",
        "COLUMNS",
        "LINES",
        "TERM",
        "HOME",
        "XDG_CACHE_HOME",
        "GITHUB_STEP_SUMMARY",
    }
)

#: the door of this process's command line (set by :func:`open_door`), which the lint
#: command offers its output to
_ACTIVE: Door | None = None


def active() -> Door | None:
    """The door :func:`onnxlint.cli.run` opened for this process's command (None: the
    lint runs in-process for another caller, or the cache is off)."""
    return _ACTIVE


def open_door(argv: list[str]) -> Door | None:
    """The door of ``argv`` in this process (its key computed, nothing read yet); None
    when the caches are off or the command's situation cannot be told."""
    global _ACTIVE
    from onnxlint.runtime.identity import cache_enabled

    if "--no-cache" in argv or not cache_enabled():
        return None
    try:
        key, code_id = _key(argv)
    except (OSError, ValueError, AttributeError):
        return None  # no working folder, no usable stdout: run the command
    from onnxlint.cachefs import cache_folder

    name = sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:40] + SUFFIX
    _ACTIVE = Door(key, code_id, os.path.join(cache_folder(), FOLDER, name))
    return _ACTIVE


def _key(argv: list[str]) -> tuple[str, str]:
    """The key of ``argv`` run here and now, and the installed code's identity in it."""
    from onnxlint.installed import code_identity, environment_identity

    env = sorted(
        (k, v)
        for k, v in os.environ.items()
        if k in ENV_NAMES or k.startswith(("ONNXLINT_", "PYTHON"))
    )
    streams = tuple((s.isatty(), s.encoding, s.errors) for s in (sys.stdout, sys.stderr))
    try:  # the width a table is laid out to on a terminal (shutil asks the same)
        columns: int | None = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        columns = None
    code = code_identity()
    key = (
        SCHEMA,
        list(argv),
        os.getcwd(),
        env,
        streams,
        columns,
        sys.executable,
        sys.version,
        list(sys.path),
        tuple(sys.flags),
        code,
        environment_identity(),
    )
    return repr(key), code


class Door:
    """One command line's entry: :meth:`replay` prints it when it still holds; otherwise
    the lint :meth:`snapshot`\\ s what it depends on before it starts and :meth:`offer`\\ s
    its output when it is done."""

    def __init__(self, key: str, code_id: str, path: str) -> None:
        self.key = key
        self.code_id = code_id
        self.path = path
        self._before: list[Any] | None = None

    # -- the re-run ------------------------------------------------------------------

    def replay(self) -> int | None:
        """Print the kept output and return its exit code; None when there is none to
        trust (a bad entry is removed) and the command must run."""
        from onnxlint import cachefs

        raw, _ = cachefs.read_or_discard(self.path, MAX_ENTRY_BYTES + (1 << 20))
        if raw is None:
            return None
        try:
            entry = _parse(raw, self.key)
        except Exception:  # any malformed or foreign entry is discarded, never trusted
            cachefs.discard(self.path)
            return None
        try:
            holds = _holds(entry)
        except Exception:  # a check that cannot be made is a check that failed
            holds = False
        if not holds:
            return None  # outdated: the command runs and replaces it
        cachefs.touch(self.path)  # pruning keeps the most recently used entries
        _write(entry["stdout"], entry["stderr"])
        code: int = entry["code"]
        return code

    # -- the run that keeps it -------------------------------------------------------

    def snapshot(self, files: list[str]) -> None:
        """Before the configuration is discovered: what discovery could read for the
        model files ``files`` (their labels)."""
        self._before = _config_candidates(files)

    def offer(
        self,
        args: argparse.Namespace,
        files: list[str],
        slots: list[Any],
        loaded: list[tuple[str, Any]],
        stdout: str,
        stderr: str,
        code: int,
    ) -> bool:
        """Keep the output of the lint that just ran (``files``: the model files it
        linted, ``slots``: their report-cache slots, ``loaded``: the configuration
        files it loaded with their stamps before loading); False when it must not be
        kept, or cannot be."""
        if self._before is None or _refused(args) or os.environ.get("GITHUB_STEP_SUMMARY"):
            return False
        models, profiles, deps = [], [], {}
        for label, slot in zip(files, slots, strict=True):
            if slot is None or slot.kept is None:
                return False  # a report the report cache neither read back nor kept
            f = slot.key["file"]
            models.append((label, f["real"], f["size"], f["sha256"]))
            profiles += [(p, digest) for p, digest in slot.key["config"]["ep_profile_files"]]
            deps.update(slot.kept)
        configs = []
        for path, before in loaded:
            state = _state(path)
            if not isinstance(state, tuple) or state[0] != before:
                return False  # changed since it was loaded
            configs.append((path, state))
        from onnxlint.installed import code_identity

        paths = [_path_models(raw) for raw in args.paths]
        if (
            [label for _, _, labels in paths for label in labels] != files
            or _config_candidates(files) != self._before
            or code_identity(fresh=True) != self.code_id
        ):
            return False  # a file appeared, a configuration or the code changed meanwhile
        entry = {
            "key": self.key,
            "paths": paths,
            "models": models,
            "folders": self._before,
            "configs": configs,
            "profiles": profiles,
            "files": sorted(deps.items()),
            "stdout": stdout,
            "stderr": stderr,
            "code": code,
        }
        return _store(self.path, entry)


def _refused(args: argparse.Namespace) -> bool:
    """Whether the command writes files or reads input the entry does not check: a
    baseline, or ``--source`` (the configuration names it by its resolved path, which a
    link in the path given can change while the path given stays the same)."""
    return bool(
        getattr(args, "output", None)
        or getattr(args, "html", None)
        or getattr(args, "write_baseline", None)
        or getattr(args, "baseline", None) is not None
        or getattr(args, "source", None)
        or getattr(args, "no_cache", False)
        or getattr(args, "confirm", False)
        or getattr(args, "show_settings", False)
    )


# ---------------------------------------------------------------------------
# What an entry depends on


def _path_models(raw: str) -> tuple[str, bool, list[str]]:
    """A path argument, whether it is a folder, and the model files it stands for, as
    the lint names them (:func:`onnxlint.cli.files.iter_model_files`)."""
    from onnxlint.cli.files import iter_model_files

    return raw, os.path.isdir(raw), [str(f) for f in iter_model_files([raw])]


def _config_candidates(files: list[str]) -> list[Any]:
    """Per model file its folder (resolved, as discovery starts), then the state of each
    configuration file name in that folder and every folder above it (once per folder)."""
    heres, candidates, seen = [], [], set()
    for label in files:
        folder = os.path.realpath(os.path.dirname(label) or ".")
        heres.append(folder)
        while folder not in seen:
            seen.add(folder)
            for name in CONFIG_NAMES:
                path = os.path.join(folder, name)
                candidates.append((path, _state(path)))
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    return [heres, candidates]


def _state(path: str) -> Any:
    """What a configuration file is now: None when there is no file there (discovery
    passes by), its stamp and SHA-256 (None for a file too large or unreadable), or the
    error that stat'ing it met."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return ("error", exc.errno)
    except ValueError:
        return ("error", None)
    if not stat.S_ISREG(st.st_mode):
        return None
    found = regular_file_digest(path, MAX_HASHED_BYTES)
    if found is None:
        return (stamp_of(st), None)
    return (found[2], found[0])


def _holds(entry: dict[str, Any]) -> bool:
    """Whether everything ``entry`` depends on is as it was (the stamps and small files
    first, the models' bytes last)."""
    for raw, was_dir, labels in entry["paths"]:
        # a file argument names one model, spelled by its argument (part of the key);
        # a folder is walked again
        if os.path.isdir(raw) != was_dir or (was_dir and _path_models(raw)[2] != labels):
            return False
    files = [label for label, _, _, _ in entry["models"]]
    if files != [label for _, _, labels in entry["paths"] for label in labels]:
        return False
    for label, real, size, _ in entry["models"]:
        try:
            if os.path.realpath(label) != real or os.stat(real).st_size != size:
                return False
        except (OSError, ValueError):
            return False
    if _config_candidates(files) != entry["folders"]:
        return False
    for path, state in entry["configs"]:
        if _state(path) != state:
            return False
    if not all(stamp(path) == seen for path, seen in entry["files"]):
        return False
    for path, digest in entry["profiles"]:
        found = regular_file_digest(path, MAX_HASHED_BYTES)
        if found is None or found[0] != digest:
            return False
    for _, real, size, digest in entry["models"]:
        found = regular_file_digest(real, size)
        if found is None or found[0] != digest:
            return False
    return True


# ---------------------------------------------------------------------------
# Entries


def _store(path: str, entry: dict[str, Any]) -> bool:
    from pathlib import Path

    from onnxlint import cachefs
    from onnxlint.fsutil import atomic_write_bytes

    body = marshal.dumps(entry)
    if len(body) > MAX_ENTRY_BYTES:
        return False
    head = f"{SCHEMA} {sha256(body, len(body)).hexdigest()}\n".encode()
    folder = Path(path).parent
    try:
        cachefs.make_private_dir(folder)
        atomic_write_bytes(Path(path), head + body)
        cachefs.prune(folder, ["*" + SUFFIX], MAX_ENTRIES, MAX_BYTES)
    except OSError:
        return False  # a read-only cache folder costs the next run its lint, nothing more
    return True


def _parse(raw: bytes, key: str) -> dict[str, Any]:
    """The entry in ``raw``; raises ValueError when it is not one of :data:`SCHEMA` for
    ``key``, its checksum fails or a field is not of its type."""
    head, sep, body = raw.partition(b"\n")
    schema, _, digest = head.decode("ascii").partition(" ")
    if not sep or schema != SCHEMA or digest != sha256(body, len(body)).hexdigest():
        raise ValueError("not an entry of this schema, or damaged")
    entry = marshal.loads(body)
    if not isinstance(entry, dict) or entry.get("key") != key:
        raise ValueError("another key")
    _check(entry)
    return entry


_STR, _INT = (str,), (int,)
_NONE = (type(None),)


def _check(entry: dict[str, Any]) -> None:
    """Raise ValueError unless every field of ``entry`` has its type (plain data only)."""

    def need(ok: bool) -> None:
        if not ok:
            raise ValueError("malformed entry")

    def is_stamp(v: Any) -> bool:
        return v is None or (type(v) is tuple and len(v) == 6 and all(type(x) is int for x in v))

    def is_state(v: Any) -> bool:
        if v is None:
            return True
        if type(v) is not tuple or len(v) != 2:
            return False
        if v[0] == "error":
            return v[1] is None or type(v[1]) is int
        return is_stamp(v[0]) and v[0] is not None and (v[1] is None or type(v[1]) is str)

    need(type(entry.get("stdout")) is str and type(entry.get("stderr")) is str)
    need(type(entry.get("code")) is int and 0 <= entry["code"] <= 255)
    for raw, was_dir, labels in entry["paths"]:
        need(type(raw) is str and type(was_dir) is bool and type(labels) is list)
        need(all(type(x) is str for x in labels))
    for label, real, size, digest in entry["models"]:
        need(type(label) is str and type(real) is str and type(size) is int)
        need(type(digest) is str)
    heres, candidates = entry["folders"]
    need(type(heres) is list and all(type(x) is str for x in heres))
    for path, state in candidates:
        need(type(path) is str and is_state(state))
    for path, state in entry["configs"]:
        need(type(path) is str and is_state(state))
    for path, digest in entry["profiles"]:
        need(type(path) is str and type(digest) is str)
    for path, seen in entry["files"]:
        need(type(path) is str and is_stamp(seen))


def _write(stdout: str, stderr: str) -> None:
    """What the lint command writes, in its order: stderr's notes, then the report."""
    if stderr:
        sys.stderr.write(stderr)
        sys.stderr.flush()
    try:
        sys.stdout.write(stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        from onnxlint.cli.output import quiet_broken_pipe

        quiet_broken_pipe()  # the reader left (| head): the exit code still tells
