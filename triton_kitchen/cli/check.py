"""``check`` and ``dag``: a model repository read and checked the way tritonserver reads it, and an ensemble drawn.

``check PATH...``: exit 0 when every given config would load, else 1; one line per problem,
``PATH:LINE: error: message`` (warnings, ``PATH:LINE: warning: ...``, do not change the exit code). On
success one ``OK: ...`` line goes to stderr, so a person sees that it ran while stdout stays the problem lines.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from triton_kitchen.core.config import ConfigError, is_model_dir, load_repository
from triton_kitchen.core.ensemble import (
    DEFAULT_OPTIONS,
    CheckOptions,
    Problem,
    build_dag,
    has_errors,
    validate_config_file,
    validate_model,
    validate_repository,
)
from triton_kitchen.core.versions import EMBEDDED, NEWEST, VersionError, checked_version


def _show(path: str | None) -> str:
    if not path:
        return "<config>"
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


def _check_path(raw: str, config_name: str | None, options: CheckOptions) -> list[Problem]:
    p = Path(raw)
    if not p.exists():
        why = "no such file or directory"
        if os.path.lexists(raw):  # the name is there: a link to nothing, or a loop of links
            try:
                os.stat(raw)
            except OSError as e:
                why = f"cannot read: {e.strerror or e}"
        return [Problem("error", "no_such_path", why, {"path": raw}, None, None, None, raw)]
    if p.is_file():
        model_dir = p.parent.parent if p.parent.name == "configs" else p.parent
        if p.name == "config.pbtxt" or p.parent.name == "configs":
            repo = load_repository(
                model_dir.parent,
                config_name or (p.stem if p.parent.name == "configs" else None),
                version=options.version,
            )
            if model_dir.name in repo:
                return validate_model(model_dir.name, repo, with_dependencies=True, options=options)
        return validate_config_file(p, options)
    if is_model_dir(p):
        repo = load_repository(p.resolve().parent, config_name, version=options.version)
        return validate_model(p.resolve().name, repo, with_dependencies=True, options=options)
    repo = load_repository(p, config_name, version=options.version)
    out = []
    if not repo:
        out.append(
            Problem("warning", "empty_repository", "no model directories here", {}, None, None, None, raw)
        )
    return out + validate_repository(repo, options=options)


def check_paths(
    paths: list[str], config_name: str | None = None, options: CheckOptions = DEFAULT_OPTIONS
) -> list[Problem]:
    """Problems for each PATH (config file, model directory or repository)."""
    out: list[Problem] = []
    for raw in paths:
        try:
            out += _check_path(raw, config_name, options)
        except ConfigError as e:  # the repository around PATH cannot be read (Triton's poll fails too)
            out.append(Problem("error", e.code, e.message, e.params, None, None, None, raw))
    # the same problem may come from two PATHs (a shared step model)
    seen, unique = set(), []
    for pr in out:
        key = (pr.path, pr.line, pr.severity, pr.message)
        if key not in seen:
            seen.add(key)
            unique.append(pr)
    return unique


def _add_check_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="config.pbtxt files, model directories or repositories"
    )
    p.add_argument(
        "--config-name", default=None, help="use configs/<NAME>.pbtxt where present (like tritonserver)"
    )
    p.add_argument("--json", action="store_true", help="print the problems as JSON")
    p.add_argument("--triton", action="store_true", help="also print Triton's own wording under each error")
    p.add_argument(
        "--disable-auto-complete-config",
        action="store_true",
        help="check as tritonserver --disable-auto-complete-config would load: no config is filled in",
    )
    p.add_argument(
        "--gpus",
        type=int,
        default=None,
        metavar="N",
        help="the server has N GPUs (ids 0..N-1); default: unknown",
    )
    p.add_argument(
        "--backend-directory",
        default=None,
        metavar="DIR",
        help="the server's backend folder (tritonserver --backend-directory, /opt/tritonserver/backends in "
        "NGC images): a backend is found only there or in the model's folder. Default: Triton 2.51's "
        "base image, where a backend that another NVIDIA image ships (tensorrtllm, vllm, ...) is a note",
    )
    p.add_argument(
        "--triton-version",
        default=None,
        metavar="X.Y",
        help=f"check by the rules and schema of Triton X.Y (or NGC release YY.MM), {EMBEDDED} to {NEWEST}; "
        f"default: the embedded server's, {EMBEDDED} (NGC {EMBEDDED.release})",
    )


def check_command(args: argparse.Namespace) -> int:
    if args.backend_directory is not None and not os.path.isdir(args.backend_directory):
        print(f"error: --backend-directory {args.backend_directory}: not a directory", file=sys.stderr)
        return 2
    try:
        version = checked_version(args.triton_version)
    except VersionError as e:
        print(f"error: --triton-version: {e}", file=sys.stderr)
        return 2
    options = CheckOptions(
        autofill=not args.disable_auto_complete_config,
        gpus=args.gpus,
        backend_directory=args.backend_directory,
        version=version,
    )
    problems = check_paths(args.paths, args.config_name, options)
    if args.json:
        print(
            json.dumps(
                {"ok": not has_errors(problems), "problems": [p.to_dict() for p in problems]}, indent=2
            )
        )
    else:
        for pr in problems:
            print(pr.format(_show(pr.path)))
            if args.triton and pr.triton_message:
                print(f"    triton: {pr.triton_message}")
        if not has_errors(problems):
            warnings = sum(1 for pr in problems if pr.severity == "warning")
            notes = sum(1 for pr in problems if pr.severity == "note")
            print(
                f"OK: {', '.join(args.paths)}: no errors for Triton {version}"
                + (f", {warnings} warning(s)" if warnings else "")
                + (f", {notes} note(s)" if notes else ""),
                file=sys.stderr,
            )
    return 1 if has_errors(problems) else 0


def add_check_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "check",
        help="validate config.pbtxt files or a repository as Triton would",
        description="Validate config.pbtxt files, model directories or repositories by Triton's loader rules.",
    )
    _add_check_args(p)
    p.set_defaults(func=check_command)
    return p


def run_check(argv: list[str] | None = None) -> int:
    """``check`` on its own: ``run_check(["model_repository"])`` -> exit code."""
    p = argparse.ArgumentParser(prog="python -m triton_kitchen check")
    _add_check_args(p)
    return check_command(p.parse_args(argv))


# -- dag ------------------------------------------------------------------------------------------------
def _add_dag_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="PATH", help="an ensemble's model directory or config.pbtxt")
    p.add_argument("--format", choices=["dot", "json"], default="dot")
    p.add_argument("--expand", action="store_true", help="draw nested ensembles' steps in place")
    p.add_argument("--lang", choices=["en", "zh"], default="en", help="labels of the DOT picture")
    p.add_argument("--config-name", default=None)


def dag_command(args: argparse.Namespace) -> int:
    from triton_kitchen.tools.diagram import to_dot

    p = Path(args.path)
    if p.is_file():
        p = p.parent.parent if p.parent.name == "configs" else p.parent
    p = p.resolve()
    if not (p / "config.pbtxt").is_file() and not args.config_name:
        print(f"{_show(str(p))}:1: error: no config.pbtxt here", file=sys.stderr)
        return 1
    try:
        repo = load_repository(p.parent, args.config_name)
        dag = build_dag(p.name, repo, expand=args.expand)
    except ConfigError as e:
        print(f"{_show(e.path or str(p))}:{e.line or 1}: error: {e.message}", file=sys.stderr)
        return 1
    if args.format == "json":
        print(json.dumps(dag.to_json(), indent=2))
    else:
        sys.stdout.write(to_dot(dag, lang=args.lang))
    for pr in dag.problems:
        print(pr.format(_show(pr.path)), file=sys.stderr)
    return 1 if has_errors(dag.problems) else 0


def add_dag_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "dag",
        help="print an ensemble's DAG as DOT or JSON",
        description="Print the DAG of an ensemble (steps, tensors, stages) as Graphviz DOT or JSON.",
    )
    _add_dag_args(p)
    p.set_defaults(func=dag_command)
    return p


def run_dag(argv: list[str] | None = None) -> int:
    """``dag`` on its own: ``run_dag([path, "--format", "json"])`` -> exit code."""
    p = argparse.ArgumentParser(prog="python -m triton_kitchen dag")
    _add_dag_args(p)
    return dag_command(p.parse_args(argv))
