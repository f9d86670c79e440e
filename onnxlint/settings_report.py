"""``onnxlint --show-settings PATH``: the settings a lint of PATH would use, and where each
came from (a flag, the config file, the default), with the EP profiles and the versions of
the tools the prediction is made against."""

from __future__ import annotations

import argparse
import platform
from dataclasses import fields
from importlib import metadata
from pathlib import Path
from typing import Any

#: config fields and the flags that set them (a field without a flag comes from files only)
_FLAGS = {
    "select": ("select",),
    "ignore": ("ignore", "extend_ignore"),
    "severity": ("severity",),
    "eps": ("eps",),
    "ep_profiles": ("ep_profiles",),
    "fail_on": ("fail_on",),
    "target_ort": ("target_ort",),
    "format": ("format",),
    "assume_dims": ("assume_dims",),
    "confirm": ("confirm", "no_cache", "source"),
}


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _origin(name: str, args: argparse.Namespace, base: Any, default: Any) -> str:
    if any(getattr(args, flag, None) for flag in _FLAGS.get(name, ())):
        return "command line"
    if getattr(base, name) != getattr(default, name):
        return str(base.source) if base.source else "configuration"
    return "default"


def settings_lines(args: argparse.Namespace, cache: Any, files: list[Path]) -> list[str]:
    """The report, line by line (raises ConfigError/UsageError like a lint would).

    ``cache`` is the CLI's configuration cache for ``args``, ``files`` the model files
    its paths name (handed in by the CLI, which this module does not import).
    """
    from onnxlint import config as cfg
    from onnxlint.engine import instantiate_rules, resolve_eps
    from onnxlint.ort_versions import installed_ort_version, release
    from onnxlint.version import __version__

    model = files[0] if files else Path(args.paths[0])
    if args.isolated:
        base, where = cfg.Config(), "none (--isolated)"
    elif args.config:
        base, where = cfg.load_file(Path(args.config)), f"{args.config} (--config)"
    else:
        found = cfg.find_config_file(model)
        base = cfg.load_file(found) if found else cfg.Config()
        where = f"{found} (found above the model)" if found else "none found (defaults)"
    resolved = cache.apply_cli(base)
    default = cfg.Config()
    lines = [f"settings for: {model}", f"config file: {where}"]
    for f in fields(cfg.Config):
        if f.name == "source":
            continue
        value = getattr(resolved, f.name)
        shown = list(value) if isinstance(value, tuple) else value
        key = f.name.replace("_", "-")
        lines.append(f"  {key} = {shown!r}  [{_origin(f.name, args, base, default)}]")
    rules = instantiate_rules(resolved)
    lines.append(f"rules enabled: {len(rules)}")
    profiles = resolve_eps(resolved.eps, resolved)
    eps_from = _origin("eps", args, base, default)
    lines.append(f"EPs: {', '.join(p.id for p in profiles) or 'none (CPU only)'}  [{eps_from}]")
    for prof in profiles:
        lines.append(f"  {prof.id}: {prof.label}, profile {prof.source or 'shipped'}")
        for prov in prof.provenance.values():
            lines.append(f"    source {prov.id}: {prov.describe()}")
    rel = release(resolved.target_ort)
    ort_from = (
        _origin("target_ort", args, base, default)
        if resolved.target_ort
        else f"installed onnxruntime {installed_ort_version() or 'none: newest known'}"
    )
    exact = "" if rel.exact else " (not in the table: the nearest earlier release's limits)"
    lines.append(
        f"target ONNX Runtime: {rel.version}{exact}: ai.onnx opset <= {rel.max_opset}, "
        f"IR <= {rel.max_ir}  [{ort_from}]"
    )
    lines.append(
        f"versions: onnxlint {__version__}, onnx {_version('onnx')}, onnxruntime "
        f"{installed_ort_version() or 'not installed'}, python {platform.python_version()}"
    )
    return lines
