"""``pyhudi demo``: a wide-table pipeline run end to end and checked (see :mod:`pyhudi.demo.pipeline`).

Modules: :mod:`~pyhudi.demo.data` (schema, streams' batches), :mod:`~pyhudi.demo.model` (the
expected rows), :mod:`~pyhudi.demo.writers` (the writer processes), :mod:`~pyhudi.demo.spark_job`,
:mod:`~pyhudi.demo.events` (small appends and clustering), :mod:`~pyhudi.demo.report`,
:mod:`~pyhudi.demo.picture`. Nothing is imported here: ``pyhudi --help`` stays fast.
"""
