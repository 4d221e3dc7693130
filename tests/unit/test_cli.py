"""The command line's shape (no server): subcommands in one place, one function per subcommand, old imports."""

from __future__ import annotations

import pytest

from triton_kitchen.cli import main as cli


def _names(parser) -> list[str]:
    return list(next(a for a in parser._actions if a.dest == "command").choices)


def test_subcommands_in_order_and_named_in_the_description(capsys):
    parser = cli.build_parser()
    names = _names(parser)
    assert names[:4] == ["serve", "check", "dag", "bench"]  # later ones (simulate) follow in file order
    assert parser.description == f"Command line: ``python -m triton_kitchen {'|'.join(names)}``."
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "{" + ",".join(names) + "}" in capsys.readouterr().out


def test_a_new_subcommand_is_one_function(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_SUBCOMMANDS", list(cli._SUBCOMMANDS))

    @cli.subcommand
    def add_hello_parser(subparsers):
        p = subparsers.add_parser("hello", help="say hello")
        p.add_argument("--name", default="kitchen")
        p.set_defaults(func=lambda args: print(f"hello {args.name}") or 3)
        return p

    assert cli.main(["hello", "--name", "triton"]) == 3
    assert capsys.readouterr().out == "hello triton\n"
    parser = cli.build_parser()
    assert _names(parser)[-1] == "hello" and parser.description.endswith(
        "|bench|" + "|".join(_names(parser)[4:]) + "``."
    )


def test_ctrl_c_stops_with_a_line_not_a_traceback(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_SUBCOMMANDS", list(cli._SUBCOMMANDS))

    def interrupted(args):
        raise KeyboardInterrupt

    @cli.subcommand
    def add_wait_parser(subparsers):
        p = subparsers.add_parser("wait", help="wait for Ctrl-C")
        p.set_defaults(func=interrupted)
        return p

    assert cli.main(["wait"]) == 130
    err = capsys.readouterr().err
    assert err == "stopped (Ctrl-C)\n" and "Traceback" not in err


def test_budget_and_perf_analyzer_errors_carry_their_codes():
    from triton_kitchen.core import budget
    from triton_kitchen.core.errors import KitchenError
    from triton_kitchen.tools.perf_analyzer import PerfAnalyzerError

    assert issubclass(PerfAnalyzerError, KitchenError) and issubclass(budget.BudgetBusy, KitchenError)
    busy = budget.BudgetBusy(wanted=2, used=8, total=8, runs=3)
    assert (busy.code, busy.used, busy.total, busy.runs) == ("lab_busy", 8, 8, 3) and "8/8" in busy.detail
    error = PerfAnalyzerError("perf_analyzer failed (exit 1)")
    assert (error.code, str(error), error.detail) == (
        "perf_analyzer",
        "perf_analyzer failed (exit 1)",
        "perf_analyzer failed (exit 1)",
    )
