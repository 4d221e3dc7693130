"""The old home of the ``check`` and ``dag`` subcommands, now in :mod:`triton_kitchen.cli`; these names stay here."""

from triton_kitchen.cli import (  # noqa: F401
    _add_check_args,
    _add_dag_args,
    _show,
    add_check_parser,
    add_dag_parser,
    check_command,
    check_paths,
    dag_command,
    run_check,
    run_dag,
)

if __name__ == "__main__":  # python -m triton_kitchen.cli_check check|dag ...
    import sys

    from triton_kitchen.cli import main

    sys.exit(main())
