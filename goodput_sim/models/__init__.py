"""Job models: throughput (step time), statistical efficiency, and their product, goodput."""
