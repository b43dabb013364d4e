"""Console scripts users run: demo, record, replay, simulated robot (and their helpers).

The measuring code (``itasc-bench``, its peers and floor node) is the repository's ``bench/``
distribution, not part of this package.
"""
