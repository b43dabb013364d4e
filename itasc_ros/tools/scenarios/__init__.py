"""Demo scenarios of ``itasc-demo --scenario NAME``: one module per scenario."""
