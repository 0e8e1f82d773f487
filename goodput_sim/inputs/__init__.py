"""Readers that validate what users give: workloads, clusters, the Philly log, failure and spot
traces, sources and safe YAML."""
