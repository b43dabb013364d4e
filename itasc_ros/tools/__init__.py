"""Console scripts: demo, record, replay, bench, simulated robot."""
