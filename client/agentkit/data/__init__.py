"""Telemetry the client reads: metric names, EMF files, CloudWatch metrics and logs, span files."""
