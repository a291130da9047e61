"""Design-space exploration over npusim: sweep specs, sampling, running, results, Pareto fronts.

scripts/dse.py and scripts/plot_dse.py are the commands; docs/dse.md the user's guide.
"""
