"""The ``check`` and ``dag`` subcommands.

Wiring into ``python -m triton_kitchen`` (one line each)::

    from triton_kitchen.cli_check import add_check_parser, add_dag_parser
    add_check_parser(subparsers)   # sets func=check_command
    add_dag_parser(subparsers)     # sets func=dag_command
    ...
    return args.func(args)

or standalone: ``run_check(argv) -> int`` / ``run_dag(argv) -> int``.

``check PATH...``: exit 0 when every given config would load, else 1; one line per problem,
``PATH:LINE: error: message`` (warnings as ``PATH:LINE: warning: ...`` do not change the
exit code).  A PATH may be a config file, a model directory or a repository directory.
On success one ``OK: ...`` line goes to stderr, so a person sees that it ran while stdout
stays the problem lines only (empty when there are none).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from triton_kitchen.config import ConfigError, load_repository
from triton_kitchen.ensemble import (
    Problem,
    build_dag,
    has_errors,
    validate_config_file,
    validate_model,
    validate_repository,
)


def _show(path: str | None) -> str:
    if not path:
        return "<config>"
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


def check_paths(paths: list[str], config_name: str | None = None) -> list[Problem]:
    """Problems for each PATH (config file, model directory or repository)."""
    out: list[Problem] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            out.append(Problem("error", "no_such_path", "no such file or directory", {"path": raw}, None, None, None, raw))
            continue
        if p.is_file():
            model_dir = p.parent.parent if p.parent.name == "configs" else p.parent
            if p.name == "config.pbtxt" or p.parent.name == "configs":
                repo = load_repository(model_dir.parent, config_name or (p.stem if p.parent.name == "configs" else None))
                if model_dir.name in repo:
                    out += validate_model(model_dir.name, repo, with_dependencies=True)
                    continue
            out += validate_config_file(p)
        elif (p / "config.pbtxt").is_file():
            repo = load_repository(p.resolve().parent, config_name)
            out += validate_model(p.resolve().name, repo, with_dependencies=True)
        else:
            try:
                repo = load_repository(p, config_name)
            except ConfigError as e:
                out.append(Problem("error", e.code, e.message, e.params, None, None, None, raw))
                continue
            if not repo:
                out.append(Problem("warning", "empty_repository", "no model directories here", {}, None, None, None, raw))
            out += validate_repository(repo)
    # the same problem may come from two PATHs (a shared step model)
    seen, unique = set(), []
    for pr in out:
        key = (pr.path, pr.line, pr.severity, pr.message)
        if key not in seen:
            seen.add(key)
            unique.append(pr)
    return unique


def _add_check_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="config.pbtxt files, model directories or repositories")
    p.add_argument("--config-name", default=None, help="use configs/<NAME>.pbtxt where present (like tritonserver)")
    p.add_argument("--json", action="store_true", help="print the problems as JSON")
    p.add_argument("--triton", action="store_true", help="also print Triton's own wording under each error")


def check_command(args: argparse.Namespace) -> int:
    problems = check_paths(args.paths, args.config_name)
    if args.json:
        print(json.dumps({"ok": not has_errors(problems), "problems": [p.to_dict() for p in problems]}, indent=2))
    else:
        for pr in problems:
            print(pr.format(_show(pr.path)))
            if args.triton and pr.triton_message:
                print(f"    triton: {pr.triton_message}")
        if not has_errors(problems):
            warnings = sum(1 for pr in problems if pr.severity == "warning")
            print(f"OK: {', '.join(args.paths)}: no errors" + (f", {warnings} warning(s)" if warnings else ""),
                  file=sys.stderr)
    return 1 if has_errors(problems) else 0


def _add_dag_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="PATH", help="an ensemble's model directory or config.pbtxt")
    p.add_argument("--format", choices=["dot", "json"], default="dot")
    p.add_argument("--expand", action="store_true", help="draw nested ensembles' steps in place")
    p.add_argument("--lang", choices=["en", "zh"], default="en", help="labels of the DOT picture")
    p.add_argument("--config-name", default=None)


def dag_command(args: argparse.Namespace) -> int:
    from triton_kitchen.diagram import to_dot

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


def add_check_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "check", help="validate config.pbtxt files or a repository as Triton would",
        description="Validate config.pbtxt files, model directories or repositories by Triton's loader rules.",
    )
    _add_check_args(p)
    p.set_defaults(func=check_command)
    return p


def add_dag_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "dag", help="print an ensemble's DAG as DOT or JSON",
        description="Print the DAG of an ensemble (steps, tensors, stages) as Graphviz DOT or JSON.",
    )
    _add_dag_args(p)
    p.set_defaults(func=dag_command)
    return p


def run_check(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m triton_kitchen check")
    _add_check_args(p)
    return check_command(p.parse_args(argv))


def run_dag(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m triton_kitchen dag")
    _add_dag_args(p)
    return dag_command(p.parse_args(argv))


if __name__ == "__main__":  # python -m triton_kitchen.cli_check check|dag ...
    parser = argparse.ArgumentParser(prog="python -m triton_kitchen.cli_check")
    sub = parser.add_subparsers(dest="command", required=True)
    add_check_parser(sub)
    add_dag_parser(sub)
    ns = parser.parse_args()
    sys.exit(ns.func(ns))
