"""The Spark engine: the stdlib and the rule packs on Apache Spark (docs/scale-out.md).

pyspark is an optional extra (`pip install 'trnprof[spark]'`); nothing here imports it until a
run is opened with `engine="spark"`."""
