"""``python -m triton_kitchen <command>``: the command line (main: serve, check, dag, bench; simulate; trace;
class report)."""
