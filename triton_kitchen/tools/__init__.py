"""Tools: measuring and looking (load runs, perf_analyzer, protocols, traces, flow, statistics, metrics, the
batching simulator, figures). They build on the core and never import a lab."""
