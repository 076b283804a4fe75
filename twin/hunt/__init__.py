"""The placement hunt: launch instances, measure each, keep the best (``twin hunt``).

:mod:`twin.hunt.plan` reads a hunt file; :mod:`twin.hunt.classes` asks the twin how latency
depends on where an instance lands and on the hour; :mod:`twin.hunt.sequential` holds the
sequential test and the window sizes; :mod:`twin.hunt.simulate` plays many hunts and summarises
them.
"""
